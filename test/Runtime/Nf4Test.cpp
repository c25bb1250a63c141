//===- Nf4Test.cpp - NF4 and its double-quantized absmax ------------------===//
//
// The codes, the layout (two indices a byte, the first element high), the
// quantization error bound, and against test/data/peft/nf4.json (written by
// bitsandbytes 0.50, benchmarks/reference/make_nf4_reference.py): its NF4
// and dynamic codes, every byte it wrote and every value it dequantized.
//
//===----------------------------------------------------------------------===//
#include "swift/Runtime/model/Nf4.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace swift::rt;

TEST(Nf4, CodesAreSortedAndSigned) {
  const auto &c = nf4Code();
  EXPECT_EQ(c.front(), -1.0f);
  EXPECT_EQ(c.back(), 1.0f);
  EXPECT_EQ(c[7], 0.0f);
  EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
  const auto &d = dynamicCode();
  EXPECT_TRUE(std::is_sorted(d.begin(), d.end()));
  EXPECT_EQ(d.back(), 1.0f);
  // 127 positive values (2^0 + ... + 2^6), their negatives, 0 and 1.
  EXPECT_EQ(std::count_if(d.begin(), d.end(), [](float x) { return x < 0; }), 127);
  EXPECT_EQ(std::count(d.begin(), d.end(), 0.0f), 1);
  EXPECT_FLOAT_EQ(d[128 + 63], -d[127 - 63 - 1]);
}

TEST(Nf4, LayoutAndErrorBound) {
  at::manual_seed(0);
  at::Tensor w = at::randn({64, 128}) * 0.02;
  w[0][0] = 0.5;  // absmax of block 0: index 15
  w[0][1] = -0.5; // index 0
  Nf4Tensor q = quantizeNf4(w);
  ASSERT_EQ(q.packed.numel(), w.numel() / 2);
  ASSERT_EQ(q.absmaxQ.numel(), w.numel() / 64);
  ASSERT_EQ(q.absmax2.numel(), (w.numel() / 64 + 255) / 256);
  EXPECT_EQ(q.packed[0].item<int64_t>(), 0xF0);
  at::Tensor back = dequantizeNf4(q, at::kFloat);
  ASSERT_EQ(back.sizes(), w.sizes());
  // Each element is within half the widest NF4 gap (0.2771) of its block's
  // absmax, plus the absmax's own 8-bit error.
  at::Tensor absmax = w.reshape({-1, 64}).abs().amax(1, true);
  at::Tensor err = (back - w).reshape({-1, 64}).abs() / absmax;
  EXPECT_LT(err.max().item<double>(), 0.16);
  EXPECT_LT(err.mean().item<double>(), 0.05);
  // bf16 dequantization is the fp32 one rounded once.
  EXPECT_TRUE(at::equal(dequantizeNf4(q, at::kBFloat16), back.to(at::kBFloat16)));
}

TEST(Nf4, AnAllZeroBlockIsIndexZero) {
  // bitsandbytes: x * (1 / 0) is NaN, which its decision tree sends to
  // index 0 (every comparison false): code -1 times the block's absmax as
  // the double quantization returns it (0 plus its 8-bit error), the same
  // small value for the whole block.
  at::Tensor w = at::zeros({2, 64});
  w[1][3] = 0.25;
  Nf4Tensor q = quantizeNf4(w);
  for (int64_t k = 0; k < 32; ++k)
    EXPECT_EQ(q.packed[k].item<int64_t>(), 0) << "byte " << k;
  at::Tensor back = dequantizeNf4(q, at::kFloat);
  EXPECT_TRUE(at::equal(back[0], at::full({64}, back[0][0].item<float>())));
  EXPECT_LE(back[0][0].item<float>(), 0.0f);
  EXPECT_LT(back[0].abs().max().item<float>(), 0.25f / 64);
  EXPECT_NEAR(back[1][3].item<float>(), 0.25f, 1e-3);
}

TEST(Nf4, EqualsBitsandbytes) {
  const std::string path = SWIFT_TEST_DATA_DIR "/peft/nf4.json";
  ASSERT_TRUE(std::filesystem::exists(path))
      << path << " is missing (benchmarks/reference/make_nf4_reference.py)";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  std::vector<float> code = j["code"].get<std::vector<float>>();
  ASSERT_EQ(code.size(), 16u);
  for (size_t k = 0; k < 16; ++k)
    EXPECT_EQ(code[k], nf4Code()[k]) << "NF4 code " << k;
  std::vector<float> code8 = j["absmax_code"].get<std::vector<float>>();
  ASSERT_EQ(code8.size(), 256u);
  for (size_t k = 0; k < 256; ++k)
    EXPECT_EQ(code8[k], dynamicCode()[k]) << "dynamic code " << k;
  std::vector<float> input = j["input"].get<std::vector<float>>();
  at::Tensor w = at::tensor(input).view({64, 256}).to(at::kBFloat16);
  Nf4Tensor q = quantizeNf4(w);
  std::vector<int64_t> packed = j["packed"].get<std::vector<int64_t>>();
  ASSERT_EQ(q.packed.numel(), int64_t(packed.size()));
  for (size_t k = 0; k < packed.size(); ++k)
    ASSERT_EQ(q.packed[int64_t(k)].item<int64_t>(), packed[k]) << "byte " << k;
  std::vector<int64_t> qa = j["absmax_u8"].get<std::vector<int64_t>>();
  for (size_t k = 0; k < qa.size(); ++k)
    ASSERT_EQ(q.absmaxQ[int64_t(k)].item<int64_t>(), qa[k]) << "absmax " << k;
  EXPECT_EQ(q.offset, j["absmax_offset"].get<float>());
  std::vector<float> a2 = j["absmax_absmax"].get<std::vector<float>>();
  for (size_t k = 0; k < a2.size(); ++k)
    EXPECT_EQ(q.absmax2[int64_t(k)].item<float>(), a2[k]);
  std::vector<float> deq = j["dequantized"].get<std::vector<float>>();
  at::Tensor mine = dequantizeNf4(q, at::kBFloat16).to(at::kFloat).reshape({-1});
  for (size_t k = 0; k < deq.size(); ++k)
    ASSERT_EQ(mine[int64_t(k)].item<float>(), deq[k]) << "value " << k;
}
