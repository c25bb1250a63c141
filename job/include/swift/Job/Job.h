//===- Job.h - the job description a user writes ----------------*- C++ -*-===//
//
// Reads a job YAML (docs/design.md, "Job file"), applies `--set KEY=VALUE`
// overrides, resolves presets and HF config.json files, and validates
// everything a user can get wrong. Errors come back as one Diagnostic that
// names the file, line and column (where known), the field and the fix.
//
// This library has no MLIR dependency; the importer turns a JobSpec into IR.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_JOB_JOB_H
#define SWIFT_JOB_JOB_H

#include "swift/Job/MeasuredRates.h"
#include "swift/Plan/Enums.h"
#include "swift/Plan/Plan.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace swift::job {

/// One user-facing error: `file:line:col: error: field: message` (or a
/// warning: `... warning: ...`).
struct Diagnostic {
  std::string file; // job file, config.json, or "--set"
  int line = 0;     // 1-based; 0 when unknown
  int column = 0;
  std::string field; // dotted key path, e.g. "training.sequence_length"
  std::string message;
  bool warning = false;

  std::string location() const; // "file:line:col", or "file" when unknown
  std::string str() const;
};

/// A config.json value that changes the model but that swift does not
/// model, with where it was read: the job warns about it once the training
/// shape is known.
struct UnmodeledValue {
  int64_t value = 0;
  Diagnostic where; // file, line, column and field of the value
};

struct ModelSpec {
  std::string name;      // preset name, config.json path, or "inline"
  std::string modelType; // llama | qwen2 | mistral | qwen3
  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numHiddenLayers = 0;
  int64_t numAttentionHeads = 0;
  int64_t numKeyValueHeads = 0;
  int64_t headDim = 0;
  int64_t vocabSize = 0;
  bool tieWordEmbeddings = false;
  bool qkvBias = false; // bias on q/k/v projections (Qwen2, attention_bias)
  bool oBias = false;   // bias on o_proj (HF llama attention_bias)
  bool mlpBias = false; // bias on gate/up/down (HF llama mlp_bias)
  bool qkNorm = false;  // per-head RMSNorm of q and k (Qwen3)
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000.0;
  plan::RopeScaling ropeScaling; // rope_scaling / rope_parameters
  // HF's max_position_embeddings, and the sliding attention window when the
  // HF model applies one (mistral, use_sliding_window): swift attends over
  // the whole sequence at any length, so loadJob warns when the training
  // sequence is longer than either.
  std::optional<UnmodeledValue> maxPositionEmbeddings;
  std::optional<UnmodeledValue> slidingWindow;
  /// An HF model directory whose safetensors the run starts from ("": random
  /// weights); set when `model:` names a directory that holds weights.
  std::string weights;
  /// Where other stacks (HF, ms-swift) load the model from: the HF model
  /// directory the job named when it holds weights, or a preset's HF Hub
  /// id; "" otherwise (a bare config.json, a model written inline).
  std::string source;
};

/// training.lora. `targets` as the job wrote them: "all-linear" or names
/// among plan::loraTargetNames() (checked by the reader); the emitter
/// resolves them to names for plan.json.
struct LoraSpec {
  int64_t rank = 16;
  double alpha = 32;
  double dropout = 0; // on the adapters' input (peft's lora_dropout), [0, 1)
  std::vector<std::string> targets = {"all-linear"};
};

struct TrainingSpec {
  int64_t sequenceLength = 0;
  int64_t globalBatchSize = 0;
  std::optional<int64_t> microBatchSize; // nullopt: auto
  plan::Precision precision = plan::Precision::Bf16Mixed;
  plan::Optimizer optimizer = plan::Optimizer::AdamW;
  // training.optimizer's mapping form {name, lr, betas, eps, weight_decay},
  // training.lr_schedule, training.max_grad_norm (nullopt: not set, 0: set
  // to no clipping; both mean none for swift-run) and training.seed;
  // defaults are the plan's (swift/Plan/Plan.h).
  plan::OptimizerConfig optimizerConfig;
  plan::LrScheduleConfig lrSchedule;
  std::optional<double> maxGradNorm;
  uint64_t seed = 0;
  // Whether the job sets any of them (an optimizer mapping, lr_schedule,
  // max_grad_norm, seed): the IR then carries #swift.adamw, and ds_config an
  // explicit optimizer; otherwise both stay as they were before these keys.
  bool optimizerSettingsGiven = false;
  plan::Method method = plan::Method::Full;
  LoraSpec lora;
  bool packing = true; // JSONL samples packed into windows (else padded)
  plan::Truncation truncation = plan::Truncation::Drop; // over-long samples
  plan::LossOn lossOn = plan::LossOn::Assistant;        // text samples' targets
};

