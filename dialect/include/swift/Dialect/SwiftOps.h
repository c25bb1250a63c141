//===- SwiftOps.h - swift dialect operations ------------------------------===//
//
// The ops and the views other layers read them through: the cost model's
// (ModelOp::profile(), JobOp::trainingSetup(), ClusterOp::hardware(),
// JobOp::fixedStrategy()), plan.json's (ModelOp::planModel(),
// ScheduleOp::translate(), planStrategy()). Passes and emitters call these;
// none re-reads the ops its own way.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_DIALECT_SWIFTOPS_H
#define SWIFT_DIALECT_SWIFTOPS_H

#include "swift/Cost/Cost.h"
#include "swift/Dialect/SwiftDialect.h"
#include "swift/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <vector>

#include <optional>
#include <string>

namespace mlir::swift {
class LossOp;
// Referred to by JobOp before their definitions.
class ModelOp;
class ScheduleOp;
// Referred to by ScheduleOp before their definitions.
class UnitOp;
class BucketOp;
class ProgramOp;
class OptimizerStepOp;
struct TranslatedSchedule;
} // namespace mlir::swift

#define GET_OP_CLASSES
#include "swift/Dialect/SwiftOps.h.inc"

namespace mlir::swift {

/// The ops of one plan.json program entry: a compute, the gathers issued
/// since the previous compute, and the releases and reductions after it.
struct ScheduleStepOps {
  ComputeUnitOp compute;
  SmallVector<AllGatherOp> gathers;
  SmallVector<ReleaseOp> releases;
  SmallVector<Operation *> reductions; // swift.reduce_scatter / all_reduce
};

/// A swift.schedule as plan.json spells it (ScheduleOp::translate()), with
/// the ops behind each entry: schedule.units[i] is units[i],
/// schedule.buckets[i] buckets[i], schedule.forward[i] forwardSteps[i],
/// schedule.backward[i] backwardSteps[i]. Host copies, streams, prefetch
/// positions, bucket sizes and `recompute` marks have no plan.json field
/// (the runtime derives them from strategy.offload and the units'
/// checkpoint) and are left out.
struct TranslatedSchedule {
  ::swift::plan::Schedule schedule;
  std::vector<UnitOp> units;
  std::vector<BucketOp> buckets;
  ProgramOp forward, backward;
  SmallVector<ScheduleStepOps> forwardSteps, backwardSteps;
  OptimizerStepOp optimizerStep;
};

/// The bucket `op` reduces, if it is a swift.reduce_scatter or
/// swift.all_reduce.
std::optional<int64_t> reducedBucket(Operation *op);

/// plan.json's strategy section: the job's fixed strategy `s`, with the
/// bucket size and prefetch depth `schedule` records once
/// swift-materialize-collectives placed the collectives with them (`s`'s
/// before that, or without a schedule).
::swift::plan::StrategyConfig planStrategy(const ::swift::cost::Strategy &s,
                                           ScheduleOp schedule);

} // namespace mlir::swift

#endif // SWIFT_DIALECT_SWIFTOPS_H
