// RUN: swift-opt %s --swift-annotate-model | FileCheck %s
// Proves parameters are counted per repeat, tied weights once, and LoRA
// trainables from the targeted linears only.

// 2 layers x (16 norm + 16x16 q + 8x16 k + 8 k-bias) + 32x16 tied table = 1328.
// LoRA rank 2 on q_proj only: 2 x (16 + 16) x 2 layers = 128.
// CHECK: swift.job @job trains @tiny on @cluster
// CHECK-SAME: counts = #swift.counts<parameters = 1328, trainable_parameters = 128, tokens_per_step = 32>

swift.cluster @cluster nodes 1 x 1
    gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0>
    intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    host_memory 1
swift.model @tiny("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %nw = swift.param "input_layernorm.weight" : tensor<16xbf16>
    %n = swift.rmsnorm %in, %nw {epsilon = 1.0e-05 : f64} : (tensor<?x8x16xbf16>, tensor<16xbf16>) -> tensor<?x8x16xbf16>
    %wq = swift.param "self_attn.q_proj.weight" : tensor<16x16xbf16>
    %q = swift.linear %n, %wq : (tensor<?x8x16xbf16>, tensor<16x16xbf16>) -> tensor<?x8x16xbf16>
    %wk = swift.param "self_attn.k_proj.weight" : tensor<8x16xbf16>
    %bk = swift.param "self_attn.k_proj.bias" : tensor<8xbf16>
    %k = swift.linear %n, %wk, %bk : (tensor<?x8x16xbf16>, tensor<8x16xbf16>, tensor<8xbf16>) -> tensor<?x8x8xbf16>
    %a = swift.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal} : (tensor<?x8x16xbf16>, tensor<?x8x8xbf16>, tensor<?x8x8xbf16>) -> tensor<?x8x16xbf16>
    %o = swift.add %in, %a : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %logits = swift.linear %h, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
swift.job @job trains @tiny on @cluster {
  sequence_length = 8 : i64, global_batch_size = 4 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  method = #swift.method<lora>, lora = #swift.lora<rank = 2, alpha = 4.0, dropout = 0.0, targets = ["q_proj"]>,
  backend = #swift.backend<hf>, strategy = #swift.strategy<>}
