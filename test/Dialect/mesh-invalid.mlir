// RUN: swift-opt %s -split-input-file -verify-diagnostics
// The layout's verifiers: #swift.strategy's and #swift.mesh's own rules,
// and, on swift.job, the layout against the cluster's GPUs and the model's
// layers.

// -----

// Degrees are at least 1.
// expected-error @+1 {{tp must be >= 1, not 0}}
func.func private @f() attributes {a = #swift.strategy<tp = 0>}

// -----

// A pipeline schedule needs a pipeline.
// expected-error @+1 {{pp_schedule interleaved needs a pipeline (pp > 1), but pp is 1}}
func.func private @f() attributes {a = #swift.strategy<pp = 1, pp_schedule = interleaved>}

// -----

// So do model chunks per rank.
// expected-error @+1 {{virtual_stages 2 needs a pipeline (pp > 1), but pp is 1}}
func.func private @f() attributes {a = #swift.strategy<pp = 1, virtual_stages = 2>}

// -----

// More than one chunk per rank is the interleaved schedule.
// expected-error @+1 {{virtual_stages 2 needs pp_schedule interleaved, not one_f_one_b}}
func.func private @f() attributes {a = #swift.strategy<pp = 4, pp_schedule = one_f_one_b, virtual_stages = 2>}

// -----

// Interleaving needs at least two chunks per rank.
// expected-error @+1 {{pp_schedule interleaved needs virtual_stages >= 2 (model chunks per pipeline rank), not 1}}
func.func private @f() attributes {a = #swift.strategy<pp = 4, pp_schedule = interleaved, virtual_stages = 1>}

// -----

// A mesh's degrees are at least 1.
// expected-error @+1 {{mesh: dp_shard must be >= 1, not 0}}
func.func private @f() attributes {a = #swift.mesh<dp_replicate = 1, dp_shard = 0, cp = 1, pp = 1, tp = 1>}

// -----

// Interleaving without a pipeline.
// expected-error @+1 {{mesh: pp_schedule interleaved needs a pipeline (pp > 1), but pp is 1}}
func.func private @f() attributes {a = #swift.mesh<dp_replicate = 1, dp_shard = 8, cp = 1, pp = 1, tp = 1, pp_schedule = interleaved, virtual_stages = 2>}

// -----

// Sequence parallelism splits tokens over tensor-parallel ranks.
// expected-error @+1 {{mesh: sequence_parallel needs tp > 1}}
func.func private @f() attributes {a = #swift.mesh<dp_replicate = 1, dp_shard = 8, cp = 1, pp = 1, tp = 1, sequence_parallel = true>}

// -----

// How context-parallel ranks exchange K/V needs context parallelism.
// expected-error @+1 {{mesh: cp_kind all_to_all needs cp > 1}}
func.func private @f() attributes {a = #swift.mesh<dp_replicate = 1, dp_shard = 8, cp = 1, pp = 1, tp = 1, cp_kind = all_to_all>}

// -----

// One entry per chunk: pp x virtual_stages.
// expected-error @+1 {{mesh: stage_layers has 3 entries, not pp x virtual_stages = 2 x 2}}
func.func private @f() attributes {a = #swift.mesh<dp_replicate = 1, dp_shard = 1, cp = 1, pp = 2, tp = 1, pp_schedule = interleaved, virtual_stages = 2, stage_layers = [1, 1, 0]>}

// -----

// Layer counts are counts.
// expected-error @+1 {{mesh: stage_layers must be >= 0, not -1}}
func.func private @f() attributes {a = #swift.mesh<dp_replicate = 1, dp_shard = 1, cp = 1, pp = 2, tp = 1, stage_layers = [3, -1]>}

// -----

// The job's degrees divide its cluster's GPUs.
swift.cluster @c nodes 1 x 8 gpu #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4, hbm_gbps = 3350.0, host_link_gbps = 64.0, nvlink_gbps = 450.0> intra_node #swift.link<name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0> inter_node #swift.link<name = "ib-400g", bandwidth_gbps = 50.0, latency_us = 15.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %o = swift.add %in, %in : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %logits = swift.linear %h, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{strategy tp 2 x pp 3 does not divide the cluster's 8 GPUs}}
swift.job @job trains @m on @c {sequence_length = 8 : i64, global_batch_size = 8 : i64, precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<swift_run>, strategy = #swift.strategy<tp = 2, pp = 3>}

// -----

// dp_shard divides the data-parallel ranks left by tp x pp x cp.
swift.cluster @c nodes 1 x 8 gpu #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4, hbm_gbps = 3350.0, host_link_gbps = 64.0, nvlink_gbps = 450.0> intra_node #swift.link<name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0> inter_node #swift.link<name = "ib-400g", bandwidth_gbps = 50.0, latency_us = 15.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %o = swift.add %in, %in : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %logits = swift.linear %h, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{strategy dp_shard 4 does not divide the 2 data-parallel ranks (8 GPUs / tp 2 x cp 2)}}
swift.job @job trains @m on @c {sequence_length = 8 : i64, global_batch_size = 8 : i64, precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<swift_run>, strategy = #swift.strategy<tp = 2, cp = 2, dp_shard = 4>}

// -----

// Each data-parallel rank takes its own micro-batches: 8 = 1 x 2 x 4, not 1 x 1 x 4.
swift.cluster @c nodes 1 x 8 gpu #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4, hbm_gbps = 3350.0, host_link_gbps = 64.0, nvlink_gbps = 450.0> intra_node #swift.link<name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0> inter_node #swift.link<name = "ib-400g", bandwidth_gbps = 50.0, latency_us = 15.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %o = swift.add %in, %in : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %logits = swift.linear %h, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{micro_batch_size (1) x gradient_accumulation (1) x 4 data-parallel ranks (8 GPUs / tp 2) != global_batch_size (8)}}
swift.job @job trains @m on @c {sequence_length = 8 : i64, global_batch_size = 8 : i64, micro_batch_size = 1 : i64, gradient_accumulation = 1 : i64, precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<swift_run>, strategy = #swift.strategy<tp = 2>}

// -----

// A candidate's mesh spans the cluster.
swift.cluster @c nodes 1 x 8 gpu #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4, hbm_gbps = 3350.0, host_link_gbps = 64.0, nvlink_gbps = 450.0> intra_node #swift.link<name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0> inter_node #swift.link<name = "ib-400g", bandwidth_gbps = 50.0, latency_us = 15.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %o = swift.add %in, %in : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %logits = swift.linear %h, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{a candidate's mesh spans 4 GPUs (dp_replicate x dp_shard x cp x pp x tp), not the cluster's 8}}
swift.job @job trains @m on @c {sequence_length = 8 : i64, global_batch_size = 8 : i64, decision = #swift.decision<fits = true, usable_bytes = 1, memory_margin = 0.1, evaluated = 1, considered = 1, chosen = #swift.candidate<zero = 3, offload = none, checkpointing = full, checkpoint_layers = -1, micro_batch_size = 1, gradient_accumulation = 1, fits = true, peak_bytes = 1, step_seconds = 0.5, tokens_per_second = 1.0, verdict = "chosen", mesh = #swift.mesh<dp_replicate = 1, dp_shard = 2, cp = 1, pp = 1, tp = 2>>, alternatives = []>, precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<swift_run>, strategy = #swift.strategy<>}

// -----

// Its stages hold the model's layers.
swift.cluster @c nodes 1 x 8 gpu #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4, hbm_gbps = 3350.0, host_link_gbps = 64.0, nvlink_gbps = 450.0> intra_node #swift.link<name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0> inter_node #swift.link<name = "ib-400g", bandwidth_gbps = 50.0, latency_us = 15.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %o = swift.add %in, %in : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %logits = swift.linear %h, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
// expected-error @+1 {{a candidate's mesh puts 3 decoder layers in its stage_layers, not the model's 2}}
swift.job @job trains @m on @c {sequence_length = 8 : i64, global_batch_size = 8 : i64, decision = #swift.decision<fits = true, usable_bytes = 1, memory_margin = 0.1, evaluated = 1, considered = 1, chosen = #swift.candidate<zero = 3, offload = none, checkpointing = full, checkpoint_layers = -1, micro_batch_size = 1, gradient_accumulation = 1, fits = true, peak_bytes = 1, step_seconds = 0.5, tokens_per_second = 1.0, verdict = "chosen", mesh = #swift.mesh<dp_replicate = 1, dp_shard = 4, cp = 1, pp = 2, tp = 1, stage_layers = [2, 1]>>, alternatives = []>, precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>, method = #swift.method<full>, backend = #swift.backend<swift_run>, strategy = #swift.strategy<>}
