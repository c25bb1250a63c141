//===- Plan.h - the plan.json schema: single source of truth --------------===//
//
// swift-plan (the compiler) writes plan.json; swift-run executes it. This
// header *is* the schema: every field the runtime reads is a member below,
// with its JSON name, unit and default. docs/plan-schema.md explains the same
// fields for people; when they disagree, this file wins and the doc is a bug.
//
// Ownership: a Plan is a plain value. parsePlan() builds it from JSON and
// validates it completely (types, ranges, cross-field consistency, the
// schedule rules of swift/Plan/Schedule.h), so code past parsePlan() may
// trust every field.
// Nothing here touches LibTorch: the compiler could include it unchanged.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Enums.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace swift::plan {

inline constexpr const char *kPlanSchemaName = "swift.plan";
inline constexpr int kPlanSchemaVersion = 1;

/// Upper bounds on a model's and a run's sizes, for every reader of them
/// (plans, jobs, the dialect's verifiers): what one accepts the others
/// accept, and products of sizes (tokens x hidden x layers ...) stay far
/// from overflowing int64.
namespace limits {
inline constexpr int64_t kHiddenSize = 1 << 20;
inline constexpr int64_t kIntermediateSize = 1 << 22;
inline constexpr int64_t kLayers = 4096;
inline constexpr int64_t kHeads = 4096;
inline constexpr int64_t kHeadDim = 4096;
inline constexpr int64_t kVocabSize = 1 << 24;
inline constexpr int64_t kSequenceLength = 1 << 22;
/// Sequences a step (a job's global batch); plans read up to 2^40.
inline constexpr int64_t kBatch = 1 << 24;
} // namespace limits

/// "model.rope_scaling" (absent: rope_type default): HF config.json's
/// rope_scaling, as transformers' ROPE_INIT_FUNCTIONS read it. The runtime's
/// makeRope() is the one place that turns it into frequencies.
struct RopeScaling {
  RopeType type = RopeType::Default;
  double factor = 1.0;         // linear, llama3
  double lowFreqFactor = 1.0;  // llama3
  double highFreqFactor = 4.0; // llama3
  int64_t originalMaxPositionEmbeddings = 8192; // llama3
  bool operator==(const RopeScaling &o) const {
    return type == o.type && factor == o.factor &&
           lowFreqFactor == o.lowFreqFactor &&
           highFreqFactor == o.highFreqFactor &&
           originalMaxPositionEmbeddings == o.originalMaxPositionEmbeddings;
  }
};

/// "model": a Llama-family decoder, named with HF config.json's fields.
struct ModelConfig {
  int64_t hiddenSize = 0;         // hidden_size (C)
  int64_t intermediateSize = 0;   // intermediate_size (I)
  int64_t numLayers = 0;          // num_hidden_layers (L)
  int64_t numHeads = 0;           // num_attention_heads (NH)
  int64_t numKvHeads = 0;         // num_key_value_heads (NKV), NH % NKV == 0
  int64_t headDim = 0;            // head_dim (D), default C / NH
  int64_t vocabSize = 0;          // vocab_size (V)
  bool tieWordEmbeddings = false; // tie_word_embeddings
  double rmsNormEps = 1e-6;       // rms_norm_eps
  double ropeTheta = 10000.0;     // rope_theta
  RopeScaling ropeScaling;        // rope_scaling
  bool qkvBias = false;           // attention_qkv_bias (Qwen2: true)
  bool oBias = false;             // attention_o_bias (HF llama attention_bias)
  bool qkNorm = false;            // qk_norm (Qwen3: per-head RMSNorm on q, k)

  int64_t numParameters() const; // all parameters, tied ones counted once
  int64_t numEmbeddingParameters() const; // V*C (the input table)
};

struct OptimizerConfig { // "training.optimizer" (AdamW only)
  double lr = 1e-4;
  double beta1 = 0.9, beta2 = 0.95; // "betas": [b1, b2]
  double eps = 1e-8;
  // Decoupled; on every weight but biases and norm weights (HF Trainer's
  // parameter groups, Trainer.get_decay_parameter_names).
  double weightDecay = 0.0;
};

/// "training.lr_schedule" (optional; absent: constant lr, no warmup). The lr
/// of optimizer step t (1-based) of a run of N steps is lrAt(): HF
/// transformers' LambdaLR schedules, evaluated at s = t - 1.
struct LrScheduleConfig {
  int64_t warmupSteps = 0;           // warmup_steps: linear from 0
  LrDecay decay = LrDecay::Constant; // decay: after warmup
  double minLrRatio = 0.0;           // min_lr_ratio: floor of linear/cosine
  bool isDefault() const {
    return warmupSteps == 0 && decay == LrDecay::Constant && minLrRatio == 0;
  }
};

/// "training": what one optimizer step consumes.
/// The linear layers of a decoder layer, in HF's names: the targets LoRA
/// may adapt ("all-linear": all seven, as peft's all-linear does for a
/// causal LM; lm_head is never adapted).
inline const std::vector<std::string> &loraTargetNames() {
  static const std::vector<std::string> names = {
      "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
      "down_proj"};
  return names;
}

