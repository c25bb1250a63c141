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
    the `swift.job`'s `counts = #swift.counts<parameters = ...,
    trainable_parameters = ..., tokens_per_step = ...>`. Reports and later
    passes read these instead of recounting.
  }];
  let statistics = [
    Statistic<"numParameters", "parameters", "Parameters of the model">,
    Statistic<"numTrainable", "trainable-parameters",
              "Parameters that receive gradients">
  ];
}

def ChooseStrategyPass : Pass<"swift-choose-strategy", "::mlir::ModuleOp"> {
  let summary = "Search the strategy space and fix the job's open decisions";
  let description = [{
    Enumerates ZeRO stage, offload, checkpointing (including first-k layers),
    micro-batch, bucket size and prefetch depth around the decisions the job
    fixed, prices every candidate with the cost model and keeps the fastest
    whose peak fits under the GPU's capacity minus the margin and whose host
    memory per node (its ranks' processes and offloaded buffers) under the
    host's minus the same margin. Writes the
    chosen strategy into the job (its `strategy` and `micro_batch_size`) and
    records the decision as `swift.decision`: the chosen strategy, the
    runners-up with why each lost, how many strategies were priced; when
    nothing fits, status `nothing-fits`, the closest strategy (written into
    the job so it can still be priced) and its shortfall.
  }];
  let options = [
    Option<"memoryMargin", "memory-margin", "double", /*default=*/"0.10",
           "Fraction of GPU capacity kept free for allocator "
           "fragmentation, and of host memory (default 0.10)">,
    Option<"alternatives", "alternatives", "unsigned", /*default=*/"5",
           "Runners-up recorded in swift.decision (default 5)">,
    ListOption<"allowedZero", "allowed-zero", "int",
               "The ZeRO stages to choose among when the job leaves "
               "strategy.zero open (default: 0-3); a fixed stage must be "
               "one of them">
  ];
}

def EstimateCostPass : Pass<"swift-estimate-cost", "::mlir::ModuleOp"> {
  let summary = "Price the job's strategy: memory per GPU and step time";
  let description = [{
    Needs a job whose strategy is complete (ZeRO stage, offload,
    checkpointing, micro-batch). Reads every op through CostOpInterface into
    the cost model's compact view, prices the strategy for the job's backend
    and records, per op, `swift.cost = #swift.op_cost<...>` (FLOPs of
    forward, backward and recompute, and bytes kept for backward, per
    micro-batch), per decoder
    layer the bytes it keeps, and on the job `swift.estimate`: the peak per
    GPU and where it happens, its breakdown, the capacity, and the step time
    with its parts.
  }];
}

//===----------------------------------------------------------------------===//
// Materialization: the strategy spelled out as a swift.schedule, one pass per
// kind of decision, then checked as a whole. Every pass needs a job whose
// strategy is complete.
//===----------------------------------------------------------------------===//

def MaterializeUnitsPass : Pass<"swift-materialize-units", "::mlir::ModuleOp"> {
  let summary = "Create the job's swift.schedule with one unit per layer";
  let description = [{
    Adds `swift.schedule @<job>_schedule for @<job>` after the job, holding
    one `swift.unit` for the embedding, one per decoder layer (each
    `swift.repeat` unrolled, layers numbered from its `first_layer`) and
    one for the head: the units of plan/'s `buildSchedule()`
    (swift/Plan/Schedule.h), so decoder layers below the strategy's
    `checkpoint_layers` (all when absent) get its checkpointing mode. A
    unit's parameter count comes from the `swift.param` ops it owns (a tied
    head owns only its norm and is marked `reads_embedding`).
  }];
}

def MaterializeCollectivesPass
    : Pass<"swift-materialize-collectives", "::mlir::ModuleOp"> {
  let summary = "Place gradient buckets, all-gathers and reductions";
  let description = [{
    Translates the buckets and programs of plan/'s `buildSchedule()`
    (swift/Plan/Schedule.h), which swift-run also calls for a plan without
    a schedule, so swift-run executes the same steps whether it reads or
    builds them:
    buckets filled in backward order until `bucket-bytes` of fp32 gradients
    (all_reduce at ZeRO-0 on the last micro-batch; reduce_scatter at ZeRO-1
    on the last micro-batch, at ZeRO-2/3 every micro-batch); a `forward`
    and a `backward` program computing every unit once; at ZeRO-3, each
    unit's parameters all-gathered `prefetch-depth` units ahead and released
    after use; each bucket reduced right after the compute that makes its
    gradients final. Collectives go on the communication stream.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"0",
           "Gradient bucket target in bytes (0: the strategy's "
           "bucket_bytes, 25 MiB when absent)">,
    Option<"prefetchDepth", "prefetch-depth", "int", /*default=*/"-1",
           "ZeRO-3 units gathered ahead (-1: the strategy's "
           "prefetch_depth, 1 when absent)">
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "Gradient buckets">,
    Statistic<"numGathers", "all-gathers",
              "All-gathers issued per micro-batch">
  ];
}

def PlaceOptimizerPass : Pass<"swift-place-optimizer", "::mlir::ModuleOp"> {
  let summary = "Place the optimizer step on the accelerator or the CPU";
  let description = [{
    Appends `swift.optimizer_step` to the schedule, placed as plan/'s
    `buildSchedule()` places it: on the CPU when the strategy offloads the
    optimizer, on the accelerator otherwise, with `gather_params` at
    ZeRO-1/2 (each rank updates its shard of replicated parameters, which
    must then be all-gathered).
  }];
}

def MaterializeOffloadPass
    : Pass<"swift-materialize-offload", "::mlir::ModuleOp"> {
  let summary = "Insert the host<->device copies of CPU offload";
  let description = [{
    With the optimizer offloaded: each bucket's reduced gradients go
    device-to-host right after its reduction, and (optimizer only) the
    updated parameters come back host-to-device after the optimizer step.
    With parameters offloaded too (ZeRO-3): a unit's shard comes
    host-to-device before each all-gather that finds it not gathered. Needs
    the collectives and the optimizer placed.
  }];
  let statistics = [
    Statistic<"numCopies", "copies", "Host<->device copies inserted">
  ];
}

def VerifySchedulePass : Pass<"swift-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "Check a materialized schedule against its job";
  let description = [{
    Checks that the schedule is complete and consistent with the job's
    strategy by running plan/'s `checkSchedule()` (swift/Plan/Schedule.h),
    the rules swift-run applies to plan.json, on the schedule as plan.json
    spells it, reporting a violation at the op it names: units match the
    model and the checkpointing; forward computes units 0..L+1 and backward
    L+1..0, each exactly once; at ZeRO-3 every unit a step reads is
    gathered before and released after (all released when backward ends),
    below ZeRO-3 nothing is gathered; the buckets partition the units, use
    the stage's collective and frequency, and each is reduced once after
    its gradients are final; the optimizer runs on the CPU exactly when
    offloading and gathers parameters exactly at ZeRO-1/2. Then what only
    the IR carries: every program op belongs to a compute, exactly the
    checkpointed units recompute, prefetch positions name a unit that reads
    the gathered parameters, bucket sizes, collectives on the communication
    stream, and offload copies present exactly when the strategy offloads.
  }];
}

#endif // SWIFT_PASSES_TD
