//===- Kernels.cu - fused RMSNorm, SwiGLU, RoPE and AdamW for the runtime -===//
//
// Memory-bound elementwise/row kernels: each replaces a chain of LibTorch
// ops (fp32 upcasts, temporaries, one launch per op) by one pass that reads
// its inputs once and writes its outputs once. Arithmetic is fp32; rounding
// to the storage dtype happens where the op chain in Model.cpp rounds (the
// normalized RMSNorm value is rounded before the weight multiply, as HF
// does), so results agree with that chain to an ulp or two.
//
//===----------------------------------------------------------------------===//
#include "KernelsCuda.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace swift::rt::cuda {
namespace {

__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16 *p, int64_t i) {
  return __bfloat162float(p[i]);
}
template <typename T> __device__ __forceinline__ T cvt(float v);
template <> __device__ __forceinline__ float cvt<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 cvt<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
/// Rounds through the storage dtype (identity for float).
template <typename T> __device__ __forceinline__ float round(float v) {
  return float(cvt<T>(v));
}
template <> __device__ __forceinline__ float round<__nv_bfloat16>(float v) {
  return __bfloat162float(__float2bfloat16(v));
}

constexpr int kThreads = 256;

// 16-byte accesses (8 bf16) for the bf16 hot paths: several loads in flight
// per thread instead of 2-byte ones.
struct alignas(16) Bf8 {
  __nv_bfloat162 h[4];
};
__device__ __forceinline__ void load8(const __nv_bfloat16 *p, float (&f)[8]) {
  const Bf8 v = *reinterpret_cast<const Bf8 *>(p);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __bfloat1622float2(v.h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}
__device__ __forceinline__ void store8(__nv_bfloat16 *p, const float (&f)[8]) {
  Bf8 v;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    v.h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  *reinterpret_cast<Bf8 *>(p) = v;
}
__device__ __forceinline__ float roundBf(float v) {
  return __bfloat162float(__float2bfloat16(v));
}

/// Sum over the block; every thread gets the result. All threads must call.
__device__ float blockSum(float v) {
  __shared__ float warpSums[kThreads / 32];
  __shared__ float total;
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    warpSums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? warpSums[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1)
      v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0)
      total = v;
  }
  __syncthreads();
  float r = total;
  __syncthreads(); // total and warpSums are reused by the next call
  return r;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rmsNormForwardKernel(const T *x, const T *w, T *y, float *rstd,
                         int64_t cols, float eps) {
  const int64_t base = int64_t(blockIdx.x) * cols;
  float ss = 0.f;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    float v = ld(x, base + j);
    ss += v * v;
  }
  const float r = rsqrtf(blockSum(ss) / float(cols) + eps);
  if (threadIdx.x == 0)
    rstd[blockIdx.x] = r;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads)
    y[base + j] = cvt<T>(round<T>(ld(x, base + j) * r) * ld(w, j));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rmsNormBackwardKernel(const T *dy, const T *x, const T *w,
                          const float *rstd, const T *dres, T *dx,
                          float *dwPartial, int64_t rows, int64_t cols) {
  // dw accumulator: each thread owns columns j = tid + k * kThreads, so no
  // two threads touch one entry and no barrier is needed around it.
  extern __shared__ float dwAcc[];
  for (int64_t j = threadIdx.x; j < cols; j += kThreads)
    dwAcc[j] = 0.f;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * cols;
    const float r = rstd[row];
    float dot = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
      const float xh = ld(x, base + j) * r, g = ld(dy, base + j);
      dot += g * ld(w, j) * xh;
      dwAcc[j] += g * round<T>(xh);
    }
    dot = blockSum(dot) / float(cols);
    for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
      const float xh = ld(x, base + j) * r,
                  g = r * (ld(dy, base + j) * ld(w, j) - xh * dot);
      // The residual's gradient is added to the rounded one, as autograd's
      // add of the two would.
      dx[base + j] = cvt<T>(dres ? round<T>(g) + ld(dres, base + j) : g);
    }
  }
  for (int64_t j = threadIdx.x; j < cols; j += kThreads)
    dwPartial[int64_t(blockIdx.x) * cols + j] = dwAcc[j];
}

__device__ __forceinline__ float sigmoid(float v) {
  return 1.f / (1.f + __expf(-v));
}

// SwiGLU over the packed gate/up rows: gu (rows, 2 cols), gate first.
template <typename T>
__global__ void swigluForwardKernel(const T *gu, T *out, int64_t rows,
                                    int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols, g = r * 2 * cols + c;
    const float a = ld(gu, g);
    out[i] = cvt<T>(round<T>(a * sigmoid(a)) * ld(gu, g + cols));
  }
}

template <typename T>
__global__ void swigluBackwardKernel(const T *dy, const T *gu, T *dgu,
                                     int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols, g = r * 2 * cols + c;
    const float a = ld(gu, g), s = sigmoid(a), d = ld(dy, i);
    dgu[g + cols] = cvt<T>(d * round<T>(a * s));
    dgu[g] = cvt<T>(d * ld(gu, g + cols) * s * (1.f + a * (1.f - s)));
  }
}

template <typename T>
__global__ void ropeKernel(const T *x, const T *cosT, const T *sinT, T *out,
                           int64_t rows, int64_t seq, int64_t heads,
                           int64_t half, float sign) {
  const int64_t total = rows * half;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / half, k = i % half;
    const int64_t pos = (row / heads) % seq; // rows are (B, S, H)
    const int64_t b1 = row * 2 * half + k, b2 = b1 + half;
    const float c = ld(cosT, pos * half + k),
                s = sign * ld(sinT, pos * half + k);
    const float x1 = ld(x, b1), x2 = ld(x, b2);
    out[b1] = cvt<T>(x1 * c - x2 * s);
    out[b2] = cvt<T>(x2 * c + x1 * s);
  }
}

