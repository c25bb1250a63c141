//===- Nf4.cpp - bitsandbytes' NF4 with double-quantized absmax -----------===//
#include "swift/Runtime/model/Nf4.h"
#include "swift/Runtime/core/Check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <vector>

#ifdef SWIFT_WITH_KERNELS
#include "KernelsCuda.h"
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

namespace swift::rt {

const std::array<float, 16> &nf4Code() {
  // bitsandbytes/functional.py get_4bit_type("nf4"): the quantiles of
  // N(0, 1) normalized to [-1, 1], with an exact 0.
  static const std::array<float, 16> code = {
      -1.0f,
      -0.6961928009986877f,
      -0.5250730514526367f,
      -0.39491748809814453f,
      -0.28444138169288635f,
      -0.18477343022823334f,
      -0.09105003625154495f,
      0.0f,
      0.07958029955625534f,
      0.16093020141124725f,
      0.24611230194568634f,
      0.33791524171829224f,
      0.44070982933044434f,
      0.5626170039176941f,
      0.7229568362236023f,
      1.0f};
  return code;
}

namespace {

/// torch.linspace(start, end, steps, dtype=float32) on an x86 CPU: the step
/// in fp32, the first half counted up from start, the second down from end,
/// each value one fused multiply-add (ATen's AVX2/AVX-512 kernels are built
/// with FMA, and the compiler contracts `start + step * i`). Two roundings
/// instead of one put 42 of the 256 dynamic-code values one ulp off
/// bitsandbytes' (test/data/peft/nf4.json).
std::vector<float> linspace32(float start, float end, int64_t steps) {
  std::vector<float> out(static_cast<size_t>(steps));
  const float step = (end - start) / float(steps - 1);
  const int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    out[size_t(i)] = i < half ? std::fma(step, float(i), start)
                              : std::fma(-step, float(steps - i - 1), end);
  return out;
}

} // namespace

const std::array<float, 256> &dynamicCode() {
  static const std::array<float, 256> code = [] {
    // create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8):
    // for exponent i, 2^i means of linspace(0.1, 1, 2^i + 1), scaled by
    // 10^(i - 6), both signs; then 0 and 1.
    std::vector<double> data;
    for (int i = 0; i < 7; ++i) {
      std::vector<float> b = linspace32(0.1f, 1.0f, (int64_t(1) << i) + 1);
      // 10 ** (i - 6) * means: a Python float times an fp32 tensor, i.e.
      // the scalar rounded to fp32, then an fp32 product.
      const float scale = float(std::pow(10.0, double(i - 6)));
      for (size_t k = 0; k + 1 < b.size(); ++k) {
        const float mean = (b[k] + b[k + 1]) / 2.0f;
        const float scaled = scale * mean;
        data.push_back(scaled);
        data.push_back(-scaled);
      }
    }
    data.push_back(0.0);
    data.push_back(1.0);
    std::sort(data.begin(), data.end());
    std::array<float, 256> out{};
    SWIFT_ASSERT(data.size() == 256, "dynamic code has ", data.size(), " values");
    for (size_t k = 0; k < 256; ++k)
      out[k] = float(data[k]);
    return out;
  }();
  return code;
}

namespace {

/// bitsandbytes' dQuantize<0>: the binary search of a sorted 256-value code,
/// then the nearer of the two neighbours (ties to the search's pivot).
uint8_t quantize8(const std::array<float, 256> &code, float x) {
  int pivot = 127, upperPivot = 255, lowerPivot = 0;
  float lower = -1.0f, upper = 1.0f, val = code[size_t(pivot)];
  for (int i = 64; i > 0; i >>= 1) {
    if (x > val) {
      lowerPivot = pivot;
      lower = val;
      pivot += i;
    } else {
      upperPivot = pivot;
      upper = val;
      pivot -= i;
    }
    val = code[size_t(pivot)];
  }
  if (upperPivot == 255)
    upper = code[size_t(upperPivot)];
  if (lowerPivot == 0)
    lower = code[size_t(lowerPivot)];
  if (x > val) {
    const float mid = (upper + val) * 0.5f;
    return uint8_t(x > mid ? upperPivot : pivot);
  }
  const float mid = (lower + val) * 0.5f;
  return uint8_t(x < mid ? lowerPivot : pivot);
}

} // namespace

Nf4Tensor quantizeNf4(const at::Tensor &w) {
  Nf4Tensor q;
  q.numel = w.numel();
  q.shape = w.sizes().vec();
  SWIFT_ASSERT(q.numel % kNf4Block == 0, "NF4 needs whole blocks of 64, got ",
               q.numel, " elements");
  const int64_t blocks = q.numel / kNf4Block;
  // The nearest code value; a tie (x exactly on a midpoint) goes down, as
  // bitsandbytes' decision tree compares with `>`.
  const std::array<float, 16> &c = nf4Code();
  std::vector<float> mids(15);
  for (size_t k = 0; k < 15; ++k)
    mids[k] = float((double(c[k]) + double(c[k + 1])) / 2.0);
  at::Tensor boundaries =
      at::tensor(mids, at::TensorOptions().dtype(at::kFloat)).to(w.device());
  at::Tensor flat = w.reshape({blocks, kNf4Block});
  q.packed = at::empty({q.numel / 2}, w.options().dtype(at::kByte));
  at::Tensor absmax = at::empty({blocks}, w.options().dtype(at::kFloat));
  // In chunks of 2^16 blocks: the fp32 and index temporaries stay ~50 MB
  // whatever the tensor (a 70B MLP weight is 235M elements).
  const int64_t chunk = int64_t(1) << 16;
  for (int64_t b0 = 0; b0 < blocks; b0 += chunk) {
    const int64_t nb = std::min(chunk, blocks - b0);
    at::Tensor x = flat.narrow(0, b0, nb).to(at::kFloat);
    at::Tensor am = x.abs().amax(1); // (nb) fp32
    absmax.narrow(0, b0, nb).copy_(am);
    // x * (1 / absmax), as the kernel multiplies by the reciprocal.
    at::Tensor xn = x * am.reciprocal().unsqueeze(1);
    at::Tensor idx = at::bucketize(xn, boundaries, /*out_int32=*/true,
                                   /*right=*/false);
    // An all-zero block (absmax 0: x * (1 / 0) is NaN) takes index 0, as in
    // bitsandbytes' decision tree (every comparison with NaN is false).
    idx = at::where(xn.isnan(), at::zeros({}, idx.options()), idx);
    idx = idx.reshape({-1, 2}).to(at::kByte);
    q.packed.narrow(0, b0 * kNf4Block / 2, nb * kNf4Block / 2)
        .copy_(idx.select(1, 0).bitwise_left_shift(4).bitwise_or(idx.select(1, 1)));
  }

  // Double quantization of absmax, on the host (blocks / 64 the elements);
  // the mean on w's device, by the same reduction bitsandbytes calls there.
  q.offset = absmax.mean().item<float>();
  at::Tensor am = absmax.cpu().contiguous();
  const int64_t n2 = (blocks + kAbsmaxBlock - 1) / kAbsmaxBlock;
  at::Tensor qa = at::empty({blocks}, at::kByte);
  at::Tensor a2 = at::empty({n2}, at::kFloat);
  const float *a = am.data_ptr<float>();
  uint8_t *out = qa.data_ptr<uint8_t>();
  float *out2 = a2.data_ptr<float>();
  const std::array<float, 256> &code = dynamicCode();
  for (int64_t b = 0; b < n2; ++b) {
    const int64_t lo = b * kAbsmaxBlock,
                  hi = std::min(blocks, lo + kAbsmaxBlock);
    float m = 0;
    for (int64_t i = lo; i < hi; ++i)
      m = std::max(m, std::fabs(a[i] - q.offset));
    out2[b] = m;
    const float inv = 1.0f / m;
    for (int64_t i = lo; i < hi; ++i)
      out[i] = quantize8(code, (a[i] - q.offset) * inv);
  }
  q.absmaxQ = qa.to(w.device());
  q.absmax2 = a2.to(w.device());
  return q;
}

namespace {
/// The two codes as fp32 tensors on `device`, made once per device.
std::pair<at::Tensor, at::Tensor> codesOn(const at::Device &device) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<at::Tensor, at::Tensor>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto &entry = cache[device.str()];
  if (!entry.first.defined()) {
    const std::array<float, 256> &c8 = dynamicCode();
    const std::array<float, 16> &c16 = nf4Code();
    entry.first = at::from_blob(const_cast<float *>(c8.data()), {256}, at::kFloat)
                      .to(device, /*non_blocking=*/false, /*copy=*/true);
    entry.second = at::from_blob(const_cast<float *>(c16.data()), {16}, at::kFloat)
                       .to(device, /*non_blocking=*/false, /*copy=*/true);
  }
  return entry;
}
} // namespace

