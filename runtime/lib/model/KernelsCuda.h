//===- KernelsCuda.h - launchers of the fused CUDA kernels (no LibTorch) --===//
//
// Plain pointers and a stream, so Kernels.cu compiles with nvcc alone and
// never sees LibTorch headers. Tensors are contiguous; `bf16` selects
// __nv_bfloat16 elements, otherwise float. Row-major (rows, cols) views.
// Each launcher returns the launch's cudaError_t as an int (0 = success).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace swift::rt::cuda {

/// y = bf16(x * rstd) * w per row; rstd (rows) fp32 is written for backward.
int rmsNormForward(const void *x, const void *w, void *y, float *rstd,
                   int64_t rows, int64_t cols, float eps, bool bf16,
                   void *stream);
/// dx per row, plus dres (rows, cols) when not null: the gradient a
/// residual branch sends to x, added to dx rounded to the element type (as
/// autograd would add the two); dwPartial (blocks, cols) fp32 partial sums
/// of dy * bf16(x * rstd), one row per block of the grid; `blocks` is what
/// the caller allocated (rmsNormBackwardBlocks).
int rmsNormBackward(const void *dy, const void *x, const void *w,
                    const float *rstd, const void *dres, void *dx,
                    float *dwPartial, int64_t rows, int64_t cols, int blocks,
                    bool bf16, void *stream);
int rmsNormBackwardBlocks(int64_t rows);
/// Largest `cols` the backward's shared-memory accumulator takes.
constexpr int64_t kRmsNormMaxCols = 12288;

/// out (rows, cols) = silu(g) * u of the packed gu (rows, 2 cols): g the
/// first `cols` of each row, u the last.
int swigluForward(const void *gu, void *out, int64_t rows, int64_t cols,
                  bool bf16, void *stream);
/// dgu (rows, 2 cols), packed like gu, from dy (rows, cols).
int swigluBackward(const void *dy, const void *gu, void *dgu, int64_t rows,
                   int64_t cols, bool bf16, void *stream);

/// Rotary on x (B, S, H, D) contiguous with tables cos, sin (S, D/2) in the
/// same dtype: out = [x1 c - x2 s, x2 c + x1 s]. `inverse` rotates by -angle
/// (the backward).
int ropeApply(const void *x, const void *cos, const void *sin, void *out,
              int64_t batch, int64_t seq, int64_t heads, int64_t headDim,
              bool inverse, bool bf16, void *stream);

/// The packed projection qkv (B, S, (nh + 2 nkv) D) and q (B, S, nh, D),
/// k, v (B, S, nkv, D): forward reads qkv and writes q and k rotated, v
/// copied; `backward` reads dq, dk, dv from q, k, v and writes the packed
/// gradient into qkv (q and k rotated by -angle). Tables (S, D/2).
int qkvRope(void *qkv, void *q, void *k, void *v, const void *cos,
            const void *sin, int64_t batch, int64_t seq, int64_t nh,
            int64_t nkv, int64_t headDim, bool backward, bool bf16,
            void *stream);

/// Cross-entropy of each row of `logits` (rows, V) against targets (rows)
/// int64: lossRows[r] = logsumexp(row) - row[target] in fp32. With
/// `gradScale` != 0 the row is overwritten in place by its gradient
/// (softmax - onehot) * gradScale, rounded once to the logits' dtype.
int crossEntropyRows(void *logits, const int64_t *targets, float *lossRows,
                     int64_t rows, int64_t vocab, float gradScale, bool bf16,
                     void *stream);

/// *sum += the sum of x's squares (x contiguous, n elements; `sum` one fp64
/// on the device): a gradient's share of the norm clipping needs.
int sumSquares(const void *x, int64_t n, bool bf16, double *sum, void *stream);

/// x[i] *= *scale in place (x contiguous, `scale` one fp32 on the device):
/// a loss gradient times its upstream gradient without a host sync.
int scaleInPlace(void *x, int64_t n, const float *scale, bool bf16,
                 void *stream);

/// AdamW for fp32 master weights, gradients and states (bf16-mixed); when
/// `out` is set, also writes the updated weights there in bf16 (the
/// publish copy, fused). Every AdamW kernel adds the sum of the squares of
/// the raw gradients (before gradScale) to *sumSq when it is set, and
/// decays only the elements from `decayFrom` on (HF Trainer's groups).
int adamwFp32(float *param, const float *grad, float *expAvg, float *expAvgSq,
              void *outBf16, int64_t n, float lr, float beta1, float beta2,
              float eps, float weightDecay, int64_t decayFrom, float gradScale,
              float bc1, float bc2Sqrt, double *sumSq, void *stream);

/// AdamW for bf16-mixed with the fp32 master kept as the bf16 compute copy
/// `hi` plus int16 low bits `low` (plan::masterInComputeCopy): fp32
/// gradients and states; both halves of the master updated in place.
int adamwSplit(void *hi, void *low, const float *grad, float *expAvg,
               float *expAvgSq, int64_t n, float lr, float beta1, float beta2,
               float eps, float weightDecay, int64_t decayFrom,
               float gradScale, float bc1, float bc2Sqrt, double *sumSq,
               void *stream);

/// AdamW for bf16 parameters, gradients and states (pure bf16): the update
/// is computed in fp32; parameter and states are rounded once each.
int adamwBf16(void *param, const void *grad, void *expAvg, void *expAvgSq,
              int64_t n, float lr, float beta1, float beta2, float eps,
              float weightDecay, int64_t decayFrom, float gradScale,
              float bc1, float bc2Sqrt, double *sumSq, void *stream);

/// bitsandbytes' NF4 dequantization (Nf4.h) of `nbytes` packed bytes into
/// out (2 nbytes elements, bf16 or float): absmax = code8[absmaxQ[b]] *
/// absmax2[b / 256] + offset (two roundings, as bitsandbytes), element =
/// code16[index] * absmax, rounded once.
int nf4Dequantize(const uint8_t *packed, const uint8_t *absmaxQ,
                  const float *absmax2, float offset, const float *code8,
                  const float *code16, void *out, int64_t nbytes, bool bf16,
                  void *stream);

/// amax[0] = max |x_i| over n bf16 or fp32 elements (NaNs ignored); the
/// launcher zeroes it first.
int fp8Amax(const void *x, int64_t n, float *amax, bool bf16, void *stream);

/// FP8 codes (e4m3, or e5m2 when `e5m2`) of x (rows, cols) times
/// scale = fmax / max(*amax, 1e-12), rounded to nearest even and saturated
/// to +-fmax (Fp8.h): into out (rows, cols) and/or its transpose outT
/// (cols, rows) (null: not written); scaleInv, when not null, gets 1 /
/// scale. rows and cols multiples of 16, x 16-byte aligned.
int fp8Cast(const void *x, int64_t rows, int64_t cols, const float *amax,
            bool e5m2, void *out, void *outT, float *scaleInv, bool bf16,
            void *stream);

} // namespace swift::rt::cuda
