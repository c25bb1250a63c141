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

} // namespace
