//===- ActivationStash.h - checkpointed inputs kept on the host -----------===//
//
// Private to the engine room. The units whose plan entry says
// offload_input (plan.schedule.units[u].offloadInput: fully checkpointed
// decoders; the runtime never decides it) keep their checkpointed input
// (B, S, C) on the host between their forward and their backward:
//  - forward (stash): the input is copied into the unit's host buffer on
//    the copy stream (Device.h SideStream), after everything the compute
//    stream queued so far; the device tensor is marked as used by the copy
//    stream and the caller drops it, so its memory returns to the caching
//    allocator once the copy is done, without the host waiting;
//  - backward (prefetch, take): when a unit's backward starts, the input
//    of the next offloaded unit in the backward program is copied back to
//    a fresh device tensor on the copy stream (one unit ahead; the head's
//    backward prefetches the first), and the unit that needs its input
//    makes the compute stream wait for that copy only (fetched then if
//    nothing prefetched it).
// One copy stream for both directions: the next micro-batch's copy out of
// a unit is queued after this micro-batch's copy back (accumulation reuses
// the buffer). At most one copy out is outstanding when a layer's forward
// ends (stash() waits on the previous one on the compute stream). Host buffers: CUDA pinned memory (hostEmpty), one per unit,
// allocated at its first stash and reused by every micro-batch and step;
// on CPU plain tensors, the same code (a copy out and back: the values,
// and so the losses, are those of the run without offload).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/core/PlanTypes.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace swift::rt::engine {

class ActivationStash {
public:
  /// Reads which units offload from `plan.schedule`; `dtype`: the inputs'
  /// (the compute dtype), for hostBytes().
  ActivationStash(const Plan &plan, at::Device device, at::ScalarType dtype);

  /// Whether unit u's checkpointed input lives on the host.
  bool offloads(int u) const { return slots_[u].offloaded; }
  /// Forward of unit u: queues the copy of `x` to the host. The caller
  /// keeps no other reference once its forward is queued.
  void stash(int u, at::Tensor x);
  /// Unit u's backward starts: the next offloaded unit of the backward
  /// program starts coming back.
  void prefetchAfter(int u);
  /// Unit u's input on the device, the compute stream ordered after its
  /// copy back. Once per stash.
  at::Tensor take(int u);

  /// The offloaded units, and the host bytes their buffers take (each
  /// micro-batch's (B, S, C) input in the compute dtype).
  int units() const { return numOffloaded_; }
  int64_t hostBytes() const { return hostBytes_; }

private:
  struct Slot {
    bool offloaded = false;
    bool stashed = false; // the host buffer holds an input not taken yet
    at::Tensor host;      // the buffer, flat; allocated at the first stash
    std::vector<int64_t> sizes;
    at::ScalarType dtype = at::kFloat;
    at::Tensor fetched; // prefetched, not taken yet
    HostFence arrived;  // on the copy stream, after `fetched`'s copy
  };
  void fetch(int u);

  at::Device device_;
  std::vector<Slot> slots_;
  std::vector<int> next_; // unit -> next offloaded unit of the backward, -1
  SideStream copy_;
  // The last copy out, on the copy stream: the next stash makes the compute
  // stream wait for it, so at most one finished layer's input is on the
  // device waiting for its copy (what swift-plan prices as
  // offload_buffers); a copy slower than the next layer's forward then
  // shows as that layer's wait, as the time model exposes it.
  HostFence lastOut_;
  int numOffloaded_ = 0;
  int64_t hostBytes_ = 0;
};

} // namespace swift::rt::engine
