//===- Megatron.cpp - Megatron-LM's pretrain_gpt.py command line ----------===//
//
// Megatron-LM core_v0.15.3 (309ffca6a40553362d44fd17efc56b772fa1aa44,
// 2026-02-06): its megatron/training/arguments.py spells every flag as a
// literal add_argument('--...') (from core_v0.16 most are generated from
// dataclasses), recorded in test/data/megatron/arguments.json, which
// EmitTest checks every flag and value written here against. What
// Megatron does with them, read at the tag:
//  - ranks ordered tp-cp-ep-dp-pp (parallel_state.py's default order), the
//    rank order of #swift.strategy (cost/Layout.h);
//  - ZeRO-1 is the distributed optimizer (fp32 main weights and Adam states
//    sharded, gradients reduce-scattered); ZeRO-2/3 are Megatron-FSDP's
//    optim_grads / optim_grads_params, which needs --ckpt-format
//    fsdp_dtensor and CUDA_DEVICE_MAX_CONNECTIONS other than 1; HSDP is
//    --num-distributed-optimizer-instances (shard groups), for both;
//  - tensor or context parallelism without FSDP asserts
//    CUDA_DEVICE_MAX_CONNECTIONS=1 (validate_args, before Blackwell);
//  - one of --num-virtual-stages-per-pipeline-rank,
//    --num-layers-per-virtual-pipeline-stage, --pipeline-model-parallel-
//    layout; layers % pp == 0, or (layers + 2) % pp with the embedding and
//    loss counted as layers (--account-for-*-in-pipeline-split);
//  - --recompute-method uniform with 1 layer per unit is every layer, block
//    k the first k layers of each pipeline stage;
//  - --clip-grad 0 turns clipping off (optimizer.py clips when > 0);
//    dropout defaults to 0.1 (swift trains without);
//  - --seed + 100 x pipeline rank seeds numpy (below 2^32).
//
//===----------------------------------------------------------------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

#include "swift/Cost/Search.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

namespace {

constexpr const char *kVersion =
    "Megatron-LM core_v0.15.3 (309ffca6a40553362d44fd17efc56b772fa1aa44)";

/// A flag without a value (store_true).
Flag on(const std::string &name) { return {name, "", /*list=*/true}; }

} // namespace

std::string megatronLimit(Method method) {
  return method == Method::Full
             ? ""
             : "Megatron-LM's pretrain_gpt.py trains every weight: it has no "
               "LoRA or QLoRA (use training.method full, or --emit ms-swift / "
               "deepspeed / plan for adapters)";
}

std::string megatronOffloadLimit() {
  return "swift does not price Megatron-LM's optimizer offload "
         "(--optimizer-cpu-offload), and Megatron-LM has no parameter "
         "offload";
}

