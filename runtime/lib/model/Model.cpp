//===- Model.cpp - Llama-family decoder math on flat-buffer views ---------===//
//
// Precision is explicit (no autocast): weights and activations are in the
// compute dtype; RMSNorm statistics, softmax (math path) and the loss are
// computed in fp32, then cast back, the way HF Llama does it.
//
//===----------------------------------------------------------------------===//
#include "swift/Runtime/model/Model.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/core/TorchCompat.h"
#include "swift/Runtime/model/Autograd.h"
#include "swift/Runtime/model/Fp8.h"
#include "swift/Runtime/model/Kernels.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <tuple>

namespace swift::rt {

namespace {
int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
} // namespace

int64_t ParamDesc::numel() const { return product(shape); }

bool hfDecays(const std::string &name) {
  // transformers' Trainer.get_decay_parameter_names: the forbidden name
  // patterns "bias", "layernorm", "rmsnorm", "(^|\.)norm($|\.)" and
  // "_norm($|\.)" (LayerNorm modules aside, which these models lack).
  if (name.find("bias") != std::string::npos ||
      name.find("layernorm") != std::string::npos ||
      name.find("rmsnorm") != std::string::npos)
    return false;
  for (size_t begin = 0; begin <= name.size();) {
    size_t end = name.find('.', begin);
    if (end == std::string::npos)
      end = name.size();
    const std::string part = name.substr(begin, end - begin);
    if (part == "norm" ||
        (part.size() >= 5 && part.compare(part.size() - 5, 5, "_norm") == 0))
      return false;
    begin = end + 1;
  }
  return true;
}
int64_t LeafDesc::numel() const { return product(shape); }

UnitLayout unitLayout(const ModelConfig &m, int unit) {
  const int64_t C = m.hiddenSize, D = m.headDim, I = m.intermediateSize,
                V = m.vocabSize, Q = m.numHeads * D, KV = m.numKvHeads * D;
  UnitLayout l;
  // `stack`: one leaf with the previous parameter (same trailing dims).
  // `decays`: HF Trainer's parameter groups (Trainer.get_decay_parameter_
  // names): weight decay on every weight but biases and norm weights. The
  // undecayed come first in each unit, so that the decayed are one range,
  // [decayBegin, numel), and AdamW takes one boundary (Kernels.h).
  auto add = [&](std::string name, std::vector<int64_t> shape, Init init,
                 bool stack = false) {
    ParamDesc d{std::move(name), std::move(shape), init, l.numel};
    const bool decays = hfDecays(d.name);
    SWIFT_ASSERT(decays || l.decayBegin == l.numel,
                 "an undecayed parameter (", d.name, ") after a decayed one");
    if (stack) {
      LeafDesc &prev = l.leaves.back();
      SWIFT_ASSERT(std::equal(prev.shape.begin() + 1, prev.shape.end(),
                              d.shape.begin() + 1, d.shape.end()),
                   "cannot stack ", d.name, " on the previous leaf");
      prev.shape[0] += d.shape[0];
    } else {
      l.leaves.push_back(LeafDesc{d.shape, d.offset});
    }
    l.numel += d.numel();
    if (!decays)
      l.decayBegin = l.numel;
    l.params.push_back(std::move(d));
  };
  if (unit == 0) {
    add("embed_tokens.weight", {V, C}, Init::Normal);
  } else if (unit == m.numLayers + 1) {
    add("norm.weight", {C}, Init::Ones);
    if (!m.tieWordEmbeddings)
      add("lm_head.weight", {V, C}, Init::Normal);
  } else {
    // Table order == DecoderWeights binding order in bindDecoder(): the
    // norms and biases, then the four GEMMs' weights.
    std::string p = "layers." + std::to_string(unit - 1) + ".";
    add(p + "input_layernorm.weight", {C}, Init::Ones);
    add(p + "post_attention_layernorm.weight", {C}, Init::Ones);
    if (m.qkvBias) {
      add(p + "self_attn.q_proj.bias", {Q}, Init::Zeros);
      add(p + "self_attn.k_proj.bias", {KV}, Init::Zeros, true);
      add(p + "self_attn.v_proj.bias", {KV}, Init::Zeros, true);
    }
    if (m.qkNorm) {
      add(p + "self_attn.q_norm.weight", {D}, Init::Ones);
      add(p + "self_attn.k_norm.weight", {D}, Init::Ones);
    }
    if (m.oBias)
      add(p + "self_attn.o_proj.bias", {C}, Init::Zeros);
    add(p + "self_attn.q_proj.weight", {Q, C}, Init::Normal);
    add(p + "self_attn.k_proj.weight", {KV, C}, Init::Normal, true);
    add(p + "self_attn.v_proj.weight", {KV, C}, Init::Normal, true);
    add(p + "self_attn.o_proj.weight", {C, Q}, Init::Normal);
    add(p + "mlp.gate_proj.weight", {I, C}, Init::Normal);
    add(p + "mlp.up_proj.weight", {I, C}, Init::Normal, true);
    add(p + "mlp.down_proj.weight", {C, I}, Init::Normal);
  }
  SWIFT_ASSERT(l.numel == unitParameterCount(m, unit),
               "layout and unitParameterCount disagree for unit ", unit);
  return l;
}

namespace {
/// The four groups of a decoder layer's linears: member names, input width,
/// output widths.
struct LinearGroup {
  const char *prefix; // "self_attn." or "mlp."
  std::vector<const char *> members;
  int64_t in;
  std::vector<int64_t> outs;
};
std::vector<LinearGroup> linearGroups(const ModelConfig &m) {
  const int64_t C = m.hiddenSize, I = m.intermediateSize,
                Q = m.numHeads * m.headDim, KV = m.numKvHeads * m.headDim;
  return {{"self_attn.", {"q_proj", "k_proj", "v_proj"}, C, {Q, KV, KV}},
          {"self_attn.", {"o_proj"}, Q, {C}},
          {"mlp.", {"gate_proj", "up_proj"}, C, {I, I}},
          {"mlp.", {"down_proj"}, I, {C}}};
}
} // namespace

UnitLayout adapterLayout(const ModelConfig &m, const LoraConfig &lora,
                         int unit) {
  UnitLayout l;
  if (unit == 0 || unit == m.numLayers + 1)
    return l;
  const std::string p = "layers." + std::to_string(unit - 1) + ".";
  const int64_t r = lora.rank;
  auto add = [&](const std::string &name, std::vector<int64_t> shape,
                 Init init, bool stack) {
    ParamDesc d{name, std::move(shape), init, l.numel};
    if (stack)
      l.leaves.back().shape[0] += d.shape[0];
    else
      l.leaves.push_back(LeafDesc{d.shape, d.offset});
    l.numel += d.numel();
    l.params.push_back(std::move(d));
  };
  for (const LinearGroup &g : linearGroups(m)) {
    bool first = true;
    for (const char *name : g.members)
      if (lora.adapts(name)) {
        add(p + g.prefix + name + ".lora_A.weight", {r, g.in}, Init::LoraA,
            !first);
        first = false;
      }
    first = true;
    for (size_t i = 0; i < g.members.size(); ++i)
      if (lora.adapts(g.members[i])) {
        add(p + g.prefix + g.members[i] + ".lora_B.weight", {g.outs[i], r},
            Init::Zeros, !first);
        first = false;
      }
  }
  return l;
}

UnitLayout trainableLayout(const Plan &plan, int unit) {
  return plan.training.method == Method::Full
             ? unitLayout(plan.model, unit)
             : adapterLayout(plan.model, plan.training.lora, unit);
}

DecoderAdapters bindAdapters(const ModelConfig &m, const LoraConfig &lora,
                             const std::vector<at::Tensor> &views) {
  DecoderAdapters a;
  a.rank = lora.rank;
  a.scale = lora.scale();
  size_t i = 0;
  std::vector<LinearGroup> groups = linearGroups(m);
  AdapterGroup *targets[] = {&a.qkv, &a.o, &a.gateUp, &a.down};
  for (size_t k = 0; k < groups.size(); ++k) {
    AdapterGroup &g = *targets[k];
    g.outs = groups[k].outs;
    bool any = false;
    for (const char *name : groups[k].members) {
      g.adapted.push_back(lora.adapts(name));
      any |= g.adapted.back();
    }
    if (any) {
      g.a = views[i++];
      g.b = views[i++];
    }
  }
  SWIFT_ASSERT(i == views.size(), "adapter binding consumed ", i, " of ",
               views.size());
  return a;
}

at::Tensor seededDropout(const at::Tensor &x, double p, uint64_t seed) {
  at::Generator gen = compat::makeGenerator(x.device(), seed);
  at::Tensor keep = at::empty_like(x).bernoulli_(1.0 - p, gen);
  return x * keep * (1.0 / (1.0 - p));
}

at::Tensor loraBlockDiagonal(const AdapterGroup &g, int64_t rank) {
  const int64_t n =
      std::count(g.adapted.begin(), g.adapted.end(), true); // adapted members
  if (n == int64_t(g.outs.size()) && n == 1)
    return g.b;
  std::vector<at::Tensor> rows;
  int64_t k = 0, row = 0;
  for (size_t i = 0; i < g.outs.size(); ++i) {
    if (!g.adapted[i]) {
      rows.push_back(at::zeros({g.outs[i], n * rank}, g.b.options()));
      continue;
    }
    std::vector<at::Tensor> cols;
    if (k > 0)
      cols.push_back(at::zeros({g.outs[i], k * rank}, g.b.options()));
    cols.push_back(g.b.narrow(0, row, g.outs[i]));
    if (k + 1 < n)
      cols.push_back(at::zeros({g.outs[i], (n - k - 1) * rank}, g.b.options()));
    rows.push_back(cols.size() == 1 ? cols[0] : at::cat(cols, 1));
    ++k;
    row += g.outs[i];
  }
  return rows.size() == 1 ? rows[0] : at::cat(rows, 0);
}

DecoderWeights bindDecoder(const ModelConfig &m,
                           const std::vector<at::Tensor> &views,
                           const std::vector<GradSink> &sinks) {
  SWIFT_ASSERT(sinks.empty() || sinks.size() == views.size(),
               "one gradient sink per leaf");
  auto sinkOf = [&](size_t i) { return sinks.empty() ? GradSink() : sinks[i]; };
  DecoderWeights w;
  size_t i = 0;
  w.inputNorm = views[i++];
  w.postNorm = views[i++];
  if (m.qkvBias)
    w.qkvBias = views[i++];
  if (m.qkNorm) {
    w.qNorm = views[i++];
    w.kNorm = views[i++];
  }
  if (m.oBias)
    w.oBias = views[i++];
  w.qkvSink = sinkOf(i);
  w.qkv = views[i++];
  w.oSink = sinkOf(i);
  w.o = views[i++];
  w.gateUpSink = sinkOf(i);
  w.gateUp = views[i++];
  w.downSink = sinkOf(i);
  w.down = views[i++];
  SWIFT_ASSERT(i == views.size(), "decoder binding consumed ", i, " of ",
               views.size());
  return w;
}

/// inv_freq as HF transformers' ROPE_INIT_FUNCTIONS compute it (fp32, same
/// operation order): default, then rescaled per rope_scaling.
at::Tensor inverseFrequencies(const ModelConfig &m, const at::TensorOptions &f32) {
  const int64_t D = m.headDim;
  at::Tensor invFreq =
      1.0 / at::pow(m.ropeTheta, at::arange(0, D, 2, f32.dtype(at::kLong))
                                     .to(at::kFloat) / static_cast<double>(D));
  const plan::RopeScaling &r = m.ropeScaling;
  switch (r.type) {
  case plan::RopeType::Default:
    return invFreq;
  case plan::RopeType::Linear:
    return invFreq / r.factor;
  case plan::RopeType::Llama3: {
    const double old = static_cast<double>(r.originalMaxPositionEmbeddings);
    const double lowWavelen = old / r.lowFreqFactor;
    const double highWavelen = old / r.highFreqFactor;
    at::Tensor wavelen = 2 * M_PI / invFreq;
    at::Tensor scaled =
        at::where(wavelen > lowWavelen, invFreq / r.factor, invFreq);
    at::Tensor smooth = (old / wavelen - r.lowFreqFactor) /
                        (r.highFreqFactor - r.lowFreqFactor);
    at::Tensor smoothed =
        (1 - smooth) * scaled / r.factor + smooth * scaled;
    at::Tensor medium = (wavelen >= highWavelen) & (wavelen <= lowWavelen);
    return at::where(medium, smoothed, scaled);
  }
  }
  SWIFT_ASSERT(false, "unknown rope type");
}

Rope makeRope(const ModelConfig &m, int64_t seq, const at::TensorOptions &opt) {
  auto f32 = opt.dtype(at::kFloat);
  at::Tensor invFreq = inverseFrequencies(m, f32);
  at::Tensor angles = at::outer(at::arange(0, seq, f32), invFreq); // (S, D/2)
  return {angles.cos().to(opt.dtype()), angles.sin().to(opt.dtype())};
}

Rope ropeAt(const Rope &rope, const at::Tensor &positions) {
  at::Tensor idx = positions.reshape({-1}).to(rope.cos.device());
  return {rope.cos.index_select(0, idx), rope.sin.index_select(0, idx),
          /*perToken=*/true};
}

at::Tensor segmentMask(const at::Tensor &segments) {
  const int64_t S = segments.size(1);
  at::Tensor same = segments.unsqueeze(2).eq(segments.unsqueeze(1));
  at::Tensor causal =
      at::ones({S, S}, segments.options().dtype(at::kBool)).tril();
  return same.logical_and_(causal).unsqueeze(1);
}

Packing makePacking(const at::Tensor &segments, const at::Device &device,
                    at::ScalarType dtype, int64_t headDim) {
  Packing p;
  if (!compat::hasVarlenAttention(device, dtype, headDim)) {
    p.mask = segmentMask(segments.to(device, at::kLong));
    return p;
  }
  // Segment starts over the flattened B*S tokens: every window's first
  // token, and every token whose segment differs from its predecessor's
  // (padding at a window's end is a segment of its own: it sees only
  // itself and has no target).
  at::Tensor seg = segments.to(at::kCPU, at::kLong).contiguous();
  const int64_t B = seg.size(0), S = seg.size(1);
  const int64_t *id = seg.data_ptr<int64_t>();
  std::vector<int32_t> starts;
  for (int64_t i = 0; i < B * S; ++i)
    if (i % S == 0 || id[i] != id[i - 1])
      starts.push_back(int32_t(i));
  starts.push_back(int32_t(B * S));
  for (size_t i = 1; i < starts.size(); ++i)
    p.maxSeqlen = std::max<int64_t>(p.maxSeqlen, starts[i] - starts[i - 1]);
  p.cuSeqlens = toDeviceAsync(
      at::tensor(starts, at::TensorOptions().dtype(at::kInt)), device,
      at::kInt);
  return p;
}

namespace {

// The fused kernels on CUDA, the op chains they replace elsewhere (CPU keeps
// the math CI has always checked).
at::Tensor rmsNorm(const at::Tensor &x, const at::Tensor &w, double eps) {
  return useFusedKernels(x, "norm") ? fusedRmsNorm(x, w, eps)
                                    : opRmsNorm(x, w, eps);
}

/// (norm(x), the x the residual add reads): on CUDA one node, whose
/// backward adds the residual's gradient in the norm's kernel; elsewhere x
/// itself, and autograd adds the two.
std::pair<at::Tensor, at::Tensor> rmsNormResidual(const at::Tensor &x,
                                                  const at::Tensor &w,
                                                  double eps) {
  if (useFusedKernels(x, "norm") && kernelSwitchOn("normres"))
    return fusedRmsNormResidual(x, w, eps);
  return {rmsNorm(x, w, eps), x};
}

/// x: (B, S, H, D); rotates the two halves of D (HF's rotate_half layout).
at::Tensor applyRope(const at::Tensor &x, const Rope &rope) {
  return useFusedKernels(x, "rope") ? fusedRope(x, rope.cos, rope.sin)
                                    : opRope(x, rope.cos, rope.sin);
}

/// q, k (rotated) and v of the packed projection (B, S, (NH + 2 NKV) D).
std::vector<at::Tensor> qkvRope(const at::Tensor &qkv, const Rope &rope,
                                int64_t nh, int64_t nkv) {
  return useFusedKernels(qkv, "rope")
             ? fusedQkvRope(qkv, rope.cos, rope.sin, nh, nkv)
             : opQkvRope(qkv, rope.cos, rope.sin, nh, nkv);
}

at::Tensor swiglu(const at::Tensor &gateUp) {
  return useFusedKernels(gateUp, "swiglu") ? fusedSwiglu(gateUp)
                                           : opSwiglu(gateUp);
}

} // namespace

namespace {

/// A decoder layer's GEMMs over its weights `w` and LoRA's `adapters` (null:
/// none). The base model's GEMMs: bf16 (residual adds in the epilogues,
/// addmm, where there is no bias) or FP8 (Fp8.h); adapters run bf16 only.
/// LoRA: peft's base(x) + lora_B(lora_A(dropout(x))) * scaling, one
/// loraLinear per group of linears sharing an input (q/k/v, o, gate/up,
/// down); o's and down's take the residual too. `group` (0-3) picks the
/// group's dropout mask.
struct Gemms {
  const DecoderWeights &w;
  const DecoderAdapters *adapters;

