//===- PlanJson.cpp - plan.json's strategy and schedule from the IR -------===//
//
// One JSON entry per schedule op, in the spelling plan/lib/Plan.cpp
// parses (the schema's single source of truth is
// plan/include/swift/Plan/Plan.h).
//
//===----------------------------------------------------------------------===//

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

FailureOr<llvm::json::Object> strategyJson(ModuleOp module) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m))
    return failure();
  const cost::Strategy &s = m->strategy;
  llvm::json::Object o{
      {"zero", s.zero},
      {"offload", ::swift::plan::toString(s.offload)},
      {"checkpointing",
       ::swift::plan::toString(*m->job.getStrategy().getCheckpointing())},
      {"bucket_bytes", *m->schedule.getBucketBytes()},
      {"prefetch_depth", *m->schedule.getPrefetchDepth()},
  };
  if (s.checkpointLayers >= 0)
    o["checkpoint_layers"] = s.checkpointLayers;
  return o;
}

FailureOr<llvm::json::Object> scheduleJson(ModuleOp module) {
  FailureOr<Materialized> m = findMaterialized(module);
  if (failed(m))
    return failure();
  ScheduleOp schedule = m->schedule;
  llvm::json::Array units, buckets;
  for (UnitOp unit : schedule.getUnits()) {
    llvm::json::Object u{{"kind", ::swift::plan::toString(unit.getKind())}};
    if (unit.getKind() == UnitKind::Decoder) {
      u["layer"] = *unit.getLayer();
      u["checkpoint"] = ::swift::plan::toString(unit.getCheckpointMode());
    }
    units.push_back(std::move(u));
  }
  for (BucketOp bucket : schedule.getBuckets())
    buckets.push_back(llvm::json::Object{
        {"units", llvm::json::Array(bucket.getUnits())},
        {"collective", ::swift::plan::toString(bucket.getCollective())},
        {"every_micro_batch", bool(bucket.getEveryMicroBatch())}});

  // A step opens at each compute; the gathers issued since the previous
  // compute belong to it, the releases and reductions after it too.
  auto steps = [](ProgramOp program) {
    struct Step {
      int64_t unit;
      std::vector<int64_t> gather, release, reduce;
    };
    std::vector<Step> out;
    std::vector<int64_t> pendingGathers;
    for (Operation &op : program.getBody().front()) {
      if (auto c = dyn_cast<ComputeUnitOp>(op)) {
        out.push_back(
            {int64_t(c.getUnit()), std::move(pendingGathers), {}, {}});
        pendingGathers.clear();
      } else if (auto g = dyn_cast<AllGatherOp>(op)) {
        pendingGathers.push_back(g.getUnit());
      } else if (auto r = dyn_cast<ReleaseOp>(op)) {
        out.back().release.push_back(r.getUnit());
      } else if (auto r = dyn_cast<ReduceScatterOp>(op)) {
        out.back().reduce.push_back(r.getBucket());
      } else if (auto r = dyn_cast<AllReduceOp>(op)) {
        out.back().reduce.push_back(r.getBucket());
      }
    }
    llvm::json::Array json;
    for (Step &step : out) {
      llvm::json::Object o{{"unit", step.unit}};
      if (!step.gather.empty())
        o["gather"] = llvm::json::Array(step.gather);
      if (!step.release.empty())
        o["release"] = llvm::json::Array(step.release);
      if (!step.reduce.empty())
        o["reduce"] = llvm::json::Array(step.reduce);
      json.push_back(std::move(o));
    }
    return json;
  };
  OptimizerStepOp step = schedule.getOptimizerStep();
  return llvm::json::Object{
      {"units", std::move(units)},
      {"buckets", std::move(buckets)},
      {"forward", steps(schedule.getProgram(ProgramPhase::forward))},
      {"backward", steps(schedule.getProgram(ProgramPhase::backward))},
      {"optimizer", llvm::json::Object{
                        {"device", ::swift::plan::toString(step.getDevice())},
                        {"gather_params", bool(step.getGatherParams())}}}};
}

} // namespace swift::emit
