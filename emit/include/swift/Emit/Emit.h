//===- Emit.h - plan artifacts from a materialized module -------*- C++ -*-===//
//
// Emitters read a module after buildMaterializePipeline()
// (swift/Passes/Pipelines.h) has run on it: one swift.job with a complete
// strategy, its swift.model and swift.cluster, and the verified
// swift.schedule of that job. They translate, never decide: every number
// they write is in the IR. On a module without those they emit an error
// diagnostic (through the context's handler, located at the offending op)
// and return failure; nothing is written to the stream then.
//
// Typical use in swift-plan, after the pipeline succeeded:
//
//   if (failed(swift::emit::emitDeepSpeedConfig(module, os)))
//     return 2;
//   swift::emit::LaunchOptions opts;          // plan.json, ds_config.json, ...
//   opts.planPath = planFile;                 // the plan the commands run
//   if (failed(swift::emit::emitLaunch(module, os, opts)))
//     return 2;
//   if (failed(swift::emit::emitPlan(module, os)))   // plan.json
//     return 2;
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_EMIT_EMIT_H
#define SWIFT_EMIT_EMIT_H

#include "swift/Plan/Enums.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace swift::emit {

/// plan.json (swift/Plan/Plan.h's schema) for swift-run: the model as its
/// ops spell it, the training step and world from the job and cluster, the
/// strategy and schedule the passes built (ScheduleOp::translate() and
/// planStrategy(), swift/Dialect/SwiftOps.h), and swift.estimate as
/// `predicted`, written by plan::planToJson() and validated by the plan
/// layer's parser before anything is written (plan::checkedPlanJson()).
/// Fails on a job whose backend is not swift-run.
mlir::LogicalResult emitPlan(mlir::ModuleOp module, llvm::raw_ostream &os);

/// A DeepSpeed config (ds_config.json) for the same strategy, for the HF
/// Trainer: ZeRO stage, CPU offload of optimizer/parameters (pinned),
/// bucket sizes in elements of the gradient dtype, ZeRO-3 prefetch,
/// live-parameter and reuse limits and 16-bit gathering on save, AdamW
/// (DeepSpeed's where it must or may be: deepSpeedUpdateDifference);
/// "auto" for every value the Trainer fills from trainerFlags() (batch
/// sizes, accumulation, clipping, bf16/fp16, AdamW's parameters).
mlir::FailureOr<llvm::json::Object> deepSpeedConfig(mlir::ModuleOp module);
/// Where HF Trainer + DeepSpeed with deepSpeedConfig() updates the weights
/// differently from swift-run ("" where they agree): offloading needs
/// DeepSpeed's CPU AdamW, which decays every parameter, where swift-run
/// (and the Trainer's own optimizer, which the config uses otherwise)
/// leaves biases and norm weights undecayed. emitLaunch prints it.
std::string deepSpeedUpdateDifference(mlir::ModuleOp module);
/// deepSpeedConfig() pretty-printed, with a trailing newline.
mlir::LogicalResult emitDeepSpeedConfig(mlir::ModuleOp module,
                                        llvm::raw_ostream &os);

/// A command-line flag, `--name value`.
struct Flag {
  std::string name; // without the dashes
  std::string value;
  bool list = false; // the value's space-separated words are arguments each
};

/// The HF Trainer's TrainingArguments that run the strategy with the job's
/// hyper-parameters: per_device_train_batch_size,
/// gradient_accumulation_steps, bf16, gradient_checkpointing, max_grad_norm
/// (0 when the job does not clip), learning_rate, adam_beta1/2,
/// adam_epsilon, weight_decay, lr_scheduler_type (+ lr_scheduler_kwargs),
/// warmup_steps and seed. Every value the ds_config leaves "auto" comes
/// from here. Fails (with a diagnostic) on a schedule HF cannot run.
mlir::FailureOr<std::vector<Flag>> trainerFlags(mlir::ModuleOp module);

/// Each flag on its own continued line ("\\", newline, `indent`, then
/// `--name value`), values shell-quoted where a shell would read them.
std::string commandLine(const std::vector<Flag> &flags,
                        const std::string &indent);

/// What the launch commands refer to.
struct LaunchOptions {
  std::string planPath = "plan.json"; // swift-run's input
  std::string deepSpeedConfigPath = "ds_config.json";
  std::string trainingScript = "train.py"; // the hf/deepspeed entry point
  int masterPort = 29500;
  std::string torchtitanConfigPath = "job.toml"; // --job.config_file
};

