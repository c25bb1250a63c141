//===- MeshTest.cpp - the device mesh's groups, and HSDP priced -----------===//
//
// Layout::group() (cost/include/swift/Cost/Layout.h): which ranks each mesh
// dimension's collectives run over and whether they cross nodes, in the
// rank order tp < cp < dp_shard < dp_replicate < pp.
//
//===----------------------------------------------------------------------===//

#include "PriceJob.h"

#include "swift/Cost/Search.h"

using namespace swift::job;
using namespace swift::job::testing;
namespace cost = swift::cost;

namespace {

using cost::Group;
using cost::Layout;
using cost::MeshDim;

void expectGroup(const Group &g, int64_t n, int64_t stride, bool crosses,
                 const char *what) {
  EXPECT_EQ(g.n, n) << what;
  EXPECT_EQ(g.stride, stride) << what;
  EXPECT_EQ(g.crossesNodes, crosses) << what;
}

// 64 GPUs on 8-GPU nodes as tp 8 x dp_shard 4 x dp_replicate 2: a tp group
// is one node's 8 adjacent GPUs; a shard group takes one GPU of each of 4
// nodes (stride 8), a replica group one of 2 nodes 32 apart. A dimension of
// one rank crosses nothing.
TEST(Mesh, GroupsFollowRankOrder) {
  Layout l;
  l.tp = 8;
  l.dpShard = 4;
  const int64_t W = 64, perNode = 8;
  EXPECT_EQ(l.dataParallel(W), 8);
  EXPECT_EQ(l.shardGroup(W), 4);
  EXPECT_EQ(l.replicas(W), 2);
  EXPECT_FALSE(l.dataParallelOnly(W));
  expectGroup(l.group(MeshDim::Tp, W, perNode), 8, 1, false, "tp");
  expectGroup(l.group(MeshDim::Cp, W, perNode), 1, 8, false, "cp");
  expectGroup(l.group(MeshDim::DpShard, W, perNode), 4, 8, true, "dp_shard");
  expectGroup(l.group(MeshDim::DpReplicate, W, perNode), 2, 32, true,
              "dp_replicate");
  expectGroup(l.group(MeshDim::Pp, W, perNode), 1, 64, false, "pp");

  // HSDP alone, a node per shard group: the groups stay inside a node, the
  // replicas are one GPU of each node.
  Layout hsdp;
  hsdp.dpShard = 8;
  expectGroup(hsdp.group(MeshDim::DpShard, 32, perNode), 8, 1, false,
              "hsdp dp_shard");
  expectGroup(hsdp.group(MeshDim::DpReplicate, 32, perNode), 4, 8, true,
              "hsdp dp_replicate");
  // Shard groups of two nodes.
  hsdp.dpShard = 16;
  expectGroup(hsdp.group(MeshDim::DpShard, 32, perNode), 16, 1, true,
              "two-node dp_shard");
  expectGroup(hsdp.group(MeshDim::DpReplicate, 32, perNode), 2, 16, true,
              "two-node dp_replicate");

  // The default: every GPU one shard group, which crosses nodes only when
  // there are several.
  Layout all;
  EXPECT_TRUE(all.dataParallelOnly(16));
  expectGroup(all.group(MeshDim::DpShard, 16, perNode), 16, 1, true,
              "default, 2 nodes");
  expectGroup(all.group(MeshDim::DpShard, 8, perNode), 8, 1, false,
              "default, 1 node");
  expectGroup(all.group(MeshDim::DpReplicate, 16, perNode), 1, 16, false,
              "default replicas");

  // shardRanks: the shard group, every GPU by default.
  cost::Hardware hw;
  hw.gpusPerNode = 8;
  hw.nodes = 4;
  cost::Strategy s;
  EXPECT_EQ(cost::shardRanks(s, hw), 32);
  s.layout.dpShard = 8;
  EXPECT_EQ(cost::shardRanks(s, hw), 8);
  expectGroup(cost::meshGroup(s, hw, MeshDim::DpReplicate), 4, 8, true,
              "meshGroup");
}

//===----------------------------------------------------------------------===//
// HSDP: shard groups priced (docs/cost-model.md, "HSDP")
//===----------------------------------------------------------------------===//

PricedJob price(std::vector<std::string> sets) {
  static mlir::MLIRContext context;
  return priceJob(context, sets);
}

/// Llama-3.1-8B on `nodes` nodes of 8 H100s, one sequence per GPU, the
/// strategy fixed (ZeRO-3 unless `extra` says otherwise).
std::vector<std::string> onNodes(int nodes, const std::string &backend,
                                 std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {
      "model=llama3.1-8b", "backend=" + backend, "cluster.gpus_per_node=8",
      "cluster.nodes=" + std::to_string(nodes),
      "training.global_batch_size=" + std::to_string(8 * nodes),
      "training.micro_batch_size=1", "strategy.zero=3", "strategy.offload=none",
      "strategy.checkpointing=full"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return sets;
}

/// One ring collective of `bytes` per rank over `n` ranks on a link of `bw`
/// B/s with `lat` s per step: (n-1) steps and (n-1)/n of the bytes, twice
/// for an all-reduce (nccl-tests' bus bandwidth definition).
double ring(double bytes, double n, bool allReduce, double bw, double lat) {
  double times = allReduce ? 2 : 1;
  return times * (n - 1) * lat + times * bytes * (n - 1) / n / bw;
}

// swift-run at ZeRO-3 on 2 nodes x 8 with shard groups of 8 (a node): each
// rank holds 1/8 of the model states, as on one node of 8; the gathers and
// reduce-scatters run over the group's NVLink; after the step's backward
// each of the 34 units (embedding, 32 layers, head) all-reduces its reduced
// fp32 gradient shard (4P/8 bytes in all) across the 2 replicas over the
// inter-node link, exposed (UnitDriver waits for it on the critical path).
TEST(Hsdp, StatesShardedByGroupAllReduceAcrossNodes) {
  PricedJob hsdp = price(onNodes(2, "swift-run", {"strategy.dp_shard=8"}));
  ASSERT_EQ(hsdp.strategy.layout.dpShard, 8);
  PricedJob node = price(onNodes(1, "swift-run"));
  // One group of all 16 (auto would choose shard groups here).
  PricedJob plain = price(onNodes(2, "swift-run", {"strategy.dp_shard=16"}));
  ASSERT_EQ(plain.strategy.layout.dpShard, 0);
  const double P = hsdp.profile.parameters;
  ASSERT_EQ(P, 8030261248.0);
  // Model states: bf16 parameter shard (2 B), optimizer partition (fp32
  // moments and the master's low half, 10 B) and the reduced fp32 gradient
  // shard (4 B) per element of a 1/8 shard, as on one node of 8 GPUs; plus
  // the gathered bf16 units (the one computing and those prefetched; the
  // largest is the head, lm_head and final norm).
  const double unit = 2.0 * (128256.0 * 4096 + 4096);
  auto gathered = [&](const PricedJob &p) {
    return (p.strategy.prefetchDepth + 1) * unit;
  };
  const int64_t states = hsdp.estimate.memory.modelStateBytes;
  EXPECT_NEAR(double(states), 16 * P / 8 + gathered(hsdp), 16);
  EXPECT_EQ(states, node.estimate.memory.modelStateBytes);
  // One group of 16 shards them over 16.
  EXPECT_NEAR(double(plain.estimate.memory.modelStateBytes),
              16 * P / 16 + gathered(plain), 16);

  // Time on measured links: NVLink 100 GB/s, the fabric 10 GB/s, 20 us a
  // step.
  const double intra = 100e9, inter = 10e9, lat = 20e-6;
  for (PricedJob *p : {&hsdp, &plain}) {
    p->hw.measured.intraNodeBusGBps = intra / 1e9;
    p->hw.measured.interNodeBusGBps = inter / 1e9;
    p->hw.measured.collectiveLatencyUs = lat * 1e6;
  }
  cost::TimeEstimate t =
      cost::estimate(hsdp.profile, hsdp.setup, hsdp.hw, hsdp.strategy).time;
  cost::TimeEstimate flat =
      cost::estimate(plain.profile, plain.setup, plain.hw, plain.strategy).time;
  const double units = hsdp.profile.numLayers + 2;
  ASSERT_EQ(units, 34);
  const double shardBytes = 4 * P / 8; // the reduced fp32 gradient shard
  const double allReduce = units * ring(shardBytes / units, 2, true, inter, lat);
  EXPECT_NEAR(t.replicaAllReduceSeconds, allReduce, 1e-9 * allReduce);
  // 34 x 2 x 20 us of latency and 4P/8 bytes over 10 GB/s: ~0.40 s.
  EXPECT_NEAR(allReduce, 34 * 2 * 20e-6 + shardBytes / inter, 1e-12);
  // The one micro-batch's two gathers of the bf16 model (2P) and its
  // fp32 gradients' reduce-scatter (4P), each over the group of 8 on
  // NVLink, plus the all-reduce: every collective of the step.
  const double group = 2 * ring(2 * P, 8, false, intra, lat) +
                       ring(4 * P, 8, false, intra, lat);
  EXPECT_NEAR(t.communicationSeconds, group + allReduce,
              1e-9 * (group + allReduce));
  EXPECT_GE(t.exposedCommunicationSeconds, allReduce); // never hidden
  // One group of 16 runs the same collectives over the fabric.
  const double world = 2 * ring(2 * P, 16, false, inter, lat) +
                       ring(4 * P, 16, false, inter, lat);
  EXPECT_EQ(flat.replicaAllReduceSeconds, 0);
  EXPECT_NEAR(flat.communicationSeconds, world, 1e-9 * world);
  EXPECT_LT(t.stepSeconds, flat.stepSeconds);
}

// DeepSpeed runs shard groups as ZeRO++ hpZ: its partitions stay over all
// 16 ranks and each rank adds its 1/8 slice of the bf16 weights (2P/8);
// the gathers after the step's first forward (here: the backward's) stay
// in the node, the reduce-scatter spans every rank. HF's Trainer sets no
// shard-group size, and hpZ exists only at ZeRO-3.
TEST(Hsdp, DeepSpeedIsHpzAndHfRefuses) {
  PricedJob hpz = price(onNodes(2, "deepspeed", {"strategy.dp_shard=8"}));
  PricedJob plain = price(onNodes(2, "deepspeed", {"strategy.dp_shard=16"}));
  const double P = hpz.profile.parameters;
  EXPECT_NEAR(double(hpz.estimate.memory.modelStateBytes -
                     plain.estimate.memory.modelStateBytes),
              2 * P / 8, 16);
  const double intra = 100e9, inter = 10e9, lat = 20e-6;
  for (PricedJob *p : {&hpz, &plain}) {
    p->hw.measured.intraNodeBusGBps = intra / 1e9;
    p->hw.measured.interNodeBusGBps = inter / 1e9;
    p->hw.measured.collectiveLatencyUs = lat * 1e6;
  }
  cost::TimeEstimate t =
      cost::estimate(hpz.profile, hpz.setup, hpz.hw, hpz.strategy).time;
  cost::TimeEstimate flat =
      cost::estimate(plain.profile, plain.setup, plain.hw, plain.strategy).time;
  // DeepSpeed reduces bf16 gradients (2P).
  const double firstForward = ring(2 * P, 16, false, inter, lat);
  const double backward = ring(2 * P, 8, false, intra, lat);
  const double reduce = ring(2 * P, 16, false, inter, lat);
  EXPECT_NEAR(t.communicationSeconds, firstForward + backward + reduce,
              1e-9 * t.communicationSeconds);
  EXPECT_NEAR(flat.communicationSeconds, 2 * firstForward + reduce,
              1e-9 * flat.communicationSeconds);
  EXPECT_EQ(t.replicaAllReduceSeconds, 0); // hpZ reduces over every rank

  auto refusal = [](std::vector<std::string> sets, int64_t shard) {
    PricedJob p = price(std::move(sets));
    p.strategy.layout.dpShard = shard;
    return cost::unsupportedReason(p.profile, p.setup, p.hw, p.strategy);
  };
  EXPECT_EQ(refusal(onNodes(2, "hf"), 8),
            "HF's Trainer shards over every rank (its --fsdp flags set no "
            "shard-group size): shard groups of 8 of the 16 data-parallel "
            "ranks (HSDP) need swift-run, or deepspeed at zero 3 (ZeRO++ hpZ)");
  EXPECT_EQ(refusal(onNodes(2, "deepspeed", {"strategy.zero=2"}), 8),
            "DeepSpeed's form of shard groups of 8 of the 16 data-parallel "
            "ranks is ZeRO++ hpZ (zero_hpz_partition_size), a secondary "
            "partition of the weights under ZeRO-3: use zero 3");
  EXPECT_EQ(refusal(onNodes(2, "swift-run", {"strategy.zero=0"}), 8),
            "shard groups of 8 of the 16 data-parallel ranks (HSDP) shard the "
            "model states within each group: they need zero >= 1 (zero 0 "
            "keeps every unit whole on every rank)");
  EXPECT_EQ(refusal(onNodes(2, "swift-run"), 16), ""); // one group: plain
  EXPECT_EQ(refusal(onNodes(2, "swift-run"), 3),
            "dp_shard must divide the data-parallel ranks");
}

// On 4 nodes x 8 with 100 Gb/s InfiniBand, one group of 32 moves every
// gather and reduce-scatter over the fabric; shard groups of a node keep
// them on NVLink and send only the gradient shards across: the search
// picks them. Where the fabric is as fast as NVLink the all-reduce across
// groups is only extra work, and one group of every GPU wins.
TEST(Search, PicksHsdpWhenInterNodeIsSlow) {
  PricedJob p = price(onNodes(4, "swift-run",
                              {"cluster.interconnect.inter_node=ib-100g"}));
  cost::FixedDecisions open;
  cost::SearchResult slow = cost::search(p.profile, p.setup, p.hw, open);
  ASSERT_TRUE(slow.best);
  EXPECT_EQ(slow.best->strategy.layout.dpShard, 8);
  EXPECT_GT(slow.best->estimate.time.replicaAllReduceSeconds, 0);
  // The best with one group of 32 is slower, and among the runners-up
  // (the report's why).
  const cost::Candidate &last = slow.alternatives.back();
  EXPECT_EQ(last.strategy.layout.dpShard, 0);
  EXPECT_LT(last.estimate.time.tokensPerSecond,
            slow.best->estimate.time.tokensPerSecond);
  cost::FixedDecisions all = open;
  all.dpShard = 32;
  cost::SearchResult flat = cost::search(p.profile, p.setup, p.hw, all);
  ASSERT_TRUE(flat.best);
  EXPECT_EQ(flat.best->strategy.layout.dpShard, 0);
  EXPECT_LT(flat.best->estimate.time.tokensPerSecond,
            slow.best->estimate.time.tokensPerSecond);
  EXPECT_EQ(flat.best->estimate.time.tokensPerSecond,
            last.estimate.time.tokensPerSecond);

  cost::Hardware fast = p.hw;
  fast.measured.intraNodeBusGBps = 360;
  fast.measured.interNodeBusGBps = 360;
  cost::SearchResult same = cost::search(p.profile, p.setup, fast, open);
  ASSERT_TRUE(same.best);
  EXPECT_EQ(same.best->strategy.layout.dpShard, 0);

  // A fixed dp_shard is the only one searched; one that does not divide
  // the ranks is an error naming the key.
  cost::FixedDecisions two = open;
  two.dpShard = 16;
  cost::SearchResult fixed = cost::search(p.profile, p.setup, p.hw, two);
  ASSERT_TRUE(fixed.best);
  EXPECT_EQ(fixed.best->strategy.layout.dpShard, 16);
  for (const cost::Candidate &c : fixed.alternatives)
    EXPECT_EQ(c.strategy.layout.dpShard, 16);
  two.dpShard = 12;
  EXPECT_EQ(cost::search(p.profile, p.setup, p.hw, two).error,
            "strategy.dp_shard: 12 does not divide the 32 data-parallel ranks");
  // One node: one group only.
  PricedJob one = price(onNodes(1, "swift-run"));
  cost::SearchResult single = cost::search(one.profile, one.setup, one.hw, open);
  ASSERT_TRUE(single.best);
  EXPECT_EQ(single.best->strategy.layout.dpShard, 0);
  for (const cost::Candidate &c : single.alternatives)
    EXPECT_EQ(c.strategy.layout.dpShard, 0);
}

// Smaller shard groups only add memory, so where nothing fits with one
// group of every GPU (Llama-3.1-70B, full, on 2 nodes of 8 A10s) the search
// prices no shard groups at all: the same strategies as with dp_shard
// fixed to all 16, and the same closest one.
TEST(Search, SmallerGroupsArePricedOnlyWhereLargerOnesFit) {
  PricedJob p = price({"model=llama3.1-70b", "cluster.gpu=a10",
                       "cluster.gpus_per_node=8", "cluster.nodes=2",
                       "training.global_batch_size=16",
                       "training.micro_batch_size=1", "strategy.zero=3",
                       "strategy.offload=none", "strategy.checkpointing=full",
                       "strategy.dp_shard=16"});
  cost::FixedDecisions open, all;
  all.dpShard = 16;
  cost::SearchResult a = cost::search(p.profile, p.setup, p.hw, open);
  cost::SearchResult b = cost::search(p.profile, p.setup, p.hw, all);
  ASSERT_FALSE(a.best);
  ASSERT_TRUE(a.closest && b.closest);
  EXPECT_EQ(a.evaluated, b.evaluated);
  EXPECT_EQ(a.considered, b.considered);
  EXPECT_EQ(a.closest->estimate.memory.peakBytes,
            b.closest->estimate.memory.peakBytes);
  EXPECT_EQ(a.closest->strategy.layout.dpShard, 0);
}

} // namespace
