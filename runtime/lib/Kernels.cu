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
#include <cuda_runtime.h>

namespace swift::rt::cuda {
namespace {

__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16 *p, int64_t i) {
  return __bfloat162float(p[i]);
}
template <typename T> __device__ __forceinline__ T cvt(float v);
template <> __device__ __forceinline__ float cvt<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 cvt<__nv_bfloat16>(float v) {
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
                          const float *rstd, T *dx, float *dwPartial,
                          int64_t rows, int64_t cols) {
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
      const float xh = ld(x, base + j) * r;
      dx[base + j] = cvt<T>(r * (ld(dy, base + j) * ld(w, j) - xh * dot));
    }
  }
  for (int64_t j = threadIdx.x; j < cols; j += kThreads)
    dwPartial[int64_t(blockIdx.x) * cols + j] = dwAcc[j];
}

__device__ __forceinline__ float sigmoid(float v) {
  return 1.f / (1.f + __expf(-v));
}

template <typename T>
__global__ void swigluForwardKernel(const T *g, const T *u, T *out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float a = ld(g, i);
    out[i] = cvt<T>(round<T>(a * sigmoid(a)) * ld(u, i));
  }
}

template <typename T>
__global__ void swigluBackwardKernel(const T *dy, const T *g, const T *u,
                                     T *dg, T *du, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float a = ld(g, i), s = sigmoid(a), d = ld(dy, i);
    du[i] = cvt<T>(d * round<T>(a * s));
    dg[i] = cvt<T>(d * ld(u, i) * s * (1.f + a * (1.f - s)));
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
    const float c = ld(cosT, pos * half + k), s = sign * ld(sinT, pos * half + k);
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

__global__ void adamwFp32Kernel(float *p, const float *g, float *m, float *v,
                                __nv_bfloat16 *out, int64_t n, float lr,
                                float beta1, float beta2, float eps,
                                float weightDecay, float gradScale, float bc1,
                                float bc2Sqrt) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float gr = g[i] * gradScale;
    float w = p[i] * (1.f - lr * weightDecay);
    const float mi = beta1 * m[i] + (1.f - beta1) * gr;
    const float vi = beta2 * v[i] + (1.f - beta2) * gr * gr;
    m[i] = mi;
    v[i] = vi;
    w -= (lr / bc1) * mi / (sqrtf(vi) / bc2Sqrt + eps);
    p[i] = w;
    if (out)
      out[i] = __float2bfloat16(w);
  }
}

__global__ void adamwBf16Kernel(__nv_bfloat16 *p, const __nv_bfloat16 *g,
                                float *m, float *v, int64_t n, float lr,
                                float beta1, float beta2, float eps,
                                float weightDecay, float gradScale, float bc1,
                                float bc2Sqrt) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float gr = __bfloat162float(g[i]) * gradScale;
    float w = __bfloat162float(p[i]) * (1.f - lr * weightDecay);
    const float mi = beta1 * m[i] + (1.f - beta1) * gr;
    const float vi = beta2 * v[i] + (1.f - beta2) * gr * gr;
    m[i] = mi;
    v[i] = vi;
    w -= (lr / bc1) * mi / (sqrtf(vi) / bc2Sqrt + eps);
    p[i] = __float2bfloat16(w);
  }
}

int gridFor(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  const int64_t cap = 132 * 16; // H100/H200: 132 SMs; grid-stride beyond
  return int(blocks < cap ? (blocks > 0 ? blocks : 1) : cap);
}

int done() { return int(cudaGetLastError()); }

} // namespace

using bf = __nv_bfloat16;

