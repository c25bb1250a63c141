//===- ScheduleSupport.h - what the schedule passes share -------*- C++ -*-===//
//
// Private to passes/lib: resolving a job to its model, cluster, fixed
// strategy and schedule, with the errors every materialize pass reports the
// same way.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_PASSES_LIB_SCHEDULESUPPORT_H
#define SWIFT_PASSES_LIB_SCHEDULESUPPORT_H

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Profile.h"

#include "mlir/IR/Builders.h"

namespace mlir::swift {

/// A job whose every strategy decision is made, with what it refers to.
struct ScheduleTarget {
  JobOp job;
  ModelOp model;
  ClusterOp cluster;
  ::swift::cost::Strategy strategy;
  ScheduleOp schedule; // null until swift-materialize-units ran
};

/// Resolves `job` or reports why `pass` cannot run on it: a missing model
/// or cluster, an open strategy decision, or (with `needSchedule`) no
/// schedule yet.
inline FailureOr<ScheduleTarget>
resolveScheduleTarget(JobOp job, StringRef pass, bool needSchedule) {
  auto module = job->getParentOfType<ModuleOp>();
  ScheduleTarget t;
  t.job = job;
  t.model = dyn_cast_or_null<ModelOp>(
      SymbolTable::lookupSymbolIn(module, job.getModelAttr()));
  t.cluster = dyn_cast_or_null<ClusterOp>(
      SymbolTable::lookupSymbolIn(module, job.getClusterAttr()));
  if (!t.model || !t.cluster)
    return job.emitOpError("needs its model and cluster for ") << pass;
  std::string missing;
  std::optional<::swift::cost::Strategy> s =
      fixedStrategy(job, t.cluster.getNumGpus(), missing);
  if (!s)
    return job.emitOpError("strategy is not complete (open: ")
           << missing << "); " << pass << " materializes a fixed strategy only";
  t.strategy = *s;
  for (auto schedule : module.getOps<ScheduleOp>())
    if (schedule.getJob() == job.getSymName())
      t.schedule = schedule;
  if (needSchedule && !t.schedule)
    return job.emitOpError("has no swift.schedule; run "
                           "swift-materialize-units before ")
           << pass;
  return t;
}

/// Runs `fn` on every job of `module`; false when any failed.
template <typename Fn> bool forEachJob(ModuleOp module, Fn &&fn) {
  bool ok = true;
  for (JobOp job : llvm::to_vector(module.getOps<JobOp>()))
    ok &= succeeded(fn(job));
  return ok;
}

} // namespace mlir::swift

#endif // SWIFT_PASSES_LIB_SCHEDULESUPPORT_H