struct GpuSpec {
  std::string name;
  double memoryGiB = 0;
  double bf16Tflops = 0;
  double hbmGBps = 0;
  double hostLinkGBps = 0;
  double nvlinkGBps = 0;
  double fp8Tflops = 0; // dense FP8 tensor-core peak (0: no FP8)
};

struct LinkSpec {
  std::string name;
  double bandwidthGBps = 0;
  double latencyUs = 0;
};

struct ClusterSpec {
  GpuSpec gpu;
  MeasuredRates measured; // cluster.profile's rates (none: all 0)
  int64_t gpusPerNode = 1;
  int64_t nodes = 1;
  LinkSpec intraNode;
  LinkSpec interNode;
  double hostMemoryGiB = 512;
  int64_t numGpus() const { return gpusPerNode * nodes; }
};

/// Strategy keys; nullopt means `auto` (the planner decides).
struct StrategySpec {
  std::optional<int> zero;                  // 0..3
  std::optional<plan::Offload> offload;
  std::optional<plan::Checkpointing> checkpointing;
  std::optional<int64_t> checkpointLayers;  // first k layers only
  std::optional<int64_t> bucketBytes;       // gradient bucket (bucket_mib)
  std::optional<int64_t> prefetchDepth;     // ZeRO-3 units gathered ahead
  // Layers whose checkpointed input lives on the host: 0 none, -1 all
  // (the job's "all"), k the first k (offload_activations).
  std::optional<int64_t> offloadActivations;
  std::optional<int64_t> mlpTileTokens;     // 0: untiled (mlp_tile_tokens)
  // The layout over the GPUs: tensor, pipeline and context parallel
  // degrees, the ranks model states are sharded over (HSDP's group; all
  // data-parallel ranks by default), the pipeline schedule and its model
  // chunks per rank. The planner prices only the trivial layout yet
  // (swift-choose-strategy refuses others).
  std::optional<int64_t> tp, pp, cp, dpShard, virtualStages;
  std::optional<plan::PipelineSchedule> ppSchedule;
};

struct JobSpec {
  std::string path; // the job file
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  plan::Backend backend = plan::Backend::SwiftRun;
  StrategySpec strategy;
  /// Where each key of the job's sections was set (`training`,
  /// `training.global_batch_size`, `strategy.zero`, ...): its file position
  /// or the `--set` that set it; absent for keys left at their defaults.
  std::map<std::string, Diagnostic> origins;
  /// What the job asks that swift plans differently from HF (a sliding
  /// window shorter than the sequence, ...); printed, not fatal.
  std::vector<Diagnostic> warnings;
};

/// Loads `path`, applies `overrides` ("a.b.c=value", in order) and validates.
/// Returns nullopt and fills `error` on the first problem.
std::optional<JobSpec> loadJob(const std::string &path,
                               const std::vector<std::string> &overrides,
                               Diagnostic &error);

/// A problem a later stage found in a valid job, written as
/// "FIELD[, FIELD]...: message" (the first field is the one to change, the
/// others are involved; cost::SearchResult::error): located where the
/// first field was set, naming the `--set`s that set the others. Any other
/// text stays a message about the job file.
Diagnostic diagnoseJob(const JobSpec &job, const std::string &error);

/// Why the job cannot train in its precision, as "FIELD[, FIELD]...:
/// message" (diagnoseJob()'s form); empty when it can. The FP8 precisions
/// (plan::fp8Gemms(): fp8-mixed, fp8-bf16) need a GPU with FP8 tensor cores
/// (`fp8_tflops` > 0), full fine-tuning (swift-run's LoRA/QLoRA adapters run
/// bf16 GEMMs) and backend swift-run (HF and DeepSpeed train with bf16
/// GEMMs here). loadJob() refuses such a job; swift-plan asks again for the
/// stack an artifact is priced on (--emit deepspeed, ms-swift), and the
/// what-if re-planning for each changed copy.
std::string unsupportedPrecision(const JobSpec &job);

/// Reads an HF config.json into a ModelSpec: the strict JSON reader
/// (swift/Plan/Json.h) and the HF config reader (swift/Plan/HFConfig.h),
/// with errors at the field's line and column.
std::optional<ModelSpec> loadHFConfig(const std::string &path,
                                      Diagnostic &error);

/// The closest of `candidates` to `word` if it is close enough to be a typo.
std::optional<std::string>
closestMatch(const std::string &word, const std::vector<std::string> &candidates);

} // namespace swift::job

#endif // SWIFT_JOB_JOB_H
