//===- Memory.cpp - per-GPU peak of one training step ---------------------===//
//
// The step is walked as the program runs it: forward through the layers
// (saved tensors accumulate), the loss, backward from the head (saved
// tensors are freed, gradients appear), the optimizer step. The peak is the
// largest sum of live parts at the points where memory can peak: inside the
// loss, at its backward, at the start of each layer's backward, and in the
// optimizer step. Each part is a tensor class of the real program (see
// docs/cost-model-hf.md for HF's).
//
//===----------------------------------------------------------------------===//

#include "Detail.h"
#include "swift/Cost/Parallel.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

namespace swift::cost::detail {
namespace {

/// Bytes as an integer, saturated at kSaturatedCount (Cost.h): a plain
/// conversion past 2^63 is undefined.
int64_t toBytes(double bytes) {
  if (!(bytes < double(kSaturatedCount))) // also NaN
    return kSaturatedCount;
  return bytes > 0 ? std::llround(bytes) : 0;
}

/// Host memory one rank's process holds besides the buffers it allocates
/// for the step: the CUDA context, LibTorch, NCCL and their libraries.
/// A swift-run rank on an H200 machine sits at 0.95 GiB resident
/// (benchmarks/runtime/RESULTS.md, VmHWM 966-976 MiB loading, training and
/// saving 8B); a Python backend's rank holds at least as much.
constexpr double kHostBytesPerRank = double(int64_t(1) << 30);

/// Host memory per node: each of the node's ranks, its process and its
/// `perGpu` bytes of host buffers (offload).
int64_t hostBytesPerNode(double perGpu, const Hardware &hw) {
  return toBytes((kHostBytesPerRank + perGpu) * hw.gpusPerNode);
}

/// Model states per GPU, and what exists only around the optimizer step.
struct States {
  double parameters = 0; // held between steps
  double optimizer = 0;  // held between steps
  double gradients = 0;  // all gradients, alive from backward to the step
  double optimizerTemporaries = 0;
  double gradientBuffers = 0; // DDP buckets / DeepSpeed ipg buffers
  double host = 0;           // host bytes per GPU (offload)
  // Gradient storage allocated once and held across steps (swift-run's
  // reduced shards; its accumulators with gradient accumulation), alive at
  // every point of the step.
  double persistentGradients = 0;
  // Gradients alive while the loss runs (forward and backward): swift-run's
  // fused loss writes the lm_head's gradient during its forward.
  double lossGradients = 0;
  // Gradients alive at the start of the backward of the layer with `done`
  // layers behind it; unset: the head's and every later layer's (walkHF's
  // headGrad + (done + 1) layerGrad). From done = kIrregularLayers on it is
  // constant or affine in `done`, computed so that it is monotone (walkHF
  // prices the layers' backward at breakpoints). And at the optimizer step
  // (< 0: all, `gradients`).
  std::function<double(int64_t done)> layerGradients;
  double finalGradients = -1;
};

/// The layers' backward (done = 0, 1, ...) whose gradients or gathered
/// parameters may differ from an affine function of `done`: the reductions
/// still in flight from the head's backward or an earlier micro-batch.
constexpr int64_t kIrregularLayers = plan::kReductionsInFlight;

/// What the HF program keeps per step, from the profile.
struct Activations {
  double layers = 0;        // all decoder layers' saved tensors
  double recompute = 0;     // one layer's saved tensors during its backward
  double layerWeightCopies = 0; // autocast copies of one layer's weights
  double head = 0;          // final norm, lm_head, loss saved tensors
  double logitsBytes = 0;   // bf16 logits [T, V] the loop holds in `out`
  double lossForward = 0;   // temporaries inside the loss's forward
  double lossBackward = 0;  // temporaries of the loss's backward
  double finalHidden = 0;   // final norm output held by the CausalLM frame
  double kvCache = 0;       // DynamicCache of the step (use_cache)
  bool kvShared = false;    // cache entries are the tensors SDPA saved
  bool holdsOutputs = true; // the loop keeps `out` (logits, cache) a step
  double perLayer = 0;      // one layer without checkpointing
  double perCheckpointedLayer = 0;
  double ffnWidth = 0;      // intermediate size (SwiGLU backward temporaries)
  double mlpTileTokens = 0; // MLP tiles (swift-run): tokens per tile; 0: untiled
  double workspace = 0;     // cuBLAS/cuDNN workspaces beyond the first step
  // Measured, not yet explained: LoRA with checkpointing keeps one fp32
  // [T, hidden] tensor from backward to the next forward.
  double lateExtra = 0;
  double tiedEmbeddingGradient = 0; // dense embedding grad meeting the tied one
  // Activation offload (swift-run): the offloaded layers' inputs, on the
  // host (pinned, per GPU), and the ones on the GPU while they cross: the
  // one being copied out in forward, in backward the one being recomputed
  // and the next one prefetched.
  double offloadedInputs = 0;
  double offloadBuffers = 0;
  // QLoRA: bf16 weights dequantized from NF4 while a layer computes (in
  // forward and again in backward).
  double dequantized = 0;
  // fp8-mixed / fp8-bf16: the FP8 copies of the largest decoder GEMM's
  // operands while it runs (in forward and again in backward).
  double fp8Copies = 0;
  // swift-run, checkpointing full or none: a layer's backward has two
  // moments, priced apart (`phased`). In the MLP's (SwiGLU's backward) the
  // SwiGLU output is freed already (down_proj's backward is done) and the
  // gradient of the layer's output is alive; in the attention core's the
  // MLP's saved tensors are gone, and what is left of the layer's (through
  // its attention), the residual stream's gradient, o_proj's input gradient
  // and SDPA's backward buffers are alive.
  bool phased = false;
  double layerInput = 0;        // a layer's input (recompute's, counted apart)
  double swigluOutput = 0;      // freed before SwiGLU's backward (untiled)
  double residualGradient = 0;  // the residual stream's gradient
  double attentionSaved = 0;    // a layer's saved tensors through attention
  double attentionBackward = 0; // dO and SDPA's backward buffers
};

/// Bytes per token selective checkpointing does not keep: the attention
/// core's output and log-sum-exp (o_proj's input), and the SwiGLU product
/// (down_proj's input), each where plan::selectiveDropsResidualInput says
/// its consumer drops it.
double selectivelyRecomputedBytes(const std::vector<OpProfile> &layer,
                                  int64_t seq, int act, bool fp8, bool lora) {
  auto drops = [&](const char *name) {
    for (const OpProfile &op : layer)
      if (op.kind == OpKind::Linear && op.name.find(name) != std::string::npos)
        return plan::selectiveDropsResidualInput(fp8, lora && op.adapter);
    return plan::selectiveDropsResidualInput(fp8, false);
  };
  double bytes = 0;
  for (const OpProfile &op : layer) {
    if (op.kind == OpKind::Attention && drops("o_proj"))
      bytes += act * op.heads * op.headDim + 4.0 * op.heads;
    if (op.kind == OpKind::SiluMul && drops("down_proj"))
      bytes += act * op.outputWidth(seq);
  }
  return bytes;
}

/// Bytes per token a decoder layer's MLP keeps beyond its input when it runs
/// untiled: the gate and up outputs (SwiGLU's saved inputs) and the SwiGLU
/// output (down_proj's saved input), three [T, ffn]. Tiled, it keeps none.
double tiledMlpDroppedPerToken(const std::vector<OpProfile> &layer, int64_t seq,
                               int act) {
  double bytes = 0;
  for (const OpProfile &op : layer)
    if (op.kind == OpKind::SiluMul)
      bytes += 3.0 * act * op.outputWidth(seq);
  return bytes;
}

/// The ops of a decoder layer up to and including its attention core: what
/// is left of a layer's saved tensors once its backward has passed the MLP
/// and o_proj.
std::vector<OpProfile> throughAttention(const std::vector<OpProfile> &layer) {
  std::vector<OpProfile> ops;
  for (const OpProfile &op : layer) {
    ops.push_back(op);
    if (op.kind == OpKind::Attention)
      break;
  }
  return ops;
}

/// Bytes per token SDPA's causal backward allocates beyond its inputs, the
/// saved output and log-sum-exp, and the output's gradient: dq, dk, dv;
/// with GQA in the kernel, dk and dv at the query heads' width (summed over
/// each group after); a fp32 dq accumulator; a fp32 rowsum(dO * O) per head.
/// On an H100 (torch 2.11, cuDNN's SDPA backend, Llama-3.1-8B's heads) the
/// measured peak is 45,184 B/token at S = 16K, 64K and 256K alike:
/// 11.03 x heads x head_dim (benchmarks/runtime/attention_memory.py).
double attentionBackwardPerToken(const OpProfile &op, int act) {
  const double q = double(op.heads) * op.headDim;
  const double kv = double(op.kvHeads) * op.headDim;
  const double expanded = op.kvHeads < op.heads ? 2.0 * act * q : 0;
  return act * (q + 2 * kv) + expanded + 4 * q + 4.0 * op.heads;
}

double tokens(const ModelProfile &m, const Strategy &s) {
  return double(s.microBatchSize) * m.sequenceLength;
}

int64_t kvWidth(const ModelProfile &m) {
  for (const OpProfile &op : m.layer)
    if (op.kind == OpKind::Attention)
      return op.kvHeads * op.headDim;
  return 0;
}

Activations hfActivations(const ModelProfile &m, const TrainingSetup &setup,
                          const Hardware &hw, const Strategy &s, Exec exec) {
  Activations a;
  double T = tokens(m, s);
  int act = activationBytes(exec);
  SavedBytes layer = savedBytes(m.layer, m.sequenceLength, exec, setup,
                                fp8Linears(setup, hw));
  SavedBytes head = savedBytes(m.head, m.sequenceLength, exec, setup);
  int64_t L = m.numLayers;
  int64_t checkpointed = s.checkpointedLayers(L);
  // Full checkpointing keeps each layer's input and, during that layer's
  // backward, everything its recomputed forward saves. Selective
  // checkpointing (swift-run) drops only what the attention core and the
  // SwiGLU product keep, and recomputes just those.
  // MLP tiles (swift-run): the MLP keeps only its input (the normed h, which
  // gate/up save anyway) and recomputes its internals tile by tile in
  // backward, whose temporaries then span one tile.
  const double layerPerToken =
      layer.perToken - (s.mlpTileTokens > 0
                            ? tiledMlpDroppedPerToken(m.layer, m.sequenceLength, act)
                            : 0);
  double keptPerToken = m.hiddenSize * act;
  double recomputedPerToken = layerPerToken;
  if (s.checkpointing == Checkpointing::Selective) {
    recomputedPerToken = std::min(
        layerPerToken,
        selectivelyRecomputedBytes(m.layer, m.sequenceLength, act, fp8Linears(setup, hw),
                                   setup.method != Method::Full));
    keptPerToken = layerPerToken - recomputedPerToken;
  }
  a.layers = checkpointed * T * keptPerToken + (L - checkpointed) * T * layerPerToken;
  a.recompute = checkpointed ? T * recomputedPerToken : 0;
  a.mlpTileTokens = s.mlpTileTokens > 0 ? std::min<double>(T, s.mlpTileTokens) : 0;
  // Activation offload: the offloaded layers' inputs wait on the host. On
  // the GPU, one at a time while it crosses: copied out beside the next
  // layer's forward, prefetched beside the next layer's backward (the
  // recomputed layer's own input is part of `recompute`).
  const int64_t offloaded = s.offloadedLayers(L);
  const double input = T * m.hiddenSize * act;
  a.layers -= offloaded * input;
  a.offloadedInputs = offloaded * input;
  a.offloadBuffers = offloaded > 0 ? input : 0;
  a.perLayer = T * layerPerToken + layer.weightCopies;
  a.perCheckpointedLayer = T * keptPerToken;
  a.layerWeightCopies = layer.weightCopies;
  if (checkpointed < L) // saved by each linear until its backward
    a.layers += (L - checkpointed) * layer.weightCopies;
  a.head = T * head.perToken + head.weightCopies;
  if (exec == Exec::Fused) {
    // Fused linear + cross-entropy over chunks of 2^28 / V tokens: one
    // chunk's bf16 logits (overwritten by their gradient) in flight, and the
    // input gradient (bf16) kept from the head's forward to its backward.
    // The weight gradient goes straight into the gradient buffer at ZeRO-0/1
    // (a sink); at ZeRO-2/3 a bf16 one is kept too. A frozen lm_head (LoRA)
    // has none.
    double chunkTokens = std::min(T, std::floor(double(1 << 28) / m.vocabSize));
    a.lossForward = 2 * chunkTokens * m.vocabSize;
    bool headGradient = s.zero >= 2 && setup.method == Method::Full;
    a.head += 2 * T * m.hiddenSize +
              (headGradient ? 2.0 * m.vocabSize * m.hiddenSize : 0);
  } else {
    // HF: the loop holds the bf16 logits; the loss upcasts them (fp32) and
    // log_softmax's backward holds its incoming gradient and its result.
    a.logitsBytes = 2 * T * m.vocabSize;
    a.lossForward = 4 * T * m.vocabSize;
    a.lossBackward = 8 * T * m.vocabSize;
  }
  // The final norm's output stays referenced by the CausalLM frame while the
  // loss runs, unless it is the bf16 tensor lm_head already saved.
  a.finalHidden = exec == Exec::Bf16 ? 0 : T * m.hiddenSize * act;
  for (const OpProfile &op : m.layer)
    if (op.kind == OpKind::SiluMul)
      a.ffnWidth = op.outputWidth(m.sequenceLength);
  if (exec == Exec::Lora && checkpointed)
    a.lateExtra = 4 * T * m.hiddenSize;
  if (exec == Exec::Fused && s.checkpointing != Checkpointing::Selective) {
    a.phased = true;
    a.layerInput = T * m.hiddenSize * act;
    a.swigluOutput = s.mlpTileTokens > 0 ? 0 : T * a.ffnWidth * act;
    a.residualGradient = T * m.hiddenSize * act;
    a.attentionSaved =
        T * savedBytes(throughAttention(m.layer), m.sequenceLength, exec, setup,
                       fp8Linears(setup, hw))
                .perToken;
    for (const OpProfile &op : m.layer)
      if (op.kind == OpKind::Attention)
        a.attentionBackward =
            T * (act * double(op.heads) * op.headDim + attentionBackwardPerToken(op, act));
  }
  // QLoRA computes with copies of the NF4 linears in the compute dtype:
  // bitsandbytes dequantizes one linear at a time to bf16 (peft under HF and
  // DeepSpeed); swift-run materializes the layer's whole base buffer (its
  // stacked GEMMs read it; norms included) around the layer's forward and
  // again around its backward.
  if (setup.method == Method::QLora) {
    double largest = 0;
    for (const OpProfile &op : m.layer)
      if (op.kind == OpKind::Linear)
        largest = std::max<double>(largest, op.weightElements);
    double computeBytes = setup.precision == Precision::Fp32 ? 4 : 2;
    a.dequantized = exec == Exec::Lora ? 2 * largest
                                       : computeBytes * m.layerParameters;
  }
  // FP8 GEMMs (swift-run) cast their operands per GEMM and free the copies
  // after it: while one decoder GEMM runs, its weight in e4m3 in both
  // layouts (2 N K bytes), the input and its transpose (2 T K) and the
  // output gradient in e5m2 in both layouts (2 T N; backward). Stored
  // bytes are the storage twin's (storagePrecision()).
  if (fp8Linears(setup, hw))
    for (const Gemm &g : decoderGemms(m))
      a.fp8Copies = std::max(a.fp8Copies, 2 * g.outFeatures * g.inFeatures +
                                              2 * T * g.inFeatures +
                                              2 * T * g.outFeatures);
  // HF turns the KV cache off only when checkpointing; under autocast the
  // cache holds fp32 k/v of its own, otherwise the very tensors SDPA saved.
  if (!checkpointed) {
    a.kvCache = 2 * T * kvWidth(m) * (exec == Exec::Autocast ? 4 : 2) * L;
    a.kvShared = exec != Exec::Autocast;
  }
  return a;
}

/// Unsharded-parameter and reduce-scatter traffic of a sharded backend
/// (FSDP2, swift-run ZeRO-3) around each point of the step.
struct Sharding {
  double forward = 0;      // gathered bytes alive at the loss
  double lossBackward = 0; // ... at its backward (prefetch of the last layer)
  // At the start of the backward of the layer with `done` layers behind it;
  // constant or affine in `done` from kIrregularLayers on, computed so that
  // it is monotone.
  std::function<double(int64_t done)> layerBackward = [](int64_t) { return 0.0; };
};

/// The HF training step (also DeepSpeed's, which runs the same model code):
/// `out = model(ids, labels); out.loss.backward(); opt.step()`, where the
/// previous step's `out` (bf16 logits, KV cache) lives until the assignment.
/// Gradients: `headGrad` is allocated first (the head's backward), then
/// `layerGrad` per layer. Without `timeline` the layers' backward is priced
/// at its breakpoints only, in time independent of the layer count.
MemoryEstimate walkHF(const ModelProfile &m, const States &st,
                      const Activations &a, const Sharding &sharded,
                      double headGrad, double layerGrad, const Strategy &s,
                      Exec exec, bool timeline) {
  int64_t L = m.numLayers;
  double T = tokens(m, s);
  // swift-run keeps no outputs: its logits die inside the loss.
  double outHeld = a.holdsOutputs ? a.logitsBytes + a.kvCache : 0;
  double outNew = a.logitsBytes + (a.kvShared ? 0 : a.kvCache);
  double outBackward = a.holdsOutputs ? outNew : 0;
  Parts base = {{"parameters", st.parameters},
                {"optimizer_states", st.optimizer},
                {"gradient_accumulators", st.persistentGradients}};
  std::vector<Candidate> candidates;
  bool autocastCheckpointed = exec == Exec::Autocast && s.checkpointedLayers(L);

  // Inside cross_entropy: the fp32 upcast and log_softmax's output. Under
  // autocast with checkpointing the autocast cache still holds every layer's
  // bf16 weight copy.
  Candidate fwd{{"forward", -1, "cross_entropy"}, base};
  fwd.parts.insert(
      fwd.parts.end(),
      {{"previous_outputs", outHeld + a.lateExtra},
       {"outputs", outNew},
       {"activations", a.layers + a.head + a.finalHidden +
                           (autocastCheckpointed ? L * a.layerWeightCopies : 0)},
       {"loss_temporaries", a.lossForward},
       {"gradients", st.lossGradients},
       {"gathered_parameters", sharded.forward},
       {"offload_buffers", a.offloadBuffers}});
  candidates.push_back(fwd);

  // The forward, layer by layer, for the timeline: the saved tensors of
  // the layers done (the average layer's share of a.layers), with QLoRA's
  // or FP8's per-layer copies. Below the loss's forward, except the last
  // layer's with those copies, which is a candidate of its own (below).
  const bool layerCopies = a.dequantized > 0 || a.fp8Copies > 0;
  std::vector<Candidate> forwardLayers;
  for (int64_t i = 0; timeline && i < L; ++i) {
    Candidate layer{{"forward", i, "decoder layer"}, base};
    layer.parts.insert(layer.parts.end(),
                       {{"previous_outputs", outHeld + a.lateExtra},
                        {"activations", a.layers * double(i + 1) / double(L)},
                        {"gathered_parameters", sharded.forward},
                        {"offload_buffers", a.offloadBuffers}});
    if (layerCopies)
      layer.parts.insert(layer.parts.end(),
                         {{"dequantized_weights", a.dequantized},
                          {"fp8_copies", a.fp8Copies},
                          {"workspace", a.workspace}});
    forwardLayers.push_back(layer);
  }

  // QLoRA, FP8 GEMMs: the last layer's forward, with its dequantized
  // weights or FP8 copies, before the head's temporaries exist.
  if (layerCopies) {
    Candidate layer{{"forward", L - 1, "decoder layer"}, base};
    layer.parts.insert(layer.parts.end(),
                       {{"previous_outputs", outHeld + a.lateExtra},
                        {"activations", a.layers},
                        {"gathered_parameters", sharded.forward},
                        {"offload_buffers", a.offloadBuffers},
                        {"dequantized_weights", a.dequantized},
                        {"fp8_copies", a.fp8Copies},
                        {"workspace", a.workspace}});
    candidates.push_back(layer);
  }

  // LogSoftmaxBackward: the incoming gradient and its result, both fp32.
  Candidate loss{{"backward", -1, "log_softmax"}, base};
  loss.parts.insert(loss.parts.end(),
                    {{"outputs", outBackward},
                     {"activations", a.layers + a.head},
                     {"loss_temporaries", a.lossBackward},
                     {"gradients", st.lossGradients},
                     {"gathered_parameters", sharded.lossBackward},
                     {"offload_buffers", a.offloadBuffers},
                     {"workspace", a.workspace}});
  candidates.push_back(loss);

  // Each layer's backward (layers run L-1 .. 0): earlier layers' saved
  // tensors still alive, the gradients of later layers and the head
  // allocated, this layer's recompute, gradient and SwiGLU backward
  // temporaries (three bf16 [T, ffn]) in flight. swift-run's (`phased`):
  // the larger of the MLP's moment and the attention core's.
  double perLayer = a.layers / L - (a.kvShared ? a.kvCache / L : 0);
  // Tiled (swift-run), one tile's: its recomputed gate/up output and SwiGLU
  // output, and their gradients, six bf16 [tile, ffn].
  double mlpBackward = a.mlpTileTokens > 0 ? 6 * 2 * a.mlpTileTokens * a.ffnWidth
                                           : 3 * 2 * T * a.ffnWidth;
  auto gradientsAt = [&](int64_t done) {
    return st.layerGradients ? st.layerGradients(done)
                             : headGrad + (done + 1) * layerGrad;
  };
  const bool fullyCheckpointed = a.recompute > 0 && s.checkpointing == Checkpointing::Full;
  const int64_t offloaded = s.offloadedLayers(L);
  double baseTotal = 0; // Candidate::total()'s sum, `base` first
  for (const auto &p : base)
    baseTotal += p.second;
  // The parts of the backward of the layer with `done` layers behind it
  // after `base`, in a Candidate's order; `attention`: swift-run's attention
  // core's moment, else the MLP's.
  using LayerParts = std::array<std::pair<const char *, double>, 9>;
  auto layerParts = [&](int64_t done, bool attention) {
    const double layers = (L - done) * perLayer;
    // The layer's own saved tensors: recomputed, or kept since the forward.
    // A kept input is the recompute's input too (counted once); an
    // offloaded one comes back into a buffer of its own.
    const bool inputKept = L - 1 - done >= offloaded;
    const double recomputedInput = fullyCheckpointed && inputKept ? a.layerInput : 0;
    const double own = a.recompute - recomputedInput;
    // The residual stream's gradient: the layer's output gradient, and
    // tiled, the MLP input's gradient the tiles fill. Untiled, measured
    // on the H100 and not yet explained: one more tensor of its size (the
    // peaks of 32K and 131K QLoRA; 48K capped to 24 GB, 32K with every
    // input offloaded and 64K full fine-tuning agree: docs/cost-model.md).
    double activations = layers + own - a.swigluOutput;
    std::pair<const char *, double> temporaries = {
        "backward_temporaries", mlpBackward + 2 * a.residualGradient};
    if (attention) {
      // What the layer keeps past its attention is gone: recomputed, only
      // the part through attention was; kept, the rest is freed.
      // The residual stream's gradient twice: the layer's output gradient
      // (held by the unit's backward throughout) and the MLP's input's.
      const double ownThroughAttention =
          fullyCheckpointed ? a.attentionSaved - recomputedInput
                            : a.attentionSaved - (a.perLayer - a.layerWeightCopies);
      activations = layers + ownThroughAttention;
      temporaries = {"attention_backward",
                     a.attentionBackward + 2 * a.residualGradient};
    }
    return LayerParts{{{"previous_outputs", outHeld},
                       {"gradients", gradientsAt(done)},
                       {"activations",
                        activations + (autocastCheckpointed ? a.layerWeightCopies : 0)},
                       temporaries,
                       {"gathered_parameters", sharded.layerBackward(done)},
                       {"offload_buffers", a.offloadBuffers},
                       {"dequantized_weights", a.dequantized},
                       {"fp8_copies", a.fp8Copies},
                       {"workspace", a.workspace}}};
  };
  auto sum = [&](const LayerParts &parts) {
    double t = baseTotal;
    for (const auto &p : parts)
      t += p.second;
    return t;
  };
  // A layer's backward: its total and whether the attention core's moment
  // (swift-run's, `phased`) is the larger.
  auto layerAt = [&](int64_t done) {
    double total = sum(layerParts(done, false));
    if (a.phased) {
      double attention = sum(layerParts(done, true));
      if (attention > total)
        return std::pair{attention, true};
    }
    return std::pair{total, false};
  };
  // The worst layer: the first whose total is the largest.
  int64_t worstDone = -1;
  bool worstAttention = false;
  double worstTotal = -1;
  auto consider = [&](int64_t done) {
    auto [total, attention] = layerAt(done);
    if (total > worstTotal) {
      worstTotal = total;
      worstDone = done;
      worstAttention = attention;
    }
    return total;
  };
  std::vector<double> backwardLayers; // the timeline's, every layer's total
  if (timeline) {
    for (int64_t done = 0; done < L; ++done)
      backwardLayers.push_back(consider(done));
  } else {
    // The same worst layer from its breakpoints. Past the first
    // kIrregularLayers, each part is affine in `done` on the pieces where
    // the layer's input is kept and where it is offloaded, and its value
    // as computed is monotone; so is the total (the larger of two moments
    // with one slope). A piece whose parts do not change is priced once; a
    // slope well above rounding (kRounding of the parts' magnitude) makes
    // the total strictly monotone, and its first or last layer the worst;
    // otherwise every layer of the piece is priced.
    constexpr double kRounding = 1e-9; // rounding is ~40 x 2^-53 at most
    auto magnitude = [&](int64_t done) {
      double m = std::abs(baseTotal) + std::abs((L - done) * perLayer) +
                 std::abs(a.recompute) + std::abs(a.layerInput) +
                 std::abs(a.swigluOutput) + std::abs(a.attentionSaved) +
                 std::abs(a.perLayer) + std::abs(a.layerWeightCopies);
      for (bool attention : {false, true})
        for (const auto &p : layerParts(done, attention))
          m += std::abs(p.second);
      return m;
    };
    const int64_t irregular = std::min(kIrregularLayers, L);
    for (int64_t done = 0; done < irregular; ++done)
      consider(done);
    // Pieces: the input kept (done < L - offloaded), then offloaded.
    const int64_t split = std::clamp(L - offloaded, irregular, L);
    for (auto [first, last] : {std::pair{irregular, split - 1},
                               std::pair{split, L - 1}}) {
      if (first > last)
        continue;
      if (first == last) {
        consider(first);
        continue;
      }
      const double g0 = gradientsAt(first), g1 = gradientsAt(last);
      const double s0 = sharded.layerBackward(first), s1 = sharded.layerBackward(last);
      if (g0 == g1 && s0 == s1 && (L - first) * perLayer == (L - last) * perLayer) {
        consider(first); // every layer's parts are the same
        continue;
      }
      const double v0 = layerAt(first).first, v1 = layerAt(last).first;
      const double slope = (v1 - v0) / double(last - first);
      const double bound =
          8 * kRounding * std::max(magnitude(first), magnitude(last));
      if (slope < -bound) {
        consider(first);
      } else if (slope > bound) {
        consider(last);
      } else {
        for (int64_t done = first; done <= last; ++done)
          consider(done);
      }
    }
  }
  Candidate worst;
  if (worstDone >= 0) {
    worst = {{"backward", L - 1 - worstDone, "decoder layer"}, base};
    for (const auto &[name, bytes] : layerParts(worstDone, worstAttention))
      worst.parts.push_back({name, bytes});
  }
  candidates.push_back(worst);

  // End of backward: the embedding's dense gradient meets the tied head's
  // gradient before they are summed.
  if (a.tiedEmbeddingGradient > 0) {
    Candidate embed{{"backward", -1, "embedding"}, base};
    embed.parts.insert(embed.parts.end(),
                       {{"previous_outputs", outHeld},
                        {"gradients", st.gradients + a.tiedEmbeddingGradient},
                        {"workspace", a.workspace}});
    candidates.push_back(embed);
  }

  Candidate opt{{"optimizer", -1, "step"}, base};
  opt.parts.insert(opt.parts.end(),
                   {{"previous_outputs", outHeld + a.lateExtra},
                    {"gradients", (st.finalGradients >= 0 ? st.finalGradients
                                                          : st.gradients) +
                                      st.gradientBuffers},
                    {"optimizer_temporaries", st.optimizerTemporaries},
                    {"workspace", a.workspace}});
  candidates.push_back(opt);

  const Candidate *peak = &candidates[0];
  for (const Candidate &c : candidates)
    if (c.total() > peak->total())
      peak = &c;
  MemoryEstimate mem;
  mem.peakBytes = toBytes(peak->total());
  mem.peak = peak->at;
  for (const auto &[name, bytes] : peak->parts)
    if (bytes > 0)
      mem.breakdown.push_back({name, toBytes(bytes)});
  mem.modelStateBytes = toBytes(st.parameters + st.gradients +
                                st.persistentGradients + st.optimizer);
  double forward = 0, backward = 0;
  for (const Candidate &c : candidates) {
    if (c.at.phase == "forward")
      forward = std::max(forward, c.total());
    if (c.at.phase == "backward")
      backward = std::max(backward, c.total());
  }
  mem.forwardPeakBytes = toBytes(forward);
  mem.backwardPeakBytes = toBytes(backward);
  mem.optimizerPeakBytes = toBytes(candidates.back().total());
  // The timeline: the candidates in step order, every layer's included.
  auto point = [&](const Candidate &c) { mem.timeline.push_back({c.at, toBytes(c.total())}); };
  for (const Candidate &c : forwardLayers)
    point(c);
  for (size_t i = 0; timeline && i < candidates.size(); ++i) {
    const Candidate &c = candidates[i];
    if (c.at.phase == "forward" && c.at.op == "decoder layer")
      continue; // forwardLayers' last
    if (c.at.phase == "backward" && c.at.op == "decoder layer") {
      for (size_t done = 0; done < backwardLayers.size(); ++done)
        mem.timeline.push_back({{"backward", L - 1 - int64_t(done), "decoder layer"},
                                toBytes(backwardLayers[done])});
      continue;
    }
    point(c);
  }
  mem.layerActivationBytes = toBytes(a.perLayer);
  mem.checkpointedLayerBytes = toBytes(a.perCheckpointedLayer);
  mem.headActivationBytes = toBytes(a.head);
  return mem;
}

/// Elements whose gradients the head's backward allocates first: the lm_head
/// weight (the embedding table when tied) and the final norm.
double headGradientElements(const ModelProfile &m) {
  double table = double(m.vocabSize) * m.hiddenSize;
  bool tied = m.headParameters < table;
  return table + (tied ? m.headParameters : m.headParameters - table);
}

bool tiedEmbeddings(const ModelProfile &m) {
  return m.headParameters < double(m.vocabSize) * m.hiddenSize;
}

/// HF without sharding (one process or DDP) and FSDP2 for ZeRO-2/3.
MemoryEstimate memoryHF(const ModelProfile &m, const TrainingSetup &setup,
                        const Hardware &hw, const Strategy &s, Exec exec,
                        bool timeline) {
  double P = m.parameters, A = m.adapterParameters;
  double N = shardRanks(s, hw);
  int64_t L = m.numLayers;
  bool offload = s.offload != Offload::None;
  Activations a = hfActivations(m, setup, hw, s, exec);
  States st;
  Sharding sharded;
  double headGrad = 0, layerGrad = 0;
  if (exec == Exec::Lora) {
    // peft: the frozen bf16 base (QLoRA: decoder linears in NF4, embedding,
    // lm_head and norms in bf16), fp32 adapters with fused AdamW states.
    // FSDP2 (ZeRO-2/3) shards the frozen base with the adapters (PEFT's FSDP
    // recipes; FSDP + QLoRA stores NF4 in shardable storage) and gathers one
    // layer at a time like a full model's; only the adapters have gradients
    // to reduce-scatter.
    FrozenBase base = frozenBase(m, setup.method, 2);
    double adapterLayer = A / L;
    if (s.zero >= 2) {
      if (!offload) {
        st.parameters = (base.total + 4 * A) / N;
        st.optimizer = 8 * A / N;
        st.gradients = 4 * A / N;
        st.optimizerTemporaries = 4 * A / N;
      }
      st.host = offload ? (base.total + 16 * A) / N : 0;
      bool keepAll = s.zero == 2 && !offload;
      double root = base.embedding + base.head;
      double unsharded = base.layer + 2 * adapterLayer;
      sharded.forward = root + (keepAll ? (L + 1) * unsharded : unsharded);
      sharded.lossBackward = root + (keepAll ? L * unsharded : unsharded);
      double reduceScatter = 2 * adapterLayer + 2 * 4 * adapterLayer;
      sharded.layerBackward = [=](int64_t done) {
        return root + (keepAll ? (L - done) * unsharded : 2 * unsharded) +
               reduceScatter;
      };
    } else {
      st.parameters = base.total + 4 * A;
      st.optimizer = 8 * A;
      st.gradients = 4 * A;
    }
    layerGrad = st.gradients / L;
  } else if (s.zero >= 2) {
    // FSDP2: fp32 shards of parameters, gradients and AdamW states; foreach
    // AdamW makes one fp32 temporary per shard.
    double root = m.embeddingParameters + m.headParameters;
    double layer = m.layerParameters;
    if (!offload) {
      st.parameters = 4 * P / N;
      st.optimizer = 8 * P / N;
      st.gradients = 4 * P / N;
      st.optimizerTemporaries = 4 * P / N;
      headGrad = 4 * root / N;
      layerGrad = 4 * layer / N;
    }
    st.host = offload ? 16 * P / N : 0;
    // bf16 unsharded parameters. The root group (embedding, final norm,
    // head) is never resharded after forward. reshard_after_forward=False
    // (ZeRO-2) keeps every layer gathered until its backward, plus one more
    // layer-sized buffer at the end of forward; otherwise backward prefetch
    // holds the last layer at the loss, and a layer plus the next one in
    // backward, with the reduce-scatter's bf16 gradient and two fp32
    // buffers.
    bool keepAll = s.zero == 2 && !offload;
    double unsharded = 2 * layer;
    sharded.forward = 2 * root + (keepAll ? (L + 1) * unsharded : unsharded);
    sharded.lossBackward = 2 * root + (keepAll ? L * unsharded : unsharded);
    double reduceScatter = 2 * layer + 2 * 4 * layer;
    sharded.layerBackward = [=](int64_t done) {
      return 2 * root + (keepAll ? (L - done) * unsharded : 2 * unsharded) +
             reduceScatter;
    };
  } else {
    int e = exec == Exec::Bf16 ? 2 : 4; // parameter and gradient bytes
    st.parameters = e * P;
    st.optimizer = 2 * e * P; // fused AdamW exp_avg, exp_avg_sq
    st.gradients = e * P;
    // Several GPUs: DDP with gradient_as_bucket_view=True, whose gradients
    // are views of its buckets (the default, False, adds a gradient-sized
    // copy). The calibration runs at world > 1 use no DDP wrapper at all,
    // which holds the same bytes.
    headGrad = e * headGradientElements(m);
    layerGrad = (st.gradients - headGrad) / L;
    if (tiedEmbeddings(m))
      a.tiedEmbeddingGradient = e * double(m.vocabSize) * m.hiddenSize;
  }
  MemoryEstimate mem = walkHF(m, st, a, sharded, headGrad, layerGrad, s, exec, timeline);
  mem.hostBytes = hostBytesPerNode(st.host, hw);
  return mem;
}

/// DeepSpeed ZeRO's model-state layout (bf16 parameters and gradients, fp32
/// master/momentum/variance partitions) under HF's activations. Under
/// LoRA/QLoRA (peft) only the adapters train: gradients and optimizer
/// partitions are theirs alone; the frozen base (bf16, QLoRA's decoder
/// linears NF4) stays whole at ZeRO-0-2 and is partitioned like every
/// parameter at ZeRO-3.
MemoryEstimate memoryDeepSpeed(const ModelProfile &m, const TrainingSetup &setup,
                               const Hardware &hw, const Strategy &s, Exec exec,
                               bool timeline) {
  bool lora = setup.method != Method::Full;
  // Its partitions span every rank, hpZ or not (below).
  double N = hw.worldSize();
  double P = lora ? m.adapterParameters : m.parameters; // trained
  FrozenBase base = frozenBase(m, setup.method, 2);
  // The largest unit, which ZeRO-3 gathers (and prefetches) whole, in bytes.
  double largest =
      lora ? std::max(base.layer + 2.0 * m.adapterParameters / m.numLayers,
                      std::max(base.embedding, base.head))
           : 2 * std::max<double>({double(m.layerParameters),
                                   double(m.embeddingParameters),
                                   double(m.headParameters)});
  States st;
  bool offload = s.offload != Offload::None;
  switch (s.zero) {
  case 0:
    st.parameters = 2 * P + base.total;
    st.gradients = 2 * P;
    st.optimizer = 16 * P;
    break;
  case 1:
    st.parameters = 2 * P + base.total;
    st.gradients = 2 * P;
    st.optimizer = offload ? 0 : 16 * P / N;
    break;
  case 2:
    st.parameters = 2 * P + base.total;
    st.gradients = offload ? 0 : 2 * P / N;
    st.optimizer = offload ? 0 : 16 * P / N;
    break;
  default:
    st.parameters = 2 * largest +
                    (s.offload == Offload::OptimizerAndParams ? 0 : base.total / N);
    if (!offload) {
      st.gradients = 2 * P / N;
      st.optimizer = 16 * P / N;
    } else if (s.offload == Offload::Optimizer) {
      st.parameters += 2 * P / N;
    }
    break;
  }
  st.host = offload ? 16 * P / N : 0;
  if (s.zero == 3 && s.offload == Offload::OptimizerAndParams)
    st.host += base.total / N;
  // ZeRO++ hpZ (shard groups at ZeRO-3): each rank also keeps its slice of
  // every weight over its group of shardRanks() ranks, in the weights'
  // dtype, from the unit's first release until the step
  // (partition_parameters.py _partition_param_sec: on the parameters'
  // device, the host when they are offloaded).
  if (s.zero == 3 && s.layout.replicas(hw.worldSize()) > 1) {
    double secondary = (2 * P + base.total) / shardRanks(s, hw);
    (s.offload == Offload::OptimizerAndParams ? st.host : st.parameters) +=
        secondary;
  }
  // The contiguous gradient bucket ZeRO-1/2 reduces through.
  if (s.zero == 1 || s.zero == 2)
    st.gradientBuffers = std::min<double>(s.bucketBytes, 2 * P);
  Activations a = hfActivations(m, setup, hw, s, exec);
  double headGrad = s.zero < 2 && !lora ? 2 * headGradientElements(m) : 0;
  double layerGrad = (st.gradients - headGrad) / m.numLayers;
  MemoryEstimate mem = walkHF(m, st, a, Sharding{}, headGrad, layerGrad, s, exec, timeline);
  mem.hostBytes = hostBytesPerNode(st.host, hw);
  return mem;
}

/// swift-run's engine (runtime/include/swift/Runtime/engine/Engine.h): bf16
/// compute parameters (ZeRO-3: shards plus gathered units), the optimizer
/// partition (fp32 master, exp_avg, exp_avg_sq; pure bf16: bf16 moments
/// only), gradient accumulators (ZeRO-0/1: full; ZeRO-1-3: the reduced
/// shard; ZeRO-2/3: one unit's micro-batch gradient in flight).
/// LoRA/QLoRA: those rules apply to the adapters (what trains); the frozen
/// base (compute dtype, QLoRA's decoder linears NF4) has no gradients and no
/// optimizer states, is whole at ZeRO-0-2 and sharded like parameters at
/// ZeRO-3 (gathered per unit, released after it).
MemoryEstimate memorySwiftRun(const ModelProfile &m, const TrainingSetup &setup,
                              const Hardware &hw, const Strategy &s, Exec exec,
                              bool timeline) {
  double W = shardRanks(s, hw);
  bool lora = setup.method != Method::Full;
  bool pureBf16 = plan::storagePrecision(setup.precision) == Precision::Bf16;
  double e = setup.precision == Precision::Fp32 ? 4 : 2; // compute bytes
  double g = pureBf16 ? 2 : 4;                            // gradient bytes
  FrozenBase base = frozenBase(m, setup.method, e); // zero for full jobs
  double adapterLayer = lora ? double(m.adapterParameters) / m.numLayers : 0;
  // What trains, and its largest unit.
  double P = lora ? m.adapterParameters : m.parameters;
  double unit = lora ? adapterLayer
                     : std::max<double>({double(m.layerParameters),
                                         double(m.embeddingParameters),
                                         double(m.headParameters)});
  // The largest unit ZeRO-3 gathers, in bytes.
  double unitBytes = lora ? std::max(base.layer + e * adapterLayer,
                                     std::max(base.embedding, base.head))
                          : e * unit;
  double optimizerElems = s.zero == 0 ? P : P / W;
  bool paramsOffloaded = s.offload == Offload::OptimizerAndParams;
  States st;
  Sharding sharded;
  if (s.zero == 3) {
    st.parameters = paramsOffloaded ? 0 : (e * P + base.total) / W;
    double gathered = (s.prefetchDepth + 1) * unitBytes;
    sharded.forward = sharded.lossBackward = gathered;
    sharded.layerBackward = [=](int64_t) { return gathered; };
  } else {
    st.parameters = e * P + base.total;
  }
  // On the device, AdamW's exp_avg and exp_avg_sq in the parameters' dtype
  // plus an fp32 master: pure bf16 keeps bf16 moments and updates the bf16
  // parameters in place (4 B per element), bf16-mixed fp32 moments and the
  // master's 16 low bits, its high half being the compute copy (10 B;
  // plan::masterInComputeCopy), fp32 a separate master (12 B). Offloaded, swift-run's Engine keeps per element of its
  // optimizer partition, pinned on the host: the fp32 master and two
  // moments (12 B), the fp32 gradient it downloads (4 B) and, for a bf16
  // compute copy, the bf16 values it uploads (2 B); with the parameters
  // offloaded (ZeRO-3) also its parameter shard and the frozen base's.
  if (s.offload == Offload::None)
    st.optimizer = (pureBf16 ? 4
                    : plan::masterInComputeCopy(setup.precision, s.offload)
                        ? 10
                        : 12) *
                   optimizerElems;
  else
    st.host = (16 + (e == 2 ? 2 : 0)) * optimizerElems +
              (s.zero == 3 && paramsOffloaded ? (e * P + base.total) / W : 0);
  // Gradients. The reduced shard (ZeRO 1-3) lives from the engine's start;
  // ZeRO-2/3 add one unit's micro-batch gradient in flight to its
  // reduce-scatter. The full gradient of ZeRO-0/1 is allocated unit by unit
  // in the step's backward (the head's in the loss's forward, which writes
  // the lm_head's gradient) and freed after the optimizer: with gradient
  // accumulation it is whole through every later micro-batch.
  st.persistentGradients = s.zero >= 1 ? g * P / W : 0;
  double headGrad = 0, layerGrad = 0;
  const bool tied = tiedEmbeddings(m) && !lora;
  const double layerG = g * (lora ? adapterLayer : double(m.layerParameters));
  const double embeddingG = lora ? 0 : g * double(m.embeddingParameters);
  if (s.zero >= 2) {
    // Micro-batch gradients, each from its unit's first gradient to its
    // reduce-scatter's end: the current layer's and the last
    // plan::kReductionsInFlight units' in flight (the untied head's among
    // them while it is recent), and a tied table's from the head's
    // backward to the embedding's. Accumulating, the last reductions (the
    // embedding's and three layers') are still in flight through the next
    // micro-batch's forward and loss.
    const int64_t R = plan::kReductionsInFlight;
    const double headG =
        lora ? 0 : g * double(tied ? m.headParameters : headGradientElements(m));
    const double tableG = tied ? embeddingG : 0;
    // In flight when a micro-batch's backward starts: nothing in the first,
    // the previous one's last R (three layers', then the embedding's) in
    // the later ones.
    std::vector<double> carried;
    if (s.gradientAccumulation > 1) {
      carried.assign(R - 1, layerG);
      carried.push_back(embeddingG);
    }
    st.gradients = g * unit;
    st.layerGradients = [=](int64_t done) {
      // Queued before this layer's backward: `carried`, the head's, then
      // `done` layers'; the last R of them are in flight, added up in queue
      // order (O(R), not O(done)).
      const int64_t carriedCount = int64_t(carried.size());
      const int64_t queued = carriedCount + 1 + done;
      double inFlight = 0;
      for (int64_t i = std::max<int64_t>(queued - R, 0); i < queued; ++i)
        inFlight += i < carriedCount    ? carried[size_t(i)]
                    : i == carriedCount ? headG
                                        : layerG;
      return tableG + layerG + inFlight; // + this layer's, being written
    };
    for (double c : carried)
      st.lossGradients += c;
  } else if (s.gradientAccumulation > 1) {
    st.persistentGradients += g * P;
  } else {
    st.gradients = g * P;
    headGrad = lora ? 0 : g * headGradientElements(m);
    layerGrad = layerG;
    st.lossGradients = headGrad;
    if (plan::updatesInBackward(s.zero, hw.worldSize(), s.offload,
                                setup.clipsGradients)) {
      // The update in backward frees each unit's gradient once updated,
      // beside the next unit's backward: a layer's backward holds its own
      // and the previous unit's, plus a tied head's (final only after the
      // embedding's backward); the optimizer step the embedding's.
      st.layerGradients = [=](int64_t done) {
        return (tied || done == 0 ? headGrad : 0) +
               double(std::min<int64_t>(done + 1, 2)) * layerGrad;
      };
      st.finalGradients = tied ? headGrad : embeddingG;
    }
  }
  Activations a = hfActivations(m, setup, hw, s, exec);
  a.holdsOutputs = false;
  a.kvCache = 0;
  MemoryEstimate mem = walkHF(m, st, a, sharded, headGrad, layerGrad, s, exec, timeline);
  // Offloaded layer inputs: pinned host buffers, one per offloaded layer.
  mem.hostBytes = hostBytesPerNode(st.host + a.offloadedInputs, hw);
  mem.offloadedActivationBytes = toBytes(a.offloadedInputs);
  return mem;
}

} // namespace

FrozenBase frozenBase(const ModelProfile &m, Method method,
                      double bytesPerElement) {
  FrozenBase b;
  if (method == Method::Full)
    return b;
  double quantized = 0;
  if (method == Method::QLora)
    for (const OpProfile &op : m.layer)
      if (op.kind == OpKind::Linear)
        quantized += op.weightElements;
  b.layerQuantizedElements = quantized;
  b.layer = bytesPerElement * (m.layerParameters - quantized) +
            kNf4BytesPerElement * quantized;
  b.embedding = bytesPerElement * m.embeddingParameters;
  b.head = bytesPerElement * m.headParameters;
  b.total = b.embedding + b.head + m.numLayers * b.layer;
  return b;
}

MemoryEstimate memoryFor(const ModelProfile &m, const TrainingSetup &setup,
                         const Hardware &hw, const Strategy &s, bool timeline) {
  Exec exec = execution(setup, s);
  MemoryEstimate mem;
  switch (setup.backend) {
  case Backend::HF:
    mem = memoryHF(m, setup, hw, s, exec, timeline);
    break;
  case Backend::DeepSpeed:
    mem = memoryDeepSpeed(m, setup, hw, s, exec, timeline);
    break;
  case Backend::SwiftRun:
    mem = memorySwiftRun(m, setup, hw, s, exec, timeline);
    break;
  case Backend::Torchtitan:
  case Backend::Megatron:
    mem = meshMemory(m, setup, hw, s);
    break;
  }
  // The CUDA context, NCCL and cuBLAS handles live outside the caching
  // allocator; ~1 GiB is what the allocator cannot have.
  mem.capacityBytes = hw.memoryBytes - (int64_t(1) << 30);
  return mem;
}

} // namespace swift::cost::detail
