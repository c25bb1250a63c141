// RUN: swift-opt %s --verify-roundtrip | FileCheck %s
// Proves every op and attribute prints and parses back to the same IR.

// CHECK-LABEL: swift.cluster @cluster nodes 2 x 8
// CHECK-SAME: gpu <name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4, fp8_tflops = 1978.9, hbm_gbps = 3350.0, host_link_gbps = 64.0, nvlink_gbps = 450.0>
// CHECK-SAME: intra_node <name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0>
// CHECK-SAME: host_memory 549755813888
swift.cluster @cluster nodes 2 x 8
    gpu #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4,
                   fp8_tflops = 1978.9, hbm_gbps = 3350.0, host_link_gbps = 64.0,
                   nvlink_gbps = 450.0>
    intra_node #swift.link<name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0>
    inter_node #swift.link<name = "ib-400g", bandwidth_gbps = 50.0, latency_us = 15.0>
    host_memory 549755813888

// CHECK-LABEL: swift.model @tiny("qwen3")
// CHECK: swift.embedding
// CHECK: swift.repeat 2 layers from 0(%{{.*}}) : tensor<?x8x16xbf16>
// CHECK: swift.rmsnorm %{{.*}}, %{{.*}} {epsilon = {{.*}} : f64}
// CHECK: swift.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x8x16xbf16>, tensor<8x16xbf16>, tensor<8xbf16>) -> tensor<?x8x8xbf16>
// CHECK: swift.rope
// CHECK: swift.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK: swift.silu_mul
// CHECK: swift.add
// CHECK: swift.yield
// CHECK: swift.cross_entropy
// CHECK: swift.loss
swift.model @tiny("qwen3") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %h = swift.repeat 2 layers from 0 (%x) : tensor<?x8x16xbf16> {
  ^bb0(%in: tensor<?x8x16xbf16>):
    %nw = swift.param "input_layernorm.weight" : tensor<16xbf16>
    %n = swift.rmsnorm %in, %nw {epsilon = 1.0e-06 : f64} : (tensor<?x8x16xbf16>, tensor<16xbf16>) -> tensor<?x8x16xbf16>
    %wq = swift.param "self_attn.q_proj.weight" : tensor<16x16xbf16>
    %q = swift.linear %n, %wq : (tensor<?x8x16xbf16>, tensor<16x16xbf16>) -> tensor<?x8x16xbf16>
    %qnw = swift.param "self_attn.q_norm.weight" : tensor<4xbf16>
    %qn = swift.rmsnorm %q, %qnw {epsilon = 1.0e-06 : f64} : (tensor<?x8x16xbf16>, tensor<4xbf16>) -> tensor<?x8x16xbf16>
    %wk = swift.param "self_attn.k_proj.weight" : tensor<8x16xbf16>
    %bk = swift.param "self_attn.k_proj.bias" : tensor<8xbf16>
    %k = swift.linear %n, %wk, %bk : (tensor<?x8x16xbf16>, tensor<8x16xbf16>, tensor<8xbf16>) -> tensor<?x8x8xbf16>
    %wv = swift.param "self_attn.v_proj.weight" : tensor<8x16xbf16>
    %v = swift.linear %n, %wv : (tensor<?x8x16xbf16>, tensor<8x16xbf16>) -> tensor<?x8x8xbf16>
    %qr = swift.rope %qn {num_heads = 4 : i64, head_dim = 4 : i64, theta = 1.0e+06 : f64} : tensor<?x8x16xbf16>
    %kr = swift.rope %k {num_heads = 2 : i64, head_dim = 4 : i64, theta = 1.0e+06 : f64} : tensor<?x8x8xbf16>
    %a = swift.attention %qr, %kr, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, causal} : (tensor<?x8x16xbf16>, tensor<?x8x8xbf16>, tensor<?x8x8xbf16>) -> tensor<?x8x16xbf16>
    %m = swift.silu_mul %a, %a : tensor<?x8x16xbf16>
    %o = swift.add %in, %m : tensor<?x8x16xbf16>
    swift.yield %o : tensor<?x8x16xbf16>
  }
  %logits = swift.linear %h, %table : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}

// CHECK-LABEL: swift.job @job trains @tiny on @cluster
// CHECK-SAME: lora = #swift.lora<rank = 4, alpha = 8.0, dropout = 0.05, targets = ["q_proj", "v_proj"]>
// CHECK-SAME: micro_batch_size = 2 : i64
// CHECK-SAME: optimizer_settings = #swift.adamw<lr = 3.0e-04, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-08, weight_decay = 0.1, warmup_steps = 10, decay = cosine, min_lr_ratio = 0.1, seed = 42, max_grad_norm = 1.0>
// CHECK-SAME: precision = #swift.precision<bf16_mixed>
// CHECK-SAME: strategy = #swift.strategy<zero = zero3, offload = optimizer_params, checkpointing = full, checkpoint_layers = 1>
swift.job @job trains @tiny on @cluster {
  sequence_length = 8 : i64, global_batch_size = 4 : i64, micro_batch_size = 2 : i64,
  precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
  optimizer_settings = #swift.adamw<lr = 3.0e-4, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8,
    weight_decay = 0.1, warmup_steps = 10, decay = cosine, min_lr_ratio = 0.1,
    seed = 42, max_grad_norm = 1.0>,
  method = #swift.method<qlora>,
  lora = #swift.lora<rank = 4, alpha = 8.0, dropout = 0.05, targets = ["q_proj", "v_proj"]>,
  backend = #swift.backend<deepspeed>,
  strategy = #swift.strategy<zero = zero3, offload = optimizer_params, checkpointing = full, checkpoint_layers = 1>}
