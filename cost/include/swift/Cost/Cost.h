//===- Cost.h - memory and time of a strategy, from the model's ops -*- C++ -*-===//
//
// The compact view the cost model and the strategy search work on. A
// ModelProfile is read off the IR once (every op's FLOPs, the tensors it saves
// for backward, its weights, through CostOpInterface); estimate() then prices
// one strategy on one cluster for one backend in microseconds, so the search
// can try thousands. No MLIR here: the IR side is the dialect's
// (ModelOp::profile() and the other views in swift/Dialect/SwiftOps.h).
//
// Units: bytes, FLOPs, seconds. "Per sample" is one sequence of the
// micro-batch.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_COST_COST_H
#define SWIFT_COST_COST_H

#include "swift/Cost/Layout.h"
#include "swift/Job/MeasuredRates.h"
#include "swift/Plan/Enums.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace swift::cost {

/// Where integer byte and FLOP counts saturate (2^60, an exbibyte): sizes at
/// the job reader's bounds (a sequence of 2^22 tokens at a micro-batch of
/// 2^21) price past 2^63, where overflow is undefined (in practice a
/// negative count that "fits"). 2^60 fits no GPU or host and leaves room to
/// add a few such counts.
constexpr int64_t kSaturatedCount = int64_t(1) << 60;

/// a * b for non-negative counts, saturated at kSaturatedCount.
inline int64_t saturatingProduct(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > kSaturatedCount)
    return kSaturatedCount;
  return r;
}

enum class OpKind {
  Embedding,
  RMSNorm,
  Linear,
  Rope,
  Attention,
  SiluMul,
  Add,
  CrossEntropy
};

/// A tensor an op keeps for its backward, per sample, at the math level (the
/// backend adds its implementation's extras). `value` identifies a tensor
/// several ops save (the normed input of q/k/v); -1 for op-private ones.
struct SavedTensor {
  int value = -1;
  int64_t elements = 0;
  int bits = 16;
  std::string what;
};

struct OpProfile {
  OpKind kind = OpKind::Add;
  std::string name; // "self_attn.q_proj", "input_layernorm", "attention", ...
  int64_t forwardFlops = 0;        // per sample
  int64_t backwardFlops = 0;       // per sample, weights trainable
  int64_t backwardFlopsFrozen = 0; // per sample, weights frozen
  int64_t inputElements = 0;       // per sample, first operand
  int64_t outputElements = 0;      // per sample
  int64_t weightElements = 0;      // parameters owned (0: none or tied reuse)
  int64_t biasElements = 0;
  int64_t inFeatures = 0, outFeatures = 0;        // linear
  int64_t heads = 0, kvHeads = 0, headDim = 0;     // attention, rope
  // Attention: the keys each sample's queries attend to (causal); 0: the
  // profile's sequence length. A context-parallel rank's S / cp queries
  // see all S keys (Parallel.h, rankProfile).
  int64_t keyLength = 0;
  bool adapter = false; // gets a LoRA adapter under the job's method
  int inputValue = -1;   // SSA identity of operand 0 (for shared tensors)
  int outputValue = -1;  // SSA identity of the result
  std::optional<OpKind> inputProducer; // the op kind that made operand 0
  std::vector<SavedTensor> saved;

  /// Elements of operand 0 / the result per token.
  int64_t inputWidth(int64_t seq) const { return inputElements / seq; }
  int64_t outputWidth(int64_t seq) const { return outputElements / seq; }
};

/// The model as three op lists: before the decoder layers, one decoder
/// layer (repeated `numLayers` times), after them.
struct ModelProfile {
  std::string name;
  int64_t sequenceLength = 0;
  int64_t hiddenSize = 0;
  int64_t vocabSize = 0;
  int64_t numLayers = 0;
  int computeBits = 16; // activations: 16 (bf16) or 32 (fp32 precision)
  std::vector<OpProfile> embed, layer, head;

  int64_t parameters = 0;          // all, tied weights once
  int64_t layerParameters = 0;     // one decoder layer
  int64_t embeddingParameters = 0; // the input table
  int64_t headParameters = 0;      // final norm + untied lm_head
  int64_t adapterParameters = 0;   // LoRA adapters over all layers (0: full)
};