  bool lora(const AdapterGroup &g) const { return adapters && g.a.defined(); }
  at::Tensor adapterOp(const at::Tensor &in, const at::Tensor &wt,
                       const at::Tensor &bias, const AdapterGroup &g,
                       uint64_t group, const at::Tensor &res,
                       bool value) const {
    at::Tensor dropped;
    if (adapters->dropout > 0) // one mask per group: the group shares x
      dropped = seededDropout(in, adapters->dropout,
                              adapters->dropoutSeed * 4 + group);
    return loraLinear(in, dropped, wt, bias, g.a,
                      loraBlockDiagonal(g, adapters->rank), adapters->scale,
                      res, value);
  }
  at::Tensor adapted(const at::Tensor &in, const at::Tensor &wt,
                     const at::Tensor &bias, const GradSink &sink,
                     const AdapterGroup &g, uint64_t group) const {
    return lora(g) ? adapterOp(in, wt, bias, g, group, {}, true)
                   : linear(in, wt, bias, sink);
  }
  at::Tensor dense(const at::Tensor &in, const at::Tensor &wt,
                   const at::Tensor &bias, const GradSink &sink) const {
    return w.fp8 ? fp8Linear(in, wt, bias, sink) : linear(in, wt, bias, sink);
  }
  // `inputKept`: something else saves `in` for backward (attention its
  // output), so FP8 keeps it rather than its codes (Fp8.h keepCodes).
  at::Tensor residualDense(const at::Tensor &res, const at::Tensor &in,
                           const at::Tensor &wt, const at::Tensor &bias,
                           const GradSink &sink, bool value,
                           bool inputKept) const {
    return w.fp8 ? fp8Linear(in, wt, bias, sink, res, value, !inputKept)
           : bias.defined() ? res + linear(in, wt, bias, sink)
                            : residualLinear(res, in, wt, value, sink);
  }

