//===- SwiftDialect.td - the swift dialect -----------------*- tablegen -*-===//
//
// The swift dialect describes an LLM training job: the cluster it runs on, the
// job's hyper-parameters, the model as tensor-level ops, and (as passes run)
// the strategy chosen for it.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_DIALECT_SWIFTDIALECT_TD
#define SWIFT_DIALECT_SWIFTDIALECT_TD

include "mlir/IR/OpBase.td"

def Swift_Dialect : Dialect {
  let name = "swift";
  let cppNamespace = "::mlir::swift";
  let summary = "Training jobs, clusters and LLM models for strategy planning";
  let description = [{
    A module holds one `swift.cluster` (the hardware), one `swift.model` (the
    network as tensor-level ops, identical decoder layers folded into
    `swift.repeat`) and one `swift.job` that trains the model on the cluster.
    Tensor types carry a dynamic leading batch dimension: the micro-batch is a
    strategy decision, not a property of the model. Every op that does work
    implements `CostOpInterface`, through which analyses read its FLOPs and
    the tensors it saves for backward.
  }];
  let useDefaultAttributePrinterParser = 1;
  // Discardable `swift.*` attributes: only `swift.cost` (#swift.op_cost).
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Swift_Op<string mnemonic, list<Trait> traits = []>
    : Op<Swift_Dialect, mnemonic, traits>;

#endif // SWIFT_DIALECT_SWIFTDIALECT_TD
