//===- Import.h - job description to swift IR -------------------*- C++ -*-===//
//
// The first phase: a validated job (swift/Job/Job.h) as IR.
//

#ifndef SWIFT_PASSES_IMPORT_H
#define SWIFT_PASSES_IMPORT_H

#include "swift/Job/Job.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::swift {

/// Builds the module for a validated job: `swift.cluster @cluster`, the model
/// as `swift.model` with its decoder layers folded into one `swift.repeat`,
/// and `swift.job @job`. The result verifies.
mlir::OwningOpRef<mlir::ModuleOp> importJob(const ::swift::job::JobSpec &job,
                                            mlir::MLIRContext &context);

/// A symbol-friendly spelling of a model name ("llama3.1-8b" -> "llama3_1_8b").
std::string symbolName(const std::string &name);

} // namespace mlir::swift

#endif // SWIFT_PASSES_IMPORT_H
