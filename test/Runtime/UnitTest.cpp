//===- UnitTest.cpp - runtime pieces in process: layout, AdamW, recompute -===//
#include "KernelCheck.h"
#include "swift/Runtime/dist/Comm.h"
#include "swift/Runtime/engine/CpuAdam.h"
#include "swift/Runtime/engine/Engine.h"
#include "swift/Runtime/io/TensorBoard.h"
#include "swift/Runtime/model/Autograd.h"
#include "swift/Runtime/model/Kernels.h"
#include "swift/Runtime/model/Model.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <torch/csrc/autograd/autograd.h>

using namespace swift::rt;

namespace {

ModelConfig tiny(bool qkv, bool o, bool qkNorm, bool tied) {
  ModelConfig m;
  m.hiddenSize = 32;
  m.intermediateSize = 48;
  m.numLayers = 2;
  m.numHeads = 4;
  m.numKvHeads = 2;
  m.headDim = 8;
  m.vocabSize = 50;
  m.tieWordEmbeddings = tied;
  m.qkvBias = qkv;
  m.oBias = o;
  m.qkNorm = qkNorm;
  return m;
}

// The fused ops' hand-written backwards (their LibTorch formulas on CPU, the
// same formulas the CUDA kernels compute) against autograd of the op chains;
// the chunked cross-entropy against the full one, chunks not dividing T.
TEST(Kernels, FusedOpsMatchTheirOpChains) {
  at::manual_seed(1);
  for (const KernelCheck &c : checkFusedKernels(at::kCPU, at::kFloat))
    EXPECT_LE(c.maxAbsDiff, 1e-5 * std::max(1.0, c.maxAbsRef)) << c.name;
  for (const KernelCheck &c : checkFusedKernels(at::kCPU, at::kBFloat16))
    EXPECT_LE(c.maxAbsDiff, 2e-2 * std::max(1.0, c.maxAbsRef)) << c.name;
}

TEST(Kernels, ChunkedLossWithoutGradModeIsTheLoss) {
  at::manual_seed(2);
  at::Tensor h = at::randn({13, 16}), w = at::randn({29, 16});
  at::Tensor t = at::randint(0, 29, {13}, at::kLong);
  at::NoGradGuard noGrad;
  EXPECT_NEAR(linearCrossEntropy(h, w, t, 4).item<double>(),
              at::cross_entropy_loss(at::linear(h, w), t).item<double>(), 1e-5);
}

// W's gradient through a sink: written into the buffer during the forward
// (scaled there in backward by a non-unit upstream gradient) or added to
// what the buffer held; the same values autograd returns without a sink.
TEST(Kernels, LossWeightGradientIntoASink) {
  at::manual_seed(3);
  at::Tensor h = at::randn({13, 16}), w = at::randn({29, 16});
  at::Tensor t = at::randint(0, 29, {13}, at::kLong);
  auto run = [&](const GradSink &sink, double upstream) {
    at::Tensor hl = h.clone().requires_grad_(true),
               wl = w.clone().requires_grad_(true);
    at::Tensor loss = linearCrossEntropy(hl, wl, t, 4, sink);
    loss.backward(at::full({}, upstream));
    return std::make_pair(hl.grad(), wl.grad());
  };
  auto [dh, dw] = run({}, 0.7);
  ASSERT_TRUE(dw.defined());
  at::Tensor buffer = at::full({29, 16}, 5.0);
  auto [dhSunk, dwSunk] = run([&] { return std::make_pair(buffer, false); }, 0.7);
  EXPECT_FALSE(dwSunk.defined());
  EXPECT_TRUE(at::allclose(dhSunk, dh, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(buffer, dw, 1e-5, 1e-6));
  // Accumulating: needs the engine's upstream gradient of 1.
  auto [dh1, dw1] = run({}, 1.0);
  at::Tensor held = at::randn({29, 16}), acc = held.clone();
  run([&] { return std::make_pair(acc, true); }, 1.0);
  EXPECT_TRUE(at::allclose(acc, held + dw1, 1e-5, 1e-6));
  EXPECT_THROW(run([&] { return std::make_pair(acc, true); }, 0.5),
               std::exception);
}

// The embedding's table gradient into a sink: what autograd's dense
// gradient is (ids repeated within and across rows), written over the
// buffer or added to it; in a bf16 buffer each row is summed in fp32 and
// rounded once.
TEST(Kernels, EmbeddingGradientIntoASink) {
  at::manual_seed(5);
  at::Tensor table = at::randn({37, 8});
  at::Tensor ids = at::randint(0, 6, {3, 11}, at::kLong); // many repeats
  ids[1][4] = 36;
  at::Tensor dy = at::randn({3, 11, 8});
  auto run = [&](const GradSink &sink) {
    at::Tensor t = table.clone().requires_grad_(true);
    embedding(t, ids, sink).backward(dy);
    return t.grad();
  };
  at::Tensor dense = run({});
  ASSERT_TRUE(dense.defined());
  at::Tensor buffer = at::full({37, 8}, 5.0);
  EXPECT_FALSE(run([&] { return std::make_pair(buffer, false); }).defined());
  EXPECT_TRUE(at::allclose(buffer, dense, 1e-5, 1e-6));
  at::Tensor held = at::randn({37, 8}), acc = held.clone();
  run([&] { return std::make_pair(acc, true); });
  EXPECT_TRUE(at::allclose(acc, held + dense, 1e-5, 1e-6));
  at::Tensor bf16 = at::zeros({37, 8}, at::kBFloat16);
  run([&] { return std::make_pair(bf16, false); });
  EXPECT_TRUE(at::equal(bf16, dense.to(at::kBFloat16)));
}

// bf16-mixed's master kept in the compute copy: joinMaster(splitMaster(x))
// is x bit for bit (special values, both signs, every rounding case), and
// the compute copy is x rounded to the nearest bf16, which differs from
// torch's round-to-nearest-even cast only at exact ties (low 16 bits
// 0x8000), where it rounds away from zero.
TEST(MasterInComputeCopy, SplitJoinsExactlyAndRoundsToNearest) {
  at::manual_seed(3);
  const int64_t n = 1 << 18;
  at::Tensor bits = at::randint(std::numeric_limits<int32_t>::min(),
                                std::numeric_limits<int32_t>::max(), {n},
                                at::TensorOptions().dtype(at::kInt));
  // Exact ties with an even and an odd high half, and zeros below them.
  bits.narrow(0, 0, 4).copy_(at::tensor({0x3F808000, 0x3F818000, int32_t(0xBF808000u),
                                         0x3F80FFFF}, at::kInt));
  at::Tensor x = bits.view(at::kFloat);
  x = at::cat({x, at::tensor({0.f, -0.f, 1.f, -1.f, 3.0e38f, -3.0e38f, 1e-40f,
                              std::numeric_limits<float>::infinity()})});
  x = x.masked_fill(x.isnan(), 0.5); // NaNs do not compare equal
  at::Tensor hi = at::empty({x.numel()}, x.options().dtype(at::kBFloat16)),
             low = at::empty({x.numel()}, x.options().dtype(at::kShort));
  splitMaster(x, hi, low);
  at::Tensor back = joinMaster(hi, low);
  EXPECT_TRUE(at::equal(back.view(at::kInt), x.view(at::kInt)));
  at::Tensor xb = x.contiguous().view(at::kInt);
  at::Tensor tie = at::bitwise_and(xb, 0xFFFF).eq(0x8000);
  at::Tensor rne = x.to(at::kBFloat16).view(at::kShort);
  at::Tensor mine = hi.view(at::kShort);
  EXPECT_TRUE(at::equal(mine.masked_select(tie.logical_not()),
                        rne.masked_select(tie.logical_not())));
  // At ties: one bf16 step away from zero (bits + 1 of the magnitude).
  at::Tensor truncated = at::div(xb, 65536, "floor").to(at::kShort);
  EXPECT_TRUE(at::equal(mine.masked_select(tie),
                        (truncated + 1).masked_select(tie)));
  EXPECT_TRUE(at::equal(tie.narrow(0, 0, 4).to(at::kInt),
                        at::tensor({1, 1, 1, 0}, at::kInt)));
  EXPECT_FALSE(at::equal(mine.narrow(0, 0, 1), rne.narrow(0, 0, 1))); // even: RNE stays
  EXPECT_TRUE(at::equal(mine.narrow(0, 1, 1), rne.narrow(0, 1, 1)));  // odd: both up
}

TEST(Layout, TablesAreContiguousAndMatchTheCount) {
  for (int mask = 0; mask < 16; ++mask) {
    ModelConfig m = tiny(mask & 1, mask & 2, mask & 4, mask & 8);
    for (int u = 0; u < m.numLayers + 2; ++u) {
      UnitLayout l = unitLayout(m, u); // asserts count agreement itself
      int64_t off = 0;
      for (const ParamDesc &d : l.params) {
        EXPECT_EQ(d.offset, off) << d.name;
        off += d.numel();
      }
      EXPECT_EQ(off, l.numel);
      // Leaves tile the same range; stacked ones hold whole parameters.
      off = 0;
      for (const LeafDesc &d : l.leaves) {
        EXPECT_EQ(d.offset, off);
        off += d.numel();
      }
      EXPECT_EQ(off, l.numel);
      if (u >= 1 && u <= m.numLayers) {
        const int64_t C = m.hiddenSize,
                      qkv = (m.numHeads + 2 * m.numKvHeads) * m.headDim;
        EXPECT_EQ(l.leaves[l.leaves.size() - 4].shape,
                  (std::vector<int64_t>{qkv, C}));
        EXPECT_EQ(l.leaves.size(),
                  l.params.size() - (m.qkvBias ? 4 : 2) - 1); // qkv, b, gate/up
        EXPECT_EQ(l.leaves[l.leaves.size() - 2].shape,
                  (std::vector<int64_t>{2 * m.intermediateSize, C}));
      }
    }
  }
}

// HF Trainer's parameter groups (Trainer.get_decay_parameter_names): no
// weight decay on biases and norm weights. Each unit's table puts them
// first, so the decayed parameters are the range [decayBegin, numel).
TEST(Layout, DecayedParametersAreHFTrainersAndOneRange) {
  for (const char *name : {"input_layernorm.weight", "layers.0.post_attention_layernorm.weight",
                           "norm.weight", "model.norm.weight",
                           "layers.1.self_attn.q_norm.weight",
                           "self_attn.k_norm.weight", "self_attn.q_proj.bias",
                           "self_attn.o_proj.bias", "mlp.down_proj.bias"})
    EXPECT_FALSE(hfDecays(name)) << name;
  for (const char *name : {"embed_tokens.weight", "lm_head.weight",
                           "layers.0.self_attn.q_proj.weight",
                           "layers.0.mlp.gate_proj.weight",
                           "layers.0.self_attn.q_proj.lora_A.weight",
                           "normal.weight", "norms_x.weight"})
    EXPECT_TRUE(hfDecays(name)) << name;
  for (int mask = 0; mask < 16; ++mask) {
    ModelConfig m = tiny(mask & 1, mask & 2, mask & 4, mask & 8);
    for (int u = 0; u < m.numLayers + 2; ++u) {
      UnitLayout l = unitLayout(m, u);
      int undecayed = 0;
      for (const ParamDesc &d : l.params) {
        EXPECT_EQ(hfDecays(d.name), d.offset >= l.decayBegin) << d.name;
        undecayed += !hfDecays(d.name);
      }
      // The embedding none, the head its norm, a decoder layer its two
      // norms, q/k norms and biases.
      const int want = u == 0 ? 0
                       : u == m.numLayers + 1
                           ? 1
                           : 2 + (m.qkvBias ? 3 : 0) + (m.qkNorm ? 2 : 0) +
                                 (m.oBias ? 1 : 0);
      EXPECT_EQ(undecayed, want) << "unit " << u;
    }
  }
}

TEST(CpuAdamW, MatchesTheTensorFormula) {
  const int64_t n = 300007; // not a multiple of any vector width; threads
  at::manual_seed(0);
  at::Tensor p = at::randn({n}), g = at::randn({n}) * 3,
             m = at::randn({n}) * 0.1, v = at::rand({n}) * 0.01;
  at::Tensor p2 = p.clone(), m2 = m.clone(), v2 = v.clone();
  at::Tensor bf16(at::empty({n}, at::kBFloat16));
  AdamWArgs a{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.25f, 3};
  const int64_t decayFrom = 70001; // inside a vector, not at a chunk's start
  cpuAdamW(p.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
           g.data_ptr<float>(), n, decayFrom, a,
           reinterpret_cast<uint16_t *>(bf16.data_ptr()));
  // Reference: PyTorch's AdamW (torch.optim.AdamW, foreach=False), in two
  // groups: weight_decay 0 for the first decayFrom elements.
  at::Tensor gs = g * a.gradScale;
  p2.narrow(0, decayFrom, n - decayFrom).mul_(1 - a.lr * a.weightDecay);
  m2.mul_(a.beta1).add_(gs, 1 - a.beta1);
  v2.mul_(a.beta2).addcmul_(gs, gs, 1 - a.beta2);
  double bc1 = 1 - std::pow(0.9, 3), bc2 = 1 - std::pow(0.95, 3);
  p2.addcdiv_(m2, v2.sqrt() / std::sqrt(bc2) + a.eps, -a.lr / bc1);
  EXPECT_LT((p - p2).abs().max().item<float>(), 1e-6);
  EXPECT_LT((m - m2).abs().max().item<float>(), 1e-7);
  EXPECT_LT((v - v2).abs().max().item<float>(), 1e-7);
  EXPECT_TRUE(at::equal(bf16, p.to(at::kBFloat16))); // round to nearest even
}

// Selective checkpointing's GEMM over a recomputed input: the input (fn's
// output) is not alive after the forward, and x, fn's inputs, W and the
// bias get the gradients of the saved graph (residualLinear + autograd).
TEST(Recompute, ResidualLinearOverARecomputedInputKeepsNotTheInput) {
  at::manual_seed(5);
  auto f64 = at::TensorOptions().dtype(at::kDouble);
  at::Tensor x0 = at::randn({3, 5, 8}, f64), g0 = at::randn({3, 5, 12}, f64),
             w0 = at::randn({8, 6}, f64), b0 = at::randn({8}, f64),
             dy = at::randn({3, 5, 8}, f64);
  c10::weak_intrusive_ptr<c10::TensorImpl> produced{
      c10::intrusive_ptr<c10::TensorImpl>()};
  TensorFn fn = [&](const std::vector<at::Tensor> &in) {
    auto p = in[0].split(6, -1);
    at::Tensor a = at::silu(p[0]) * p[1]; // a SwiGLU product
    produced = c10::weak_intrusive_ptr<c10::TensorImpl>(a.getIntrusivePtr());
    return std::vector<at::Tensor>{a};
  };
  auto leaves = [&] {
    return std::vector<at::Tensor>{x0.clone().requires_grad_(true),
                                   g0.clone().requires_grad_(true),
                                   w0.clone().requires_grad_(true),
                                   b0.clone().requires_grad_(true)};
  };
  std::vector<at::Tensor> a = leaves(), b = leaves();
  at::Tensor ya = recomputedResidualLinear(a[0], fn, {a[1]}, a[2], a[3]);
  EXPECT_TRUE(produced.expired()); // the forward kept no reference to fn's output
  at::Tensor yb = b[0] + at::linear(fn({b[1]})[0], b[2], b[3]);
  EXPECT_TRUE(at::allclose(ya, yb, 1e-12, 1e-12));
  ya.backward(dy);
  yb.backward(dy);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(at::allclose(a[i].grad(), b[i].grad(), 1e-10, 1e-10)) << i;
}

TEST(Recompute, SameGradientsAsTheSavedGraph) {
  at::manual_seed(1);
  at::Tensor x = at::randn({3, 5}).requires_grad_(true);
  at::Tensor w = at::randn({5, 5}).requires_grad_(true);
  TensorFn fn = [](const std::vector<at::Tensor> &in) {
    return std::vector<at::Tensor>{at::silu(at::matmul(in[0], in[1])) * in[0]};
  };
  at::Tensor direct = fn({x, w})[0].sum();
  auto gd = torch::autograd::grad({direct}, {x, w});
  at::Tensor re = recompute(fn, {x, w})[0].sum();
  auto gr = torch::autograd::grad({re}, {x, w});
  EXPECT_TRUE(at::allclose(gd[0], gr[0]));
  EXPECT_TRUE(at::allclose(gd[1], gr[1]));
}

TEST(Model, DecoderIsCausal) {
  // Changing a later token must not change earlier outputs.
  ModelConfig m = tiny(true, true, true, true);
  UnitLayout l = unitLayout(m, 1);
  at::manual_seed(2);
  at::Tensor flat = at::randn({l.numel}) * 0.1;
  std::vector<at::Tensor> views;
  for (const LeafDesc &d : l.leaves)
    views.push_back(flat.narrow(0, d.offset, d.numel()).view(d.shape));
  DecoderWeights w = bindDecoder(m, views);
  Rope rope = makeRope(m, 6, at::TensorOptions());
  at::Tensor x = at::randn({1, 6, m.hiddenSize});
  at::Tensor y1 = decoderForward(m, w, x, rope, false);
  at::Tensor x2 = x.clone();
  x2[0][5].add_(1.0);
  at::Tensor y2 = decoderForward(m, w, x2, rope, true);
  EXPECT_TRUE(at::allclose(y1.narrow(1, 0, 5), y2.narrow(1, 0, 5), 1e-5, 1e-6));
  EXPECT_FALSE(at::allclose(y1.narrow(1, 5, 1), y2.narrow(1, 5, 1)));
}

TEST(Loss, MaskedChunkedLossIsTheSumOverTrainedTokensOverTheDivisor) {
  // JSONL targets: -100 rows have no loss and no gradient; the sum is
  // divided by the caller's divisor (the step's trained tokens / (W * G)).
  at::manual_seed(3);
  const int64_t T = 37, C = 8, V = 50;
  at::Tensor h = at::randn({T, C}, at::kDouble).requires_grad_(true);
  at::Tensor w = at::randn({V, C}, at::kDouble).requires_grad_(true);
  at::Tensor t = at::randint(0, V, {T}, at::kLong);
  t.index_put_({at::arange(0, T, 3)}, -100);
  const double divisor = 11.5;
  at::Tensor loss = linearCrossEntropy(h, w, t, /*chunkTokens=*/5, {},
                                       /*masked=*/true, divisor);
  auto g = torch::autograd::grad({loss}, {h, w});
  at::Tensor h2 = h.detach().requires_grad_(true),
             w2 = w.detach().requires_grad_(true);
  at::Tensor ref = at::cross_entropy_loss(at::linear(h2, w2), t, {},
                                          at::Reduction::Sum, -100) /
                   divisor;
  auto g2 = torch::autograd::grad({ref}, {h2, w2});
  // Logits and softmax in fp32 (as always): fp32 rounding.
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 1e-4);
  EXPECT_TRUE(at::allclose(g[0], g2[0], 1e-4, 1e-6));
  EXPECT_TRUE(at::allclose(g[1], g2[1], 1e-4, 1e-6));
  // Rows with an ignored target get exactly no gradient.
  EXPECT_EQ(g[0].index({at::arange(0, T, 3)}).abs().max().item<double>(), 0);
}

TEST(Attention, SegmentMaskIsBlockDiagonalCausal) {
  at::Tensor seg = at::tensor({0, 0, 0, 1, 1, 2}, at::kLong).view({1, 6});
  at::Tensor m = segmentMask(seg).view({6, 6});
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      bool want = j <= i && seg[0][i].item<int64_t>() == seg[0][j].item<int64_t>();
      EXPECT_EQ(m[i][j].item<bool>(), want) << i << ", " << j;
    }
}

} // namespace

