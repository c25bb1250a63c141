//===- SwiftSchedule.cpp - verifiers of the schedule ops ------------------===//
//
// Op verifiers hold what any schedule, finished or not, must satisfy:
// indices in range and in order, ops in the program they belong to. Whether
// a finished schedule is complete and matches the job's strategy is
// swift-verify-schedule's job, since it needs the job.
//
//===----------------------------------------------------------------------===//

#include "swift/Dialect/SwiftOps.h"

using namespace mlir;
using namespace mlir::swift;

//===----------------------------------------------------------------------===//
// ScheduleOp
//===----------------------------------------------------------------------===//

std::vector<UnitOp> ScheduleOp::getUnits() {
  auto ops = getBody().front().getOps<UnitOp>();
  return {ops.begin(), ops.end()};
}

std::vector<BucketOp> ScheduleOp::getBuckets() {
  auto ops = getBody().front().getOps<BucketOp>();
  return {ops.begin(), ops.end()};
}

ProgramOp ScheduleOp::getProgram(ProgramPhase phase) {
  for (ProgramOp program : getBody().front().getOps<ProgramOp>())
    if (program.getPhase() == phase)
      return program;
  return {};
}

OptimizerStepOp ScheduleOp::getOptimizerStep() {
  auto steps = getBody().front().getOps<OptimizerStepOp>();
  return steps.empty() ? OptimizerStepOp() : *steps.begin();
}

/// Kind the unit at `index` of `numUnits` must have (embedding first, head
/// last), as plan.json's units list requires.
static UnitKind expectedKind(int64_t index, int64_t numUnits) {
  if (index == 0)
    return UnitKind::Embedding;
  return index == numUnits - 1 ? UnitKind::Head : UnitKind::Decoder;
}

LogicalResult ScheduleOp::verifyRegions() {
  std::vector<UnitOp> units = getUnits();
  int64_t numUnits = units.size();
  if (numUnits == 1)
    return units[0].emitOpError(
        "a schedule needs an embedding and a head unit");
  for (auto [i, unit] : llvm::enumerate(units)) {
    if (unit.getIndex() != i)
      return unit.emitOpError("has index ")
             << unit.getIndex() << " but is unit #" << i
             << " (units are listed in index order)";
    UnitKind want = expectedKind(i, numUnits);
    if (unit.getKind() != want)
      return unit.emitOpError("unit ")
             << i << " must be the " << irKeyword(want);
    if (want == UnitKind::Decoder && unit.getLayer() != int64_t(i) - 1)
      return unit.emitOpError("unit ")
             << i << " must be decoder layer " << int64_t(i) - 1;
  }
  std::vector<BucketOp> buckets = getBuckets();
  for (auto [i, bucket] : llvm::enumerate(buckets)) {
    if (bucket.getIndex() != i)
      return bucket.emitOpError("has index ")
             << bucket.getIndex() << " but is bucket #" << i;
    for (int64_t u : bucket.getUnits())
      if (u >= numUnits)
        return bucket.emitOpError("refers to unit ") << u << " of " << numUnits;
  }
  bool seen[2] = {false, false};
  int optimizerSteps = 0;
  for (Operation &op : getBody().front()) {
    if (auto program = dyn_cast<ProgramOp>(op)) {
      bool &once = seen[static_cast<int>(program.getPhase())];
      if (once)
        return program.emitOpError("duplicate ")
               << stringifyProgramPhase(program.getPhase()) << " program";
      once = true;
    }
    if (isa<OptimizerStepOp>(op) && ++optimizerSteps > 1)
      return op.emitOpError("duplicate optimizer step");
  }
  // References from steps and copies, wherever they are.
  WalkResult refs = getBody().walk([&](Operation *op) -> WalkResult {
    auto check = [&](std::optional<int64_t> index, int64_t size,
                     StringRef what) -> WalkResult {
      if (!index || *index < size)
        return WalkResult::advance();
      op->emitOpError("refers to ") << what << " " << *index << " of " << size;
      return WalkResult::interrupt();
    };
    if (auto g = dyn_cast<AllGatherOp>(op))
      return check(g.getUnit(), numUnits, "unit");
    if (auto c = dyn_cast<ComputeUnitOp>(op))
      return check(c.getUnit(), numUnits, "unit");
    if (auto r = dyn_cast<ReleaseOp>(op))
      return check(r.getUnit(), numUnits, "unit");
    if (auto r = dyn_cast<ReduceScatterOp>(op))
      return check(r.getBucket(), buckets.size(), "bucket");
    if (auto r = dyn_cast<AllReduceOp>(op))
      return check(r.getBucket(), buckets.size(), "bucket");
    if (auto c = dyn_cast<CopyOp>(op)) {
      if (check(c.getUnit(), numUnits, "unit").wasInterrupted())
        return WalkResult::interrupt();
      return check(c.getBucket(), buckets.size(), "bucket");
    }
    return WalkResult::advance();
  });
  return failure(refs.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Units, buckets and steps
//===----------------------------------------------------------------------===//

LogicalResult UnitOp::verify() {
  bool decoder = getKind() == UnitKind::Decoder;
  if (decoder != getLayer().has_value())
    return emitOpError(decoder ? "a decoder unit needs its layer index"
                               : "only decoder units have a layer index");
  if (!decoder && getCheckpointMode() != Checkpointing::None)
    return emitOpError("only decoder units are checkpointed");
  if (getReadsEmbedding() && getKind() != UnitKind::Head)
    return emitOpError("only the head reads the embedding table");
  if (getOffloadInput() && getCheckpointMode() != Checkpointing::Full)
    return emitOpError("offloads its input, which only a fully checkpointed "
                       "decoder unit keeps");
  return success();
}

LogicalResult BucketOp::verify() {
  ArrayRef<int64_t> units = getUnits();
  if (units.empty())
    return emitOpError("needs at least one unit");
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t u : units) {
    if (u < 0)
      return emitOpError("refers to unit ") << u;
    if (!seen.insert(u).second)
      return emitOpError("lists unit ") << u << " twice";
  }
  return success();
}

static bool inBackward(Operation *op) {
  return cast<ProgramOp>(op->getParentOp()).getPhase() ==
         ProgramPhase::backward;
}

LogicalResult ComputeUnitOp::verify() {
  if (getRecompute() && !inBackward(*this))
    return emitOpError("recompute belongs to the backward program");
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  if (!inBackward(*this))
    return emitOpError("gradient reductions belong to the backward program");
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (!inBackward(*this))
    return emitOpError("gradient reductions belong to the backward program");
  return success();
}

LogicalResult CopyOp::verify() {
  auto program = dyn_cast<ProgramOp>((*this)->getParentOp());
  bool params = getWhat() == HostData::params;
  bool toDevice = getDirection() == CopyDirection::host_to_device;
  if (params != toDevice)
    return emitOpError(params ? "parameters only move host_to_device (the "
                                "host copy is the master)"
                              : "gradients only move device_to_host (to "
                                "the host optimizer)");
  if (!program) {
    if (getUnit() || getBucket())
      return emitOpError("a copy around the optimizer step moves every unit");
    if (!params)
      return emitOpError("gradients are copied from the backward program, "
                         "per bucket");
    return success();
  }
  if (params && (!getUnit() || getBucket()))
    return emitOpError("a parameter copy in a program names one unit");
  if (!params && (!getBucket() || getUnit()))
    return emitOpError("a gradient copy names one bucket");
  if (!params && program.getPhase() != ProgramPhase::backward)
    return emitOpError("gradients exist only in the backward program");
  return success();
}
