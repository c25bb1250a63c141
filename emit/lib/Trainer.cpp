//===- Trainer.cpp - HF Trainer and ms-swift command lines ----------------===//
//
// The HF Trainer runs a ds_config through TrainingArguments: every value it
// fills from its own arguments is "auto" in the config (DeepSpeed.cpp), and
// the command line passes those arguments, from the same IR, so the two
// cannot disagree. ms-swift's `swift sft` takes the same TrainingArguments
// flags plus its own (model, train type, LoRA, quantization, max_length).
// Flag names and spellings: test/data/hf/training_arguments.json and
// test/data/ms-swift/sft_arguments.json, which the tests check against.
//
//===----------------------------------------------------------------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

#include "swift/Cost/Search.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

namespace {

const char *boolean(bool b) { return b ? "true" : "false"; }

/// HF's scheduler for the job's schedule (transformers' SchedulerType), or
/// an error: HF has no linear decay to a non-zero floor without knowing
/// the run's length up front.
FailureOr<std::vector<Flag>> scheduleFlags(JobOp job,
                                           const plan::LrScheduleConfig &lr) {
  std::vector<Flag> flags;
  switch (lr.decay) {
  case plan::LrDecay::Constant:
    flags.push_back({"lr_scheduler_type",
                     lr.warmupSteps ? "constant_with_warmup" : "constant"});
    break;
  case plan::LrDecay::Linear:
    if (lr.minLrRatio > 0)
      return job.emitError(
          "training.lr_schedule: the HF Trainer decays linearly to 0 only; "
          "linear decay to min_lr_ratio ")
             << exactNumber(lr.minLrRatio)
             << " has no HF schedule (use decay cosine, which HF's "
                "cosine_with_min_lr floors, or min_lr_ratio 0)";
    flags.push_back({"lr_scheduler_type", "linear"});
    break;
  case plan::LrDecay::Cosine:
    if (lr.minLrRatio > 0) {
      flags.push_back({"lr_scheduler_type", "cosine_with_min_lr"});
      flags.push_back({"lr_scheduler_kwargs",
                       "{\"min_lr_rate\": " + exactNumber(lr.minLrRatio) + "}"});
    } else {
      flags.push_back({"lr_scheduler_type", "cosine"});
    }
    break;
  }
  flags.push_back({"warmup_steps", std::to_string(lr.warmupSteps)});
  return flags;
}

/// A shell word: quoted when it has anything a shell would read.
std::string shellWord(const std::string &word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                             "VWXYZ0123456789-_./:=+,@") == std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

} // namespace

FailureOr<std::vector<Flag>> trainerFlags(ModuleOp module) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m))
    return failure();
  const cost::Strategy &s = m->strategy;
  plan::TrainingConfig t;
  readOptimizerSettings(m->job, t);
  std::vector<Flag> flags = {
      {"per_device_train_batch_size", std::to_string(s.microBatchSize)},
      {"gradient_accumulation_steps", std::to_string(s.gradientAccumulation)},
      // bf16-mixed and pure bf16 both compute in bf16 (the Trainer, like
      // DeepSpeed's bf16 mode, keeps fp32 master weights).
      {"bf16", boolean(m->job.getPrecision() != Precision::Fp32)},
      // Explicit: ms-swift turns fp16 on for --torch_dtype float32.
      {"fp16", "false"},
      {"gradient_checkpointing",
       boolean(s.checkpointing != cost::Checkpointing::None)},
      // The job's clipping; none is 0 (HF's default would clip at 1.0).
      {"max_grad_norm", exactNumber(t.maxGradNorm.value_or(0.0))},
      {"learning_rate", exactNumber(t.optimizer.lr)},
      {"adam_beta1", exactNumber(t.optimizer.beta1)},
      {"adam_beta2", exactNumber(t.optimizer.beta2)},
      {"adam_epsilon", exactNumber(t.optimizer.eps)},
      {"weight_decay", exactNumber(t.optimizer.weightDecay)},
  };
  FailureOr<std::vector<Flag>> schedule = scheduleFlags(m->job, t.lrSchedule);
  if (failed(schedule))
    return failure();
  flags.insert(flags.end(), schedule->begin(), schedule->end());
  // HF's set_seed seeds numpy, which takes 32 bits.
  if (t.seed > 0xffffffffull)
    return m->job.emitError("training.seed: the HF Trainer's seed is at most "
                            "4294967295 (numpy's), and the job's is ")
           << t.seed;
  flags.push_back({"seed", std::to_string(t.seed)});
  return flags;
}

std::string commandLine(const std::vector<Flag> &flags,
                        const std::string &indent) {
  std::string text;
  for (const Flag &f : flags) {
    text += " \\\n" + indent + "--" + f.name;
    if (!f.list) {
      text += " " + shellWord(f.value);
      continue;
    }
    std::istringstream words(f.value);
    for (std::string word; words >> word;)
      text += " " + shellWord(word);
  }
  return text;
}

