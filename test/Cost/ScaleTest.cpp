//===- ScaleTest.cpp - pricing and planning time against the layer count -===//
//
// Acceptance 6b of issue 32: planning is linear in layers. The search prices
// each strategy without the memory timeline, and then a price costs the same
// at 4,096 layers as at 126 (docs/cost-model.md, "Scale"). Timings are the
// minimum of five runs, and the bounds are loose, so a loaded machine does
// not fail them; sanitizers slow every path unevenly, so they skip.
//
//===----------------------------------------------------------------------===//

#include "PriceJob.h"

#include "swift/Cost/Search.h"
#include "swift/Plan/Schedule.h"

#include <algorithm>
#include <chrono>

using namespace swift::job;
using namespace swift::job::testing;
namespace cost = swift::cost;

namespace {

bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||    \
    __has_feature(memory_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

PricedJob price(std::vector<std::string> sets, int64_t layers) {
  static mlir::MLIRContext context;
  sets.push_back("model.num_hidden_layers=" + std::to_string(layers));
  return priceJob(context, sets);
}

/// Seconds of one estimate() as the search calls it: the minimum over five
/// runs of the mean of `calls` calls.
double priceSeconds(const PricedJob &p, int calls) {
  double best = 1e9;
  for (int run = 0; run < 5; ++run) {
    auto t0 = std::chrono::steady_clock::now();
    int64_t sink = 0;
    for (int i = 0; i < calls; ++i)
      sink += cost::estimate(p.profile, p.setup, p.hw, p.strategy,
                             cost::EstimateOptions{/*timeline=*/false})
                  .memory.peakBytes;
    auto t1 = std::chrono::steady_clock::now();
    EXPECT_GT(sink, 0);
    best = std::min(best,
                    std::chrono::duration<double>(t1 - t0).count() / calls);
  }
  return best;
}

/// Strategies whose walk differs: swift-run ZeRO-3 (reductions in flight),
/// ZeRO-2 accumulating, ZeRO-0 updating in backward; FSDP2 keeping every
/// layer gathered (ZeRO-2); DeepSpeed ZeRO-1 with offloaded optimizer.
std::vector<std::vector<std::string>> strategies() {
  std::vector<std::string> common = {
      "cluster.gpus_per_node=8", "training.sequence_length=2048",
      "training.micro_batch_size=1", "strategy.offload=none"};
  auto with = [&](std::vector<std::string> keys) {
    keys.insert(keys.end(), common.begin(), common.end());
    return keys;
  };
  return {
      with({"backend=swift-run", "training.global_batch_size=8",
            "strategy.zero=3", "strategy.checkpointing=full"}),
      with({"backend=swift-run", "training.global_batch_size=32",
            "strategy.zero=2", "strategy.checkpointing=none"}),
      with({"backend=swift-run", "training.global_batch_size=8",
            "strategy.zero=0", "strategy.checkpointing=full"}),
      with({"backend=hf", "training.global_batch_size=8", "strategy.zero=2",
            "strategy.checkpointing=full"}),
      with({"backend=deepspeed", "training.global_batch_size=8",
            "strategy.zero=1", "strategy.checkpointing=none"}),
  };
}

} // namespace

// The price of one strategy does not grow with the layer count: 4,096
// layers cost at most 3x the time of 126 (a walk over the layers would be
// 32x, and the per-layer gradient queue of ZeRO-2/3 more).
TEST(Scale, PriceTimeDoesNotGrowWithLayers) {
  if (sanitized())
    GTEST_SKIP() << "timings under sanitizers";
  for (const std::vector<std::string> &sets : strategies()) {
    const std::string name = sets[0] + ", " + sets[2] + ", " + sets[3];
    SCOPED_TRACE(name);
    PricedJob small = price(sets, 126), large = price(sets, 4096);
    ASSERT_EQ(large.profile.numLayers, 4096);
    double t126 = priceSeconds(small, 20), t4096 = priceSeconds(large, 20);
    std::printf("%s: %.1f us at 126 layers, %.1f us at 4096\n", name.c_str(),
                1e6 * t126, 1e6 * t4096);
    EXPECT_LT(t4096, 3 * t126) << t126 << " s at 126 layers, " << t4096
                               << " s at 4096";
  }
}

// plan::buildSchedule(), which the materialize passes, the verifier and
// parsePlan() run, is linear in units: a bucket per unit (each as large as
// the bucket target, as a 405B layer is), 16,384 layers cost at most 3x per
// layer what 2,048 do (finding each step's ready buckets by scanning all of
// them made it 8x).
TEST(Scale, ScheduleTimeIsLinearInLayers) {
  if (sanitized())
    GTEST_SKIP() << "timings under sanitizers";
  auto seconds = [](int64_t layers) {
    swift::plan::ModelConfig m;
    m.hiddenSize = 256;
    m.intermediateSize = 512;
    m.numLayers = layers;
    m.numHeads = 4;
    m.numKvHeads = 4;
    m.headDim = 64;
    m.vocabSize = 1024;
    m.tieWordEmbeddings = true;
    swift::plan::StrategyConfig st;
    st.zero = 3;
    st.bucketBytes = 1; // every unit closes its bucket
    const std::vector<int64_t> units = swift::plan::unitParameterCounts(m);
    double best = 1e9;
    for (int run = 0; run < 5; ++run) {
      auto t0 = std::chrono::steady_clock::now();
      swift::plan::BuiltSchedule built = swift::plan::buildSchedule(m, st, units);
      best = std::min(best, std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - t0)
                                .count());
      EXPECT_EQ(built.schedule.buckets.size(), size_t(layers + 2));
    }
    return best / double(layers);
  };
  double small = seconds(2048), large = seconds(16384);
  std::printf("buildSchedule: %.0f ns a layer at 2,048 layers, %.0f at 16,384\n",
              1e9 * small, 1e9 * large);
  EXPECT_LT(large, 3 * small);
}

