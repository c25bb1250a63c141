//===- Activations.cpp - what autograd keeps, per op and backend ----------===//
//
// Each rule names the tensors a real implementation keeps from an op's
// forward to its backward. The HF rules were read off PyTorch 2.11 +
// transformers 5.17 with saved_tensors_hooks on an H200
// (benchmarks/calibration/hf_memory_trace.py; docs/cost-model-hf.md). The
// fused rules are swift-run's CUDA kernels (runtime/lib/model/Kernels.cu,
// docs/runtime.md): they keep what the math needs.
//
//===----------------------------------------------------------------------===//

#include "Detail.h"

#include <set>
#include <string>

namespace swift::cost::detail {

Exec execution(const TrainingSetup &setup, const Strategy &strategy) {
  // HF and DeepSpeed train adapters through peft; swift-run runs its own
  // kernels whatever the method (adapters on its stacked GEMMs).
  if (setup.method != Method::Full && setup.backend != Backend::SwiftRun)
    return Exec::Lora;
  if (setup.precision == Precision::Fp32)
    return Exec::Fp32;
  if (setup.backend == Backend::SwiftRun)
    return Exec::Fused;
  // FSDP2 (ZeRO-2/3 on HF) and DeepSpeed compute with bf16 parameters;
  // plain HF bf16-mixed keeps fp32 parameters and autocasts.
  if (plan::storagePrecision(setup.precision) == Precision::Bf16 ||
      strategy.zero >= 2 || setup.backend == Backend::DeepSpeed)
    return Exec::Bf16;
  return Exec::Autocast;
}

int activationBytes(Exec exec) {
  return exec == Exec::Autocast || exec == Exec::Fp32 ? 4 : 2;
}

namespace {

class Rules {
public:
  Rules(int64_t seq, Exec exec, const TrainingSetup &setup, bool fp8)
      : seq(seq), exec(exec), rank(setup.loraRank), dropout(setup.loraDropout),
        fp8(fp8 && exec == Exec::Fused) {}

  void add(const OpProfile &op) {
    switch (op.kind) {
    case OpKind::RMSNorm: return rmsnorm(op);
    case OpKind::Linear: return linear(op);
    case OpKind::Attention: return attention(op);
    case OpKind::SiluMul: return siluMul(op);
    case OpKind::CrossEntropy: return crossEntropy(op);
    case OpKind::Embedding: // token ids (8 B/token) are held by the caller
    case OpKind::Rope:      // only the shared cos/sin tables
    case OpKind::Add:       // nothing
      return;
    }
  }

  SavedBytes result() const { return bytes; }

private:
  // Under LoRA every base weight (norms included) is frozen.
  bool frozen() const { return exec == Exec::Lora; }

  /// Saves a tensor unless an earlier op of the list already saved it.
  void keep(int value, double perToken) {
    if (value >= 0 && !saved.insert(value).second)
      return;
    bytes.perToken += perToken;
  }

  void rmsnorm(const OpProfile &op) {
    double width = op.inputWidth(seq);
    double groups = op.weightElements ? width / op.weightElements : 1;
    if (exec == Exec::Fused) {
      // The (bf16) input, shared with whoever else keeps it, and one fp32
      // rstd per row.
      keep(op.inputValue, 2 * width);
      bytes.perToken += 4 * groups;
      return;
    }
    // HF LlamaRMSNorm: x.to(fp32) is kept by pow() and by the multiply with
    // rsqrt (one fp32 tensor), plus rsqrt itself; weight * x_normed keeps
    // x_normed for the weight's gradient (not when the weight is frozen).
    // Under autocast the residual stream is fp32 and x_normed stays fp32;
    // per-head q/k norms (Qwen3) see bf16 projections.
    bool perHead = op.name.find("q_norm") != std::string::npos ||
                   op.name.find("k_norm") != std::string::npos;
    int normedBytes = exec == Exec::Fp32 ||
                              (exec == Exec::Autocast && !perHead)
                          ? 4
                          : 2;
    bytes.perToken += 4 * width + 4 * groups;
    if (!frozen())
      bytes.perToken += normedBytes * width;
  }

