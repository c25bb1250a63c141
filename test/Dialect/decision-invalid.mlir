// RUN: swift-opt %s -split-input-file -verify-diagnostics
// The verifiers of #swift.decision, #swift.candidate, #swift.estimate and
// the job's gradient accumulation.

// expected-error @+1 {{decision: fits needs the chosen strategy}}
func.func private @f() attributes {d = #swift.decision<fits = true,
  usable_bytes = 1, memory_margin = 0.1, evaluated = 1, considered = 1,
  alternatives = []>}

// -----

// expected-error @+1 {{decision: closest needs shortfall_bytes}}
func.func private @f() attributes {d = #swift.decision<fits = false,
  usable_bytes = 1, memory_margin = 0.1, evaluated = 1, considered = 1,
  closest = #swift.candidate<zero = 0, offload = none, checkpointing = none,
    checkpoint_layers = -1, micro_batch_size = 1, gradient_accumulation = 1,
    fits = false, peak_bytes = 2, step_seconds = 1.0, tokens_per_second = 1.0,
    verdict = "x">, alternatives = []>}

// -----

// expected-error @+1 {{decision: alternatives must be #swift.candidate, not 7 : i64}}
func.func private @f() attributes {d = #swift.decision<fits = false,
  usable_bytes = 1, memory_margin = 0.1, evaluated = 1, considered = 1,
  alternatives = [7]>}

// -----

// expected-error @+1 {{candidate: zero must be 0..3, not 4}}
func.func private @f() attributes {c = #swift.candidate<zero = 4, offload = none,
  checkpointing = none, checkpoint_layers = -1, micro_batch_size = 1,
  gradient_accumulation = 1, fits = true, peak_bytes = 1, step_seconds = 1.0,
  tokens_per_second = 1.0, verdict = "chosen">}

// -----

// expected-error @+2 {{expected offload (none, optimizer, optimizer_params)}}
// expected-error @+1 {{failed to parse Swift_CandidateAttr parameter 'offload'}}
func.func private @f() attributes {c = #swift.candidate<zero = 1, offload = cpu,
  checkpointing = none, checkpoint_layers = -1, micro_batch_size = 1,
  gradient_accumulation = 1, fits = true, peak_bytes = 1, step_seconds = 1.0,
  tokens_per_second = 1.0, verdict = "chosen">}

// -----

// expected-error @+1 {{estimate: step_seconds must be a finite number >= 0, not -1.0}}
func.func private @f() attributes {e = #swift.estimate<peak_bytes = 1,
  capacity_bytes = 1, peak_phase = "forward", peak_layer = -1, peak_op = "x",
  breakdown = {}, forward_peak_bytes = 1, backward_peak_bytes = 1,
  optimizer_peak_bytes = 1, layer_activation_bytes = 1,
  checkpointed_layer_bytes = 1, head_activation_bytes = 1, host_bytes = 0,
  step_seconds = -1.0, compute_seconds = 1.0, recompute_seconds = 0.0,
  communication_seconds = 0.0, exposed_communication_seconds = 0.0,
  offload_seconds = 0.0, optimizer_seconds = 0.0, tokens_per_second = 1.0,
  mfu = 0.1>}

// -----

// expected-error @+1 {{estimate: breakdown.parameters must be an integer byte count}}
func.func private @f() attributes {e = #swift.estimate<peak_bytes = 1,
  capacity_bytes = 1, peak_phase = "forward", peak_layer = -1, peak_op = "x",
  breakdown = {parameters = "many"}, forward_peak_bytes = 1,
  backward_peak_bytes = 1, optimizer_peak_bytes = 1, layer_activation_bytes = 1,
  checkpointed_layer_bytes = 1, head_activation_bytes = 1, host_bytes = 0,
  step_seconds = 1.0, compute_seconds = 1.0, recompute_seconds = 0.0,
  communication_seconds = 0.0, exposed_communication_seconds = 0.0,
  offload_seconds = 0.0, optimizer_seconds = 0.0, tokens_per_second = 1.0,
  mfu = 0.1>}

// -----

swift.cluster @c nodes 1 x 2 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %x, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{micro_batch_size (2) x gradient_accumulation (3) x 2 GPUs != global_batch_size (8)}}
swift.job @job trains @m on @c {
  sequence_length = 8 : i64, global_batch_size = 8 : i64, micro_batch_size = 2 : i64,
  gradient_accumulation = 3 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  method = #swift.method<full>, backend = #swift.backend<swift_run>,
  strategy = #swift.strategy<>}

// -----

// The timeline's largest point is the peak.
// expected-error @+1 {{estimate: the timeline's largest point (900 bytes) is not the peak (1000)}}
func.func private @f() attributes {e = #swift.estimate<peak_bytes = 1000,
  capacity_bytes = 2000, peak_phase = "backward", peak_layer = 0,
  peak_op = "decoder layer", breakdown = {parameters = 1000 : i64},
  forward_peak_bytes = 900, backward_peak_bytes = 1000, optimizer_peak_bytes = 800,
  layer_activation_bytes = 0, checkpointed_layer_bytes = 0, head_activation_bytes = 0,
  host_bytes = 0, step_seconds = 1.0, compute_seconds = 1.0, recompute_seconds = 0.0,
  communication_seconds = 0.0, exposed_communication_seconds = 0.0,
  offload_seconds = 0.0, optimizer_seconds = 0.0, tokens_per_second = 1.0, mfu = 0.5,
  timeline = [#swift.memory_point<phase = "forward", layer = 0, op = "decoder layer", bytes = 900>]>}

// -----

// expected-error @+1 {{memory_point: phase must be forward, backward or optimizer, not "sideways"}}
func.func private @f() attributes {p = #swift.memory_point<phase = "sideways", layer = 0, op = "x", bytes = 1>}

// -----

// expected-error @+1 {{candidate: breakdown.parameters must be a byte count >= 0}}
func.func private @f() attributes {c = #swift.candidate<zero = 1, offload = none,
  checkpointing = none, checkpoint_layers = -1, micro_batch_size = 1,
  gradient_accumulation = 1, fits = true, peak_bytes = 1, step_seconds = 1.0,
  tokens_per_second = 1.0, verdict = "chosen", breakdown = {parameters = -1 : i64}>}
