//===- Materialized.cpp - what every emitter reads from the IR ------------===//

#include "swift/Emit/Emit.h"

#include "Materialized.h"

#include "swift/Passes/Passes.h"

#include "mlir/Pass/PassManager.h"

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
  m.cluster = dyn_cast_or_null<ClusterOp>(
      SymbolTable::lookupSymbolIn(module, m.job.getClusterAttr()));
  if (!m.cluster)
    return m.job.emitOpError("needs its cluster to emit");
  m.model = dyn_cast_or_null<ModelOp>(
      SymbolTable::lookupSymbolIn(module, m.job.getModelAttr()));
  if (!m.model)
    return m.job.emitOpError("needs its model to emit");
  m.worldSize = m.cluster.getNumGpus();
  std::string missing;
  std::optional<cost::Strategy> s = fixedStrategy(m.job, missing);
  if (!s)
    return m.job.emitOpError("strategy is not complete (open: ")
           << missing << "); nothing to emit";
  m.strategy = *s;
  for (ScheduleOp schedule : module.getOps<ScheduleOp>())
    if (schedule.getJob() == m.job.getSymName())
      m.schedule = schedule;
  if (!m.schedule || !m.schedule.getOptimizerStep() ||
      !m.schedule.getProgram(ProgramPhase::forward) ||
      !m.schedule.getProgram(ProgramPhase::backward) ||
      !m.schedule.getBucketBytes() || !m.schedule.getPrefetchDepth())
    return m.job.emitOpError("has no materialized swift.schedule; run the "
                             "materialize pipeline before emitting");
  // Emitters translate step by step and trust the schedule's structure:
  // check it here too, so a hand-edited module cannot slip through.
  PassManager verify(module.getContext());
  verify.addPass(createVerifySchedulePass());
  if (failed(verify.run(module)))
    return failure();
  return m;
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
