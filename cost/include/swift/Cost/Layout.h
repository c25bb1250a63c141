//===- Layout.h - how a strategy lays the GPUs out as a device mesh -*- C++ -*-===//
//
// The device mesh of one strategy: tensor (tp), context (cp) and pipeline
// (pp) parallel degrees, and the data-parallel ranks that are left, split
// into shard groups of dp_shard ranks (HSDP: model states sharded inside a
// group, gradients all-reduced across the groups). The default is today's
// layout: every GPU a data-parallel rank, all of them one shard group.
//
// One rank order, the one torchtitan and Megatron-LM share, inner (adjacent
// ranks) to outer: tp < cp < dp_shard < dp_replicate < pp. A group of a mesh
// dimension is `n` ranks `stride` apart, stride the product of the degrees
// inside it; it crosses nodes when stride * n exceeds the GPUs per node.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_COST_LAYOUT_H
#define SWIFT_COST_LAYOUT_H

#include "swift/Plan/Enums.h"

#include <cstdint>

namespace swift::cost {

/// The mesh dimensions, inner to outer.
enum class MeshDim { Tp, Cp, DpShard, DpReplicate, Pp };

/// The ranks one collective of a mesh dimension runs over.
struct Group {
  int64_t n = 1;       // ranks in the group
  int64_t stride = 1;  // rank distance between group members
  bool crossesNodes = false;
};

struct Layout {
  int64_t tp = 1, cp = 1, pp = 1;
  /// Data-parallel ranks per shard group; 0: all of them (no HSDP).
  int64_t dpShard = 0;
  /// Model chunks per pipeline rank (interleaved schedule); 1 otherwise.
  int64_t virtualStages = 1;
  plan::PipelineSchedule schedule = plan::PipelineSchedule::OneFOneB;
  plan::ContextParallel cpKind = plan::ContextParallel::Ring;

  /// Data-parallel ranks of a world of `world` GPUs.
  int64_t dataParallel(int64_t world) const { return world / (tp * cp * pp); }
  /// Ranks of one shard group (dp_shard, or every data-parallel rank).
  int64_t shardGroup(int64_t world) const {
    return dpShard > 0 ? dpShard : dataParallel(world);
  }
  /// Shard groups (dp_replicate).
  int64_t replicas(int64_t world) const {
    return dataParallel(world) / shardGroup(world);
  }
  /// Every GPU a data-parallel rank in one shard group: the layout swift
  /// priced before meshes.
  bool dataParallelOnly(int64_t world) const {
    return tp == 1 && cp == 1 && pp == 1 && replicas(world) == 1;
  }

  int64_t degree(MeshDim d, int64_t world) const {
    switch (d) {
    case MeshDim::Tp: return tp;
    case MeshDim::Cp: return cp;
    case MeshDim::DpShard: return shardGroup(world);
    case MeshDim::DpReplicate: return replicas(world);
    case MeshDim::Pp: return pp;
    }
    return 1;
  }

  /// The group of dimension `d` in the rank order above.
  Group group(MeshDim d, int64_t world, int64_t gpusPerNode) const {
    Group g;
    g.n = degree(d, world);
    for (MeshDim inner = MeshDim::Tp; inner != d;
         inner = MeshDim(int(inner) + 1))
      g.stride *= degree(inner, world);
    g.crossesNodes = g.n > 1 && g.stride * g.n > gpusPerNode;
    return g;
  }
};

} // namespace swift::cost

#endif // SWIFT_COST_LAYOUT_H