void dequantizeNf4Into(const Nf4Tensor &q, at::Tensor dst) {
  SWIFT_ASSERT(dst.numel() == q.numel && dst.is_contiguous() &&
                   dst.device() == q.packed.device(),
               "NF4 dequantized into a bad destination");
#ifdef SWIFT_WITH_KERNELS
  if (dst.is_cuda() &&
      (dst.scalar_type() == at::kBFloat16 || dst.scalar_type() == at::kFloat) &&
      q.packed.is_contiguous() && q.absmaxQ.is_contiguous() &&
      q.absmax2.is_contiguous()) {
    auto [c8, c16] = codesOn(dst.device());
    SWIFT_CUDA_CHECK(cudaError_t(cuda::nf4Dequantize(
        q.packed.data_ptr<uint8_t>(), q.absmaxQ.data_ptr<uint8_t>(),
        q.absmax2.data_ptr<float>(), q.offset, c8.data_ptr<float>(),
        c16.data_ptr<float>(), dst.data_ptr(), q.numel / 2,
        dst.scalar_type() == at::kBFloat16,
        c10::cuda::getCurrentCUDAStream().stream())));
    return;
  }
#endif
  dst.copy_(dequantizeNf4(q, dst.scalar_type()).view(dst.sizes()));
}

at::Tensor dequantizeNf4(const Nf4Tensor &q, at::ScalarType dtype) {
  auto [c8, c16] = codesOn(q.packed.device());
  const int64_t blocks = q.numel / kNf4Block;
  // absmax = code8[q] * absmax2[block / 256] + offset (fp32).
  at::Tensor absmax =
      c8.index_select(0, q.absmaxQ.to(at::kLong)) *
          q.absmax2.repeat_interleave(kAbsmaxBlock).narrow(0, 0, blocks) +
      q.offset;
  at::Tensor hi = q.packed.bitwise_right_shift(4).to(at::kLong);
  at::Tensor lo = q.packed.bitwise_and(15).to(at::kLong);
  at::Tensor idx = at::stack({hi, lo}, 1).reshape({blocks, kNf4Block});
  at::Tensor x = c16.index_select(0, idx.reshape({-1})).view({blocks, kNf4Block}) *
                 absmax.unsqueeze(1);
  return x.to(dtype).view(q.shape);
}

} // namespace swift::rt
