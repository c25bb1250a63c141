//===- PlanSchedule.cpp - the IR's schedule as plan.json spells it --------===//

#include "swift/Passes/PlanSchedule.h"

using namespace mlir;
using namespace mlir::swift;
namespace plan = ::swift::plan;

namespace {

bool isCopyOf(Operation *op, HostData what) {
  auto copy = dyn_cast_or_null<CopyOp>(op);
  return copy && copy.getWhat() == what;
}

/// Groups a program's ops into plan.json's entries: gathers (and the
/// parameter copies before them) belong to the next compute, releases,
/// reductions and gradient copies to the previous one.
LogicalResult collectSteps(ProgramOp program,
                           SmallVector<ScheduleStepOps> &steps) {
  SmallVector<AllGatherOp> pending;
  Operation *servesNone = nullptr; // the first gather or copy still pending
  for (Operation &op : program.getBody().front()) {
    if (auto compute = dyn_cast<ComputeUnitOp>(op)) {
      steps.push_back({compute, std::move(pending), {}, {}});
      pending.clear();
      servesNone = nullptr;
      continue;
    }
    if (auto gather = dyn_cast<AllGatherOp>(op)) {
      pending.push_back(gather);
      servesNone = servesNone ? servesNone : &op;
      continue;
    }
    if (isCopyOf(&op, HostData::params)) {
      servesNone = servesNone ? servesNone : &op;
      continue;
    }
    bool after = isa<ReleaseOp, ReduceScatterOp, AllReduceOp>(op) ||
                 isCopyOf(&op, HostData::grads);
    if (after && steps.empty())
      return op.emitOpError("comes before any compute; it belongs after "
                            "the compute it follows");
    if (auto release = dyn_cast<ReleaseOp>(op))
      steps.back().releases.push_back(release);
    else if (reducedBucket(&op))
      steps.back().reductions.push_back(&op);
  }
  if (servesNone)
    return servesNone->emitOpError(
        "comes after the last compute and serves none");
  return success();
}

std::vector<plan::ProgramStep>
programSteps(const SmallVector<ScheduleStepOps> &steps) {
  std::vector<plan::ProgramStep> out;
  for (const ScheduleStepOps &step : steps) {
    plan::ProgramStep p;
    p.unit = int(ComputeUnitOp(step.compute).getUnit());
    for (AllGatherOp g : step.gathers)
      p.gather.push_back(int(g.getUnit()));
    for (ReleaseOp r : step.releases)
      p.release.push_back(int(r.getUnit()));
    for (Operation *r : step.reductions)
      p.reduce.push_back(int(*reducedBucket(r)));
    out.push_back(p);
  }
  return out;
}

} // namespace

std::optional<int64_t> mlir::swift::reducedBucket(Operation *op) {
  if (auto r = dyn_cast_or_null<ReduceScatterOp>(op))
    return r.getBucket();
  if (auto r = dyn_cast_or_null<AllReduceOp>(op))
    return r.getBucket();
  return std::nullopt;
}

FailureOr<TranslatedSchedule>
mlir::swift::translateSchedule(ScheduleOp schedule) {
  TranslatedSchedule t;
  t.forward = schedule.getProgram(ProgramPhase::forward);
  t.backward = schedule.getProgram(ProgramPhase::backward);
  if (!t.forward || !t.backward)
    return schedule.emitOpError("has no ")
           << (t.forward ? "backward" : "forward") << " program";
  t.optimizerStep = schedule.getOptimizerStep();
  if (!t.optimizerStep)
    return schedule.emitOpError("has no optimizer step");
  if (failed(collectSteps(t.forward, t.forwardSteps)) ||
      failed(collectSteps(t.backward, t.backwardSteps)))
    return failure();
  t.units = schedule.getUnits();
  t.buckets = schedule.getBuckets();

  plan::Schedule &out = t.schedule;
  for (UnitOp unit : t.units) {
    plan::UnitSpec spec;
    spec.kind = unit.getKind();
    spec.layer = unit.getLayer() ? int64_t(*unit.getLayer()) : -1;
    spec.checkpoint = unit.getCheckpointMode();
    out.units.push_back(spec);
  }
  for (BucketOp bucket : t.buckets) {
    plan::Bucket b;
    for (int64_t u : bucket.getUnits())
      b.units.push_back(int(u));
    b.collective = bucket.getCollective();
    b.everyMicroBatch = bucket.getEveryMicroBatch();
    out.buckets.push_back(b);
  }
  out.forward = programSteps(t.forwardSteps);
  out.backward = programSteps(t.backwardSteps);
  out.optimizer.device = t.optimizerStep.getDevice();
  out.optimizer.gatherParams = t.optimizerStep.getGatherParams();
  return t;
}

plan::StrategyConfig mlir::swift::planStrategy(const ::swift::cost::Strategy &s,
                                               ScheduleOp schedule) {
  plan::StrategyConfig out;
  out.zero = s.zero;
  out.offload = s.offload;
  out.checkpointing = s.checkpointing;
  out.checkpointLayers = s.checkpointLayers;
  out.bucketBytes = s.bucketBytes;
  out.prefetchDepth = s.prefetchDepth;
  if (schedule && schedule.getBucketBytes())
    out.bucketBytes = *schedule.getBucketBytes();
  if (schedule && schedule.getPrefetchDepth())
    out.prefetchDepth = static_cast<int>(*schedule.getPrefetchDepth());
  return out;
}
