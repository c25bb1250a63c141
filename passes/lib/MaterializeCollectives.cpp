//===- MaterializeCollectives.cpp - buckets, gathers, reductions ----------===//
//
// Writes the buckets and the forward and backward programs of plan/'s
// buildSchedule() (swift/Plan/Schedule.h), the function swift-run completes
// a plan without a schedule with: an explicit schedule changes nothing about
// what swift-run executes, it only makes it visible (and editable) in the
// IR. Each plan.json step becomes its gathers (with their prefetch
// positions), a compute (recomputing a checkpointed unit in backward), its
// releases and its reductions; collectives go on the communication stream.
//
//===----------------------------------------------------------------------===//

#include "ScheduleSupport.h"

#include "swift/Passes/Passes.h"

namespace mlir::swift {
#define GEN_PASS_DEF_MATERIALIZECOLLECTIVESPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;

namespace {

struct MaterializeCollectivesPass
    : mlir::swift::impl::MaterializeCollectivesPassBase<
          MaterializeCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (!forEachJob(getOperation(),
                    [&](JobOp job) { return materialize(job); }))
      signalPassFailure();
  }

  LogicalResult materialize(JobOp job) {
    FailureOr<ScheduleTarget> target =
        resolveScheduleTarget(job, "swift-materialize-collectives", true);
    if (failed(target))
      return failure();
    ScheduleOp schedule = target->schedule;
    if (!schedule.getBuckets().empty() ||
        schedule.getProgram(ProgramPhase::forward) ||
        schedule.getProgram(ProgramPhase::backward))
      return schedule.emitOpError("already has buckets or programs");
    ::swift::plan::StrategyConfig strategy = strategyConfig(*target);
    if (bucketBytes > 0)
      strategy.bucketBytes = bucketBytes;
    if (prefetchDepth >= 0)
      strategy.prefetchDepth = prefetchDepth;
    FailureOr<::swift::plan::BuiltSchedule> built =
        buildSchedule(*target, strategy, unitParameters(schedule), schedule);
    if (failed(built))
      return failure();
    const ::swift::plan::Schedule &plan = built->schedule;
    Builder attrs(schedule);
    schedule.setBucketBytesAttr(attrs.getI64IntegerAttr(strategy.bucketBytes));
    schedule.setPrefetchDepthAttr(
        attrs.getI64IntegerAttr(strategy.prefetchDepth));

    OpBuilder b = OpBuilder::atBlockEnd(&schedule.getBody().front());
    Location loc = schedule.getLoc();
    MLIRContext *ctx = b.getContext();
    const Stream comm = Stream::communication;
    for (auto [index, bucket] : llvm::enumerate(plan.buckets))
      BucketOp::create(b, loc, b.getI64IntegerAttr(index),
                       b.getDenseI64ArrayAttr(SmallVector<int64_t>(
                           bucket.units.begin(), bucket.units.end())),
                       CollectiveAttr::get(ctx, bucket.collective),
                       bucket.everyMicroBatch ? b.getUnitAttr() : UnitAttr(),
                       b.getI64IntegerAttr(built->bucketBytes[index]));
    numBuckets = plan.buckets.size();

    auto program = [&](ProgramPhase phase,
                       const std::vector<::swift::plan::ProgramStep> &steps,
                       const std::vector<std::vector<int>> &aheads) {
      const bool backward = phase == ProgramPhase::backward;
      OpBuilder::InsertionGuard guard(b);
      auto op = ProgramOp::create(b, loc, phase);
      b.setInsertionPointToStart(&op.getBody().emplaceBlock());
      for (auto [i, step] : llvm::enumerate(steps)) {
        for (auto [unit, ahead] : llvm::zip_equal(step.gather, aheads[i])) {
          AllGatherOp::create(b, loc, unit, ahead, comm);
          ++numGathers;
        }
        ComputeUnitOp::create(b, loc, step.unit,
                              backward && plan.units[step.unit].checkpoint !=
                                              Checkpointing::None);
        for (int unit : step.release)
          ReleaseOp::create(b, loc, unit);
        for (int bucket : step.reduce) {
          if (plan.buckets[bucket].collective == Collective::AllReduce)
            AllReduceOp::create(b, loc, bucket, comm);
          else
            ReduceScatterOp::create(b, loc, bucket, comm);
        }
      }
    };
    program(ProgramPhase::forward, plan.forward, built->forwardAhead);
    program(ProgramPhase::backward, plan.backward, built->backwardAhead);
    return success();
  }
};

} // namespace
