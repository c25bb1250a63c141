//===- VerifySchedule.cpp - a finished schedule is complete and consistent ===//
//
// The op verifiers only check what any schedule under construction must
// hold. This pass checks the finished one against the job with plan/'s
// checkSchedule() (swift/Plan/Schedule.h), the rules swift-run's parsePlan()
// enforces on plan.json: it translates the IR's schedule into a
// plan::Schedule with translateSchedule() (swift/Passes/PlanSchedule.h, the
// translation the plan.json emitter writes too), runs them, and reports a
// violation at the op of the entry it names. What it checks itself is only
// what plan.json does not carry: the recompute marks, streams, prefetch
// positions, bucket sizes, reductions matching their bucket's collective,
// and the offload copies (that each op of a program belongs to a compute,
// the premise of the translation, translateSchedule() checks).
//
//===----------------------------------------------------------------------===//

#include "ScheduleSupport.h"

#include "swift/Passes/PlanSchedule.h"
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

class ScheduleChecker {
public:
  explicit ScheduleChecker(ScheduleTarget t) : t(t), s(this->t.strategy) {}

  LogicalResult check() {
    FailureOr<TranslatedSchedule> translated = translateSchedule(t.schedule);
    if (failed(translated))
      return failure();
    ir = std::move(*translated);
    last = int64_t(ir.units.size()) - 1;
    // plan.json's rules, the same code swift-run runs on a plan.
    if (std::optional<plan::ScheduleViolation> v =
            plan::checkSchedule(t.config, strategyConfig(t), ir.schedule))
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
    return op ? op : t.schedule.getOperation();
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
  TranslatedSchedule ir; // the schedule as plan.json spells it, and its ops
  int64_t last = -1;     // the last unit
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
