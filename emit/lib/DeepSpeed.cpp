//===- DeepSpeed.cpp - ds_config.json for the materialized strategy -------===//
//
// Field names and units follow DeepSpeed's config-json documentation:
// bucket sizes and thresholds count elements, not bytes; offload blocks
// live under zero_optimization; train_batch_size must equal
// micro-batch x accumulation x world size or DeepSpeed refuses the config.
//
//===----------------------------------------------------------------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

namespace {

// The schedule sizes buckets in fp32 gradient bytes.
constexpr int64_t kGradBytes = 4;

// HF Trainer's max_grad_norm default, kept when the job sets no
// training.max_grad_norm.
constexpr double kGradientClipping = 1.0;

/// "optimizer" and (unless constant without warmup) "scheduler" from the
/// job's #swift.adamw. DeepSpeed's schedulers step once per optimizer step:
/// WarmupLR (constant), WarmupDecayLR (linear, decaying to warmup_min_lr),
/// WarmupCosineLR (cosine to cos_min_ratio); warmup_type linear as HF's.
/// One difference to swift-run (docs/plan-schema.md): WarmupDecayLR warms
/// up from warmup_min_lr, so linear with min_lr_ratio > 0 starts its warmup
/// at lr * min_lr_ratio instead of 0.
/// total_num_steps is "auto": HF Trainer's DeepSpeed integration (the
/// training script of --emit launch) fills it from its max_steps.
void addOptimizer(llvm::json::Object &config, OptimizerSettingsAttr o) {
  const double lr = o.getLr().convertToDouble();
  config["optimizer"] = llvm::json::Object{
      {"type", "AdamW"},
      {"params",
       llvm::json::Object{
           {"lr", lr},
           {"betas", llvm::json::Array{o.getBeta1().convertToDouble(),
                                       o.getBeta2().convertToDouble()}},
           {"eps", o.getEps().convertToDouble()},
           {"weight_decay", o.getWeightDecay().convertToDouble()}}}};
  const int64_t warmup = o.getWarmupSteps();
  const double minRatio = o.getMinLrRatio().convertToDouble();
  llvm::json::Object params{{"warmup_num_steps", warmup},
                            {"warmup_type", "linear"}};
  StringRef type;
  switch (o.getDecay()) {
  case LrDecay::Constant:
    if (warmup == 0)
      return;
    type = "WarmupLR";
    params["warmup_min_lr"] = 0.0;
    params["warmup_max_lr"] = lr;
    break;
  case LrDecay::Linear:
    type = "WarmupDecayLR";
    params["warmup_min_lr"] = lr * minRatio;
    params["warmup_max_lr"] = lr;
    params["total_num_steps"] = "auto";
    break;
  case LrDecay::Cosine:
    type = "WarmupCosineLR";
    params["warmup_min_ratio"] = 0.0;
    params["cos_min_ratio"] = minRatio;
    params["total_num_steps"] = "auto";
    break;
  }
  config["scheduler"] =
      llvm::json::Object{{"type", type}, {"params", std::move(params)}};
}

llvm::json::Object offloadTo(StringRef device) {
  // Pinned host buffers make the PCIe copies asynchronous.
  return llvm::json::Object{{"device", device}, {"pin_memory", true}};
}

} // namespace

FailureOr<llvm::json::Object> deepSpeedConfig(ModuleOp module) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m))
    return failure();
  const cost::Strategy &s = m->strategy;
  ScheduleOp schedule = m->schedule;
  const int64_t bucketElements = *schedule.getBucketBytes() / kGradBytes;

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
    // Prefetch what the schedule gathers ahead: `prefetch_depth` decoder
    // layers, the largest unit that recurs.
    int64_t largestLayer = 0;
    for (UnitOp unit : schedule.getUnits())
      if (unit.getKind() == UnitKind::Decoder)
        largestLayer = std::max<int64_t>(largestLayer, unit.getParameters());
    zero["stage3_prefetch_bucket_size"] =
        *schedule.getPrefetchDepth() * largestLayer;
    // The schedule gathers and releases every unit, small ones included.
    zero["stage3_param_persistence_threshold"] = 0;
  }
  if (s.offload != cost::Offload::None)
    zero["offload_optimizer"] = offloadTo("cpu");
  if (s.offload == cost::Offload::OptimizerAndParams)
    zero["offload_param"] = offloadTo("cpu");

  const int64_t micro = s.microBatchSize, accumulation = s.gradientAccumulation;
  // bf16-mixed and pure bf16 both compute in bf16; DeepSpeed's bf16 mode
  // keeps fp32 master weights in its optimizer (bf16-mixed semantics).
  const bool bf16 = m->job.getPrecision() != Precision::Fp32;
  OptimizerSettingsAttr settings = m->job.getOptimizerSettingsAttr();
  double clipping = kGradientClipping;
  if (settings && settings.getMaxGradNorm()) // 0: no clipping, as DeepSpeed
    clipping = settings.getMaxGradNorm()->convertToDouble();
  llvm::json::Object config{
      {"train_batch_size", micro * accumulation * m->worldSize},
      {"train_micro_batch_size_per_gpu", micro},
      {"gradient_accumulation_steps", accumulation},
      {"gradient_clipping", clipping},
      {"bf16", llvm::json::Object{{"enabled", bf16}}},
      {"fp16", llvm::json::Object{{"enabled", false}}},
      {"zero_optimization", std::move(zero)},
  };
  if (settings)
    addOptimizer(config, settings);
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
