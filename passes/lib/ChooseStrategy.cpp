//===- ChooseStrategy.cpp - search and record the decision ----------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"
#include "swift/Passes/Profile.h"
#include "swift/Cost/Search.h"

#include "mlir/IR/Builders.h"

namespace mlir::swift {
#define GEN_PASS_DEF_CHOOSESTRATEGYPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;
namespace cost = ::swift::cost;

namespace {

cost::FixedDecisions fixedDecisions(JobOp job) {
  StrategyAttr s = job.getStrategy();
  cost::FixedDecisions fixed;
  if (s.getZero())
    fixed.zero = static_cast<int>(*s.getZero());
  if (s.getOffload())
    fixed.offload = *s.getOffload();
  if (s.getCheckpointing())
    fixed.checkpointing = *s.getCheckpointing();
  fixed.checkpointLayers = s.getCheckpointLayers();
  fixed.bucketBytes = s.getBucketBytes();
  if (s.getPrefetchDepth())
    fixed.prefetchDepth = static_cast<int>(*s.getPrefetchDepth());
  if (job.getMicroBatchSize())
    fixed.microBatchSize = *job.getMicroBatchSize();
  return fixed;
}

DictionaryAttr candidateAttr(Builder &b, const cost::Candidate &c) {
  const cost::Strategy &s = c.strategy;
  return b.getDictionaryAttr({
      b.getNamedAttr("strategy", b.getStringAttr(cost::describe(s))),
      b.getNamedAttr("zero", b.getI64IntegerAttr(s.zero)),
      b.getNamedAttr("offload", b.getStringAttr(cost::toString(s.offload))),
      b.getNamedAttr("checkpointing", b.getStringAttr(cost::toString(s.checkpointing))),
      b.getNamedAttr("checkpoint_layers", b.getI64IntegerAttr(s.checkpointLayers)),
      b.getNamedAttr("micro_batch_size", b.getI64IntegerAttr(s.microBatchSize)),
      b.getNamedAttr("gradient_accumulation", b.getI64IntegerAttr(s.gradientAccumulation)),
      b.getNamedAttr("fits", b.getBoolAttr(c.fits)),
      b.getNamedAttr("peak_bytes", b.getI64IntegerAttr(c.estimate.memory.peakBytes)),
      b.getNamedAttr("step_seconds", b.getF64FloatAttr(c.estimate.time.stepSeconds)),
      b.getNamedAttr("tokens_per_second", b.getF64FloatAttr(c.estimate.time.tokensPerSecond)),
      b.getNamedAttr("verdict", b.getStringAttr(c.verdict)),
  });
}

struct ChooseStrategyPass
    : mlir::swift::impl::ChooseStrategyPassBase<ChooseStrategyPass> {
  using ChooseStrategyPassBase::ChooseStrategyPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    WalkResult walk = module.walk([&](JobOp job) {
      auto model = symbols.lookup<ModelOp>(job.getModel());
      auto cluster = symbols.lookup<ClusterOp>(job.getCluster());
      if (!model || !cluster) {
        job.emitOpError("needs its model and cluster");
        return WalkResult::interrupt();
      }
      cost::SearchOptions options;
      options.memoryMargin = memoryMargin;
      options.alternatives = alternatives;
      cost::SearchResult result =
          cost::search(buildModelProfile(model, job), trainingSetup(job),
                       hardware(cluster), fixedDecisions(job), options);
      if (!result.error.empty()) {
        job.emitError(result.error);
        return WalkResult::interrupt();
      }
      Builder b(job);
      SmallVector<Attribute> alternativesAttr;
      for (const cost::Candidate &c : result.alternatives)
        alternativesAttr.push_back(candidateAttr(b, c));
      SmallVector<NamedAttribute> decision = {
          b.getNamedAttr("status", b.getStringAttr(result.best ? "chosen" : "nothing-fits")),
          b.getNamedAttr("usable_bytes", b.getI64IntegerAttr(result.usableBytes)),
          b.getNamedAttr("memory_margin", b.getF64FloatAttr(memoryMargin)),
          b.getNamedAttr("evaluated", b.getI64IntegerAttr(result.evaluated)),
          b.getNamedAttr("considered", b.getI64IntegerAttr(result.considered)),
          b.getNamedAttr("alternatives", b.getArrayAttr(alternativesAttr)),
      };
      if (result.closest) {
        decision.push_back(b.getNamedAttr("closest", candidateAttr(b, *result.closest)));
        decision.push_back(b.getNamedAttr(
            "shortfall_bytes",
            b.getI64IntegerAttr(result.closest->estimate.memory.peakBytes -
                                result.usableBytes)));
      }
      if (result.best)
        decision.push_back(b.getNamedAttr("chosen", candidateAttr(b, *result.best)));
      // The job gets the chosen strategy, or the closest one when nothing
      // fits, so later phases can still show what it would take.
      if (const cost::Candidate *pick = result.best ? &*result.best
                                                     : result.closest ? &*result.closest
                                                                      : nullptr) {
        const cost::Strategy &s = pick->strategy;
        job.setStrategyAttr(StrategyAttr::get(
            b.getContext(), static_cast<ZeroStage>(s.zero),
            s.offload, s.checkpointing,
            s.checkpointLayers >= 0 ? std::optional<int64_t>(s.checkpointLayers)
                                    : std::nullopt,
            s.bucketBytes, s.prefetchDepth));
        job.setMicroBatchSizeAttr(b.getI64IntegerAttr(s.microBatchSize));
      }
      job->setAttr("swift.decision", b.getDictionaryAttr(decision));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
