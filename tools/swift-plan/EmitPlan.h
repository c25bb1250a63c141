//===- EmitPlan.h - plan.json for swift-run ---------------------*- C++ -*-===//

#ifndef SWIFT_TOOLS_SWIFT_PLAN_EMITPLAN_H
#define SWIFT_TOOLS_SWIFT_PLAN_EMITPLAN_H

#include "Report.h"

#include "swift/Planner/Job.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace swift::plan {

/// Writes plan.json (runtime/include/swift/Runtime/Plan.h's schema) for a
/// module whose schedule is materialized: the model, the training step,
/// the world, the strategy and schedule the passes built, and the estimate
/// as `predicted`. Returns an error message, empty on success.
std::string emitPlan(mlir::ModuleOp module, const planner::JobSpec &job,
                     const JobFacts &facts, llvm::raw_ostream &os);

} // namespace swift::plan

#endif // SWIFT_TOOLS_SWIFT_PLAN_EMITPLAN_H
