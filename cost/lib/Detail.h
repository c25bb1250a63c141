//===- Detail.h - shared pieces of the cost model ---------------*- C++ -*-===//

#ifndef SWIFT_PLANNER_COST_DETAIL_H
#define SWIFT_PLANNER_COST_DETAIL_H

#include "swift/Cost/Cost.h"

namespace swift::cost::detail {

/// How the backend runs the layer math, which decides what autograd keeps.
enum class Exec {
  Autocast, // HF: fp32 params under torch.autocast(bf16); fp32 residual stream
  Bf16,     // bf16 params (pure bf16, FSDP2's param_dtype, DeepSpeed, swift-run)
  Fp32,     // HF: fp32 everything
  Lora,     // HF + peft: frozen bf16 base, fp32 adapters
  Fused     // swift-run on CUDA: fused RMSNorm/SwiGLU/RoPE, fused linear+loss
};

Exec execution(const TrainingSetup &setup, const Strategy &strategy);

/// What one list of ops (a decoder layer, or the head) keeps for backward.
struct SavedBytes {
  double perToken = 0;   // activations, bytes per token
  double weightCopies = 0; // autocast's bf16 copies of fp32 weights, bytes
};

SavedBytes savedBytes(const std::vector<OpProfile> &ops, int64_t seq,
                      Exec exec, int64_t loraRank);

/// Bytes per element of the residual stream.
int activationBytes(Exec exec);

/// The per-GPU memory of one step under the setup's backend.
MemoryEstimate memoryFor(const ModelProfile &m, const TrainingSetup &setup,
                         const Hardware &hw, const Strategy &s);

/// The time of one step under the setup's backend.
TimeEstimate timeFor(const ModelProfile &m, const TrainingSetup &setup,
                     const Hardware &hw, const Strategy &s);

/// A named amount of memory; candidates are sums of parts.
using Parts = std::vector<std::pair<std::string, double>>;

constexpr double kMiB = 1 << 20;

} // namespace swift::cost::detail

#endif // SWIFT_PLANNER_COST_DETAIL_H
