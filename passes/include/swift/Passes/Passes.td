//===- Passes.td - swift passes ----------------------------*- tablegen -*-===//

#ifndef SWIFT_PASSES_TD
#define SWIFT_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnnotateModelPass : Pass<"swift-annotate-model", "::mlir::ModuleOp"> {
  let summary = "Record model size and work per step on the job";
  let description = [{
    Counts the model's parameters from its `swift.param` ops (a repeated
    layer's once per repeat, a tied weight once), the parameters trained under
    the job's method, and the tokens of one optimizer step, and records them as
    `swift.parameters`, `swift.trainable_parameters` and
    `swift.tokens_per_step` on the `swift.job`. Reports and later passes read
    these instead of recounting.
  }];
  let statistics = [
    Statistic<"numParameters", "parameters", "Parameters of the model">,
    Statistic<"numTrainable", "trainable-parameters",
              "Parameters that receive gradients">
  ];
}

#endif // SWIFT_PASSES_TD