  /// The packed gate/up projection of h, (..., 2 I).
  at::Tensor gateUp(const at::Tensor &h) const {
    return adapters
               ? adapted(h, w.gateUp, {}, w.gateUpSink, adapters->gateUp, 2)
               : dense(h, w.gateUp, {}, w.gateUpSink);
  }
  bool downAdapted() const { return adapters && lora(adapters->down); }
  /// res + down_proj(a); `value` as residualLinear's.
  at::Tensor down(const at::Tensor &res, const at::Tensor &a,
                  bool value) const {
    if (downAdapted())
      return adapterOp(a, w.down, {}, adapters->down, 3, res, value);
    return residualDense(res, a, w.down, {}, w.downSink, value,
                         /*inputKept=*/false);
  }
};

/// Attention core: q/k norm, rotary, softmax(QK^T)V of the packed q/k/v
/// projection (and the q/k norm weights).
TensorFn attentionCore(const ModelConfig &m, const Rope &rope,
                       const Packing &packing) {
  return [&m, rope, packing](const std::vector<at::Tensor> &in) {
    const at::Tensor &qkv = in[0];
    const int64_t B = qkv.size(0), S = qkv.size(1), D = m.headDim,
                  NH = m.numHeads, NKV = m.numKvHeads;
    // Per-token rotary tables (packed windows): the rotary ops see the batch
    // as one sequence of B*S tokens, one table row each (same kernels).
    auto seqOf = [&](const at::Tensor &t) {
      return rope.perToken ? t.reshape({1, B * S, t.size(2), t.size(3)}) : t;
    };
    auto batchOf = [&](const at::Tensor &t) {
      return rope.perToken ? t.view({B, S, t.size(2), t.size(3)}) : t;
    };
    at::Tensor q, k, v;
    if (m.qkNorm) { // the norm sits between projection and rotary
      auto p = qkv.split_with_sizes({NH * D, NKV * D, NKV * D}, -1);
      q = batchOf(applyRope(
          seqOf(rmsNorm(p[0].view({B, S, NH, D}), in[1], m.rmsNormEps)), rope));
      k = batchOf(applyRope(
          seqOf(rmsNorm(p[1].view({B, S, NKV, D}), in[2], m.rmsNormEps)),
          rope));
      v = p[2].view({B, S, NKV, D});
    } else if (rope.perToken) {
      auto p = qkvRope(qkv.view({1, B * S, qkv.size(2)}), rope, NH, NKV);
      q = batchOf(p[0]), k = batchOf(p[1]), v = batchOf(p[2]);
    } else {
      auto p = qkvRope(qkv, rope, NH, NKV);
      q = p[0], k = p[1], v = p[2];
    }
    if (packing.cuSeqlens.defined()) // (B*S, heads, D): one ragged batch
      return std::vector<at::Tensor>{
          compat::varlenCausalAttention(
              q.reshape({B * S, NH, D}), k.reshape({B * S, NKV, D}),
              v.reshape({B * S, NKV, D}), packing.cuSeqlens, packing.maxSeqlen)
              .view({B, S, NH * D})};
    at::Tensor a = compat::causalAttention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), packing.mask);
    return std::vector<at::Tensor>{a.transpose(1, 2).reshape({B, S, NH * D})};
  };
}

