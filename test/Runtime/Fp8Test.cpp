//===- Fp8Test.cpp - FP8 codes, scaling and the FP8 linear (CPU emulation) ===//
//
// The CUDA kernels and cuBLASLt GEMMs are compared with this emulation on
// the GPU (swift-kernel-check); here the emulation itself is checked against
// the formats' definitions and against the GEMMs' definition in fp32.
//
//===----------------------------------------------------------------------===//
#include "swift/Runtime/model/Fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace swift::rt;

namespace {
const Fp8Format E4 = Fp8Format::E4M3, E5 = Fp8Format::E5M2;

bool isNanCode(uint8_t c, Fp8Format f) { return std::isnan(decodeFp8(c, f)); }

/// Every finite value of `f`, by brute force over the codes.
std::vector<float> finiteValues(Fp8Format f) {
  std::vector<float> v;
  for (int c = 0; c < 256; ++c) {
    float d = decodeFp8(uint8_t(c), f);
    if (std::isfinite(d))
      v.push_back(d);
  }
  return v;
}
} // namespace

TEST(Fp8, KnownCodes) {
  // e4m3 (bias 7): 1 = 0 0111 000; 448 = 0 1111 110 is the largest (0x7f is
  // NaN); the smallest subnormal is 2^-9.
  EXPECT_EQ(encodeFp8(1.f, E4), 0x38);
  EXPECT_EQ(encodeFp8(-1.f, E4), 0xb8);
  EXPECT_EQ(encodeFp8(448.f, E4), 0x7e);
  EXPECT_EQ(encodeFp8(464.f, E4), 0x7e);  // rounds down to 448
  EXPECT_EQ(encodeFp8(1e6f, E4), 0x7e);   // saturates
  EXPECT_EQ(encodeFp8(-INFINITY, E4), 0xfe);
  EXPECT_EQ(encodeFp8(std::ldexp(1.f, -9), E4), 0x01);
  EXPECT_EQ(encodeFp8(std::ldexp(1.f, -10), E4), 0x00); // tie to even (0)
  EXPECT_EQ(encodeFp8(std::ldexp(3.f, -10), E4), 0x02); // tie to even (2)
  EXPECT_EQ(encodeFp8(1.0625f, E4), 0x38); // halfway 1 / 1.125: even is 1
  EXPECT_EQ(encodeFp8(1.1875f, E4), 0x3a); // halfway 1.125 / 1.25: 1.25
  EXPECT_EQ(encodeFp8(std::nanf(""), E4) & 0x7f, 0x7f);
  EXPECT_FLOAT_EQ(decodeFp8(0x7e, E4), 448.f);
  EXPECT_TRUE(std::isnan(decodeFp8(0x7f, E4)));
  // e5m2 (bias 15): 1 = 0 01111 00; the largest finite 57344 = 0 11110 11;
  // 0x7c is infinity, which a saturating cast never produces.
  EXPECT_EQ(encodeFp8(1.f, E5), 0x3c);
  EXPECT_EQ(encodeFp8(57344.f, E5), 0x7b);
  EXPECT_EQ(encodeFp8(1e9f, E5), 0x7b);
  EXPECT_EQ(encodeFp8(INFINITY, E5), 0x7b);
  EXPECT_EQ(encodeFp8(std::ldexp(1.f, -16), E5), 0x01);
  EXPECT_TRUE(std::isinf(decodeFp8(0x7c, E5)));
  EXPECT_FLOAT_EQ(fp8Max(E4), 448.f);
  EXPECT_FLOAT_EQ(fp8Max(E5), 57344.f);
}

TEST(Fp8, EveryCodeRoundTripsAndValuesAreOrdered) {
  for (Fp8Format f : {E4, E5}) {
    for (int c = 0; c < 256; ++c) {
      const float v = decodeFp8(uint8_t(c), f);
      if (!std::isfinite(v))
        continue;
      if (v == 0) // -0 and +0
        EXPECT_EQ(encodeFp8(v, f) & 0x7f, 0) << c;
      else
        EXPECT_EQ(encodeFp8(v, f), c) << "format " << int(f) << " code " << c;
    }
    // Positive codes in order are increasing values.
    float prev = -1;
    for (int c = 0; c < 128; ++c) {
      const float v = decodeFp8(uint8_t(c), f);
      if (!std::isfinite(v))
        break;
      EXPECT_GT(v, prev) << c;
      prev = v;
    }
    EXPECT_EQ(int(finiteValues(f).size()), f == E4 ? 254 : 248);
  }
}