/// (max, sum of exp(x - max)) pairs, combined over the block.
__device__ void blockMaxSum(float &m, float &s) {
  __shared__ float ms[kThreads / 32], ss[kThreads / 32];
  auto combine = [](float &m, float &s, float m2, float s2) {
    const float M = fmaxf(m, m2);
    if (M == -INFINITY)
      return; // both empty
    s = (m == -INFINITY ? 0.f : s * __expf(m - M)) +
        (m2 == -INFINITY ? 0.f : s2 * __expf(m2 - M));
    m = M;
  };
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o),
                s2 = __shfl_xor_sync(0xffffffffu, s, o);
    combine(m, s, m2, s2);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    ms[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  m = -INFINITY;
  s = 0.f;
  for (int w = 0; w < kThreads / 32; ++w) // every thread combines all warps
    combine(m, s, ms[w], ss[w]);
  __syncthreads();
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    crossEntropyRowsKernel(T *logits, const int64_t *targets, float *lossRows,
                           int64_t vocab, float gradScale) {
  T *x = logits + int64_t(blockIdx.x) * vocab;
  if (targets[blockIdx.x] < 0) { // ignored (-100): no loss, no gradient
    if (threadIdx.x == 0)
      lossRows[blockIdx.x] = 0.f;
    if (gradScale != 0.f)
      for (int64_t j = threadIdx.x; j < vocab; j += kThreads)
        x[j] = cvt<T>(0.f);
    return; // the whole block: no barrier below is reached
  }
  float m = -INFINITY, s = 0.f;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const float v = ld(x, j);
    if (v > m) {
      s = (m == -INFINITY ? 0.f : s * __expf(m - v)) + 1.f;
      m = v;
    } else {
      s += __expf(v - m);
    }
  }
  blockMaxSum(m, s);
  const float lse = m + logf(s);
  const int64_t t = targets[blockIdx.x];
  // Read the target's logit before any thread overwrites the row.
  const float xt = ld(x, t);
  if (threadIdx.x == 0)
    lossRows[blockIdx.x] = lse - xt;
  if (gradScale == 0.f)
    return;
  __syncthreads();
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) {
    const float p = __expf(ld(x, j) - lse) - (j == t ? 1.f : 0.f);
    x[j] = cvt<T>(p * gradScale);
  }
}

// 16-byte accesses: each thread streams 8 logits per load, twice (the
// max/sum pass, then the gradient pass).
__global__ void __launch_bounds__(kThreads)
    crossEntropyRowsBf8(__nv_bfloat16 *logits, const int64_t *targets,
                        float *lossRows, int64_t vocab, float gradScale) {
  __nv_bfloat16 *x = logits + int64_t(blockIdx.x) * vocab;
  const int64_t n8 = vocab / 8;
  float m = -INFINITY, s = 0.f, f[8];
  if (targets[blockIdx.x] < 0) { // ignored (-100): no loss, no gradient
    if (threadIdx.x == 0)
      lossRows[blockIdx.x] = 0.f;
    if (gradScale != 0.f) {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        f[e] = 0.f;
      for (int64_t j = threadIdx.x; j < n8; j += kThreads)
        store8(x + 8 * j, f);
    }
    return; // the whole block: no barrier below is reached
  }
  for (int64_t j = threadIdx.x; j < n8; j += kThreads) {
    load8(x + 8 * j, f);
    float cm = f[0];
#pragma unroll
    for (int e = 1; e < 8; ++e)
      cm = fmaxf(cm, f[e]);
    const float M = fmaxf(m, cm);
    float cs = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      cs += __expf(f[e] - M);
    s = (m == -INFINITY ? 0.f : s * __expf(m - M)) + cs;
    m = M;
  }
  blockMaxSum(m, s);
  const float lse = m + logf(s);
  const int64_t t = targets[blockIdx.x];
  const float xt = __bfloat162float(x[t]);
  if (threadIdx.x == 0)
    lossRows[blockIdx.x] = lse - xt;
  if (gradScale == 0.f)
    return;
  __syncthreads(); // every thread has read x[t]
  for (int64_t j = threadIdx.x; j < n8; j += kThreads) {
    load8(x + 8 * j, f);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      f[e] = (__expf(f[e] - lse) - (8 * j + e == t ? 1.f : 0.f)) * gradScale;
    store8(x + 8 * j, f);
  }
}

// AdamW's arithmetic, in fp32. RoundMoments (pure bf16): the step uses the
// moments as stored (rounded to bf16), as a bf16 torch AdamW does.
template <bool RoundMoments>
__device__ __forceinline__ void
adamwMath(float &w, float gr, float &m, float &v, float lr, float beta1,
          float beta2, float eps, float weightDecay, float bc1, float bc2Sqrt) {
  w *= 1.f - lr * weightDecay;
  m = beta1 * m + (1.f - beta1) * gr;
  v = beta2 * v + (1.f - beta2) * gr * gr;
  if (RoundMoments) {
    m = roundBf(m);
    v = roundBf(v);
  }
  w -= (lr / bc1) * m / (sqrtf(v) / bc2Sqrt + eps);
}

// Adds the block's sum of each thread's `s` to *sum, one double atomic per
// block (the gradients' sum of squares, read as AdamW streams them: no
// separate norm pass). A no-op when sum is null; every thread of the block
// calls it (blockDim.x a multiple of 32, at most 1024).
__device__ __forceinline__ void blockSumInto(double *sum, float s) {
  if (!sum)
    return;
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  __shared__ float warpSums[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    warpSums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < int(blockDim.x / 32) ? warpSums[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1)
      s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
      atomicAdd(sum, double(s));
  }
}

// The sum of squares alone (clipping needs the norm before any update):
// one fp32 sum per thread, one fp64 add per block.
template <typename T>
__global__ void sumSquaresKernel(const T *x, int64_t n, double *sum) {
  float sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float v = ld(x, i);
    sq += v * v;
  }
  blockSumInto(sum, sq);
}

__global__ void sumSquaresBf8(const __nv_bfloat16 *x, int64_t n8,
                              double *sum) {
  float f[8], sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n8;
       i += int64_t(gridDim.x) * blockDim.x) {
    load8(x + 8 * i, f);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      sq += f[k] * f[k];
  }
  blockSumInto(sum, sq);
}

__global__ void sumSquaresF4(const float4 *x, int64_t n4, double *sum) {
  float sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float4 v = x[i];
    sq += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  blockSumInto(sum, sq);
}