  void linear(const OpProfile &op) {
    double in = op.inFeatures;
    if (op.adapter && exec != Exec::Lora) {
      // swift-run's adapters: the input A reads is the base linear's, kept
      // below; B's weight gradient needs A's output (rank wide), and with
      // dropout A reads (and its gradient needs) a dropped copy of the input.
      int e = exec == Exec::Fp32 ? 4 : 2;
      bytes.perToken += e * rank + (dropout > 0 ? e * in : 0);
    }
    if (exec == Exec::Fused && op.name == "lm_head")
      return; // fused with the loss: its gradients exist after the forward
    if (exec == Exec::Lora) {
      // Base frozen: its backward needs only the weight. peft casts the
      // input to the fp32 adapter's dtype for lora_A (kept), and lora_B
      // keeps lora_A's fp32 output.
      if (op.adapter)
        bytes.perToken += 4 * in + 4 * rank;
      return;
    }
    if (exec == Exec::Autocast) {
      // autocast casts the fp32 weight to bf16 once per forward and the
      // linear keeps that copy; an fp32 input (a norm's output) is cast
      // anew by every linear that reads it, a bf16 one is kept as is.
      bytes.weightCopies += 2.0 * op.inFeatures * op.outFeatures;
      if (op.inputProducer == OpKind::RMSNorm)
        bytes.perToken += 2 * in;
      else
        keep(op.inputValue, 2 * in);
      return;
    }
    // FP8 GEMMs keep x^T's e4m3 codes for the weight gradient, unless an
    // earlier op keeps x anyway (attention's output: o_proj's input).
    keep(op.inputValue, (exec == Exec::Fp32 ? 4 : fp8 ? 1 : 2) * in);
  }

  void attention(const OpProfile &op) {
    // Flash/cuDNN SDPA keeps q, k, v (after RoPE, bf16), the output and an
    // fp32 log-sum-exp per query row and head.
    double q = op.heads * op.headDim, kv = op.kvHeads * op.headDim;
    int e = exec == Exec::Fp32 ? 4 : 2;
    bytes.perToken += e * (q + 2 * kv) + 4 * op.heads;
    keep(op.outputValue, e * q);
  }

  void siluMul(const OpProfile &op) {
    double width = op.outputWidth(seq);
    int e = exec == Exec::Fp32 ? 4 : 2;
    if (exec == Exec::Fused) {
      // The fused backward recomputes silu(gate) from gate and up.
      keep(op.inputValue, e * width);
      bytes.perToken += e * width; // up
      return;
    }
    // HF: act_fn(gate) keeps gate; (silu * up) keeps both factors.
    bytes.perToken += 3 * e * width;
  }

  void crossEntropy(const OpProfile &op) {
    double vocab = op.inputWidth(seq);
    if (exec == Exec::Fused) {
      // The fused linear + loss computes its gradients in the forward: one
      // fp32 loss per token survives to backward (the logits never do; dh
      // and dW are counted with the loss, see Memory.cpp).
      bytes.perToken += 4;
      return;
    }
    // HF ForCausalLMLoss upcasts the logits and log_softmax keeps its fp32
    // output.
    bytes.perToken += 4 * vocab;
  }

  int64_t seq;
  Exec exec;
  int64_t rank;
  double dropout;
  bool fp8;
  SavedBytes bytes;
  std::set<int> saved;
};

} // namespace

SavedBytes savedBytes(const std::vector<OpProfile> &ops, int64_t seq,
                      Exec exec, const TrainingSetup &setup, bool fp8) {
  Rules rules(seq, exec, setup, fp8);
  for (const OpProfile &op : ops)
    rules.add(op);
  return rules.result();
}

} // namespace swift::cost::detail
