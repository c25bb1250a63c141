// A tiny tied-embedding Llama for the schedule passes. RUN lines substitute
// STRATEGY (the #swift.strategy fields) and GPUS (GPUs of the one node).
// Parameters: embedding 32x16 = 512; each of 2 layers 16 + 16x16 + 8x16 = 400;
// head 16 (its final norm; the lm_head is the tied table).
swift.cluster @cluster nodes 1 x GPUS
    gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0>
    intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0>
    host_memory 68719476736
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
    %k = swift.linear %n, %wk : (tensor<?x8x16xbf16>, tensor<8x16xbf16>) -> tensor<?x8x8xbf16>
    %a = swift.attention %q, %k, %k {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal} : (tensor<?x8x16xbf16>, tensor<?x8x8xbf16>, tensor<?x8x8xbf16>) -> tensor<?x8x16xbf16>
    %o = swift.add %in, %a : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %fw = swift.param "model.norm.weight" : tensor<16xbf16>
  %f = swift.rmsnorm %h, %fw {epsilon = 1.0e-05 : f64} : (tensor<?x8x16xbf16>, tensor<16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %f, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
swift.job @job trains @tiny on @cluster {
  sequence_length = 8 : i64, global_batch_size = GPUS : i64, micro_batch_size = 1 : i64,
  gradient_accumulation = 1 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  method = #swift.method<full>, backend = #swift.backend<swift_run>,
  strategy = #swift.strategy<STRATEGY>}