// bf16-mixed AdamW: fp32 master weights, gradients and moments; `out`, when
// given, receives the updated weights rounded to bf16 (the compute copy).
// Each kernel adds the sum of the raw gradients' squares to `sumSq` when set.
__global__ void adamwFp32Kernel(float *p, const float *g, float *m, float *v,
                                __nv_bfloat16 *out, int64_t n, float lr,
                                float beta1, float beta2, float eps,
                                float weightDecay, int64_t decayFrom, float gradScale, float bc1,
                                float bc2Sqrt, double *sumSq) {
  float sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float w = p[i], mi = m[i], vi = v[i];
    const float gi = g[i];
    sq += gi * gi;
    adamwMath<false>(w, gi * gradScale, mi, vi, lr, beta1, beta2, eps,
                     i >= decayFrom ? weightDecay : 0.f, bc1, bc2Sqrt);
    m[i] = mi;
    v[i] = vi;
    p[i] = w;
    if (out)
      out[i] = __float2bfloat16(w);
  }
  blockSumInto(sumSq, sq);
}

// The same, 4 elements per 16-byte access (8-byte bf16 stores): the scalar
// kernel keeps too few bytes in flight to stream the ~30 B per parameter at
// the HBM rate.
__global__ void adamwFp32F4(float4 *p, const float4 *g, float4 *m, float4 *v,
                            __nv_bfloat162 *out, int64_t n4, float lr,
                            float beta1, float beta2, float eps,
                            float weightDecay, int64_t decayFrom, float gradScale, float bc1,
                            float bc2Sqrt, double *sumSq) {
  float sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4;
       i += int64_t(gridDim.x) * blockDim.x) {
    float4 w = p[i], mi = m[i], vi = v[i];
    const float4 gr = g[i];
    float *fw = &w.x, *fm = &mi.x, *fv = &vi.x;
    const float *fg = &gr.x;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      sq += fg[e] * fg[e];
      adamwMath<false>(fw[e], fg[e] * gradScale, fm[e], fv[e], lr, beta1, beta2,
                       eps, 4 * i + e >= decayFrom ? weightDecay : 0.f, bc1,
                       bc2Sqrt);
    }
    m[i] = mi;
    v[i] = vi;
    p[i] = w;
    if (out) {
      out[2 * i] = __floats2bfloat162_rn(w.x, w.y);
      out[2 * i + 1] = __floats2bfloat162_rn(w.z, w.w);
    }
  }
  blockSumInto(sumSq, sq);
}

// bf16-mixed AdamW on the master kept in the compute copy
// (plan::masterInComputeCopy): the fp32 weight's bits are (hi << 16) + low,
// hi the bf16 compute copy forward reads and low a signed 16-bit remainder.
// After the update hi is the new weight rounded to the nearest bf16 (ties
// away from zero, on the bits) and low what completes it: the master stays
// exact, and the compute copy needs no second write.
__device__ __forceinline__ float joinMasterBits(uint16_t hi, int16_t low) {
  return __uint_as_float((uint32_t(hi) << 16) + uint32_t(int32_t(low)));
}
__device__ __forceinline__ void splitMasterBits(float w, uint16_t &hi,
                                                int16_t &low) {
  const uint32_t b = __float_as_uint(w);
  hi = uint16_t((b >> 16) + ((b >> 15) & 1u));
  low = int16_t(uint16_t(b)); // minus 65536 where hi was rounded up
}

__global__ void adamwSplitKernel(uint16_t *hi, int16_t *low, const float *g,
                                 float *m, float *v, int64_t n, float lr,
                                 float beta1, float beta2, float eps,
                                 float weightDecay, int64_t decayFrom, float gradScale, float bc1,
                                 float bc2Sqrt, double *sumSq) {
  float sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float w = joinMasterBits(hi[i], low[i]), mi = m[i], vi = v[i];
    const float gi = g[i];
    sq += gi * gi;
    adamwMath<false>(w, gi * gradScale, mi, vi, lr, beta1, beta2, eps,
                     i >= decayFrom ? weightDecay : 0.f, bc1, bc2Sqrt);
    m[i] = mi;
    v[i] = vi;
    splitMasterBits(w, hi[i], low[i]);
  }
  blockSumInto(sumSq, sq);
}

// The same, 8 elements per thread: 16-byte accesses to hi and low, two to
// each fp32 array (28 B per parameter, against 30 with a separate master
// and publish copy).
__global__ void adamwSplit8(uint4 *hi, uint4 *low, const float4 *g, float4 *m,
                            float4 *v, int64_t n8, float lr, float beta1,
                            float beta2, float eps, float weightDecay, int64_t decayFrom,
                            float gradScale, float bc1, float bc2Sqrt,
                            double *sumSq) {
  float sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n8;
       i += int64_t(gridDim.x) * blockDim.x) {
    union U16x8 {
      uint4 v;
      uint16_t u[8];
      int16_t s[8];
    } h, l;
    h.v = hi[i];
    l.v = low[i];
    float4 gv[2] = {g[2 * i], g[2 * i + 1]}, mv[2] = {m[2 * i], m[2 * i + 1]},
           vv[2] = {v[2 * i], v[2 * i + 1]};
    const float *fg = &gv[0].x;
    float *fm = &mv[0].x, *fv = &vv[0].x;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      float w = joinMasterBits(h.u[e], l.s[e]);
      sq += fg[e] * fg[e];
      adamwMath<false>(w, fg[e] * gradScale, fm[e], fv[e], lr, beta1, beta2,
                       eps, 8 * i + e >= decayFrom ? weightDecay : 0.f, bc1,
                       bc2Sqrt);
      splitMasterBits(w, h.u[e], l.s[e]);
    }
    hi[i] = h.v;
    low[i] = l.v;
    m[2 * i] = mv[0], m[2 * i + 1] = mv[1];
    v[2 * i] = vv[0], v[2 * i + 1] = vv[1];
  }
  blockSumInto(sumSq, sq);
}

// Vectorized bf16 variants: same arithmetic and rounding as the scalar
// kernels above, 8 elements per access. Callers check 16-byte alignment and
// sizes divisible by 8.

__global__ void __launch_bounds__(kThreads)
    rmsNormForwardBf8(const __nv_bfloat16 *x, const __nv_bfloat16 *w,
                      __nv_bfloat16 *y, float *rstd, int64_t cols, float eps) {
  const int64_t base = int64_t(blockIdx.x) * cols, n8 = cols / 8;
  float f[8], g[8];
  float ss = 0.f;
  for (int64_t j = threadIdx.x; j < n8; j += kThreads) {
    load8(x + base + 8 * j, f);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      ss += f[i] * f[i];
  }
  const float r = rsqrtf(blockSum(ss) / float(cols) + eps);
  if (threadIdx.x == 0)
    rstd[blockIdx.x] = r;
  for (int64_t j = threadIdx.x; j < n8; j += kThreads) {
    load8(x + base + 8 * j, f);
    load8(w + 8 * j, g);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      f[i] = roundBf(f[i] * r) * g[i];
    store8(y + base + 8 * j, f);
  }
}

