// RUN: swift-opt %s -split-input-file -verify-diagnostics

// Grouped-query attention needs kv heads that divide the query heads.
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>, %q: tensor<?x8x32xbf16>, %kv: tensor<?x8x24xbf16>):
  // expected-error @+1 {{num_kv_heads (3) must divide num_heads (4)}}
  %a = swift.attention %q, %kv, %kv {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 8 : i64, causal} : (tensor<?x8x32xbf16>, tensor<?x8x24xbf16>, tensor<?x8x24xbf16>) -> tensor<?x8x32xbf16>
  %l = swift.cross_entropy %a, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %l : tensor<f32>
}

// -----

// Query width must be heads x head_dim (heads that do not divide the hidden size).
func.func @f(%q: tensor<?x8x30xbf16>, %kv: tensor<?x8x16xbf16>) {
  // expected-error @+1 {{query width 30 is not num_heads (4) x head_dim (8)}}
  %a = swift.attention %q, %kv, %kv {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, causal} : (tensor<?x8x30xbf16>, tensor<?x8x16xbf16>, tensor<?x8x16xbf16>) -> tensor<?x8x30xbf16>
  return
}

// -----

// Key/value width must be kv heads x head_dim.
func.func @f(%q: tensor<?x8x32xbf16>, %kv: tensor<?x8x8xbf16>) {
  // expected-error @+1 {{key/value width must be num_kv_heads (2) x head_dim (8) = 16}}
  %a = swift.attention %q, %kv, %kv {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64} : (tensor<?x8x32xbf16>, tensor<?x8x8xbf16>, tensor<?x8x8xbf16>) -> tensor<?x8x32xbf16>
  return
}

// -----

// A linear layer's weight is [out, in].
func.func @f(%x: tensor<?x8x16xbf16>, %w: tensor<32x8xbf16>) {
  // expected-error @+1 {{input width 16 does not match weight}}
  %y = swift.linear %x, %w : (tensor<?x8x16xbf16>, tensor<32x8xbf16>) -> tensor<?x8x32xbf16>
  return
}

// -----

// Bias length must equal the out features.
func.func @f(%x: tensor<?x8x16xbf16>, %w: tensor<32x16xbf16>, %b: tensor<16xbf16>) {
  // expected-error @+1 {{bias 'tensor<16xbf16>' does not match out features 32}}
  %y = swift.linear %x, %w, %b : (tensor<?x8x16xbf16>, tensor<32x16xbf16>, tensor<16xbf16>) -> tensor<?x8x32xbf16>
  return
}

// -----

// RMSNorm weight must match or divide the normalized width.
func.func @f(%x: tensor<?x8x16xbf16>, %w: tensor<6xbf16>) {
  // expected-error @+1 {{weight of 6 elements neither matches nor divides the width 16}}
  %y = swift.rmsnorm %x, %w {epsilon = 1.0e-05 : f64} : (tensor<?x8x16xbf16>, tensor<6xbf16>) -> tensor<?x8x16xbf16>
  return
}

// -----

// RoPE rotates pairs: head_dim must be even.
func.func @f(%x: tensor<?x8x12xbf16>) {
  // expected-error @+1 {{head_dim must be even, got 3}}
  %y = swift.rope %x {num_heads = 4 : i64, head_dim = 3 : i64, theta = 1.0e+04 : f64} : tensor<?x8x12xbf16>
  return
}

// -----

// Embedding output width is the table's.
func.func @f(%ids: tensor<?x8xi64>, %t: tensor<32x16xbf16>) {
  // expected-error @+1 {{does not match table}}
  %x = swift.embedding %ids, %t : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x8xbf16>
  return
}

// -----

// A decoder layer maps the carried activation to itself.
func.func @f(%x: tensor<?x8x16xbf16>, %y: tensor<?x8x8xbf16>) {
  // expected-error @+1 {{each layer must map}}
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    swift.yield %y : tensor<?x8x8xbf16>
  }
  return
}

// -----

// A model body takes (input_ids, labels).
// expected-error @+1 {{body must take (input_ids, labels)}}
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %x: tensor<?x8x32xbf16>):
  %l = swift.cross_entropy %x, %ids : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %l : tensor<f32>
}

// -----

// Cluster sizes must be positive.
// expected-error @+1 {{attribute 'nodes' failed to satisfy constraint}}
swift.cluster @c nodes 0 x 8
    gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0>
    intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    inter_node #swift.link<name = "ib-100g", bandwidth_gbps = 12.5, latency_us = 15.0>
    host_memory 1

// -----

// GPU numbers must be physical.
// expected-error @+1 {{gpu 'x': memory_bytes must be positive}}
swift.cluster @c nodes 1 x 8 gpu #swift.gpu<name = "x", memory_bytes = 0, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1