TEST(Lora, BlockDiagonalIsEachMembersBSideBySide) {
  // q and v adapted, k not: (x A^T) Bd^T is [x A_q^T B_q^T, 0, x A_v^T B_v^T].
  AdapterGroup g;
  g.outs = {6, 4, 4};
  g.adapted = {true, false, true};
  const int64_t r = 2;
  at::manual_seed(3);
  at::Tensor aq = at::randn({r, 5}), av = at::randn({r, 5});
  at::Tensor bq = at::randn({6, r}), bv = at::randn({4, r});
  g.a = at::cat({aq, av}, 0);
  g.b = at::cat({bq, bv}, 0);
  at::Tensor x = at::randn({3, 5});
  at::Tensor got = at::mm(at::mm(x, g.a.t()), loraBlockDiagonal(g, r).t());
  at::Tensor want = at::cat({at::mm(at::mm(x, aq.t()), bq.t()), at::zeros({3, 4}),
                             at::mm(at::mm(x, av.t()), bv.t())},
                            1);
  EXPECT_TRUE(at::allclose(got, want, 1e-6, 1e-6));
}

namespace {

// A two-layer model at ZeRO `zero`, one rank, `accumulation` micro-batches
// of 2 x 16 tokens per step; `clip`: a max_grad_norm (0: none).
std::string enginePlan(int zero, int accumulation,
                       const std::string &precision = "fp32",
                       bool tied = false, double clip = 0) {
  return R"({"schema": "swift.plan", "version": 1,
    "model": {"hidden_size": 32, "intermediate_size": 48,
      "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 64,
      "tie_word_embeddings": )" +
         std::string(tied ? "true" : "false") + R"(, "rms_norm_eps": 1e-5,
      "rope_theta": 10000.0},
    "training": {"sequence_length": 16, "global_batch_size": )" +
         std::to_string(2 * accumulation) +
         R"(, "micro_batch_size": 2, "gradient_accumulation": )" +
         std::to_string(accumulation) + R"(, "precision": ")" + precision +
         R"(", )" +
         (clip > 0 ? "\"max_grad_norm\": " + std::to_string(clip) + ", "
                   : std::string()) +
         R"("optimizer": {"lr": 1e-3, "betas": [0.9, 0.95], "eps": 1e-8,
        "weight_decay": 0.1}, "seed": 7},
    "world": {"size": 1, "gpus_per_node": 1},
    "strategy": {"zero": )" +
         std::to_string(zero) + R"(, "offload": "none",
      "checkpointing": "none", "bucket_bytes": 40000,
      "prefetch_depth": 1}})";
}

} // namespace

