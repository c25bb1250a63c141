// RUN: swift-opt %s -split-input-file --verify-roundtrip | FileCheck %s
// What the cost passes record on a job is typed: #swift.decision (the
// search: chosen or closest, runners-up) and #swift.estimate, with the
// gradient accumulation next to the micro-batch. Each prints and parses
// back to the same IR.

// CHECK-LABEL: swift.job @job trains @m on @c
// CHECK-SAME: decision = #swift.decision<fits = true, usable_bytes = 21474836480, memory_margin = 0.1, evaluated = 12, considered = 96,
// CHECK-SAME: chosen = <zero = 2, offload = none, checkpointing = full, checkpoint_layers = -1, micro_batch_size = 2, gradient_accumulation = 2, fits = true, peak_bytes = 1073741824, step_seconds = 0.5, tokens_per_second = 65536.0, verdict = "chosen">,
// CHECK-SAME: alternatives = [#swift.candidate<zero = 3, offload = optimizer_params, checkpointing = selective, checkpoint_layers = 1, {{.*}} verdict = "12% slower">]>
// CHECK-SAME: estimate = #swift.estimate<peak_bytes = 1073741824, capacity_bytes = 25769803776, peak_phase = "backward", peak_layer = 1, peak_op = "attention",
// CHECK-SAME: breakdown = {activations = 536870912 : i64, parameters = 536870912 : i64}
// CHECK-SAME: mfu = 0.42>
// CHECK-SAME: gradient_accumulation = 2 : i64
swift.cluster @c nodes 1 x 2 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %x, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
swift.job @job trains @m on @c {
  sequence_length = 8 : i64, global_batch_size = 8 : i64, micro_batch_size = 2 : i64,
  gradient_accumulation = 2 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  method = #swift.method<full>, backend = #swift.backend<swift_run>,
  strategy = #swift.strategy<zero = zero2, offload = none, checkpointing = full>,
  decision = #swift.decision<fits = true, usable_bytes = 21474836480,
    memory_margin = 0.1, evaluated = 12, considered = 96,
    chosen = #swift.candidate<zero = 2, offload = none, checkpointing = full,
      checkpoint_layers = -1, micro_batch_size = 2, gradient_accumulation = 2,
      fits = true, peak_bytes = 1073741824, step_seconds = 0.5,
      tokens_per_second = 65536.0, verdict = "chosen">,
    alternatives = [#swift.candidate<zero = 3, offload = optimizer_params,
      checkpointing = selective, checkpoint_layers = 1, micro_batch_size = 1,
      gradient_accumulation = 4, fits = true, peak_bytes = 805306368,
      step_seconds = 0.56, tokens_per_second = 58514.3, verdict = "12% slower">]>,
  estimate = #swift.estimate<peak_bytes = 1073741824, capacity_bytes = 25769803776,
    peak_phase = "backward", peak_layer = 1, peak_op = "attention",
    breakdown = {parameters = 536870912 : i64, activations = 536870912 : i64},
    forward_peak_bytes = 1000, backward_peak_bytes = 1073741824,
    optimizer_peak_bytes = 900, layer_activation_bytes = 10,
    checkpointed_layer_bytes = 5, head_activation_bytes = 20, host_bytes = 0,
    step_seconds = 0.5, compute_seconds = 0.45, recompute_seconds = 0.1,
    communication_seconds = 0.05, exposed_communication_seconds = 0.01,
    offload_seconds = 0.0, optimizer_seconds = 0.04,
    tokens_per_second = 65536.0, mfu = 0.42>}

// -----

// CHECK-LABEL: #swift.decision<fits = false
// CHECK-SAME: closest = <zero = 3
// CHECK-SAME: shortfall_bytes = 4096
func.func private @nothing_fits() attributes {d = #swift.decision<fits = false,
  usable_bytes = 1, memory_margin = 0.0, evaluated = 1, considered = 1,
  closest = #swift.candidate<zero = 3, offload = optimizer_params,
    checkpointing = full, checkpoint_layers = -1, micro_batch_size = 1,
    gradient_accumulation = 1, fits = false, peak_bytes = 4097,
    step_seconds = 1.0, tokens_per_second = 1.0, verdict = "over by 4096 B">,
  shortfall_bytes = 4096, alternatives = []>}