// -----

// An FP8 peak is 0 (no FP8 tensor cores) or positive.
// expected-error @+1 {{gpu 'x': fp8_tflops must be >= 0 (0: no FP8 tensor cores)}}
swift.cluster @c nodes 1 x 8 gpu #swift.gpu<name = "x", memory_bytes = 1, bf16_tflops = 125.0, fp8_tflops = -1.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1

// -----

// checkpoint_layers is meaningless without checkpointing.
// expected-error @+1 {{checkpoint_layers needs checkpointing selective or full, not none}}
func.func @f() attributes {s = #swift.strategy<checkpointing = none, checkpoint_layers = 2>} {
  return
}

// -----

// LoRA dropout is a probability below 1.
// expected-error @+1 {{lora dropout must be in [0, 1), got 1}}
func.func @f() attributes {l = #swift.lora<rank = 4, alpha = 8.0, dropout = 1.0, targets = ["q_proj"]>} {
  return
}

// -----

// LoRA targets are the decoder's linears (swift::plan::loraTargetNames()).
// expected-error @+1 {{lora target 'lm_head' is not all-linear or a decoder linear}}
func.func @f() attributes {l = #swift.lora<rank = 4, alpha = 8.0, dropout = 0.0, targets = ["lm_head"]>} {
  return
}

// -----

// LoRA methods need LoRA settings; a job refers to a model and a cluster.
swift.cluster @c nodes 1 x 1 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1
// expected-error @+1 {{method lora needs a 'lora' attribute}}
swift.job @job trains @c on @c {sequence_length = 8 : i64, global_batch_size = 4 : i64, precision = #swift.precision<bf16>, optimizer = #swift.optimizer<adamw>, method = #swift.method<lora>, backend = #swift.backend<hf>, strategy = #swift.strategy<>}

// -----

swift.cluster @c nodes 1 x 1 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1
// expected-error @+1 {{'c' is not a swift.model}}
swift.job @job trains @c on @c {sequence_length = 8 : i64, global_batch_size = 4 : i64, precision = #swift.precision<bf16>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<hf>, strategy = #swift.strategy<>}

// -----

// The micro-batch cannot exceed the global batch.
swift.cluster @c nodes 1 x 1 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1
// expected-error @+1 {{micro_batch_size (8) exceeds global_batch_size (4)}}
swift.job @job trains @c on @c {sequence_length = 8 : i64, global_batch_size = 4 : i64, micro_batch_size = 8 : i64, precision = #swift.precision<bf16>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<hf>, strategy = #swift.strategy<>}

// -----

// The optimizer's settings are range-checked like the job file's.
// expected-error @+1 {{adamw: beta1 and beta2 must be in [0, 1)}}
#bad_betas = #swift.adamw<lr = 1.0e-4, beta1 = 0.9, beta2 = 1.0, eps = 1.0e-8, weight_decay = 0.0, warmup_steps = 0, decay = constant, min_lr_ratio = 0.0, seed = 0>
func.func private @uses() attributes {a = #bad_betas}

// -----

// expected-error @+1 {{adamw: min_lr_ratio needs decay linear or cosine}}
#bad_floor = #swift.adamw<lr = 1.0e-4, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-8, weight_decay = 0.0, warmup_steps = 0, decay = constant, min_lr_ratio = 0.5, seed = 0>
func.func private @uses() attributes {a = #bad_floor}

// -----

// The job reader's bounds hold for a written or edited job op: tokens per
// step stay in int64 (2^63 - 1 positions made them -128).
swift.cluster @c nodes 1 x 1 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %x, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{sequence_length (9223372036854775807) exceeds 4194304}}
swift.job @job trains @m on @c {sequence_length = 9223372036854775807 : i64, global_batch_size = 4 : i64, precision = #swift.precision<bf16>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<hf>, strategy = #swift.strategy<>}

// -----

swift.cluster @c nodes 1 x 1 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %x, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{global_batch_size (1099511627776) exceeds 16777216}}
swift.job @job trains @m on @c {sequence_length = 8 : i64, global_batch_size = 1099511627776 : i64, precision = #swift.precision<bf16>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<hf>, strategy = #swift.strategy<>}

// -----

// The job's sequence length is the model's sequence dimension.
swift.cluster @c nodes 1 x 1 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %x, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{sequence_length (16) is not the sequence dimension of the input_ids of 'm' (8)}}
swift.job @job trains @m on @c {sequence_length = 16 : i64, global_batch_size = 4 : i64, precision = #swift.precision<bf16>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<hf>, strategy = #swift.strategy<>}