int rmsNormForward(const void *x, const void *w, void *y, float *rstd,
                   int64_t rows, int64_t cols, float eps, bool bf16,
                   void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (rows == 0)
    return 0;
  if (bf16)
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
                    const float *rstd, void *dx, float *dwPartial, int64_t rows,
                    int64_t cols, int blocks, bool bf16, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const size_t smem = size_t(cols) * sizeof(float);
  if (smem > 48 * 1024) {
    auto k = bf16 ? (const void *)rmsNormBackwardKernel<bf>
                  : (const void *)rmsNormBackwardKernel<float>;
    cudaError_t e = cudaFuncSetAttribute(
        k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess)
      return int(e);
  }
  if (bf16)
    rmsNormBackwardKernel<bf><<<blocks, kThreads, smem, s>>>(
        (const bf *)dy, (const bf *)x, (const bf *)w, rstd, (bf *)dx,
        dwPartial, rows, cols);
  else
    rmsNormBackwardKernel<float><<<blocks, kThreads, smem, s>>>(
        (const float *)dy, (const float *)x, (const float *)w, rstd,
        (float *)dx, dwPartial, rows, cols);
  return done();
}

int swigluForward(const void *g, const void *u, void *out, int64_t n, bool bf16,
                  void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  if (bf16)
    swigluForwardKernel<bf><<<gridFor(n, 256), 256, 0, s>>>(
        (const bf *)g, (const bf *)u, (bf *)out, n);
  else
    swigluForwardKernel<float><<<gridFor(n, 256), 256, 0, s>>>(
        (const float *)g, (const float *)u, (float *)out, n);
  return done();
}

int swigluBackward(const void *dy, const void *g, const void *u, void *dg,
                   void *du, int64_t n, bool bf16, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  if (bf16)
    swigluBackwardKernel<bf><<<gridFor(n, 256), 256, 0, s>>>(
        (const bf *)dy, (const bf *)g, (const bf *)u, (bf *)dg, (bf *)du, n);
  else
    swigluBackwardKernel<float><<<gridFor(n, 256), 256, 0, s>>>(
        (const float *)dy, (const float *)g, (const float *)u, (float *)dg,
        (float *)du, n);
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
  if (bf16)
    ropeKernel<bf><<<gridFor(rows * half, 256), 256, 0, s>>>(
        (const bf *)x, (const bf *)cos, (const bf *)sin, (bf *)out, rows, seq,
        heads, half, sign);
  else
    ropeKernel<float><<<gridFor(rows * half, 256), 256, 0, s>>>(
        (const float *)x, (const float *)cos, (const float *)sin, (float *)out,
        rows, seq, heads, half, sign);
  return done();
}

int crossEntropyRows(void *logits, const int64_t *targets, float *lossRows,
                     int64_t rows, int64_t vocab, float gradScale, bool bf16,
                     void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (rows == 0)
    return 0;
  if (bf16)
    crossEntropyRowsKernel<bf><<<rows, kThreads, 0, s>>>(
        (bf *)logits, targets, lossRows, vocab, gradScale);
  else
    crossEntropyRowsKernel<float><<<rows, kThreads, 0, s>>>(
        (float *)logits, targets, lossRows, vocab, gradScale);
  return done();
}

int adamwFp32(float *param, const float *grad, float *expAvg, float *expAvgSq,
              void *outBf16, int64_t n, float lr, float beta1, float beta2,
              float eps, float weightDecay, float gradScale, float bc1,
              float bc2Sqrt, void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  adamwFp32Kernel<<<gridFor(n, 256), 256, 0, s>>>(
      param, grad, expAvg, expAvgSq, (bf *)outBf16, n, lr, beta1, beta2, eps,
      weightDecay, gradScale, bc1, bc2Sqrt);
  return done();
}

int adamwBf16(void *param, const void *grad, float *expAvg, float *expAvgSq,
              int64_t n, float lr, float beta1, float beta2, float eps,
              float weightDecay, float gradScale, float bc1, float bc2Sqrt,
              void *stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0)
    return 0;
  adamwBf16Kernel<<<gridFor(n, 256), 256, 0, s>>>(
      (bf *)param, (const bf *)grad, expAvg, expAvgSq, n, lr, beta1, beta2,
      eps, weightDecay, gradScale, bc1, bc2Sqrt);
  return done();
}

} // namespace swift::rt::cuda
