//===- Pipelines.cpp - the phases of planning, and re-planning ------------===//

#include "swift/Passes/Pipelines.h"

#include "swift/Passes/Import.h"
#include "swift/Passes/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::swift;
namespace job = ::swift::job;
namespace plan = ::swift::plan;

void mlir::swift::buildMaterializePipeline(OpPassManager &pm) {
  // Units first: every later decision is per unit (embedding, layer, head).
  pm.addPass(createMaterializeUnitsPass());
  // Buckets and programs: the ZeRO stage's collectives, as
  // plan::buildSchedule() orders them (the one schedule algorithm).
  pm.addPass(createMaterializeCollectivesPass());
  // The optimizer step before offload: the parameter copy-back of optimizer
  // offload is placed relative to it.
  pm.addPass(createPlaceOptimizerPass());
  pm.addPass(createMaterializeOffloadPass());
  // Last: the whole schedule against the job, so emitters can trust it.
  pm.addPass(createVerifySchedulePass());
}

void mlir::swift::registerMaterializePipeline() {
  PassPipelineRegistration<>(
      "swift-materialize-pipeline",
      "Spell the job's fixed strategy out as a verified swift.schedule",
      buildMaterializePipeline);
}

std::optional<Phase> mlir::swift::parsePhase(StringRef name) {
  for (size_t i = 0; i < std::size(kPhaseNames); ++i)
    if (name == kPhaseNames[i])
      return static_cast<Phase>(i);
  return std::nullopt;
}

namespace {

void addPhase(OpPassManager &pm, Phase phase, const PlanningOptions &options) {
  switch (phase) {
  case Phase::Import:
    break;
  case Phase::Annotate:
    pm.addPass(createAnnotateModelPass());
    break;
  case Phase::Strategy: {
    ChooseStrategyPassOptions choose;
    choose.memoryMargin = options.memoryMargin;
    choose.allowedZero.assign(options.allowedZero.begin(),
                              options.allowedZero.end());
    pm.addPass(createChooseStrategyPass(choose));
    break;
  }
  case Phase::Estimate:
    pm.addPass(createEstimateCostPass());
    break;
  case Phase::Schedule:
    buildMaterializePipeline(pm);
    break;
  }
}

/// Writes the module after `phase` to DIR/NN-<phase>.mlir.
std::string dump(ModuleOp module, StringRef dir, Phase phase) {
  int index = static_cast<int>(phase);
  SmallString<128> path(dir);
  llvm::sys::path::append(path, (index < 9 ? "0" : "") +
                                    std::to_string(index + 1) + "-" +
                                    kPhaseNames[index] + ".mlir");
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec)
    return "--dump-phases-to: cannot write " + path.str().str() + ": " +
           ec.message();
  module.print(file);
  return "";
}

} // namespace

bool PlannedJob::fits() const {
  JobOp op = job; // the accessors are not const
  DecisionAttr decision = op ? op.getDecisionAttr() : DecisionAttr();
  return decision && decision.getFits();
}

PlannedJob mlir::swift::planJob(const job::JobSpec &spec, MLIRContext &context,
                                const PlanningOptions &options) {
  PlannedJob out;
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      diagnostics += d.str();
    return success();
  });
  out.module = importJob(spec, context);
  out.job = *out.module->getOps<JobOp>().begin();
  if (failed(verify(*out.module))) {
    out.internal = true;
    out.error = "the imported IR does not verify: " + diagnostics;
    return out;
  }
  for (int i = 0; i <= static_cast<int>(options.last); ++i) {
    Phase phase = static_cast<Phase>(i);
    if (phase != Phase::Import) {
      PassManager pm(&context);
      addPhase(pm, phase, options);
      if (failed(pm.run(*out.module))) {
        out.error = diagnostics;
        return out;
      }
    }
    if (!options.dumpDir.empty()) {
      out.error = dump(*out.module, options.dumpDir, phase);
      if (!out.error.empty())
        return out;
    }
  }
  return out;
}

namespace {

/// `spec` planned through the estimate phase, when a strategy fits.
std::optional<WhatIf> planWhatIf(std::string change, const job::JobSpec &spec,
                                 MLIRContext &context,
                                 const PlanningOptions &options) {
  // A change the job could not make (method lora on an fp8 job, ...).
  if (!job::unsupportedPrecision(spec).empty())
    return std::nullopt;
  PlanningOptions estimate = options;
  estimate.last = Phase::Estimate;
  estimate.dumpDir.clear();
  PlannedJob p = planJob(spec, context, estimate);
  if (!p.error.empty() || !p.fits() || !p.job.getEstimateAttr())
    return std::nullopt;
  return WhatIf{std::move(change), p.job.getDecisionAttr().getChosen(),
                p.job.getEstimateAttr()};
}

/// A swift-run job on one GPU that clips: without clipping swift-run would
/// update in the backward.
bool clipsOnOneGpu(const ::swift::job::JobSpec &job) {
  return job.backend == ::swift::plan::Backend::SwiftRun &&
         job.cluster.numGpus() == 1 && job.training.maxGradNorm &&
         *job.training.maxGradNorm > 0;
}
constexpr const char *kNoClipping =
    "training.max_grad_norm 0 (no clipping: AdamW updates each layer in the "
    "backward and frees its gradient)";
} // namespace

