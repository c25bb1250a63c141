//===- MaterializeOffload.cpp - host<->device copies of CPU offload -------===//
//
// Offload moves model state through the host link; making each transfer an
// op shows what crosses PCIe and when. Gradients leave right after their
// bucket is reduced (so the device buffer is free early, as DeepSpeed's
// offload does); parameters of an offloaded ZeRO-3 shard come in only when
// a gather finds the unit not resident (the runtime skips resident
// gathers, and so do the copies).
//
//===----------------------------------------------------------------------===//

#include "ScheduleSupport.h"

#include "swift/Passes/Passes.h"

namespace mlir::swift {
#define GEN_PASS_DEF_MATERIALIZEOFFLOADPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;
namespace cost = ::swift::cost;

namespace {

struct MaterializeOffloadPass
    : mlir::swift::impl::MaterializeOffloadPassBase<MaterializeOffloadPass> {
  void runOnOperation() override {
    if (!forEachJob(getOperation(),
                    [&](JobOp job) { return materialize(job); }))
      signalPassFailure();
  }

  LogicalResult materialize(JobOp job) {
    FailureOr<ScheduleTarget> target =
        resolveScheduleTarget(job, "swift-materialize-offload", true);
    if (failed(target))
      return failure();
    ScheduleOp schedule = target->schedule;
    ProgramOp forward = schedule.getProgram(ProgramPhase::forward);
    ProgramOp backward = schedule.getProgram(ProgramPhase::backward);
    OptimizerStepOp step = schedule.getOptimizerStep();
    if (!forward || !backward || !step)
      return schedule.emitOpError(
          "needs its programs and optimizer step; run "
          "swift-materialize-collectives and swift-place-optimizer first");
    if (!schedule.getOps<CopyOp>().empty() ||
        !forward.getOps<CopyOp>().empty() || !backward.getOps<CopyOp>().empty())
      return schedule.emitOpError("already has offload copies");
    const cost::Offload offload = target->strategy.offload;
    if (offload == cost::Offload::None)
      return success();
    if (std::optional<std::string> why =
            ::swift::plan::offloadViolation(strategyConfig(*target)))
      return job.emitOpError(*why);

    OpBuilder b(schedule.getContext());
    Location loc = schedule.getLoc();
    auto copy = [&](HostData what, CopyDirection direction,
                    std::optional<int64_t> unit,
                    std::optional<int64_t> bucket) {
      CopyOp::create(b, loc, what, direction,
                     unit ? b.getI64IntegerAttr(*unit) : IntegerAttr(),
                     bucket ? b.getI64IntegerAttr(*bucket) : IntegerAttr());
      ++numCopies;
    };
    // Reduced gradients to the host optimizer, bucket by bucket.
    for (Operation &op :
         llvm::make_early_inc_range(backward.getBody().front())) {
      std::optional<int64_t> bucket;
      if (auto rs = dyn_cast<ReduceScatterOp>(op))
        bucket = rs.getBucket();
      if (auto ar = dyn_cast<AllReduceOp>(op))
        bucket = ar.getBucket();
      if (!bucket)
        continue;
      b.setInsertionPointAfter(&op);
      copy(HostData::grads, CopyDirection::device_to_host, std::nullopt,
           bucket);
    }
    if (offload == cost::Offload::Optimizer) {
      // The host holds the master parameters: updated ones go back.
      b.setInsertionPointAfter(step);
      copy(HostData::params, CopyDirection::host_to_device, std::nullopt,
           std::nullopt);
      return success();
    }
    // Parameters live on the host: bring a shard in before the gather that
    // makes its unit resident, following the residency the runtime tracks.
    llvm::DenseSet<int64_t> resident;
    for (ProgramOp program : {forward, backward}) {
      for (Operation &op :
           llvm::make_early_inc_range(program.getBody().front())) {
        if (auto gather = dyn_cast<AllGatherOp>(op)) {
          if (!resident.insert(gather.getUnit()).second)
            continue;
          b.setInsertionPoint(gather);
          copy(HostData::params, CopyDirection::host_to_device,
               gather.getUnit(), std::nullopt);
        } else if (auto release = dyn_cast<ReleaseOp>(op)) {
          resident.erase(release.getUnit());
        }
      }
    }
    return success();
  }
};

} // namespace
