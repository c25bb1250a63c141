//===- MlpTileTest.cpp - the MLP tiled over the tokens (mlp_tile_tokens) --===//
//
// decoderForward with mlpTileTokens > 0 against the untiled layer, in
// process: output and every gradient (input, weights through autograd or
// GradSinks, LoRA adapters), tiles that divide B*S, that do not, and one
// tile larger than B*S. Not bitwise: a weight's gradient is a sum over the
// tiles' GEMMs instead of one GEMM over all rows (another summation order),
// so fp32 agrees to ~1e-6 relative; the test allows 1e-5. A CPU allocation
// probe shows that no (B*S, I) tensor is allocated when tiled. Then swift-run
// end to end: a plan with strategy.mlp_tile_tokens trains as one without.
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include "swift/Runtime/model/Autograd.h"
#include "swift/Runtime/model/Model.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <optional>

using namespace swift::rt;
using namespace swift::rt::testing;

namespace {

constexpr uint64_t kTileSeedStep = 0x9E3779B97F4A7C15ull; // Model.h

ModelConfig tinyModel(int64_t intermediate = 48) {
  ModelConfig m;
  m.hiddenSize = 32;
  m.intermediateSize = intermediate;
  m.numLayers = 1;
  m.numHeads = 4;
  m.numKvHeads = 2;
  m.headDim = 8;
  m.vocabSize = 50;
  m.qkvBias = true;
  m.oBias = true;
  return m;
}

std::vector<at::Tensor> viewsOf(const at::Tensor &flat, const UnitLayout &l) {
  std::vector<at::Tensor> v;
  for (const LeafDesc &d : l.leaves)
    v.push_back(flat.narrow(0, d.offset, d.numel()).view(d.shape));
  return v;
}

/// One decoder layer's inputs: weights, LoRA adapters (when `lora`), x and
/// the output's gradient.
struct Layer {
  ModelConfig m;
  UnitLayout l, al;
  LoraConfig loraCfg;
  at::Tensor flat, adapters, x, dy;
  bool lora = false;
  double dropout = 0;
  uint64_t seed = 11;
  bool fp8 = false;
  // Sinks for the four GEMMs' weights into `sinkBuf` (fp32, the flat
  // layout), telling them to add (else overwrite) per `sinkAdds`.
  bool sinks = false, sinkAdds = false;
};

Layer makeLayer(int64_t B, int64_t S, bool lora, at::ScalarType dt,
                int64_t intermediate = 48) {
  Layer L;
  L.m = tinyModel(intermediate);
  L.l = unitLayout(L.m, 1);
  L.lora = lora;
  L.loraCfg.rank = 4;
  L.al = adapterLayout(L.m, L.loraCfg, 1);
  at::manual_seed(7);
  L.flat = (at::randn({L.l.numel}) * 0.2).to(dt);
  L.adapters = (at::randn({L.al.numel}) * 0.2).to(dt);
  L.x = at::randn({B, S, L.m.hiddenSize}).to(dt);
  L.dy = at::randn({B, S, L.m.hiddenSize}).to(dt);
  return L;
}

struct Out {
  at::Tensor y, dx, dflat, dadapters, sinkBuf;
};

/// The layer forward and backward (dy), tiled by `tile` (0: untiled).
Out run(const Layer &L, int64_t tile, bool selective = false,
        bool forBackward = false) {
  const int64_t S = L.x.size(1);
  Out o;
  at::Tensor x = L.x.clone().requires_grad_(true);
  at::Tensor flat = L.flat.clone().requires_grad_(!L.lora);
  at::Tensor ad = L.adapters.clone().requires_grad_(true);
  std::vector<GradSink> sinks;
  if (L.sinks) {
    at::manual_seed(3);
    o.sinkBuf = L.sinkAdds ? at::randn({L.l.numel}) : at::full({L.l.numel}, 5.);
    sinks.resize(L.l.leaves.size());
    for (size_t i = sinks.size() - 4; i < sinks.size(); ++i) { // the GEMMs
      const LeafDesc d = L.l.leaves[i];
      at::Tensor buf = o.sinkBuf;
      bool adds = L.sinkAdds;
      sinks[i] = [buf, d, adds] {
        return std::make_pair(buf.narrow(0, d.offset, d.numel()).view(d.shape),
                              adds);
      };
    }
  }
  DecoderWeights w = bindDecoder(L.m, viewsOf(flat, L.l), sinks);
  w.fp8 = L.fp8;
  std::optional<DecoderAdapters> a;
  if (L.lora) {
    a = bindAdapters(L.m, L.loraCfg, viewsOf(ad, L.al));
    a->dropout = L.dropout;
    a->dropoutSeed = L.seed;
  }
  Rope rope = makeRope(L.m, S, at::TensorOptions().dtype(L.x.scalar_type()));
  o.y = decoderForward(L.m, w, x, rope, selective, forBackward, {},
                       a ? &*a : nullptr, tile);
  o.y.backward(L.dy);
  o.dx = x.grad();
  o.dflat = L.lora ? at::Tensor() : flat.grad();
  o.dadapters = L.lora ? ad.grad() : at::Tensor();
  if (!forBackward)
    o.y = o.y.detach();
  return o;
}

/// max |a - b| <= tol * max |b| (both defined or both not).
void expectClose(const at::Tensor &a, const at::Tensor &b, double tol,
                 const std::string &what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined())
    return;
  const double ref = b.abs().max().item<double>();
  const double diff =
      (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
  EXPECT_LE(diff, tol * std::max(ref, 1e-3))
      << what << " (max |ref| " << ref << ")";
}

void expectSame(const Out &tiled, const Out &ref, double tol,
                const std::string &what, bool value = true) {
  if (value)
    expectClose(tiled.y, ref.y, tol, what + ": output");
  expectClose(tiled.dx, ref.dx, tol, what + ": input gradient");
  expectClose(tiled.dflat, ref.dflat, tol, what + ": weight gradients");
  expectClose(tiled.dadapters, ref.dadapters, tol,
              what + ": adapter gradients");
  expectClose(tiled.sinkBuf, ref.sinkBuf, tol, what + ": sinks");
}

// B*S = 14 tokens: tiles of 4 (not dividing: 4 4 4 2), 7 (dividing), 14
// and 100 (one tile).
const int64_t kTiles[] = {4, 7, 14, 100};

TEST(MlpTile, FullFineTuneMatchesUntiled) {
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    const double tol = dt == at::kFloat ? 1e-5 : 1e-2; // bf16: 1.4e-3 seen
    Layer L = makeLayer(2, 7, false, dt);
    Out ref = run(L, 0);
    for (int64_t t : kTiles)
      expectSame(run(L, t), ref, tol,
                 "tile " + std::to_string(t) +
                     (dt == at::kFloat ? " fp32" : " bf16"));
  }
}