/// Shell text (comments start with '#') launching the job on its cluster:
/// for backend swift-run, `swift-run PLAN --nproc-per-node N` on one node,
/// and for several nodes a torchrun command per node plus the equivalent
/// RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/MASTER_ADDR/MASTER_PORT
/// environment form; for backends hf and deepspeed, torchrun running the
/// HF Trainer script with trainerFlags() (and `--deepspeed CONFIG` for
/// deepspeed), the peft/bitsandbytes settings of LoRA/QLoRA in comments.
/// Fails on a job the Trainer cannot run (trainerFlags()).
mlir::LogicalResult emitLaunch(mlir::ModuleOp module, llvm::raw_ostream &os,
                               const LaunchOptions &options = {});

/// ms-swift's `swift sft` command line for the strategy (comments start
/// with '#'): --model (the job's HF directory or the preset's hub id),
/// --tuner_type full|lora (ms-swift >= 4.1's name) with --lora_rank/--lora_alpha/--lora_dropout/
/// --target_modules, bitsandbytes NF4 flags for qlora, --torch_dtype,
/// --max_length, --deepspeed CONFIG unless ZeRO-0 without offload, and
/// trainerFlags(); NPROC_PER_NODE and CUDA_VISIBLE_DEVICES (and NNODES,
/// NODE_RANK, MASTER_ADDR, MASTER_PORT on several nodes) in its
/// environment. Flags as test/data/ms-swift/sft_arguments.json records
/// them. Fails on QLoRA under ZeRO-3, which ms-swift cannot run.
mlir::LogicalResult emitMsSwift(mlir::ModuleOp module, llvm::raw_ostream &os,
                                const LaunchOptions &options = {});

/// The highest ZeRO stage ms-swift runs `method` at: QLoRA's bitsandbytes
/// 4-bit weights are not partitioned under ZeRO-3 (modelscope/ms-swift#8267),
/// so 2 for qlora, else 3. emitMsSwift refuses above it; swift-plan chooses
/// among the stages up to it.
int msSwiftMaxZero(swift::plan::Method method);
/// Why msSwiftMaxZero(method) is below 3 ("" when it is 3).
std::string msSwiftZeroLimit(swift::plan::Method method);

/// torchtitan's job TOML (--job.config_file) for the strategy, as
/// torchtitan v0.2.2's torchtitan/config/job_config.py spells it (the last
/// release with TOML job files; test/data/torchtitan records its keys; the
/// first line names the version): [model] (llama3 and the flavor with the
/// model's sizes, hf_assets_path), [training] (batch, sequence, clipping,
/// mixed precision, CPU offload), [parallelism] (the layout of
/// #swift.strategy: dp_replicate x dp_shard, tp, pp with its schedule, cp;
/// ZeRO-3 as FSDP2 resharding after forward, ZeRO-2 never resharding,
/// ZeRO-0 as DDP), [activation_checkpoint], [compile], FP8 as torchao's
/// float8 converter, [optimizer], [lr_scheduler], [checkpoint] (the
/// model's HF weights as the initial load) and [debug]; the torchrun line
/// in comments. Fails (with a diagnostic) on what torchtitan v0.2.2 cannot
/// run: LoRA/QLoRA (torchtitanLimit()), ZeRO-1, a model that is no llama3
/// flavor, optimizer-only offload, checkpointing the first k layers.
mlir::LogicalResult emitTorchtitan(mlir::ModuleOp module, llvm::raw_ostream &os,
                                   const LaunchOptions &options = {});

/// Megatron-LM's `pretrain_gpt.py` command line (Megatron-Core
/// core_v0.15.3's megatron/training/arguments.py; test/data/megatron
/// records its flags) under torchrun, for the strategy: the model's sizes,
/// the layout of #swift.strategy (tensor/sequence, pipeline with virtual
/// stages, context parallel), ZeRO-1 as the distributed optimizer and
/// ZeRO-2/3 as Megatron-FSDP (optim_grads / optim_grads_params), HSDP as
/// distributed-optimizer instances, recompute, bf16/FP8, AdamW and its lr
/// schedule, clipping, seed and batch sizes; comments name the placeholders
/// (DATA, STEPS, CHECKPOINT). Fails (with a diagnostic) on what Megatron
/// cannot run as planned: LoRA/QLoRA (megatronLimit()), offload, pure bf16
/// (no fp32 main weights), first-k checkpointing over several stages.
mlir::LogicalResult emitMegatron(mlir::ModuleOp module, llvm::raw_ostream &os,
                                 const LaunchOptions &options = {});

/// Why torchtitan v0.2.2 / Megatron-LM core_v0.15.3 cannot train `method`
/// ("" when they can: full fine-tuning). swift-plan refuses such a job
/// before planning (exit 2); the emitters refuse its IR.
std::string torchtitanLimit(swift::plan::Method method);
std::string megatronLimit(swift::plan::Method method);
/// Why emitMegatron refuses a strategy that offloads: swift-plan prices
/// --emit megatron without offload (a job fixing one exits 3 with it).
std::string megatronOffloadLimit();

} // namespace swift::emit

#endif // SWIFT_EMIT_EMIT_H