// The job's and the strategy's enums are the plan layer's (one table of
// spellings: swift/Plan/Enums.h).
using plan::Backend;
using plan::Checkpointing;
using plan::Method;
using plan::Offload;
using plan::Precision;
using plan::toString;

struct Link {
  std::string name;
  double bandwidthGBps = 0; // per GPU, one direction
  double latencyUs = 0;
};

/// Rates measured on the machine (a hardware profile); 0 means "not
/// measured: use the datasheet number times a typical efficiency". The job
/// layer's struct: the reader fills it, the IR carries it, the model prices
/// with it.
using job::MeasuredRates;

/// The hardware, as datasheets or a measured profile give it.
struct Hardware {
  MeasuredRates measured;
  std::string gpu;
  int64_t memoryBytes = 0;
  double bf16Tflops = 0;
  double fp8Tflops = 0; // dense FP8 peak (0: no FP8 tensor cores)
  double hbmGBps = 0;
  double hostLinkGBps = 0;
  int64_t gpusPerNode = 1;
  int64_t nodes = 1;
  Link intraNode, interNode;
  int64_t hostMemoryBytes = 0;

  int64_t worldSize() const { return gpusPerNode * nodes; }
};

/// What the job fixes regardless of strategy.
struct TrainingSetup {
  Backend backend = Backend::SwiftRun;
  Precision precision = Precision::Bf16Mixed;
  Method method = Method::Full;
  int64_t loraRank = 16;
  double loraDropout = 0; // probability of zeroing an adapter's input
  int64_t globalBatchSize = 0;
  bool clipsGradients = false; // training.max_grad_norm > 0
};

/// One complete strategy: every decision made.
struct Strategy {
  int zero = 0;
  Offload offload = Offload::None;
  Checkpointing checkpointing = Checkpointing::None;
  int64_t checkpointLayers = -1; // first k layers; -1: all layers
  int64_t microBatchSize = 1;
  int64_t gradientAccumulation = 1;
  int64_t bucketBytes = 25 << 20;
  int prefetchDepth = 1;
  /// The first k fully checkpointed layers keep their input in pinned host
  /// memory between forward and backward; 0: none, -1: all of them
  /// (plan::StrategyConfig::offloadActivations).
  int64_t offloadActivations = 0;
  /// Each layer's MLP runs in tiles of this many tokens; 0: untiled.
  int64_t mlpTileTokens = 0;
  /// The device mesh (Layout.h); the default: every GPU a data-parallel
  /// rank of one shard group.
  Layout layout;

  int64_t checkpointedLayers(int64_t numLayers) const {
    if (checkpointing == Checkpointing::None)
      return 0;
    return checkpointLayers < 0 ? numLayers
                                : std::min(checkpointLayers, numLayers);
  }
  /// The layers whose checkpointed input lives on the host (the rule of
  /// plan::layerOffloadsInput, counted).
  int64_t offloadedLayers(int64_t numLayers) const {
    if (checkpointing != Checkpointing::Full || offloadActivations == 0)
      return 0;
    const int64_t n = checkpointedLayers(numLayers);
    return offloadActivations < 0 ? n : std::min(offloadActivations, n);
  }
};

/// The ranks the model states are sharded over (ZeRO's partitions): the
/// layout's shard group (HSDP's dp_shard), every GPU by default.
inline int64_t shardRanks(const Strategy &s, const Hardware &hw) {
  return s.layout.shardGroup(hw.worldSize());
}

/// The ranks of mesh dimension `d` under `s`'s layout on `hw`.
inline Group meshGroup(const Strategy &s, const Hardware &hw, MeshDim d) {
  return s.layout.group(d, hw.worldSize(), hw.gpusPerNode);
}

/// Where the peak happens.
struct PeakLocation {
  std::string phase; // forward | backward | optimizer
  int64_t layer = -1; // decoder layer, -1 outside the layers
  std::string op;
  std::string str() const;
};

/// The allocated bytes at one point of a step.
struct MemoryPoint {
  PeakLocation at;
  int64_t bytes = 0;
};

