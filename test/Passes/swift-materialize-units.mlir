// Full checkpointing of the first layer only: layer 0 checkpointed, layer 1
// not; a tied head owns just its norm and reads the embedding.
// RUN: sed 's/STRATEGY/zero = zero3, offload = none, checkpointing = full, checkpoint_layers = 1/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units | FileCheck %s --check-prefix=FIRST1
// FIRST1:      swift.job @job
// FIRST1-NEXT: swift.schedule @job_schedule for @job {
// FIRST1-NEXT:   swift.unit 0 embedding params 512
// FIRST1-NEXT:   swift.unit 1 decoder layer 0 params 400 checkpoint <full>
// FIRST1-NEXT:   swift.unit 2 decoder layer 1 params 400
// FIRST1-NEXT:   swift.unit 3 head params 16 reads_embedding
// FIRST1-NEXT: }

// Selective checkpointing without checkpoint_layers applies to every layer.
// RUN: sed 's/STRATEGY/zero = zero0, offload = none, checkpointing = selective/; s/GPUS/1/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units | FileCheck %s --check-prefix=SELECTIVE
// SELECTIVE: swift.unit 1 decoder layer 0 params 400 checkpoint <selective>
// SELECTIVE: swift.unit 2 decoder layer 1 params 400 checkpoint <selective>

// No checkpointing: no unit carries a mode.
// RUN: sed 's/STRATEGY/zero = zero1, offload = none, checkpointing = none/; s/GPUS/2/' %S/Inputs/schedule-job.mlir \
// RUN:   | swift-opt --swift-materialize-units | FileCheck %s --check-prefix=NONE
// NONE-NOT: checkpoint <

// RUN: swift-opt %s -split-input-file -verify-diagnostics --swift-materialize-units | FileCheck %s

// Repeats are unrolled with their own first_layer, and an untied head owns
// its lm_head (16 + 32x16 = 528 parameters).
// CHECK-LABEL: swift.schedule @job_schedule for @job
// CHECK-NEXT:    swift.unit 0 embedding params 512
// CHECK-NEXT:    swift.unit 1 decoder layer 0 params 16 checkpoint <full>
// CHECK-NEXT:    swift.unit 2 decoder layer 1 params 16 checkpoint <full>
// CHECK-NEXT:    swift.unit 3 decoder layer 2 params 16
// CHECK-NEXT:    swift.unit 4 head params 528{{$}}
swift.cluster @cluster nodes 1 x 1
    gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0>
    intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    host_memory 68719476736
swift.model @untied("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h0 = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %nw = swift.param "input_layernorm.weight" : tensor<16xbf16>
    %n = swift.rmsnorm %in, %nw {epsilon = 1.0e-05 : f64} : (tensor<?x8x16xbf16>, tensor<16xbf16>) -> tensor<?x8x16xbf16>
    swift.yield %n : tensor<?x8x16xbf16>
  }
  %h = swift.repeat 1 layers from 2 (%h0) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %nw = swift.param "input_layernorm.weight" : tensor<16xbf16>
    %n = swift.rmsnorm %in, %nw {epsilon = 1.0e-05 : f64} : (tensor<?x8x16xbf16>, tensor<16xbf16>) -> tensor<?x8x16xbf16>
    swift.yield %n : tensor<?x8x16xbf16>
  }
  %fw = swift.param "model.norm.weight" : tensor<16xbf16>
  %f = swift.rmsnorm %h, %fw {epsilon = 1.0e-05 : f64} : (tensor<?x8x16xbf16>, tensor<16xbf16>) -> tensor<?x8x16xbf16>
  %lm = swift.param "lm_head.weight" : tensor<32x16xbf16>
  %logits = swift.linear %f, %lm : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
swift.job @job trains @untied on @cluster {
  sequence_length = 8 : i64, global_batch_size = 8 : i64, micro_batch_size = 1 : i64,
  gradient_accumulation = 8 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  method = #swift.method<full>, backend = #swift.backend<swift_run>,
  strategy = #swift.strategy<zero = zero2, offload = none, checkpointing = full, checkpoint_layers = 2>}

// -----

// An open strategy decision is reported, not guessed.
swift.cluster @cluster nodes 1 x 1
    gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0>
    intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    host_memory 68719476736
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %x, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{strategy is not complete (open: strategy.offload, training.micro_batch_size, training.gradient_accumulation); swift-materialize-units materializes a fixed strategy only}}
swift.job @job trains @m on @cluster {
  sequence_length = 8 : i64, global_batch_size = 8 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  method = #swift.method<full>, backend = #swift.backend<swift_run>,
  strategy = #swift.strategy<zero = zero2, checkpointing = none>}

// -----

// A model without decoder layers has nothing to schedule.
swift.cluster @cluster nodes 1 x 1
    gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0>
    intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    host_memory 68719476736
// expected-error @+1 {{has no swift.repeat of decoder layers to schedule}}
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %x, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
swift.job @job trains @m on @cluster {
  sequence_length = 8 : i64, global_batch_size = 8 : i64, micro_batch_size = 1 : i64,
  gradient_accumulation = 8 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  method = #swift.method<full>, backend = #swift.backend<swift_run>,
  strategy = #swift.strategy<zero = zero2, offload = none, checkpointing = none>}
