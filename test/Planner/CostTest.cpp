//===- CostTest.cpp - cost model invariants and DeepSpeed's closed forms --===//

#include "PriceJob.h"

using namespace swift::job;
using namespace swift::job::testing;
namespace cost = swift::cost;

namespace {

using Priced = PricedJob;

Priced price(std::vector<std::string> sets) {
  static mlir::MLIRContext context;
  return priceJob(context, sets);
}

std::vector<std::string> deepspeed(int zero, const char *offload) {
  return {"model=llama3.1-8b", "backend=deepspeed", "cluster.gpus_per_node=8",
          "training.global_batch_size=8", "training.micro_batch_size=1",
          "strategy.zero=" + std::to_string(zero),
          std::string("strategy.offload=") + offload,
          "strategy.checkpointing=full"};
}

// DeepSpeed's estimators (ANCHORS.md): ZeRO-2 2P + 18P/N, with optimizer
// offload 2P; ZeRO-3 4L + 18P/N, 4L + 2P/N, 4L (L: the largest layer).
TEST(DeepSpeed, ModelStatesEqualClosedForms) {
  Priced z2 = price(deepspeed(2, "none"));
  double P = z2.profile.parameters, N = 8;
  ASSERT_EQ(P, 8030261248.0);
  double L = std::max<double>({double(z2.profile.layerParameters),
                               double(z2.profile.embeddingParameters),
                               double(z2.profile.headParameters)});
  // Llama-8B's largest unit is its head: the untied lm_head and final norm.
  EXPECT_EQ(L, 128256.0 * 4096 + 4096);
  auto near = [](double a, double b) { return std::abs(a - b) <= 1; };
  EXPECT_TRUE(near(z2.estimate.memory.modelStateBytes, 2 * P + 18 * P / N));
  EXPECT_TRUE(near(price(deepspeed(2, "optimizer")).estimate.memory.modelStateBytes, 2 * P));
  EXPECT_TRUE(near(price(deepspeed(3, "none")).estimate.memory.modelStateBytes,
                   4 * L + 18 * P / N));
  EXPECT_TRUE(near(price(deepspeed(3, "optimizer")).estimate.memory.modelStateBytes,
                   4 * L + 2 * P / N));
  EXPECT_TRUE(near(price(deepspeed(3, "optimizer+params")).estimate.memory.modelStateBytes,
                   4 * L));
}

// Sharding more never costs model-state memory (FSDP2's ZeRO-2 and ZeRO-3
// hold the same shards; they differ in gathered parameters).
TEST(Cost, ShardingLowersModelStates) {
  for (const char *backend : {"hf", "deepspeed", "swift-run"}) {
    int64_t previous = INT64_MAX;
    for (int zero : {0, 2, 3}) {
      auto p = price({"model=llama3.1-8b", std::string("backend=") + backend,
                      "cluster.gpus_per_node=8", "training.global_batch_size=8",
                      "training.micro_batch_size=1",
                      "strategy.zero=" + std::to_string(zero), "strategy.offload=none",
                      "strategy.checkpointing=full"});
      EXPECT_LE(p.estimate.memory.modelStateBytes, previous) << backend << " zero " << zero;
      if (zero == 2) {
        EXPECT_LT(p.estimate.memory.modelStateBytes, previous) << backend;
      }
      previous = p.estimate.memory.modelStateBytes;
    }
  }
}

// Checkpointing trades compute for memory; both show in the estimate.
TEST(Cost, CheckpointingTradesTimeForMemory) {
  std::vector<std::string> base = {"model=llama3.2-1b", "backend=hf",
                                   "training.global_batch_size=32",
                                   "training.micro_batch_size=4", "strategy.zero=0",
                                   "strategy.offload=none"};
  auto none = base, full = base;
  none.push_back("strategy.checkpointing=none");
  full.push_back("strategy.checkpointing=full");
  auto a = price(none), b = price(full);
  EXPECT_LT(b.estimate.memory.peakBytes, a.estimate.memory.peakBytes);
  EXPECT_GT(b.estimate.time.computeSeconds, a.estimate.time.computeSeconds);
  EXPECT_GT(b.estimate.time.recomputeSeconds, 0);
  EXPECT_EQ(a.estimate.time.recomputeSeconds, 0);
}

// The breakdown explains the whole peak.
TEST(Cost, BreakdownSumsToPeak) {
  auto p = price({"model=qwen2.5-7b", "backend=hf", "cluster.gpus_per_node=8",
                  "training.global_batch_size=16", "training.micro_batch_size=2",
                  "strategy.zero=3", "strategy.offload=none",
                  "strategy.checkpointing=full"});
  int64_t sum = 0;
  for (const auto &part : p.estimate.memory.breakdown)
    sum += part.second;
  EXPECT_NEAR(double(sum), double(p.estimate.memory.peakBytes), 16.0);
  EXPECT_FALSE(p.estimate.memory.peak.phase.empty());
}

// A multi-node ZeRO-3 job pays for its collectives over the slower link.
TEST(Cost, InterNodeCommunicationCosts) {
  std::vector<std::string> base = {"model=llama3.1-8b", "backend=swift-run",
                                   "cluster.gpus_per_node=8", "training.global_batch_size=64",
                                   "training.micro_batch_size=1", "strategy.zero=3",
                                   "strategy.offload=none", "strategy.checkpointing=full"};
  auto one = base, two = base;
  two.push_back("cluster.nodes=2");
  two.push_back("cluster.interconnect.inter_node=ib-100g");
  auto a = price(one), b = price(two);
  EXPECT_GT(b.estimate.time.communicationSeconds / b.strategy.gradientAccumulation,
            a.estimate.time.communicationSeconds / a.strategy.gradientAccumulation);
  EXPECT_GT(a.estimate.time.mfu, 0);
  EXPECT_LT(a.estimate.time.mfu, 1);
}

} // namespace