/// x1 + down(SwiGLU(gate/up(h))) in one piece (mlp_tile_tokens 0).
/// Selective checkpointing keeps not the SwiGLU product where
/// plan::selectiveDropsResidualInput says so (recomputedResidualLinear);
/// elsewhere it is recomputed but kept.
at::Tensor wholeMlp(const Gemms &g, const at::Tensor &h, const at::Tensor &x1,
                    bool selective, bool forBackward) {
  at::Tensor gateUp = g.gateUp(h); // (B, S, 2 I)
  TensorFn act = [](const std::vector<at::Tensor> &in) {
    return std::vector<at::Tensor>{swiglu(in[0])};
  };
  if (selective && plan::selectiveDropsResidualInput(g.w.fp8, g.downAdapted()))
    return recomputedResidualLinear(x1, act, {gateUp}, g.w.down, {},
                                    /*value=*/!forBackward, g.w.downSink);
  at::Tensor a = selective ? recompute(act, {gateUp})[0] : act({gateUp})[0];
  return g.down(x1, a, /*value=*/!forBackward);
}

/// A sink that adds into its buffer whatever its own flag says: the tiles
/// of a tiled GEMM after the first.
GradSink accumulating(const GradSink &sink) {
  if (!sink)
    return sink;
  return [sink] { return std::make_pair(sink().first, true); };
}

