//===- VerifySchedule.cpp - a finished schedule is complete and consistent ===//
//
// The op verifiers only check what any schedule under construction must
// hold. This pass checks the finished one against the job with plan/'s
// checkSchedule() (swift/Plan/Schedule.h), the rules swift-run's parsePlan()
// enforces on plan.json: it translates the IR's schedule into a
// plan::Schedule, runs them, and reports a violation at the op of the entry
// it names. What it checks itself is only what plan.json does not carry:
// that each op of a program belongs to a compute (the premise of the
// translation), the recompute marks, streams, prefetch positions, bucket
// sizes, reductions matching their bucket's collective, and the offload
// copies.
//
//===----------------------------------------------------------------------===//

#include "ScheduleSupport.h"

#include "swift/Passes/Passes.h"

namespace mlir::swift {
#define GEN_PASS_DEF_VERIFYSCHEDULEPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;
namespace cost = ::swift::cost;
namespace plan = ::swift::plan;

namespace {

/// The ops of one plan.json program entry: a compute, the gathers issued
/// since the previous compute, and the releases and reductions after it.
struct Step {
  ComputeUnitOp compute;
  SmallVector<AllGatherOp> gathers;
  SmallVector<ReleaseOp> releases;
  SmallVector<Operation *> reductions; // swift.reduce_scatter / all_reduce
};

/// The bucket a reduction op reduces, if `op` is one.
std::optional<int64_t> reducedBucket(Operation *op) {
  if (auto r = dyn_cast_or_null<ReduceScatterOp>(op))
    return r.getBucket();
  if (auto r = dyn_cast_or_null<AllReduceOp>(op))
    return r.getBucket();
  return std::nullopt;
}

bool isCopyOf(Operation *op, HostData what) {
  auto copy = dyn_cast_or_null<CopyOp>(op);
  return copy && copy.getWhat() == what;
}

class ScheduleChecker {
public:
  explicit ScheduleChecker(ScheduleTarget t)
      : t(t), s(this->t.strategy), units(this->t.schedule.getUnits()),
        buckets(this->t.schedule.getBuckets()),
        last(int64_t(units.size()) - 1) {}

  LogicalResult check() {
    ScheduleOp schedule = t.schedule;
    forward = schedule.getProgram(ProgramPhase::forward);
    backward = schedule.getProgram(ProgramPhase::backward);
    if (!forward || !backward)
      return schedule.emitOpError("has no ")
             << (forward ? "backward" : "forward") << " program";
    if (!schedule.getOptimizerStep())
      return schedule.emitOpError("has no optimizer step");
    if (failed(collectSteps(forward, forwardSteps)) ||
        failed(collectSteps(backward, backwardSteps)))
      return failure();
    // plan.json's rules, the same code swift-run runs on a plan.
    if (std::optional<plan::ScheduleViolation> v =
            plan::checkSchedule(t.config, strategyConfig(t), toPlan()))
      return opOf(*v)->emitOpError(v->why);
    if (failed(checkRecompute()) || failed(checkGathers()) ||
        failed(checkBuckets()) || failed(checkCopies()))
      return failure();
    return success();
  }

private:
  /// Groups a program's ops into plan.json's entries: gathers (and the
  /// parameter copies before them) belong to the next compute, releases,
  /// reductions and gradient copies to the previous one.
  LogicalResult collectSteps(ProgramOp program, SmallVector<Step> &steps) {
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

  /// The schedule as plan.json spells it.
  plan::Schedule toPlan() {
    plan::Schedule out;
    for (UnitOp unit : units) {
      plan::UnitSpec spec;
      spec.kind = unit.getKind();
      spec.layer = unit.getLayer() ? int64_t(*unit.getLayer()) : -1;
      spec.checkpoint = unit.getCheckpointMode();
      out.units.push_back(spec);
    }
    for (BucketOp bucket : buckets) {
      plan::Bucket b;
      for (int64_t u : bucket.getUnits())
        b.units.push_back(int(u));
      b.collective = bucket.getCollective();
      b.everyMicroBatch = bucket.getEveryMicroBatch();
      out.buckets.push_back(b);
    }
    auto program = [](SmallVector<Step> &steps) {
      std::vector<plan::ProgramStep> out;
      for (Step &step : steps) {
        plan::ProgramStep p;
        p.unit = int(step.compute.getUnit());
        for (AllGatherOp g : step.gathers)
          p.gather.push_back(int(g.getUnit()));
        for (ReleaseOp r : step.releases)
          p.release.push_back(int(r.getUnit()));
        for (Operation *r : step.reductions)
          p.reduce.push_back(int(*reducedBucket(r)));
        out.push_back(p);
      }
      return out;
    };
    out.forward = program(forwardSteps);
    out.backward = program(backwardSteps);
    OptimizerStepOp step = t.schedule.getOptimizerStep();
    out.optimizer.device = step.getDevice();
    out.optimizer.gatherParams = step.getGatherParams();
    return out;
  }

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
      op = pick(units, v.entry);
      break;
    case Part::Buckets:
      op = pick(buckets, v.entry);
      break;
    case Part::Optimizer:
      op = t.schedule.getOptimizerStep();
      break;
    case Part::Forward:
    case Part::Backward: {
      bool isForward = v.part == Part::Forward;
      SmallVector<Step> &steps = isForward ? forwardSteps : backwardSteps;
      if (v.entry < 0 || size_t(v.entry) >= steps.size())
        return isForward ? forward : backward;
      Step &step = steps[v.entry];
      if (v.field == "gather")
        op = pick(step.gathers, v.item);
      else if (v.field == "release")
        op = pick(step.releases, v.item);
      else if (v.field == "reduce")
        op = pick(step.reductions, v.item);
      return op ? op : step.compute.getOperation();
    }
    }
    return op ? op : t.schedule.getOperation();
  }

