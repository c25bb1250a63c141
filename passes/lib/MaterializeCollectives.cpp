//===- MaterializeCollectives.cpp - buckets, gathers, reductions ----------===//
//
// Writes the forward and backward programs exactly as the runtime's
// deriveSchedule() (plan/lib/Schedule.cpp) would derive them from plan.json's
// strategy section. Keeping the two identical means an explicit schedule
// changes nothing about what swift-run executes: it only makes it visible
// (and editable) in the IR. Change both together.
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

// Gradients are grouped by their fp32 size: the grouping does not depend on
// the reduction dtype, and the runtime sizes buckets the same way.
constexpr int64_t kGradBytes = 4;

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
    std::vector<UnitOp> units = schedule.getUnits();
    const int64_t numUnits = units.size(), last = numUnits - 1;
    const int zero = target->strategy.zero;
    const int64_t targetBytes =
        bucketBytes > 0 ? int64_t(bucketBytes) : target->strategy.bucketBytes;
    const int64_t depth = prefetchDepth >= 0 ? int64_t(prefetchDepth)
                                             : target->strategy.prefetchDepth;
    Builder attrs(schedule);
    schedule.setBucketBytesAttr(attrs.getI64IntegerAttr(targetBytes));
    schedule.setPrefetchDepthAttr(attrs.getI64IntegerAttr(depth));

    OpBuilder b = OpBuilder::atBlockEnd(&schedule.getBody().front());
    Location loc = schedule.getLoc();
    MLIRContext *ctx = b.getContext();
    const auto coll = CollectiveAttr::get(
        ctx, zero == 0 ? Collective::AllReduce : Collective::ReduceScatter);
    const Stream comm = Stream::communication;

    // Buckets in backward order, so each closes as early as possible.
    SmallVector<SmallVector<int64_t>> buckets;
    SmallVector<int64_t> current;
    int64_t currentBytes = 0;
    auto close = [&] {
      if (current.empty())
        return;
      BucketOp::create(b, loc, b.getI64IntegerAttr(buckets.size()),
                       b.getDenseI64ArrayAttr(current), coll,
                       zero >= 2 ? b.getUnitAttr() : UnitAttr(),
                       b.getI64IntegerAttr(currentBytes));
      buckets.push_back(std::move(current));
      current.clear();
      currentBytes = 0;
    };
    for (int64_t u = last; u >= 0; --u) {
      current.push_back(u);
      currentBytes += units[u].getParameters() * kGradBytes;
      if (currentBytes >= targetBytes)
        close();
    }
    close();
    numBuckets = buckets.size();

    const bool z3 = zero == 3;
    auto gather = [&](int64_t unit, int64_t ahead) {
      AllGatherOp::create(b, loc, unit, ahead, comm);
      ++numGathers;
    };
    auto program = [&](ProgramPhase phase) {
      auto op = ProgramOp::create(b, loc, phase);
      b.setInsertionPointToStart(&op.getBody().emplaceBlock());
    };

    // Forward: gather the unit's owners (skipped when already prefetched)
    // and the owners of the next `depth` units; release after use. The head
    // stays gathered across the turn into backward, where it runs first.
    program(ProgramPhase::forward);
    for (int64_t u = 0; u < numUnits; ++u) {
      if (z3)
        for (int64_t k = 0; k <= depth && u + k < numUnits; ++k)
          for (int64_t owner : units[u + k].getOwners())
            gather(owner, k);
      ComputeUnitOp::create(b, loc, u, /*recompute=*/false);
      if (z3 && u != last)
        ReleaseOp::create(b, loc, u);
    }
    b.setInsertionPointToEnd(&schedule.getBody().front());

    // Backward: reverse order. The embedding's backward reads no weights (a
    // scatter-add of the incoming gradient), so unit 0 is never gathered
    // here; a tied head releases it after its own backward. A bucket is
    // reduced once its last unit is done (for a tied unit 0, the head too).
    program(ProgramPhase::backward);
    SmallVector<bool> done(numUnits, false), reduced(buckets.size(), false);
    bool tied = units[last].getReadsEmbedding();
    for (int64_t u = last; u >= 0; --u) {
      if (z3)
        for (int64_t k = 0; k <= depth && u - k >= 1; ++k)
          for (int64_t owner : units[u - k].getOwners())
            gather(owner, k);
      ComputeUnitOp::create(
          b, loc, u, units[u].getCheckpointMode() != Checkpointing::None);
      if (z3 && u != 0)
        ReleaseOp::create(b, loc, u);
      if (z3 && u == last && tied)
        ReleaseOp::create(b, loc, 0);
      done[u] = true;
      for (auto [i, bucket] : llvm::enumerate(buckets)) {
        if (reduced[i] || !llvm::all_of(bucket, [&](int64_t x) {
              return done[x] && (x != 0 || !tied || done[last]);
            }))
          continue;
        reduced[i] = true;
        if (zero == 0)
          AllReduceOp::create(b, loc, i, comm);
        else
          ReduceScatterOp::create(b, loc, i, comm);
      }
    }
    return success();
  }
};

} // namespace