// The GEMMs' weight gradients through sinks: the first tile overwrites (or
// adds, as the sink says), every later tile adds. A sink that overwrites
// holds 5s before, so a later tile overwriting, or the first adding, fails.
TEST(MlpTile, GradSinksAccumulateOverTiles) {
  Layer L = makeLayer(2, 7, false, at::kFloat);
  L.sinks = true;
  for (bool adds : {false, true}) {
    L.sinkAdds = adds;
    Out ref = run(L, 0);
    for (int64_t t : kTiles)
      expectSame(run(L, t), ref, 1e-5,
                 "tile " + std::to_string(t) + (adds ? ", adding sink" : ""));
  }
}

TEST(MlpTile, LoraMatchesUntiled) {
  Layer L = makeLayer(2, 7, true, at::kFloat);
  Out ref = run(L, 0);
  for (int64_t t : kTiles)
    expectSame(run(L, t), ref, 1e-5, "lora tile " + std::to_string(t));
  // One tile draws the untiled dropout masks.
  L.dropout = 0.3;
  Out dropped = run(L, 0);
  expectSame(run(L, 14), dropped, 1e-5, "lora dropout, one tile");
  expectSame(run(L, 100), dropped, 1e-5, "lora dropout, one tile of 100");
}

// LoRA dropout over several tiles: tile t draws its masks with seed
// dropoutSeed + t * kTileSeedStep, forward and recompute alike. With tiles
// of S tokens, tile b is batch row b, and only the MLP adapted (the
// attention draws no masks), so row b of the tiled layer is the untiled
// layer on that row alone with tile b's seed: output and input gradient
// exactly, and the adapters' gradients summed over the rows. A recompute
// that drew other masks than the forward fails the gradients.
TEST(MlpTile, LoraDropoutRecomputesEachTilesMasks) {
  Layer L = makeLayer(2, 7, true, at::kFloat);
  L.loraCfg.targets = {"gate_proj", "up_proj", "down_proj"};
  L.al = adapterLayout(L.m, L.loraCfg, 1);
  L.adapters = at::randn({L.al.numel}) * 0.2;
  L.dropout = 0.4;
  Out tiled = run(L, 7);
  at::Tensor dadapters = at::zeros_like(L.adapters);
  for (int64_t b = 0; b < 2; ++b) {
    Layer R = L;
    R.x = L.x.narrow(0, b, 1);
    R.dy = L.dy.narrow(0, b, 1);
    R.seed = L.seed + uint64_t(b) * kTileSeedStep;
    Out row = run(R, 0);
    const std::string what = "row " + std::to_string(b);
    expectClose(tiled.y.narrow(0, b, 1), row.y, 1e-5, what + ": output");
    expectClose(tiled.dx.narrow(0, b, 1), row.dx, 1e-5, what + ": input grad");
    dadapters += row.dadapters;
  }
  expectClose(tiled.dadapters, dadapters, 1e-5, "adapter gradients");
  // And the masks are not the untiled ones (two tiles, two seeds).
  EXPECT_FALSE(at::allclose(tiled.y, run(L, 0).y, 1e-4, 1e-5));
}

