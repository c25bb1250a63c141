//===- Passes.h - swift passes --------------------------------------------===//

#ifndef SWIFT_PASSES_PASSES_H
#define SWIFT_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::swift {

#define GEN_PASS_DECL
#include "swift/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "swift/Passes/Passes.h.inc"

} // namespace mlir::swift

#endif // SWIFT_PASSES_PASSES_H
