//===- EmitPlan.cpp - plan.json for swift-run -----------------------------===//
//
// Fills the runtime's own Plan struct from the job and the facts the passes
// recorded, and lets swift::planner::writePlan add the materialized
// schedule and validate the whole with the runtime's parser.
//
//===----------------------------------------------------------------------===//

#include "EmitPlan.h"

#include "swift/Planner/Emit.h"
#include "swift/Planner/PlanWriter.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace swift::plan {
namespace {

namespace rt = ::swift::rt;

rt::Precision precision(const std::string &p) {
  return p == "bf16" ? rt::Precision::Bf16
                     : p == "fp32" ? rt::Precision::Fp32 : rt::Precision::Bf16Mixed;
}
rt::Offload offload(const std::string &o) {
  return o == "optimizer" ? rt::Offload::Optimizer
         : o == "optimizer+params" ? rt::Offload::OptimizerAndParams
                                   : rt::Offload::None;
}
rt::Checkpointing checkpointing(const std::string &c) {
  return c == "full" ? rt::Checkpointing::Full
         : c == "selective" ? rt::Checkpointing::Selective
                            : rt::Checkpointing::None;
}

} // namespace

std::string emitPlan(mlir::ModuleOp module, const planner::JobSpec &job,
                     const JobFacts &facts, llvm::raw_ostream &os) {
  const planner::ModelSpec &m = job.model;
  if (job.backend != "swift-run")
    return "plan.json is swift-run's input, but the job's backend is " +
           job.backend + "; use --emit deepspeed or --emit launch, or --set "
                         "backend=swift-run";
  if (m.mlpBias)
    return "swift-run has no MLP biases (model mlp_bias: true)";
  if (!facts.chosen || !facts.estimate)
    return "no strategy to emit";

  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic &d) {
    diagnostics += d.str();
    return mlir::success();
  });
  mlir::FailureOr<llvm::json::Object> schedule = emit::scheduleJson(module);
  if (failed(schedule))
    return "cannot emit the schedule: " + diagnostics;

  const StrategyFacts &s = *facts.chosen;
  rt::Plan plan;
  plan.model.hiddenSize = m.hiddenSize;
  plan.model.intermediateSize = m.intermediateSize;
  plan.model.numLayers = m.numHiddenLayers;
  plan.model.numHeads = m.numAttentionHeads;
  plan.model.numKvHeads = m.numKeyValueHeads;
  plan.model.headDim = m.headDim;
  plan.model.vocabSize = m.vocabSize;
  plan.model.tieWordEmbeddings = m.tieWordEmbeddings;
  plan.model.rmsNormEps = m.rmsNormEps;
  plan.model.ropeTheta = m.ropeTheta;
  plan.model.qkvBias = m.qkvBias;
  plan.model.oBias = m.oBias;
  plan.model.qkNorm = m.qkNorm;
  plan.training.sequenceLength = job.training.sequenceLength;
  plan.training.globalBatchSize = job.training.globalBatchSize;
  plan.training.microBatchSize = s.microBatchSize;
  plan.training.gradientAccumulation = s.gradientAccumulation;
  plan.training.precision = precision(job.training.precision);
  plan.world.size = job.cluster.numGpus();
  plan.world.gpusPerNode = job.cluster.gpusPerNode;
  plan.strategy.zero = static_cast<int>(s.zero);
  plan.strategy.offload = offload(s.offload);
  plan.strategy.checkpointing = checkpointing(s.checkpointing);
  plan.strategy.checkpointLayers = s.checkpointLayers;
  if (facts.bucketBytes)
    plan.strategy.bucketBytes = facts.bucketBytes;
  if (facts.prefetchDepth)
    plan.strategy.prefetchDepth = static_cast<int>(facts.prefetchDepth);
  plan.predicted.peakMemoryBytes = facts.estimate->peakBytes;
  plan.predicted.stepSeconds = facts.estimate->stepSeconds;
  plan.predicted.tokensPerSecond = facts.estimate->tokensPerSecond;

  std::string error;
  std::string text = planner::writePlan(
      plan, llvm::formatv("{0}", llvm::json::Value(std::move(*schedule))).str(), error);
  if (text.empty())
    return "the emitted plan does not pass the runtime's validation: " + error;
  os << text;
  return "";
}

} // namespace swift::plan
