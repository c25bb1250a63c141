//===- EmitPlan.cpp - plan.json for swift-run -----------------------------===//

#include "EmitPlan.h"

#include "swift/Planner/Emit.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/JSON.h"

namespace swift::plan {

// AdamW hyper-parameters of the plan until job files carry them.
constexpr double kLearningRate = 1e-4, kBeta1 = 0.9, kBeta2 = 0.95,
                 kEpsilon = 1e-8, kWeightDecay = 0.0;

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
  mlir::FailureOr<llvm::json::Object> strategy = emit::strategyJson(module);
  mlir::FailureOr<llvm::json::Object> schedule = emit::scheduleJson(module);
  if (failed(strategy) || failed(schedule))
    return "cannot emit the schedule: " + diagnostics;

  const StrategyFacts &s = *facts.chosen;
  llvm::json::Object model{
      {"name", m.name},
      {"hidden_size", m.hiddenSize},
      {"intermediate_size", m.intermediateSize},
      {"num_hidden_layers", m.numHiddenLayers},
      {"num_attention_heads", m.numAttentionHeads},
      {"num_key_value_heads", m.numKeyValueHeads},
      {"head_dim", m.headDim},
      {"vocab_size", m.vocabSize},
      {"tie_word_embeddings", m.tieWordEmbeddings},
      {"rms_norm_eps", m.rmsNormEps},
      {"rope_theta", m.ropeTheta},
      {"attention_qkv_bias", m.qkvBias},
      {"attention_o_bias", m.oBias},
      {"qk_norm", m.qkNorm}};
  llvm::json::Object training{
      {"sequence_length", job.training.sequenceLength},
      {"global_batch_size", job.training.globalBatchSize},
      {"micro_batch_size", s.microBatchSize},
      {"gradient_accumulation", s.gradientAccumulation},
      {"precision", job.training.precision},
      {"optimizer",
       llvm::json::Object{{"name", "adamw"},
                          {"lr", kLearningRate},
                          {"betas", llvm::json::Array{kBeta1, kBeta2}},
                          {"eps", kEpsilon},
                          {"weight_decay", kWeightDecay}}},
      {"seed", 0}};
  llvm::json::Object plan{
      {"schema", "swift.plan"},
      {"version", 1},
      {"generator", "swift-plan " + job.path},
      {"model", std::move(model)},
      {"training", std::move(training)},
      {"world", llvm::json::Object{{"size", job.cluster.numGpus()},
                                   {"gpus_per_node", job.cluster.gpusPerNode}}},
      {"strategy", std::move(*strategy)},
      {"schedule", std::move(*schedule)},
      {"predicted",
       llvm::json::Object{{"peak_memory_bytes", facts.estimate->peakBytes},
                          {"step_seconds", facts.estimate->stepSeconds},
                          {"tokens_per_second", facts.estimate->tokensPerSecond}}}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(plan))) << "\n";
  return "";
}

} // namespace swift::plan
