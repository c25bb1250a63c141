//===- PlanEmitter.cpp - plan.json for swift-run, from the IR alone -------===//
//
// Fills the schema's Plan (swift/Plan/Plan.h) from a materialized module:
// the model from its ops, the training step and world from the job and the
// cluster, the strategy and schedule the passes built, the estimate as
// `predicted`; the plan layer then validates the whole before it is printed.
// No plan.json field name is spelled here.
//
//===----------------------------------------------------------------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

#include "swift/Plan/PlanWriter.h"

#include "llvm/Support/FormatVariadic.h"

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

namespace {

/// The parameter a linear's weight or bias comes from ("" when computed).
StringRef paramName(Value v) {
  auto param = v ? v.getDefiningOp<ParamOp>() : ParamOp();
  return param ? param.getName() : StringRef();
}

/// The decoder's configuration as its ops spell it: shapes of the embedding
/// table and the projections, attention and rotary attributes, which
/// optional parameters exist.
struct ReadModel {
  plan::ModelConfig config;
  bool mlpBias = false;
};

ReadModel readModel(ModelOp model) {
  ReadModel out;
  plan::ModelConfig &m = out.config;
  bool lmHead = false;
  model.walk([&](Operation *op) {
    if (auto repeat = dyn_cast<RepeatOp>(op)) {
      m.numLayers += repeat.getCount();
    } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      auto table = cast<RankedTensorType>(embedding.getTable().getType());
      m.vocabSize = table.getDimSize(0);
      m.hiddenSize = table.getDimSize(1);
    } else if (auto attention = dyn_cast<AttentionOp>(op)) {
      m.numHeads = attention.getNumHeads();
      m.numKvHeads = attention.getNumKvHeads();
      m.headDim = attention.getHeadDim();
    } else if (auto rope = dyn_cast<RopeOp>(op)) {
      m.ropeTheta = rope.getTheta().convertToDouble();
    } else if (auto norm = dyn_cast<RMSNormOp>(op)) {
      m.rmsNormEps = norm.getEpsilon().convertToDouble();
      m.qkNorm |= paramName(norm.getWeight()).contains("q_norm");
    } else if (auto linear = dyn_cast<LinearOp>(op)) {
      StringRef weight = paramName(linear.getWeight());
      bool bias = static_cast<bool>(linear.getBias());
      if (weight.starts_with("mlp.gate_proj"))
        m.intermediateSize = linear.getOutFeatures();
      if (weight.starts_with("self_attn.q_proj"))
        m.qkvBias = bias;
      if (weight.starts_with("self_attn.o_proj"))
        m.oBias = bias;
      if (weight.starts_with("mlp."))
        out.mlpBias |= bias;
      lmHead |= weight.starts_with("lm_head");
    }
  });
  m.tieWordEmbeddings = !lmHead;
  return out;
}

} // namespace

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
  auto model = dyn_cast_or_null<ModelOp>(
      SymbolTable::lookupSymbolIn(module, job.getModelAttr()));
  if (!model)
    return job.emitOpError("needs its model to emit a plan");
  ReadModel read = readModel(model);
  if (read.mlpBias)
    return job.emitError("swift-run has no MLP biases (model mlp_bias: true)");
  auto estimate = job->getAttrOfType<DictionaryAttr>("swift.estimate");
  if (!estimate)
    return job.emitOpError("has no swift.estimate; run swift-estimate-cost "
                           "before emitting a plan");
  FailureOr<llvm::json::Object> schedule = scheduleJson(module);
  if (failed(schedule))
    return failure();

  const cost::Strategy &s = m->strategy;
  plan::Plan plan;
  plan.model = read.config;
  plan.training.sequenceLength = job.getSequenceLength();
  plan.training.globalBatchSize = job.getGlobalBatchSize();
  plan.training.microBatchSize = s.microBatchSize;
  plan.training.gradientAccumulation = s.gradientAccumulation;
  plan.training.precision = job.getPrecision();
  plan.world.size = m->worldSize;
  plan.world.gpusPerNode = m->cluster.getGpusPerNode();
  plan.strategy.zero = s.zero;
  plan.strategy.offload = s.offload;
  plan.strategy.checkpointing = s.checkpointing;
  plan.strategy.checkpointLayers = s.checkpointLayers;
  plan.strategy.bucketBytes = *m->schedule.getBucketBytes();
  plan.strategy.prefetchDepth = static_cast<int>(*m->schedule.getPrefetchDepth());
  plan.predicted.peakMemoryBytes =
      estimate.getAs<IntegerAttr>("peak_bytes").getInt();
  plan.predicted.stepSeconds =
      estimate.getAs<FloatAttr>("step_seconds").getValueAsDouble();
  plan.predicted.tokensPerSecond =
      estimate.getAs<FloatAttr>("tokens_per_second").getValueAsDouble();

  std::string error;
  std::string text = plan::writePlan(
      plan, llvm::formatv("{0}", llvm::json::Value(std::move(*schedule))).str(),
      error);
  if (text.empty())
    return job.emitError("the emitted plan does not pass the runtime's validation: ")
           << error;
  os << text;
  return success();
}

} // namespace swift::emit