// ZeRO-0/1 allocate the full gradient in the step's backward and free it
// after the optimizer (the planner's walk assumes so: Memory.cpp
// memorySwiftRun); between steps only the reduced shard of ZeRO-1 remains.
// The steps still train: the parameters move and stay finite.
TEST(Engine, FullGradientsLiveOnlyWithinAStep) {
  for (int zero : {0, 1})
    for (int accumulation : {1, 2}) {
      SCOPED_TRACE("zero " + std::to_string(zero) + ", accumulation " +
                   std::to_string(accumulation));
      Plan plan = parsePlanText(enginePlan(zero, accumulation), "engine.json");
      CommOptions opt;
      opt.backend = "local";
      std::unique_ptr<Comm> comm = makeComm(opt);
      Engine engine(plan, *comm, at::kCPU);
      // ZeRO-1 keeps its reduced shard: at world 1 as large as the full
      // gradient each step allocates, half of stateBytes().gradients.
      const int64_t kept = zero == 1 ? engine.stateBytes().gradients / 2 : 0;
      EXPECT_EQ(engine.heldGradientBytes(), kept);
      at::Tensor before = engine.stateUnit(1).clone();
      std::vector<at::Tensor> batches;
      for (int k = 0; k < accumulation; ++k)
        batches.push_back(at::randint(0, 64, {2, 17}, at::kLong));
      for (int s = 0; s < 2; ++s) {
        double loss = engine.step(batches);
        EXPECT_TRUE(std::isfinite(loss));
        EXPECT_EQ(engine.heldGradientBytes(), kept);
      }
      EXPECT_GT(engine.lastGradNorm(), 0);
      EXPECT_FALSE(at::equal(before, engine.stateUnit(1)));
    }
}

