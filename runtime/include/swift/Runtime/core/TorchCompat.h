//===- TorchCompat.h - LibTorch 1.13 / 2.x differences in one place -------===//
//
// CI builds against Debian's LibTorch 1.13 (CPU); the GPU machine has 2.11
// (CUDA). Everything that differs between them is wrapped here so the rest
// of the runtime is written once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#define SWIFT_TORCH_AT_LEAST(major, minor)                                     \
  (TORCH_VERSION_MAJOR > (major) ||                                            \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace swift::rt::compat {

/// Causal attention. q: (B, NH, S, D); k, v: (B, NKV, S, D), NH % NKV == 0.
/// Returns (B, NH, S, D). On 2.x this is at::scaled_dot_product_attention
/// (flash / memory-efficient kernels on CUDA); on 1.13 an explicit math
/// version with fp32 softmax. `mask` (B, 1, S, S) bool, true = may attend
/// (block-diagonal causal for packed windows, Model.h segmentMask): replaces
/// the causal mask; SDPA then takes the memory-efficient (CUDA) or math
/// backend with expanded k/v, since flash has no arbitrary masks.
inline at::Tensor causalAttention(const at::Tensor &q, const at::Tensor &k,
                                  const at::Tensor &v,
                                  const at::Tensor &mask = {}) {
  const int64_t nh = q.size(1), nkv = k.size(1);
#if SWIFT_TORCH_AT_LEAST(2, 5)
  // GQA inside the kernel: no expanded copies of k and v (flash on CUDA).
  // SWIFT_SDPA_EXPAND=1 keeps the copies (for comparisons).
  static const bool expand = std::getenv("SWIFT_SDPA_EXPAND") != nullptr;
  if (q.is_cuda() && !expand && !mask.defined())
    return at::scaled_dot_product_attention(
        q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true,
        /*scale=*/std::nullopt, /*enable_gqa=*/nkv != nh);
#endif
  at::Tensor kk = k, vv = v;
  if (nkv != nh) {
    // GQA: each kv head serves nh/nkv query heads. (B, NKV, S, D) ->
    // (B, NH, S, D); a copy, but robust on every SDPA backend.
    const int64_t rep = nh / nkv;
    auto expand = [&](const at::Tensor &t) {
      return t.unsqueeze(2)
          .expand({t.size(0), nkv, rep, t.size(2), t.size(3)})
          .reshape({t.size(0), nh, t.size(2), t.size(3)});
    };
    kk = expand(k);
    vv = expand(v);
  }
#if SWIFT_TORCH_AT_LEAST(2, 0)
  if (mask.defined())
    return at::scaled_dot_product_attention(q, kk, vv, mask,
                                            /*dropout_p=*/0.0,
                                            /*is_causal=*/false);
  return at::scaled_dot_product_attention(q, kk, vv, /*attn_mask=*/{},
                                          /*dropout_p=*/0.0,
                                          /*is_causal=*/true);
#else
  const int64_t s = q.size(2);
  const double scale = 1.0 / std::sqrt(double(q.size(3)));
  at::Tensor scores =
      at::matmul(q, kk.transpose(-2, -1)).to(at::kFloat) * scale;
  at::Tensor hidden =
      mask.defined()
          ? mask.logical_not()
          : at::ones({s, s}, q.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(hidden, -std::numeric_limits<float>::infinity());
  at::Tensor probs = at::softmax(scores, -1).to(q.scalar_type());
  return at::matmul(probs, vv);
#endif
}

/// Whether varlenCausalAttention() runs on `device` in `dtype`:
/// FlashAttention's variable-length kernel (CUDA, half types, LibTorch >= 2.5
/// built with it; head_dim a multiple of 8 up to 256). SWIFT_ATTENTION=mask
/// turns it off (for comparisons).
inline bool hasVarlenAttention(const at::Device &device, at::ScalarType dtype,
                               int64_t headDim) {
#if SWIFT_TORCH_AT_LEAST(2, 5) && !defined(SWIFT_NO_FLASH_VARLEN)
  static const bool off = [] {
    const char *e = std::getenv("SWIFT_ATTENTION");
    return e && std::string(e) == "mask";
  }();
  return !off && device.is_cuda() &&
         (dtype == at::kBFloat16 || dtype == at::kHalf) && headDim % 8 == 0 &&
         headDim <= 256;
#else
  (void)device, (void)dtype, (void)headDim;
  return false;
#endif
}

/// Causal attention within segments of one ragged batch: q (T, NH, D), k, v
/// (T, NKV, D) (GQA in the kernel), `cuSeqlens` int32 (segments + 1) the
/// offsets of each segment's first token, then T. Returns (T, NH, D).
/// Differentiable (ATen's derivative of _flash_attention_forward).
inline at::Tensor varlenCausalAttention(const at::Tensor &q, const at::Tensor &k,
                                        const at::Tensor &v,
                                        const at::Tensor &cuSeqlens,
                                        int64_t maxSeqlen) {
#if SWIFT_TORCH_AT_LEAST(2, 5) && !defined(SWIFT_NO_FLASH_VARLEN)
  return std::get<0>(at::_flash_attention_forward(
      q, k, v, cuSeqlens, cuSeqlens, maxSeqlen, maxSeqlen, /*dropout_p=*/0.0,
      /*is_causal=*/true, /*return_debug_mask=*/false));
#else
  (void)q, (void)k, (void)v, (void)cuSeqlens, (void)maxSeqlen;
  throw std::logic_error("varlen attention needs LibTorch >= 2.5 with CUDA");
#endif
}

/// A generator for `device` seeded with `seed`: initial weights are a pure
/// function of (seed, unit), whatever the world size.
at::Generator makeGenerator(const at::Device &device, uint64_t seed);

} // namespace swift::rt::compat