  /// A checkpointed unit's backward recomputes its forward; no other does.
  LogicalResult checkRecompute() {
    for (Step &step : backwardSteps) {
      ComputeUnitOp compute = step.compute;
      bool checkpointed =
          units[compute.getUnit()].getCheckpointMode() != Checkpointing::None;
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
      for (Step &step : isBackward ? backwardSteps : forwardSteps) {
        for (AllGatherOp gather : step.gathers) {
          if (gather.getStream() != Stream::communication)
            return gather.emitOpError("must run on the communication stream "
                                      "(swift-run overlaps it with compute)");
          int64_t next = step.compute.getUnit();
          int64_t served = isBackward ? next - int64_t(gather.getAhead())
                                      : next + int64_t(gather.getAhead());
          if (served < 0 || served > last ||
              !llvm::is_contained(units[served].getOwners(),
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
    for (BucketOp bucket : buckets) {
      int64_t bytes = 0;
      for (int64_t u : bucket.getUnits())
        bytes += units[u].getParameters() * plan::kBucketBytesPerParameter;
      if (int64_t(bucket.getBytes()) != bytes)
        return bucket.emitOpError("says ")
               << bucket.getBytes() << " bytes but its units' fp32 gradients "
               << "take " << bytes;
    }
    for (Step &step : backwardSteps) {
      for (Operation *op : step.reductions) {
        bool scatter = isa<ReduceScatterOp>(op);
        Stream stream = scatter ? cast<ReduceScatterOp>(op).getStream()
                                : cast<AllReduceOp>(op).getStream();
        if (stream != Stream::communication)
          return op->emitOpError("must run on the communication stream");
        int64_t index = *reducedBucket(op);
        Collective kind =
            scatter ? Collective::ReduceScatter : Collective::AllReduce;
        if (kind != buckets[index].getCollective())
          return op->emitOpError("does not match bucket ")
                 << index << "'s collective ("
                 << irKeyword(buckets[index].getCollective()) << ")";
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
    for (Operation &op : backward.getBody().front()) {
      std::optional<int64_t> bucket = reducedBucket(&op);
      if (bucket && offload && gradsCopyOf(op.getNextNode()) != bucket)
        return op.emitOpError("must be followed by the copy of bucket ")
               << *bucket << "'s gradients to the host optimizer";
      if (auto copy = gradsCopyOf(&op); copy && !offload)
        return op.emitOpError("copies gradients, but nothing is offloaded");
    }
    SmallVector<bool> resident(units.size(), false);
    for (ProgramOp program : {forward, backward}) {
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
    auto copies = llvm::to_vector(t.schedule.getOps<CopyOp>());
    bool copyBack = s.offload == cost::Offload::Optimizer;
    if (copies.size() != size_t(copyBack))
      return t.schedule.emitOpError(copyBack ? "needs one copy of the updated "
                                               "parameters back to the device"
                                             : "copies parameters after the "
                                               "optimizer step, which only "
                                               "optimizer offload does");
    if (copyBack &&
        copies.front()->getPrevNode() != t.schedule.getOptimizerStep())
      return copies.front().emitOpError("must follow the optimizer step");
    return success();
  }

  ScheduleTarget t;
  const cost::Strategy &s;
  std::vector<UnitOp> units;
  std::vector<BucketOp> buckets;
  const int64_t last;
  ProgramOp forward, backward;
  SmallVector<Step> forwardSteps, backwardSteps;
};

struct VerifySchedulePass
    : mlir::swift::impl::VerifySchedulePassBase<VerifySchedulePass> {
  void runOnOperation() override {
    bool ok = forEachJob(getOperation(), [](JobOp job) -> LogicalResult {
      FailureOr<ScheduleTarget> target =
          resolveScheduleTarget(job, "swift-verify-schedule", true);
      if (failed(target))
        return failure();
      return ScheduleChecker(*target).check();
    });
    if (!ok)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
