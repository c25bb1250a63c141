//===- Fp8.h - FP8 GEMMs of the decoder linears (precision fp8-*) ---------===//
//
// Tensorwise dynamic scaling, the recipe of torchao's Float8Linear and
// Transformer Engine's "current scaling": each GEMM operand is cast to FP8
// with its own scale, computed from its amax at the time of the cast,
//   scale = fmax / max(amax, 1e-12),   q = fp8(x * scale)   (RNE, saturating)
// and the GEMM multiplies the codes and undoes both scales in its epilogue
// (cuBLASLt through at::_scaled_mm, fp32 accumulation). Weights and inputs
// are e4m3 (fmax 448); output gradients e5m2 (fmax 57344: range over
// precision). Per linear y = x W^T:
//   forward      y  = q(x) q(W)^T
//   input grad   dx = q5(dy) q(W)              (W^T's codes: same scale)
//   weight grad  dW = q5(dy)^T q(x)            (x^T's codes: same scale)
// All three with Hopper's fast accumulation (Fp8.cpp says what was
// measured). Hopper's FP8 GEMMs read both operands K-major, so the backward casts W and
// x again into their transposed layouts (with the forward's amax: the same
// codes, transposed) and dy into both. What autograd saves: W in bf16 as
// before, and x^T's codes instead of x where nothing else keeps x (a norm's
// or SwiGLU's output: half the bytes); the other copies live only around
// their GEMM.
//
// On the CPU the same casts and GEMMs run emulated (codes rounded exactly as
// the CUDA conversion rounds them, products in fp32): CI tests the scaling
// logic there, and the GPU check compares the two. swift-run itself refuses
// fp8 plans on the CPU and on GPUs without FP8 tensor cores.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/model/Kernels.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace swift::rt {

enum class Fp8Format : uint8_t {
  E4M3, // 4 exponent bits (bias 7), 3 mantissa; no infinities, max 448
  E5M2, // 5 exponent bits (bias 15), 2 mantissa; max finite 57344
};

/// Largest finite value of `f`.
constexpr float fp8Max(Fp8Format f) {
  return f == Fp8Format::E4M3 ? 448.f : 57344.f;
}

/// The code of `v` in `f`: round to nearest even, finite values beyond the
/// largest (and infinities) saturate to it, NaN stays NaN (0x7f | sign) --
/// what CUDA's __nv_cvt_float_to_fp8(v, __NV_SATFINITE, ...) returns.
uint8_t encodeFp8(float v, Fp8Format f);
/// The value of code `bits` in `f` (NaN codes give NaN).
float decodeFp8(uint8_t bits, Fp8Format f);

/// The cast's multiplier for a tensor whose largest |element| is `amax`:
/// fmax / max(amax, 1e-12), in fp32 as the CUDA kernel computes it.
float fp8Scale(float amax, Fp8Format f);

/// An FP8 copy of a 2-D tensor: its codes (uint8 on the CPU, the FP8 dtype
/// on CUDA) in the requested layouts and the scale they were made with.
struct Fp8Tensor {
  at::Tensor rows;       // (R, C) codes, or undefined
  at::Tensor cols;       // (C, R) codes of the transpose, or undefined
  at::Tensor amax;       // () fp32 on the tensor's device
  at::Tensor scaleInv;   // () fp32: 1 / scale, the GEMM's dequantization
};

/// Casts x (R, C), bf16 or fp32, to `f`: its amax is computed unless given
/// (a second cast of the same tensor reuses the first's), then the codes in
/// `rows` and/or `cols` layout. One amax pass and one cast pass on CUDA.
Fp8Tensor castFp8(const at::Tensor &x, Fp8Format f, bool rows, bool cols,
                  const at::Tensor &amax = {});

/// The values an Fp8Tensor's row layout stands for, x's dtype-independent
/// fp32 (codes decoded, times scaleInv): what the GEMMs multiply.
at::Tensor dequantizeFp8(const Fp8Tensor &q, Fp8Format f);

/// [residual +] x W^T [+ bias] with the three GEMMs in FP8 (above). x (..., K)
/// and W (N, K) bf16; bias (N) bf16 or undefined; residual x's shape with N
/// columns or undefined. With `value` false the result is left
/// uninitialized (full checkpointing's recompute: residualLinear's).
/// W's gradient goes into `sink` when given (GradSink), else through
/// autograd. `keepCodes`: the forward casts x into both layouts and keeps
/// x^T's codes (1 byte per element) for the weight gradient instead of x
/// itself: for inputs nothing else keeps (a norm's or SwiGLU's output), it
/// halves what the linear saves and spares the backward a cast; false for
/// an input kept anyway (attention's output), which the backward casts
/// again. CUDA with FP8 GEMMs, or the CPU emulation.
at::Tensor fp8Linear(const at::Tensor &x, const at::Tensor &w,
                     const at::Tensor &bias, const GradSink &sink,
                     const at::Tensor &residual = {}, bool value = true,
                     bool keepCodes = true);


/// Empty when `device` runs FP8 GEMMs (CUDA, compute capability 8.9 or
/// later, a LibTorch with FP8 GEMMs and the runtime's kernels), else why not.
std::string fp8Unsupported(const at::Device &device);

} // namespace swift::rt
