//===- CpuAdam.h - multi-threaded, vectorized AdamW on host buffers -------===//
//
// The optimizer of the offload strategies. It reads and writes only the
// caller's buffers (pinned host memory in practice); it allocates nothing.
// It runs on hardware_concurrency() threads (SWIFT_CPU_THREADS overrides);
// the inner loop is compiled for AVX-512 / AVX2 / baseline, picked at run time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace swift::rt {

struct AdamWArgs {
  float lr, beta1, beta2, eps, weightDecay;
  float gradScale; // gradients are multiplied by this first (1/(W*G))
  int64_t step;    // 1-based, for bias correction
};

/// PyTorch AdamW semantics, in place, fp32:
///   p *= 1 - lr*wd (elements from `decayFrom` on: HF Trainer's decayed
///   group; the earlier ones, a unit's norms and biases, are not decayed);
///   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
///   p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
/// If bf16Out is not null, also writes the updated p rounded to bf16
/// (round-to-nearest-even) there, so the upload to the GPU is 2 bytes/param.
void cpuAdamW(float *param, float *expAvg, float *expAvgSq, const float *grad,
              int64_t n, int64_t decayFrom, const AdamWArgs &args,
              uint16_t *bf16Out);

} // namespace swift::rt