/// The seed step between two tiles' LoRA dropout masks (tile 0 draws the
/// untiled masks).
constexpr uint64_t kTileSeedStep = 0x9E3779B97F4A7C15ull;

/// The MLP over the B*S tokens in tiles of `tile` rows (tiledRecompute): no
/// (tokens, I) tensor is ever whole; kept for backward: h and x1. Tile t's
/// LoRA dropout masks are drawn with dropoutSeed + t kTileSeedStep, so a
/// recompute draws them again, and one tile draws the untiled masks.
at::Tensor tiledMlp(const Gemms &g, const at::Tensor &h, const at::Tensor &x1,
                    int64_t tile, bool forBackward) {
  const DecoderAdapters *ad = g.adapters;
  std::vector<at::Tensor> shared{g.w.gateUp, g.w.down};
  DecoderWeights base; // what a tile reads besides `shared`
  base.gateUpSink = g.w.gateUpSink;
  base.downSink = g.w.downSink;
  base.fp8 = g.w.fp8;
  std::optional<DecoderAdapters> lora;
  if (ad) {
    shared.insert(shared.end(),
                  {ad->gateUp.a, ad->gateUp.b, ad->down.a, ad->down.b});
    lora = *ad;
    lora->qkv = lora->o = AdapterGroup();
  }
  TileFn fn = [base, lora](const std::vector<at::Tensor> &rows,
                           const std::vector<at::Tensor> &sh, int64_t t,
                           bool value) {
    DecoderWeights w = base;
    w.gateUp = sh[0];
    w.down = sh[1];
    if (t > 0) {
      w.gateUpSink = accumulating(w.gateUpSink);
      w.downSink = accumulating(w.downSink);
    }
    std::optional<DecoderAdapters> a = lora;
    if (a) {
      a->gateUp.a = sh[2], a->gateUp.b = sh[3];
      a->down.a = sh[4], a->down.b = sh[5];
      a->dropoutSeed += uint64_t(t) * kTileSeedStep;
    }
    Gemms tg{w, a ? &*a : nullptr};
    at::Tensor act = swiglu(tg.gateUp(rows[0])); // gate/up's freed here
    return tg.down(rows[1], act, value);
  };
  return tiledRecompute(fn, {rows2d(h), rows2d(x1)}, shared, tile, x1.size(-1),
                        /*value=*/!forBackward, /*residual=*/1)
      .view(x1.sizes());
}

} // namespace