LogicalResult emitMegatron(ModuleOp module, llvm::raw_ostream &os,
                           const LaunchOptions &options) {
  FailureOr<Materialized> found = findMeshMaterialized(module);
  if (failed(found))
    return failure();
  Materialized &m = *found;
  JobOp job = m.job;
  const cost::Strategy &s = m.strategy;
  const cost::Layout &layout = s.layout;
  const int64_t world = m.worldSize;
  if (std::string why = megatronLimit(job.getMethod()); !why.empty())
    return job.emitError("training.method: ") << why;
  const Precision precision = job.getPrecision();
  if (precision == Precision::Bf16 || precision == Precision::Fp8Bf16)
    return job.emitError("training.precision ")
           << ::swift::plan::toString(precision)
           << ": Megatron-LM keeps fp32 main weights under --bf16; use "
              "bf16-mixed (or fp8-mixed)";
  if (s.offload != cost::Offload::None)
    return job.emitError("strategy.offload: ")
           << megatronOffloadLimit() << "; use offload none";
  bool mlpBias = false;
  const plan::ModelConfig c = m.model.planModel(&mlpBias);
  if (c.oBias || mlpBias)
    return job.emitError("model: Megatron-LM's --disable-bias-linear drops "
                         "every linear bias and --add-qkv-bias restores only "
                         "q/k/v's; this model has output or MLP biases");
  if (c.ropeTheta != std::floor(c.ropeTheta))
    return job.emitError("model.rope_theta: Megatron-LM's --rotary-base is an "
                         "integer, and the model's is ")
           << exactNumber(c.ropeTheta);
  plan::RopeScaling llama3;
  llama3.type = plan::RopeType::Llama3;
  llama3.factor = c.ropeScaling.factor;
  if (c.ropeScaling.type == plan::RopeType::Linear ||
      (c.ropeScaling.type == plan::RopeType::Llama3 &&
       !(c.ropeScaling == llama3)))
    return job.emitError(
        "model.rope_scaling: Megatron-LM's --use-rope-scaling is llama3's "
        "with low_freq_factor 1, high_freq_factor 4 and "
        "original_max_position_embeddings 8192 only");
  // Pipeline chunks: an even split of the layers, or of the layers with
  // the embedding and the loss counted as one each.
  const int64_t chunks =
      layout.pp * (layout.pp > 1 ? layout.virtualStages : 1);
  bool accountForEnds = false;
  if (layout.pp > 1 && c.numLayers % chunks != 0) {
    if ((c.numLayers + 2) % chunks != 0)
      return job.emitError("strategy.pp: Megatron-LM splits ")
             << c.numLayers << " layers evenly over " << chunks
             << " pipeline chunks (pp x virtual_stages), or " << c.numLayers
             << " + 2 with the embedding and loss counted as layers; neither "
                "divides";
    accountForEnds = true;
  }
  if (layout.pp > 1 && s.checkpointing == cost::Checkpointing::Full &&
      s.checkpointLayers >= 0 && s.checkpointLayers != c.numLayers)
    return job.emitError("strategy.checkpoint_layers: Megatron-LM's block "
                         "recompute takes the first k layers of every "
                         "pipeline stage, not of the model; with pp > 1 "
                         "checkpoint every layer or none");
  const int64_t seq = job.getSequenceLength();
  const int64_t divisor = layout.tp * (layout.cp > 1 ? 2 * layout.cp : 1);
  if (seq % divisor != 0)
    return job.emitError("training.sequence_length ")
           << seq << ": Megatron-LM needs it divisible by tp x 2 x cp ("
           << divisor << ")";
  plan::TrainingConfig t;
  readOptimizerSettings(job, t);
  const uint64_t seedLimit = 0xffffffffull - 100 * uint64_t(layout.pp - 1);
  if (t.seed > seedLimit)
    return job.emitError("training.seed: Megatron-LM seeds numpy with seed + "
                         "100 x pipeline rank, below 2^32: at most ")
           << seedLimit << ", and the job's is " << t.seed;

  std::vector<Flag> flags = {
      // The model, as HF's config.json gives it.
      {"num-layers", std::to_string(c.numLayers)},
      {"hidden-size", std::to_string(c.hiddenSize)},
      {"ffn-hidden-size", std::to_string(c.intermediateSize)},
      {"num-attention-heads", std::to_string(c.numHeads)},
  };
  if (c.numKvHeads != c.numHeads) {
    flags.push_back(on("group-query-attention"));
    flags.push_back({"num-query-groups", std::to_string(c.numKvHeads)});
  }
  flags.push_back({"kv-channels", std::to_string(c.headDim)});
  flags.push_back({"seq-length", std::to_string(seq)});
  flags.push_back({"max-position-embeddings", std::to_string(seq)});
  flags.push_back({"position-embedding-type", "rope"});
  flags.push_back({"rotary-base", std::to_string(int64_t(c.ropeTheta))});
  if (c.ropeScaling.type == plan::RopeType::Llama3) {
    flags.push_back(on("use-rope-scaling"));
    flags.push_back({"rope-scaling-factor", exactNumber(c.ropeScaling.factor)});
  }
  flags.push_back(on("swiglu"));
  flags.push_back({"normalization", "RMSNorm"});
  flags.push_back({"norm-epsilon", exactNumber(c.rmsNormEps)});
  flags.push_back(on("disable-bias-linear"));
  if (c.qkvBias)
    flags.push_back(on("add-qkv-bias"));
  if (c.qkNorm)
    flags.push_back(on("qk-layernorm"));
  if (!c.tieWordEmbeddings)
    flags.push_back(on("untie-embeddings-and-output-weights"));
  flags.push_back({"attention-dropout", "0"});
  flags.push_back({"hidden-dropout", "0"});
  std::optional<StringRef> source = m.model.getSource();
  flags.push_back({"tokenizer-type", "HuggingFaceTokenizer"});
  flags.push_back({"tokenizer-model", source ? source->str() : "MODEL"});

  // The layout.
  flags.push_back({"tensor-model-parallel-size", std::to_string(layout.tp)});
  if (layout.tp > 1) {
    flags.push_back(on("sequence-parallel"));
    flags.push_back(on("tp-comm-overlap"));
  }
  flags.push_back({"pipeline-model-parallel-size", std::to_string(layout.pp)});
  if (layout.pp > 1 && layout.virtualStages > 1)
    flags.push_back({"num-virtual-stages-per-pipeline-rank",
                     std::to_string(layout.virtualStages)});
  if (accountForEnds) {
    flags.push_back(on("account-for-embedding-in-pipeline-split"));
    flags.push_back(on("account-for-loss-in-pipeline-split"));
  }
  flags.push_back({"context-parallel-size", std::to_string(layout.cp)});
  if (layout.cp > 1)
    flags.push_back({"cp-comm-type",
                     layout.cpKind == plan::ContextParallel::AllGather
                         ? "allgather"
                     : layout.cpKind == plan::ContextParallel::AllToAll
                         ? "a2a"
                         : "p2p"});
  // Data parallelism.
  const bool fsdp = s.zero >= 2;
  if (s.zero == 1)
    flags.push_back(on("use-distributed-optimizer"));
  if (fsdp) {
    flags.push_back(on("use-megatron-fsdp"));
    flags.push_back({"data-parallel-sharding-strategy",
                     s.zero == 3 ? "optim_grads_params" : "optim_grads"});
    flags.push_back({"ckpt-format", "fsdp_dtensor"});
  }
  if (s.zero >= 1 && layout.replicas(world) > 1)
    flags.push_back({"num-distributed-optimizer-instances",
                     std::to_string(layout.replicas(world))});
  flags.push_back(on("overlap-grad-reduce"));
  if (s.zero >= 1)
    flags.push_back(on("overlap-param-gather"));
  flags.push_back({"micro-batch-size", std::to_string(s.microBatchSize)});
  flags.push_back(
      {"global-batch-size", std::to_string(job.getGlobalBatchSize())});

  // Recompute.
  switch (s.checkpointing) {
  case cost::Checkpointing::None:
    break;
  case cost::Checkpointing::Selective:
    flags.push_back({"recompute-granularity", "selective"});
    break;
  case cost::Checkpointing::Full: {
    const bool every = s.checkpointLayers < 0 || s.checkpointLayers == c.numLayers;
    flags.push_back({"recompute-granularity", "full"});
    flags.push_back({"recompute-method", every ? "uniform" : "block"});
    flags.push_back({"recompute-num-layers",
                     std::to_string(every ? 1 : s.checkpointLayers)});
    break;
  }
  }
  // Precision: bf16 compute with fp32 main weights; FP8 GEMMs in the
  // decoder's linears with per-tensor scales from the current amax.
  if (precision != Precision::Fp32)
    flags.push_back(on("bf16"));
  if (plan::fp8Gemms(precision)) {
    flags.push_back({"fp8-format", "hybrid"});
    flags.push_back({"fp8-recipe", "tensorwise"});
  }
  // AdamW (Megatron's adam decouples weight decay; it leaves biases and
  // norm weights undecayed, as swift-run) and its schedule.
  const double lr = t.optimizer.lr;
  flags.push_back({"lr", exactNumber(lr)});
  const plan::LrScheduleConfig &schedule = t.lrSchedule;
  flags.push_back({"lr-decay-style",
                   schedule.decay == plan::LrDecay::Constant ? "constant"
                   : schedule.decay == plan::LrDecay::Linear ? "linear"
                                                             : "cosine"});
  if (schedule.decay != plan::LrDecay::Constant)
    flags.push_back({"min-lr", exactNumber(lr * schedule.minLrRatio)});
  flags.push_back({"lr-warmup-iters", std::to_string(schedule.warmupSteps)});
  flags.push_back({"weight-decay", exactNumber(t.optimizer.weightDecay)});
  flags.push_back({"adam-beta1", exactNumber(t.optimizer.beta1)});
  flags.push_back({"adam-beta2", exactNumber(t.optimizer.beta2)});
  flags.push_back({"adam-eps", exactNumber(t.optimizer.eps)});
  flags.push_back({"clip-grad", exactNumber(t.maxGradNorm.value_or(0.0))});
  flags.push_back({"seed", std::to_string(t.seed)});
  // Placeholders the comments explain.
  flags.push_back({"train-iters", "STEPS"});
  flags.push_back({"data-path", "DATA"});
  flags.push_back({"load", "CHECKPOINT"});
  flags.push_back(on("finetune"));
  flags.push_back({"save", "SAVE_DIR"});

  const int64_t nodes = m.cluster.getNodes();
  const int64_t perNode = m.cluster.getGpusPerNode();
  os << "# " << kVersion << ": pretrain_gpt.py\n";
  os << llvm::formatv("# swift-plan: {0} node(s) x {1} GPU(s), {2}; {3}\n",
                      nodes, perNode, describeLayout(layout, world),
                      cost::describe(s));
  if (!source)
    os << "# MODEL: the model's HF directory or hub id (its tokenizer)\n";
  os << "# DATA: a Megatron indexed dataset prefix (tools/preprocess_data.py "
        "with the same tokenizer); STEPS: the run's optimizer steps (the lr "
        "decays over them)\n";
  os << "# CHECKPOINT: the HF weights converted to Megatron's format"
     << (fsdp ? " (fsdp_dtensor: Megatron-FSDP reads and writes no other)"
              : "")
     << "; SAVE_DIR: where checkpoints go\n";
  if (nodes > 1)
    os << "# On every node, NODE_RANK 0.." << nodes - 1
       << ", with MASTER_ADDR set to node 0's address:\n";
  if (!fsdp && (layout.tp > 1 || layout.cp > 1))
    os << "CUDA_DEVICE_MAX_CONNECTIONS=1 ";
  os << "torchrun --nproc_per_node " << perNode << " --nnodes " << nodes;
  if (nodes > 1)
    os << " --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port "
       << options.masterPort;
  os << " pretrain_gpt.py" << commandLine(flags, "  ") << "\n";
  return success();
}

} // namespace swift::emit