TEST(Fp8, RoundsToTheNearestValueTiesToEven) {
  // Against brute force: the nearest finite value; on a tie the one whose
  // code is even (its last mantissa bit 0).
  at::manual_seed(3);
  for (Fp8Format f : {E4, E5}) {
    std::vector<float> vals = finiteValues(f);
    std::vector<float> probes;
    at::Tensor r = at::randn({4000}) * (f == E4 ? 60 : 8000);
    for (int64_t i = 0; i < r.numel(); ++i)
      probes.push_back(r[i].item<float>());
    for (size_t i = 0; i + 1 < vals.size(); ++i) // every midpoint
      probes.push_back(0.5f * (vals[i] + vals[i + 1]));
    probes.push_back(std::ldexp(1.f, -30));
    for (float p : probes) {
      const uint8_t c = encodeFp8(p, f);
      const float got = decodeFp8(c, f);
      float best = vals[0];
      for (float v : vals) {
        const double dv = std::fabs(double(v) - p), db = std::fabs(double(best) - p);
        if (dv < db || (dv == db && v != best &&
                        (encodeFp8(v, f) & 1) == 0))
          best = v;
      }
      if (std::fabs(p) >= fp8Max(f))
        best = std::copysign(fp8Max(f), p);
      EXPECT_EQ(got, best) << "format " << int(f) << " value " << p;
    }
  }
}

TEST(Fp8, CastScalesTheLargestElementToTheFormatsMax) {
  at::manual_seed(1);
  at::Tensor x = at::randn({32, 48}).clamp(-3, 3) * 3;
  x[5][7] = -11.5f; // the amax
  Fp8Tensor q = castFp8(x, E4, /*rows=*/true, /*cols=*/true);
  EXPECT_FLOAT_EQ(q.amax.item<float>(), 11.5f);
  EXPECT_FLOAT_EQ(q.scaleInv.item<float>(), 1.f / fp8Scale(11.5f, E4));
  EXPECT_EQ(q.rows[5][7].item<uint8_t>(), encodeFp8(-448.f, E4));
  EXPECT_TRUE(at::equal(q.cols, q.rows.t().contiguous()));
  // Dequantized values are within e4m3's half-ulp (2^-4 relative) for
  // normal codes.
  at::Tensor back = dequantizeFp8(q, E4);
  at::Tensor big = x.abs() > 11.5f / 448 * std::ldexp(1.f, -6);
  EXPECT_LE(((back - x).abs() / x.abs()).masked_select(big).max().item<float>(),
            1.f / 16 + 1e-6);
  // Per-tensor scaling: x times a power of two has the same codes.
  Fp8Tensor q8 = castFp8(x * 1024, E4, true, false);
  EXPECT_TRUE(at::equal(q8.rows, q.rows));
  EXPECT_FLOAT_EQ(q8.scaleInv.item<float>(), q.scaleInv.item<float>() * 1024);
  // A given amax (the backward's transposed cast) is used as given.
  Fp8Tensor qa = castFp8(x, E4, true, false, at::full({}, 23.f));
  EXPECT_EQ(qa.rows[5][7].item<uint8_t>(), encodeFp8(-224.f, E4));
  // All zeros: no division by zero, codes 0.
  Fp8Tensor z = castFp8(at::zeros({16, 16}), E5, true, false);
  EXPECT_TRUE(std::isfinite(z.scaleInv.item<float>()));
  EXPECT_EQ(z.rows.sum().item<int64_t>(), 0);
}

namespace {
/// The three GEMMs by their definition, in fp32 from the dequantized
/// operands (Fp8.h): y = q(x) q(W)^T, dx = q5(dy) q(W), dW = q5(dy)^T q(x).
struct Expected {
  at::Tensor y, dx, dw;
};
Expected byDefinition(const at::Tensor &x, const at::Tensor &w,
                      const at::Tensor &dy) {
  auto deq = [](const at::Tensor &t, Fp8Format f) {
    return dequantizeFp8(castFp8(t, f, true, false), f);
  };
  at::Tensor xq = deq(x, E4), wq = deq(w, E4), dyq = deq(dy, E5);
  return {at::mm(xq, wq.t()), at::mm(dyq, wq), at::mm(dyq.t(), xq)};
}
double relDiff(const at::Tensor &a, const at::Tensor &b) {
  return ((a.to(at::kFloat) - b.to(at::kFloat)).abs().max() /
          b.to(at::kFloat).abs().max())
      .item<double>();
}
} // namespace

