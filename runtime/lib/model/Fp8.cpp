//===- Fp8.cpp - FP8 casts and GEMMs: CUDA, and the CPU emulation ---------===//
#include "swift/Runtime/model/Fp8.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/TorchCompat.h"
#include "swift/Runtime/model/Autograd.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>

#ifdef SWIFT_WITH_KERNELS
#include "KernelsCuda.h"
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#define SWIFT_KERNEL(call) SWIFT_CUDA_CHECK(cudaError_t(call))
#endif

// The FP8 dtypes and at::_scaled_mm (cuBLASLt) arrived in LibTorch 2.1-2.4;
// CI's 1.13 builds the emulation only.
#if defined(SWIFT_WITH_KERNELS) && SWIFT_TORCH_AT_LEAST(2, 4)
#define SWIFT_FP8_GEMMS 1
#endif

namespace swift::rt {

namespace {
struct Layout {
  int mantissa, bias;
};
constexpr Layout layoutOf(Fp8Format f) {
  return f == Fp8Format::E4M3 ? Layout{3, 7} : Layout{2, 15};
}
} // namespace

uint8_t encodeFp8(float v, Fp8Format f) {
  const Layout l = layoutOf(f);
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  if (std::isnan(v))
    return uint8_t(sign | 0x7f);
  const double fmax = fp8Max(f);
  double a = std::fabs(double(v));
  const int minExp = 1 - l.bias; // the smallest normal's exponent
  double r;
  if (a >= fmax) {
    r = fmax; // saturate (infinities too)
  } else {
    int e;
    std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
    const int exp = std::max(e - 1, minExp);
    const double quantum = std::ldexp(1.0, exp - l.mantissa);
    r = std::nearbyint(a / quantum) * quantum; // ties to even (exact in double)
    r = std::min(r, fmax);
  }
  if (r == 0)
    return sign;
  int e;
  std::frexp(r, &e);
  const int exp = e - 1;
  if (exp < minExp) // subnormal: exponent field 0
    return uint8_t(sign |
                   int(std::ldexp(r, l.mantissa - minExp)));
  const int mant = int(std::ldexp(r, -exp) * (1 << l.mantissa)) -
                   (1 << l.mantissa);
  return uint8_t(sign | ((exp + l.bias) << l.mantissa) | mant);
}

float decodeFp8(uint8_t bits, Fp8Format f) {
  const Layout l = layoutOf(f);
  const bool neg = bits & 0x80;
  const int field = (bits & 0x7f) >> l.mantissa, mant = bits & ((1 << l.mantissa) - 1);
  const int fieldMax = (1 << (7 - l.mantissa)) - 1;
  if (f == Fp8Format::E4M3 && field == fieldMax && mant == (1 << l.mantissa) - 1)
    return std::nanf("");
  if (f == Fp8Format::E5M2 && field == fieldMax)
    return mant ? std::nanf("")
                : (neg ? -INFINITY : INFINITY);
  const double v =
      field == 0 ? std::ldexp(double(mant), 1 - l.bias - l.mantissa)
                 : std::ldexp(double((1 << l.mantissa) + mant),
                              field - l.bias - l.mantissa);
  return float(neg ? -v : v);
}

float fp8Scale(float amax, Fp8Format f) {
  return fp8Max(f) / std::max(amax, 1e-12f);
}

namespace {

/// The fp32 values of `codes` (uint8, any shape) in format `f`, on their
/// device.
at::Tensor decodeCodes(const at::Tensor &codes, Fp8Format f) {
  std::array<float, 256> v;
  for (int i = 0; i < 256; ++i)
    v[i] = decodeFp8(uint8_t(i), f);
  at::Tensor table =
      at::from_blob(v.data(), {256}, at::TensorOptions().dtype(at::kFloat))
          .clone()
          .to(codes.device());
  return table.index_select(0, codes.reshape({-1}).to(at::kLong))
      .view(codes.sizes());
}

#ifdef SWIFT_FP8_GEMMS
void *stream() { return c10::cuda::getCurrentCUDAStream().stream(); }
at::ScalarType fp8Dtype(Fp8Format f) {
  return f == Fp8Format::E4M3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}
bool onGpu(const at::Tensor &x) { return x.is_cuda(); }
#else
bool onGpu(const at::Tensor &) { return false; }
#endif

/// a b^T * aInv * bInv for codes a (M, K) and b (N, K), both K-major (the
/// layouts FP8 tensor cores read): cuBLASLt on CUDA, fp32 on the CPU. Into
/// `out` when given (its dtype), else a new tensor of `outDtype`.
at::Tensor scaledMm(const at::Tensor &a, Fp8Format fa, const at::Tensor &aInv,
                    const at::Tensor &b, Fp8Format fb, const at::Tensor &bInv,
                    at::ScalarType outDtype, const at::Tensor &bias,
                    bool fastAccum, at::Tensor out = {}) {
#ifdef SWIFT_FP8_GEMMS
  if (onGpu(a)) {
    (void)fa, (void)fb;
    std::optional<at::Tensor> biasOpt;
    if (bias.defined())
      biasOpt = bias;
    if (out.defined()) {
      at::_scaled_mm_out(out, a, b.t(), aInv, bInv, biasOpt, std::nullopt,
                         out.scalar_type(), fastAccum);
      return out;
    }
    return at::_scaled_mm(a, b.t(), aInv, bInv, biasOpt, std::nullopt,
                          outDtype, fastAccum);
  }
#endif
  (void)fastAccum;
  at::Tensor y =
      at::mm(decodeCodes(a, fa), decodeCodes(b, fb).t()).mul_(aInv * bInv);
  if (bias.defined())
    y.add_(bias.to(at::kFloat));
  if (out.defined()) {
    out.copy_(y);
    return out;
  }
  return y.to(outDtype);
}

/// Hopper's fast accumulation (no periodic promotion of the tensor cores'
/// partial sums to fp32) in all three GEMMs. torchao keeps it to the
/// forward; measured on the H200 (Llama-3.1-8B B1 S4096, 300 steps of real
/// text, benchmarks/runtime/fp8_loss_curve.sh) it made the step 3.5% faster
/// and the loss of the last 20 steps 0.74% below bf16's (forward only:
/// 0.32% above). SWIFT_FP8_FAST_ACCUM=forward keeps it to the forward.
bool backwardFastAccum() {
  static const bool all = [] {
    const char *e = std::getenv("SWIFT_FP8_FAST_ACCUM");
    return !(e && std::string(e) == "forward");
  }();
  return all;
}

} // namespace

Fp8Tensor castFp8(const at::Tensor &x, Fp8Format f, bool rows, bool cols,
                  const at::Tensor &amaxIn) {
  SWIFT_ASSERT(x.dim() == 2, "castFp8 takes a 2-D tensor");
  const int64_t R = x.size(0), C = x.size(1);
  Fp8Tensor q;
  auto f32 = x.options().dtype(at::kFloat);
#ifdef SWIFT_FP8_GEMMS
  if (onGpu(x)) {
    at::Tensor xc = x.contiguous();
    SWIFT_CHECK(xc.scalar_type() == at::kBFloat16 ||
                    xc.scalar_type() == at::kFloat,
                "castFp8: bf16 or fp32 input");
    const bool bf16 = xc.scalar_type() == at::kBFloat16;
    q.amax = amaxIn;
    if (!q.amax.defined()) {
      q.amax = at::empty({}, f32);
      SWIFT_KERNEL(cuda::fp8Amax(xc.data_ptr(), xc.numel(),
                                 q.amax.data_ptr<float>(), bf16, stream()));
    }
    q.scaleInv = at::empty({}, f32);
    auto codes = x.options().dtype(fp8Dtype(f));
    if (rows)
      q.rows = at::empty({R, C}, codes);
    if (cols)
      q.cols = at::empty({C, R}, codes);
    SWIFT_KERNEL(cuda::fp8Cast(
        xc.data_ptr(), R, C, q.amax.data_ptr<float>(), f == Fp8Format::E5M2,
        rows ? q.rows.data_ptr() : nullptr, cols ? q.cols.data_ptr() : nullptr,
        q.scaleInv.data_ptr<float>(), bf16, stream()));
    return q;
  }
#endif
  // The emulation: the same fp32 arithmetic and rounding, element by element.
  at::Tensor xf = x.to(at::kCPU).to(at::kFloat).contiguous();
  q.amax = amaxIn.defined() ? amaxIn.to(at::kCPU).to(at::kFloat)
                            : xf.abs().max();
  const float scale = fp8Scale(q.amax.item<float>(), f);
  q.scaleInv = at::full({}, 1.f / scale, xf.options());
  at::Tensor codes = at::empty({R, C}, xf.options().dtype(at::kByte));
  const float *src = xf.data_ptr<float>();
  uint8_t *dst = codes.data_ptr<uint8_t>();
  for (int64_t i = 0; i < R * C; ++i)
    dst[i] = encodeFp8(src[i] * scale, f);
  if (rows)
    q.rows = codes.to(x.device());
  if (cols)
    q.cols = codes.t().contiguous().to(x.device());
  q.amax = q.amax.to(x.device());
  q.scaleInv = q.scaleInv.to(x.device());
  return q;
}

at::Tensor dequantizeFp8(const Fp8Tensor &q, Fp8Format f) {
  at::Tensor codes = q.rows;
#ifdef SWIFT_FP8_GEMMS
  if (onGpu(codes))
    codes = codes.view(at::kByte);
#endif
  return decodeCodes(codes, f).mul_(q.scaleInv);
}

at::Tensor fp8Linear(const at::Tensor &x, const at::Tensor &w,
                     const at::Tensor &bias, const GradSink &sink,
                     const at::Tensor &residual, bool value,
                     bool keepCodes) {
  const Fp8Format E4 = Fp8Format::E4M3, E5 = Fp8Format::E5M2;
  at::Tensor x2 = rows2d(x);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = w.size(0);
  std::vector<at::Tensor> outs;
  const bool needW = w.requires_grad() && at::GradMode::is_enabled();
  at::Tensor xAmax, wAmax;
  Fp8Tensor xt; // x^T's codes for the weight gradient (keepCodes)
  {
    at::NoGradGuard noGrad;
    // The forward's casts; their amaxes are the backward's too (the
    // transposed copies then hold the same codes).
    keepCodes = keepCodes && needW;
    Fp8Tensor xq = castFp8(x2, E4, /*rows=*/value, /*cols=*/keepCodes);
    Fp8Tensor wq = castFp8(w, E4, /*rows=*/value, /*cols=*/false);
    xAmax = xq.amax, wAmax = wq.amax;
    if (keepCodes)
      xt.cols = xq.cols, xt.scaleInv = xq.scaleInv;
    if (!value) {
      outs.push_back(at::empty(shape, x.options()));
    } else {
      at::Tensor y = scaledMm(xq.rows, E4, xq.scaleInv, wq.rows, E4,
                              wq.scaleInv, x.scalar_type(), bias,
                              /*fastAccum=*/true);
      if (residual.defined())
        y.add_(rows2d(residual));
      outs.push_back(y.view(shape));
    }
  }
  std::vector<at::Tensor> in{x, w};
  if (bias.defined())
    in.push_back(bias);
  if (residual.defined())
    in.push_back(residual);
  if (!needsBackward(in))
    return outs[0];
  attachBackward(
      in, outs,
      [xd = keepCodes ? at::Tensor() : x2.detach(), xt, wd = w.detach(),
       xAmax, wAmax, sink, needW, hasBias = bias.defined(),
       dtype = x.scalar_type(),
       hasResidual = residual.defined(),
       xShape = x.sizes().vec()](std::vector<at::Tensor> &&grads) mutable {
        std::vector<at::Tensor> r(2 + hasBias + hasResidual);
        if (!grads[0].defined())
          return r;
        at::Tensor dy = rows2d(grads[0].to(dtype));
        Fp8Tensor dyq = castFp8(dy, E5, /*rows=*/true, /*cols=*/needW);
        Fp8Tensor wt = castFp8(wd, E4, false, /*cols=*/true, wAmax);
        r[0] = scaledMm(dyq.rows, E5, dyq.scaleInv, wt.cols, E4, wt.scaleInv,
                        dtype, {}, backwardFastAccum())
                   .view(xShape);
        wt = Fp8Tensor();
        if (needW) {
          if (!xt.cols.defined())
            xt = castFp8(xd, E4, false, /*cols=*/true, xAmax);
          if (sink) {
            auto [dst, accumulate] = sink();
            if (accumulate)
              dst.add_(scaledMm(dyq.cols, E5, dyq.scaleInv, xt.cols, E4,
                                xt.scaleInv, dst.scalar_type(), {},
                                backwardFastAccum()));
            else
              scaledMm(dyq.cols, E5, dyq.scaleInv, xt.cols, E4, xt.scaleInv,
                       dst.scalar_type(), {}, backwardFastAccum(), dst);
          } else {
            r[1] = scaledMm(dyq.cols, E5, dyq.scaleInv, xt.cols, E4,
                            xt.scaleInv, wd.scalar_type(), {},
                            backwardFastAccum());
          }
        }
        if (hasBias)
          r[2] = biasGradient(dy, wd.scalar_type());
        if (hasResidual)
          r[2 + hasBias] = grads[0];
        xd = wd = xAmax = wAmax = at::Tensor();
        xt = Fp8Tensor();
        return r;
      },
      "Fp8LinearBackward");
  return outs[0];
}

std::string fp8Unsupported(const at::Device &device) {
  const char *need = "FP8 GEMMs need an NVIDIA GPU with FP8 tensor cores "
                     "(compute capability 8.9 or later: Ada, Hopper)";
  if (!device.is_cuda())
    return plan::detail::concat(need, "; this run is on the ", device.str());
#ifndef SWIFT_WITH_KERNELS
  return "this swift-run was built without its CUDA kernels "
         "(SWIFT_CUDA_KERNELS=OFF), which cast to FP8";
#elif !defined(SWIFT_FP8_GEMMS)
  return plan::detail::concat("this swift-run was built against LibTorch ",
                              TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR,
                              ", which has no FP8 GEMMs (2.4 or later has)");
#else
  cudaDeviceProp p;
  SWIFT_CUDA_CHECK(cudaGetDeviceProperties(&p, device.index() < 0 ? 0 : device.index()));
  if (p.major * 10 + p.minor < 89)
    return plan::detail::concat(need, "; GPU ", device.index() < 0 ? 0 : device.index(), " (",
                                p.name, ") has compute capability ", p.major,
                                ".", p.minor);
  return "";
#endif
}

} // namespace swift::rt