// launchStep/finishStep (Engine.h): steps queued one ahead of their reading
// (as swift-run runs them) report each its own loss, norm and lr, and train
// as step() does: the readout is the step's, not what the next one left in
// the engine's buffers.
TEST(Engine, StepsReadOneBehindEqualStepsReadInTurn) {
  for (int zero : {0, 1})
    for (double clip : {0.0, 0.05}) {
      SCOPED_TRACE("zero " + std::to_string(zero) + ", clip " +
                   std::to_string(clip));
      Plan plan = parsePlanText(enginePlan(zero, 2, "fp32", false, clip),
                                "engine.json");
      CommOptions opt;
      opt.backend = "local";
      std::unique_ptr<Comm> comm = makeComm(opt);
      Engine inTurn(plan, *comm, at::kCPU), ahead(plan, *comm, at::kCPU);
      at::manual_seed(5);
      std::vector<std::vector<Batch>> steps(4);
      for (auto &batches : steps)
        for (int k = 0; k < 2; ++k) {
          at::Tensor t = at::randint(0, 64, {2, 17}, at::kLong);
          Batch b;
          b.inputs = t.narrow(1, 0, 16);
          b.targets = t.narrow(1, 1, 16);
          batches.push_back(b);
        }
      std::vector<Engine::StepResult> want, got;
      for (auto &batches : steps) {
        Engine::StepResult r;
        r.loss = inTurn.step(batches);
        r.gradNorm = inTurn.lastGradNorm();
        r.lr = inTurn.lastLr();
        want.push_back(r);
      }
      Engine::PendingStep previous = ahead.launchStep(steps[0]);
      for (size_t s = 1; s <= steps.size(); ++s) {
        Engine::PendingStep next;
        if (s < steps.size())
          next = ahead.launchStep(steps[s]);
        got.push_back(ahead.finishStep(previous));
        EXPECT_FALSE(previous.pending());
        previous = next;
      }
      for (size_t s = 0; s < steps.size(); ++s) {
        EXPECT_EQ(got[s].loss, want[s].loss) << "step " << s;
        EXPECT_EQ(got[s].gradNorm, want[s].gradNorm) << "step " << s;
        EXPECT_EQ(got[s].lr, want[s].lr) << "step " << s;
        if (s > 0)
          EXPECT_NE(got[s].gradNorm, got[s - 1].gradNorm) << "step " << s;
      }
      for (int u = 0; u < 4; ++u)
        EXPECT_TRUE(at::equal(inTurn.stateUnit(u), ahead.stateUnit(u)))
            << "unit " << u;
    }
}

