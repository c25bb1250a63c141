//===- VerifySchedule.cpp - a finished schedule is complete and consistent ===//
//
// The op verifiers only check what any schedule under construction must
// hold. This pass checks the finished one of each job against the job with
// ScheduleOp::checkFinished() (swift/Dialect/SwiftOps.h): plan/'s
// checkSchedule() on the one translation the plan.json emitter writes too,
// and what plan.json does not carry.
//
//===----------------------------------------------------------------------===//

#include "ScheduleSupport.h"

#include "swift/Passes/Passes.h"

namespace mlir::swift {
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;

namespace {

struct VerifySchedulePass
    : mlir::swift::impl::VerifySchedulePassBase<VerifySchedulePass> {
  void runOnOperation() override {
    bool ok = forEachJob(getOperation(), [](JobOp job) -> LogicalResult {
      FailureOr<ScheduleTarget> target =
          resolveScheduleTarget(job, "swift-verify-schedule", true);
      if (failed(target))
        return failure();
      return target->schedule.checkFinished(target->config, target->strategy);
    });
    if (!ok)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
