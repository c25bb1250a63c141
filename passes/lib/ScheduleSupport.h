//===- ScheduleSupport.h - what the schedule passes share -------*- C++ -*-===//
//
// Private to passes/lib: resolving a job to its model, cluster, fixed
// strategy and schedule, with the errors every materialize pass reports the
// same way, and the call of plan/'s schedule algorithm (buildSchedule() in
// swift/Plan/Schedule.h) every materialize pass translates its part of.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_PASSES_LIB_SCHEDULESUPPORT_H
#define SWIFT_PASSES_LIB_SCHEDULESUPPORT_H

#include "swift/Dialect/SwiftOps.h"
#include "swift/Plan/Schedule.h"

#include "mlir/IR/Builders.h"

namespace mlir::swift {

/// A job whose every strategy decision is made, with what it refers to.
struct ScheduleTarget {
  JobOp job;
  ModelOp model;
  ClusterOp cluster;
  ::swift::cost::Strategy strategy;
  ::swift::plan::ModelConfig config; // the model as its ops spell it
  ScheduleOp schedule;               // null until swift-materialize-units ran
};

/// Resolves `job` or reports why `pass` cannot run on it: a missing model
/// or cluster, an open strategy decision or a layout the cost model does
/// not price (JobOp::completeStrategy()), or (with `needSchedule`) no
/// schedule yet.
inline FailureOr<ScheduleTarget>
resolveScheduleTarget(JobOp job, StringRef pass, bool needSchedule) {
  ScheduleTarget t;
  t.job = job;
  t.model = job.lookupModel();
  t.cluster = job.lookupCluster();
  if (!t.model || !t.cluster)
    return job.emitOpError("needs its model and cluster for ") << pass;
  FailureOr<::swift::cost::Strategy> s = job.completeStrategy(
      (pass + " materializes a fixed strategy only").str());
  if (failed(s))
    return failure();
  t.strategy = *s;
  t.config = t.model.planModel();
  t.schedule = job.lookupSchedule();
  if (needSchedule && !t.schedule)
    return job.emitOpError("has no swift.schedule; run "
                           "swift-materialize-units before ")
           << pass;
  return t;
}

/// plan.json's strategy section for `t` (planStrategy()).
inline ::swift::plan::StrategyConfig strategyConfig(const ScheduleTarget &t) {
  return planStrategy(t.strategy, t.schedule);
}

/// The parameter counts of the schedule's units, in unit order.
inline std::vector<int64_t> unitParameters(ScheduleOp schedule) {
  std::vector<int64_t> out;
  for (UnitOp unit : schedule.getUnits())
    out.push_back(unit.getParameters());
  return out;
}

/// The schedule of `t` under `strategy`, by the one algorithm swift-run
/// also uses. `parameters` holds every unit's parameter count as the IR
/// counts them; when they are not one per unit of the model (embedding,
/// its layers, head), the error is reported at `where`.
inline FailureOr<::swift::plan::BuiltSchedule>
buildSchedule(const ScheduleTarget &t,
              const ::swift::plan::StrategyConfig &strategy,
              const std::vector<int64_t> &parameters, Operation *where) {
  int64_t want = t.config.numLayers + 2;
  if (int64_t(parameters.size()) != want)
    return where->emitOpError("has ")
           << parameters.size() << " units but the model needs " << want
           << " (embedding, " << t.config.numLayers << " decoder layers, head)";
  return ::swift::plan::buildSchedule(t.config, strategy, parameters);
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
