//===- CpuAdam.cpp - host AdamW for optimizer offload ---------------------===//
//
// Plain loops written so GCC/Clang vectorize them (no aliasing, no branches
// in the body), cloned per ISA with target_clones. One pass over the five
// streams (p, m, v, g, bf16 out) instead of one pass per op: the host side
// is memory-bound, so the pass count is the speed.
//
//===----------------------------------------------------------------------===//
#include "swift/Runtime/CpuAdam.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstring>

namespace swift::rt {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SWIFT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SWIFT_CLONES
#endif

inline uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  // Round to nearest even; NaN stays NaN because its mantissa is non-zero
  // in the upper bits for every NaN LibTorch produces.
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

SWIFT_CLONES
void adamChunk(float *__restrict p, float *__restrict m, float *__restrict v,
               const float *__restrict g, int64_t n, float decay, float b1,
               float b2, float eps, float stepSize, float invSqrtBc2,
               float scale, uint16_t *__restrict out) {
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i] * scale;
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    float pi = p[i] * decay;
    pi -= stepSize * mi / (std::sqrt(vi) * invSqrtBc2 + eps);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
  }
  if (out)
    for (int64_t i = 0; i < n; ++i)
      out[i] = toBf16(p[i]);
}

} // namespace

void cpuAdamW(float *param, float *expAvg, float *expAvgSq, const float *grad,
              int64_t n, const AdamWArgs &a, uint16_t *bf16Out) {
  const float bc1 = 1.0f - std::pow(a.beta1, float(a.step));
  const float bc2 = 1.0f - std::pow(a.beta2, float(a.step));
  const float stepSize = a.lr / bc1, invSqrtBc2 = 1.0f / std::sqrt(bc2);
  const float decay = 1.0f - a.lr * a.weightDecay;
  // 64K floats per task: large enough to amortize scheduling, small enough
  // to spread a layer over every core.
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    adamChunk(param + begin, expAvg + begin, expAvgSq + begin, grad + begin,
              end - begin, decay, a.beta1, a.beta2, a.eps, stepSize,
              invSqrtBc2, a.gradScale, bf16Out ? bf16Out + begin : nullptr);
  });
}

} // namespace swift::rt