// What swift-plan does for a 4,096-layer model (Llama-3.1-405B's layer,
// 1,024 GPUs): every strategy priced, none fits, the closest estimated and
// scheduled, then the changes that might fit each planned again. Well
// under the bound: 0.2 s on the 2-core build machine, 11 s while each
// price walked every layer.
TEST(Scale, PlansA4096LayerModelInUnderThreeSeconds) {
  if (sanitized())
    GTEST_SKIP() << "timings under sanitizers";
  const char *yaml = R"(model: llama3.1-405b
training: {sequence_length: 8192, global_batch_size: 2048}
cluster:
  gpu: h100
  gpus_per_node: 8
  nodes: 128
  interconnect: {intra_node: nvlink4, inter_node: ib-400g}
  host: {memory_gib: 2048}
)";
  Diagnostic diag;
  auto job = loadJob(writeTemp(yaml), {"model.num_hidden_layers=4096"}, diag);
  ASSERT_TRUE(job) << diag.str();
  mlir::MLIRContext context;
  auto t0 = std::chrono::steady_clock::now();
  const mlir::swift::PlanningOptions options;
  mlir::swift::PlannedJob planned = mlir::swift::planJob(*job, context, options);
  ASSERT_FALSE(planned.fits());
  mlir::swift::changesThatFit(*job, context, options); // none does
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - t0)
                       .count();
  ASSERT_EQ(planned.error, "");
  // The chosen strategy's estimate has its timeline, a point per layer's
  // forward and backward.
  ASSERT_TRUE(planned.job.getEstimate());
  EXPECT_GT(planned.job.getEstimate()->getTimeline().size(), 2 * 4096u);
  EXPECT_LT(seconds, 3.0);
}

// Priced at its breakpoints (no timeline), every strategy's memory is the
// walk over every layer's: the same peak, where, its parts and each phase's
// peak. Backends, methods and precisions, each strategy field, and layer
// counts below, at and above the reductions in flight.
TEST(Scale, BreakpointsFindTheWalksPeak) {
  std::vector<std::vector<std::string>> jobs;
  for (std::string model : {"llama3.2-1b", "llama3.1-8b"}) // tied, untied
    for (std::string backend : {"swift-run", "hf", "deepspeed"})
      for (std::string method : {"full", "lora", "qlora"})
        for (std::string precision : {"bf16-mixed", "bf16", "fp8-mixed"})
          if (precision != "fp8-mixed" || (backend == "swift-run" && method == "full"))
            jobs.push_back({"model=" + model, "backend=" + backend,
                            "training.method=" + method,
                            "training.precision=" + precision,
                            "cluster.gpus_per_node=2",
                            "training.sequence_length=4096",
                            "training.global_batch_size=8",
                            "training.micro_batch_size=1", "strategy.zero=0",
                            "strategy.offload=none",
                            "strategy.checkpointing=none"});
  int compared = 0;
  for (const std::vector<std::string> &sets : jobs)
    for (int64_t layers : {1, 3, 4, 5, 16, 126}) {
      SCOPED_TRACE(sets[0] + ", " + sets[1] + ", " + sets[2] + ", " + sets[3] +
                   ", " + std::to_string(layers) + " layers");
      PricedJob p = price(sets, layers);
      for (int zero = 0; zero <= 3; ++zero)
        for (cost::Offload offload :
             {cost::Offload::None, cost::Offload::Optimizer,
              cost::Offload::OptimizerAndParams})
          for (cost::Checkpointing ckpt :
               {cost::Checkpointing::None, cost::Checkpointing::Selective,
                cost::Checkpointing::Full})
            for (int64_t first : {int64_t(-1), layers / 2})
              for (int64_t offloaded : {int64_t(0), int64_t(-1), (layers + 1) / 2})
                for (int64_t tile : {0, 1024})
                  for (int64_t mb : {1, 4}) {
                    cost::Strategy s = p.strategy;
                    s.zero = zero;
                    s.offload = offload;
                    s.checkpointing = ckpt;
                    s.checkpointLayers = first;
                    s.offloadActivations = offloaded;
                    s.mlpTileTokens = tile;
                    s.microBatchSize = mb;
                    s.gradientAccumulation = 4 / mb;
                    if (!cost::unsupportedReason(p.profile, p.setup, p.hw, s).empty())
                      continue;
                    cost::MemoryEstimate walk =
                        cost::estimate(p.profile, p.setup, p.hw, s).memory;
                    cost::MemoryEstimate fast =
                        cost::estimate(p.profile, p.setup, p.hw, s,
                                       cost::EstimateOptions{/*timeline=*/false})
                            .memory;
                    SCOPED_TRACE(describe(s));
                    EXPECT_TRUE(fast.timeline.empty());
                    EXPECT_EQ(fast.peakBytes, walk.peakBytes);
                    EXPECT_EQ(fast.peak.str(), walk.peak.str());
                    EXPECT_EQ(fast.breakdown, walk.breakdown);
                    EXPECT_EQ(fast.forwardPeakBytes, walk.forwardPeakBytes);
                    EXPECT_EQ(fast.backwardPeakBytes, walk.backwardPeakBytes);
                    EXPECT_EQ(fast.optimizerPeakBytes, walk.optimizerPeakBytes);
                    EXPECT_EQ(fast.hostBytes, walk.hostBytes);
                    ++compared;
                  }
    }
  EXPECT_GT(compared, 1000);
}
