//===- SwiftDialect.h - the swift dialect, its enums and attributes -------===//

#ifndef SWIFT_DIALECT_SWIFTDIALECT_H
#define SWIFT_DIALECT_SWIFTDIALECT_H

#include "llvm/ADT/APFloat.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Value.h"

namespace mlir::swift {
/// A real number in its shortest round-trip spelling, as an MLIR float
/// literal ("989.4", "3350.0", "1.0e-05").
std::string formatReal(const llvm::APFloat &value);
} // namespace mlir::swift

#include "swift/Dialect/SwiftOpsDialect.h.inc"
#include "swift/Dialect/SwiftEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "swift/Dialect/SwiftAttrs.h.inc"

namespace mlir::swift {

/// A tensor autograd keeps from an op's forward for its backward, per sample.
/// `value` identifies tensors that several ops save (the input of q/k/v
/// projections is kept once); it is null for tensors private to the op (the
/// softmax statistics of attention, say).
struct SavedTensor {
  llvm::StringRef what;
  Value value;
  int64_t elementsPerSample;
  unsigned bitWidth;

  int64_t bytesPerSample() const { return elementsPerSample * bitWidth / 8; }
};

} // namespace mlir::swift

#include "swift/Dialect/SwiftInterfaces.h.inc"

#endif // SWIFT_DIALECT_SWIFTDIALECT_H
