// RUN: swift-opt %s -split-input-file --verify-roundtrip | FileCheck %s
// The layout over the GPUs is typed: #swift.strategy's tp, pp, cp,
// dp_shard, pp_schedule and virtual_stages (absent: open, or trivial once
// decided), and #swift.mesh, a complete layout, on each #swift.candidate.
// Each prints and parses back to the same IR; trivial values of #swift.mesh
// (the 1f1b schedule, one chunk per rank, no sequence parallelism, ring
// context parallelism) are not printed.

// 16 GPUs: tp 2 x pp 2 x cp 2 GPUs per data-parallel rank, 2 such ranks,
// sharded in one group; 2 layers over 2 ranks x 2 chunks; micro-batch 2 x
// accumulation 2 x 2 data-parallel ranks = the global batch of 8.
// CHECK-LABEL: swift.job @job trains @m on @c
// CHECK-SAME: chosen = <zero = 3, {{.*}} verdict = "chosen", mesh = <dp_replicate = 1, dp_shard = 2, cp = 2, pp = 2, tp = 2, pp_schedule = interleaved, virtual_stages = 2, sequence_parallel = true, cp_kind = all_gather, stage_layers = [0, 1, 1, 0]>>
// CHECK-SAME: alternatives = [#swift.candidate<zero = 3, {{.*}} verdict = "5% slower", mesh = <dp_replicate = 2, dp_shard = 1, cp = 1, pp = 2, tp = 4, stage_layers = [1, 1]>>, #swift.candidate<zero = 1, {{.*}} verdict = "9% slower">]
// CHECK-SAME: strategy = #swift.strategy<zero = zero3, tp = 2, pp = 2, cp = 2, dp_shard = 2, pp_schedule = interleaved, virtual_stages = 2>
swift.cluster @c nodes 2 x 8 gpu #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4, hbm_gbps = 3350.0, host_link_gbps = 64.0, nvlink_gbps = 450.0> intra_node #swift.link<name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0> inter_node #swift.link<name = "ib-400g", bandwidth_gbps = 50.0, latency_us = 15.0> host_memory 1
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %nw = swift.param "input_layernorm.weight" : tensor<16xbf16>
    %n = swift.rmsnorm %in, %nw {epsilon = 1.0e-05 : f64} : (tensor<?x8x16xbf16>, tensor<16xbf16>) -> tensor<?x8x16xbf16>
    %o = swift.add %in, %n : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %logits = swift.linear %h, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
swift.job @job trains @m on @c {
  sequence_length = 8 : i64, global_batch_size = 8 : i64, micro_batch_size = 2 : i64,
  gradient_accumulation = 2 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  method = #swift.method<full>, backend = #swift.backend<swift_run>,
  strategy = #swift.strategy<zero = zero3, tp = 2, pp = 2, cp = 2, dp_shard = 2,
    pp_schedule = interleaved, virtual_stages = 2>,
  decision = #swift.decision<fits = true, usable_bytes = 1, memory_margin = 0.1,
    evaluated = 3, considered = 3,
    chosen = #swift.candidate<zero = 3, offload = none, checkpointing = full,
      checkpoint_layers = -1, micro_batch_size = 2, gradient_accumulation = 2,
      fits = true, peak_bytes = 1, step_seconds = 0.5, tokens_per_second = 1.0,
      verdict = "chosen",
      mesh = #swift.mesh<dp_replicate = 1, dp_shard = 2, cp = 2, pp = 2, tp = 2,
        pp_schedule = interleaved, virtual_stages = 2, sequence_parallel = true,
        cp_kind = all_gather, stage_layers = [0, 1, 1, 0]>>,
    alternatives = [
      #swift.candidate<zero = 3, offload = none, checkpointing = full,
        checkpoint_layers = -1, micro_batch_size = 1, gradient_accumulation = 2,
        fits = true, peak_bytes = 1, step_seconds = 0.6, tokens_per_second = 1.0,
        verdict = "5% slower",
        mesh = #swift.mesh<dp_replicate = 2, dp_shard = 1, cp = 1, pp = 2, tp = 4,
          pp_schedule = one_f_one_b, virtual_stages = 1, sequence_parallel = false,
          cp_kind = ring, stage_layers = [1, 1]>>,
      #swift.candidate<zero = 1, offload = none, checkpointing = full,
        checkpoint_layers = -1, micro_batch_size = 1, gradient_accumulation = 1,
        fits = true, peak_bytes = 1, step_seconds = 0.7, tokens_per_second = 1.0,
        verdict = "9% slower">]>}

// -----

// The job's 1f1b is the keyword one_f_one_b (an MLIR keyword cannot start
// with a digit); a strategy may fix some layout keys and leave the rest open.
// CHECK-LABEL: func.func private @one_f_one_b
// CHECK-SAME: s = #swift.strategy<pp = 4, pp_schedule = one_f_one_b>
// CHECK-SAME: t = #swift.strategy<zero = zero2, dp_shard = 4>
// CHECK-SAME: u = #swift.strategy<pp_schedule = interleaved, virtual_stages = 3>
func.func private @one_f_one_b() attributes {
  s = #swift.strategy<pp_schedule = one_f_one_b, pp = 4>,
  t = #swift.strategy<zero = zero2, dp_shard = 4>,
  u = #swift.strategy<virtual_stages = 3, pp_schedule = interleaved>}

// -----

// A mesh without a pipeline prints its five degrees alone.
// CHECK-LABEL: func.func private @data_parallel
// CHECK-SAME: m = #swift.mesh<dp_replicate = 4, dp_shard = 8, cp = 1, pp = 1, tp = 1>
func.func private @data_parallel() attributes {
  m = #swift.mesh<dp_replicate = 4, dp_shard = 8, cp = 1, pp = 1, tp = 1>}
