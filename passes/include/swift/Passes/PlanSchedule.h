//===- PlanSchedule.h - the IR's schedule as plan.json spells it -*- C++ -*-===//
//
// The one translation of a swift.schedule into plan/'s Schedule
// (swift/Plan/Plan.h). swift-verify-schedule runs plan/'s checkSchedule()
// on its result and reports a violation at the op of the entry it names;
// the plan.json emitter (swift/Emit/Emit.h) writes it with planToJson().
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_PASSES_PLANSCHEDULE_H
#define SWIFT_PASSES_PLANSCHEDULE_H

#include "swift/Cost/Cost.h"
#include "swift/Dialect/SwiftOps.h"
#include "swift/Plan/Plan.h"

#include <optional>
#include <vector>

namespace mlir::swift {

/// The ops of one plan.json program entry: a compute, the gathers issued
/// since the previous compute, and the releases and reductions after it.
struct ScheduleStepOps {
  ComputeUnitOp compute;
  SmallVector<AllGatherOp> gathers;
  SmallVector<ReleaseOp> releases;
  SmallVector<Operation *> reductions; // swift.reduce_scatter / all_reduce
};

/// The bucket `op` reduces, if it is a swift.reduce_scatter or
/// swift.all_reduce.
std::optional<int64_t> reducedBucket(Operation *op);

/// A swift.schedule as plan.json spells it, with the ops behind each entry:
/// schedule.units[i] is units[i], schedule.buckets[i] buckets[i],
/// schedule.forward[i] forwardSteps[i], schedule.backward[i]
/// backwardSteps[i]. Host copies, streams, prefetch positions, bucket sizes
/// and `recompute` marks have no plan.json field (the runtime derives them
/// from strategy.offload and the units' checkpoint) and are left out.
struct TranslatedSchedule {
  ::swift::plan::Schedule schedule;
  std::vector<UnitOp> units;
  std::vector<BucketOp> buckets;
  ProgramOp forward, backward;
  SmallVector<ScheduleStepOps> forwardSteps, backwardSteps;
  OptimizerStepOp optimizerStep;
};

/// Translates `schedule`: a step opens at each swift.compute; the gathers
/// (and the parameter copies before them) since the previous compute belong
/// to it, the releases, reductions and gradient copies after it too. Emits
/// an error at the offending op and fails when the schedule has no forward
/// or backward program or no optimizer step, or a program op belongs to no
/// compute (a release, reduction or gradient copy before the first one, a
/// gather or parameter copy after the last one).
FailureOr<TranslatedSchedule> translateSchedule(ScheduleOp schedule);

/// plan.json's strategy section: the job's fixed strategy `s`, with the
/// bucket size and prefetch depth `schedule` records once
/// swift-materialize-collectives placed the collectives with them (`s`'s
/// before that, or without a schedule).
::swift::plan::StrategyConfig planStrategy(const ::swift::cost::Strategy &s,
                                           ScheduleOp schedule);

} // namespace mlir::swift

#endif // SWIFT_PASSES_PLANSCHEDULE_H
