//===- PlaceOptimizer.cpp - where the optimizer step runs -----------------===//
//
// The optimizer runs where its states live: on the CPU when the strategy
// offloads them, on the accelerator otherwise. At ZeRO-1/2 a rank updates
// only its shard of parameters every rank holds whole, so the updated
// shards must be all-gathered afterwards (ZeRO-3 keeps parameters sharded;
// ZeRO-0 updates them whole). The placement is plan/'s buildSchedule()'s.
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

namespace {

LogicalResult placeOptimizer(JobOp job) {
  FailureOr<ScheduleTarget> target =
      resolveScheduleTarget(job, "swift-place-optimizer", true);
  if (failed(target))
    return failure();
  ScheduleOp schedule = target->schedule;
  if (schedule.getOptimizerStep())
    return schedule.getOptimizerStep().emitOpError("is already placed");
  FailureOr<::swift::plan::BuiltSchedule> built = buildSchedule(
      *target, strategyConfig(*target), unitParameters(schedule), schedule);
  if (failed(built))
    return failure();
  const ::swift::plan::OptimizerPlacementSpec &placement =
      built->schedule.optimizer;
  OpBuilder b = OpBuilder::atBlockEnd(&schedule.getBody().front());
  OptimizerStepOp::create(b, schedule.getLoc(), placement.device,
                          placement.gatherParams);
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