/// "training.lora" (method lora or qlora): low-rank adapters
/// W x + (alpha / rank) B A x on the target linears of every decoder layer,
/// A (rank, in) and B (out, rank), the base frozen. QLoRA's base is NF4
/// (bitsandbytes' code, blocks of 64, double-quantized absmax); embedding,
/// lm_head and norms stay in the compute dtype.
struct LoraConfig {
  int64_t rank = 16;
  double alpha = 32;
  double dropout = 0; // on the adapter's input, as peft's lora_dropout
  std::vector<std::string> targets = loraTargetNames(); // resolved names
  double scale() const { return alpha / double(rank); }
  bool adapts(const std::string &linear) const {
    for (const std::string &t : targets)
      if (t == linear)
        return true;
    return false;
  }
};

struct TrainingConfig {
  int64_t sequenceLength = 0;       // tokens per sample (S)
  int64_t globalBatchSize = 0;      // samples per optimizer step, all ranks
  int64_t microBatchSize = 0;       // samples per forward/backward (B)
  int64_t gradientAccumulation = 0; // micro-steps per step; must equal
                                    // global / (micro * world.size)
  Precision precision = Precision::Bf16Mixed;
  OptimizerConfig optimizer;
  LrScheduleConfig lrSchedule; // "lr_schedule": written when not default
  // "max_grad_norm" (> 0): clip the global L2 norm of the step's gradients;
  // absent: no clipping.
  std::optional<double> maxGradNorm;
  uint64_t seed = 0; // initial weights and synthetic data
  // JSONL data (swift-run --data FILE.jsonl): samples packed into windows of
  // sequence_length (true) or one sample per window, padded (false).
  // plan.json "packing", optional, default true; written only when false.
  bool packing = true;
  // JSONL data: a sample longer than sequence_length (plan.json
  // "truncation", default "drop") and the tokens a text sample trains on
  // ("loss_on", default "assistant"); each written only when not default.
  Truncation truncation = Truncation::Drop;
  LossOn lossOn = LossOn::Assistant;
  // "method" (absent: full) and "lora" (required for lora and qlora).
  Method method = Method::Full;
  LoraConfig lora;
};

/// The learning rate of optimizer step `step` (1-based) of a run of
/// `totalSteps` steps: lr * f(s) with s = step - 1, W = warmup_steps,
/// T = totalSteps, m = min_lr_ratio (HF transformers'
/// get_{constant,linear,cosine}_schedule_with_warmup; cosine with m > 0 is
/// get_cosine_with_min_lr_schedule_with_warmup, linear with m > 0 the same
/// floor applied to the linear factor):
///   s < W:     f = s / max(1, W)
///   constant:  f = 1
///   linear:    f = m + (1 - m) * max(0, (T - s) / max(1, T - W))
///   cosine:    f = m + (1 - m) * max(0, 0.5 * (1 + cos(pi * p))),
///              p = (s - W) / max(1, T - W)
double lrAt(const TrainingConfig &training, int64_t step, int64_t totalSteps);

struct WorldConfig { // "world"
  int64_t size = 1;  // ranks (one GPU each on CUDA)
  int64_t gpusPerNode = 1;
  /// "gpu_memory_bytes": what the plan was made for, per GPU (the
  /// cluster's GPU capacity; 0, absent: not said). swift-run caps its
  /// allocator there when the device has more (--gpu-memory overrides).
  int64_t gpuMemoryBytes = 0;
};

/// "strategy": the compiler's decisions in summary form. The "schedule"
/// section spells them out and may not disagree with them; when "schedule"
/// is absent, parsePlan() builds it from this section with buildSchedule()
/// (swift/Plan/Schedule.h), the algorithm swift-plan's passes use.
struct StrategyConfig {
  int zero = 0; // 0..3
  Offload offload = Offload::None;
  Checkpointing checkpointing = Checkpointing::None;
  int64_t checkpointLayers = -1;  // first k layers checkpointed; -1: all
  int64_t bucketBytes = 25 << 20; // gradient bucket target size
  int prefetchDepth = 1;          // ZeRO-3: units all-gathered ahead
  /// "offload_activations": the decoders whose checkpointed input lives in
  /// pinned host memory between their forward and their backward (copied
  /// out on a copy stream as the forward goes, back one unit ahead in the
  /// backward): the first k checkpointed ones; 0: none (absent), -1: every
  /// checkpointed one. Needs checkpointing full.
  int64_t offloadActivations = 0;
  /// "mlp_tile_tokens": each decoder's MLP (gate/up, SwiGLU, down) runs over
  /// the micro-batch's tokens in tiles of this many, in the forward and the
  /// backward (which recomputes each tile), so that no (tokens x
  /// intermediate) tensor is ever whole; 0: untiled (absent).
  int64_t mlpTileTokens = 0;
  /// "dp_shard": HSDP. The ranks each unit's state is sharded over (a shard
  /// group); the world.size / dp_shard groups are replicas of each other,
  /// whose reduced gradient shards are all-reduced across the groups.
  /// Divides world.size; below it only at zero >= 1. 0 (absent, or equal to
  /// world.size): every rank in one group, plain ZeRO. shardRanks() reads it.
  int64_t dpShard = 0;
};

