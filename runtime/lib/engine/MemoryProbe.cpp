//===- MemoryProbe.cpp - allocated bytes at the points of a unit's pass ----===//
#include "MemoryProbe.h"

#include "swift/Runtime/core/Device.h"

#include <cstdio>
#include <cstdlib>

namespace swift::rt::engine {

MemoryProbe::MemoryProbe(at::Device device)
    : device_(device), enabled_(device.is_cuda() &&
                                std::getenv("SWIFT_MEMORY_PROBE") != nullptr) {}

void MemoryProbe::mark(const char *pass, int unit, const char *point) const {
  if (!enabled_)
    return;
  const double gib = double(int64_t(1) << 30);
  std::fprintf(stderr,
               "memory probe: %s unit %d %s: allocated %.3f GiB, peak %.3f GiB\n",
               pass, unit, point, double(allocatedMemoryBytes(device_)) / gib,
               double(peakMemoryBytes(device_)) / gib);
  resetPeakMemory(device_);
}

} // namespace swift::rt::engine
