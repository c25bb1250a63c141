//===- ActivationStash.cpp - checkpointed inputs kept on the host ---------===//
#include "ActivationStash.h"

#include "swift/Runtime/core/Check.h"

namespace swift::rt::engine {

ActivationStash::ActivationStash(const Plan &plan, at::Device device,
                                 at::ScalarType dtype)
    : device_(device), slots_(plan.schedule.units.size()),
      next_(plan.schedule.units.size(), -1), copy_(device) {
  for (size_t u = 0; u < slots_.size(); ++u)
    if (plan.schedule.units[u].offloadInput) {
      slots_[u].offloaded = true;
      ++numOffloaded_;
    }
  // One unit ahead: the entry after unit u's in the backward program.
  const std::vector<plan::ProgramStep> &backward = plan.schedule.backward;
  for (size_t i = 0; i + 1 < backward.size(); ++i)
    if (slots_[backward[i + 1].unit].offloaded)
      next_[backward[i].unit] = backward[i + 1].unit;
  const int64_t perUnit = plan.training.microBatchSize *
                          plan.training.sequenceLength * plan.model.hiddenSize *
                          c10::elementSize(dtype);
  hostBytes_ = perUnit * numOffloaded_;
}

void ActivationStash::stash(int u, at::Tensor x) {
  Slot &s = slots_[u];
  SWIFT_ASSERT(s.offloaded, "unit ", u, " does not offload its input");
  SWIFT_ASSERT(!s.stashed && !s.fetched.defined(), "unit ", u,
               "'s input stashed twice without a backward");
  const int64_t n = x.numel();
  if (!s.host.defined() || s.host.numel() != n ||
      s.host.scalar_type() != x.scalar_type())
    s.host = hostEmpty(n, x.scalar_type(), device_);
  s.sizes = x.sizes().vec();
  s.dtype = x.scalar_type();
  at::Tensor host = s.host;
  // The previous layer's copy out has had this layer's forward to finish;
  // what it still needs, the compute stream waits for (one outstanding).
  lastOut_.streamWait(device_);
  // After the compute stream's work so far (x's producer); x's memory is
  // not handed out again before the copy is done, though the caller drops
  // it now.
  HostFence out;
  copy_.run(
      [&] {
        host.copy_(x.reshape({n}), /*non_blocking=*/true);
        out.record(device_); // on the copy stream (SideStream::run)
      },
      {x});
  lastOut_ = out;
  s.stashed = true;
}

void ActivationStash::fetch(int u) {
  Slot &s = slots_[u];
  SWIFT_ASSERT(s.stashed, "unit ", u, "'s input fetched before its forward");
  // Allocated on the compute stream; the copy stream writes it after the
  // compute stream's work so far (whatever used this memory before).
  at::Tensor dst =
      at::empty(s.sizes, at::TensorOptions().device(device_).dtype(s.dtype));
  const at::Tensor host = s.host;
  HostFence arrived;
  copy_.run(
      [&] {
        dst.view({host.numel()}).copy_(host, /*non_blocking=*/true);
        arrived.record(device_); // on the copy stream (SideStream::run)
      },
      {dst});
  s.fetched = std::move(dst);
  s.arrived = arrived;
  s.stashed = false;
}

void ActivationStash::prefetchAfter(int u) {
  const int next = next_[u];
  if (next >= 0 && slots_[next].stashed)
    fetch(next);
}

at::Tensor ActivationStash::take(int u) {
  Slot &s = slots_[u];
  if (!s.fetched.defined())
    fetch(u); // nothing prefetched it
  s.arrived.streamWait(device_);
  s.arrived = HostFence();
  at::Tensor x = std::move(s.fetched);
  s.fetched = at::Tensor();
  return x;
}

} // namespace swift::rt::engine