__global__ void __launch_bounds__(kThreads)
    rmsNormBackwardBf8(const __nv_bfloat16 *dy, const __nv_bfloat16 *x,
                       const __nv_bfloat16 *w, const float *rstd,
                       const __nv_bfloat16 *dres, __nv_bfloat16 *dx,
                       float *dwPartial, int64_t rows, int64_t cols) {
  extern __shared__ float4 dwAcc4[]; // (cols / 4): thread-owned 8-column runs
  const int64_t n8 = cols / 8;
  for (int64_t j = threadIdx.x; j < n8; j += kThreads)
    dwAcc4[2 * j] = dwAcc4[2 * j + 1] = make_float4(0.f, 0.f, 0.f, 0.f);
  float fx[8], fg[8], fw[8];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * cols;
    const float r = rstd[row];
    float dot = 0.f;
    for (int64_t j = threadIdx.x; j < n8; j += kThreads) {
      load8(x + base + 8 * j, fx);
      load8(dy + base + 8 * j, fg);
      load8(w + 8 * j, fw);
      float4 a = dwAcc4[2 * j], b = dwAcc4[2 * j + 1];
      float acc[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float xh = fx[i] * r;
        dot += fg[i] * fw[i] * xh;
        acc[i] += fg[i] * roundBf(xh);
      }
      dwAcc4[2 * j] = make_float4(acc[0], acc[1], acc[2], acc[3]);
      dwAcc4[2 * j + 1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
    }
    dot = blockSum(dot) / float(cols);
    for (int64_t j = threadIdx.x; j < n8; j += kThreads) {
      load8(x + base + 8 * j, fx);
      load8(dy + base + 8 * j, fg);
      load8(w + 8 * j, fw);
#pragma unroll
      for (int i = 0; i < 8; ++i)
        fx[i] = r * (fg[i] * fw[i] - fx[i] * r * dot);
      if (dres) {
        load8(dres + base + 8 * j, fg);
#pragma unroll
        for (int i = 0; i < 8; ++i)
          fx[i] = roundBf(fx[i]) + fg[i];
      }
      store8(dx + base + 8 * j, fx);
    }
  }
  float4 *out =
      reinterpret_cast<float4 *>(dwPartial + int64_t(blockIdx.x) * cols);
  for (int64_t j = threadIdx.x; j < n8; j += kThreads) {
    out[2 * j] = dwAcc4[2 * j];
    out[2 * j + 1] = dwAcc4[2 * j + 1];
  }
}

__global__ void swigluForwardBf8(const __nv_bfloat16 *gu,
                                 __nv_bfloat16 *out, int64_t rows,
                                 int64_t cols) {
  const int64_t per = cols / 8, n8 = rows * per;
  float fg[8], fu[8];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n8;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / per, c = (i % per) * 8, g = r * 2 * cols + c;
    load8(gu + g, fg);
    load8(gu + g + cols, fu);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      fg[k] = roundBf(fg[k] * sigmoid(fg[k])) * fu[k];
    store8(out + r * cols + c, fg);
  }
}

__global__ void swigluBackwardBf8(const __nv_bfloat16 *dy,
                                  const __nv_bfloat16 *gu, __nv_bfloat16 *dgu,
                                  int64_t rows, int64_t cols) {
  const int64_t per = cols / 8, n8 = rows * per;
  float fd[8], fg[8], fu[8];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n8;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / per, c = (i % per) * 8, g = r * 2 * cols + c;
    load8(dy + r * cols + c, fd);
    load8(gu + g, fg);
    load8(gu + g + cols, fu);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float a = fg[k], s = sigmoid(a), d = fd[k];
      fg[k] = d * fu[k] * s * (1.f + a * (1.f - s)); // dg
      fu[k] = d * roundBf(a * s);                    // du
    }
    store8(dgu + g, fg);
    store8(dgu + g + cols, fu);
  }
}

__global__ void ropeBf8(const __nv_bfloat16 *x, const __nv_bfloat16 *cosT,
                        const __nv_bfloat16 *sinT, __nv_bfloat16 *out,
                        int64_t rows, int64_t seq, int64_t heads, int64_t half,
                        float sign) {
  const int64_t per = half / 8, total = rows * per;
  float a[8], b[8], c[8], s[8];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / per, k = (i % per) * 8;
    const int64_t pos = (row / heads) % seq; // rows are (B, S, H)
    const int64_t b1 = row * 2 * half + k, b2 = b1 + half;
    load8(x + b1, a);
    load8(x + b2, b);
    load8(cosT + pos * half + k, c);
    load8(sinT + pos * half + k, s);
    float o1[8], o2[8];
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const float sn = sign * s[q];
      o1[q] = a[q] * c[q] - b[q] * sn;
      o2[q] = b[q] * c[q] + a[q] * sn;
    }
    store8(out + b1, o1);
    store8(out + b2, o2);
  }
}

/// Where head h of token t lives in the separate q/k/v tensors, and whether
/// it is rotated (q and k heads) or copied (v heads).
template <typename T>
__device__ __forceinline__ T *qkvHead(T *q, T *k, T *v, int64_t t, int64_t h,
                                      int64_t nh, int64_t nkv, int64_t dim,
                                      bool &rotate) {
  rotate = h < nh + nkv;
  if (h < nh)
    return q + (t * nh + h) * dim;
  if (h < nh + nkv)
    return k + (t * nkv + h - nh) * dim;
  return v + (t * nkv + h - nh - nkv) * dim;
}