LogicalResult emitMsSwift(ModuleOp module, llvm::raw_ostream &os,
                          const LaunchOptions &options) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m))
    return failure();
  FailureOr<std::vector<Flag>> trainer = trainerFlags(module);
  if (failed(trainer))
    return failure();
  JobOp job = m->job;
  const cost::Strategy &s = m->strategy;
  if (s.zero > msSwiftMaxZero(job.getMethod()))
    return job.emitError(msSwiftZeroLimit(job.getMethod()))
           << "; use strategy.zero 0-" << msSwiftMaxZero(job.getMethod());
  const int64_t nodes = m->cluster.getNodes();
  const int64_t perNode = m->cluster.getGpusPerNode();

  std::vector<Flag> flags;
  std::optional<StringRef> source = m->model.getSource();
  flags.push_back({"model", source ? source->str() : "MODEL"});
  // A preset's source is an HF Hub id; ms-swift looks ids up on ModelScope
  // unless told otherwise.
  if (source && !llvm::sys::path::is_absolute(*source))
    flags.push_back({"use_hf", "true"});
  flags.push_back({"dataset", "DATASET"});
  const Method method = job.getMethod();
  // ms-swift >= 4.1's name (3.x: --train_type).
  flags.push_back({"tuner_type", method == Method::Full ? "full" : "lora"});
  if (method != Method::Full) {
    LoraAttr lora = job.getLoraAttr();
    const double alpha = lora.getAlpha().convertToDouble();
    if (alpha != std::floor(alpha))
      return job.emitError("training.lora.alpha: ms-swift's --lora_alpha is "
                           "an integer, and the job's is ")
             << exactNumber(alpha);
    flags.push_back({"lora_rank", std::to_string(lora.getRank())});
    flags.push_back({"lora_alpha", exactNumber(alpha)});
    flags.push_back(
        {"lora_dropout", exactNumber(lora.getDropout().convertToDouble())});
    std::string targets;
    if (lora.targets("all-linear")) {
      targets = "all-linear";
    } else {
      for (const std::string &name : plan::loraTargetNames())
        if (lora.targets(name))
          targets += (targets.empty() ? "" : " ") + name;
    }
    flags.push_back({"target_modules", targets, /*list=*/true});
  }
  if (method == Method::QLora) {
    // bitsandbytes NF4 with double-quantized absmax, computing in bf16: the
    // scheme swift prices (block size 64 is bitsandbytes' fixed one).
    flags.push_back({"quant_method", "bnb"});
    flags.push_back({"quant_bits", "4"});
    flags.push_back({"bnb_4bit_quant_type", "nf4"});
    flags.push_back({"bnb_4bit_use_double_quant", "true"});
    flags.push_back({"bnb_4bit_compute_dtype",
                     job.getPrecision() == Precision::Fp32 ? "float32"
                                                           : "bfloat16"});
  }
  flags.push_back({"torch_dtype", job.getPrecision() == Precision::Fp32
                                      ? "float32"
                                      : "bfloat16"});
  flags.push_back({"max_length", std::to_string(job.getSequenceLength())});
  // Samples packed into windows of max_length, as planned (ms-swift packs
  // with flash attention only).
  if (job.getPacking()) {
    flags.push_back({"packing", "true"});
    flags.push_back({"attn_impl", "flash_attn"});
  }
  // Always DeepSpeed, also at ZeRO-0: that is what was priced (fp32 master
  // weights under bf16); without it ms-swift would train plain DDP.
  flags.push_back({"deepspeed", options.deepSpeedConfigPath});
  flags.insert(flags.end(), trainer->begin(), trainer->end());

  os << llvm::formatv("# ms-swift: {0} node(s) x {1} GPU(s), {2}\n", nodes,
                      perNode, cost::describe(s));
  // The config of this very strategy: --emit deepspeed with its decisions
  // pinned, so it cannot choose another (e.g. ZeRO-3 for QLoRA).
  os << "# " << options.deepSpeedConfigPath
     << ": swift-plan JOB --emit deepspeed -o " << options.deepSpeedConfigPath
     << " --set strategy.zero=" << s.zero << " --set strategy.offload="
     << plan::toString(s.offload) << " --set strategy.checkpointing="
     << plan::toString(s.checkpointing) << " --set training.micro_batch_size="
     << s.microBatchSize << " --set strategy.bucket_mib="
     << exactNumber(double(*m->schedule.getBucketBytes()) / (1 << 20));
  if (s.layout.replicas(m->worldSize) > 1) // ZeRO++ hpZ's groups
    os << " --set strategy.dp_shard=" << s.layout.shardGroup(m->worldSize);
  os << "\n";
  os << "# DATASET: your data (a hub id or a local JSONL file); add --max_steps "
        "N or --num_train_epochs N\n";
  if (!source)
    os << "# MODEL: the HF model directory or hub id (the job gives the "
          "model inline)\n";
  // Both set: with several GPUs visible and no NPROC_PER_NODE, ms-swift
  // splits the model across them instead of running data parallel.
  std::string devices;
  for (int64_t g = 0; g < perNode; ++g)
    devices += (g ? "," : "") + std::to_string(g);
  std::string env = "NPROC_PER_NODE=" + std::to_string(perNode) +
                    " CUDA_VISIBLE_DEVICES=" + devices;
  if (nodes > 1) {
    os << "# On every node, NODE_RANK 0.." << nodes - 1
       << ", with MASTER_ADDR set to node 0's address:\n";
    env += " NNODES=" + std::to_string(nodes) +
           " NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=" +
           std::to_string(options.masterPort);
  }
  os << env << " swift sft" << commandLine(flags, "  ") << "\n";
  return success();
}

int msSwiftMaxZero(Method method) { return method == Method::QLora ? 2 : 3; }

std::string msSwiftZeroLimit(Method method) {
  return msSwiftMaxZero(method) == 3
             ? ""
             : "ms-swift cannot run QLoRA under ZeRO-3 (bitsandbytes 4-bit "
               "weights are not partitioned there; modelscope/ms-swift#8267)";
}

} // namespace swift::emit