std::vector<WhatIf> mlir::swift::changesThatFit(const job::JobSpec &job,
                                                MLIRContext &context,
                                                const PlanningOptions &options) {
  using ::swift::job::JobSpec;
  enum Kind { Gpus, Open, PureBf16, NoClip, Adapters, Sequence };
  std::vector<std::tuple<Kind, std::string, JobSpec>> tries;
  // More GPUs: fill the node, then double nodes, keeping the global batch.
  for (int64_t gpus = job.cluster.numGpus() * 2;
       gpus <= std::max<int64_t>(job.cluster.numGpus() * 16, 8); gpus *= 2) {
    JobSpec more = job;
    more.cluster.gpusPerNode =
        std::min<int64_t>(gpus, std::max<int64_t>(8, job.cluster.gpusPerNode));
    more.cluster.nodes =
        (gpus + more.cluster.gpusPerNode - 1) / more.cluster.gpusPerNode;
    if (job.training.globalBatchSize % more.cluster.numGpus() != 0)
      continue;
    tries.emplace_back(Gpus,
                       std::to_string(more.cluster.numGpus()) + " GPUs (" +
                           std::to_string(more.cluster.nodes) + " node" +
                           (more.cluster.nodes > 1 ? "s" : "") + " x " +
                           std::to_string(more.cluster.gpusPerNode) + ")",
                       more);
  }
  // The job with zero, offload, checkpointing and the micro-batch left to
  // the search.
  auto opened = [](JobSpec spec) {
    spec.strategy = {};
    spec.training.microBatchSize.reset();
    return spec;
  };
  if (job.strategy.offload || job.strategy.zero || job.strategy.checkpointing ||
      job.training.microBatchSize)
    tries.emplace_back(Open,
                       "let swift-plan choose zero, offload, checkpointing and "
                       "the micro-batch",
                       opened(job));
  // Pure bf16 (bf16 masters and moments: 8 B per parameter instead of 16)
  // for a job that stores as bf16-mixed (fp8-mixed: fp8-bf16, which keeps
  // the FP8 GEMMs), with the strategy left open.
  const plan::Precision precision = job.training.precision;
  if (plan::storagePrecision(precision) == plan::Precision::Bf16Mixed) {
    JobSpec bf16 = opened(job);
    bf16.training.precision = plan::fp8Gemms(precision) ? plan::Precision::Fp8Bf16
                                                        : plan::Precision::Bf16;
    tries.emplace_back(PureBf16,
                       std::string("training.precision ") +
                           plan::toString(bf16.training.precision) +
                           " (bf16 master weights and AdamW states)",
                       bf16);
  }
  // No clipping, the strategy as the job fixes it (left open, offload
  // could fit either way): on one GPU swift-run then frees each gradient
  // during the backward (plan::updatesInBackward).
  if (clipsOnOneGpu(job)) {
    JobSpec unclipped = job;
    unclipped.training.maxGradNorm = 0.0;
    tries.emplace_back(NoClip, kNoClipping, unclipped);
  }
  // Adapters: LoRA then QLoRA for a full job, QLoRA for a LoRA one (every
  // backend trains both), with the strategy left open. The adapters run
  // bf16 GEMMs: an fp8 job's go with its storage twin (bf16-mixed, bf16).
  std::vector<plan::Method> lighter;
  if (job.training.method == plan::Method::Full)
    lighter = {plan::Method::Lora, plan::Method::QLora};
  else if (job.training.method == plan::Method::Lora)
    lighter = {plan::Method::QLora};
  for (plan::Method method : lighter) {
    JobSpec adapters = opened(job);
    adapters.training.method = method;
    std::string change = std::string("training.method ") + plan::toString(method);
    if (plan::fp8Gemms(precision)) {
      adapters.training.precision = plan::storagePrecision(precision);
      change += std::string(" with training.precision ") +
                plan::toString(adapters.training.precision);
    }
    tries.emplace_back(Adapters, change, adapters);
  }
  for (int64_t seq = job.training.sequenceLength / 2; seq >= 512; seq /= 2) {
    JobSpec shorter = job;
    shorter.training.sequenceLength = seq;
    tries.emplace_back(Sequence, "sequence_length " + std::to_string(seq),
                       shorter);
  }

  std::vector<WhatIf> found;
  bool gpusFound = false, sequenceFound = false;
  for (auto &[kind, change, spec] : tries) {
    // The smallest change of each kind is enough.
    if ((kind == Gpus && gpusFound) || (kind == Sequence && sequenceFound))
      continue;
    std::optional<WhatIf> fit = planWhatIf(change, spec, context, options);
    if (!fit)
      continue;
    found.push_back(std::move(*fit));
    gpusFound |= kind == Gpus;
    sequenceFound |= kind == Sequence;
  }
  return found;
}

