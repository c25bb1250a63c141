//===- Torchtitan.cpp - torchtitan's job TOML for the strategy ------------===//
//
// torchtitan v0.2.2 (73a0e6979dd10b6b1904098eb3c8f62c18ab87ce, 2026-02-20)
// is the last release that reads TOML job files: main's 9810191 ("[BC
// Breaking] Config System Refactor: TOML to Python Dataclass Registry")
// removed them. Every section and key written here is a field of its
// torchtitan/config/job_config.py (test/data/torchtitan/job_config.json
// records them; EmitTest checks each key and value against it). What
// torchtitan does with them, read at the tag:
//  - parallel_dims.py: dp_replicate x dp_shard x cp x tp x pp = world, the
//    mesh ["pp", "dp_replicate", "fsdp", "tp"] with fsdp = dp_shard x cp:
//    the rank order of #swift.strategy (tp < cp < dp_shard < dp_replicate
//    < pp, cost/Layout.h);
//  - models/llama3/infra/parallelize.py: FSDP2 (fully_shard) over
//    dp_shard (x cp), HSDP with dp_replicate; reshard_after_forward
//    "always" is ZeRO-3, "never" ZeRO-2 (gradients and optimizer states
//    stay sharded); DDP only as the sole parallelism ("DDP has not
//    supported > 1D parallelism"), which is ZeRO-0; no ZeRO-1;
//  - train.py: gradient accumulation = global_batch_size /
//    (local_batch_size x data-parallel degree); under a pipeline,
//    local_batch_size is split into micro-batches of
//    pipeline_parallel_microbatch_size;
//  - distributed/utils.py clip_grad_norm_ always clips (torch's
//    clip_grads_with_norm_ scales by min(1, max_norm / (norm + 1e-6))):
//    max_norm 0 would zero every gradient, so no clipping is a bound no
//    norm reaches;
//  - models/llama3: the flavors 8B, 70B and 405B (Llama 3.1: untied, no
//    biases, rope theta 5e5 with llama3 scaling x8, vocabulary 128256).
//
//===----------------------------------------------------------------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

#include "swift/Cost/Search.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <limits>

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

