//===- Import.h - job description to swift IR -------------------*- C++ -*-===//

#ifndef SWIFT_PLANNER_IMPORT_H
#define SWIFT_PLANNER_IMPORT_H

#include "swift/Planner/Job.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace swift::planner {

/// Builds the module for a validated job: `swift.cluster @cluster`, the model
/// as `swift.model` with its decoder layers folded into one `swift.repeat`,
/// and `swift.job @job`. The result verifies.
mlir::OwningOpRef<mlir::ModuleOp> importJob(const JobSpec &job,
                                            mlir::MLIRContext &context);

/// A symbol-friendly spelling of a model name ("llama3.1-8b" -> "llama3_1_8b").
std::string symbolName(const std::string &name);

} // namespace swift::planner

#endif // SWIFT_PLANNER_IMPORT_H
