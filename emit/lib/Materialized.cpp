//===- Materialized.cpp - what every emitter reads from the IR ------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

#include <cstdio>
#include <cstdlib>

namespace swift::emit {
using namespace mlir;
using namespace mlir::swift;

FailureOr<Materialized> findMaterialized(ModuleOp module) {
  auto jobs = llvm::to_vector(module.getOps<JobOp>());
  if (jobs.size() != 1)
    return module.emitError("expected one swift.job to emit, found ")
           << jobs.size();
  Materialized m;
  m.job = jobs.front();
  m.cluster = m.job.lookupCluster();
  if (!m.cluster)
    return m.job.emitOpError("needs its cluster to emit");
  m.model = m.job.lookupModel();
  if (!m.model)
    return m.job.emitOpError("needs its model to emit");
  m.worldSize = m.cluster.getNumGpus();
  FailureOr<cost::Strategy> s = m.job.completeStrategy("nothing to emit");
  if (failed(s))
    return failure();
  m.strategy = *s;
  m.schedule = m.job.lookupSchedule();
  if (!m.schedule || !m.schedule.getOptimizerStep() ||
      !m.schedule.getProgram(ProgramPhase::forward) ||
      !m.schedule.getProgram(ProgramPhase::backward) ||
      !m.schedule.getBucketBytes() || !m.schedule.getPrefetchDepth())
    return m.job.emitOpError("has no materialized swift.schedule; run the "
                             "materialize pipeline before emitting");
  // Emitters translate step by step and trust the schedule's structure:
  // check it here too (as swift-verify-schedule does), so a hand-edited
  // module cannot slip through.
  if (failed(m.schedule.checkFinished(m.model.planModel(), m.strategy)))
    return failure();
  return m;
}

FailureOr<Materialized> findMeshMaterialized(ModuleOp module) {
  auto jobs = llvm::to_vector(module.getOps<JobOp>());
  if (jobs.size() != 1)
    return findMaterialized(module); // its error
  JobOp job = jobs.front();
  StrategyAttr attr = job.getStrategy();
  cost::Layout layout;
  layout.tp = attr.getTp().value_or(1);
  layout.pp = attr.getPp().value_or(1);
  layout.cp = attr.getCp().value_or(1);
  layout.dpShard = attr.getDpShard().value_or(0);
  layout.schedule = attr.getPpSchedule().value_or(PipelineSchedule::OneFOneB);
  layout.virtualStages = attr.getVirtualStages().value_or(1);
  // The same decisions without the layout keys.
  StrategyAttr bare = StrategyAttr::get(
      attr.getContext(), attr.getZero(), attr.getOffload(),
      attr.getCheckpointing(), attr.getCheckpointLayers(),
      attr.getBucketBytes(), attr.getPrefetchDepth(),
      attr.getOffloadActivations(), attr.getMlpTileTokens(),
      /*tp=*/std::nullopt, /*pp=*/std::nullopt, /*cp=*/std::nullopt,
      /*dp_shard=*/std::nullopt, /*pp_schedule=*/std::nullopt,
      /*virtual_stages=*/std::nullopt);
  job.setStrategyAttr(bare);
  FailureOr<Materialized> m = findMaterialized(module);
  job.setStrategyAttr(attr);
  if (failed(m))
    return failure();
  m->strategy.layout = layout;
  return m;
}

std::string describeLayout(const cost::Layout &layout, int64_t world) {
  std::string text;
  for (auto [name, degree] :
       {std::pair<const char *, int64_t>{"tp", layout.tp},
        {"cp", layout.cp},
        {"dp_shard", layout.shardGroup(world)},
        {"dp_replicate", layout.replicas(world)},
        {"pp", layout.pp}})
    if (degree > 1)
      text += (text.empty() ? "" : " x ") + std::string(name) + " " +
              std::to_string(degree);
  if (layout.pp > 1 && layout.virtualStages > 1)
    text += " (" + std::to_string(layout.virtualStages) +
            " virtual stages per rank)";
  return text.empty() ? "one GPU" : text;
}

std::string exactNumber(double x) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, x);
    if (std::strtod(text, nullptr) == x)
      break;
  }
  return text;
}

void readOptimizerSettings(JobOp job, ::swift::plan::TrainingConfig &t) {
  OptimizerSettingsAttr o = job.getOptimizerSettingsAttr();
  if (!o)
    return;
  t.optimizer.lr = o.getLr().convertToDouble();
  t.optimizer.beta1 = o.getBeta1().convertToDouble();
  t.optimizer.beta2 = o.getBeta2().convertToDouble();
  t.optimizer.eps = o.getEps().convertToDouble();
  t.optimizer.weightDecay = o.getWeightDecay().convertToDouble();
  t.lrSchedule.warmupSteps = o.getWarmupSteps();
  t.lrSchedule.decay = o.getDecay();
  t.lrSchedule.minLrRatio = o.getMinLrRatio().convertToDouble();
  if (std::optional<llvm::APFloat> norm = o.getMaxGradNorm();
      norm && norm->convertToDouble() > 0) // 0: no clipping
    t.maxGradNorm = norm->convertToDouble();
  t.seed = static_cast<uint64_t>(o.getSeed());
}

} // namespace swift::emit
