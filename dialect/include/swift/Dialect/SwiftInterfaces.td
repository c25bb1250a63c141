//===- SwiftInterfaces.td - cost interface of model ops ----*- tablegen -*-===//

#ifndef SWIFT_DIALECT_SWIFTINTERFACES_TD
#define SWIFT_DIALECT_SWIFTINTERFACES_TD

include "mlir/IR/OpBase.td"

def Swift_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::swift";
  let description = [{
    How much work an op does and what it keeps for backward, per sample (one
    sequence of the micro-batch). Analyses multiply by the micro-batch size
    and the repeat count of enclosing `swift.repeat` ops. The numbers
    describe the math; the cost model adds what an implementation does on
    top (upcasts, workspaces) per backend.
  }];
  let methods = [
    InterfaceMethod<"Forward FLOPs for one sample.",
      "int64_t", "getForwardFlopsPerSample">,
    InterfaceMethod<[{
        Backward FLOPs for one sample. `weightGrad` is false when the op's
        parameters are frozen, so only the input gradient is computed.
      }],
      "int64_t", "getBackwardFlopsPerSample", (ins "bool":$weightGrad),
      /*methodBody=*/"", /*defaultImplementation=*/[{
        return 2 * $_op.getForwardFlopsPerSample();
      }]>,
    InterfaceMethod<[{
        Appends the tensors autograd keeps alive from the forward to the
        backward of this op, per sample.
      }],
      "void", "getSavedTensors",
      (ins "::llvm::SmallVectorImpl<::mlir::swift::SavedTensor> &":$saved)>,
  ];
}

#endif // SWIFT_DIALECT_SWIFTINTERFACES_TD
