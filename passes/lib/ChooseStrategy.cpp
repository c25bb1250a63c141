//===- ChooseStrategy.cpp - search and record the decision ----------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"
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

cost::FixedDecisions fixedDecisions(JobOp job, std::vector<int> allowedZero) {
  StrategyAttr s = job.getStrategy();
  cost::FixedDecisions fixed;
  llvm::sort(allowedZero);
  fixed.allowedZero = std::move(allowedZero);
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
  fixed.offloadActivations = s.getOffloadActivations();
  fixed.mlpTileTokens = s.getMlpTileTokens();
  if (job.getMicroBatchSize())
    fixed.microBatchSize = *job.getMicroBatchSize();
  fixed.dpShard = s.getDpShard();
  fixed.tp = s.getTp();
  fixed.pp = s.getPp();
  fixed.cp = s.getCp();
  fixed.ppSchedule = s.getPpSchedule();
  fixed.virtualStages = s.getVirtualStages();
  return fixed;
}

CandidateAttr candidateAttr(MLIRContext *context, const cost::Candidate &c,
                            int64_t world) {
  const cost::Strategy &s = c.strategy;
  const cost::Layout &l = s.layout;
  Builder b(context);
  // The layout over the GPUs, when it is not one group of every GPU.
  MeshAttr mesh;
  if (!l.dataParallelOnly(world))
    mesh = MeshAttr::get(context, l.replicas(world), l.shardGroup(world), l.cp,
                         l.pp, l.tp, l.schedule, l.virtualStages,
                         /*sequence_parallel=*/false, l.cpKind,
                         DenseI64ArrayAttr());
  SmallVector<NamedAttribute> breakdown;
  for (const auto &[name, bytes] : c.estimate.memory.breakdown)
    breakdown.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(bytes)));
  return CandidateAttr::get(
      context, s.zero, s.offload, s.checkpointing, s.checkpointLayers,
      s.microBatchSize, s.gradientAccumulation, c.fits,
      c.estimate.memory.peakBytes, llvm::APFloat(c.estimate.time.stepSeconds),
      llvm::APFloat(c.estimate.time.tokensPerSecond), c.verdict,
      b.getDictionaryAttr(breakdown), s.offloadActivations, s.mlpTileTokens,
      mesh);
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
      // A layout the cost model cannot price is refused, not searched as
      // if it were the trivial one.
      if (std::string why = job.unpricedLayout(); !why.empty()) {
        job.emitError(why);
        return WalkResult::interrupt();
      }
      cost::SearchOptions options;
      options.memoryMargin = memoryMargin;
      options.alternatives = alternatives;
      const cost::Hardware hw = cluster.hardware();
      const int64_t world = hw.worldSize();
      cost::SearchResult result =
          cost::search(model.profile(job), job.trainingSetup(), hw,
                       fixedDecisions(job, {allowedZero.begin(), allowedZero.end()}),
                       options);
      if (!result.error.empty()) {
        job.emitError(result.error);
        return WalkResult::interrupt();
      }
      MLIRContext *context = job.getContext();
      Builder b(context);
      SmallVector<Attribute> alternativesAttr;
      for (const cost::Candidate &c : result.alternatives)
        alternativesAttr.push_back(candidateAttr(context, c, world));
      CandidateAttr chosen, closest;
      std::optional<int64_t> shortfall;
      if (result.best)
        chosen = candidateAttr(context, *result.best, world);
      if (result.closest) {
        closest = candidateAttr(context, *result.closest, world);
        shortfall = result.closest->estimate.memory.peakBytes - result.usableBytes;
      }
      // The job gets the chosen strategy, or the closest one when nothing
      // fits, so later phases can still show what it would take.
      if (const cost::Candidate *pick = result.best ? &*result.best
                                                     : result.closest ? &*result.closest
                                                                      : nullptr) {
        const cost::Strategy &s = pick->strategy;
        const cost::Layout &l = s.layout;
        auto nonTrivial = [](int64_t degree) {
          return degree > 1 ? std::optional<int64_t>(degree) : std::nullopt;
        };
        job.setStrategyAttr(StrategyAttr::get(
            context, static_cast<ZeroStage>(s.zero), s.offload, s.checkpointing,
            s.checkpointLayers >= 0 ? std::optional<int64_t>(s.checkpointLayers)
                                    : std::nullopt,
            s.bucketBytes, s.prefetchDepth,
            s.offloadActivations ? std::optional<int64_t>(s.offloadActivations)
                                 : std::nullopt,
            s.mlpTileTokens ? std::optional<int64_t>(s.mlpTileTokens)
                            : std::nullopt,
            // The mesh's non-trivial keys only (the trivial layout is not
            // written): tp, pp, cp above 1, the schedule of a pipeline,
            // model chunks above 1, shard groups when not one of every
            // data-parallel rank.
            nonTrivial(l.tp), nonTrivial(l.pp), nonTrivial(l.cp),
            l.replicas(world) > 1 ? std::optional<int64_t>(l.shardGroup(world))
                                  : std::nullopt,
            l.pp > 1 ? std::optional<::swift::plan::PipelineSchedule>(l.schedule) : std::nullopt,
            nonTrivial(l.virtualStages)));
        job.setMicroBatchSizeAttr(b.getI64IntegerAttr(s.microBatchSize));
        job.setGradientAccumulationAttr(b.getI64IntegerAttr(s.gradientAccumulation));
      }
      job.setDecisionAttr(DecisionAttr::get(
          context, result.best.has_value(), result.usableBytes,
          llvm::APFloat(double(memoryMargin)), int64_t(result.evaluated),
          int64_t(result.considered), chosen, closest, shortfall,
          b.getArrayAttr(alternativesAttr)));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
