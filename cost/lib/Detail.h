//===- Detail.h - shared pieces of the cost model ---------------*- C++ -*-===//

#ifndef SWIFT_COST_LIB_DETAIL_H
#define SWIFT_COST_LIB_DETAIL_H

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

/// `fp8`: the decoder linears run FP8 GEMMs (fp8Linears): a linear whose
/// input nothing else keeps keeps its e4m3 codes (1 B per element) instead.
SavedBytes savedBytes(const std::vector<OpProfile> &ops, int64_t seq,
                      Exec exec, const TrainingSetup &setup, bool fp8 = false);

/// Bytes per element of the residual stream.
int activationBytes(Exec exec);

/// The per-GPU memory of one step under the setup's backend; the timeline
/// only if asked (EstimateOptions::timeline).
MemoryEstimate memoryFor(const ModelProfile &m, const TrainingSetup &setup,
                         const Hardware &hw, const Strategy &s, bool timeline);

/// The time of one step under the setup's backend.
TimeEstimate timeFor(const ModelProfile &m, const TrainingSetup &setup,
                     const Hardware &hw, const Strategy &s);

/// One GEMM of a decoder layer as swift-run runs it: the linears that read
/// one value (q/k/v, gate/up) stacked into one, with a weight of
/// `outFeatures` x `inFeatures` elements.
struct Gemm {
  double outFeatures = 0, inFeatures = 0;
  bool inputKept = false; // another op keeps its input (attention's output)
};

/// The output width of the GEMM swift-run runs linear `op` of `ops` in: the
/// sum over the linears of `ops` that read its input.
int64_t stackedOutFeatures(const std::vector<OpProfile> &ops, const OpProfile &op);

/// The GEMMs of one decoder layer as swift-run runs them, in layer order.
std::vector<Gemm> decoderGemms(const ModelProfile &m);

/// Whether the setup's decoder linears run FP8 GEMMs (fp8-mixed, fp8-bf16 on
/// swift-run, a GPU with FP8). The job reader refuses FP8 on any other
/// backend, under LoRA/QLoRA and on a GPU without FP8; the cost model prices
/// such a setup as its storage twin, so it never divides by a zero peak.
bool fp8Linears(const TrainingSetup &setup, const Hardware &hw);

/// The collectives' rates (Time.cpp): NCCL's bus bandwidth (B/s) and
/// latency per ring step (s) inside a node and across nodes, measured where
/// the hardware profile gives them, else the links' datasheet rates times
/// the bus efficiency; the issue/synchronization cost of one collective
/// call; the fraction of an overlapped collective's time it takes from the
/// compute it hides under.
struct LinkRates {
  double intraBus = 0, interBus = 0, latencyIntra = 0, latencyInter = 0;
  double perCollective = 0, overlapInterference = 0;
};
LinkRates linkRates(const Hardware &hw);

/// swift-run's attention of one sample (Time.cpp); swiftRunAttentionSeconds.
double fusedAttentionSeconds(const OpProfile &op, int64_t seq, const Hardware &hw,
                             bool forward);

/// NF4, QLoRA's storage of the frozen decoder linears (bitsandbytes'
/// scheme): a 4-bit code per element, one 8-bit absmax per block of 64
/// elements, and one fp32 scale per 256 absmax (double quantization).
constexpr double kNf4BytesPerElement = 0.5 + 1.0 / 64 + 4.0 / (64 * 256);

/// The frozen base of a LoRA/QLoRA job as it is stored, in bytes. LoRA: every
/// parameter in `bytesPerElement` (the compute dtype); QLoRA: the decoder
/// linears' weights in NF4, the rest (embedding, lm_head, norms, biases) in
/// `bytesPerElement`, as bitsandbytes keeps them. A full job has no frozen
/// base (all zero).
struct FrozenBase {
  double total = 0;     // the whole model
  double layer = 0;     // one decoder layer
  double embedding = 0; // the input table
  double head = 0;      // final norm + untied lm_head
  // One decoder layer's NF4 weights (QLoRA; 0 otherwise): what is
  // dequantized to bf16 while the layer computes.
  double layerQuantizedElements = 0;
  /// The largest unit (embedding, a layer or the head).
  double largestUnit() const { return std::max({layer, embedding, head}); }
};

FrozenBase frozenBase(const ModelProfile &m, Method method,
                      double bytesPerElement);

/// HBM bytes of dequantizing one NF4 element to bf16 (read the code and its
/// share of the scales, write two bytes).
constexpr double kDequantizeBytesPerElement = kNf4BytesPerElement + 2;

/// A named amount of memory; candidates are sums of parts.
using Parts = std::vector<std::pair<std::string, double>>;

/// One point of a step's memory: where, and the named parts alive there.
struct Candidate {
  PeakLocation at;
  Parts parts;
  double total() const {
    double t = 0;
    for (const auto &p : parts)
      t += p.second;
    return t;
  }
};

constexpr double kMiB = 1 << 20;

} // namespace swift::cost::detail

#endif // SWIFT_COST_LIB_DETAIL_H