template <typename T>
__global__ void qkvRopeKernel(T *qkv, T *q, T *k, T *v, const T *cosT,
                              const T *sinT, int64_t tokens, int64_t seq,
                              int64_t nh, int64_t nkv, int64_t half,
                              bool backward) {
  const int64_t heads = nh + 2 * nkv, total = tokens * heads * half;
  const float sign = backward ? -1.f : 1.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % half, th = i / half, h = th % heads, t = th / heads;
    bool rotate;
    T *sep = qkvHead(q, k, v, t, h, nh, nkv, 2 * half, rotate);
    T *packed = qkv + th * 2 * half;
    const T *src = backward ? sep : packed;
    T *dst = backward ? packed : sep;
    const float x1 = ld(src, j), x2 = ld(src, j + half);
    if (!rotate) {
      dst[j] = cvt<T>(x1);
      dst[j + half] = cvt<T>(x2);
      continue;
    }
    const int64_t pos = (t % seq) * half + j;
    const float c = ld(cosT, pos), s = sign * ld(sinT, pos);
    dst[j] = cvt<T>(x1 * c - x2 * s);
    dst[j + half] = cvt<T>(x2 * c + x1 * s);
  }
}

__global__ void qkvRopeBf8(__nv_bfloat16 *qkv, __nv_bfloat16 *q,
                           __nv_bfloat16 *k, __nv_bfloat16 *v,
                           const __nv_bfloat16 *cosT,
                           const __nv_bfloat16 *sinT, int64_t tokens,
                           int64_t seq, int64_t nh, int64_t nkv, int64_t half,
                           bool backward) {
  const int64_t heads = nh + 2 * nkv, per = half / 8,
                total = tokens * heads * per;
  const float sign = backward ? -1.f : 1.f;
  float a[8], b[8], c[8], s[8];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = (i % per) * 8, th = i / per, h = th % heads,
                  t = th / heads;
    bool rotate;
    __nv_bfloat16 *sep = qkvHead(q, k, v, t, h, nh, nkv, 2 * half, rotate);
    __nv_bfloat16 *packed = qkv + th * 2 * half;
    const __nv_bfloat16 *src = backward ? sep : packed;
    __nv_bfloat16 *dst = backward ? packed : sep;
    load8(src + j, a);
    load8(src + j + half, b);
    if (rotate) {
      const int64_t pos = (t % seq) * half + j;
      load8(cosT + pos, c);
      load8(sinT + pos, s);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float x1 = a[e], x2 = b[e], sn = sign * s[e];
        a[e] = x1 * c[e] - x2 * sn;
        b[e] = x2 * c[e] + x1 * sn;
      }
    }
    store8(dst + j, a);
    store8(dst + j + half, b);
  }
}

template <typename T>
__global__ void scaleKernel(T *x, int64_t n, const float *scale) {
  const float a = *scale;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = T(float(x[i]) * a);
}

__global__ void scaleBf8(__nv_bfloat16 *x, int64_t n8, const float *scale) {
  const float a = *scale;
  float f[8];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n8;
       i += int64_t(gridDim.x) * blockDim.x) {
    load8(x + 8 * i, f);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      f[e] *= a;
    store8(x + 8 * i, f);
  }
}

// Pure-bf16 AdamW: parameters, gradients and both moments in bf16; the
// arithmetic in fp32, each stored value rounded once (to nearest even).

__global__ void adamwBf16Kernel(__nv_bfloat16 *p, const __nv_bfloat16 *g,
                                __nv_bfloat16 *m, __nv_bfloat16 *v, int64_t n,
                                float lr, float beta1, float beta2, float eps,
                                float weightDecay, int64_t decayFrom, float gradScale, float bc1,
                                float bc2Sqrt, double *sumSq) {
  float sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float w = __bfloat162float(p[i]), mi = __bfloat162float(m[i]),
          vi = __bfloat162float(v[i]);
    const float gi = __bfloat162float(g[i]);
    sq += gi * gi;
    adamwMath<true>(w, gi * gradScale, mi, vi, lr, beta1, beta2, eps,
                    i >= decayFrom ? weightDecay : 0.f, bc1, bc2Sqrt);
    m[i] = __float2bfloat16(mi);
    v[i] = __float2bfloat16(vi);
    p[i] = __float2bfloat16(w);
  }
  blockSumInto(sumSq, sq);
}

__global__ void adamwBf16Bf8(__nv_bfloat16 *p, const __nv_bfloat16 *g,
                             __nv_bfloat16 *m, __nv_bfloat16 *v, int64_t n8,
                             float lr, float beta1, float beta2, float eps,
                             float weightDecay, int64_t decayFrom, float gradScale, float bc1,
                             float bc2Sqrt, double *sumSq) {
  float fw[8], fg[8], fm[8], fv[8], sq = 0.f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n8;
       i += int64_t(gridDim.x) * blockDim.x) {
    load8(p + 8 * i, fw);
    load8(g + 8 * i, fg);
    load8(m + 8 * i, fm);
    load8(v + 8 * i, fv);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      sq += fg[e] * fg[e];
      adamwMath<true>(fw[e], fg[e] * gradScale, fm[e], fv[e], lr, beta1, beta2,
                      eps, 8 * i + e >= decayFrom ? weightDecay : 0.f, bc1,
                      bc2Sqrt);
    }
    store8(m + 8 * i, fm);
    store8(v + 8 * i, fv);
    store8(p + 8 * i, fw);
  }
  blockSumInto(sumSq, sq);
}

int gridFor(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  const int64_t cap = 132 * 16; // H100/H200: 132 SMs; grid-stride beyond
  return int(blocks < cap ? (blocks > 0 ? blocks : 1) : cap);
}

int done() { return int(cudaGetLastError()); }

bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}
template <typename... P> bool aligned16(const void *p, P... rest) {
  return aligned16(p) && aligned16(rest...);
}

} // namespace

using bf = __nv_bfloat16;

int rmsNormForward(const void *x, const void *w, void *y, float *rstd,
                   int64_t rows, int64_t cols, float eps, bool bf16,
                   void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (rows == 0)
    return 0;
  if (bf16 && cols % 8 == 0 && aligned16(x, w, y))
    rmsNormForwardBf8<<<rows, kThreads, 0, s>>>((const bf *)x, (const bf *)w,
                                                (bf *)y, rstd, cols, eps);
  else if (bf16)
    rmsNormForwardKernel<bf><<<rows, kThreads, 0, s>>>(
        (const bf *)x, (const bf *)w, (bf *)y, rstd, cols, eps);
  else
    rmsNormForwardKernel<float><<<rows, kThreads, 0, s>>>(
        (const float *)x, (const float *)w, (float *)y, rstd, cols, eps);
  return done();
}

int rmsNormBackwardBlocks(int64_t rows) {
  return int(rows < 132 * 4 ? (rows > 0 ? rows : 1) : 132 * 4);
}

