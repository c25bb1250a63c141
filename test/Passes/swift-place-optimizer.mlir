// ZeRO-0: the replicated optimizer on the accelerator, nothing to gather.
// RUN: sed 's/STRATEGY/zero = zero0, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-place-optimizer | FileCheck %s --check-prefix=ZERO0
// ZERO0: swift.optimizer_step on accelerator{{$}}

// ZeRO-1: shards updated on the accelerator, then all-gathered.
// RUN: sed 's/STRATEGY/zero = zero1, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-place-optimizer | FileCheck %s --check-prefix=ZERO1
// ZERO1: swift.optimizer_step on accelerator gather_params

// ZeRO-2 with the optimizer offloaded: on the CPU, still gathering.
// RUN: sed 's/STRATEGY/zero = zero2, offload = optimizer, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-place-optimizer | FileCheck %s --check-prefix=ZERO2
// ZERO2: swift.optimizer_step on cpu gather_params

// ZeRO-3 with parameters offloaded: on the CPU; parameters stay sharded.
// RUN: sed 's/STRATEGY/zero = zero3, offload = optimizer_params, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-place-optimizer | FileCheck %s --check-prefix=ZERO3
// ZERO3: swift.optimizer_step on cpu{{$}}

// Placing twice is an error, not a second step.
// RUN: sed 's/STRATEGY/zero = zero1, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-materialize-units --swift-place-optimizer --swift-place-optimizer 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TWICE
// TWICE: error: 'swift.optimizer_step' op is already placed
