//===- VerifySchedule.cpp - a finished schedule is complete and consistent ===//
//
// The op verifiers only check what any schedule under construction must
// hold. This pass checks the finished one against the job, with the same
// rules the runtime's parsePlan() enforces on plan.json (so a schedule that
// passes here is accepted there) plus what plan.json does not carry: the
// recompute marks, streams and offload copies.
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

namespace {

// Buckets are sized in fp32 gradient bytes (swift-materialize-collectives).
constexpr int64_t kGradBytes = 4;

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
    if (failed(checkUnits()) || failed(checkOrder(forward)) ||
        failed(checkOrder(backward)) || failed(checkResidency()) ||
        failed(checkBuckets()) || failed(checkOptimizer()) ||
        failed(checkCopies()))
      return failure();
    return success();
  }

private:
  LogicalResult checkUnits() {
    int64_t layers = 0;
    t.model.walk([&](RepeatOp r) { layers += r.getCount(); });
    if (int64_t(units.size()) != layers + 2)
      return t.schedule.emitOpError("has ")
             << units.size() << " units but the model needs " << layers + 2
             << " (embedding, " << layers << " decoder layers, head)";
    for (UnitOp unit : units) {
      if (unit.getKind() != UnitKind::Decoder)
        continue;
      int64_t layer = *unit.getLayer();
      bool want = s.checkpointing != cost::Checkpointing::None &&
                  (s.checkpointLayers < 0 || layer < s.checkpointLayers);
      bool full = s.checkpointing == cost::Checkpointing::Full;
      Checkpointing expected = !want  ? Checkpointing::None
                               : full ? Checkpointing::Full
                                      : Checkpointing::Selective;
      if (unit.getCheckpointMode() != expected)
        return unit.emitOpError("checkpoint mode ")
               << irKeyword(unit.getCheckpointMode())
               << " disagrees with the strategy ("
               << irKeyword(expected) << ")";
    }
    return success();
  }

  /// Each unit computed once, in autograd's order; every step op belongs to
  /// a compute (gathers before one, releases and reductions after one).
  LogicalResult checkOrder(ProgramOp program) {
    bool isBackward = program.getPhase() == ProgramPhase::backward;
    int64_t next = 0;
    Operation *lastCompute = nullptr;
    for (Operation &op : program.getBody().front()) {
      if (auto compute = dyn_cast<ComputeUnitOp>(op)) {
        int64_t want = isBackward ? last - next : next;
        if (next > last || int64_t(compute.getUnit()) != want)
          return compute.emitOpError("computes unit ")
                 << compute.getUnit() << " where "
                 << (isBackward ? "backward" : "forward") << " needs "
                 << (next > last ? std::string("no more units")
                                 : "unit " + std::to_string(want));
        bool checkpointed =
            units[want].getCheckpointMode() != Checkpointing::None;
        if (isBackward && compute.getRecompute() != checkpointed)
          return compute.emitOpError(
              checkpointed ? "must recompute its checkpointed unit"
                           : "recomputes a unit that keeps its "
                             "activations");
        ++next;
        lastCompute = &op;
        continue;
      }
      bool after =
          isa<ReleaseOp, ReduceScatterOp, AllReduceOp>(op) ||
          (isa<CopyOp>(op) && cast<CopyOp>(op).getWhat() == HostData::grads);
      if (after && !lastCompute)
        return op.emitOpError("comes before any compute; it belongs after "
                              "the compute it follows");
    }
    if (next != last + 1)
      return program.emitOpError("computes ")
             << next << " of " << last + 1 << " units";
    for (Operation *op = lastCompute->getNextNode(); op; op = op->getNextNode())
      if (isa<AllGatherOp>(op) ||
          (isa<CopyOp>(op) && cast<CopyOp>(op).getWhat() == HostData::params))
        return op->emitOpError("comes after the last compute and serves none");
    return success();
  }

  /// The runtime's residency simulation: ZeRO-3 gathers before use and
  /// releases after; below ZeRO-3 every unit stays resident.
  LogicalResult checkResidency() {
    SmallVector<bool> resident(units.size(), s.zero < 3);
    for (ProgramOp program : {forward, backward}) {
      bool isBackward = program == backward;
      for (Operation &op : program.getBody().front()) {
        if (isa<AllGatherOp, ReleaseOp>(op) && s.zero < 3)
          return op.emitOpError("needs ZeRO-3 (parameters are replicated at "
                                "ZeRO-")
                 << s.zero << ")";
        if (auto g = dyn_cast<AllGatherOp>(op)) {
          if (g.getStream() != Stream::communication)
            return g.emitOpError("must run on the communication stream "
                                 "(swift-run overlaps it with compute)");
          if (failed(checkPrefetchPosition(g, isBackward)))
            return failure();
          resident[g.getUnit()] = true;
        } else if (auto r = dyn_cast<ReleaseOp>(op)) {
          if (!resident[r.getUnit()])
            return r.emitOpError("releases unit ")
                   << r.getUnit() << ", which is not gathered";
          resident[r.getUnit()] = false;
        } else if (auto c = dyn_cast<ComputeUnitOp>(op)) {
          // The embedding's backward is a scatter-add: it reads no weights.
          if (isBackward && c.getUnit() == 0)
            continue;
          for (int64_t owner : units[c.getUnit()].getOwners())
            if (!resident[owner])
              return c.emitOpError("reads the parameters of unit ")
                     << owner << ", which are not gathered";
        }
      }
    }
    for (auto [u, isResident] : llvm::enumerate(resident))
      if (s.zero == 3 && isResident)
        return backward.emitOpError("leaves unit ")
               << u << " gathered; ZeRO-3 releases every unit each "
               << "micro-batch";
    return success();
  }

  /// `ahead` names the unit the gathered parameters serve: `ahead` units
  /// after the next compute, in the program's order.
  LogicalResult checkPrefetchPosition(AllGatherOp gather, bool isBackward) {
    Operation *op = gather->getNextNode();
    while (op && !isa<ComputeUnitOp>(op))
      op = op->getNextNode();
    int64_t next = cast<ComputeUnitOp>(op).getUnit();
    int64_t served =
        isBackward ? next - gather.getAhead() : next + gather.getAhead();
    if (served < 0 || served > last ||
        !llvm::is_contained(units[served].getOwners(), gather.getUnit()))
      return gather.emitOpError("gathers unit ")
             << gather.getUnit() << " " << gather.getAhead()
             << " unit(s) ahead of unit " << next
             << ", but the unit there does not read it";
    return success();
  }

  LogicalResult checkBuckets() {
    SmallVector<int64_t> bucketOf(units.size(), -1);
    const Collective want =
        s.zero == 0 ? Collective::AllReduce : Collective::ReduceScatter;
    for (BucketOp bucket : buckets) {
      for (int64_t u : bucket.getUnits()) {
        if (bucketOf[u] >= 0)
          return bucket.emitOpError("holds unit ")
                 << u << ", already in bucket " << bucketOf[u];
        bucketOf[u] = bucket.getIndex();
      }
      int64_t bytes = 0;
      for (int64_t u : bucket.getUnits())
        bytes += units[u].getParameters() * kGradBytes;
      if (int64_t(bucket.getBytes()) != bytes)
        return bucket.emitOpError("says ")
               << bucket.getBytes() << " bytes but its units' fp32 gradients "
               << "take " << bytes;
      if (bucket.getCollective() != want)
        return bucket.emitOpError("ZeRO-")
               << s.zero << " reduces gradients with "
               << irKeyword(want);
      if (bucket.getEveryMicroBatch() != (s.zero >= 2))
        return bucket.emitOpError(
            s.zero >= 2 ? "must reduce every micro-batch (ZeRO-2/3 keep only "
                          "gradient shards)"
                        : "must reduce on the last micro-batch only (ZeRO-0/1 "
                          "accumulate full gradients locally)");
    }
    for (auto [u, b] : llvm::enumerate(bucketOf))
      if (b < 0)
        return units[u].emitOpError("has its gradients in no bucket");
    // Each bucket reduced once, after its gradients are final (a tied
    // embedding also receives the head's).
    SmallVector<bool> done(units.size(), false), reduced(buckets.size(), false);
    bool tied = units[last].getReadsEmbedding();
    for (Operation &op : backward.getBody().front()) {
      if (auto c = dyn_cast<ComputeUnitOp>(op))
        done[c.getUnit()] = true;
      std::optional<int64_t> index;
      Collective kind = Collective::AllReduce;
      Stream stream = Stream::communication;
      if (auto r = dyn_cast<ReduceScatterOp>(op)) {
        index = r.getBucket();
        kind = Collective::ReduceScatter;
        stream = r.getStream();
      } else if (auto r = dyn_cast<AllReduceOp>(op)) {
        index = r.getBucket();
        stream = r.getStream();
      }
      if (!index)
        continue;
      if (stream != Stream::communication)
        return op.emitOpError("must run on the communication stream");
      BucketOp bucket = buckets[*index];
      if (kind != bucket.getCollective())
        return op.emitOpError("does not match bucket ")
               << *index << "'s collective ("
               << irKeyword(bucket.getCollective()) << ")";
      if (reduced[*index])
        return op.emitOpError("reduces bucket ") << *index << " twice";
      reduced[*index] = true;
      for (int64_t u : bucket.getUnits())
        if (!done[u] || (u == 0 && tied && !done[last]))
          return op.emitOpError("reduces bucket ")
                 << *index << " before the gradients of unit " << u
                 << " are final";
    }
    for (auto [b, isReduced] : llvm::enumerate(reduced))
      if (!isReduced)
        return buckets[b].emitOpError("is never reduced by the backward "
                                      "program");
    return success();
  }

  LogicalResult checkOptimizer() {
    OptimizerStepOp step = t.schedule.getOptimizerStep();
    bool cpu = s.offload != cost::Offload::None;
    if (cpu && s.zero == 0)
      return step.emitOpError("offload needs ZeRO >= 1 (swift-run's host "
                              "optimizer updates gradient shards)");
    if ((step.getDevice() == OptimizerDevice::Cpu) != cpu)
      return step.emitOpError("must run on ")
             << (cpu ? "cpu (the strategy offloads the optimizer)"
                     : "accelerator (nothing is offloaded)");
    bool gather = s.zero == 1 || s.zero == 2;
    if (step.getGatherParams() != gather)
      return step.emitOpError(gather ? "must all-gather the updated "
                                       "parameters at ZeRO-1/2"
                                     : "gathers parameters, which only "
                                       "ZeRO-1/2 do");
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
      std::optional<int64_t> bucket;
      if (auto r = dyn_cast<ReduceScatterOp>(op))
        bucket = r.getBucket();
      if (auto r = dyn_cast<AllReduceOp>(op))
        bucket = r.getBucket();
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
