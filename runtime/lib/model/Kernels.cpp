//===- Kernels.cpp - fused ops: autograd nodes, CUDA dispatch, references -===//
#include "swift/Runtime/model/Kernels.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/TorchCompat.h"
#include "swift/Runtime/model/Autograd.h"
#include "swift/Runtime/model/Nf4.h"

#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <tuple>
#include <utility>

#ifdef SWIFT_WITH_KERNELS
#include "KernelsCuda.h"
#include "LtGemm.h"
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#define SWIFT_KERNEL(call) SWIFT_CUDA_CHECK(cudaError_t(call))
#endif

namespace swift::rt {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

/// The kernels take bf16 or fp32 tensors on CUDA.
bool kernelsFor(const at::Tensor &x) {
#ifdef SWIFT_WITH_KERNELS
  return x.is_cuda() &&
         (x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kFloat);
#else
  (void)x;
  return false;
#endif
}

#ifdef SWIFT_WITH_KERNELS
void *stream() { return c10::cuda::getCurrentCUDAStream().stream(); }
bool isBf16(const at::Tensor &x) { return x.scalar_type() == at::kBFloat16; }
#endif

/// RMSNorm's forward: y and the per-row rstd (fp32) its backward reads;
/// the kernel on CUDA, the formula elsewhere.
std::pair<at::Tensor, at::Tensor> rmsNormForward(const at::Tensor &xIn,
                                                 const at::Tensor &w,
                                                 double eps) {
  at::Tensor x = xIn.contiguous();
  const int64_t C = x.size(-1), R = x.numel() / C;
#ifdef SWIFT_WITH_KERNELS
  if (kernelsFor(x) && C <= cuda::kRmsNormMaxCols) {
    at::Tensor wc = w.contiguous().to(x.scalar_type());
    at::Tensor y = at::empty_like(x);
    at::Tensor rstd = at::empty({R}, x.options().dtype(at::kFloat));
    SWIFT_KERNEL(cuda::rmsNormForward(x.data_ptr(), wc.data_ptr(), y.data_ptr(),
                                      rstd.data_ptr<float>(), R, C, float(eps),
                                      isBf16(x), stream()));
    return {y, rstd};
  }
#endif
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor r = at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return {(xf * r).to(x.scalar_type()) * w, r.reshape({R})};
}

/// RMSNorm's backward: x's gradient (plus `dres`, when defined: what a
/// residual branch sends to x, added once dx is rounded to x's dtype, as
/// autograd's add of the two would) and w's.
std::pair<at::Tensor, at::Tensor>
rmsNormBackward(const at::Tensor &dyIn, const at::Tensor &xIn,
                const at::Tensor &w, const at::Tensor &rstd,
                const at::Tensor &dresIn) {
  at::Tensor x = xIn.contiguous();
  const int64_t C = x.size(-1), R = x.numel() / C;
  at::Tensor dres;
  if (dresIn.defined())
    dres = dresIn.to(x.scalar_type()).contiguous().view(x.sizes());
  if (!dyIn.defined()) // only the residual branch reached x
    return {dres, at::Tensor()};
#ifdef SWIFT_WITH_KERNELS
  if (kernelsFor(x) && C <= cuda::kRmsNormMaxCols) {
    at::Tensor wc = w.contiguous().to(x.scalar_type());
    at::Tensor dy = dyIn.to(x.scalar_type()).contiguous();
    at::Tensor dx = at::empty_like(x);
    const int blocks = cuda::rmsNormBackwardBlocks(R);
    at::Tensor partial = at::empty({blocks, C}, x.options().dtype(at::kFloat));
    SWIFT_KERNEL(cuda::rmsNormBackward(
        dy.data_ptr(), x.data_ptr(), wc.data_ptr(), rstd.data_ptr<float>(),
        dres.defined() ? dres.data_ptr() : nullptr, dx.data_ptr(),
        partial.data_ptr<float>(), R, C, blocks, isBf16(x), stream()));
    return {dx, partial.sum(0).to(w.scalar_type())};
  }
#endif
  at::Tensor xh = x.reshape({R, C}).to(at::kFloat) * rstd.unsqueeze(1);
  at::Tensor dyf = dyIn.reshape({R, C}).to(at::kFloat);
  at::Tensor dn = dyf * w.to(at::kFloat);
  at::Tensor dot = (dn * xh).mean(1, /*keepdim=*/true);
  at::Tensor dx = (rstd.unsqueeze(1) * (dn - xh * dot))
                      .to(x.scalar_type())
                      .view(x.sizes());
  if (dres.defined())
    dx = dx + dres;
  at::Tensor dw =
      (dyf * xh.to(x.scalar_type()).to(at::kFloat)).sum(0).to(w.scalar_type());
  return {dx, dw};
}

struct RmsNormFn : torch::autograd::Function<RmsNormFn> {
  static at::Tensor forward(AutogradContext *ctx, at::Tensor x, at::Tensor w,
                            double eps) {
    x = x.contiguous();
    auto [y, rstd] = rmsNormForward(x, w, eps);
    ctx->save_for_backward({x, w, rstd});
    return y;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto [dx, dw] =
        rmsNormBackward(grads[0], saved[0], saved[1], saved[2], at::Tensor());
    return {dx, dw, at::Tensor()};
  }
};

/// (..., 2 I) -> rows, I.
std::pair<int64_t, int64_t> packedRowsCols(const at::Tensor &gateUp) {
  const int64_t I = gateUp.size(-1) / 2;
  SWIFT_ASSERT(2 * I == gateUp.size(-1), "swiglu: odd packed width ",
               gateUp.size(-1));
  return {I == 0 ? 0 : gateUp.numel() / (2 * I), I};
}

std::vector<int64_t> halfLastDim(const at::Tensor &gateUp) {
  std::vector<int64_t> shape = gateUp.sizes().vec();
  shape.back() /= 2;
  return shape;
}

struct SwigluFn : torch::autograd::Function<SwigluFn> {
  static at::Tensor forward(AutogradContext *ctx, at::Tensor gu) {
    gu = gu.contiguous();
    auto [rows, I] = packedRowsCols(gu);
    at::Tensor out;
#ifdef SWIFT_WITH_KERNELS
    if (kernelsFor(gu)) {
      out = at::empty(halfLastDim(gu), gu.options());
      SWIFT_KERNEL(cuda::swigluForward(gu.data_ptr(), out.data_ptr(), rows, I,
                                       isBf16(gu), stream()));
    }
#endif
    if (!out.defined())
      out = opSwiglu(gu);
    ctx->save_for_backward({gu});
    return out;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    at::Tensor gu = ctx->get_saved_variables()[0];
    at::Tensor dy = grads[0].contiguous().to(gu.scalar_type());
    auto [rows, I] = packedRowsCols(gu);
#ifdef SWIFT_WITH_KERNELS
    if (kernelsFor(gu)) {
      at::Tensor dgu = at::empty_like(gu);
      SWIFT_KERNEL(cuda::swigluBackward(dy.data_ptr(), gu.data_ptr(),
                                        dgu.data_ptr(), rows, I, isBf16(gu),
                                        stream()));
      return {dgu};
    }
#endif
    at::Tensor g = gu.narrow(-1, 0, I), u = gu.narrow(-1, I, I);
    at::Tensor gf = g.to(at::kFloat), s = at::sigmoid(gf),
               dyf = dy.to(at::kFloat);
    at::Tensor du = (dyf * at::silu(g).to(at::kFloat)).to(gu.scalar_type());
    at::Tensor dg =
        (dyf * u.to(at::kFloat) * s * (1 + gf * (1 - s))).to(gu.scalar_type());
    return {at::cat({dg, du}, -1)};
  }
};

at::Tensor ropeRotate(const at::Tensor &x, const at::Tensor &cos,
                      const at::Tensor &sin, bool inverse) {
#ifdef SWIFT_WITH_KERNELS
  if (kernelsFor(x) && cos.scalar_type() == x.scalar_type()) {
    at::Tensor xc = x.contiguous(), c = cos.contiguous(), s = sin.contiguous();
    at::Tensor out = at::empty_like(xc);
    SWIFT_KERNEL(cuda::ropeApply(
        xc.data_ptr(), c.data_ptr(), s.data_ptr(), out.data_ptr(), x.size(0),
        x.size(1), x.size(2), x.size(3), inverse, isBf16(x), stream()));
    return out;
  }
#endif
  return opRope(x, cos, inverse ? -sin : sin).contiguous();
}

struct RopeFn : torch::autograd::Function<RopeFn> {
  static at::Tensor forward(AutogradContext *ctx, at::Tensor x, at::Tensor cos,
                            at::Tensor sin) {
    ctx->save_for_backward({cos, sin});
    return ropeRotate(x, cos, sin, /*inverse=*/false);
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    // A rotation's transpose is the rotation by the opposite angle.
    return {ropeRotate(grads[0], saved[0], saved[1], /*inverse=*/true),
            at::Tensor(), at::Tensor()};
  }
};

struct QkvRopeFn : torch::autograd::Function<QkvRopeFn> {
  static variable_list forward(AutogradContext *ctx, at::Tensor qkv,
                               at::Tensor cos, at::Tensor sin, int64_t nh,
                               int64_t nkv) {
    const int64_t B = qkv.size(0), S = qkv.size(1),
                  D = qkv.size(2) / (nh + 2 * nkv);
    SWIFT_ASSERT(D * (nh + 2 * nkv) == qkv.size(2) && D % 2 == 0, "qkv width ",
                 qkv.size(2), " is not (", nh, " + 2 * ", nkv,
                 ") heads of an even head_dim");
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["nh"] = nh;
    ctx->saved_data["nkv"] = nkv;
    at::Tensor q = at::empty({B, S, nh, D}, qkv.options()),
               k = at::empty({B, S, nkv, D}, qkv.options()),
               v = at::empty({B, S, nkv, D}, qkv.options());
#ifdef SWIFT_WITH_KERNELS
    if (kernelsFor(qkv) && cos.scalar_type() == qkv.scalar_type()) {
      at::Tensor src = qkv.contiguous(), c = cos.contiguous(),
                 s = sin.contiguous();
      SWIFT_KERNEL(cuda::qkvRope(src.data_ptr(), q.data_ptr(), k.data_ptr(),
                                 v.data_ptr(), c.data_ptr(), s.data_ptr(), B, S,
                                 nh, nkv, D, /*backward=*/false, isBf16(qkv),
                                 stream()));
      return {q, k, v};
    }
#endif
    auto p = opQkvRope(qkv, cos, sin, nh, nkv);
    q.copy_(p[0]);
    k.copy_(p[1]);
    v.copy_(p[2]);
    return {q, k, v};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &cos = saved[0], &sin = saved[1];
    const int64_t nh = ctx->saved_data["nh"].toInt(),
                  nkv = ctx->saved_data["nkv"].toInt();
    at::Tensor any = grads[0].defined()   ? grads[0]
                     : grads[1].defined() ? grads[1]
                                          : grads[2];
    const int64_t B = any.size(0), S = any.size(1), D = any.size(3);
    auto gradOr0 = [&](int i, int64_t heads) {
      return grads[i].defined() ? grads[i].contiguous().to(cos.scalar_type())
                                : at::zeros({B, S, heads, D},
                                            any.options().dtype(cos.dtype()));
    };
    at::Tensor dq = gradOr0(0, nh), dk = gradOr0(1, nkv), dv = gradOr0(2, nkv);
#ifdef SWIFT_WITH_KERNELS
    if (kernelsFor(dq)) {
      at::Tensor dqkv = at::empty({B, S, (nh + 2 * nkv) * D}, dq.options());
      at::Tensor c = cos.contiguous(), s = sin.contiguous();
      SWIFT_KERNEL(cuda::qkvRope(dqkv.data_ptr(), dq.data_ptr(), dk.data_ptr(),
                                 dv.data_ptr(), c.data_ptr(), s.data_ptr(), B,
                                 S, nh, nkv, D, /*backward=*/true, isBf16(dq),
                                 stream()));
      return {dqkv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
#endif
    // A rotation's transpose is the rotation by the opposite angle.
    at::Tensor dqkv = at::cat({opRope(dq, cos, -sin).flatten(2),
                               opRope(dk, cos, -sin).flatten(2), dv.flatten(2)},
                              -1);
    return {dqkv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

/// Whether the cuBLASLt GEMMs (LtGemm.h) take these operands: bf16, rows
/// contiguous, on CUDA, not turned off (SWIFT_KERNELS=-lt).
bool ltTakes(std::initializer_list<const at::Tensor *> ts) {
#if defined(SWIFT_WITH_KERNELS) && SWIFT_TORCH_AT_LEAST(2, 9)
  static const bool on = kernelSwitchOn("lt");
  if (!on)
    return false;
  for (const at::Tensor *t : ts)
    if (!t->is_cuda() || t->scalar_type() != at::kBFloat16 || t->dim() != 2 ||
        !t->is_contiguous() || t->size(0) == 0 || t->size(1) == 0)
      return false;
  return true;
#else
  (void)ts;
  return false;
#endif
}

/// y (T, N) = a (T, K) w (N, K)^T [+ c (T, N)], row-major: column-major
/// y^T = W^T(op) a^T (+ c^T). Undefined when cuBLASLt does not take it.
at::Tensor ltLinear(const at::Tensor &a, const at::Tensor &w,
                    const at::Tensor &c = {}) {
  if (!ltTakes({&a, &w}) || (c.defined() && !ltTakes({&c})))
    return {};
#if defined(SWIFT_WITH_KERNELS) && SWIFT_TORCH_AT_LEAST(2, 9)
  const int64_t T = a.size(0), K = a.size(1), N = w.size(0);
  at::Tensor y = at::empty({T, N}, a.options());
  lt::Problem p;
  p.transA = true;
  p.m = N, p.n = T, p.k = K;
  p.a = w.data_ptr(), p.lda = K;
  p.b = a.data_ptr(), p.ldb = K;
  p.d = y.data_ptr(), p.ldd = N;
  p.c = c.defined() ? c.data_ptr() : p.d;
  p.beta = c.defined() ? 1.f : 0.f;
  if (lt::matmul(p))
    return y;
#endif
  return {};
}

/// da (T, K) = dy (T, N) w (N, K): column-major da^T = W dy^T.
at::Tensor ltInputGrad(const at::Tensor &dy, const at::Tensor &w) {
  if (!ltTakes({&dy, &w}))
    return {};
#if defined(SWIFT_WITH_KERNELS) && SWIFT_TORCH_AT_LEAST(2, 9)
  const int64_t T = dy.size(0), N = dy.size(1), K = w.size(1);
  at::Tensor da = at::empty({T, K}, dy.options());
  lt::Problem p;
  p.m = K, p.n = T, p.k = N;
  p.a = w.data_ptr(), p.lda = K;
  p.b = dy.data_ptr(), p.ldb = N;
  p.c = p.d = da.data_ptr(), p.ldd = K;
  if (lt::matmul(p))
    return da;
#endif
  return {};
}

/// dst (N, K) fp32 = dy (T, N)^T a (T, K) (+ dst): column-major dst^T =
/// a^T dy (op T).
bool ltWeightGrad(at::Tensor &dst, bool accumulate, const at::Tensor &dy,
                  const at::Tensor &a) {
  if (!ltTakes({&dy, &a}) || dst.scalar_type() != at::kFloat ||
      !dst.is_contiguous())
    return false;
#if defined(SWIFT_WITH_KERNELS) && SWIFT_TORCH_AT_LEAST(2, 9)
  const int64_t T = a.size(0), K = a.size(1), N = dy.size(1);
  lt::Problem p;
  p.transB = true;
  p.m = K, p.n = N, p.k = T;
  p.a = a.data_ptr(), p.lda = K;
  p.b = dy.data_ptr(), p.ldb = N;
  p.c = p.d = dst.data_ptr(), p.ldd = K;
  p.beta = accumulate ? 1.f : 0.f;
  p.fp32Out = true;
  return lt::matmul(p);
#else
  (void)accumulate;
  return false;
#endif
}

/// dst (N, K) = dy^T a (+ dst when `accumulate`), dy (T, N), a (T, K).
void weightGradInto(at::Tensor dst, bool accumulate, const at::Tensor &dy,
                    const at::Tensor &a) {
  if (ltWeightGrad(dst, accumulate, dy, a))
    return;
#ifdef SWIFT_WITH_KERNELS
  if (dst.is_cuda() && dst.scalar_type() == at::kFloat &&
      dy.scalar_type() == at::kBFloat16 && a.scalar_type() == at::kBFloat16 &&
      dst.is_contiguous() && dy.is_contiguous() && a.is_contiguous()) {
    // Row-major dst (N, K) is column-major (K, N) = a^T(K, T) x dy(T, N):
    // a is column-major (K, T) as stored, dy column-major (N, T), transposed.
    const int64_t T = a.size(0), K = a.size(1), N = dy.size(1);
    const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
    cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
    cublasStatus_t st =
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, int(K), int(N), int(T),
                     &alpha, a.data_ptr(), CUDA_R_16BF, int(K), dy.data_ptr(),
                     CUDA_R_16BF, int(N), &beta, dst.data_ptr(), CUDA_R_32F,
                     int(K), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    SWIFT_CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasGemmEx (weight gradient ",
                N, "x", K, " over ", T, " tokens) failed: status ", int(st));
    return;
  }
#endif
  if (dst.scalar_type() == dy.scalar_type()) {
    if (accumulate)
      dst.addmm_(dy.t(), a);
    else
      at::mm_out(dst, dy.t(), a);
  } else {
    at::Tensor g = at::mm(dy.t(), a);
    accumulate ? dst.add_(g) : dst.copy_(g);
  }
}

/// The input's and the weight's gradients of y = a w^T; the weight's only
/// when `needW` (a frozen weight, LoRA's base, needs none), into the sink
/// when there is one.
std::pair<at::Tensor, at::Tensor> linearGrads(const at::Tensor &dyIn,
                                              const at::Tensor &a,
                                              const at::Tensor &w,
                                              const GradSink &sink,
                                              bool needW = true) {
  at::Tensor dy = rows2d(dyIn.to(a.scalar_type()));
  at::Tensor da = ltInputGrad(dy, w);
  da = (da.defined() ? da : at::mm(dy, w)).view(a.sizes());
  if (!needW)
    return {da, at::Tensor()};
  if (!sink)
    return {da, at::mm(dy.t(), rows2d(a))};
  auto [dst, accumulate] = sink();
  weightGradInto(dst, accumulate, dy, rows2d(a));
  return {da, at::Tensor()};
}

/// x + a w^T for the residual branches, x (T, N), a (T, K), w (N, K): on
/// CUDA in bf16 one cuBLASLt GEMM whose C is x and whose D is the result
/// (addmm copies x into the result first, since cuBLAS's C is its D: two
/// full-width copies a layer); addmm elsewhere.
at::Tensor residualMm(const at::Tensor &x, const at::Tensor &a,
                      const at::Tensor &w) {
  at::Tensor y = ltLinear(a, w, x);
  return y.defined() ? y : at::addmm(x, a, w.t());
}

} // namespace

at::Tensor rows2d(const at::Tensor &t) {
  return t.reshape({-1, t.size(-1)}).contiguous();
}

at::Tensor biasGradient(const at::Tensor &dy, at::ScalarType dtype) {
  return rows2d(dy)
      .sum({0}, /*keepdim=*/false, at::promote_types(at::kFloat, dtype))
      .to(dtype);
}

bool kernelSwitchOn(const char *op) {
  static const std::string env = [] {
    const char *e = std::getenv("SWIFT_KERNELS");
    return "," + std::string(e ? e : "") + ",";
  }();
  return env != ",0," &&
         !(*op && env.find(",-" + std::string(op) + ",") != std::string::npos);
}

bool useFusedKernels(const at::Tensor &x, const char *op) {
  return kernelSwitchOn(op) && kernelsFor(x);
}

at::Tensor opRmsNorm(const at::Tensor &x, const at::Tensor &w, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor r = at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return (xf * r).to(x.scalar_type()) * w;
}

at::Tensor opSwiglu(const at::Tensor &gateUp) {
  const int64_t I = gateUp.size(-1) / 2;
  return at::silu(gateUp.narrow(-1, 0, I)) * gateUp.narrow(-1, I, I);
}

std::vector<at::Tensor> opQkvRope(const at::Tensor &qkv, const at::Tensor &cos,
                                  const at::Tensor &sin, int64_t nh,
                                  int64_t nkv) {
  const int64_t B = qkv.size(0), S = qkv.size(1),
                D = qkv.size(2) / (nh + 2 * nkv);
  auto p = qkv.split_with_sizes({nh * D, nkv * D, nkv * D}, -1);
  return {opRope(p[0].view({B, S, nh, D}), cos, sin),
          opRope(p[1].view({B, S, nkv, D}), cos, sin),
          p[2].view({B, S, nkv, D})};
}

at::Tensor opRope(const at::Tensor &x, const at::Tensor &cos,
                  const at::Tensor &sin) {
  // x (B, S, H, D); tables (S, D/2) broadcast over B and H.
  const int64_t half = x.size(-1) / 2;
  at::Tensor c = cos.unsqueeze(1), s = sin.unsqueeze(1);
  at::Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  return at::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
}

at::Tensor fusedRmsNorm(const at::Tensor &x, const at::Tensor &w, double eps) {
  return RmsNormFn::apply(x, w, eps);
}

std::pair<at::Tensor, at::Tensor>
fusedRmsNormResidual(const at::Tensor &x, const at::Tensor &w, double eps) {
  if (!needsBackward({x, w}))
    return {rmsNormForward(x, w, eps).first, x};
  at::Tensor xc = x.contiguous();
  auto [y, rstd] = [&] {
    at::NoGradGuard noGrad;
    return rmsNormForward(xc, w, eps);
  }();
  // The residual's x is an alias of x that is an output of this node: its
  // gradient arrives here beside y's, and the backward adds the two.
  std::vector<at::Tensor> outs{y, x.detach()};
  attachBackward(
      {x, w}, outs,
      [xd = xc.detach(), wd = w.detach(),
       rstd = rstd](std::vector<at::Tensor> &&grads) mutable {
        auto [dx, dw] = rmsNormBackward(grads[0], xd, wd, rstd, grads[1]);
        xd = wd = rstd = at::Tensor();
        return std::vector<at::Tensor>{dx, dw};
      },
      "RmsNormResidualBackward");
  return {outs[0], outs[1]};
}
at::Tensor fusedSwiglu(const at::Tensor &gateUp) {
  return SwigluFn::apply(gateUp);
}
at::Tensor fusedRope(const at::Tensor &x, const at::Tensor &cos,
                     const at::Tensor &sin) {
  return RopeFn::apply(x, cos, sin);
}
std::vector<at::Tensor> fusedQkvRope(const at::Tensor &qkv,
                                     const at::Tensor &cos,
                                     const at::Tensor &sin, int64_t nh,
                                     int64_t nkv) {
  return QkvRopeFn::apply(qkv, cos, sin, nh, nkv);
}

namespace {
/// x w^T + b where nothing differentiates it (grad mode off, or no input
/// requiring grad): cuBLASLt where it takes it (no bias).
at::Tensor linearValue(const at::Tensor &x, const at::Tensor &w,
                       const at::Tensor &bias) {
  if (!bias.defined()) {
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = w.size(0);
    at::Tensor y = ltLinear(rows2d(x), w);
    if (y.defined())
      return y.view(shape);
  }
  return at::linear(x, w, bias);
}
} // namespace

at::Tensor linear(const at::Tensor &x, const at::Tensor &w,
                  const at::Tensor &bias, const GradSink &sink) {
  if (!needsBackward({x, w, bias}))
    return linearValue(x, w, bias);
  if (!sink)
    return at::linear(x, w, bias);
  std::vector<at::Tensor> outs;
  {
    at::NoGradGuard noGrad;
    outs.push_back(linearValue(x, w, bias));
  }
  std::vector<at::Tensor> in{x, w};
  if (bias.defined())
    in.push_back(bias);
  attachBackward(
      in, outs,
      [xd = x.detach(), wd = w.detach(), hasBias = bias.defined(),
       sink](std::vector<at::Tensor> &&grads) mutable {
        std::vector<at::Tensor> r(hasBias ? 3 : 2);
        if (grads[0].defined()) {
          std::tie(r[0], r[1]) = linearGrads(grads[0], xd, wd, sink);
          if (hasBias)
            r[2] = biasGradient(grads[0], wd.scalar_type());
        }
        xd = wd = at::Tensor();
        return r;
      },
      "LinearBackward");
  return outs[0];
}

at::Tensor embedding(const at::Tensor &table, const at::Tensor &ids,
                     const GradSink &sink) {
  if (!sink || !needsBackward({table}))
    return at::embedding(table, ids);
  std::vector<at::Tensor> outs;
  {
    at::NoGradGuard noGrad;
    outs.push_back(at::embedding(table, ids));
  }
  attachBackward(
      {table}, outs,
      [ids = ids.reshape({-1}), sink](std::vector<at::Tensor> &&grads) mutable {
        if (grads[0].defined()) {
          auto [dst, accumulate] = sink();
          // One fp32 row per distinct id (repeated ids sum there), then one
          // add of the distinct rows into the buffer. The groups come from
          // sorting the ids, on the device: unique() would read its count
          // on the host, a sync that stalled the GPU ~0.7 ms a step. Rows
          // past the last group stay zero and are added to row 0: x + 0.
          const int64_t n = ids.size(0);
          auto [sorted, order] = at::sort(ids);
          at::Tensor starts = at::ones({n}, ids.options().dtype(at::kLong));
          if (n > 1)
            starts.narrow(0, 1, n - 1)
                .copy_(sorted.narrow(0, 1, n - 1).ne(sorted.narrow(0, 0, n - 1)));
          at::Tensor group = starts.cumsum(0).sub_(1); // per sorted position
          at::Tensor groupOf = at::empty_like(group).scatter_(0, order, group);
          at::Tensor groupId = at::zeros_like(sorted).scatter_(0, group, sorted);
          at::Tensor rows = at::zeros({n, dst.size(1)},
                                      grads[0].options().dtype(at::kFloat));
          rows.index_add_(0, groupOf,
                          grads[0].reshape({-1, dst.size(1)}).to(at::kFloat));
          if (!accumulate)
            dst.zero_();
          dst.index_add_(0, groupId, rows.to(dst.scalar_type()));
        }
        ids = at::Tensor();
        return std::vector<at::Tensor>{at::Tensor()};
      },
      "EmbeddingBackward");
  return outs[0];
}

at::Tensor residualLinear(const at::Tensor &x, const at::Tensor &a,
                          const at::Tensor &w, bool value,
                          const GradSink &sink) {
  std::vector<at::Tensor> outs;
  {
    at::NoGradGuard noGrad;
    outs.push_back(value ? residualMm(rows2d(x), rows2d(a), w).view(x.sizes())
                         : at::empty(x.sizes(), x.options()));
  }
  if (!needsBackward({x, a, w}))
    return outs[0];
  attachBackward(
      {x, a, w}, outs,
      [ad = a.detach(), wd = w.detach(), sink,
       needW = w.requires_grad()](std::vector<at::Tensor> &&grads) mutable {
        std::vector<at::Tensor> r(3);
        if (grads[0].defined()) {
          r[0] = grads[0];
          std::tie(r[1], r[2]) = linearGrads(grads[0], ad, wd, sink, needW);
        }
        ad = wd = at::Tensor();
        return r;
      },
      "ResidualLinearBackward");
  return outs[0];
}

at::Tensor recomputedResidualLinear(const at::Tensor &x, const TensorFn &fn,
                                    const std::vector<at::Tensor> &fnInputs,
                                    const at::Tensor &w, const at::Tensor &bias,
                                    bool value, const GradSink &sink) {
  std::vector<at::Tensor> outs;
  {
    at::NoGradGuard noGrad;
    if (value) {
      at::Tensor a = fn(fnInputs)[0];
      at::Tensor y = residualMm(rows2d(x), rows2d(a), w);
      if (bias.defined())
        y.add_(bias);
      outs.push_back(y.view(x.sizes()));
    } else { // the recompute of full checkpointing: only the node
      outs.push_back(at::empty(x.sizes(), x.options()));
    }
  }
  std::vector<at::Tensor> in{x};
  in.insert(in.end(), fnInputs.begin(), fnInputs.end());
  in.push_back(w);
  if (bias.defined())
    in.push_back(bias);
  if (!needsBackward(in))
    return outs[0];
  attachBackward(
      in, outs,
      [fn, saved = SavedInputs(fnInputs), wd = w.detach(),
       needW = w.requires_grad(), hasBias = bias.defined(),
       sink](std::vector<at::Tensor> &&grads) mutable {
        const size_t n = saved.size();
        std::vector<at::Tensor> r(n + (hasBias ? 3 : 2));
        if (grads[0].defined()) {
          r[0] = grads[0];
          std::vector<at::Tensor> fi = saved.leaves();
          at::Tensor a;
          {
            at::AutoGradMode enable(true);
            a = fn(fi)[0];
          }
          at::Tensor da;
          std::tie(da, r[n + 1]) =
              linearGrads(grads[0], a.detach(), wd, sink, needW);
          std::vector<at::Tensor> gi = differentiate({a}, {da}, fi);
          for (size_t i = 0; i < n; ++i)
            r[1 + i] = gi[i];
          if (hasBias)
            r[n + 2] = biasGradient(grads[0], wd.scalar_type());
        }
        saved = SavedInputs();
        wd = at::Tensor();
        return r;
      },
      "RecomputedResidualLinearBackward");
  return outs[0];
}

at::Tensor loraLinear(const at::Tensor &x, const at::Tensor &xd,
                      const at::Tensor &w, const at::Tensor &bias,
                      const at::Tensor &a, const at::Tensor &bd, double scale,
                      const at::Tensor &residual, bool value) {
  SWIFT_ASSERT(!w.requires_grad() &&
                   !(bias.defined() && bias.requires_grad()),
               "loraLinear: the base is frozen");
  const bool dropped = xd.defined();
  at::Tensor x2 = rows2d(x), xd2 = dropped ? rows2d(xd) : x2;
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = w.size(0);
  std::vector<at::Tensor> outs;
  at::Tensor xa; // scale xd A^T, (N, group rank)
  {
    at::NoGradGuard noGrad;
    xa = at::empty({xd2.size(0), a.size(0)}, xd2.options());
    at::addmm_out(xa, xa, xd2, a.t(), /*beta=*/0, /*alpha=*/scale);
    at::Tensor y;
    if (residual.defined()) {
      y = value ? residualMm(rows2d(residual), x2, w)
                : at::empty({x2.size(0), w.size(0)}, x2.options());
      if (value)
        y.addmm_(xa, bd.t());
    } else {
      y = at::mm(xa, bd.t());
      y.addmm_(x2, w.t());
    }
    if (bias.defined() && value)
      y.add_(bias);
    outs.push_back(y.view(shape));
  }
  // Inputs: x, [xd], a, bd, [residual]; W and the bias are frozen.
  std::vector<at::Tensor> in{x};
  if (dropped)
    in.push_back(xd);
  in.push_back(a);
  in.push_back(bd);
  if (residual.defined())
    in.push_back(residual);
  if (!needsBackward(in))
    return outs[0];
  attachBackward(
      in, outs,
      [xs = (dropped ? xd2 : x2).detach(), xa, wd = w.detach(),
       ad = a.detach(), bdd = bd.detach(), scale, dropped,
       hasResidual = residual.defined(),
       xShape = x.sizes().vec()](std::vector<at::Tensor> &&grads) mutable {
        std::vector<at::Tensor> r;
        at::Tensor dyIn = grads[0];
        if (!dyIn.defined()) {
          r.resize(4 + dropped + hasResidual);
          return r;
        }
        at::Tensor dy = rows2d(dyIn.to(wd.scalar_type()));
        at::Tensor dxa = at::mm(dy, bdd); // (N, group rank)
        at::Tensor dx = at::mm(dy, wd);   // the base's part
        at::Tensor dxd;
        if (dropped) // the adapter's part goes through the dropout
          dxd = at::mm(dxa, ad).mul_(scale).view(xShape);
        else
          dx.addmm_(dxa, ad, /*beta=*/1, /*alpha=*/scale);
        at::Tensor da = at::empty_like(ad);
        at::addmm_out(da, da, dxa.t(), xs, /*beta=*/0, /*alpha=*/scale);
        r.push_back(dx.view(xShape));
        if (dropped)
          r.push_back(dxd);
        r.push_back(da);
        r.push_back(at::mm(dy.t(), xa)); // Bd's
        if (hasResidual)
          r.push_back(dyIn);
        xs = xa = wd = ad = bdd = at::Tensor();
        return r;
      },
      "LoraLinearBackward");
  return outs[0];
}

namespace {
/// t *= s for a one-element s on t's device. On CUDA one vectorized pass that
/// reads s there: ATen's mul_ by a 0-dim CUDA tensor broadcasts it through
/// its strided kernel, ~2.5x slower on the lm_head gradient.
void scaleBy(at::Tensor &t, const at::Tensor &s) {
#ifdef SWIFT_WITH_KERNELS
  if (useFusedKernels(t, "loss") && t.is_contiguous() && s.numel() == 1 &&
      s.device() == t.device() &&
      (t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kFloat)) {
    at::Tensor s32 = s.to(at::kFloat).contiguous();
    SWIFT_KERNEL(
        cuda::scaleInPlace(t.data_ptr(), t.numel(), s32.data_ptr<float>(),
                           t.scalar_type() == at::kBFloat16, stream()));
    return;
  }
#endif
  t.mul_(s);
}
} // namespace

at::Tensor linearCrossEntropy(const at::Tensor &h, const at::Tensor &w,
                              const at::Tensor &targets, int64_t chunkTokens,
                              const GradSink &wSink, bool masked,
                              double divisor, bool upstreamIsOne) {
  const int64_t T = h.size(0), V = w.size(0);
  // The mean's denominator: T unmasked (the arithmetic raw-token runs have
  // always had), else the caller's count of trained tokens.
  const double denom = masked ? std::max(divisor, 1e-30) : double(T);
  if (chunkTokens <= 0)
    chunkTokens = std::max<int64_t>(1, (int64_t(1) << 28) / V);
  const bool wantGrads =
      at::GradMode::is_enabled() && (h.requires_grad() || w.requires_grad());
  at::Tensor hd = h.detach(), wd = w.detach();
  at::Tensor lossSum = at::zeros({}, hd.options().dtype(at::kFloat));
  at::Tensor dh, dw;  // dw: W's gradient when there is no sink
  at::Tensor sunk;    // the sink's buffer for W's gradient
  bool sunkAdds = false; // the sink's buffer held a gradient already
  {
    at::NoGradGuard noGrad;
    if (wantGrads) {
      dh = at::empty_like(hd);
      if (wSink && w.requires_grad())
        std::tie(sunk, sunkAdds) = wSink();
      else if (w.requires_grad()) // a frozen lm_head (LoRA) needs none
        dw = at::empty_like(wd);
    }
    // The first chunk writes W's gradient, the others add to it.
    auto weightGrad = [&](const at::Tensor &dlogits, const at::Tensor &hc,
                          int64_t s) {
      if (!sunk.defined() && !dw.defined())
        return;
      if (sunk.defined())
        weightGradInto(sunk, sunkAdds || s > 0, dlogits, hc);
      else
        s == 0 ? at::mm_out(dw, dlogits.t(), hc) : dw.addmm_(dlogits.t(), hc);
    };
    for (int64_t s = 0; s < T; s += chunkTokens) {
      const int64_t n = std::min(chunkTokens, T - s);
      at::Tensor hc = hd.narrow(0, s, n), tc = targets.narrow(0, s, n);
#ifdef SWIFT_WITH_KERNELS
      if (useFusedKernels(hd, "loss")) {
        // One kernel per chunk: the loss of each row, and (with gradients)
        // the logits gradient written over the logits: the chunk's (n, V)
        // logits in the compute dtype are the only vocabulary-sized tensor.
        at::Tensor lg = at::mm(hc, wd.t());
        at::Tensor rows = at::empty({n}, lg.options().dtype(at::kFloat));
        at::Tensor tcc = tc.contiguous();
        SWIFT_KERNEL(cuda::crossEntropyRows(
            lg.data_ptr(), tcc.data_ptr<int64_t>(), rows.data_ptr<float>(), n,
            V, wantGrads ? float(1.0 / denom) : 0.f,
            lg.scalar_type() == at::kBFloat16, stream()));
        lossSum.add_(rows.sum());
        if (wantGrads) {
          at::Tensor dhc = dh.narrow(0, s, n);
          at::mm_out(dhc, lg, wd);
          weightGrad(lg, hc, s);
        }
        continue;
      }
#endif
      // (n, V) fp32: the only vocabulary-sized tensors, one chunk at a time.
      at::Tensor logits = at::mm(hc, wd.t()).to(at::kFloat);
      at::Tensor lse = at::logsumexp(logits, 1);
      at::Tensor keep; // (n, 1) fp32, 0 where the target is ignored
      if (masked) {
        keep = tc.ge(0).to(at::kFloat).unsqueeze(1);
        tc = tc.clamp_min(0);
        lossSum.add_(((lse - logits.gather(1, tc.unsqueeze(1)).squeeze(1)) *
                      keep.squeeze(1))
                         .sum());
      } else {
        lossSum.add_(
            (lse - logits.gather(1, tc.unsqueeze(1)).squeeze(1)).sum());
      }
      if (!wantGrads)
        continue;
      // d loss / d logits = (softmax - onehot) / T, in place.
      logits.sub_(lse.unsqueeze(1)).exp_();
      logits.scatter_add_(1, tc.unsqueeze(1),
                          at::full({n, 1}, -1.0, logits.options()));
      if (masked)
        logits.mul_(keep);
      logits.mul_(1.0 / denom);
      at::Tensor dl = logits.to(hd.scalar_type());
      logits = at::Tensor();
      at::Tensor dhc = dh.narrow(0, s, n);
      at::mm_out(dhc, dl, wd);
      weightGrad(dl, hc, s);
    }
  }
  std::vector<at::Tensor> outs{lossSum.div_(denom)};
  if (!wantGrads)
    return outs[0];
  attachBackward(
      {h, w}, outs,
      [dh, dw, sunk, sunkAdds, upstreamIsOne](std::vector<at::Tensor> &&grads) mutable {
        at::Tensor go = grads[0];
        if (go.defined()) {
          scaleBy(dh, go);
          if (dw.defined())
            scaleBy(dw, go);
          else if (sunk.defined() && !upstreamIsOne &&
                   go.item<double>() != 1.0) { // the sink's
            SWIFT_ASSERT(!sunkAdds, "a loss whose weight gradient was added "
                                    "into a sink needs an upstream gradient "
                                    "of 1");
            scaleBy(sunk, go);
          }
        }
        std::vector<at::Tensor> r{std::move(dh), std::move(dw)};
        dh = dw = sunk = at::Tensor();
        return r;
      },
      "LinearCrossEntropyBackward");
  return outs[0];
}

#ifdef SWIFT_WITH_KERNELS
namespace {
/// The device pointer of an AdamW kernel's gradient sum of squares: a 0-dim
/// fp64 tensor on `like`'s device, or none.
double *sumSqPointer(at::Tensor *sumSq, const at::Tensor &like) {
  if (!sumSq)
    return nullptr;
  SWIFT_ASSERT(sumSq->scalar_type() == at::kDouble && sumSq->numel() == 1 &&
                   sumSq->device() == like.device(),
               "the gradient sum of squares is one fp64 on the device");
  return sumSq->data_ptr<double>();
}
} // namespace
#endif

bool fusedAdamwFp32(at::Tensor &param, const at::Tensor &grad,
                    at::Tensor &expAvg, at::Tensor &expAvgSq, at::Tensor *out,
                    double lr, double beta1, double beta2, double eps,
                    double weightDecay, int64_t decayFrom, double gradScale,
                    double bc1, double bc2, at::Tensor *gradSumSq) {
#ifdef SWIFT_WITH_KERNELS
  auto fp32 = [](const at::Tensor &t) {
    return t.scalar_type() == at::kFloat && t.is_contiguous();
  };
  if (useFusedKernels(param, "adamw") && fp32(param) && fp32(grad) &&
      fp32(expAvg) && fp32(expAvgSq) &&
      (!out || (out->scalar_type() == at::kBFloat16 && out->is_contiguous() &&
                out->numel() == param.numel()))) {
    SWIFT_KERNEL(cuda::adamwFp32(
        param.data_ptr<float>(), grad.data_ptr<float>(),
        expAvg.data_ptr<float>(), expAvgSq.data_ptr<float>(),
        out ? out->data_ptr() : nullptr, param.numel(), float(lr), float(beta1),
        float(beta2), float(eps), float(weightDecay), decayFrom, float(gradScale),
        float(bc1), float(std::sqrt(bc2)), sumSqPointer(gradSumSq, grad),
        stream()));
    return true;
  }
#endif
  (void)param, (void)grad, (void)expAvg, (void)expAvgSq, (void)out, (void)lr,
      (void)beta1, (void)beta2, (void)eps, (void)weightDecay, (void)decayFrom,
      (void)gradScale,
      (void)bc1, (void)bc2, (void)gradSumSq;
  return false;
}

namespace {
// The split in chunks: its int64 temporaries stay a few hundred MB for
// units of any size.
constexpr int64_t kSplitChunk = int64_t(1) << 24;
constexpr int64_t k2p16 = int64_t(1) << 16, k2p31 = int64_t(1) << 31,
                  k2p32 = int64_t(1) << 32;
} // namespace

void splitMaster(const at::Tensor &master, at::Tensor &hi, at::Tensor &low) {
  SWIFT_ASSERT(master.scalar_type() == at::kFloat &&
                   hi.scalar_type() == at::kBFloat16 &&
                   low.scalar_type() == at::kShort &&
                   hi.numel() == master.numel() && low.numel() == master.numel(),
               "splitMaster: fp32 master into bf16 hi and int16 low");
  const at::Tensor src = master.reshape({-1});
  at::Tensor hiBits = hi.view({-1}).view(at::kShort), lowFlat = low.view({-1});
  for (int64_t at0 = 0; at0 < src.numel(); at0 += kSplitChunk) {
    const int64_t n = std::min(kSplitChunk, src.numel() - at0);
    at::Tensor bits = src.narrow(0, at0, n).contiguous().view(at::kInt).to(at::kLong);
    bits = at::where(bits.lt(0), bits + k2p32, bits); // the unsigned bits
    at::Tensor lowU = at::remainder(bits, k2p16);
    at::Tensor up = lowU.ge(k2p16 / 2).to(at::kLong); // round the bits up
    at::Tensor h = at::remainder(at::div(bits, k2p16, "floor") + up, k2p16);
    hiBits.narrow(0, at0, n).copy_(at::where(h.ge(k2p16 / 2), h - k2p16, h));
    lowFlat.narrow(0, at0, n).copy_(lowU - up * k2p16);
  }
}

at::Tensor joinMaster(const at::Tensor &hi, const at::Tensor &low) {
  SWIFT_ASSERT(hi.scalar_type() == at::kBFloat16 &&
                   low.scalar_type() == at::kShort && hi.numel() == low.numel(),
               "joinMaster: bf16 hi and int16 low of one length");
  at::Tensor out = at::empty({hi.numel()}, hi.options().dtype(at::kFloat));
  const at::Tensor hiBits = hi.reshape({-1}).view(at::kShort),
                   lowFlat = low.reshape({-1});
  at::Tensor outBits = out.view(at::kInt);
  for (int64_t at0 = 0; at0 < out.numel(); at0 += kSplitChunk) {
    const int64_t n = std::min(kSplitChunk, out.numel() - at0);
    at::Tensor h = hiBits.narrow(0, at0, n).to(at::kLong);
    h = at::where(h.lt(0), h + k2p16, h);
    at::Tensor bits =
        at::remainder(h * k2p16 + lowFlat.narrow(0, at0, n).to(at::kLong), k2p32);
    outBits.narrow(0, at0, n).copy_(at::where(bits.ge(k2p31), bits - k2p32, bits));
  }
  return out.view(hi.sizes());
}

bool fusedAdamwSplit(at::Tensor &hi, at::Tensor &low, const at::Tensor &grad,
                     at::Tensor &expAvg, at::Tensor &expAvgSq, double lr,
                     double beta1, double beta2, double eps,
                     double weightDecay, int64_t decayFrom, double gradScale,
                     double bc1, double bc2, at::Tensor *gradSumSq) {
#ifdef SWIFT_WITH_KERNELS
  auto is = [](const at::Tensor &t, at::ScalarType d) {
    return t.scalar_type() == d && t.is_contiguous();
  };
  if (useFusedKernels(grad, "adamw") && is(hi, at::kBFloat16) &&
      is(low, at::kShort) && is(grad, at::kFloat) && is(expAvg, at::kFloat) &&
      is(expAvgSq, at::kFloat) && hi.numel() == grad.numel() &&
      low.numel() == grad.numel()) {
    SWIFT_KERNEL(cuda::adamwSplit(
        hi.data_ptr(), low.data_ptr(), grad.data_ptr<float>(),
        expAvg.data_ptr<float>(), expAvgSq.data_ptr<float>(), grad.numel(),
        float(lr), float(beta1), float(beta2), float(eps), float(weightDecay),
        decayFrom, float(gradScale), float(bc1), float(std::sqrt(bc2)),
        sumSqPointer(gradSumSq, grad), stream()));
    return true;
  }
#endif
  (void)hi, (void)low, (void)grad, (void)expAvg, (void)expAvgSq, (void)lr,
      (void)beta1, (void)beta2, (void)eps, (void)weightDecay, (void)decayFrom,
      (void)gradScale,
      (void)bc1, (void)bc2, (void)gradSumSq;
  return false;
}

bool fusedAdamwBf16(at::Tensor &param, const at::Tensor &grad,
                    at::Tensor &expAvg, at::Tensor &expAvgSq, double lr,
                    double beta1, double beta2, double eps, double weightDecay,
                    int64_t decayFrom, double gradScale, double bc1, double bc2,
                    at::Tensor *gradSumSq) {
#ifdef SWIFT_WITH_KERNELS
  auto bf16 = [](const at::Tensor &t) {
    return t.scalar_type() == at::kBFloat16 && t.is_contiguous();
  };
  if (useFusedKernels(param, "adamw") && bf16(param) && bf16(grad) &&
      bf16(expAvg) && bf16(expAvgSq)) {
    SWIFT_KERNEL(cuda::adamwBf16(
        param.data_ptr(), grad.data_ptr(), expAvg.data_ptr(),
        expAvgSq.data_ptr(), param.numel(), float(lr), float(beta1),
        float(beta2), float(eps), float(weightDecay), decayFrom, float(gradScale),
        float(bc1), float(std::sqrt(bc2)), sumSqPointer(gradSumSq, param),
        stream()));
    return true;
  }
#endif
  (void)param, (void)grad, (void)expAvg, (void)expAvgSq, (void)lr, (void)beta1,
      (void)beta2, (void)eps, (void)weightDecay, (void)decayFrom,
      (void)gradScale, (void)bc1,
      (void)bc2, (void)gradSumSq;
  return false;
}

bool addSumOfSquares(const at::Tensor &g, at::Tensor &sumSq) {
#ifdef SWIFT_WITH_KERNELS
  if (useFusedKernels(g, "sumsq") && g.is_contiguous() &&
      sumSq.is_cuda() && sumSq.scalar_type() == at::kDouble) {
    SWIFT_KERNEL(cuda::sumSquares(g.data_ptr(), g.numel(), isBf16(g),
                                  sumSq.data_ptr<double>(), stream()));
    return true;
  }
#endif
  (void)g;
  (void)sumSq;
  return false;
}

} // namespace swift::rt
