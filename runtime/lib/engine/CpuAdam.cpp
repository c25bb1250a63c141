//===- CpuAdam.cpp - host AdamW for optimizer offload ---------------------===//
//
// Plain loops written so GCC/Clang vectorize them (no aliasing, no branches
// in the body), cloned per ISA with target_clones. One pass over the five
// streams (p, m, v, g, bf16 out) instead of one pass per op: the host side
// is memory-bound, so the pass count is the speed.
//
//===----------------------------------------------------------------------===//
#include "swift/Runtime/engine/CpuAdam.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace swift::rt {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SWIFT_CLONES                                                           \
  __attribute__((target_clones("avx512f", "avx2", "default")))
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
              int64_t n, int64_t decayFrom, const AdamWArgs &a,
              uint16_t *bf16Out) {
  const float bc1 = 1.0f - std::pow(a.beta1, float(a.step));
  const float bc2 = 1.0f - std::pow(a.beta2, float(a.step));
  const float stepSize = a.lr / bc1, invSqrtBc2 = 1.0f / std::sqrt(bc2);
  const float decay = 1.0f - a.lr * a.weightDecay;
  // Own threads rather than at::parallel_for: LibTorch builds differ in
  // their intra-op pool (Debian's runs it with one thread), and this loop is
  // the whole cost of an offload step. Chunks are multiples of 64 floats so
  // every thread starts on a cache-line (and vector) boundary.
  static const int threads = [] {
    if (const char *env = std::getenv("SWIFT_CPU_THREADS"))
      return std::max(1, std::atoi(env));
    return std::max(1, int(std::thread::hardware_concurrency()));
  }();
  const int64_t minChunk = 1 << 16;
  const int used = int(std::clamp<int64_t>(n / minChunk, 1, threads));
  const int64_t chunk = ((n + used - 1) / used + 63) / 64 * 64;
  // [begin, end) in loops of one decay factor: none before decayFrom.
  auto loop = [&](int64_t begin, int64_t end, float factor) {
    if (begin < end)
      adamChunk(param + begin, expAvg + begin, expAvgSq + begin, grad + begin,
                end - begin, factor, a.beta1, a.beta2, a.eps, stepSize,
                invSqrtBc2, a.gradScale, bf16Out ? bf16Out + begin : nullptr);
  };
  auto run = [&](int64_t begin) {
    const int64_t end = std::min(n, begin + chunk),
                  split = std::clamp(decayFrom, begin, std::max(begin, end));
    loop(begin, split, 1.0f);
    loop(split, end, decay);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < used; ++t)
    pool.emplace_back(run, t * chunk);
  run(0);
  for (std::thread &t : pool)
    t.join();
}

} // namespace swift::rt
