// No offload: no copies.
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives --swift-place-optimizer \
// RUN:     --swift-materialize-offload | FileCheck %s --check-prefix=NONE
// NONE-NOT: swift.copy

// Optimizer offload (ZeRO-2): each reduced bucket's gradients go to the
// host right after the reduction; updated parameters come back after the
// CPU step.
// RUN: sed 's/STRATEGY/zero = zero2, offload = optimizer, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives=bucket-bytes=2000 \
// RUN:     --swift-place-optimizer --swift-materialize-offload | FileCheck %s --check-prefix=OPT
// OPT:      swift.program backward {
// OPT-NOT:    swift.copy params
// OPT:        swift.reduce_scatter bucket 0 on communication
// OPT-NEXT:   swift.copy grads device_to_host bucket 0
// OPT-NEXT:   swift.compute unit 0
// OPT-NEXT:   swift.reduce_scatter bucket 1 on communication
// OPT-NEXT:   swift.copy grads device_to_host bucket 1
// OPT-NEXT: }
// OPT-NEXT: swift.optimizer_step on cpu gather_params
// OPT-NEXT: swift.copy params host_to_device{{$}}

// Parameter offload (ZeRO-3): a shard comes to the device before each
// gather that finds its unit released (a prefetched unit is not copied
// twice), gradients leave per bucket, nothing comes back after the step.
// RUN: sed 's/STRATEGY/zero = zero3, offload = optimizer_params, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives --swift-place-optimizer \
// RUN:     --swift-materialize-offload | FileCheck %s --check-prefix=PARAMS
// PARAMS:      swift.program forward {
// PARAMS-NEXT:   swift.copy params host_to_device unit 0
// PARAMS-NEXT:   swift.all_gather unit 0 ahead 0 on communication
// PARAMS-NEXT:   swift.copy params host_to_device unit 1
// PARAMS-NEXT:   swift.all_gather unit 1 ahead 1 on communication
// PARAMS-NEXT:   swift.compute unit 0
// PARAMS-NEXT:   swift.release unit 0
// PARAMS-NEXT:   swift.all_gather unit 1 ahead 0 on communication
// PARAMS-NEXT:   swift.copy params host_to_device unit 2
// PARAMS-NEXT:   swift.all_gather unit 2 ahead 1 on communication
// PARAMS:      swift.program backward {
// PARAMS-NEXT:   swift.all_gather unit 3 ahead 0 on communication
// PARAMS-NEXT:   swift.all_gather unit 0 ahead 0 on communication
// PARAMS-NEXT:   swift.copy params host_to_device unit 2
// PARAMS-NEXT:   swift.all_gather unit 2 ahead 1 on communication
// PARAMS:        swift.reduce_scatter bucket 0 on communication
// PARAMS-NEXT:   swift.copy grads device_to_host bucket 0
// PARAMS-NEXT: }
// PARAMS-NEXT: swift.optimizer_step on cpu{{$}}
// PARAMS-NEXT: }

// Parameters live on the host between uses only when sharded (ZeRO-3).
// RUN: sed 's/STRATEGY/zero = zero2, offload = optimizer_params, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-materialize-units --swift-materialize-collectives --swift-place-optimizer \
// RUN:     --swift-materialize-offload 2>&1 | FileCheck %s --check-prefix=NOTZERO3
// NOTZERO3: error: 'swift.job' op "optimizer+params" needs zero 3

// The copy-back is placed after the optimizer step, so that must exist.
// RUN: sed 's/STRATEGY/zero = zero2, offload = optimizer, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-materialize-units --swift-materialize-collectives --swift-materialize-offload 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: error: 'swift.schedule' op needs its programs and optimizer step; run swift-materialize-collectives and swift-place-optimizer first
