//===- Model.h - the Llama-family decoder as flat, unit-owned weights -----===//
//
// The model is three kinds of units (see Plan.h): embedding, decoder layer,
// head. Each unit's parameters live in ONE flat buffer (the engine owns it;
// this file only describes the layout and computes with views into it), so
// sharding, gathering and gradient reduction are one contiguous range each.
//
// Descriptor tables below give each parameter's shape and initializer; the
// flat layout is the table order, no padding between parameters.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/core/PlanTypes.h"
#include "swift/Runtime/model/Kernels.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace swift::rt {

/// Initial values: normal(0, 0.02) (HF's initializer_range), ones, zeros,
/// or uniform(-1/sqrt(in), 1/sqrt(in)) for a LoRA A (peft's
/// kaiming_uniform_(a=sqrt(5)) of an (r, in) weight).
enum class Init { Normal, Ones, Zeros, LoraA };

struct ParamDesc {
  std::string name; // HF name, e.g. "layers.3.self_attn.q_proj.weight"
  std::vector<int64_t> shape;
  Init init = Init::Normal;
  int64_t offset = 0; // in elements, within the unit's flat buffer
  int64_t numel() const;
};

/// One tensor the unit's forward differentiates: a parameter, or several
/// adjacent ones that one GEMM consumes together (q/k/v projections, their
/// biases, gate/up), stacked along dim 0. Their gradient is then one GEMM's
/// output too, written once into the flat gradient buffer.
struct LeafDesc {
  std::vector<int64_t> shape;
  int64_t offset = 0; // in elements, within the unit's flat buffer
  int64_t numel() const;
};

struct UnitLayout {
  std::vector<ParamDesc> params; // table order == flat order
  std::vector<LeafDesc> leaves;  // the same range, parameters merged
  int64_t numel = 0;             // == unitParameterCount(model, unit)
  /// AdamW decays [decayBegin, numel): HF Trainer's parameter groups
  /// (every weight but biases and norm weights), which the tables place
  /// after the undecayed (norms, biases).
  int64_t decayBegin = 0;
};

/// Whether HF Trainer decays the parameter named `name` (an HF name, with
/// or without "model."): every weight but biases and norm weights.
bool hfDecays(const std::string &name);

/// The descriptor table of one unit.
UnitLayout unitLayout(const ModelConfig &m, int unit);

/// LoRA (training.method lora / qlora): a decoder unit trains adapters, not
/// its weights. Per group of linears that share an input (q/k/v, o,
/// gate/up, down) the A's of its adapted members are one leaf (n r, in),
/// one GEMM; their B's one leaf (sum of their outs, r). Names are the
/// adapted linear's with lora_A / lora_B ("layers.0.self_attn.q_proj.
/// lora_A.weight"); peft's files prefix them with "base_model.model.model.".
/// Embedding and head units train nothing (an empty layout).
UnitLayout adapterLayout(const ModelConfig &m, const LoraConfig &lora,
                         int unit);
/// What unit `unit` trains: unitLayout() for full fine-tuning,
/// adapterLayout() for LoRA.
UnitLayout trainableLayout(const Plan &plan, int unit);

/// One group's adapters (Model.h adapterLayout): `a` (n r, in), `b`
/// (sum of adapted outs, r); undefined when no member is adapted.
struct AdapterGroup {
  at::Tensor a, b;
  std::vector<int64_t> outs;  // every member's output width
  std::vector<bool> adapted;  // per member
};
struct DecoderAdapters {
  AdapterGroup qkv, o, gateUp, down;
  int64_t rank = 0;
  double scale = 0; // alpha / rank
  // peft's lora_dropout on each group's input to A: p, and the seed of its
  // masks (a function of the run's seed, the micro-batch's first sample and
  // the unit, so recomputation and any world size draw the same masks).
  double dropout = 0;
  uint64_t dropoutSeed = 0;
};
/// Binds `views` (one per leaf of adapterLayout, in order).
DecoderAdapters bindAdapters(const ModelConfig &m, const LoraConfig &lora,
                             const std::vector<at::Tensor> &views);
/// The group's B's as one (sum of every member's out, n rank) matrix: member
/// i's B in the rank columns of its A (the i-th adapted), zero elsewhere and
/// for members without an adapter, so that (x A^T) Bd^T is every member's
/// lora_B(lora_A(x)) side by side in one GEMM.
at::Tensor loraBlockDiagonal(const AdapterGroup &g, int64_t rank);
/// x with dropout p (inverted: kept values / (1 - p)); the mask drawn from
/// a generator seeded with `seed` on x's device.
at::Tensor seededDropout(const at::Tensor &x, double p, uint64_t seed);

/// Views of a decoder layer's leaves (undefined when absent).
struct DecoderWeights {
  at::Tensor inputNorm;    // (C)
  at::Tensor qkv;          // (Q + 2 KV, C): q_proj, k_proj, v_proj stacked
  at::Tensor qkvBias;      // (Q + 2 KV)                      qkv_bias
  at::Tensor qNorm, kNorm; // (D), (D)                      qk_norm
  at::Tensor o;            // (C, Q)
  at::Tensor oBias;        // (C)                           o_bias
  at::Tensor postNorm;     // (C)
  at::Tensor gateUp;       // (2 I, C): gate_proj over up_proj
  at::Tensor down;         // (C, I)
  // Where the four GEMM weights' gradients go (Kernels.h); empty: returned
  // through autograd.
  GradSink qkvSink, oSink, gateUpSink, downSink;
  // The four GEMMs in FP8 (precision fp8-*, Fp8.h): fp8Linear for each.
  bool fp8 = false;
};
/// Binds `views` (one per LeafDesc, in order) to names, and `sinks` (empty,
/// or one per LeafDesc) to the GEMM weights.
DecoderWeights bindDecoder(const ModelConfig &m,
                           const std::vector<at::Tensor> &views,
                           const std::vector<GradSink> &sinks = {});

