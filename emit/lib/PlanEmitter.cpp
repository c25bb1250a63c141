//===- PlanEmitter.cpp - plan.json for swift-run, from the IR alone -------===//
//
// Fills the schema's Plan (swift/Plan/Plan.h) from a materialized module:
// the model from its ops, the training step and world from the job and the
// cluster, the strategy and schedule the passes built (through
// ScheduleOp::translate() and planStrategy(), swift/Dialect/SwiftOps.h, the
// translation swift-verify-schedule checks), the estimate as `predicted`;
// the plan layer writes it with planToJson() and validates the text before
// it is printed. No plan.json field name is spelled here.
//
//===----------------------------------------------------------------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

LogicalResult emitPlan(ModuleOp module, llvm::raw_ostream &os) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m))
    return failure();
  JobOp job = m->job;
  if (job.getBackend() != Backend::SwiftRun)
    return job.emitError("plan.json is swift-run's input, but the job's backend is ")
           << plan::toString(job.getBackend())
           << "; use --emit deepspeed or --emit launch, or --set "
              "backend=swift-run";
  ModelOp model = m->model;
  bool mlpBias = false;
  plan::ModelConfig config = model.planModel(&mlpBias);
  if (mlpBias)
    return job.emitError("swift-run has no MLP biases (model mlp_bias: true)");
  EstimateAttr estimate = job.getEstimateAttr();
  if (!estimate)
    return job.emitOpError("has no estimate; run swift-estimate-cost before "
                           "emitting a plan");
  FailureOr<TranslatedSchedule> schedule = m->schedule.translate();
  if (failed(schedule))
    return failure();

  const cost::Strategy &s = m->strategy;
  plan::Plan plan;
  plan.model = config;
  if (std::optional<StringRef> weights = model.getWeights())
    plan.weights = plan::WeightsConfig{"safetensors", weights->str()};
  plan.training.sequenceLength = job.getSequenceLength();
  plan.training.globalBatchSize = job.getGlobalBatchSize();
  plan.training.microBatchSize = s.microBatchSize;
  plan.training.gradientAccumulation = s.gradientAccumulation;
  plan.training.precision = job.getPrecision();
  readOptimizerSettings(job, plan.training);
  plan.training.packing = job.getPacking();
  if (std::optional<Truncation> tr = job.getTruncation())
    plan.training.truncation = *tr;
  if (std::optional<LossOn> lo = job.getLossOn())
    plan.training.lossOn = *lo;
  // LoRA/QLoRA: the adapters' settings, targets resolved to the decoder
  // linears they name (all-linear: all of them), in the schema's order.
  plan.training.method = job.getMethod();
  if (job.getMethod() != Method::Full) {
    LoraAttr lora = job.getLoraAttr();
    plan::LoraConfig &l = plan.training.lora;
    l.rank = lora.getRank();
    l.alpha = lora.getAlpha().convertToDouble();
    l.dropout = lora.getDropout().convertToDouble();
    l.targets.clear();
    for (const std::string &name : plan::loraTargetNames())
      if (lora.targets(name))
        l.targets.push_back(name);
  }
  plan.world.size = m->worldSize;
  plan.world.gpusPerNode = m->cluster.getGpusPerNode();
  // The capacity planned for: swift-run caps its allocator there on a
  // larger GPU, so "fits on an 80 GB card" holds on a 141 GB one too.
  plan.world.gpuMemoryBytes = m->cluster.hardware().memoryBytes;
  plan.strategy = planStrategy(s, m->schedule);
  plan.schedule = std::move(schedule->schedule);
  plan.predicted.peakMemoryBytes = estimate.getPeakBytes();
  plan.predicted.stepSeconds = estimate.getStepSeconds().convertToDouble();
  plan.predicted.tokensPerSecond =
      estimate.getTokensPerSecond().convertToDouble();

  std::string error;
  std::string text = plan::checkedPlanJson(plan, "the emitted plan", error);
  if (text.empty())
    return job.emitError("the emitted plan does not pass the runtime's validation: ")
           << error;
  os << text;
  return success();
}

} // namespace swift::emit
