//===- SwiftSchedule.td - the materialized training schedule -*- tablegen -*-===//
//
// The plan made explicit: what plan/include/swift/Plan/Plan.h calls
// "schedule" (units, buckets, forward/backward programs, optimizer
// placement), plus the host<->device copies of offload. Units and buckets
// are referred to by index, exactly as plan.json does, so an emitter
// translates each op to one JSON entry.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_DIALECT_SWIFTSCHEDULE_TD
#define SWIFT_DIALECT_SWIFTSCHEDULE_TD

include "swift/Dialect/SwiftDialect.td"
include "swift/Dialect/SwiftAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"

def Swift_ScheduleOp : Swift_Op<"schedule", [Symbol, HasParent<"ModuleOp">,
    IsolatedFromAbove, SingleBlock, NoTerminator]> {
  let summary = "the training step of a job, spelled out";
  let description = [{
    Holds, in this order: one `swift.unit` per unit (embedding, decoder
    layers, head), the gradient `swift.bucket`s, the `forward` and
    `backward` `swift.program`s, the `swift.optimizer_step` and any copies
    around it. `bucket_bytes` and `prefetch_depth` are the knobs the
    collectives were placed with (plan.json's `strategy` section). The
    materialize passes fill it in step by step; `swift-verify-schedule`
    checks the finished schedule against the job's strategy.

    ```mlir
    swift.schedule @schedule for @job bucket_bytes 26214400 prefetch_depth 1 {
      swift.unit 0 embedding params 2048
      swift.unit 1 decoder layer 0 params 4096 checkpoint <full>
      swift.unit 2 head params 16
      swift.bucket 0 units [2, 1, 0] reduce_scatter every_micro_batch bytes 24640
      swift.program forward { ... }
      swift.program backward { ... }
      swift.optimizer_step on accelerator gather_params
    }
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    FlatSymbolRefAttr:$job,
    OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$bucket_bytes,
    OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$prefetch_depth);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `for` $job (`bucket_bytes` $bucket_bytes^)?
    (`prefetch_depth` $prefetch_depth^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::std::vector<UnitOp> getUnits();
    ::std::vector<BucketOp> getBuckets();
    /// The program of `phase`, or null when not materialized yet.
    ProgramOp getProgram(ProgramPhase phase);
    /// The optimizer step, or null when not placed yet.
    OptimizerStepOp getOptimizerStep();
    /// The schedule as plan.json spells it, with the ops behind each entry
    /// (TranslatedSchedule, swift/Dialect/SwiftOps.h): a step opens at each
    /// swift.compute; the gathers (and the parameter copies before them)
    /// since the previous compute belong to it, the releases, reductions
    /// and gradient copies after it too. Emits an error at the offending op
    /// and fails when there is no forward or backward program or no
    /// optimizer step, or a program op belongs to no compute (a release,
    /// reduction or gradient copy before the first one, a gather or
    /// parameter copy after the last one). The one translation:
    /// checkFinished() checks it, the plan.json emitter writes it.
    ::mlir::FailureOr<TranslatedSchedule> translate();
    /// Checks the finished schedule against the job's `model` (as
    /// ModelOp::planModel() spells it) and fixed `strategy`: plan/'s
    /// checkSchedule() on translate()'s result (the rules swift-run
    /// enforces on plan.json), then what plan.json does not carry (the
    /// recompute marks, streams, prefetch positions, bucket sizes,
    /// reductions matching their bucket's collective, the offload copies).
    /// Reports a violation at its op. swift-verify-schedule runs it; the
    /// emitters run it again before they trust the schedule.
    ::mlir::LogicalResult checkFinished(const ::swift::plan::ModelConfig &model,
                                        const ::swift::cost::Strategy &strategy);
  }];
}

def Swift_UnitOp : Swift_Op<"unit", [HasParent<"ScheduleOp">]> {
  let summary = "one unit of sharding, gathering, reduction and recompute";
  let description = [{
    Unit 0 is the embedding, units 1..L the decoder layers 0..L-1, unit L+1
    the head. `params` counts the parameters of the unit's own flat buffer
    (a tied head owns only its final norm); `reads_embedding` marks a head
    that also reads unit 0's table (tied embeddings), so ZeRO-3 must gather
    unit 0 for it too. `checkpoint` (decoders only, absent: none) says how
    the unit's activations are recomputed in backward; `offload_input` (a
    fully checkpointed decoder only) that its checkpointed input waits for
    the backward in pinned host memory, copied out during its forward and
    back one unit ahead in the backward.

    ```mlir
    swift.unit 0 embedding params 262144
    swift.unit 1 decoder layer 0 params 4096 checkpoint <full> offload_input
    swift.unit 3 head params 2048 reads_embedding
    ```
  }];
  let arguments = (ins
    ConfinedAttr<I64Attr, [IntNonNegative]>:$index,
    Swift_UnitKindAttr:$kind,
    OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$layer,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$parameters,
    UnitAttr:$reads_embedding,
    OptionalAttr<Swift_CheckpointingAttr>:$checkpoint,
    UnitAttr:$offload_input);
  let assemblyFormat = [{
    $index custom<PlanEnum>($kind) (`layer` $layer^)? `params` $parameters
    (`reads_embedding` $reads_embedding^)? (`checkpoint` $checkpoint^)?
    (`offload_input` $offload_input^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::swift::plan::Checkpointing getCheckpointMode() {
      return getCheckpoint().value_or(::swift::plan::Checkpointing::None);
    }
    /// Units whose parameters this unit's compute reads (plan.h's
    /// unitOwners): itself, and unit 0 for a tied head.
    ::llvm::SmallVector<int64_t, 2> getOwners() {
      int64_t self = getIndex();
      if (getReadsEmbedding())
        return {self, 0};
      return {self};
    }
  }];
}

def Swift_BucketOp : Swift_Op<"bucket", [HasParent<"ScheduleOp">]> {
  let summary = "units whose gradients are reduced by one collective";
  let description = [{
    Units listed in backward order. `every_micro_batch` absent: gradients
    accumulate locally and are reduced on the last micro-batch only.
    `bytes` is the gradient payload (fp32) the bucket was sized with.

    ```mlir
    swift.bucket 0 units [3, 2] all_reduce bytes 33554432
    swift.bucket 1 units [1, 0] reduce_scatter every_micro_batch bytes 1048576
    ```
  }];
  let arguments = (ins
    ConfinedAttr<I64Attr, [IntNonNegative]>:$index,
    DenseI64ArrayAttr:$units,
    Swift_CollectiveAttr:$collective,
    UnitAttr:$every_micro_batch,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$bytes);
  let assemblyFormat = [{
    $index `units` $units custom<PlanEnum>($collective)
    (`every_micro_batch` $every_micro_batch^)? `bytes` $bytes attr-dict
  }];
  let hasVerifier = 1;
}

def Swift_ProgramOp : Swift_Op<"program", [HasParent<"ScheduleOp">,
    SingleBlock, NoTerminator]> {
  let summary = "the steps of one forward or backward pass, in issue order";
  let description = [{
    Run for every micro-batch. A step of plan.json is a `swift.compute`
    with the `swift.all_gather`s and host copies just before it and the
    `swift.release`s, reductions and gradient copies just after it.

    ```mlir
    swift.program forward {
      swift.all_gather unit 0 ahead 0 on communication
      swift.compute unit 0
      swift.release unit 0
    }
    ```
  }];
  let arguments = (ins Swift_ProgramPhase:$phase);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$phase attr-dict-with-keyword $body";
}

def Swift_AllGatherOp : Swift_Op<"all_gather", [HasParent<"ProgramOp">]> {
  let summary = "issue the all-gather of a unit's parameters (ZeRO-3)";
  let description = [{
    Asynchronous on `stream`; skipped when the unit is already gathered.
    `ahead` is the prefetch position: how many units after the next compute
    (in the program's order) the unit that needs these parameters comes;
    0 is the gather of the next computed unit itself.

    ```mlir
    swift.all_gather unit 2 ahead 1 on communication
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$unit,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$ahead,
                       Swift_Stream:$stream);
  let assemblyFormat = "`unit` $unit `ahead` $ahead `on` $stream attr-dict";
}

def Swift_ComputeUnitOp : Swift_Op<"compute", [HasParent<"ProgramOp">]> {
  let summary = "run a unit's forward or backward on the compute stream";
  let description = [{
    Waits for the gathers the unit needs. `recompute` (backward only) marks
    a checkpointed unit whose forward runs again before its backward.

    ```mlir
    swift.compute unit 1 recompute
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$unit,
                       UnitAttr:$recompute);
  let assemblyFormat = "`unit` $unit (`recompute` $recompute^)? attr-dict";
  let hasVerifier = 1;
}

def Swift_ReleaseOp : Swift_Op<"release", [HasParent<"ProgramOp">]> {
  let summary = "free a unit's gathered parameters (ZeRO-3)";
  let description = [{
    ```mlir
    swift.release unit 1
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$unit);
  let assemblyFormat = "`unit` $unit attr-dict";
}

class Swift_ReduceOp<string mnemonic, string what>
    : Swift_Op<mnemonic, [HasParent<"ProgramOp">]> {
  let summary = "launch the " # what # " of a bucket's gradients";
  let description = [{
    Backward only, right after the compute that makes the bucket's
    gradients final; asynchronous on `stream`.

    ```mlir
    swift.}] # mnemonic # [{ bucket 0 on communication
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$bucket,
                       Swift_Stream:$stream);
  let assemblyFormat = "`bucket` $bucket `on` $stream attr-dict";
  let hasVerifier = 1;
}
def Swift_ReduceScatterOp : Swift_ReduceOp<"reduce_scatter", "reduce-scatter">;
def Swift_AllReduceOp : Swift_ReduceOp<"all_reduce", "all-reduce">;

def Swift_CopyOp : Swift_Op<"copy", [ParentOneOf<["ScheduleOp", "ProgramOp"]>]> {
  let summary = "move model state between host and device (offload)";
  let description = [{
    In a program: `params host_to_device unit N` brings a host-resident
    shard to the device before its all-gather (offload of parameters);
    `grads device_to_host bucket N` moves a reduced bucket's gradients to
    the host optimizer. After the optimizer step: `params host_to_device`
    copies the updated parameters back (offload of the optimizer only).

    ```mlir
    swift.copy grads device_to_host bucket 0
    swift.copy params host_to_device
    ```
  }];
  let arguments = (ins Swift_HostData:$what,
                       Swift_CopyDirection:$direction,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$unit,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$bucket);
  let assemblyFormat = [{
    $what $direction (`unit` $unit^)? (`bucket` $bucket^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Swift_OptimizerStepOp : Swift_Op<"optimizer_step", [HasParent<"ScheduleOp">]> {
  let summary = "where the optimizer updates the parameters";
  let description = [{
    Once per step, after the last micro-batch's reductions. `gather_params`
    (ZeRO-1/2): each rank updates its shard, then the updated parameters are
    all-gathered so every rank holds them whole again.

    ```mlir
    swift.optimizer_step on cpu gather_params
    ```
  }];
  let arguments = (ins Swift_OptimizerDeviceAttr:$device,
                       UnitAttr:$gather_params);
  let assemblyFormat = "`on` custom<PlanEnum>($device) (`gather_params` $gather_params^)? attr-dict";
}

#endif // SWIFT_DIALECT_SWIFTSCHEDULE_TD