TEST(Fp8, LinearComputesItsThreeGemmsFromTheCodes) {
  at::manual_seed(2);
  const int64_t T = 32, K = 64, N = 48;
  at::Tensor x = (at::randn({T, K}) * 2).requires_grad_();
  at::Tensor w = (at::randn({N, K}) * 0.05).requires_grad_();
  at::Tensor dy = at::randn({T, N}) * 1e-3;
  at::Tensor y = fp8Linear(x, w, {}, {});
  y.backward(dy);
  Expected e = byDefinition(x.detach(), w.detach(), dy);
  EXPECT_LT(relDiff(y, e.y), 1e-6);
  EXPECT_LT(relDiff(x.grad(), e.dx), 1e-6);
  EXPECT_LT(relDiff(w.grad(), e.dw), 1e-6);
  // And close to the exact fp32 linear: FP8's 3-bit mantissas, per-tensor
  // scales undone (a scale left in would be off by orders of magnitude).
  EXPECT_LT(relDiff(y, at::mm(x.detach(), w.detach().t())), 0.08);
  EXPECT_LT(relDiff(x.grad(), at::mm(dy, w.detach())), 0.15);
  EXPECT_LT(relDiff(w.grad(), at::mm(dy.t(), x.detach())), 0.15);
}

TEST(Fp8, LinearResidualBiasAndGradientSinks) {
  at::manual_seed(4);
  const int64_t B = 2, S = 16, K = 32, N = 48;
  at::Tensor x = at::randn({B, S, K}).requires_grad_();
  at::Tensor w = (at::randn({N, K}) * 0.1).requires_grad_();
  at::Tensor bias = at::randn({N}).requires_grad_();
  at::Tensor res = at::randn({B, S, N}).requires_grad_();
  at::Tensor dy = at::randn({B, S, N});
  // The sink accumulates onto what it holds (gradient accumulation).
  at::Tensor buffer = at::ones({N, K});
  GradSink sink = [&] { return std::make_pair(buffer, true); };
  at::Tensor y = fp8Linear(x, w, bias, sink, res);
  y.backward(dy);
  Expected e = byDefinition(x.detach().reshape({-1, K}), w.detach(),
                            dy.reshape({-1, N}));
  EXPECT_LT(relDiff(y.reshape({-1, N}),
                    e.y + bias.detach() + res.detach().reshape({-1, N})),
            1e-6);
  EXPECT_LT(relDiff(x.grad().reshape({-1, K}), e.dx), 1e-6);
  EXPECT_FALSE(w.grad().defined()); // it went into the sink
  EXPECT_LT(relDiff(buffer, e.dw + 1), 1e-6);
  EXPECT_TRUE(at::allclose(bias.grad(), dy.sum(at::IntArrayRef{0, 1}), 1e-5, 1e-5));
  EXPECT_TRUE(at::equal(res.grad(), dy));
  // value = false (full checkpointing's recompute): no output, the same
  // backward.
  at::Tensor x2 = x.detach().clone().requires_grad_();
  at::Tensor buffer2 = at::zeros({N, K});
  GradSink sink2 = [&] { return std::make_pair(buffer2, false); };
  at::Tensor y2 = fp8Linear(x2, w, bias, sink2, res, /*value=*/false);
  y2.backward(dy);
  EXPECT_TRUE(at::equal(x2.grad(), x.grad()));
  EXPECT_LT(relDiff(buffer2, e.dw), 1e-6);
}

TEST(Fp8, KeepingTheInputsCodesChangesNothing) {
  // keepCodes: x^T's codes from the forward (same amax) instead of a cast of
  // x in backward: the same codes, so the same gradients bit for bit.
  at::manual_seed(5);
  at::Tensor w = (at::randn({48, 64}) * 0.1).requires_grad_();
  at::Tensor dy = at::randn({32, 48});
  std::vector<at::Tensor> g;
  for (bool keep : {true, false}) {
    at::manual_seed(6);
    at::Tensor x = at::randn({32, 64}).requires_grad_();
    w.mutable_grad() = at::Tensor();
    fp8Linear(x, w, {}, {}, {}, true, keep).backward(dy);
    g.push_back(x.grad());
    g.push_back(w.grad());
  }
  EXPECT_TRUE(at::equal(g[0], g[2]));
  EXPECT_TRUE(at::equal(g[1], g[3]));
}

TEST(Fp8, ZeroInputsGiveZerosNotNaN) {
  at::Tensor x = at::zeros({16, 32}).requires_grad_();
  at::Tensor w = at::zeros({16, 32}).requires_grad_();
  at::Tensor y = fp8Linear(x, w, {}, {});
  y.backward(at::zeros({16, 16}));
  EXPECT_EQ(y.abs().sum().item<float>(), 0.f);
  EXPECT_TRUE(at::isfinite(x.grad()).all().item<bool>());
  EXPECT_TRUE(at::isfinite(w.grad()).all().item<bool>());
}

TEST(Fp8, RefusedOffFp8Gpus) {
  const std::string why = fp8Unsupported(at::Device(at::kCPU));
  EXPECT_NE(why.find("compute capability 8.9"), std::string::npos) << why;
  EXPECT_NE(why.find("cpu"), std::string::npos) << why;
}