// Full checkpointing's recompute (value not computed) and selective
// checkpointing give the same gradients tiled.
TEST(MlpTile, CheckpointingVariantsMatchUntiled) {
  for (bool lora : {false, true}) {
    Layer L = makeLayer(2, 7, lora, at::kFloat);
    L.sinks = !lora;
    Out ref = run(L, 0);
    const std::string what = lora ? "lora" : "full";
    for (int64_t t : {4, 100}) {
      expectSame(run(L, t, /*selective=*/true), ref, 1e-5,
                 what + " selective, tile " + std::to_string(t));
      expectSame(run(L, t, false, /*forBackward=*/true), ref, 1e-5,
                 what + " forBackward, tile " + std::to_string(t), false);
    }
  }
}

// FP8 GEMMs (the CPU emulation): one tile scales as the untiled layer does;
// several tiles scale each tile by its own amax, so they agree to FP8's
// precision (e4m3: 3 mantissa bits), with sinks accumulating.
TEST(MlpTile, Fp8MatchesUntiled) {
  Layer L = makeLayer(2, 7, false, at::kBFloat16);
  L.fp8 = true;
  L.sinks = true;
  Out ref = run(L, 0);
  expectSame(run(L, 100), ref, 2e-2, "fp8 one tile");
  expectSame(run(L, 4), ref, 0.1, "fp8 tiles of 4"); // seen: 0.05
}

/// The CPU allocator, recording the largest allocation it serves.
struct LargestAllocation : c10::Allocator {
  c10::Allocator *base = c10::GetCPUAllocator();
  mutable std::atomic<size_t> largest{0};
  LargestAllocation() { c10::SetCPUAllocator(this, /*priority=*/100); }
  ~LargestAllocation() override { c10::SetCPUAllocator(base, 100); }
  c10::DataPtr allocate(size_t n) const override {
    size_t seen = largest.load();
    while (n > seen && !largest.compare_exchange_weak(seen, n)) {
    }
    return base->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return base->raw_deleter(); }
};

// Tiled, no (B*S, I) tensor is ever allocated, forward or backward (the
// untiled layer allocates (B*S, 2 I) gate/up outputs), while a tile's
// (T, 2 I) is: the probe sees the MLP, and a silent fallback to the
// untiled MLP fails. I is 512 so the MLP's tensors are the largest.
TEST(MlpTile, NoTokensByIntermediateTensorIsWhole) {
  const int64_t B = 2, S = 64, I = 512, T = 32, R = B * S;
  Layer L = makeLayer(B, S, false, at::kFloat, I);
  L.sinks = true; // no (2 I, C) weight gradient tensor either
  auto largest = [&](int64_t tile, bool selective) {
    LargestAllocation probe;
    run(L, tile, selective);
    return size_t(probe.largest.load());
  };
  const size_t f = sizeof(float);
  EXPECT_GE(largest(0, false), R * 2 * I * f);
  EXPECT_GE(largest(0, true), R * 2 * I * f);
  for (bool selective : {false, true}) {
    const size_t tiled = largest(T, selective);
    EXPECT_LT(tiled, R * I * f) << "selective " << selective;
    EXPECT_GE(tiled, T * 2 * I * f) << "selective " << selective;
  }
}

