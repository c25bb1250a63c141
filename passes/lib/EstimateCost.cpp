//===- EstimateCost.cpp - price the job's strategy into the IR ------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"
#include "swift/Passes/Profile.h"

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
  Builder b(model);
  model.walk([&](Operation *op) {
    auto costOp = dyn_cast<CostOpInterface>(op);
    if (!costOp)
      return;
    auto repeat = op->getParentOfType<RepeatOp>();
    bool recomputed = repeat && s.checkpointing != cost::Checkpointing::None &&
                      (s.checkpointLayers < 0 ||
                       int64_t(repeat.getFirstLayer()) < s.checkpointLayers);
    int64_t B = s.microBatchSize;
    int64_t forward = B * costOp.getForwardFlopsPerSample();
    SmallVector<SavedTensor> saved;
    costOp.getSavedTensors(saved);
    int64_t savedBytes = 0;
    for (const SavedTensor &t : saved)
      savedBytes += B * t.bytesPerSample();
    op->setAttr("swift.cost",
                b.getDictionaryAttr({
                    b.getNamedAttr("forward_flops", b.getI64IntegerAttr(forward)),
                    b.getNamedAttr("backward_flops",
                                   b.getI64IntegerAttr(
                                       B * costOp.getBackwardFlopsPerSample(!frozen))),
                    b.getNamedAttr("recompute_flops",
                                   b.getI64IntegerAttr(recomputed ? forward : 0)),
                    b.getNamedAttr("saved_bytes", b.getI64IntegerAttr(savedBytes)),
                }));
  });
}

DictionaryAttr estimateAttr(Builder &b, const cost::Estimate &e) {
  SmallVector<NamedAttribute> breakdown;
  for (const auto &[name, bytes] : e.memory.breakdown)
    breakdown.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(bytes)));
  const cost::TimeEstimate &t = e.time;
  return b.getDictionaryAttr({
      b.getNamedAttr("peak_bytes", b.getI64IntegerAttr(e.memory.peakBytes)),
      b.getNamedAttr("capacity_bytes", b.getI64IntegerAttr(e.memory.capacityBytes)),
      b.getNamedAttr("peak", b.getDictionaryAttr({
          b.getNamedAttr("phase", b.getStringAttr(e.memory.peak.phase)),
          b.getNamedAttr("layer", b.getI64IntegerAttr(e.memory.peak.layer)),
          b.getNamedAttr("op", b.getStringAttr(e.memory.peak.op))})),
      b.getNamedAttr("forward_peak_bytes", b.getI64IntegerAttr(e.memory.forwardPeakBytes)),
      b.getNamedAttr("backward_peak_bytes", b.getI64IntegerAttr(e.memory.backwardPeakBytes)),
      b.getNamedAttr("optimizer_peak_bytes", b.getI64IntegerAttr(e.memory.optimizerPeakBytes)),
      b.getNamedAttr("layer_activation_bytes", b.getI64IntegerAttr(e.memory.layerActivationBytes)),
      b.getNamedAttr("checkpointed_layer_bytes", b.getI64IntegerAttr(e.memory.checkpointedLayerBytes)),
      b.getNamedAttr("head_activation_bytes", b.getI64IntegerAttr(e.memory.headActivationBytes)),
      b.getNamedAttr("recompute_seconds", b.getF64FloatAttr(t.recomputeSeconds)),
      b.getNamedAttr("communication_seconds", b.getF64FloatAttr(t.communicationSeconds)),
      b.getNamedAttr("breakdown", b.getDictionaryAttr(breakdown)),
      b.getNamedAttr("host_bytes", b.getI64IntegerAttr(e.memory.hostBytes)),
      b.getNamedAttr("step_seconds", b.getF64FloatAttr(t.stepSeconds)),
      b.getNamedAttr("compute_seconds", b.getF64FloatAttr(t.computeSeconds)),
      b.getNamedAttr("exposed_communication_seconds",
                     b.getF64FloatAttr(t.exposedCommunicationSeconds)),
      b.getNamedAttr("offload_seconds", b.getF64FloatAttr(t.offloadSeconds)),
      b.getNamedAttr("optimizer_seconds", b.getF64FloatAttr(t.optimizerSeconds)),
      b.getNamedAttr("tokens_per_second", b.getF64FloatAttr(t.tokensPerSecond)),
      b.getNamedAttr("mfu", b.getF64FloatAttr(t.mfu)),
  });
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
      std::string missing;
      std::optional<cost::Strategy> strategy =
          fixedStrategy(job, cluster.getNumGpus(), missing);
      if (!strategy) {
        job.emitOpError("strategy is not complete (open: ")
            << missing << "); fix every decision before estimating";
        return WalkResult::interrupt();
      }
      cost::ModelProfile profile = buildModelProfile(model, job);
      cost::TrainingSetup setup = trainingSetup(job);
      cost::Hardware hw = hardware(cluster);
      std::string why = cost::unsupportedReason(profile, setup, hw, *strategy);
      if (!why.empty()) {
        job.emitOpError("backend ")
            << cost::toString(setup.backend) << " cannot run this strategy: " << why;
        return WalkResult::interrupt();
      }
      annotateOps(model, *strategy, setup.method != cost::Method::Full);
      cost::Estimate e = cost::estimate(profile, setup, hw, *strategy);
      Builder b(job);
      job->setAttr("swift.estimate", estimateAttr(b, e));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
