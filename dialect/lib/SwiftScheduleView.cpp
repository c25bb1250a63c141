//===- SwiftScheduleView.cpp - the schedule as plan.json spells it --------===//
//
// The one translation of a swift.schedule into plan/'s Schedule
// (ScheduleOp::translate()), which swift-verify-schedule checks
// (ScheduleOp::checkFinished(), with plan/'s checkSchedule()) and the
// plan.json emitter writes with planToJson(). The op verifiers only check
// what any schedule under construction must hold; checkFinished() checks
// the finished one against the job.
//
//===----------------------------------------------------------------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Plan/Schedule.h"

using namespace mlir;
using namespace mlir::swift;
namespace cost = ::swift::cost;
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

class ScheduleChecker {
public:
  ScheduleChecker(ScheduleOp schedule, const plan::ModelConfig &config,
                  const cost::Strategy &s)
      : schedule(schedule), config(config), s(s) {}

  LogicalResult check() {
    FailureOr<TranslatedSchedule> translated = schedule.translate();
    if (failed(translated))
      return failure();
    ir = std::move(*translated);
    last = int64_t(ir.units.size()) - 1;
    // plan.json's rules, the same code swift-run runs on a plan.
    if (std::optional<plan::ScheduleViolation> v = plan::checkSchedule(
            config, planStrategy(s, schedule), ir.schedule))
      return opOf(*v)->emitOpError(v->why);
    if (failed(checkRecompute()) || failed(checkGathers()) ||
        failed(checkBuckets()) || failed(checkCopies()))
      return failure();
    return success();
  }

private:
  /// The op of the entry (and list item) a violation names.
  Operation *opOf(const plan::ScheduleViolation &v) {
    using Part = plan::ScheduleViolation::Part;
    auto pick = [](auto &list, int i) -> Operation * {
      if (i < 0 || size_t(i) >= list.size())
        return nullptr;
      return list[i];
    };
    Operation *op = nullptr;
    switch (v.part) {
    case Part::Units:
      op = pick(ir.units, v.entry);
      break;
    case Part::Buckets:
      op = pick(ir.buckets, v.entry);
      break;
    case Part::Optimizer:
      op = ir.optimizerStep;
      break;
    case Part::Forward:
    case Part::Backward: {
      bool isForward = v.part == Part::Forward;
      SmallVector<ScheduleStepOps> &steps =
          isForward ? ir.forwardSteps : ir.backwardSteps;
      if (v.entry < 0 || size_t(v.entry) >= steps.size())
        return isForward ? ir.forward : ir.backward;
      ScheduleStepOps &step = steps[v.entry];
      if (v.field == "gather")
        op = pick(step.gathers, v.item);
      else if (v.field == "release")
        op = pick(step.releases, v.item);
      else if (v.field == "reduce")
        op = pick(step.reductions, v.item);
      return op ? op : step.compute.getOperation();
    }
    }
    return op ? op : schedule.getOperation();
  }

  /// A checkpointed unit's backward recomputes its forward; no other does.
  LogicalResult checkRecompute() {
    for (ScheduleStepOps &step : ir.backwardSteps) {
      ComputeUnitOp compute = step.compute;
      bool checkpointed =
          ir.units[compute.getUnit()].getCheckpointMode() !=
          Checkpointing::None;
      if (compute.getRecompute() != checkpointed)
        return compute.emitOpError(checkpointed
                                       ? "must recompute its checkpointed unit"
                                       : "recomputes a unit that keeps its "
                                         "activations");
    }
    return success();
  }

  /// Gathers run on the communication stream, and `ahead` names the unit the
  /// gathered parameters serve: `ahead` units after the next compute, in
  /// the program's order.
  LogicalResult checkGathers() {
    for (bool isBackward : {false, true}) {
      for (ScheduleStepOps &step :
           isBackward ? ir.backwardSteps : ir.forwardSteps) {
        for (AllGatherOp gather : step.gathers) {
          if (gather.getStream() != Stream::communication)
            return gather.emitOpError("must run on the communication stream "
                                      "(swift-run overlaps it with compute)");
          int64_t next = step.compute.getUnit();
          int64_t served = isBackward ? next - int64_t(gather.getAhead())
                                      : next + int64_t(gather.getAhead());
          if (served < 0 || served > last ||
              !llvm::is_contained(ir.units[served].getOwners(),
                                  int64_t(gather.getUnit())))
            return gather.emitOpError("gathers unit ")
                   << gather.getUnit() << " " << gather.getAhead()
                   << " unit(s) ahead of unit " << next
                   << ", but the unit there does not read it";
        }
      }
    }
    return success();
  }

  /// A bucket's size is its units' gradients as buckets are sized; each
  /// reduction runs on the communication stream with its bucket's
  /// collective.
  LogicalResult checkBuckets() {
    for (BucketOp bucket : ir.buckets) {
      int64_t bytes = 0;
      for (int64_t u : bucket.getUnits())
        bytes += ir.units[u].getParameters() * plan::kBucketBytesPerParameter;
      if (int64_t(bucket.getBytes()) != bytes)
        return bucket.emitOpError("says ")
               << bucket.getBytes() << " bytes but its units' fp32 gradients "
               << "take " << bytes;
    }
    for (ScheduleStepOps &step : ir.backwardSteps) {
      for (Operation *op : step.reductions) {
        bool scatter = isa<ReduceScatterOp>(op);
        Stream stream = scatter ? cast<ReduceScatterOp>(op).getStream()
                                : cast<AllReduceOp>(op).getStream();
        if (stream != Stream::communication)
          return op->emitOpError("must run on the communication stream");
        int64_t index = *reducedBucket(op);
        Collective kind =
            scatter ? Collective::ReduceScatter : Collective::AllReduce;
        if (kind != ir.buckets[index].getCollective())
          return op->emitOpError("does not match bucket ")
                 << index << "'s collective ("
                 << irKeyword(ir.buckets[index].getCollective()) << ")";
      }
    }
    return success();
  }