// The update in backward (Engine.h): each unit updated (or, when clipping,
// normed) as soon as its gradient is final gives the parameters and norm
// of updating all after the backward: with tied embeddings (the table's
// gradient comes from the head and the embedding), over accumulated
// micro-batches (final only in the last one), in each precision's path.
TEST(Engine, UpdateInBackwardEqualsUpdateAfterBackward) {
  for (const std::string precision : {"fp32", "bf16-mixed", "bf16"})
    for (bool tied : {false, true})
      for (int accumulation : {1, 2})
        for (double clip : {0.0, 0.05}) {
          SCOPED_TRACE(precision + (tied ? ", tied" : "") + ", accumulation " +
                       std::to_string(accumulation) +
                       ", clip " + std::to_string(clip));
          Plan plan = parsePlanText(
              enginePlan(0, accumulation, precision, tied, clip), "engine.json");
          CommOptions opt;
          opt.backend = "local";
          std::unique_ptr<Comm> comm = makeComm(opt);
          Engine during(plan, *comm, at::kCPU), after(plan, *comm, at::kCPU);
          during.setUpdateInBackward(true);
          after.setUpdateInBackward(false);
          at::manual_seed(11);
          for (int s = 0; s < 3; ++s) {
            std::vector<at::Tensor> batches;
            for (int k = 0; k < accumulation; ++k)
              batches.push_back(at::randint(0, 64, {2, 17}, at::kLong));
            EXPECT_EQ(during.step(batches), after.step(batches));
            // Both norms add the same per-unit squares, in another order.
            EXPECT_NEAR(during.lastGradNorm(), after.lastGradNorm(),
                        1e-12 * after.lastGradNorm());
            EXPECT_EQ(during.unitsDoneInBackward(), 4); // embedding, 2, head
            EXPECT_EQ(after.unitsDoneInBackward(), 0);
            EXPECT_EQ(during.heldGradientBytes(), 0);
          }
          for (int u = 0; u < 4; ++u) {
            at::Tensor a = during.stateUnit(u), b = after.stateUnit(u);
            // Clipping scales by max / norm: the norm's last bits may differ.
            if (clip > 0)
              EXPECT_TRUE(at::allclose(a.to(at::kDouble), b.to(at::kDouble),
                                       1e-6, 1e-9))
                  << "unit " << u;
            else
              EXPECT_TRUE(at::equal(a, b)) << "unit " << u;
            EXPECT_TRUE(at::equal(during.stateUnit(u, StateKind::ExpAvgSq).isfinite().all(),
                                  at::ones({}, at::kBool)));
          }
        }
}

// CRC-32C's check value (RFC 3720, B.4: "123456789") and the iSCSI test
// vector of 32 zero bytes: what TensorBoard's reader verifies records with.
TEST(TensorBoard, Crc32cIsCastagnolis) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}