std::optional<WhatIf> mlir::swift::fasterIfOpen(const job::JobSpec &job,
                                                double pinnedTokensPerSecond,
                                                MLIRContext &context,
                                                const PlanningOptions &options) {
  std::vector<std::string> fixed;
  if (job.strategy.zero)
    fixed.push_back("zero");
  if (job.strategy.offload)
    fixed.push_back("offload");
  if (job.strategy.checkpointing || job.strategy.checkpointLayers ||
      job.strategy.offloadActivations || job.strategy.mlpTileTokens)
    fixed.push_back("checkpointing");
  if (job.training.microBatchSize)
    fixed.push_back("the micro-batch");
  if (fixed.empty() || pinnedTokensPerSecond <= 0)
    return std::nullopt;
  ::swift::job::JobSpec open = job;
  open.strategy.zero.reset();
  open.strategy.offload.reset();
  open.strategy.checkpointing.reset();
  open.strategy.checkpointLayers.reset();
  open.strategy.offloadActivations.reset();
  open.strategy.mlpTileTokens.reset();
  open.training.microBatchSize.reset();
  std::string change = "with " + fixed[0];
  for (size_t i = 1; i < fixed.size(); ++i)
    change += (i + 1 == fixed.size() ? " and " : ", ") + fixed[i];
  change += " left to swift-plan";
  std::optional<WhatIf> faster = planWhatIf(change, open, context, options);
  if (!faster || faster->estimate.getTokensPerSecond().convertToDouble() <
                     1.05 * pinnedTokensPerSecond)
    return std::nullopt;
  return faster;
}

std::optional<WhatIf> mlir::swift::fasterWithFp8(const job::JobSpec &job,
                                                 double tokensPerSecond,
                                                 MLIRContext &context,
                                                 const PlanningOptions &options) {
  // Only a precision that has an FP8 twin; only where the twin can run
  // (planWhatIf() asks job::unsupportedPrecision(): swift-run, full
  // fine-tuning, a GPU with FP8).
  const plan::Precision precision = job.training.precision;
  const std::optional<plan::Precision> twin = plan::fp8Twin(precision);
  if (tokensPerSecond <= 0 || !twin)
    return std::nullopt;
  ::swift::job::JobSpec fp8 = job;
  fp8.training.precision = *twin;
  std::optional<WhatIf> faster = planWhatIf(
      std::string("training.precision ") + plan::toString(fp8.training.precision) +
          " (the decoder linears' GEMMs in FP8, stored as " +
          plan::toString(precision) + ")",
      fp8, context, options);
  if (!faster || faster->estimate.getTokensPerSecond().convertToDouble() <
                     1.05 * tokensPerSecond)
    return std::nullopt;
  return faster;
}

std::optional<WhatIf> mlir::swift::fasterOnStack(const job::JobSpec &job,
                                                 double tokensPerSecond,
                                                 MLIRContext &context,
                                                 const PlanningOptions &options) {
  using ::swift::plan::Backend;
  if (tokensPerSecond <= 0 || job.backend != Backend::SwiftRun ||
      job.training.method != ::swift::plan::Method::Full ||
      job.cluster.nodes < 2)
    return std::nullopt;
  std::optional<WhatIf> best;
  for (Backend backend : {Backend::Torchtitan, Backend::Megatron}) {
    ::swift::job::JobSpec other = job;
    other.backend = backend;
    const std::string name = ::swift::plan::toString(backend);
    std::optional<WhatIf> w = planWhatIf(
        "backend " + name + " (--emit " + name + ")", other, context, options);
    if (w && (!best || w->estimate.getTokensPerSecond().convertToDouble() >
                           best->estimate.getTokensPerSecond().convertToDouble()))
      best = std::move(w);
  }
  if (!best || best->estimate.getTokensPerSecond().convertToDouble() <
                   1.05 * tokensPerSecond)
    return std::nullopt;
  return best;
}

std::optional<WhatIf> mlir::swift::withoutClipping(const job::JobSpec &job,
                                                   double tokensPerSecond,
                                                   int64_t peakBytes,
                                                   MLIRContext &context,
                                                   const PlanningOptions &options) {
  if (tokensPerSecond <= 0 || !clipsOnOneGpu(job))
    return std::nullopt;
  ::swift::job::JobSpec unclipped = job;
  unclipped.training.maxGradNorm = 0.0;
  std::optional<WhatIf> w = planWhatIf(kNoClipping, unclipped, context, options);
  if (!w)
    return std::nullopt;
  const bool faster =
      w->estimate.getTokensPerSecond().convertToDouble() >= 1.05 * tokensPerSecond;
  const bool leaner = double(w->estimate.getPeakBytes()) <= 0.9 * double(peakBytes);
  if (!faster && !leaner)
    return std::nullopt;
  return w;
}
