// A layout backend swift-run does not run (tp, pp or cp > 1, a pipeline
// schedule, virtual_stages > 1) is
// refused by every pass that would price or materialize the strategy, naming
// the key and its value, instead of being treated as the trivial layout.
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = none, tp = 2/; s/GPUS/2/; s/gradient_accumulation = 1 :/gradient_accumulation = 2 :/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-choose-strategy 2>&1 | FileCheck %s --check-prefix=TP
// TP: error: strategy.tp: backend swift-run runs no tensor parallelism (tp 2); use backend torchtitan or megatron, or leave it auto or set 1
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = none, pp = 2/; s/GPUS/2/; s/gradient_accumulation = 1 :/gradient_accumulation = 2 :/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-estimate-cost 2>&1 | FileCheck %s --check-prefix=PP
// PP: error: 'swift.job' op strategy.pp: backend swift-run runs no pipeline parallelism (pp 2); use backend torchtitan or megatron, or leave it auto or set 1
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = none, cp = 2/; s/GPUS/2/; s/gradient_accumulation = 1 :/gradient_accumulation = 2 :/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-materialize-units 2>&1 | FileCheck %s --check-prefix=CP
// CP: error: 'swift.job' op strategy.cp: backend swift-run runs no context parallelism (cp 2); use backend torchtitan or megatron, or leave it auto or set 1
// dp_shard is priced (HSDP's shard groups): the chosen candidate carries
// its mesh and the strategy keeps the key; at ZeRO-0 swift-run has nothing
// to shard within a group.
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = none, dp_shard = 1/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-choose-strategy --swift-estimate-cost 2>&1 | FileCheck %s --check-prefix=SHARD
// SHARD: chosen = <zero = 2,{{.*}} mesh = <dp_replicate = 2, dp_shard = 1, cp = 1, pp = 1, tp = 1>>
// SHARD-SAME: strategy = #swift.strategy<zero = zero2, offload = none, checkpointing = none, bucket_bytes = {{[0-9]+}}, prefetch_depth = 1, dp_shard = 1>
// RUN: sed 's/STRATEGY/zero = zero0, offload = none, checkpointing = none, dp_shard = 1/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-choose-strategy 2>&1 | FileCheck %s --check-prefix=SHARD0
// SHARD0: error: strategy.dp_shard, strategy.offload, strategy.zero, strategy.checkpointing: with strategy.dp_shard=1, strategy.offload=none, strategy.zero=0 and strategy.checkpointing=none, swift-run can run no strategy: shard groups of 1 of the 2 data-parallel ranks (HSDP) shard the model states within each group: they need zero >= 1 (zero 0 keeps every unit whole on every rank)
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = none, pp_schedule = one_f_one_b/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-estimate-cost 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// SCHEDULE: error: 'swift.job' op strategy.pp_schedule: backend swift-run runs no pipeline schedules (pp_schedule 1f1b); use backend torchtitan or megatron, or leave it auto
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = none, virtual_stages = 2/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-materialize-units 2>&1 | FileCheck %s --check-prefix=VIRTUAL
// VIRTUAL: error: 'swift.job' op strategy.virtual_stages: backend swift-run runs no interleaved pipeline stages (virtual_stages 2); use backend torchtitan or megatron, or leave it auto or set 1

// The trivial values, written out, are today's strategy: the search prices
// it and writes back only non-trivial layout keys (none here).
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = none, tp = 1, pp = 1, cp = 1, dp_shard = 2, virtual_stages = 1/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-choose-strategy --swift-estimate-cost --swift-materialize-units | FileCheck %s --check-prefix=TRIVIAL
// TRIVIAL: swift.job @job
// TRIVIAL-SAME: decision = #swift.decision<fits = true
// TRIVIAL-SAME: estimate = #swift.estimate<
// TRIVIAL-SAME: strategy = #swift.strategy<zero = zero2, offload = none, checkpointing = none, bucket_bytes = {{[0-9]+}}, prefetch_depth = 1>}
// TRIVIAL: swift.schedule
