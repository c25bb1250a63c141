//===- KernelCheck.h - fused ops and FP8 GEMMs against references -*- C++ -*-===//
//
// The self-checks of runtime/lib/model/Kernels.cpp and Fp8.cpp, kept out of the
// runtime: swift-kernel-check runs them on a device, the runtime's unit
// tests on the CPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace swift::rt {

/// One comparison of a fused op with its op chain on random inputs: the
/// largest |fused - reference| over the output and every input gradient,
/// and the largest |reference| for scale.
struct KernelCheck {
  std::string name;
  double maxAbsDiff = 0, maxAbsRef = 0;
};

/// Runs every fused op (kernels on CUDA, their LibTorch formulas elsewhere)
/// against its reference chain in `dtype` on `device`.
std::vector<KernelCheck> checkFusedKernels(const at::Device &device,
                                           at::ScalarType dtype);

/// The GPU path against the CPU emulation on the same inputs: FP8 codes of
/// both formats and layouts (name "*_codes": the count of differing codes,
/// which must be 0) and fp8Linear's output and gradients (the largest
/// difference: accumulation order and fast accumulation only).
std::vector<KernelCheck> checkFp8(const at::Device &device);

} // namespace swift::rt