/// Rotary tables for positions 0..S-1, (S, D/2) each, compute dtype.
/// `perToken`: one row per token of the batch instead, (B*S, D/2) (packed
/// windows, positions restarting per sample); the rotary ops then see the
/// batch as one sequence of B*S tokens.
struct Rope {
  at::Tensor cos, sin;
  bool perToken = false;
};
Rope makeRope(const ModelConfig &m, int64_t seq, const at::TensorOptions &opt);
/// The rows of `rope` (positions 0..S-1) for per-token positions (B, S).
Rope ropeAt(const Rope &rope, const at::Tensor &positions);
/// (B, 1, S, S) bool, true where a query may attend a key: causal and within
/// the same segment (segments: (B, S), Data.h's Batch::segments).
at::Tensor segmentMask(const at::Tensor &segments);

/// How attention keeps the samples of packed windows apart. Where
/// FlashAttention's variable-length kernel exists (CUDA, LibTorch >= 2.5,
/// bf16/fp16) the B*S tokens are one ragged batch of segments (`cuSeqlens`:
/// int32 offsets of each segment's first token, then B*S); elsewhere a
/// block-diagonal causal `mask` (segmentMask). Neither set: plain causal
/// attention (unpacked windows).
struct Packing {
  at::Tensor mask;
  at::Tensor cuSeqlens;
  int64_t maxSeqlen = 0;
};
/// The packing of segments (B, S) for attention on `device` in `dtype`.
Packing makePacking(const at::Tensor &segments, const at::Device &device,
                    at::ScalarType dtype, int64_t headDim);

/// x: (B, S, C) -> (B, S, C). `selective` recomputes the attention core and
/// the SwiGLU activation in backward instead of saving their internals.
/// `forBackward`: the layer is recomputed only to be differentiated (full
/// checkpointing), so its output value is not computed (the down_proj GEMM
/// is skipped; the result is uninitialized, its autograd graph exact).
/// `packing` empty: plain causal attention.
/// `adapters`: LoRA's deltas added to the four GEMMs' outputs.
/// `mlpTileTokens` > 0 (plan strategy.mlp_tile_tokens): the MLP (gate/up,
/// SwiGLU, down and its residual add) runs over the B*S tokens in tiles of
/// that many rows, forward and backward (tiledRecompute): its forward keeps
/// only its inputs (the post-attention norm's output and the residual) and
/// no (tokens, intermediate) tensor is ever whole; the backward recomputes
/// each tile and differentiates it, adding the tiles' weight gradients
/// (GradSinks: every tile after the first adds into the sink). Selective
/// checkpointing then applies to the attention only. Under LoRA dropout
/// tile t draws its gate/up and down masks from the seed dropoutSeed +
/// t * 0x9E3779B97F4A7C15 (the same in the recompute; tile 0's are the
/// untiled masks): with more than one tile the masks differ from the
/// untiled ones, with the same distribution. FP8 scales each tile's
/// operands by their own amax (tensorwise over the tile). 0: untiled.
at::Tensor decoderForward(const ModelConfig &m, const DecoderWeights &w,
                          const at::Tensor &x, const Rope &rope, bool selective,
                          bool forBackward = false,
                          const Packing &packing = {},
                          const DecoderAdapters *adapters = nullptr,
                          int64_t mlpTileTokens = 0);

/// ids: (B, S) int64, table: (V, C) -> (B, S, C).
at::Tensor embeddingForward(const at::Tensor &table, const at::Tensor &ids,
                            const GradSink &sink = {});

/// x: (B, S, C), finalNorm: (C), lmHead: (V, C), targets: (B, S) int64.
/// Mean cross-entropy over all B*S tokens, computed in fp32. `lmHeadSink`:
/// see linearCrossEntropy. `masked`: targets -100 are left out and the sum
/// is divided by `divisor` (see linearCrossEntropy). The backward must start
/// at this loss with a gradient of 1, as the engine's loss.backward() does
/// (linearCrossEntropy's upstreamIsOne).
at::Tensor headLoss(const ModelConfig &m, const at::Tensor &x,
                    const at::Tensor &finalNorm, const at::Tensor &lmHead,
                    const at::Tensor &targets,
                    const GradSink &lmHeadSink = {}, bool masked = false,
                    double divisor = 0);

/// FLOPs per trained token (forward + backward), torchtitan's convention:
/// 6 * (non-embedding params, lm_head counted) + 6 * L * C * S.
/// LoRA/QLoRA (`frozen`): the linears' backward is their input gradient
/// only, 4 instead of 6 (swift-plan's modelFlopsPerStep counts the same).
double flopsPerToken(const ModelConfig &m, int64_t seq, bool frozen = false);

} // namespace swift::rt
