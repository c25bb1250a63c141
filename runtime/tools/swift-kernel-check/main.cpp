//===- swift-kernel-check - fused ops vs their op chains on a device ------===//
//
// swift-kernel-check [cpu|cuda]: for bf16 and fp32, one line per fused op
// with the largest |fused - reference| over its output and input gradients.
// Exit 1 when a difference exceeds its tolerance (relative to the largest
// reference value: 2e-2 in bf16, 1e-4 in fp32).
//
//===----------------------------------------------------------------------===//
#include "KernelCheck.h"

#include "swift/Runtime/model/Fp8.h"

#include <cstdio>
#include <string>

using swift::rt::fp8Unsupported;

int main(int argc, char **argv) {
  std::string dev = argc > 1 ? argv[1] : "cuda";
  at::manual_seed(0);
  bool ok = true;
  for (at::ScalarType dt : {at::kBFloat16, at::kFloat}) {
    const double tol = dt == at::kFloat ? 1e-4 : 2e-2;
    for (const auto &c : swift::rt::checkFusedKernels(at::Device(dev), dt)) {
      const bool pass = c.maxAbsDiff <= tol * std::max(1.0, c.maxAbsRef);
      ok = ok && pass;
      std::printf("kernel-check %-30s %-5s max|diff| %.3e  max|ref| %.3e  %s\n",
                  c.name.c_str(), dt == at::kFloat ? "fp32" : "bf16",
                  c.maxAbsDiff, c.maxAbsRef, pass ? "ok" : "FAIL");
    }
  }
  // FP8 (Fp8.h): codes equal the emulation's exactly; the GEMMs within
  // bf16 output rounding (fp32 accumulation in another order).
  const at::Device device(dev);
  if (fp8Unsupported(device).empty() || device.is_cpu()) {
    for (const auto &c : swift::rt::checkFp8(device)) {
      const bool codes = c.name.find("_codes") != std::string::npos;
      const bool pass = codes ? c.maxAbsDiff == 0
                              : c.maxAbsDiff <= 1e-2 * std::max(1.0, c.maxAbsRef);
      ok = ok && pass;
      std::printf("kernel-check %-30s %-5s max|diff| %.3e  max|ref| %.3e  %s\n",
                  c.name.c_str(), "fp8", c.maxAbsDiff, c.maxAbsRef,
                  pass ? "ok" : "FAIL");
    }
  } else {
    std::printf("kernel-check fp8 skipped: %s\n", fp8Unsupported(device).c_str());
  }
  return ok ? 0 : 1;
}
