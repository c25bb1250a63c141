//===- SwiftOps.h - swift dialect operations ------------------------------===//

#ifndef SWIFT_DIALECT_SWIFTOPS_H
#define SWIFT_DIALECT_SWIFTOPS_H

#include "swift/Dialect/SwiftDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <vector>

namespace mlir::swift {
class LossOp;
// Referred to by ScheduleOp before their definitions.
class UnitOp;
class BucketOp;
class ProgramOp;
class OptimizerStepOp;
} // namespace mlir::swift

#define GET_OP_CLASSES
#include "swift/Dialect/SwiftOps.h.inc"

#endif // SWIFT_DIALECT_SWIFTOPS_H
