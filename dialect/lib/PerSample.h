//===- PerSample.h - an activation's elements per sample --------*- C++ -*-===//
//
// Private to dialect/lib: what the cost interface (SwiftCost.cpp) and the
// cost model's view (SwiftViews.cpp) both count.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_DIALECT_LIB_PERSAMPLE_H
#define SWIFT_DIALECT_LIB_PERSAMPLE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace mlir::swift {

/// Elements of one sample of an activation [batch, seq, ...].
inline int64_t perSample(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t elements = 1;
  for (int64_t dim : type.getShape().drop_front())
    elements *= dim;
  return elements;
}

} // namespace mlir::swift

#endif // SWIFT_DIALECT_LIB_PERSAMPLE_H
