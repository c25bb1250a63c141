include "mlir/IR/OpBase.td"
include "swift/Dialect/FakeBase.td"
include "swift/Passes/FakePasses.td"
