// RUN: swift-opt %s --verify-roundtrip | FileCheck %s
// The cluster's measured rates, the job's counts and each op's cost are
// typed attributes: each prints by name (a rate left out is 0, not
// measured) and parses back to the same IR.

// CHECK: swift.cluster @c {{.*}} {measured = #swift.measured<matmul_tflops = 650.0, collective_latency_us = 12.5>}
// CHECK: swift.linear {{.*}} {swift.cost = #swift.op_cost<forward_flops = 8192, backward_flops = 16384, recompute_flops = 0, saved_bytes = 256>}
// CHECK: swift.job @job trains @m on @c
// CHECK-SAME: counts = #swift.counts<parameters = 512, trainable_parameters = 512, tokens_per_step = 16>
swift.cluster @c nodes 1 x 2 gpu #swift.gpu<name = "a10", memory_bytes = 25769803776, bf16_tflops = 125.0, hbm_gbps = 600.0, host_link_gbps = 32.0, nvlink_gbps = 0.0> intra_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> inter_node #swift.link<name = "pcie4", bandwidth_gbps = 32.0, latency_us = 10.0> host_memory 1 {measured = #swift.measured<collective_latency_us = 12.5, matmul_tflops = 650.0, attention_tflops = 0.0>}
swift.model @m("llama") {
^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
  %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
  %x = swift.embedding %ids, %table : (tensor<?x8xi64>, tensor<32x16xbf16>) -> tensor<?x8x16xbf16>
  %logits = swift.linear %x, %table {swift.cost = #swift.op_cost<forward_flops = 8192, backward_flops = 16384, recompute_flops = 0, saved_bytes = 256>} : (tensor<?x8x16xbf16>, tensor<32x16xbf16>) -> tensor<?x8x32xbf16>
  %loss = swift.cross_entropy %logits, %labels : (tensor<?x8x32xbf16>, tensor<?x8xi64>) -> tensor<f32>
  swift.loss %loss : tensor<f32>
}
swift.job @job trains @m on @c {backend = #swift.backend<hf>, counts = #swift.counts<parameters = 512, trainable_parameters = 512, tokens_per_step = 16>, global_batch_size = 2 : i64, method = #swift.method<full>, optimizer = #swift.optimizer<adamw>, precision = #swift.precision<bf16_mixed>, sequence_length = 8 : i64, strategy = #swift.strategy<>}