at::Tensor decoderForward(const ModelConfig &m, const DecoderWeights &w,
                          const at::Tensor &x, const Rope &rope, bool selective,
                          bool forBackward, const Packing &packing,
                          const DecoderAdapters *adapters,
                          int64_t mlpTileTokens) {
  SWIFT_ASSERT(!(w.fp8 && adapters), "FP8 GEMMs with LoRA adapters");
  SWIFT_ASSERT(mlpTileTokens >= 0, "a negative MLP tile");
  const Gemms g{w, adapters};
  // One GEMM for q, k, v and one for gate, up: their weights are adjacent
  // in the unit's flat buffer (unitLayout stacks them into one leaf).
  // `res`: x as the attention's residual add reads it (rmsNormResidual).
  at::Tensor h, res;
  std::tie(h, res) = rmsNormResidual(x, w.inputNorm, m.rmsNormEps);
  at::Tensor qkv =
      adapters ? g.adapted(h, w.qkv, w.qkvBias, w.qkvSink, adapters->qkv, 0)
               : g.dense(h, w.qkv, w.qkvBias, w.qkvSink);
  // Under selective checkpointing only the packed projection is kept; the
  // core's internals (rotated q, k, the S x S probabilities on the math
  // path) are recomputed in backward, and its output too where
  // plan::selectiveDropsResidualInput says so: it then feeds o_proj without
  // being saved (recomputedResidualLinear).
  TensorFn core = attentionCore(m, rope, packing);
  std::vector<at::Tensor> coreIn = {qkv};
  if (m.qkNorm) {
    coreIn.push_back(w.qNorm);
    coreIn.push_back(w.kNorm);
  }
  const bool oAdapted = adapters && g.lora(adapters->o);
  at::Tensor x1;
  if (selective && plan::selectiveDropsResidualInput(w.fp8, oAdapted)) {
    x1 = recomputedResidualLinear(res, core, coreIn, w.o, w.oBias, true,
                                  w.oSink);
  } else {
    at::Tensor attn = selective ? recompute(core, coreIn)[0] : core(coreIn)[0];
    x1 = oAdapted ? g.adapterOp(attn, w.o, w.oBias, adapters->o, 1, res, true)
                  : g.residualDense(res, attn, w.o, w.oBias, w.oSink, true,
                                    /*inputKept=*/true);
  }
  std::tie(h, x1) = rmsNormResidual(x1, w.postNorm, m.rmsNormEps);
  // Tiled, the MLP recomputes its internals in backward whatever the
  // checkpointing (it subsumes selective's part).
  return mlpTileTokens > 0 ? tiledMlp(g, h, x1, mlpTileTokens, forBackward)
                           : wholeMlp(g, h, x1, selective, forBackward);
}

