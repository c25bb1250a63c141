//===- MemoryProbe.h - allocated bytes at the points of a unit's pass ------===//
//
// Private to the engine room. A diagnostic for the cost model's memory
// timeline (docs/cost-model.md): with SWIFT_MEMORY_PROBE set on a CUDA run,
// each unit's forward and backward print, on stderr, the allocator's
// allocated bytes at their points (start, after the recompute, after the
// gradients, end) and the peak since the previous point, e.g.
//   memory probe: backward unit 28 recomputed: allocated 12.345 GiB, peak 13.210 GiB
// The peak statistic is reset at every point, so with the probe on, a
// step's reported peak is that of its last interval: read the probe's lines
// (their largest peak is the step's).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

namespace swift::rt::engine {

class MemoryProbe {
public:
  explicit MemoryProbe(at::Device device);
  bool enabled() const { return enabled_; }
  /// Prints `pass` unit `unit` `point`: allocated now, peak since the last
  /// mark; then starts a new interval.
  void mark(const char *pass, int unit, const char *point) const;

private:
  at::Device device_;
  bool enabled_ = false;
};

} // namespace swift::rt::engine
