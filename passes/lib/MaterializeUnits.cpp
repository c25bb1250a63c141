//===- MaterializeUnits.cpp - one schedule unit per layer -----------------===//
//
// The unit is the runtime's granularity of sharding, gathering, gradient
// reduction and recompute (plan/include/swift/Plan/Plan.h): the
// embedding, each decoder layer, the head. The model keeps identical layers
// folded in swift.repeat; the schedule unrolls them because per-layer
// decisions (checkpoint the first k, gather layer i while computing i-1)
// need one op per layer. The units and their checkpointing are those of
// plan/'s buildSchedule(); the parameter counts are the IR's own.
//
//===----------------------------------------------------------------------===//

#include "ScheduleSupport.h"

#include "swift/Passes/Passes.h"

namespace mlir::swift {
#define GEN_PASS_DEF_MATERIALIZEUNITSPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;

namespace {

/// Parameters of each unit, read from where the swift.param ops sit in the
/// model body: before the first repeat (embedding), inside a repeat (one
/// decoder layer per application), after the repeats (head).
struct UnitParameters {
  int64_t embedding = 0;
  SmallVector<int64_t> layers; // indexed by decoder layer
  int64_t head = 0;

  /// In unit order: embedding, layers, head.
  std::vector<int64_t> units() const {
    std::vector<int64_t> out{embedding};
    out.insert(out.end(), layers.begin(), layers.end());
    out.push_back(head);
    return out;
  }
};

FailureOr<UnitParameters> countUnitParameters(ModelOp model) {
  UnitParameters counts;
  bool afterLayers = false;
  for (Operation &op : model.getBody().front()) {
    if (auto param = dyn_cast<ParamOp>(op)) {
      (afterLayers ? counts.head : counts.embedding) += param.getNumElements();
      continue;
    }
    if (auto repeat = dyn_cast<RepeatOp>(op)) {
      int64_t perLayer = 0;
      repeat.getBody().walk(
          [&](ParamOp param) { perLayer += param.getNumElements(); });
      if (repeat.getFirstLayer() != counts.layers.size())
        return repeat.emitOpError("starts at layer ")
               << repeat.getFirstLayer() << " but layers 0.."
               << int64_t(counts.layers.size()) - 1
               << " come before it; the schedule needs layers in order";
      counts.layers.append(repeat.getCount(), perLayer);
      afterLayers = true;
    }
  }
  if (counts.layers.empty())
    return model.emitOpError("has no swift.repeat of decoder layers to "
                             "schedule");
  return counts;
}

LogicalResult materializeUnits(JobOp job) {
  FailureOr<ScheduleTarget> target =
      resolveScheduleTarget(job, "swift-materialize-units", false);
  if (failed(target))
    return failure();
  if (target->schedule)
    return target->schedule.emitOpError("already exists for @")
           << job.getSymName() << "; materialize into a fresh module";
  FailureOr<UnitParameters> counts = countUnitParameters(target->model);
  if (failed(counts))
    return failure();

  std::vector<int64_t> parameters = counts->units();
  FailureOr<::swift::plan::BuiltSchedule> built = buildSchedule(
      *target, strategyConfig(*target), parameters, target->model);
  if (failed(built))
    return failure();

  OpBuilder b(job);
  b.setInsertionPointAfter(job);
  Location loc = job.getLoc();
  MLIRContext *ctx = b.getContext();
  auto schedule = ScheduleOp::create(
      b, loc, b.getStringAttr(job.getSymName() + "_schedule"),
      FlatSymbolRefAttr::get(job.getSymNameAttr()), IntegerAttr(),
      IntegerAttr());
  b.setInsertionPointToStart(&schedule.getBody().emplaceBlock());
  for (auto [index, spec] : llvm::enumerate(built->schedule.units)) {
    bool decoder = spec.kind == UnitKind::Decoder;
    // A unit that reads another's parameters: the tied head reads unit 0's.
    bool readsEmbedding =
        index != 0 &&
        llvm::is_contained(
            ::swift::plan::unitOwners(target->config, int(index)), 0);
    UnitOp::create(b, loc, b.getI64IntegerAttr(index),
                   UnitKindAttr::get(ctx, spec.kind),
                   decoder ? b.getI64IntegerAttr(spec.layer) : IntegerAttr(),
                   b.getI64IntegerAttr(parameters[index]),
                   readsEmbedding ? b.getUnitAttr() : UnitAttr(),
                   spec.checkpoint != Checkpointing::None
                       ? CheckpointingAttr::get(ctx, spec.checkpoint)
                       : CheckpointingAttr(),
                   spec.offloadInput ? b.getUnitAttr() : UnitAttr());
  }
  return success();
}

struct MaterializeUnitsPass
    : mlir::swift::impl::MaterializeUnitsPassBase<MaterializeUnitsPass> {
  void runOnOperation() override {
    if (!forEachJob(getOperation(), materializeUnits))
      signalPassFailure();
  }
};

} // namespace
