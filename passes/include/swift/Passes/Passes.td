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

def EstimateCostPass : Pass<"swift-estimate-cost", "::mlir::ModuleOp"> {
  let summary = "Price the job's strategy: memory per GPU and step time";
  let description = [{
    Needs a job whose strategy is complete (ZeRO stage, offload,
    checkpointing, micro-batch). Reads every op through CostOpInterface into
    the cost model's compact view, prices the strategy for the job's backend
    and records, per op, `swift.cost` (FLOPs of forward, backward and
    recompute, and bytes kept for backward, per micro-batch), per decoder
    layer the bytes it keeps, and on the job `swift.estimate`: the peak per
    GPU and where it happens, its breakdown, the capacity, and the step time
    with its parts.
  }];
}

#endif // SWIFT_PASSES_TD
