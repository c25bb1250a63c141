//===- OptimizerTest.cpp - AdamW's parameter groups, as HF Trainer's ------===//
//
// HF Trainer builds AdamW with two groups (Trainer.create_optimizer over
// get_decay_parameter_names): weight decay on every weight, none on biases
// and norm weights. swift-run keeps each unit's undecayed parameters first
// and decays from a boundary (Model.h UnitLayout::decayBegin); every
// optimizer path must honour it: the fused kernels (CUDA), the tensor-op
// update (CPU, here) with and without the update during the backward, each
// ZeRO stage's shards (whose boundaries cut through units), the host AdamW
// of offload, FP8's and bf16's storage. test/hf-reference.test checks the
// numbers against transformers' Trainer itself.
//
// The check: one step from the same weights with weight decay 0 and with
// weight decay 1 (lr 1e-2: every weight moves by 1% of itself more). The
// gradients of step 1 do not depend on the decay, so an undecayed parameter
// must come out bit-identical, and every decayed one must differ.
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include "swift/Plan/Plan.h"
#include "swift/Runtime/model/Model.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>

using namespace swift::rt;
using namespace swift::rt::testing;

namespace {

/// Parameters after one step by name (Engine::parameters() order: units in
/// order, each unit's layout table).
std::map<std::string, std::vector<float>>
paramsByName(const json &plan, const std::string &env) {
  const int world = plan["world"]["size"].get<int>();
  Result r = runPlan(plan,
                     "--steps 1 --save-params params.bin --nproc-per-node " +
                         std::to_string(world),
                     env);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  const std::vector<float> flat = readParams(r.dir + "/params.bin");
  const ModelConfig m =
      swift::plan::parsePlanText(plan.dump(), "plan.json").model;
  std::map<std::string, std::vector<float>> out;
  size_t at = 0;
  for (int u = 0; u < m.numLayers + 2; ++u)
    for (const ParamDesc &d : unitLayout(m, u).params) {
      const size_t n = size_t(d.numel());
      if (at + n > flat.size())
        return out; // the size check below reports it
      out[d.name].assign(flat.begin() + long(at), flat.begin() + long(at + n));
      at += n;
    }
  EXPECT_EQ(at, flat.size());
  return out;
}

struct Case {
  const char *name;
  int zero, world;
  const char *offload, *precision, *env;
};

const Case kCases[] = {
      // World 1, ZeRO-0: the update during the backward (the default), and
      // after it.
    {"zero 0, update in backward", 0, 1, "none", "fp32", ""},
      {"zero 0, update after backward", 0, 1, "none", "fp32",
       "SWIFT_KERNELS=-overlap "},
      {"zero 1, world 2", 1, 2, "none", "fp32", ""},
      {"zero 2, world 2", 2, 2, "none", "fp32", ""},
      {"zero 3, world 2", 3, 2, "none", "fp32", ""},
      {"zero 2, offload optimizer (host AdamW)", 2, 2, "optimizer", "fp32", ""},
      {"zero 3, offload optimizer+params", 3, 2, "optimizer+params", "fp32",
       ""},
      {"bf16-mixed (master in the compute copy)", 0, 1, "none", "bf16-mixed",
       ""},
      {"pure bf16, zero 3", 3, 2, "none", "bf16", ""},
      {"fp8-mixed (CPU emulation)", 0, 1, "none", "fp8-mixed",
       "SWIFT_FP8_EMULATE=1 "},
};

/// The case's name where gtest lists its parameter (and ctest names it).
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class WeightDecay : public ::testing::TestWithParam<Case> {};

TEST_P(WeightDecay, SkipsBiasesAndNormsAsHFTrainerDoes) {
  {
    const Case &c = GetParam();
    SCOPED_TRACE(c.name);
    json plan = tinyPlan(c.zero, c.world); // every optional parameter kind
    plan["strategy"]["offload"] = c.offload;
    plan["training"]["precision"] = c.precision;
    plan["training"]["optimizer"]["lr"] = 1e-2;
    plan["training"]["optimizer"]["weight_decay"] = 0.0;
    auto without = paramsByName(plan, c.env);
    plan["training"]["optimizer"]["weight_decay"] = 1.0;
    auto with = paramsByName(plan, c.env);
    ASSERT_EQ(without.size(), with.size());
    int decayed = 0, undecayed = 0;
    for (const auto &[name, values] : without) {
      const std::vector<float> &other = with[name];
      ASSERT_EQ(values.size(), other.size()) << name;
      size_t differ = 0;
      for (size_t i = 0; i < values.size(); ++i)
        differ += values[i] != other[i];
      if (hfDecays(name)) {
        ++decayed;
        // Weights of 0.02 x N(0, 1) moved by 1%: in bf16 (8 bits of
        // mantissa) a few round back to the same value; most do not.
        EXPECT_GT(differ, values.size() / 2) << name << " was not decayed";
      } else {
        ++undecayed;
        EXPECT_EQ(differ, 0u) << name << " was decayed (HF Trainer leaves "
                                         "biases and norm weights alone)";
      }
    }
    // The tiny model has them all: 2 layers x (2 norms, q/k/v and o biases,
    // q/k norms) and the final norm; embedding (tied) and 4 GEMM weights.
    EXPECT_EQ(undecayed, 2 * 8 + 1);
    EXPECT_EQ(decayed, 1 + 2 * 7);
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizer, WeightDecay, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           std::string n;
                           for (const char *p = info.param.name; *p; ++p)
                             if (std::isalnum(static_cast<unsigned char>(*p)))
                               n += *p;
                           return n;
                         });

} // namespace