  /// Copies present exactly when offloading: one gradient copy right after
  /// each reduction; parameters back after the step (optimizer offload) or
  /// in before each gather of a non-resident unit (parameter offload).
  LogicalResult checkCopies() {
    const bool offload = s.offload != cost::Offload::None;
    const bool params = s.offload == cost::Offload::OptimizerAndParams;
    auto gradsCopyOf = [](Operation *op) -> std::optional<int64_t> {
      auto copy = dyn_cast_or_null<CopyOp>(op);
      if (!copy || copy.getWhat() != HostData::grads)
        return std::nullopt;
      return copy.getBucket();
    };
    for (Operation &op : ir.backward.getBody().front()) {
      std::optional<int64_t> bucket = reducedBucket(&op);
      if (bucket && offload && gradsCopyOf(op.getNextNode()) != bucket)
        return op.emitOpError("must be followed by the copy of bucket ")
               << *bucket << "'s gradients to the host optimizer";
      if (auto copy = gradsCopyOf(&op); copy && !offload)
        return op.emitOpError("copies gradients, but nothing is offloaded");
    }
    SmallVector<bool> resident(ir.units.size(), false);
    for (ProgramOp program : {ir.forward, ir.backward}) {
      for (Operation &op : program.getBody().front()) {
        if (auto g = dyn_cast<AllGatherOp>(op)) {
          auto copy = dyn_cast_or_null<CopyOp>(op.getPrevNode());
          bool copied = copy && copy.getWhat() == HostData::params &&
                        copy.getUnit() == g.getUnit();
          if (params && !resident[g.getUnit()] && !copied)
            return g.emitOpError("gathers a host-resident shard without "
                                 "copying it to the device first");
          resident[g.getUnit()] = true;
        } else if (auto r = dyn_cast<ReleaseOp>(op)) {
          resident[r.getUnit()] = false;
        } else if (auto copy = dyn_cast<CopyOp>(op)) {
          auto g = dyn_cast_or_null<AllGatherOp>(op.getNextNode());
          if (copy.getWhat() == HostData::params &&
              (!params || !g || g.getUnit() != copy.getUnit() ||
               resident[*copy.getUnit()]))
            return copy.emitOpError(
                params ? "must directly precede the gather of its "
                         "non-resident unit"
                       : "copies parameters in a program, but parameters "
                         "are not offloaded");
        }
      }
    }
    auto copies = llvm::to_vector(schedule.getOps<CopyOp>());
    bool copyBack = s.offload == cost::Offload::Optimizer;
    if (copies.size() != size_t(copyBack))
      return schedule.emitOpError(copyBack ? "needs one copy of the updated "
                                               "parameters back to the device"
                                             : "copies parameters after the "
                                               "optimizer step, which only "
                                               "optimizer offload does");
    if (copyBack &&
        copies.front()->getPrevNode() != schedule.getOptimizerStep())
      return copies.front().emitOpError("must follow the optimizer step");
    return success();
  }

  ScheduleOp schedule;
  const plan::ModelConfig &config;
  const cost::Strategy &s;
  TranslatedSchedule ir; // the schedule as plan.json spells it, and its ops
  int64_t last = -1;     // the last unit
};

} // namespace

std::optional<int64_t> mlir::swift::reducedBucket(Operation *op) {
  if (auto r = dyn_cast_or_null<ReduceScatterOp>(op))
    return r.getBucket();
  if (auto r = dyn_cast_or_null<AllReduceOp>(op))
    return r.getBucket();
  return std::nullopt;
}

FailureOr<TranslatedSchedule> ScheduleOp::translate() {
  TranslatedSchedule t;
  t.forward = getProgram(ProgramPhase::forward);
  t.backward = getProgram(ProgramPhase::backward);
  if (!t.forward || !t.backward)
    return emitOpError("has no ")
           << (t.forward ? "backward" : "forward") << " program";
  t.optimizerStep = getOptimizerStep();
  if (!t.optimizerStep)
    return emitOpError("has no optimizer step");
  if (failed(collectSteps(t.forward, t.forwardSteps)) ||
      failed(collectSteps(t.backward, t.backwardSteps)))
    return failure();
  t.units = getUnits();
  t.buckets = getBuckets();

  plan::Schedule &out = t.schedule;
  for (UnitOp unit : t.units) {
    plan::UnitSpec spec;
    spec.kind = unit.getKind();
    spec.layer = unit.getLayer() ? int64_t(*unit.getLayer()) : -1;
    spec.checkpoint = unit.getCheckpointMode();
    spec.offloadInput = unit.getOffloadInput();
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
  out.offloadActivations = s.offloadActivations;
  out.mlpTileTokens = s.mlpTileTokens;
  out.dpShard = s.layout.dpShard; // 0: one group of every rank
  if (schedule && schedule.getBucketBytes())
    out.bucketBytes = *schedule.getBucketBytes();
  if (schedule && schedule.getPrefetchDepth())
    out.prefetchDepth = static_cast<int>(*schedule.getPrefetchDepth());
  return out;
}

LogicalResult ScheduleOp::checkFinished(const plan::ModelConfig &model,
                                        const cost::Strategy &strategy) {
  return ScheduleChecker(*this, model, strategy).check();
}
