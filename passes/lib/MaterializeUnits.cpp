//===- MaterializeUnits.cpp - one schedule unit per layer -----------------===//
//
// The unit is the runtime's granularity of sharding, gathering, gradient
// reduction and recompute (plan/include/swift/Plan/Plan.h): the
// embedding, each decoder layer, the head. The model keeps identical layers
// folded in swift.repeat; the schedule unrolls them because per-layer
// decisions (checkpoint the first k, gather layer i while computing i-1)
// need one op per layer.
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
namespace cost = ::swift::cost;

namespace {

/// Parameters of each unit, read from where the swift.param ops sit in the
/// model body: before the first repeat (embedding), inside a repeat (one
/// decoder layer per application), after the repeats (head).
struct UnitParameters {
  int64_t embedding = 0;
  SmallVector<int64_t> layers; // indexed by decoder layer
  int64_t head = 0;
  bool headReadsEmbedding = false;
};

FailureOr<UnitParameters> countUnitParameters(ModelOp model) {
  UnitParameters counts;
  llvm::DenseSet<Value> beforeLayers;
  bool afterLayers = false;
  for (Operation &op : model.getBody().front()) {
    if (auto param = dyn_cast<ParamOp>(op)) {
      (afterLayers ? counts.head : counts.embedding) += param.getNumElements();
      if (!afterLayers)
        beforeLayers.insert(param.getResult());
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
      continue;
    }
    // A head op reading a parameter of the embedding: tied embeddings.
    if (afterLayers)
      for (Value operand : op.getOperands())
        counts.headReadsEmbedding |= beforeLayers.contains(operand);
  }
  if (counts.layers.empty())
    return model.emitOpError("has no swift.repeat of decoder layers to "
                             "schedule");
  return counts;
}

std::optional<Checkpointing> checkpointOf(const cost::Strategy &s,
                                          int64_t layer) {
  if (s.checkpointing == cost::Checkpointing::None ||
      (s.checkpointLayers >= 0 && layer >= s.checkpointLayers))
    return std::nullopt;
  return s.checkpointing == cost::Checkpointing::Full
             ? Checkpointing::Full
             : Checkpointing::Selective;
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

  OpBuilder b(job);
  b.setInsertionPointAfter(job);
  Location loc = job.getLoc();
  auto schedule = ScheduleOp::create(
      b, loc, b.getStringAttr(job.getSymName() + "_schedule"),
      FlatSymbolRefAttr::get(job.getSymNameAttr()), IntegerAttr(),
      IntegerAttr());
  b.setInsertionPointToStart(&schedule.getBody().emplaceBlock());
  auto unit = [&](UnitKind kind, std::optional<int64_t> layer,
                  int64_t parameters, bool readsEmbedding,
                  std::optional<Checkpointing> checkpoint) {
    int64_t index = schedule.getUnits().size();
    UnitOp::create(b, loc, b.getI64IntegerAttr(index),
                   UnitKindAttr::get(b.getContext(), kind),
                   layer ? b.getI64IntegerAttr(*layer) : IntegerAttr(),
                   b.getI64IntegerAttr(parameters),
                   readsEmbedding ? b.getUnitAttr() : UnitAttr(),
                   checkpoint
                       ? CheckpointingAttr::get(b.getContext(), *checkpoint)
                       : CheckpointingAttr());
  };
  unit(UnitKind::Embedding, std::nullopt, counts->embedding, false,
       std::nullopt);
  for (auto [layer, parameters] : llvm::enumerate(counts->layers))
    unit(UnitKind::Decoder, layer, parameters, false,
         checkpointOf(target->strategy, layer));
  unit(UnitKind::Head, std::nullopt, counts->head, counts->headReadsEmbedding,
       std::nullopt);
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
