// ZeRO-0 (world 2): all-reduce buckets on the last micro-batch, no gathers;
// with 2000-byte buckets the head and both layers (3264 B) close the first
// bucket, which is reduced right after layer 0's backward; the tied
// embedding's bucket waits for unit 0.
// RUN: sed 's/STRATEGY/zero = zero0, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives=bucket-bytes=2000 \
// RUN:   | FileCheck %s --check-prefix=ZERO0
// ZERO0:      swift.schedule @job_schedule for @job bucket_bytes 2000 prefetch_depth 1 {
// ZERO0:        swift.bucket 0 units [3, 2, 1] all_reduce bytes 3264
// ZERO0-NEXT:   swift.bucket 1 units [0] all_reduce bytes 2048
// ZERO0-NEXT:   swift.program forward {
// ZERO0-NEXT:     swift.compute unit 0
// ZERO0-NEXT:     swift.compute unit 1
// ZERO0-NEXT:     swift.compute unit 2
// ZERO0-NEXT:     swift.compute unit 3
// ZERO0-NEXT:   }
// ZERO0-NEXT:   swift.program backward {
// ZERO0-NEXT:     swift.compute unit 3
// ZERO0-NEXT:     swift.compute unit 2
// ZERO0-NEXT:     swift.compute unit 1
// ZERO0-NEXT:     swift.all_reduce bucket 0 on communication
// ZERO0-NEXT:     swift.compute unit 0
// ZERO0-NEXT:     swift.all_reduce bucket 1 on communication
// ZERO0-NEXT:   }

// ZeRO-0 at world 1 keeps its buckets: swift-run's plan.json requires every
// unit in a bucket, and an all-reduce over one rank costs nothing.
// RUN: sed 's/STRATEGY/zero = zero0, offload = none, checkpointing = none/; s/GPUS/1/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives | FileCheck %s --check-prefix=WORLD1
// WORLD1: swift.bucket 0 units [3, 2, 1, 0] all_reduce bytes 5312

// ZeRO-1: reduce-scatter, still on the last micro-batch only; the default
// 25 MiB bucket holds every unit and is reduced after the embedding.
// RUN: sed 's/STRATEGY/zero = zero1, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives | FileCheck %s --check-prefix=ZERO1
// ZERO1:      swift.schedule @job_schedule for @job bucket_bytes 26214400 prefetch_depth 1 {
// ZERO1:        swift.bucket 0 units [3, 2, 1, 0] reduce_scatter bytes 5312
// ZERO1-NOT:    swift.all_gather
// ZERO1:        swift.program backward {
// ZERO1:        swift.compute unit 0
// ZERO1-NEXT:   swift.reduce_scatter bucket 0 on communication

// ZeRO-2: reduce-scatter every micro-batch; checkpointed layers recompute.
// RUN: sed 's/STRATEGY/zero = zero2, offload = none, checkpointing = full, checkpoint_layers = 1/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives | FileCheck %s --check-prefix=ZERO2
// ZERO2:     swift.bucket 0 units [3, 2, 1, 0] reduce_scatter every_micro_batch bytes 5312
// ZERO2-NOT: swift.release
// ZERO2:     swift.program backward {
// ZERO2:       swift.compute unit 2{{$}}
// ZERO2-NEXT:  swift.compute unit 1 recompute
// ZERO2-NEXT:  swift.compute unit 0{{$}}

// ZeRO-3: each step gathers its unit and the next one (prefetch depth 1),
// the tied head gathers the table again, forward keeps the head across the
// turn, backward never gathers the embedding and releases everything.
// RUN: sed 's/STRATEGY/zero = zero3, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives | FileCheck %s --check-prefix=ZERO3
// ZERO3:      swift.program forward {
// ZERO3-NEXT:   swift.all_gather unit 0 ahead 0 on communication
// ZERO3-NEXT:   swift.all_gather unit 1 ahead 1 on communication
// ZERO3-NEXT:   swift.compute unit 0
// ZERO3-NEXT:   swift.release unit 0
// ZERO3-NEXT:   swift.all_gather unit 1 ahead 0 on communication
// ZERO3-NEXT:   swift.all_gather unit 2 ahead 1 on communication
// ZERO3-NEXT:   swift.compute unit 1
// ZERO3-NEXT:   swift.release unit 1
// ZERO3-NEXT:   swift.all_gather unit 2 ahead 0 on communication
// ZERO3-NEXT:   swift.all_gather unit 3 ahead 1 on communication
// ZERO3-NEXT:   swift.all_gather unit 0 ahead 1 on communication
// ZERO3-NEXT:   swift.compute unit 2
// ZERO3-NEXT:   swift.release unit 2
// ZERO3-NEXT:   swift.all_gather unit 3 ahead 0 on communication
// ZERO3-NEXT:   swift.all_gather unit 0 ahead 0 on communication
// ZERO3-NEXT:   swift.compute unit 3
// ZERO3-NEXT: }
// ZERO3-NEXT: swift.program backward {
// ZERO3-NEXT:   swift.all_gather unit 3 ahead 0 on communication
// ZERO3-NEXT:   swift.all_gather unit 0 ahead 0 on communication
// ZERO3-NEXT:   swift.all_gather unit 2 ahead 1 on communication
// ZERO3-NEXT:   swift.compute unit 3
// ZERO3-NEXT:   swift.release unit 3
// ZERO3-NEXT:   swift.release unit 0
// ZERO3-NEXT:   swift.all_gather unit 2 ahead 0 on communication
// ZERO3-NEXT:   swift.all_gather unit 1 ahead 1 on communication
// ZERO3-NEXT:   swift.compute unit 2
// ZERO3-NEXT:   swift.release unit 2
// ZERO3-NEXT:   swift.all_gather unit 1 ahead 0 on communication
// ZERO3-NEXT:   swift.compute unit 1
// ZERO3-NEXT:   swift.release unit 1
// ZERO3-NEXT:   swift.compute unit 0
// ZERO3-NEXT:   swift.reduce_scatter bucket 0 on communication
// ZERO3-NEXT: }

// The prefetch-depth option gathers two units ahead.
// RUN: sed 's/STRATEGY/zero = zero3, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units --swift-materialize-collectives=prefetch-depth=2 \
// RUN:   | FileCheck %s --check-prefix=DEPTH2
// DEPTH2:      prefetch_depth 2
// DEPTH2:      swift.program forward {
// DEPTH2-NEXT:   swift.all_gather unit 0 ahead 0 on communication
// DEPTH2-NEXT:   swift.all_gather unit 1 ahead 1 on communication
// DEPTH2-NEXT:   swift.all_gather unit 2 ahead 2 on communication
// DEPTH2-NEXT:   swift.compute unit 0

// Without units there is nothing to place collectives on.
// RUN: sed 's/STRATEGY/zero = zero3, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | not swift-opt --swift-materialize-collectives 2>&1 | FileCheck %s --check-prefix=NOUNITS
// NOUNITS: error: 'swift.job' op has no swift.schedule; run swift-materialize-units before swift-materialize-collectives
