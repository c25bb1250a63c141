//===- EstimateCost.cpp - price the job's strategy into the IR ------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::swift {
#define GEN_PASS_DEF_ESTIMATECOSTPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;
namespace cost = ::swift::cost;

namespace {

/// Per-op FLOPs and saved bytes of one micro-batch, so the IR shows where
/// the work and the memory are.
void annotateOps(ModelOp model, const cost::Strategy &s, bool frozen) {
  model.walk([&](Operation *op) {
    auto costOp = dyn_cast<CostOpInterface>(op);
    if (!costOp)
      return;
    auto repeat = op->getParentOfType<RepeatOp>();
    bool recomputed = repeat && s.checkpointing != cost::Checkpointing::None &&
                      (s.checkpointLayers < 0 ||
                       int64_t(repeat.getFirstLayer()) < s.checkpointLayers);
    int64_t B = s.microBatchSize;
    int64_t forward =
        cost::saturatingProduct(B, costOp.getForwardFlopsPerSample());
    SmallVector<SavedTensor> saved;
    costOp.getSavedTensors(saved);
    int64_t savedBytes = 0;
    for (const SavedTensor &t : saved)
      savedBytes = std::min(cost::kSaturatedCount,
                            savedBytes + cost::saturatingProduct(
                                             B, t.bytesPerSample()));
    setOpCost(op, OpCostAttr::get(
                      model.getContext(), forward,
                      cost::saturatingProduct(
                          B, costOp.getBackwardFlopsPerSample(!frozen)),
                      recomputed ? forward : 0, savedBytes));
  });
}

EstimateAttr estimateAttr(MLIRContext *context, const cost::Estimate &e) {
  Builder b(context);
  SmallVector<NamedAttribute> breakdown;
  for (const auto &[name, bytes] : e.memory.breakdown)
    breakdown.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(bytes)));
  const cost::MemoryEstimate &m = e.memory;
  const cost::TimeEstimate &t = e.time;
  SmallVector<Attribute> timeline;
  for (const cost::MemoryPoint &p : m.timeline)
    timeline.push_back(MemoryPointAttr::get(context, p.at.phase, p.at.layer,
                                            p.at.op, p.bytes));
  auto real = [](double x) { return llvm::APFloat(x); };
  return EstimateAttr::get(
      context, m.peakBytes, m.capacityBytes, m.peak.phase, m.peak.layer,
      m.peak.op, b.getDictionaryAttr(breakdown), m.forwardPeakBytes,
      m.backwardPeakBytes, m.optimizerPeakBytes, m.layerActivationBytes,
      m.checkpointedLayerBytes, m.headActivationBytes, m.hostBytes,
      real(t.stepSeconds), real(t.computeSeconds), real(t.recomputeSeconds),
      real(t.communicationSeconds), real(t.exposedCommunicationSeconds),
      real(t.offloadSeconds), real(t.optimizerSeconds),
      real(t.tokensPerSecond), real(t.mfu), b.getArrayAttr(timeline),
      m.offloadedActivationBytes,
      t.activationCopySeconds > 0 ? std::optional<APFloat>(real(t.activationCopySeconds))
                                  : std::nullopt,
      t.activationCopySeconds > 0
          ? std::optional<APFloat>(real(t.activationOffloadSeconds))
          : std::nullopt,
      t.pipelineBubbleSeconds > 0
          ? std::optional<APFloat>(real(t.pipelineBubbleSeconds))
          : std::nullopt);
}

struct EstimateCostPass
    : mlir::swift::impl::EstimateCostPassBase<EstimateCostPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    WalkResult result = module.walk([&](JobOp job) {
      auto model = symbols.lookup<ModelOp>(job.getModel());
      auto cluster = symbols.lookup<ClusterOp>(job.getCluster());
      if (!model || !cluster) {
        job.emitOpError("needs its model and cluster");
        return WalkResult::interrupt();
      }
      FailureOr<cost::Strategy> strategy =
          job.completeStrategy("fix every decision before estimating");
      if (failed(strategy))
        return WalkResult::interrupt();
      cost::ModelProfile profile = model.profile(job);
      cost::TrainingSetup setup = job.trainingSetup();
      cost::Hardware hw = cluster.hardware();
      std::string why = cost::unsupportedReason(profile, setup, hw, *strategy);
      if (!why.empty()) {
        job.emitOpError("backend ")
            << cost::toString(setup.backend) << " cannot run this strategy: " << why;
        return WalkResult::interrupt();
      }
      annotateOps(model, *strategy, setup.method != cost::Method::Full);
      cost::Estimate e = cost::estimate(profile, setup, hw, *strategy);
      job.setEstimateAttr(estimateAttr(job.getContext(), e));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
