//===- KernelCheck.cpp - fused ops and FP8 GEMMs against references -------===//
#include "KernelCheck.h"

#include "swift/Runtime/model/Fp8.h"
#include "swift/Runtime/model/Kernels.h"
#include "swift/Runtime/model/Nf4.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

namespace swift::rt {

namespace {

double maxAbs(const at::Tensor &t) {
  return t.defined() ? t.detach().abs().max().item<double>() : 0.0;
}

/// Runs f and g on fresh leaves of `inputs` with the same random output
/// gradient; compares outputs and every input gradient.
KernelCheck
compare(const std::string &name, const std::vector<at::Tensor> &in,
        const std::function<at::Tensor(std::vector<at::Tensor> &)> &f,
        const std::function<at::Tensor(std::vector<at::Tensor> &)> &g) {
  auto leaves = [&] {
    std::vector<at::Tensor> l;
    for (const at::Tensor &t : in)
      l.push_back(t.detach().clone().requires_grad_(t.is_floating_point()));
    return l;
  };
  std::vector<at::Tensor> a = leaves(), b = leaves();
  at::AutoGradMode enable(true);
  at::Tensor ya = f(a), yb = g(b);
  at::Tensor dy = at::randn_like(ya);
  ya.backward(dy);
  yb.backward(dy);
  KernelCheck c{name};
  auto add = [&](const at::Tensor &x, const at::Tensor &y) {
    if (!x.defined() || !y.defined())
      return;
    c.maxAbsDiff =
        std::max(c.maxAbsDiff, maxAbs(x.to(at::kFloat) - y.to(at::kFloat)));
    c.maxAbsRef = std::max(c.maxAbsRef, maxAbs(y.to(at::kFloat)));
  };
  add(ya, yb);
  for (size_t i = 0; i < a.size(); ++i)
    add(a[i].grad(), b[i].grad());
  return c;
}

/// 1 for the first `from` of `n` elements, 1 - lrWd for the rest: AdamW's
/// decoupled decay of the decayed group only.
at::Tensor decayFactors(int64_t n, int64_t from, double lrWd,
                        const at::TensorOptions &opt) {
  at::Tensor f = at::ones({n}, opt.dtype(at::kFloat));
  f.narrow(0, from, n - from).fill_(1 - lrWd);
  return f;
}

/// Three AdamW steps of the fused kernel against the same arithmetic in
/// tensor ops: fp32 states with the bf16 compute copy (bf16-mixed), or bf16
/// parameters and states (pure bf16), which round each stored value once and
/// step with the rounded moments. Compares the parameters (and the bf16
/// copy). Returns nothing where no kernel takes the states (CPU).
std::optional<KernelCheck> checkAdamw(const std::string &name, int64_t n,
                                      const at::Device &device,
                                      at::ScalarType dtype) {
  auto opt = at::TensorOptions().device(device).dtype(dtype);
  const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1,
               scale = 0.5;
  at::Tensor p = at::randn({n}, opt), m = at::zeros({n}, opt),
             v = at::zeros({n}, opt);
  at::Tensor out = at::empty({n}, opt.dtype(at::kBFloat16));
  // Copies: the kernel updates p, m and v in place (and .to() of an fp32
  // tensor would alias it).
  at::Tensor rp = p.to(at::kFloat).clone(), rm = m.to(at::kFloat).clone(),
             rv = v.to(at::kFloat).clone();
  const bool bf16 = dtype == at::kBFloat16;
  auto stored = [&](const at::Tensor &t) {
    return bf16 ? t.to(at::kBFloat16).to(at::kFloat) : t;
  };
  // Decay from an element inside a vector of 8 on: the first third, a
  // unit's norms and biases, is not decayed.
  const int64_t from = n / 3 + 1;
  const at::Tensor decay = decayFactors(n, from, lr * wd, rp.options());
  for (int step = 1; step <= 3; ++step) {
    at::Tensor g = at::randn({n}, opt);
    const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    const bool fused =
        bf16 ? fusedAdamwBf16(p, g, m, v, lr, b1, b2, eps, wd, from, scale, bc1,
                              bc2)
             : fusedAdamwFp32(p, g, m, v, &out, lr, b1, b2, eps, wd, from,
                              scale, bc1, bc2);
    if (!fused)
      return std::nullopt;
    at::Tensor gr = g.to(at::kFloat) * scale;
    rp = rp * decay;
    rm = stored(rm * b1 + gr * (1 - b1));
    rv = stored(rv * b2 + gr * gr * (1 - b2));
    rp = stored(rp - (lr / bc1) * rm / (rv.sqrt() / std::sqrt(bc2) + eps));
  }
  KernelCheck c{name};
  c.maxAbsDiff = maxAbs(p.to(at::kFloat) - rp);
  if (!bf16) // the compute copy is the kernel's own weights, rounded once
    c.maxAbsDiff =
        std::max(c.maxAbsDiff, maxAbs(out.to(at::kFloat) -
                                      p.to(at::kBFloat16).to(at::kFloat)));
  c.maxAbsRef = maxAbs(rp);
  return c;
}

/// The gradient sum of squares the AdamW kernels add up as they stream the
/// gradients (gradSumSq) against the norm of the same gradient, for the
/// kernel of `dtype` and, in fp32, the split-master one; two calls into one
/// sum, so the accumulation across calls is checked too.
std::vector<KernelCheck> checkAdamwGradNorm(const std::string &suffix,
                                            int64_t n, const at::Device &device,
                                            at::ScalarType dtype) {
  auto opt = at::TensorOptions().device(device).dtype(dtype);
  std::vector<KernelCheck> out;
  {
    at::Tensor g = at::randn({n}, opt);
    at::Tensor sumSq = at::zeros({}, opt.dtype(at::kDouble));
    if (addSumOfSquares(g, sumSq) && addSumOfSquares(g, sumSq)) {
      const double ref = 2.0 * g.to(at::kDouble).pow(2).sum().item<double>();
      out.push_back({"sum_of_squares" + suffix,
                     std::abs(sumSq.item<double>() - ref) / ref, 1.0});
    }
  }
  for (bool split : {false, true}) {
    if (split && dtype != at::kFloat)
      continue;
    at::Tensor p = at::randn({n}, opt), m = at::zeros({n}, opt),
               v = at::zeros({n}, opt), g = at::randn({n}, opt);
    at::Tensor hi = at::empty({n}, opt.dtype(at::kBFloat16)),
               low = at::empty({n}, opt.dtype(at::kShort));
    if (split)
      splitMaster(p, hi, low);
    at::Tensor sumSq = at::zeros({}, opt.dtype(at::kDouble));
    for (int call = 0; call < 2; ++call) {
      const bool fused =
          split ? fusedAdamwSplit(hi, low, g, m, v, 1e-3, 0.9, 0.95, 1e-8, 0.1,
                                  0, 0.5, 0.1, 0.05, &sumSq)
          : dtype == at::kBFloat16
              ? fusedAdamwBf16(p, g, m, v, 1e-3, 0.9, 0.95, 1e-8, 0.1, 0, 0.5,
                               0.1, 0.05, &sumSq)
              : fusedAdamwFp32(p, g, m, v, nullptr, 1e-3, 0.9, 0.95, 1e-8, 0.1,
                               0, 0.5, 0.1, 0.05, &sumSq);
      if (!fused)
        return out;
    }
    const double ref = std::sqrt(2.0) * g.to(at::kDouble).norm().item<double>();
    out.push_back({(split ? "adamw_split_grad_norm" : "adamw_grad_norm") + suffix,
                   std::abs(std::sqrt(sumSq.item<double>()) - ref), ref});
  }
  return out;
}

/// Three steps of the split-master kernel (fusedAdamwSplit) against fp32
/// AdamW in tensor ops on the joined master: the masters (joined) compared,
/// and the compute copy against splitMaster of the kernel's own master.
std::optional<KernelCheck> checkAdamwSplit(const std::string &name, int64_t n,
                                           const at::Device &device) {
  auto opt = at::TensorOptions().device(device).dtype(at::kFloat);
  const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1,
               scale = 0.5;
  at::Tensor rp = at::randn({n}, opt), m = at::zeros({n}, opt),
             v = at::zeros({n}, opt), rm = m.clone(), rv = v.clone();
  at::Tensor hi = at::empty({n}, opt.dtype(at::kBFloat16)),
             low = at::empty({n}, opt.dtype(at::kShort));
  splitMaster(rp, hi, low);
  const int64_t from = n / 3 + 1;
  const at::Tensor decay = decayFactors(n, from, lr * wd, opt);
  for (int step = 1; step <= 3; ++step) {
    at::Tensor g = at::randn({n}, opt);
    const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
    if (!fusedAdamwSplit(hi, low, g, m, v, lr, b1, b2, eps, wd, from, scale,
                         bc1, bc2))
      return std::nullopt;
    at::Tensor gr = g * scale;
    rp = rp * decay;
    rm = rm * b1 + gr * (1 - b1);
    rv = rv * b2 + gr * gr * (1 - b2);
    rp = rp - (lr / bc1) * rm / (rv.sqrt() / std::sqrt(bc2) + eps);
  }
  at::Tensor master = joinMaster(hi, low);
  at::Tensor hi2 = at::empty_like(hi), low2 = at::empty_like(low);
  splitMaster(master, hi2, low2);
  KernelCheck c{name};
  c.maxAbsDiff = std::max(maxAbs(master - rp),
                          maxAbs(hi.to(at::kFloat) - hi2.to(at::kFloat)));
  c.maxAbsRef = maxAbs(rp);
  return c;
}

} // namespace

std::vector<KernelCheck> checkFusedKernels(const at::Device &device,
                                           at::ScalarType dtype) {
  auto opt = at::TensorOptions().device(device).dtype(dtype);
  const bool small = device.is_cpu();
  const int64_t B = 2, S = small ? 8 : 512, C = small ? 48 : 2048,
                H = small ? 4 : 16, D = small ? 8 : 64, V = small ? 97 : 32000;
  std::vector<KernelCheck> out;
  at::Tensor x = at::randn({B, S, C}, opt), w = 1 + 0.1 * at::randn({C}, opt);
  out.push_back(compare(
      "rmsnorm", {x, w}, [](auto &v) { return fusedRmsNorm(v[0], v[1], 1e-5); },
      [](auto &v) { return opRmsNorm(v[0], v[1], 1e-5); }));
  // Both outputs get gradients: the norm's and the residual's, which the
  // fused backward adds into x's.
  out.push_back(compare(
      "rmsnorm_residual", {x, w},
      [](auto &v) {
        auto [y, r] = fusedRmsNormResidual(v[0], v[1], 1e-5);
        return at::cat({y.flatten(), r.flatten()});
      },
      [](auto &v) {
        return at::cat({opRmsNorm(v[0], v[1], 1e-5).flatten(), v[0].flatten()});
      }));
  // The residual GEMM (cuBLASLt with C = x on CUDA) against x + a w^T.
  at::Tensor ra = at::randn({B, S, 2 * C}, opt),
             rw = 0.02 * at::randn({C, 2 * C}, opt);
  out.push_back(compare(
      "residual_linear", {x, ra, rw},
      [](auto &v) { return residualLinear(v[0], v[1], v[2]); },
      [](auto &v) { return v[0] + at::linear(v[1], v[2]); }));
  // A linear with a gradient sink, as the decoder's (cuBLASLt on CUDA): its
  // output, input gradient and the fp32 weight gradient the sink gets over
  // two backwards (written, then added), against at::linear's.
  {
    at::Tensor lx = at::randn({B * S, C}, opt).requires_grad_(),
               lw = (0.02 * at::randn({3 * C, C}, opt)).requires_grad_();
    at::Tensor rx = lx.detach().clone().requires_grad_(),
               rw = lw.detach().clone().requires_grad_();
    at::Tensor sunk = at::zeros({3 * C, C}, opt.dtype(at::kFloat));
    bool written = false;
    GradSink sink = [&] {
      const bool add = written;
      written = true;
      return std::make_pair(sunk, add);
    };
    at::Tensor dy = at::randn({B * S, 3 * C}, opt), y, ry;
    at::AutoGradMode enable(true);
    for (int r = 0; r < 2; ++r) {
      y = linear(lx, lw, {}, sink);
      y.backward(dy);
      ry = at::linear(rx, rw);
      ry.backward(dy);
    }
    KernelCheck c{"linear_sink"};
    for (auto [got, want] : {std::pair{y, ry}, std::pair{lx.grad(), rx.grad()},
                             std::pair{sunk, rw.grad()}}) {
      c.maxAbsDiff = std::max(
          c.maxAbsDiff, maxAbs(got.to(at::kFloat) - want.to(at::kFloat)));
      c.maxAbsRef = std::max(c.maxAbsRef, maxAbs(want.to(at::kFloat)));
    }
    out.push_back(c);
  }
  at::Tensor gu = at::randn({B, S, 8 * C}, opt);
  out.push_back(compare(
      "swiglu", {gu}, [](auto &v) { return fusedSwiglu(v[0]); },
      [](auto &v) { return opSwiglu(v[0]); }));
  at::Tensor q = at::randn({B, S, H, D}, opt);
  at::Tensor ang = at::rand({S, D / 2}, opt.dtype(at::kFloat)) * 6.28;
  at::Tensor cs = ang.cos().to(dtype), sn = ang.sin().to(dtype);
  out.push_back(compare(
      "rope", {q}, [&](auto &v) { return fusedRope(v[0], cs, sn); },
      [&](auto &v) { return opRope(v[0], cs, sn); }));
  // GQA: 2 kv heads for H query heads.
  at::Tensor qkv = at::randn({B, S, (H + 4) * D}, opt);
  auto flat = [](const std::vector<at::Tensor> &p) {
    return at::cat({p[0].flatten(), p[1].flatten(), p[2].flatten()});
  };
  out.push_back(compare(
      "qkv_rope", {qkv},
      [&](auto &v) { return flat(fusedQkvRope(v[0], cs, sn, H, 2)); },
      [&](auto &v) { return flat(opQkvRope(v[0], cs, sn, H, 2)); }));
  // Widths off the 16-byte paths (scalar kernels): SwiGLU rows of 2 x 12,
  // head dim 12 (6 rotated pairs), vocabulary 1001.
  at::Tensor guOdd = at::randn({B, S, 24}, opt);
  out.push_back(compare(
      "swiglu (scalar)", {guOdd}, [](auto &v) { return fusedSwiglu(v[0]); },
      [](auto &v) { return opSwiglu(v[0]); }));
  at::Tensor angOdd = at::rand({S, 6}, opt.dtype(at::kFloat)) * 6.28;
  at::Tensor csOdd = angOdd.cos().to(dtype), snOdd = angOdd.sin().to(dtype);
  at::Tensor qkvOdd = at::randn({B, S, (4 + 2 * 2) * 12}, opt);
  out.push_back(compare(
      "qkv_rope (scalar)", {qkvOdd},
      [&](auto &v) { return flat(fusedQkvRope(v[0], csOdd, snOdd, 4, 2)); },
      [&](auto &v) { return flat(opQkvRope(v[0], csOdd, snOdd, 4, 2)); }));
  at::Tensor hOdd = at::randn({7, 16}, opt),
             lmOdd = 0.1 * at::randn({1001, 16}, opt);
  at::Tensor tOdd = at::randint(0, 1001, {7}, opt.dtype(at::kLong));
  out.push_back(compare(
      "linear_cross_entropy (scalar)", {hOdd, lmOdd},
      [&](auto &v) { return linearCrossEntropy(v[0], v[1], tOdd, 3); },
      [&](auto &v) {
        return at::cross_entropy_loss(at::linear(v[0], v[1]).to(at::kFloat),
                                      tOdd);
      }));
  at::Tensor h = at::randn({B * S, C}, opt), lm = 0.02 * at::randn({V, C}, opt);
  at::Tensor t = at::randint(0, V, {B * S}, opt.dtype(at::kLong));
  out.push_back(compare(
      "linear_cross_entropy", {h, lm},
      [&](auto &v) {
        return linearCrossEntropy(v[0], v[1], t, small ? 5 : 300);
      },
      [&](auto &v) {
        return at::cross_entropy_loss(at::linear(v[0], v[1]).to(at::kFloat), t);
      }));
  // AdamW (CUDA only): fp32 states in the fp32 pass, bf16 in the bf16 one;
  // a length on the vector path and an odd one on the scalar path.
  for (int64_t n : {int64_t(1) << 16, int64_t(1001)})
  {
    if (auto c =
            checkAdamw(n % 8 ? "adamw (scalar)" : "adamw", n, device, dtype))
      out.push_back(*c);
    if (dtype == at::kFloat) // bf16-mixed's master kept in the compute copy
      if (auto c = checkAdamwSplit(n % 8 ? "adamw_split (scalar)" : "adamw_split",
                                   n, device))
        out.push_back(*c);
    for (const KernelCheck &c :
         checkAdamwGradNorm(n % 8 ? " (scalar)" : "", n, device, dtype))
      out.push_back(c);
  }
  // A unit's size (2^26: Qwen2.5-0.5B's tied table is 2^27), where the
  // per-thread fp32 sums are longest.
  if (!small)
    for (const KernelCheck &c :
         checkAdamwGradNorm(" (2^26)", int64_t(1) << 26, device, dtype))
      out.push_back(c);
  // NF4 dequantization: the kernel against the op chain, exactly.
  {
    at::Tensor w = at::randn({small ? 64 : 4096, small ? 128 : 4096}, opt) * 0.02;
    Nf4Tensor q4 = quantizeNf4(w);
    at::Tensor fused = at::empty_like(w);
    dequantizeNf4Into(q4, fused);
    at::Tensor ref = dequantizeNf4(q4, dtype);
    out.push_back({"nf4_dequantize",
                   (fused.to(at::kFloat) - ref.to(at::kFloat)).abs().max().item<double>(),
                   ref.to(at::kFloat).abs().max().item<double>()});
  }
  return out;
}

std::vector<KernelCheck> checkFp8(const at::Device &device) {
  std::vector<KernelCheck> out;
  auto bf = at::TensorOptions().device(device).dtype(at::kBFloat16);
  at::manual_seed(7);
  // Codes: a weight-like matrix with an outlier column and subnormal-range
  // entries, both formats, both layouts.
  const int64_t R = 1024, C = 4096;
  at::Tensor x = at::randn({R, C}, bf) * 0.02;
  x.select(1, 5).mul_(300);
  x.select(0, 9).mul_(1e-4);
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    Fp8Tensor g = castFp8(x, f, true, true);
    Fp8Tensor c = castFp8(x.cpu(), f, true, true);
    auto bytes = [](const at::Tensor &t) {
      return t.cpu().view({-1}).view(at::kByte).to(at::kInt);
    };
    KernelCheck k;
    k.name = f == Fp8Format::E4M3 ? "fp8_cast_e4m3_codes" : "fp8_cast_e5m2_codes";
    k.maxAbsDiff = double(bytes(g.rows).ne(bytes(c.rows)).sum().item<int64_t>() +
                          bytes(g.cols).ne(bytes(c.cols)).sum().item<int64_t>() +
                          (g.amax.cpu().item<float>() != c.amax.item<float>()) +
                          (g.scaleInv.cpu().item<float>() != c.scaleInv.item<float>()));
    k.maxAbsRef = 1;
    out.push_back(k);
  }
  // The linear: y = res + x W^T + b and its gradients, GPU vs emulation.
  const int64_t T = 512, K = 1024, N = 768;
  at::Tensor xi = at::randn({T, K}, bf), wi = at::randn({N, K}, bf) * 0.02,
             bi = at::randn({N}, bf), ri = at::randn({T, N}, bf),
             dy = at::randn({T, N}, bf) * 1e-2;
  auto run = [&](const at::Device &d) {
    at::Tensor x = xi.to(d).clone().requires_grad_(),
               w = wi.to(d).clone().requires_grad_(),
               b = bi.to(d).clone().requires_grad_(),
               r = ri.to(d).clone().requires_grad_();
    at::Tensor y = fp8Linear(x, w, b, {}, r);
    y.backward(dy.to(d));
    return std::vector<at::Tensor>{y.detach().cpu().to(at::kFloat),
                                   x.grad().cpu().to(at::kFloat),
                                   w.grad().cpu().to(at::kFloat)};
  };
  std::vector<at::Tensor> g = run(device), c = run(at::Device(at::kCPU));
  const char *names[] = {"fp8_linear_y", "fp8_linear_dx", "fp8_linear_dw"};
  for (int i = 0; i < 3; ++i) {
    KernelCheck k;
    k.name = names[i];
    k.maxAbsDiff = (g[i] - c[i]).abs().max().item<double>();
    k.maxAbsRef = c[i].abs().max().item<double>();
    out.push_back(k);
  }
  return out;
}

} // namespace swift::rt