int rmsNormBackward(const void *dy, const void *x, const void *w,
                    const float *rstd, const void *dres, void *dx,
                    float *dwPartial, int64_t rows, int64_t cols, int blocks,
                    bool bf16, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const size_t smem = size_t(cols) * sizeof(float);
  const bool vec =
      bf16 && cols % 8 == 0 && aligned16(dy, x, w, dres, dx, dwPartial);
  if (smem > 48 * 1024) {
    auto k = vec    ? (const void *)rmsNormBackwardBf8
             : bf16 ? (const void *)rmsNormBackwardKernel<bf>
                    : (const void *)rmsNormBackwardKernel<float>;
    cudaError_t e = cudaFuncSetAttribute(
        k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess)
      return int(e);
  }
  if (vec)
    rmsNormBackwardBf8<<<blocks, kThreads, smem, s>>>(
        (const bf *)dy, (const bf *)x, (const bf *)w, rstd, (const bf *)dres,
        (bf *)dx, dwPartial, rows, cols);
  else if (bf16)
    rmsNormBackwardKernel<bf><<<blocks, kThreads, smem, s>>>(
        (const bf *)dy, (const bf *)x, (const bf *)w, rstd, (const bf *)dres,
        (bf *)dx, dwPartial, rows, cols);
  else
    rmsNormBackwardKernel<float><<<blocks, kThreads, smem, s>>>(
        (const float *)dy, (const float *)x, (const float *)w, rstd,
        (const float *)dres, (float *)dx, dwPartial, rows, cols);
  return done();
}

int swigluForward(const void *gu, void *out, int64_t rows, int64_t cols,
                  bool bf16, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t n = rows * cols;
  if (n == 0)
    return 0;
  if (bf16 && cols % 8 == 0 && aligned16(gu, out))
    swigluForwardBf8<<<gridFor(n / 8, 256), 256, 0, s>>>((const bf *)gu,
                                                         (bf *)out, rows, cols);
  else if (bf16)
    swigluForwardKernel<bf><<<gridFor(n, 256), 256, 0, s>>>(
        (const bf *)gu, (bf *)out, rows, cols);
  else
    swigluForwardKernel<float><<<gridFor(n, 256), 256, 0, s>>>(
        (const float *)gu, (float *)out, rows, cols);
  return done();
}

int swigluBackward(const void *dy, const void *gu, void *dgu, int64_t rows,
                   int64_t cols, bool bf16, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t n = rows * cols;
  if (n == 0)
    return 0;
  if (bf16 && cols % 8 == 0 && aligned16(dy, gu, dgu))
    swigluBackwardBf8<<<gridFor(n / 8, 256), 256, 0, s>>>(
        (const bf *)dy, (const bf *)gu, (bf *)dgu, rows, cols);
  else if (bf16)
    swigluBackwardKernel<bf><<<gridFor(n, 256), 256, 0, s>>>(
        (const bf *)dy, (const bf *)gu, (bf *)dgu, rows, cols);
  else
    swigluBackwardKernel<float><<<gridFor(n, 256), 256, 0, s>>>(
        (const float *)dy, (const float *)gu, (float *)dgu, rows, cols);
  return done();
}

int ropeApply(const void *x, const void *cos, const void *sin, void *out,
              int64_t batch, int64_t seq, int64_t heads, int64_t headDim,
              bool inverse, bool bf16, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t rows = batch * seq * heads, half = headDim / 2;
  if (rows * half == 0)
    return 0;
  const float sign = inverse ? -1.f : 1.f;
  if (bf16 && half % 8 == 0 && aligned16(x, cos, sin, out))
    ropeBf8<<<gridFor(rows * half / 8, 256), 256, 0, s>>>(
        (const bf *)x, (const bf *)cos, (const bf *)sin, (bf *)out, rows, seq,
        heads, half, sign);
  else if (bf16)
    ropeKernel<bf><<<gridFor(rows * half, 256), 256, 0, s>>>(
        (const bf *)x, (const bf *)cos, (const bf *)sin, (bf *)out, rows, seq,
        heads, half, sign);
  else
    ropeKernel<float><<<gridFor(rows * half, 256), 256, 0, s>>>(
        (const float *)x, (const float *)cos, (const float *)sin, (float *)out,
        rows, seq, heads, half, sign);
  return done();
}

int qkvRope(void *qkv, void *q, void *k, void *v, const void *cos,
            const void *sin, int64_t batch, int64_t seq, int64_t nh,
            int64_t nkv, int64_t headDim, bool backward, bool bf16,
            void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t tokens = batch * seq, half = headDim / 2,
                work = tokens * (nh + 2 * nkv) * half;
  if (work == 0)
    return 0;
  if (bf16 && half % 8 == 0 && aligned16(qkv, q, k, v, cos, sin))
    qkvRopeBf8<<<gridFor(work / 8, 256), 256, 0, s>>>(
        (bf *)qkv, (bf *)q, (bf *)k, (bf *)v, (const bf *)cos, (const bf *)sin,
        tokens, seq, nh, nkv, half, backward);
  else if (bf16)
    qkvRopeKernel<bf><<<gridFor(work, 256), 256, 0, s>>>(
        (bf *)qkv, (bf *)q, (bf *)k, (bf *)v, (const bf *)cos, (const bf *)sin,
        tokens, seq, nh, nkv, half, backward);
  else
    qkvRopeKernel<float><<<gridFor(work, 256), 256, 0, s>>>(
        (float *)qkv, (float *)q, (float *)k, (float *)v, (const float *)cos,
        (const float *)sin, tokens, seq, nh, nkv, half, backward);
  return done();
}

int crossEntropyRows(void *logits, const int64_t *targets, float *lossRows,
                     int64_t rows, int64_t vocab, float gradScale, bool bf16,
                     void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (rows == 0)
    return 0;
  if (bf16 && vocab % 8 == 0 && aligned16(logits))
    crossEntropyRowsBf8<<<rows, kThreads, 0, s>>>((bf *)logits, targets,
                                                  lossRows, vocab, gradScale);
  else if (bf16)
    crossEntropyRowsKernel<bf><<<rows, kThreads, 0, s>>>(
        (bf *)logits, targets, lossRows, vocab, gradScale);
  else
    crossEntropyRowsKernel<float><<<rows, kThreads, 0, s>>>(
        (float *)logits, targets, lossRows, vocab, gradScale);
  return done();
}

