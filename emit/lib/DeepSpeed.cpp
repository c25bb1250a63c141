//===- DeepSpeed.cpp - ds_config.json for the materialized strategy -------===//
//
// A config for DeepSpeed under the HF Trainer (or accelerate, or ms-swift,
// which run it the same way), as DeepSpeed's config models spell it
// (test/data/deepspeed/ds_config_schema.json names the version):
//  - every value the Trainer fills from its TrainingArguments is "auto" —
//    batch sizes, accumulation, gradient_clipping, bf16/fp16 and AdamW's
//    parameters — and trainerFlags() (Trainer.cpp) passes those arguments,
//    so the config and the command line agree by construction;
//  - no "scheduler": the Trainer then builds its own from
//    --lr_scheduler_type, the schedule swift-run follows;
//  - the optimizer that gives swift-run's update (deepSpeedOwnsOptimizer):
//    the Trainer's own AdamW, with HF's parameter groups (no weight decay
//    on biases and norm weights), unless the config must name DeepSpeed's
//    (offloading needs its CPU Adam) or DeepSpeed's gives the same update
//    (no weight decay, or LoRA, whose adapters all decay); DeepSpeed's
//    decays every parameter it is given, one group
//    (deepSpeedUpdateDifference says so where that differs);
//  - what the Trainer leaves alone comes from the schedule: bucket sizes
//    in elements of the gradient dtype, ZeRO-3's prefetch, live-parameter
//    and reuse limits per the plan's units, 16-bit weights gathered on save.
//
//===----------------------------------------------------------------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

namespace {

/// The Trainer fills it from its arguments (HfTrainerDeepSpeedConfig).
constexpr const char *kAuto = "auto";

llvm::json::Object offloadTo(StringRef device) {
  // Pinned host buffers make the PCIe copies asynchronous.
  return llvm::json::Object{{"device", device}, {"pin_memory", true}};
}

/// The job's weight decay (plan.json's default, 0, without #swift.adamw).
double weightDecay(JobOp job) {
  ::swift::plan::TrainingConfig t;
  readOptimizerSettings(job, t);
  return t.optimizer.weightDecay;
}

/// Whether the config names DeepSpeed's optimizer (see the file comment).
/// Under the HF Trainer, a config with an "optimizer" section makes
/// deepspeed_init hand DeepSpeed every trainable parameter as one group
/// (transformers' deepspeed_optim_sched: DummyOptim(params=...)), so
/// weight decay reaches biases and norm weights; without one the Trainer
/// builds its own (create_optimizer: get_decay_parameter_names' groups).
bool deepSpeedOwnsOptimizer(Materialized m) {
  return m.strategy.offload != cost::Offload::None ||
         weightDecay(m.job) == 0 || m.job.getMethod() != Method::Full;
}

} // namespace

std::string deepSpeedUpdateDifference(ModuleOp module) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m) || !deepSpeedOwnsOptimizer(*m) ||
      m->job.getMethod() != Method::Full || weightDecay(m->job) == 0)
    return "";
  return "weight decay: offloading runs DeepSpeed's CPU AdamW (ds_config's "
         "optimizer), which decays every parameter; swift-run and the HF "
         "Trainer alone leave biases and norm weights undecayed, so the "
         "updates differ (set weight_decay 0, or plan without offload, for "
         "the same update)";
}

FailureOr<llvm::json::Object> deepSpeedConfig(ModuleOp module) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m))
    return failure();
  const cost::Strategy &s = m->strategy;
  ScheduleOp schedule = m->schedule;
  // DeepSpeed's buckets hold gradients in the parameters' dtype: bf16 under
  // bf16 (mixed or pure), fp32 otherwise.
  const bool bf16 = m->job.getPrecision() != Precision::Fp32;
  const int64_t gradientBytes = bf16 ? 2 : 4;
  const int64_t bucketElements = *schedule.getBucketBytes() / gradientBytes;

  llvm::json::Object zero{
      {"stage", s.zero},
      // Reductions run on their own stream while backward continues, as
      // the schedule's communication stream does.
      {"overlap_comm", true},
      {"contiguous_gradients", true},
      {"reduce_bucket_size", bucketElements},
  };
  if (s.zero >= 1)
    zero["reduce_scatter"] = true;
  if (s.zero == 1 || s.zero == 2) {
    // The updated parameters are all-gathered after the step.
    zero["allgather_partitions"] = true;
    zero["allgather_bucket_size"] = bucketElements;
  }
  if (s.zero == 3) {
    // The plan gathers a unit, computes, releases it, with `prefetch_depth`
    // decoder layers gathered ahead: at most 1 + depth layers are whole at
    // once. A layer's parameters are reused only within its recompute and
    // backward, whose uses of one parameter DeepSpeed sees up to two
    // layers' worth of parameters apart; nothing is kept across layers.
    int64_t largestLayer = 0;
    for (UnitOp unit : schedule.getUnits())
      if (unit.getKind() == UnitKind::Decoder)
        largestLayer = std::max<int64_t>(largestLayer, unit.getParameters());
    const int64_t depth = *schedule.getPrefetchDepth();
    zero["stage3_prefetch_bucket_size"] = depth * largestLayer;
    zero["stage3_max_live_parameters"] = (1 + depth) * largestLayer;
    zero["stage3_max_reuse_distance"] = 2 * largestLayer;
    // The schedule gathers and releases every unit, small ones included.
    zero["stage3_param_persistence_threshold"] = 0;
    // Without it a ZeRO-3 save writes no usable model (only the shards).
    zero["stage3_gather_16bit_weights_on_model_save"] = true;
    // Shard groups (strategy.dp_shard) are ZeRO++ hpZ here: a secondary
    // partition of the weights over groups of that many consecutive ranks,
    // which the gathers after the step's first forward read (the states
    // stay partitioned over every rank; cost::unsupportedReason refuses
    // shard groups at ZeRO 0-2 on DeepSpeed).
    if (s.layout.replicas(m->worldSize) > 1)
      zero["zero_hpz_partition_size"] = s.layout.shardGroup(m->worldSize);
  }
  if (s.offload != cost::Offload::None)
    zero["offload_optimizer"] = offloadTo("cpu");
  if (s.offload == cost::Offload::OptimizerAndParams)
    zero["offload_param"] = offloadTo("cpu");

  llvm::json::Object config{
      {"train_batch_size", kAuto},
      {"train_micro_batch_size_per_gpu", kAuto},
      {"gradient_accumulation_steps", kAuto},
      {"gradient_clipping", kAuto},
      {"bf16", llvm::json::Object{{"enabled", kAuto}}},
      {"fp16", llvm::json::Object{{"enabled", kAuto}}},
      {"zero_optimization", std::move(zero)},
  };
  if (deepSpeedOwnsOptimizer(*m))
    config["optimizer"] = llvm::json::Object{
        {"type", "AdamW"},
        {"params", llvm::json::Object{{"lr", kAuto},
                                      {"betas", kAuto},
                                      {"eps", kAuto},
                                      {"weight_decay", kAuto}}}};
  return config;
}

LogicalResult emitDeepSpeedConfig(ModuleOp module, llvm::raw_ostream &os) {
  FailureOr<llvm::json::Object> config = deepSpeedConfig(module);
  if (failed(config))
    return failure();
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(*config))) << "\n";
  return success();
}

} // namespace swift::emit