// swift-run: a plan with mlp_tile_tokens (tiles of 24 rows over B*S = 64
// tokens: not dividing) trains as the plan without, full fine-tune and
// LoRA, no checkpointing and full. fp32: the losses differ only by the
// weight gradients' summation order (observed: equal to 9 digits over 4
// steps); kLossTol (1e-4) catches a missing or doubled tile.
TEST(MlpTile, SwiftRunLossesMatchUntiled) {
  for (bool lora : {false, true})
    for (const char *ckpt : {"none", "full"}) {
      json p = tinyPlan(0, 1);
      p["strategy"]["checkpointing"] = ckpt;
      if (lora)
        p = withLora(p);
      json tiled = p;
      tiled["strategy"]["mlp_tile_tokens"] = 24;
      const std::string what =
          std::string(lora ? "lora" : "full") + ", checkpointing " + ckpt;
      Result a = runPlan(p, "--steps 4"), b = runPlan(tiled, "--steps 4");
      expectSameLosses(a, b, kLossTol, what);
      EXPECT_EQ(a.losses().size(), 4u) << what;
    }
}

// That swift-run tiles at all: LoRA dropout draws tile t's masks with its
// own seed, so tiles of 24 train on other masks than the untiled run (the
// losses differ from step 2 on, when the B's are no longer 0), while one
// tile of 64 = B*S tokens draws the untiled masks (the same losses). A
// runtime that ignored mlp_tile_tokens fails the first.
TEST(MlpTile, SwiftRunTilesWithTheirOwnDropoutMasks) {
  json p = tinyPlan(0, 1);
  p["training"]["method"] = "lora";
  p["training"]["lora"] = {{"rank", 4},
                           {"alpha", 8.0},
                           {"dropout", 0.3},
                           {"targets", {"gate_proj", "up_proj", "down_proj"}}};
  p["training"]["optimizer"]["lr"] = 1e-2;
  json one = p, tiles = p;
  one["strategy"]["mlp_tile_tokens"] = 64;
  tiles["strategy"]["mlp_tile_tokens"] = 24;
  Result ref = runPlan(p, "--steps 4");
  expectSameLosses(ref, runPlan(one, "--steps 4"), 1e-6, "one tile");
  Result tiled = runPlan(tiles, "--steps 4");
  ASSERT_EQ(tiled.exitCode, 0) << tiled.output;
  std::vector<double> a = ref.losses(), b = tiled.losses();
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_NEAR(a[0], b[0], 1e-6); // B = 0: dropout changes nothing yet
  double most = 0;
  for (size_t i = 1; i < a.size(); ++i)
    most = std::max(most, std::fabs(a[i] - b[i]));
  EXPECT_GT(most, 1e-6); // seen: 5e-4
  EXPECT_LT(most, 0.05); // the same distribution of masks
}

// That swift-run tiles a full fine-tune: with I = 8192 and B*S = 1024
// tokens, the untiled MLP keeps gate/up (R, 2I) and SwiGLU (R, I) per layer
// for backward, 96 MiB each of the 2 layers in fp32; tiled (64 tokens) it
// keeps none, so the process's peak resident memory is lower by more than
// one (R, 2I) tensor (64 MiB; seen: 597 MB untiled, 319 MB tiled). A
// runtime that ignored mlp_tile_tokens fails (seen: 597 and 615 MB).
TEST(MlpTile, SwiftRunTiledPeakHoldsNoTokensByIntermediateTensor) {
  json p = tinyPlan(0, 1);
  p["model"]["intermediate_size"] = 8192;
  p["training"]["sequence_length"] = 512;
  p["training"]["global_batch_size"] = 2;
  p["training"]["gradient_accumulation"] = 1;
  json tiled = p;
  tiled["strategy"]["mlp_tile_tokens"] = 64;
  auto rss = [](const Result &r) {
    EXPECT_EQ(r.exitCode, 0) << r.output;
    int64_t most = 0;
    for (const json &m : r.metrics)
      if (m.contains("host_rss_bytes"))
        most = std::max(most, m.at("host_rss_bytes").get<int64_t>());
    return most;
  };
  Result a = runPlan(p, "--steps 1"), b = runPlan(tiled, "--steps 1");
  const int64_t untiledRss = rss(a), tiledRss = rss(b);
  const int64_t R = 2 * 512, I = 8192;
  EXPECT_GT(untiledRss - tiledRss, R * 2 * I * 4)
      << "untiled " << untiledRss << ", tiled " << tiledRss;
  expectSameLosses(a, b, kLossTol, "I 8192");
}

} // namespace