int sumSquares(const void *x, int64_t n, bool bf16, double *sum,
               void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  if (bf16 && n % 8 == 0 && aligned16(x))
    sumSquaresBf8<<<gridFor(n / 8, 256), 256, 0, s>>>((const bf *)x, n / 8,
                                                      sum);
  else if (bf16)
    sumSquaresKernel<bf><<<gridFor(n, 256), 256, 0, s>>>((const bf *)x, n, sum);
  else if (n % 4 == 0 && aligned16(x))
    sumSquaresF4<<<gridFor(n / 4, 256), 256, 0, s>>>((const float4 *)x, n / 4,
                                                     sum);
  else
    sumSquaresKernel<float><<<gridFor(n, 256), 256, 0, s>>>((const float *)x,
                                                            n, sum);
  return done();
}

int scaleInPlace(void *x, int64_t n, const float *scale, bool bf16,
                 void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  if (bf16 && n % 8 == 0 && aligned16(x))
    scaleBf8<<<gridFor(n / 8, 256), 256, 0, s>>>((bf *)x, n / 8, scale);
  else if (bf16)
    scaleKernel<bf><<<gridFor(n, 256), 256, 0, s>>>((bf *)x, n, scale);
  else
    scaleKernel<float><<<gridFor(n, 256), 256, 0, s>>>((float *)x, n, scale);
  return done();
}

int adamwFp32(float *param, const float *grad, float *expAvg, float *expAvgSq,
              void *outBf16, int64_t n, float lr, float beta1, float beta2,
              float eps, float weightDecay, int64_t decayFrom, float gradScale, float bc1,
              float bc2Sqrt, double *sumSq, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  if (n % 4 == 0 && aligned16(param, grad, expAvg, expAvgSq) &&
      reinterpret_cast<uintptr_t>(outBf16) % 8 == 0)
    adamwFp32F4<<<gridFor(n / 4, 256), 256, 0, s>>>(
        (float4 *)param, (const float4 *)grad, (float4 *)expAvg,
        (float4 *)expAvgSq, (__nv_bfloat162 *)outBf16, n / 4, lr, beta1, beta2,
        eps, weightDecay, decayFrom, gradScale, bc1, bc2Sqrt, sumSq);
  else
    adamwFp32Kernel<<<gridFor(n, 256), 256, 0, s>>>(
        param, grad, expAvg, expAvgSq, (bf *)outBf16, n, lr, beta1, beta2, eps,
        weightDecay, decayFrom, gradScale, bc1, bc2Sqrt, sumSq);
  return done();
}

int adamwSplit(void *hi, void *low, const float *grad, float *expAvg,
               float *expAvgSq, int64_t n, float lr, float beta1, float beta2,
               float eps, float weightDecay, int64_t decayFrom, float gradScale, float bc1,
               float bc2Sqrt, double *sumSq, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  if (n % 8 == 0 && aligned16(hi, low, grad, expAvg, expAvgSq))
    adamwSplit8<<<gridFor(n / 8, 256), 256, 0, s>>>(
        (uint4 *)hi, (uint4 *)low, (const float4 *)grad, (float4 *)expAvg,
        (float4 *)expAvgSq, n / 8, lr, beta1, beta2, eps, weightDecay, decayFrom,
        gradScale, bc1, bc2Sqrt, sumSq);
  else
    adamwSplitKernel<<<gridFor(n, 256), 256, 0, s>>>(
        (uint16_t *)hi, (int16_t *)low, grad, expAvg, expAvgSq, n, lr, beta1,
        beta2, eps, weightDecay, decayFrom, gradScale, bc1, bc2Sqrt, sumSq);
  return done();
}

int adamwBf16(void *param, const void *grad, void *expAvg, void *expAvgSq,
              int64_t n, float lr, float beta1, float beta2, float eps,
              float weightDecay, int64_t decayFrom, float gradScale, float bc1, float bc2Sqrt,
              double *sumSq, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  if (n % 8 == 0 && aligned16(param, grad, expAvg, expAvgSq))
    adamwBf16Bf8<<<gridFor(n / 8, 256), 256, 0, s>>>(
        (bf *)param, (const bf *)grad, (bf *)expAvg, (bf *)expAvgSq, n / 8, lr,
        beta1, beta2, eps, weightDecay, decayFrom, gradScale, bc1, bc2Sqrt, sumSq);
  else
    adamwBf16Kernel<<<gridFor(n, 256), 256, 0, s>>>(
        (bf *)param, (const bf *)grad, (bf *)expAvg, (bf *)expAvgSq, n, lr,
        beta1, beta2, eps, weightDecay, decayFrom, gradScale, bc1, bc2Sqrt, sumSq);
  return done();
}

template <typename T>
__global__ void nf4DequantizeKernel(const uint8_t *packed,
                                    const uint8_t *absmaxQ,
                                    const float *absmax2, float offset,
                                    const float *code8, const float *code16,
                                    T *out, int64_t nbytes) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < nbytes;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t block = (2 * i) / 64; // 32 bytes per block of 64
    // No fused multiply-add: bitsandbytes rounds the product, then adds.
    const float am =
        __fadd_rn(__fmul_rn(code8[absmaxQ[block]], absmax2[block / 256]),
                  offset);
    const uint8_t b = packed[i];
    const float hi = __fmul_rn(code16[b >> 4], am);
    const float lo = __fmul_rn(code16[b & 15], am);
    if constexpr (std::is_same<T, float>::value) {
      out[2 * i] = hi;
      out[2 * i + 1] = lo;
    } else {
      out[2 * i] = __float2bfloat16_rn(hi);
      out[2 * i + 1] = __float2bfloat16_rn(lo);
    }
  }
}

int nf4Dequantize(const uint8_t *packed, const uint8_t *absmaxQ,
                  const float *absmax2, float offset, const float *code8,
                  const float *code16, void *out, int64_t nbytes, bool bf16,
                  void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (nbytes == 0)
    return 0;
  if (bf16)
    nf4DequantizeKernel<bf><<<gridFor(nbytes, 256), 256, 0, s>>>(
        packed, absmaxQ, absmax2, offset, code8, code16, (bf *)out, nbytes);
  else
    nf4DequantizeKernel<float><<<gridFor(nbytes, 256), 256, 0, s>>>(
        packed, absmaxQ, absmax2, offset, code8, code16, (float *)out, nbytes);
  return done();
}