namespace {

constexpr const char *kVersion =
    "torchtitan v0.2.2 (73a0e6979dd10b6b1904098eb3c8f62c18ab87ce)";

/// torchtitan v0.2.2's llama3_args (models/llama3/__init__.py), with the
/// FFN width its FeedForward derives from ffn_dim_multiplier and
/// multiple_of.
struct Flavor {
  const char *name;
  int64_t hidden, layers, heads, kvHeads, intermediate;
};
constexpr Flavor kLlama3Flavors[] = {
    {"8B", 4096, 32, 32, 8, 14336},
    {"70B", 8192, 80, 64, 8, 28672},
    {"405B", 16384, 126, 128, 8, 53248},
};

/// The flavor with the model's sizes, or why there is none.
FailureOr<const Flavor *> flavorOf(Materialized &m) {
  bool mlpBias = false;
  const plan::ModelConfig c = m.model.planModel(&mlpBias);
  // What every llama3 flavor shares (TransformerModelArgs' defaults and
  // the flavors' rope_theta; precompute_freqs_cis always applies
  // RoPEScalingArgs()).
  plan::RopeScaling rope;
  rope.type = plan::RopeType::Llama3;
  rope.factor = 8;
  std::string differs;
  auto check = [&](bool same, const std::string &what) {
    if (!same)
      differs += (differs.empty() ? "" : ", ") + what;
  };
  check(c.vocabSize == 128256, "vocab_size " + std::to_string(c.vocabSize) +
                                   " (llama3: 128256)");
  check(!c.tieWordEmbeddings, "tied embeddings");
  check(!c.qkvBias && !c.oBias && !mlpBias, "biases");
  check(!c.qkNorm, "q/k norms");
  check(c.ropeTheta == 500000, "rope_theta " + exactNumber(c.ropeTheta) +
                                   " (llama3: 500000)");
  check(c.ropeScaling == rope, "rope scaling other than llama3's x8");
  check(c.rmsNormEps == 1e-5, "rms_norm_eps " + exactNumber(c.rmsNormEps) +
                                  " (llama3: 1e-05)");
  check(c.headDim * c.numHeads == c.hiddenSize, "head_dim " +
                                                    std::to_string(c.headDim));
  const Flavor *flavor = nullptr;
  for (const Flavor &f : kLlama3Flavors)
    if (f.hidden == c.hiddenSize && f.layers == c.numLayers &&
        f.heads == c.numHeads && f.kvHeads == c.numKvHeads &&
        f.intermediate == c.intermediateSize)
      flavor = &f;
  if (!flavor)
    check(false, llvm::formatv("hidden {0}, {1} layers, {2} heads, {3} kv "
                               "heads, intermediate {4}",
                               c.hiddenSize, c.numLayers, c.numHeads,
                               c.numKvHeads, c.intermediateSize)
                     .str());
  if (!differs.empty())
    return m.job.emitError("torchtitan v0.2.2 has no llama3 flavor with "
                           "this model's sizes (8B, 70B, 405B only): ")
           << differs;
  return flavor;
}

/// A TOML basic string.
std::string quoted(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", unsigned(c));
      out += escaped;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// A TOML float: exactNumber() with a decimal point or exponent.
std::string tomlFloat(double x) {
  std::string text = exactNumber(x);
  if (text.find_first_of(".eEn") == std::string::npos)
    text += ".0";
  return text;
}

} // namespace

std::string torchtitanLimit(Method method) {
  return method == Method::Full
             ? ""
             : "torchtitan v0.2.2 trains every weight: it has no LoRA or "
               "QLoRA (use training.method full, or --emit ms-swift / "
               "deepspeed / plan for adapters)";
}

LogicalResult emitTorchtitan(ModuleOp module, llvm::raw_ostream &os,
                             const LaunchOptions &options) {
  FailureOr<Materialized> found = findMeshMaterialized(module);
  if (failed(found))
    return failure();
  Materialized &m = *found;
  JobOp job = m.job;
  const cost::Strategy &s = m.strategy;
  const cost::Layout &layout = s.layout;
  const int64_t world = m.worldSize;
  if (std::string why = torchtitanLimit(job.getMethod()); !why.empty())
    return job.emitError("training.method: ") << why;
  FailureOr<const Flavor *> flavor = flavorOf(m);
  if (failed(flavor))
    return failure();
  const int64_t layers = (*flavor)->layers;

  // Data parallelism: ZeRO 2/3 are FSDP2 over each shard group (HSDP
  // across groups), ZeRO-0 DDP over every data-parallel rank.
  const int64_t dp = layout.dataParallel(world);
  int64_t replicate = layout.replicas(world), shard = layout.shardGroup(world);
  if (s.zero == 1)
    return job.emitError(
        "strategy.zero: torchtitan v0.2.2 has no ZeRO-1: FSDP2 shards the "
        "gradients with the optimizer states (ZeRO-2: "
        "fsdp_reshard_after_forward never) and DDP shards nothing (ZeRO-0); "
        "use zero 0, 2 or 3");
  if (s.zero == 0 && dp > 1) {
    if (layout.tp > 1 || layout.pp > 1 || layout.cp > 1)
      return job.emitError(
          "strategy.zero 0: torchtitan v0.2.2 runs DDP only as the sole "
          "parallelism (parallelize.py: \"DDP has not supported > 1D "
          "parallelism\"); with tp, pp or cp use zero 2 or 3");
    replicate = dp;
    shard = 1;
  }
  if (s.zero == 0 && layout.cp > 1)
    return job.emitError("strategy.zero 0: torchtitan v0.2.2 shards the "
                         "weights over the context-parallel ranks (fsdp = "
                         "dp_shard x cp); with cp use zero 2 or 3");
  if (s.offload == cost::Offload::Optimizer)
    return job.emitError(
        "strategy.offload optimizer: torchtitan's CPU offload is FSDP2's, "
        "which offloads parameters with the optimizer states (offload "
        "optimizer+params)");
  if (s.offload != cost::Offload::None && (s.zero == 0 || layout.pp > 1))
    return job.emitError("strategy.offload: torchtitan offloads through "
                         "FSDP2 without a pipeline; use offload none");
  if (s.checkpointing == cost::Checkpointing::Full && s.checkpointLayers >= 0 &&
      s.checkpointLayers != layers)
    return job.emitError("strategy.checkpoint_layers: torchtitan v0.2.2 "
                         "checkpoints every layer or every n-th one, not the "
                         "first ")
           << s.checkpointLayers << "; checkpoint_layers needs swift-run";
  // parallel_dims.seq_len_divisor: sequence parallelism splits the tokens
  // over tp, load-balanced context parallelism into 2 x cp chunks.
  const int64_t seq = job.getSequenceLength();
  const int64_t divisor = layout.tp * (layout.cp > 1 ? 2 * layout.cp : 1);
  if (seq % divisor != 0)
    return job.emitError("training.sequence_length ")
           << seq << ": torchtitan needs it divisible by tp x 2 x cp ("
           << divisor << ")";
  // Stages: 1F1B holds one per rank, Interleaved1F1B two by default
  // (pipeline_parallel.py); more need layers_per_stage with
  // ceil((layers + 2) / layers_per_stage) = pp x v stages.
  std::optional<int64_t> layersPerStage;
  const bool pipeline = layout.pp > 1;
  const bool interleaved =
      pipeline && layout.schedule == plan::PipelineSchedule::Interleaved;
  if (pipeline && interleaved && layout.virtualStages != 2) {
    const int64_t stages = layout.pp * layout.virtualStages;
    for (int64_t n = 1; n <= layers + 2 && !layersPerStage; ++n)
      if ((layers + 2 + n - 1) / n == stages)
        layersPerStage = n;
    if (!layersPerStage)
      return job.emitError("strategy.virtual_stages ")
             << layout.virtualStages << ": torchtitan cannot split " << layers
             << " layers (+ embedding and output) into " << stages
             << " stages of pipeline_parallel_layers_per_stage layers";
  }

  plan::TrainingConfig t;
  readOptimizerSettings(job, t);
  // TOML integers are signed 64-bit.
  if (t.seed > uint64_t(std::numeric_limits<int64_t>::max()))
    return job.emitError("training.seed: torchtitan's seed is a TOML integer "
                         "(at most 9223372036854775807), and the job's is ")
           << t.seed;
  std::optional<StringRef> source = m.model.getSource();
  const bool localDir = source && llvm::sys::path::is_absolute(*source);
  const std::string assets =
      localDir ? source->str()
               : "./assets/hf/" +
                     (source ? llvm::sys::path::filename(*source).str()
                             : std::string("MODEL"));
  const Precision precision = job.getPrecision();
  const int64_t nodes = m.cluster.getNodes();
  const int64_t perNode = m.cluster.getGpusPerNode();
  const int64_t gbs = job.getGlobalBatchSize();

  os << "# " << kVersion << ", the last release with TOML job files\n";
  os << llvm::formatv("# swift-plan: {0} node(s) x {1} GPU(s), {2}; {3}\n",
                      nodes, perNode, describeLayout(layout, world),
                      cost::describe(s));
  if (!localDir)
    os << "# hf_assets_path: python scripts/download_hf_assets.py --repo_id "
       << (source ? source->str() : "MODEL")
       << " --assets tokenizer safetensors index config\n";
  os << "# DATASET: a dataset torchtitan has registered "
        "(torchtitan/hf_datasets/text_datasets.py); it packs documents into "
        "seq_len windows\n";
  os << "# STEPS: the run's optimizer steps (the lr schedule spans "
        "training.steps)\n";
  if (t.optimizer.weightDecay > 0)
    os << "# weight decay: torchtitan's AdamW decays every parameter, norm "
          "weights too; swift-run leaves them undecayed\n";
  // torch's LambdaLR evaluates torchtitan's lambda at step 0 as (0 + 1) /
  // warmup; HF's (swift-run's lrAt) is 0 / warmup.
  if (t.lrSchedule.warmupSteps > 0)
    os << "# warmup: torchtitan's starts at lr / warmup_steps, one step ahead "
          "of swift-run's (HF's), which starts at 0\n";
  if (!job.getPacking())
    os << "# packing: torchtitan packs documents into seq_len windows; the "
          "job was planned unpacked\n";
  if (nodes > 1)
    os << "# On every node, with MASTER_ADDR set to node 0's address:\n";
  os << "# torchrun --nnodes=" << nodes << " --nproc_per_node=" << perNode;
  if (nodes > 1)
    os << " --rdzv_backend c10d --rdzv_endpoint=$MASTER_ADDR:"
       << options.masterPort;
  os << " -m torchtitan.train --job.config_file "
     << options.torchtitanConfigPath
     << " --training.dataset DATASET --training.steps STEPS\n";

  os << "\n[job]\n";
  os << "description = " << quoted("swift-plan: " + cost::describe(s)) << "\n";

  os << "\n[model]\nname = \"llama3\"\n";
  os << "flavor = " << quoted((*flavor)->name) << "\n";
  os << "hf_assets_path = " << quoted(assets) << "\n";
  if (plan::fp8Gemms(precision))
    os << "converters = [\"quantize.linear.float8\"]\n";

  os << "\n[optimizer]\nname = \"AdamW\"\n";
  os << "lr = " << tomlFloat(t.optimizer.lr) << "\n";
  os << "beta1 = " << tomlFloat(t.optimizer.beta1) << "\n";
  os << "beta2 = " << tomlFloat(t.optimizer.beta2) << "\n";
  os << "eps = " << tomlFloat(t.optimizer.eps) << "\n";
  os << "weight_decay = " << tomlFloat(t.optimizer.weightDecay) << "\n";

  // Linear warmup, then the decay over the rest of training.steps (a
  // decay_ratio of 0 holds the lr: constant).
  os << "\n[lr_scheduler]\n";
  os << "warmup_steps = " << t.lrSchedule.warmupSteps << "\n";
  switch (t.lrSchedule.decay) {
  case plan::LrDecay::Constant:
    os << "decay_ratio = 0.0\n";
    break;
  case plan::LrDecay::Linear:
    os << "decay_type = \"linear\"\n";
    break;
  case plan::LrDecay::Cosine:
    os << "decay_type = \"cosine\"\n";
    break;
  }
  if (t.lrSchedule.decay != plan::LrDecay::Constant)
    os << "min_lr_factor = " << tomlFloat(t.lrSchedule.minLrRatio) << "\n";

  os << "\n[training]\n";
  // Under a pipeline a rank's whole share of the batch is one step's
  // micro-batches; otherwise each accumulation step takes one micro-batch.
  os << "local_batch_size = "
     << (pipeline ? s.microBatchSize * s.gradientAccumulation
                  : s.microBatchSize)
     << "\n";
  os << "global_batch_size = " << gbs << "\n";
  os << "seq_len = " << seq << "\n";
  if (t.maxGradNorm)
    os << "max_norm = " << tomlFloat(*t.maxGradNorm) << "\n";
  else
    os << "max_norm = 1e30  # no clipping: torchtitan always clips, and "
          "max_norm 0 would zero the gradients\n";
  if (precision == Precision::Bf16 || precision == Precision::Fp8Bf16)
    os << "dtype = \"bfloat16\"  # parameters, gradients and optimizer "
          "states, no fp32 copy\n";
  os << "mixed_precision_param = "
     << (precision == Precision::Fp32 ? "\"float32\"" : "\"bfloat16\"") << "\n";
  os << "mixed_precision_reduce = \"float32\"\n";
  if (s.offload == cost::Offload::OptimizerAndParams)
    os << "enable_cpu_offload = true\n";

  os << "\n[parallelism]\n";
  os << "data_parallel_replicate_degree = " << replicate << "\n";
  os << "data_parallel_shard_degree = " << shard << "\n";
  if (s.zero >= 2)
    os << "fsdp_reshard_after_forward = "
       << (s.zero == 3 ? "\"always\"" : "\"never\"") << "\n";
  os << "tensor_parallel_degree = " << layout.tp << "\n";
  if (layout.tp > 1)
    os << "enable_async_tensor_parallel = true\n";
  os << "pipeline_parallel_degree = " << layout.pp << "\n";
  if (pipeline) {
    os << "pipeline_parallel_schedule = "
       << (interleaved ? "\"Interleaved1F1B\"" : "\"1F1B\"") << "\n";
    if (layersPerStage)
      os << "pipeline_parallel_layers_per_stage = " << *layersPerStage << "\n";
    os << "pipeline_parallel_microbatch_size = " << s.microBatchSize << "\n";
  }
  os << "context_parallel_degree = " << layout.cp << "\n";
  if (layout.cp > 1)
    os << "context_parallel_rotate_method = "
       << (layout.cpKind == plan::ContextParallel::AllToAll ? "\"alltoall\""
                                                            : "\"allgather\"")
       << "\n";

  os << "\n[activation_checkpoint]\n";
  switch (s.checkpointing) {
  case cost::Checkpointing::None:
    os << "mode = \"none\"\n";
    break;
  case cost::Checkpointing::Full:
    os << "mode = \"full\"\n";
    break;
  case cost::Checkpointing::Selective:
    // Per-op: matmul outputs kept (alternately), element-wise recomputed.
    os << "mode = \"selective\"\nselective_ac_option = \"op\"\n";
    break;
  }

  os << "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n";

  if (plan::fp8Gemms(precision)) {
    // Per-tensor scales from the current amax (swift's FP8), the output
    // projection left in bf16 as swift prices it (decoder linears only).
    os << "\n[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n";
    if (s.zero >= 2 && shard > 1)
      os << "enable_fsdp_float8_all_gather = true\n"
            "precompute_float8_dynamic_scale_for_fsdp = true\n";
    os << "filter_fqns = [\"output\"]\n";
  }

  // Fine-tuning starts from the model's HF weights.
  os << "\n[checkpoint]\nenable = true\n";
  os << "initial_load_path = " << quoted(assets) << "\n";
  os << "initial_load_in_hf = true\n";
  os << "last_save_in_hf = true\n";

  os << "\n[debug]\nseed = " << t.seed << "\n";
  return success();
}

} // namespace swift::emit