struct MemoryEstimate {
  int64_t peakBytes = 0;     // allocator-allocated bytes, per GPU
  int64_t capacityBytes = 0; // what the allocator can use
  // Named parts alive at the peak; they sum to peakBytes.
  std::vector<std::pair<std::string, int64_t>> breakdown;
  PeakLocation peak;
  // Parameters + gradients + optimizer states on the GPU (the "model
  // states" of the ZeRO paper and DeepSpeed's estimators).
  int64_t modelStateBytes = 0;
  // The peak of each phase.
  int64_t forwardPeakBytes = 0, backwardPeakBytes = 0, optimizerPeakBytes = 0;
  int64_t hostBytes = 0; // host memory per node the strategy needs
  // Pinned host bytes per GPU holding offloaded layer inputs (part of
  // hostBytes, per rank).
  int64_t offloadedActivationBytes = 0;
  // Bytes one decoder layer keeps for backward (per micro-batch), without
  // and with checkpointing; the head's (final norm, lm_head, loss).
  int64_t layerActivationBytes = 0;
  int64_t checkpointedLayerBytes = 0;
  int64_t headActivationBytes = 0;
  // The step as the model walks it, in order: each decoder layer's forward
  // (its saved tensors added up; with QLoRA's or FP8's per-layer copies),
  // the loss's forward and backward, each decoder layer's backward (L-1 ..
  // 0), the embedding's backward where a tied head's gradient meets it, the
  // optimizer. The peak is its largest point. Empty unless asked
  // (EstimateOptions::timeline).
  std::vector<MemoryPoint> timeline;
};

struct TimeEstimate {
  double stepSeconds = 0;
  double computeSeconds = 0;              // forward + backward + recompute
  double recomputeSeconds = 0;            // part of compute
  double exposedCommunicationSeconds = 0; // not hidden under compute
  double communicationSeconds = 0;        // all collectives, hidden or not
  double offloadSeconds = 0;              // host<->device copies exposed
  // Of offloadSeconds: the offloaded layer inputs' copies not hidden under
  // their layers' compute; and their total copy time, hidden or not.
  double activationOffloadSeconds = 0;
  double activationCopySeconds = 0;
  double optimizerSeconds = 0;
  // Mesh backends: the pipeline's fill and drain, (pp - 1) / v micro-batch
  // times of the slowest stage (part of the step).
  double pipelineBubbleSeconds = 0;
  // HSDP: the all-reduces of the reduced shards across the replica groups
  // (part of communication, all of it exposed on swift-run).
  double replicaAllReduceSeconds = 0;
  double tokensPerSecond = 0;             // all GPUs
  double mfu = 0;                         // vs datasheet bf16 peak
};

struct Estimate {
  MemoryEstimate memory;
  TimeEstimate time;
};

/// Why a backend cannot run a strategy (HF has no ZeRO-1, say); empty when
/// it can.
std::string unsupportedReason(const ModelProfile &model,
                              const TrainingSetup &setup, const Hardware &hw,
                              const Strategy &strategy);

/// swift-run's attention (cuDNN's causal SDPA) for one sample through one
/// layer: the forward, or the backward, of `attention` (an Attention op of
/// a profile with sequence length `seq`) on `hw` without a measured
/// attention rate; the time model's own formula (Time.cpp).
double swiftRunAttentionSeconds(const OpProfile &attention, int64_t seq,
                                const Hardware &hw, bool forward);

/// What estimate() computes besides the peak, its parts and the time.
struct EstimateOptions {
  /// MemoryEstimate::timeline, a point per layer's forward and backward:
  /// time linear in layers. Without it (the search's prices) the same
  /// estimate takes the same time at any layer count.
  bool timeline = true;
};

/// Prices one strategy the backend supports.
Estimate estimate(const ModelProfile &model, const TrainingSetup &setup,
                  const Hardware &hw, const Strategy &strategy,
                  const EstimateOptions &options = {});

/// Model FLOPs of one optimizer step for MFU (6 N_nonembedding + attention,
/// lm_head counted), all GPUs together. LoRA/QLoRA: 4 N (forward and input
/// gradients; a frozen base has no weight gradients) + attention; the
/// adapters' own FLOPs are negligible.
double modelFlopsPerStep(const ModelProfile &model, int64_t globalBatchSize,
                         Method method = Method::Full);

} // namespace swift::cost

#endif // SWIFT_COST_COST_H
