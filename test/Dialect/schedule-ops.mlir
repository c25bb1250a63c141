// RUN: swift-opt %s -split-input-file | swift-opt -split-input-file | FileCheck %s
// RUN: swift-opt %s -split-input-file --mlir-print-op-generic | swift-opt -split-input-file | FileCheck %s

// A ZeRO-3 schedule with parameter offload and a checkpointed layer
// round-trips with every step, stream and copy intact.
// CHECK-LABEL: swift.schedule @zero3 for @job bucket_bytes 26214400 prefetch_depth 1 {
// CHECK-NEXT:    swift.unit 0 embedding params 512
// CHECK-NEXT:    swift.unit 1 decoder layer 0 params 1024 checkpoint <full>
// CHECK-NEXT:    swift.unit 2 head params 16 reads_embedding
// CHECK-NEXT:    swift.bucket 0 units [2, 1, 0] reduce_scatter every_micro_batch bytes 6208
// CHECK-NEXT:    swift.program forward {
// CHECK-NEXT:      swift.copy params host_to_device unit 0
// CHECK-NEXT:      swift.all_gather unit 0 ahead 0 on communication
// CHECK-NEXT:      swift.copy params host_to_device unit 1
// CHECK-NEXT:      swift.all_gather unit 1 ahead 1 on communication
// CHECK-NEXT:      swift.compute unit 0
// CHECK-NEXT:      swift.release unit 0
// CHECK:         swift.program backward {
// CHECK:           swift.compute unit 1 recompute
// CHECK:           swift.reduce_scatter bucket 0 on communication
// CHECK-NEXT:      swift.copy grads device_to_host bucket 0
// CHECK:         swift.optimizer_step on cpu
// CHECK-NEXT:  }
swift.schedule @zero3 for @job bucket_bytes 26214400 prefetch_depth 1 {
  swift.unit 0 embedding params 512
  swift.unit 1 decoder layer 0 params 1024 checkpoint <full>
  swift.unit 2 head params 16 reads_embedding
  swift.bucket 0 units [2, 1, 0] reduce_scatter every_micro_batch bytes 6208
  swift.program forward {
    swift.copy params host_to_device unit 0
    swift.all_gather unit 0 ahead 0 on communication
    swift.copy params host_to_device unit 1
    swift.all_gather unit 1 ahead 1 on communication
    swift.compute unit 0
    swift.release unit 0
    swift.copy params host_to_device unit 2
    swift.all_gather unit 2 ahead 1 on communication
    swift.compute unit 1
    swift.release unit 1
    swift.compute unit 2
  }
  swift.program backward {
    swift.copy params host_to_device unit 1
    swift.all_gather unit 1 ahead 1 on communication
    swift.compute unit 2
    swift.release unit 2
    swift.compute unit 1 recompute
    swift.release unit 1
    swift.compute unit 0
    swift.reduce_scatter bucket 0 on communication
    swift.copy grads device_to_host bucket 0
  }
  swift.optimizer_step on cpu
}

// -----

// ZeRO-0/1 vocabulary: all-reduce buckets on the last micro-batch, the
// optimizer on the accelerator gathering params, the host copy-back.
// CHECK-LABEL: swift.schedule @zero1 for @job {
// CHECK:         swift.bucket 0 units [2] all_reduce bytes 64
// CHECK:         swift.all_reduce bucket 0 on communication
// CHECK:         swift.optimizer_step on accelerator gather_params
// CHECK-NEXT:    swift.copy params host_to_device
swift.schedule @zero1 for @job {
  swift.unit 0 embedding params 512
  swift.unit 1 decoder layer 0 params 1024
  swift.unit 2 head params 16
  swift.bucket 0 units [2] all_reduce bytes 64
  swift.bucket 1 units [1, 0] all_reduce bytes 6144
  swift.program forward {
    swift.compute unit 0
    swift.compute unit 1
    swift.compute unit 2
  }
  swift.program backward {
    swift.compute unit 2
    swift.all_reduce bucket 0 on communication
    swift.compute unit 1
    swift.compute unit 0
    swift.all_reduce bucket 1 on communication
  }
  swift.optimizer_step on accelerator gather_params
  swift.copy params host_to_device
}

// -----

// A schedule under construction (units only) is valid IR.
// CHECK-LABEL: swift.schedule @partial for @job {
// CHECK-NEXT:    swift.unit 0 embedding params 8
swift.schedule @partial for @job {
  swift.unit 0 embedding params 8
  swift.unit 1 head params 8
}
