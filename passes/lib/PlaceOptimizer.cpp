//===- PlaceOptimizer.cpp - where the optimizer step runs -----------------===//
//
// The optimizer runs where its states live: on the CPU when the strategy
// offloads them, on the accelerator otherwise. At ZeRO-1/2 a rank updates
// only its shard of parameters every rank holds whole, so the updated
// shards must be all-gathered afterwards (ZeRO-3 keeps parameters sharded;
// ZeRO-0 updates them whole).
//
//===----------------------------------------------------------------------===//

#include "ScheduleSupport.h"

#include "swift/Passes/Passes.h"

namespace mlir::swift {
#define GEN_PASS_DEF_PLACEOPTIMIZERPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;
namespace cost = ::swift::cost;

namespace {

LogicalResult placeOptimizer(JobOp job) {
  FailureOr<ScheduleTarget> target =
      resolveScheduleTarget(job, "swift-place-optimizer", true);
  if (failed(target))
    return failure();
  ScheduleOp schedule = target->schedule;
  if (schedule.getOptimizerStep())
    return schedule.getOptimizerStep().emitOpError("is already placed");
  const cost::Strategy &s = target->strategy;
  OpBuilder b = OpBuilder::atBlockEnd(&schedule.getBody().front());
  OptimizerStepOp::create(b, schedule.getLoc(),
                          s.offload == cost::Offload::None
                              ? OptimizerDevice::Accelerator
                              : OptimizerDevice::Cpu,
                          /*gather_params=*/s.zero == 1 || s.zero == 2);
  return success();
}

struct PlaceOptimizerPass
    : mlir::swift::impl::PlaceOptimizerPassBase<PlaceOptimizerPass> {
  void runOnOperation() override {
    if (!forEachJob(getOperation(), placeOptimizer))
      signalPassFailure();
  }
};

} // namespace