namespace {

// FP8 casts (Fp8.h). Both kernels read 8 adjacent elements per thread
// (one 16-byte load of bf16, two of float).
__device__ __forceinline__ void load8(const float *p, float (&f)[8]) {
  const float4 a = reinterpret_cast<const float4 *>(p)[0],
               b = reinterpret_cast<const float4 *>(p)[1];
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w;
  f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

// The amax is a non-negative float, so its bits order as integers do: one
// atomicMax on them per block. `vec`: n % 8 == 0 and x 16-byte aligned.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    fp8AmaxKernel(const T *x, int64_t n, float *amax, bool vec) {
  float m = 0.f;
  const int64_t stride = int64_t(gridDim.x) * kThreads,
                first = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (vec) {
    for (int64_t i = first; i < n / 8; i += stride) {
      float f[8];
      load8(x + 8 * i, f);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        m = fmaxf(m, fabsf(f[j]));
    }
  } else {
    for (int64_t i = first; i < n; i += stride)
      m = fmaxf(m, fabsf(ld(x, i)));
  }
  for (int o = 16; o > 0; o >>= 1)
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  __shared__ float warpMax[kThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    warpMax[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < kThreads / 32 ? warpMax[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1)
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0)
      atomicMax(reinterpret_cast<int *>(amax), __float_as_int(m));
  }
}

// A tile of 32 rows x 256 columns per block of 32 x 8 threads: each thread
// converts 8 adjacent elements of 4 rows (one 8-byte store of codes per
// row); the transpose goes through shared memory, 8 threads per 32-byte row
// of it (4 source rows per 4-byte store).
constexpr int kFp8TileRows = 32, kFp8TileCols = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    fp8CastKernel(const T *x, int64_t rows, int64_t cols, const float *amax,
                  float fmax, __nv_fp8_interpretation_t kind, uint8_t *out,
                  uint8_t *outT, float *scaleInv) {
  __shared__ uint32_t tile[kFp8TileRows][kFp8TileCols / 4 + 1];
  const float scale = __fdiv_rn(fmax, fmaxf(*amax, 1e-12f));
  if (scaleInv && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 &&
      threadIdx.y == 0)
    *scaleInv = __fdiv_rn(1.f, scale);
  const int64_t r0 = int64_t(blockIdx.y) * kFp8TileRows,
                c0 = int64_t(blockIdx.x) * kFp8TileCols;
  const int64_t c = c0 + 8 * threadIdx.x;
  for (int i = 0; i < kFp8TileRows / 8; ++i) {
    const int tr = threadIdx.y + 8 * i;
    const int64_t r = r0 + tr;
    uint32_t lo = 0, hi = 0;
    if (r < rows && c < cols) {
      float f[8];
      load8(x + r * cols + c, f);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        lo |= uint32_t(__nv_cvt_float_to_fp8(__fmul_rn(f[j], scale),
                                             __NV_SATFINITE, kind))
              << (8 * j);
        hi |= uint32_t(__nv_cvt_float_to_fp8(__fmul_rn(f[j + 4], scale),
                                             __NV_SATFINITE, kind))
              << (8 * j);
      }
      if (out)
        *reinterpret_cast<uint2 *>(out + r * cols + c) = make_uint2(lo, hi);
    }
    tile[tr][2 * threadIdx.x] = lo;
    tile[tr][2 * threadIdx.x + 1] = hi;
  }
  if (!outT)
    return;
  __syncthreads();
  const int t = threadIdx.y * 32 + threadIdx.x;
  const int part = t % 8; // which 4 source rows
  for (int k = 0; k < kFp8TileCols / 32; ++k) {
    const int tc = t / 8 + 32 * k; // tile column = outT row
    const int64_t oc = c0 + tc, orow = r0 + 4 * part;
    if (oc >= cols || orow >= rows)
      continue;
    uint32_t word = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      word |= ((tile[4 * part + j][tc / 4] >> (8 * (tc % 4))) & 0xffu)
              << (8 * j);
    *reinterpret_cast<uint32_t *>(outT + oc * rows + orow) = word;
  }
}

} // namespace

int fp8Amax(const void *x, int64_t n, float *amax, bool bf16, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaMemsetAsync(amax, 0, sizeof(float), s);
  if (e != cudaSuccess || n == 0)
    return int(e);
  const bool vec = n % 8 == 0 && aligned16(x);
  const int grid = gridFor(vec ? n / 8 : n, kThreads);
  if (bf16)
    fp8AmaxKernel<bf><<<grid, kThreads, 0, s>>>(static_cast<const bf *>(x), n,
                                                amax, vec);
  else
    fp8AmaxKernel<float><<<grid, kThreads, 0, s>>>(
        static_cast<const float *>(x), n, amax, vec);
  return done();
}

int fp8Cast(const void *x, int64_t rows, int64_t cols, const float *amax,
            bool e5m2, void *out, void *outT, float *scaleInv, bool bf16,
            void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (rows % 16 || cols % 16 || !aligned16(x) ||
      (out && !aligned16(out)) || (outT && !aligned16(outT)))
    return int(cudaErrorInvalidValue);
  if (rows == 0 || cols == 0)
    return 0;
  const dim3 grid(unsigned((cols + kFp8TileCols - 1) / kFp8TileCols),
                  unsigned((rows + kFp8TileRows - 1) / kFp8TileRows));
  if (grid.y > 65535)
    return int(cudaErrorInvalidValue);
  const dim3 block(32, 8);
  const float fmax = e5m2 ? 57344.f : 448.f;
  const auto kind = e5m2 ? __NV_E5M2 : __NV_E4M3;
  if (bf16)
    fp8CastKernel<bf><<<grid, block, 0, s>>>(
        static_cast<const bf *>(x), rows, cols, amax, fmax, kind,
        static_cast<uint8_t *>(out), static_cast<uint8_t *>(outT), scaleInv);
  else
    fp8CastKernel<float><<<grid, block, 0, s>>>(
        static_cast<const float *>(x), rows, cols, amax, fmax, kind,
        static_cast<uint8_t *>(out), static_cast<uint8_t *>(outT), scaleInv);
  return done();
}

} // namespace swift::rt::cuda
