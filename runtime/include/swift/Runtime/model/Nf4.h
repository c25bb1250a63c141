//===- Nf4.h - bitsandbytes' NF4 with double-quantized absmax -*- C++ -*-===//
//
// QLoRA's frozen base: 4-bit NormalFloat (Dettmers et al.) exactly as
// bitsandbytes' quantize_4bit(quant_type="nf4", blocksize=64,
// compress_statistics=True) stores it, so a swift-run QLoRA base is
// bit-identical to a bitsandbytes one:
//   - blocks of 64 elements; each element x -> the index of the nearest of
//     the 16 NF4 code values to x * (1 / absmax) (absmax of its block, fp32),
//     two indices a byte, the first element in the high nibble;
//   - double quantization of the fp32 absmax: its mean (`offset`) is
//     subtracted, then blocks of 256 are quantized to 8 bits with
//     bitsandbytes' signed dynamic code (create_dynamic_map) against their
//     own fp32 absmax (`absmax2`);
//   - dequantization: absmax = code8[q] * absmax2 + offset, then
//     x = nf4[index] * absmax, computed in fp32 and rounded once to the
//     compute dtype.
// 0.5 + 1/64 + 4/(64*256) bytes per element (+4 bytes per tensor).
// Checked against bitsandbytes' source (functional.py create_dynamic_map,
// get_4bit_type; kernels.cu dQuantizeNF4, dQuantize, kQuantizeBlockwise):
// the same codes, thresholds (midpoints, ties down), reciprocal scaling,
// nibble order and roundings. One known difference: the 8-bit code follows
// torch's scalar linspace; torch's vectorized linspace (AVX2/AVX-512) may
// round a few of those 256 values 1 ulp apart, which also differs between
// bitsandbytes installs on CPUs of different vector width.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>

namespace swift::rt {

/// bitsandbytes' NF4 code (get_4bit_type("nf4")), ascending.
const std::array<float, 16> &nf4Code();
/// bitsandbytes' 8-bit signed dynamic code (create_dynamic_map(signed=True,
/// max_exponent_bits=7, total_bits=8)), ascending, 256 values.
const std::array<float, 256> &dynamicCode();

inline constexpr int64_t kNf4Block = 64;       // elements per absmax
inline constexpr int64_t kAbsmaxBlock = 256;   // absmax values per absmax2

struct Nf4Tensor {
  at::Tensor packed;  // uint8 (ceil(n / 2)): two 4-bit indices a byte
  at::Tensor absmaxQ; // uint8 (blocks): 8-bit codes of absmax - offset
  at::Tensor absmax2; // fp32 (ceil(blocks / 256))
  float offset = 0;   // mean of the fp32 absmax
  int64_t numel = 0;
  std::vector<int64_t> shape;
};

/// Quantizes `w` (any float dtype, any device; the result on w's device).
Nf4Tensor quantizeNf4(const at::Tensor &w);
/// The values `q` stands for, in `dtype`, on q's device, in q's shape.
at::Tensor dequantizeNf4(const Nf4Tensor &q, at::ScalarType dtype);
/// The same values written into `dst` (q's numel, contiguous, on q's
/// device): one kernel on CUDA (bf16 or fp32, no temporaries), the op
/// chain of dequantizeNf4 elsewhere.
void dequantizeNf4Into(const Nf4Tensor &q, at::Tensor dst);

} // namespace swift::rt