/// The units of the model: the granularity of sharding, gathering, gradient
/// reduction and recompute. Unit 0 is the embedding, units 1..L the decoder
/// layers, unit L+1 the head (final norm, lm_head unless tied, loss). Each
/// unit owns one flat parameter buffer; the tied head also *uses* unit 0's.
struct UnitSpec { // "schedule.units[i]"
  UnitKind kind = UnitKind::Decoder;
  int64_t layer = -1; // decoder layer index, -1 otherwise
  Checkpointing checkpoint = Checkpointing::None; // decoders only
  /// "offload_input": the checkpointed input is kept on the host between
  /// the forward and the backward (checkpoint full only).
  bool offloadInput = false;
};

/// One entry of the forward or backward program ("schedule.forward[i]").
/// Executed in order for every micro-batch: issue the all-gathers in
/// `gather` (asynchronous, on the communication stream; a unit already
/// resident is skipped, so a prefetch is a gather listed before the unit's
/// own entry), wait for the gathers `unit` needs, compute `unit`, free the
/// gathered parameters of the units in `release`, and (backward only) launch
/// the gradient reductions of the buckets in `reduce`.
struct ProgramStep {
  int unit = 0;
  std::vector<int> gather;
  std::vector<int> release;
  std::vector<int> reduce; // bucket ids, backward only
};

/// "schedule.buckets[i]": units whose gradients are reduced together (one
/// grouped collective), launched from the backward program.
struct Bucket {
  std::vector<int> units;
  Collective collective = Collective::AllReduce;
  bool everyMicroBatch = false; // false: only on the last micro-batch
                                // (local accumulation in between)
};

struct OptimizerPlacementSpec { // "schedule.optimizer"
  OptimizerDevice device = OptimizerDevice::Accelerator;
  bool gatherParams = false; // all-gather updated params (ZeRO-1/2)
};

struct Schedule {
  std::vector<UnitSpec> units; // L + 2 entries
  std::vector<Bucket> buckets;
  std::vector<ProgramStep> forward;  // units in order 0..L+1
  std::vector<ProgramStep> backward; // units in order L+1..0 (autograd's)
  OptimizerPlacementSpec optimizer;
};

struct Predicted {             // "predicted": the compiler's estimates
  int64_t peakMemoryBytes = 0; // per rank, allocator-allocated bytes
  double stepSeconds = 0;
  double tokensPerSecond = 0; // all ranks together
};

/// "weights": the pretrained weights the run starts from (absent: random
/// from training.seed). swift-run --weights DIR overrides it.
struct WeightsConfig {
  std::string format = "safetensors"; // the only one
  std::string path;                   // an HF model directory
};

struct Plan {
  std::string path; // where it was read from (for messages)
  ModelConfig model;
  std::optional<WeightsConfig> weights;
  TrainingConfig training;
  WorldConfig world;
  StrategyConfig strategy;
  Schedule schedule;
  bool scheduleDerived = false; // true: "schedule" absent, built here
  Predicted predicted;
};

/// Reads and fully validates a plan file. Throws UserError with one line:
/// "<path>: <json path>: <why>".
Plan parsePlan(const std::string &path);
/// Same, from text already in memory (`path` is used in messages only).
Plan parsePlanText(const std::string &text, const std::string &path);

/// The plan's "model" object as JSON text (HF config.json names, plus
/// attention_qkv_bias, attention_o_bias and qk_norm).
std::string modelToJson(const ModelConfig &m);

/// The plan as JSON text in this schema, schedule included (a built
/// schedule is written out explicitly). parsePlanText(planToJson(p)) == p.
std::string planToJson(const Plan &plan);

/// planToJson(plan), after parsePlanText() accepted that text under the name
/// `path` (the runtime's full validation of what it will read). For callers
/// built without exceptions (the compiler's emitters): on a violation it
/// returns "" and sets `error` to the UserError's line.
std::string checkedPlanJson(const Plan &plan, const std::string &path,
                            std::string &error);

/// Units whose parameters `unit` reads (its own, plus unit 0 for a tied head).
std::vector<int> unitOwners(const ModelConfig &m, int unit);
/// Parameter count of a unit's own flat buffer.
int64_t unitParameterCount(const ModelConfig &m, int unit);

/// Checks the plan against the launched job (world size).
void checkPlanMatchesWorld(const Plan &plan, int64_t worldSize);

/// HSDP's 2-D layout of the plan's ranks (strategy.dp_shard), replicate
/// major: rank r is rank r % shard of shard group r / shard and rank
/// r / shard of replica group r % shard. Without dp_shard: one shard group
/// of world.size ranks, one replica.
struct ShardGroups {
  int64_t shard = 1;    // ranks per shard group (dp_shard)
  int64_t replicas = 1; // shard groups (world.size / dp_shard)
  bool hybrid() const { return replicas > 1; }
};
ShardGroups shardGroups(const StrategyConfig &s, const WorldConfig &w);

} // namespace swift::plan