at::Tensor embeddingForward(const at::Tensor &table, const at::Tensor &ids,
                            const GradSink &sink) {
  return embedding(table, ids, sink);
}

at::Tensor headLoss(const ModelConfig &m, const at::Tensor &x,
                    const at::Tensor &finalNorm, const at::Tensor &lmHead,
                    const at::Tensor &targets, const GradSink &lmHeadSink,
                    bool masked, double divisor) {
  at::Tensor h = rmsNorm(x, finalNorm, m.rmsNormEps);
  static const bool fullLogits = [] {
    const char *e = std::getenv("SWIFT_LOSS");
    return e && std::string(e) == "full";
  }();
  if (fullLogits && masked) // ignore_index -100, sum over trained tokens
    return at::cross_entropy_loss(
               at::linear(h, lmHead).view({-1, m.vocabSize}).to(at::kFloat),
               targets.reshape({-1}), {}, at::Reduction::Sum) /
           divisor;
  if (fullLogits) // the unchunked loss, for comparisons
    return at::cross_entropy_loss(
        at::linear(h, lmHead).view({-1, m.vocabSize}).to(at::kFloat),
        targets.reshape({-1}));
  // Chunked: no (B*S, V) logits, fp32 copy or logits gradient is ever held.
  // The engine's backward starts here with a gradient of 1 (loss.backward()).
  return linearCrossEntropy(h.reshape({-1, h.size(-1)}), lmHead,
                            targets.reshape({-1}), 0, lmHeadSink, masked,
                            divisor, /*upstreamIsOne=*/true);
}

double flopsPerToken(const ModelConfig &m, int64_t seq, bool frozen) {
  // Non-embedding parameters with lm_head counted: a tied table counts once
  // (as lm_head); an untied model drops the input table.
  double n = double(m.numParameters()) -
             (m.tieWordEmbeddings ? 0.0 : double(m.numEmbeddingParameters()));
  return (frozen ? 4.0 : 6.0) * n +
         6.0 * double(m.numLayers) * double(m.hiddenSize) * seq;
}

namespace compat {
at::Generator makeGenerator(const at::Device &device, uint64_t seed) {
  at::Generator g = device.is_cpu()
                        ? at::detail::createCPUGenerator(seed)
                        : at::globalContext().defaultGenerator(device).clone();
  g.set_current_seed(seed);
  return g;
}
} // namespace compat

} // namespace swift::rt
