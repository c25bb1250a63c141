//===- Parallel.cpp - one rank of a device mesh (torchtitan, Megatron) ----===//
//
// A rank of a tp x cp x pp mesh runs its share of each op (rankProfile), the
// decoder layers of its pipeline stage (stageLayers), with the micro-batches
// its schedule keeps in flight (chunksInFlight), on the model states its
// backend keeps (meshStates). meshMemory prices pipeline stage 0 (the most
// in flight, the embedding) and the last stage (the head and the loss) and
// reports the larger. Sources: docs/cost-model.md, "Meshes (torchtitan,
// Megatron)".
//
//===----------------------------------------------------------------------===//

#include "swift/Cost/Parallel.h"

#include "Detail.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace swift::cost {

bool meshBackend(Backend backend) {
  return backend == Backend::Torchtitan || backend == Backend::Megatron;
}

namespace {

bool nameHas(const OpProfile &op, const char *part) {
  return op.name.find(part) != std::string::npos;
}

/// Megatron's column-parallel linears (the output features split): q, k, v,
/// gate, up and the lm_head. Row-parallel: o and down.
bool columnLinear(const OpProfile &op) {
  return op.kind == OpKind::Linear &&
         (nameHas(op, "q_proj") || nameHas(op, "k_proj") ||
          nameHas(op, "v_proj") || nameHas(op, "gate_proj") ||
          nameHas(op, "up_proj") || op.name == "lm_head");
}

bool rowLinear(const OpProfile &op) {
  return op.kind == OpKind::Linear &&
         (nameHas(op, "o_proj") || nameHas(op, "down_proj"));
}

/// One op's share on a rank of `layout`.
OpProfile rankOp(OpProfile op, const Layout &l, int64_t seq, bool sp) {
  const int64_t tp = l.tp, cp = l.cp;
  // Per-sample elements of the rank's S / cp tokens, of a width split by
  // `width` ranks.
  auto split = [&](int64_t elements, int64_t width) {
    return elements / cp / width;
  };
  const int64_t tokensTp = sp ? tp : 1; // the residual stream's split under SP
  int64_t outputSplit = 1;
  int64_t savedSplit = 1; // what the op keeps for backward, beyond S / cp
  switch (op.kind) {
  case OpKind::Linear:
    if (columnLinear(op)) {
      op.outFeatures /= tp;
      op.weightElements /= tp;
      op.biasElements /= tp;
      outputSplit = tp;
      op.inputElements = split(op.inputElements, 1); // the gathered input
    } else if (rowLinear(op)) {
      op.inFeatures /= tp;
      op.weightElements /= tp;
      op.inputElements = split(op.inputElements, tp);
      savedSplit = tp; // its input, [T, in / tp]
    } else {
      op.inputElements = split(op.inputElements, 1);
    }
    op.outputElements = split(op.outputElements, outputSplit);
    op.forwardFlops /= tp * cp;
    op.backwardFlops /= tp * cp;
    op.backwardFlopsFrozen /= tp * cp;
    break;
  case OpKind::Attention:
    op.heads /= tp;
    op.kvHeads = std::max<int64_t>(1, op.kvHeads / tp);
    op.inputElements = split(op.inputElements, tp);
    op.outputElements = split(op.outputElements, tp);
    savedSplit = tp;
    // The rank's S / cp queries against all S keys; causal over balanced
    // chunks: 1 / cp of the pairs.
    if (cp > 1)
      op.keyLength = seq;
    op.forwardFlops /= tp * cp;
    op.backwardFlops /= tp * cp;
    op.backwardFlopsFrozen /= tp * cp;
    break;
  case OpKind::Rope: // on the heads, split by tp with or without SP
  case OpKind::SiluMul: // the intermediate width, split by tp
    op.heads = op.kind == OpKind::Rope ? op.heads / tp : op.heads;
    op.inputElements = split(op.inputElements, tp);
    op.outputElements = split(op.outputElements, tp);
    savedSplit = tp;
    op.forwardFlops /= tp * cp;
    op.backwardFlops /= tp * cp;
    op.backwardFlopsFrozen /= tp * cp;
    break;
  case OpKind::RMSNorm:
  case OpKind::Add:
    op.inputElements = split(op.inputElements, tokensTp);
    op.outputElements = split(op.outputElements, tokensTp);
    savedSplit = tokensTp;
    op.forwardFlops /= tokensTp * cp;
    op.backwardFlops /= tokensTp * cp;
    op.backwardFlopsFrozen /= tokensTp * cp;
    break;
  case OpKind::Embedding: // vocab-parallel: the table split by tp
    op.weightElements /= tp;
    op.inputElements = split(op.inputElements, 1);
    op.outputElements = split(op.outputElements, tokensTp);
    break;
  case OpKind::CrossEntropy: // vocab-parallel: [S / cp, V / tp]
    op.inputElements = split(op.inputElements, tp);
    op.outputElements = split(op.outputElements, 1);
    savedSplit = tp;
    op.forwardFlops /= tp * cp;
    op.backwardFlops /= tp * cp;
    op.backwardFlopsFrozen /= tp * cp;
    break;
  }
  // The saved list (the IR's, for reports): a column linear keeps the
  // gathered input (torchtitan's rule; Megatron's shard is priced in
  // Parallel.cpp's layerBytes).
  for (SavedTensor &t : op.saved)
    t.elements = t.elements / cp / savedSplit;
  return op;
}

int64_t parametersOf(const std::vector<OpProfile> &ops) {
  int64_t n = 0;
  for (const OpProfile &op : ops)
    n += op.weightElements + op.biasElements;
  return n;
}

} // namespace

ModelProfile rankProfile(const ModelProfile &m, const Layout &layout,
                         bool sequenceParallel) {
  ModelProfile r = m;
  const bool sp = sequenceParallel && layout.tp > 1;
  for (auto *ops : {&r.embed, &r.layer, &r.head})
    for (OpProfile &op : *ops)
      op = rankOp(op, layout, m.sequenceLength, sp);
  r.sequenceLength = m.sequenceLength / layout.cp;
  r.layerParameters = parametersOf(r.layer);
  r.embeddingParameters = parametersOf(r.embed);
  r.headParameters = parametersOf(r.head);
  r.parameters =
      r.numLayers * r.layerParameters + r.embeddingParameters + r.headParameters;
  return r;
}

std::vector<int64_t> stageLayers(int64_t L, int64_t pp, int64_t v,
                                 Backend backend) {
  const int64_t chunks = pp * v;
  if (chunks < 1 || L < 1)
    return {};
  if (chunks == 1)
    return {L};
  // The embedding and the head weigh one layer each: chunks first and last
  // carry one decoder layer fewer.
  auto weighted = [&](bool even) -> std::vector<int64_t> {
    const int64_t effective = L + 2;
    const int64_t per = effective / chunks, extra = effective % chunks;
    if (even && extra != 0)
      return {};
    if (per < 1) // more chunks than effective layers
      return {};
    std::vector<int64_t> out(size_t(chunks), 0);
    for (int64_t c = 0; c < chunks; ++c)
      out[size_t(c)] = per + (c < extra ? 1 : 0) -
                       (c == 0 || c == chunks - 1 ? 1 : 0);
    return out;
  };
  if (backend == Backend::Megatron) {
    if (L % chunks == 0)
      return std::vector<int64_t>(size_t(chunks), L / chunks);
    return weighted(/*even=*/true);
  }
  return weighted(/*even=*/false);
}

int64_t rankLayers(const std::vector<int64_t> &chunks, int64_t pp, int64_t rank) {
  int64_t n = 0;
  for (size_t c = size_t(rank); c < chunks.size(); c += size_t(pp))
    n += chunks[c];
  return n;
}

int64_t chunksInFlight(const Layout &l, int64_t rank, int64_t m) {
  if (l.pp <= 1)
    return 1;
  if (l.schedule == plan::PipelineSchedule::Interleaved && l.virtualStages > 1) {
    const int64_t warmup = 2 * (l.pp - rank - 1) + (l.virtualStages - 1) * l.pp;
    return std::min(m * l.virtualStages, warmup + 1);
  }
  return std::min(m, l.pp - rank);
}

int64_t shardRanks(const Layout &l, Backend backend, int64_t world) {
  switch (backend) {
  case Backend::Torchtitan:
    return l.shardGroup(world) * l.cp;
  case Backend::Megatron:
    return l.dataParallel(world) * l.cp / l.replicas(world);
  case Backend::SwiftRun:
  case Backend::HF:
  case Backend::DeepSpeed:
    break;
  }
  return l.shardGroup(world);
}

MeshStates meshStates(Backend backend, int zero, double P, double unit,
                      double d, int64_t pp) {
  MeshStates st;
  if (backend == Backend::Megatron) {
    // bf16 parameters, fp32 gradient buffer, fp32 main parameters and
    // AdamW's two moments (Megatron-LM @ d98e8a6 docs/user-guide/features/
    // dist_optimizer.md: 18 bytes per parameter, 6 + 12/d distributed).
    switch (zero) {
    case 0:
      st.parameters = 2 * P;
      st.gradients = 4 * P;
      st.optimizer = 12 * P;
      break;
    case 3:
      // Megatron-FSDP (optim_grads_params): everything sharded, a unit and
      // the next one gathered in bf16 (DeepSpeed ZeRO-3's layout with fp32
      // gradients).
      st.parameters = 2 * P / d;
      st.gradients = 4 * P / d;
      st.optimizer = 12 * P / d;
      st.gathered = 2 * 2 * unit;
      st.reduceBuffers = 4 * unit;
      break;
    default: // the distributed optimizer
      st.parameters = 2 * P;
      st.gradients = 4 * P;
      st.optimizer = 12 * P / d;
      break;
    }
    // The fused AdamW's fp32 temporaries over the local partition.
    st.optimizerTemporaries = 4 * P / (zero == 0 ? 1 : d);
    return st;
  }
  // torchtitan.
  if (zero == 0) {
    // DDP: fp32 parameters (autocast computes in bf16), fp32 gradients,
    // AdamW's moments; foreach AdamW's one fp32 temporary.
    st.parameters = 4 * P;
    st.gradients = 4 * P;
    st.optimizer = 8 * P;
    st.optimizerTemporaries = 4 * P;
    return st;
  }
  // FSDP2 with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32):
  // fp32 shards of parameters, gradients and AdamW's moments.
  st.parameters = 4 * P / d;
  st.optimizer = 8 * P / d;
  st.optimizerTemporaries = 4 * P / d;
  if (pp > 1) {
    // torch.distributed.pipelining's PipelineStage.backward_maybe_with_nosync
    // sets set_reshard_after_backward(False) and
    // set_requires_gradient_sync(False) on every micro-batch's backward and
    // reduces once after the last: the stage stays gathered (bf16) and its
    // gradients accumulate unsharded in the reduce dtype (fp32), 2P + 4P +
    // 12P / d; the sharded fp32 gradients (4P / d) replace them after the
    // reduce-scatter.
    st.gathered = 2 * P;
    st.gradients = 4 * P;
    st.reduceBuffers = 4 * unit;
    return st;
  }
  st.gradients = 4 * P / d;
  return st;
}

namespace {

using detail::Exec;
using detail::Candidate;
using detail::Parts;

/// How the backend runs the layer math: Megatron's Transformer Engine
/// kernels as swift-run's fused ones; torchtitan's eager modules under
/// FSDP2's bf16 parameters, or (DDP, zero 0) autocast over fp32 ones
/// (torchtitan's maybe_enable_amp; without FSDP under TP or PP it trains in
/// fp32, which meshUnsupportedReason refuses).
Exec meshExec(const TrainingSetup &setup, const Strategy &s) {
  if (setup.precision == Precision::Fp32)
    return Exec::Fp32;
  if (setup.backend == Backend::Megatron)
    return Exec::Fused;
  return s.zero == 0 ? Exec::Autocast : Exec::Bf16;
}

/// The layer and head sizes one rank of a stage needs.
struct RankShapes {
  double T = 0;         // the rank's tokens per micro-batch (mb * S / cp)
  double hidden = 0;    // h
  double streamWidth = 0; // h / tp with SP, else h: the residual stream's
  double ffn = 0;       // intermediate width on the rank
  double vocab = 0;     // V / tp
  double kvWidth = 0;   // kv heads on the rank x head dim
};

RankShapes shapesOf(const ModelProfile &r, const Layout &l, const Strategy &s,
                    bool sp) {
  RankShapes x;
  x.T = double(s.microBatchSize) * r.sequenceLength;
  x.hidden = double(r.hiddenSize);
  x.streamWidth = x.hidden / (sp ? l.tp : 1);
  x.vocab = double(r.vocabSize) / l.tp;
  for (const OpProfile &op : r.layer) {
    if (op.kind == OpKind::SiluMul)
      x.ffn = double(op.outputWidth(r.sequenceLength));
    if (op.kind == OpKind::Attention)
      x.kvWidth = double(op.kvHeads) * op.headDim;
  }
  return x;
}

/// Bytes one decoder layer keeps for backward per micro-batch on the rank:
/// none checkpointed (`full`), and with the layer checkpointed (`kept`).
struct LayerBytes {
  double full = 0, kept = 0;
};

LayerBytes layerBytes(const ModelProfile &r, const TrainingSetup &setup,
                      const Strategy &s, const RankShapes &x, Exec exec,
                      int64_t tp, bool sp) {
  const int act = detail::activationBytes(exec);
  const detail::SavedBytes saved =
      detail::savedBytes(r.layer, r.sequenceLength, exec, setup);
  double perToken = saved.perToken;
  // Megatron's column-parallel linears keep the sequence-parallel shard of
  // their input and gather it again for the weight gradient; torchtitan's
  // ColwiseParallel keeps the gathered [T, h] it computed with.
  if (setup.backend == Backend::Megatron && sp) {
    std::set<int> inputs;
    for (const OpProfile &op : r.layer)
      if (columnLinear(op) && inputs.insert(op.inputValue).second)
        perToken -= act * double(op.inFeatures) * (1 - 1.0 / tp);
  }
  LayerBytes b;
  b.full = x.T * perToken + saved.weightCopies; // autocast's bf16 copies
  // Full recompute keeps the layer's input (the sequence-parallel shard);
  // Megatron's selective recompute (the core attention) drops what flash
  // attention never kept (the S^2 scores), so it keeps the whole layer.
  b.kept = s.checkpointing == Checkpointing::Full ? x.T * x.streamWidth * act
                                                  : b.full;
  return b;
}

int64_t toBytes(double bytes) {
  if (!(bytes < double(kSaturatedCount)))
    return kSaturatedCount;
  return bytes > 0 ? std::llround(bytes) : 0;
}

/// The candidates of pipeline rank `rank`: its backward at the steady
/// state's peak (every micro-batch in flight held, the oldest one's layer
/// recomputed), the loss on the last stage, the optimizer step.
std::vector<Candidate> stageCandidates(const ModelProfile &r,
                                       const TrainingSetup &setup,
                                       const Hardware &hw, const Strategy &s,
                                       const std::vector<int64_t> &chunks,
                                       int64_t rank, MeshStates &statesOut) {
  const Layout &l = s.layout;
  const int64_t world = hw.worldSize();
  const bool sp = l.tp > 1;
  const bool first = rank == 0, last = rank == l.pp - 1;
  const Exec exec = meshExec(setup, s);
  const RankShapes x = shapesOf(r, l, s, sp);
  const int act = detail::activationBytes(exec);
  const int64_t Lr = rankLayers(chunks, l.pp, rank);

  // The stage's parameters on this rank and the largest unit FSDP gathers.
  double P = double(Lr) * r.layerParameters +
             (first ? double(r.embeddingParameters) : 0) +
             (last ? double(r.headParameters) : 0);
  double unit = double(r.layerParameters);
  if (first)
    unit = std::max(unit, double(r.embeddingParameters));
  if (last)
    unit = std::max(unit, double(r.headParameters));
  const double d = double(shardRanks(l, setup.backend, world));
  MeshStates st = meshStates(setup.backend, s.zero, P, unit, d, l.pp);
  // FSDP2 at pp 1 (zero 2 or 3, the memoryHF rule): the root group
  // (embedding, final norm, head) gathered throughout; ZeRO-3 a layer and
  // the next one prefetched in backward, ZeRO-2 every layer; the
  // reduce-scatter's bf16 gradient and two fp32 buffers of a layer.
  // At the loss ZeRO-3 holds the last layer only (backward prefetch).
  double gatheredAtLoss = st.gathered;
  if (setup.backend == Backend::Torchtitan && s.zero >= 2 && l.pp == 1) {
    const double root = double(r.embeddingParameters + r.headParameters);
    const double layer = double(r.layerParameters);
    st.gathered = 2 * root + (s.zero == 2 ? double(Lr) : 2.0) * 2 * layer;
    st.reduceBuffers = 2 * layer + 2 * 4 * layer;
    gatheredAtLoss = 2 * root + (s.zero == 2 ? double(Lr) : 1.0) * 2 * layer;
  }
  // Gradients alive at the loss: Megatron's gradient buffer always;
  // torchtitan's (set to None after each step) from the first
  // micro-batch's backward on, i.e. at the loss only when accumulating.
  const double lossGradients =
      setup.backend == Backend::Megatron || s.gradientAccumulation > 1
          ? st.gradients
          : 0;
  statesOut = st;

  // Activations per micro-batch on the stage: checkpointed layers keep
  // their input (Megatron's --recompute-num-layers: the first k of each
  // stage).
  const LayerBytes lb = layerBytes(r, setup, s, x, exec, l.tp, sp);
  const int64_t ck = s.checkpointedLayers(Lr);
  const double perMicroBatch = double(ck) * lb.kept + double(Lr - ck) * lb.full;
  const int64_t inFlight = chunksInFlight(l, rank, s.gradientAccumulation);
  const double held = double(inFlight) * perMicroBatch / double(l.virtualStages);

  // The layer in backward: its recompute and the SwiGLU backward's three
  // [T, ffn]. With fused kernels (Megatron, as swift-run's) the recompute
  // reads the kept input (counted once) and the residual stream's gradient
  // is alive twice; the eager stack (torchtitan, as memoryHF's measured
  // rule) upcasts a copy and shows no residual gradients at its peaks.
  const bool fused = exec == Exec::Fused;
  const double recompute = ck > 0 ? lb.full - (fused ? lb.kept : 0) : 0;
  const double temporaries =
      3.0 * act * x.T * x.ffn +
      (fused ? 2.0 * act * x.T * x.streamWidth : 0);

  // Pipeline p2p buffers: a received activation and a sent gradient per
  // boundary of each chunk (the SP shard on Megatron; torchtitan sends the
  // stage's output as its DTensor's local shard alike).
  const double boundary = x.T * x.streamWidth * act;
  double boundaries = 0;
  if (l.pp > 1)
    for (size_t c = size_t(rank); c < chunks.size(); c += size_t(l.pp))
      boundaries += (c > 0) + (c + 1 < chunks.size());
  const double pipelineBuffers = 2 * boundary * boundaries;
  // The gathered [T, h] input while a column GEMM runs (SP).
  const double tpGathered = sp ? x.T * x.hidden * act : 0;
  // Context parallelism: K and V of the other chunks while attention runs.
  double cpBuffers = 0;
  if (l.cp > 1) {
    const double chunkKv = 2 * x.T * x.kvWidth * act; // this rank's K and V
    cpBuffers = l.cpKind == plan::ContextParallel::AllGather
                    ? double(l.cp) * chunkKv
                    : 2 * chunkKv; // ring: two chunks in flight; all-to-all alike
  }

  auto base = [&](PeakLocation at) {
    Candidate c{at, {{"parameters", st.parameters},
                     {"optimizer_states", st.optimizer}}};
    return c;
  };
  std::vector<Candidate> out;
  // Where a point is: "stage N ..." under a pipeline.
  const std::string stage = l.pp > 1 ? "stage " + std::to_string(rank) + " " : "";

  // A micro-batch's backward starts with every micro-batch in flight held
  // and the gradients alive before it (lossGradients), and ends at its
  // first layer with the other micro-batches' activations, that layer's,
  // and every gradient of the stage.
  const double ownLayer =
      Lr > 0 ? (ck > 0 ? lb.kept : lb.full) : 0; // the first layer's, kept
  const double others = double(inFlight - 1) * perMicroBatch / double(l.virtualStages);
  // The model's index of the stage's first decoder layer (its first chunk)
  // and last one (its last chunk); -1 for a stage of none.
  auto firstLayerOf = [&](size_t chunk) {
    int64_t n = 0;
    for (size_t c = 0; c < chunk; ++c)
      n += chunks[c];
    return n;
  };
  const size_t lastChunk = size_t(rank + (l.virtualStages - 1) * l.pp);
  const int64_t firstLayer = Lr > 0 ? firstLayerOf(size_t(rank)) : -1;
  const int64_t lastLayer =
      Lr > 0 ? firstLayerOf(lastChunk) + chunks[lastChunk] - 1 : -1;
  for (bool start : {true, false}) {
    Candidate bwd = base({"backward", start ? lastLayer : firstLayer,
                          stage + "decoder layer"});
    bwd.parts.insert(bwd.parts.end(),
                     {{"gradients", start ? lossGradients : st.gradients},
                      {"gathered_parameters", st.gathered + st.reduceBuffers},
                      {"activations", (start ? held : others + ownLayer) + recompute},
                      {"backward_temporaries", temporaries},
                      {"pipeline_buffers", pipelineBuffers},
                      {"tp_gathered", tpGathered},
                      {"cp_buffers", cpBuffers}});
    out.push_back(bwd);
  }

  if (last) {
    // The loss over [T, V / tp] (vocab-parallel): Megatron's cross-entropy
    // keeps its fp32 softmax; torchtitan's loss parallel upcasts the bf16
    // logits and log_softmax keeps its fp32 output. In flight: the bf16
    // logits and the fp32 upcast (forward), the incoming gradient and the
    // result (backward, fp32).
    const double logits = x.T * x.vocab;
    const double head = 4 * logits + x.T * x.hidden * act; // + lm_head's input
    const double lossTemporaries = std::max(2 * logits + 4 * logits, 8 * logits);
    Candidate loss = base({"forward", -1, stage + "loss"});
    loss.parts.insert(loss.parts.end(),
                      {{"gradients", lossGradients},
                       {"gathered_parameters", gatheredAtLoss},
                       {"activations", held + head},
                       {"loss_temporaries", lossTemporaries},
                       {"pipeline_buffers", pipelineBuffers},
                       {"tp_gathered", tpGathered}});
    out.push_back(loss);
  }

  Candidate opt = base({"optimizer", -1, stage + "step"});
  // After the reduce-scatter: the sharded fp32 gradients (FSDP2 at pp > 1
  // frees the unsharded ones).
  const double finalGradients =
      setup.backend == Backend::Torchtitan && s.zero >= 2 ? 4 * P / d : st.gradients;
  opt.parts.insert(opt.parts.end(),
                   {{"gradients", finalGradients},
                    {"optimizer_temporaries", st.optimizerTemporaries}});
  out.push_back(opt);
  return out;
}

} // namespace

MemoryEstimate meshMemory(const ModelProfile &m, const TrainingSetup &setup,
                          const Hardware &hw, const Strategy &s) {
  const Layout &l = s.layout;
  const ModelProfile r = rankProfile(m, l);
  std::vector<int64_t> chunks =
      stageLayers(m.numLayers, l.pp, l.virtualStages, setup.backend);
  MemoryEstimate mem;
  if (chunks.empty()) // refused by meshUnsupportedReason
    return mem;
  MeshStates firstStates, lastStates;
  std::vector<Candidate> candidates =
      stageCandidates(r, setup, hw, s, chunks, 0, firstStates);
  MeshStates states = firstStates;
  if (l.pp > 1) {
    std::vector<Candidate> lastStage =
        stageCandidates(r, setup, hw, s, chunks, l.pp - 1, lastStates);
    candidates.insert(candidates.end(), lastStage.begin(), lastStage.end());
  }
  const Candidate *peak = &candidates[0];
  for (const Candidate &c : candidates)
    if (c.total() > peak->total())
      peak = &c;
  if (l.pp > 1 && peak->at.op.rfind("stage 0 ", 0) != 0)
    states = lastStates;
  mem.peakBytes = toBytes(peak->total());
  mem.peak = peak->at;
  for (const auto &[name, bytes] : peak->parts)
    if (bytes > 0)
      mem.breakdown.push_back({name, toBytes(bytes)});
  mem.modelStateBytes = toBytes(states.total());
  // The peak stage's points, in step order.
  const std::string peakStage =
      l.pp > 1 ? peak->at.op.substr(0, peak->at.op.find(' ', 6) + 1) : "";
  for (const Candidate &c : candidates) {
    if (c.at.op.rfind(peakStage, 0) != 0)
      continue;
    mem.timeline.push_back({c.at, toBytes(c.total())});
    int64_t &phase = c.at.phase == "forward"    ? mem.forwardPeakBytes
                     : c.at.phase == "backward" ? mem.backwardPeakBytes
                                                : mem.optimizerPeakBytes;
    phase = std::max(phase, toBytes(c.total()));
  }
  std::stable_sort(mem.timeline.begin(), mem.timeline.end(),
                   [](const MemoryPoint &a, const MemoryPoint &b) {
                     auto order = [](const std::string &p) {
                       return p == "forward" ? 0 : p == "backward" ? 1 : 2;
                     };
                     return order(a.at.phase) < order(b.at.phase);
                   });
  const bool sp = l.tp > 1;
  const RankShapes x = shapesOf(r, l, s, sp);
  const Exec exec = meshExec(setup, s);
  const LayerBytes lb = layerBytes(r, setup, s, x, exec, l.tp, sp);
  mem.layerActivationBytes = toBytes(lb.full);
  mem.checkpointedLayerBytes = toBytes(lb.kept);
  mem.headActivationBytes =
      toBytes(4 * x.T * x.vocab + x.T * x.hidden * detail::activationBytes(exec));
  // The host: each rank's process (the runtime's ~1 GiB), nothing offloaded.
  mem.hostBytes = toBytes(double(int64_t(1) << 30) * hw.gpusPerNode);
  return mem;
}

namespace {

/// A ring collective (all-gather, reduce-scatter; all-reduce twice) of
/// `bytes` (the whole buffer) over group `g`: latency per step plus bytes x
/// (n-1)/n over the link the group crosses, and the call's fixed cost.
double ring(double bytes, const Group &g, const detail::LinkRates &r,
            bool allReduce = false) {
  if (g.n <= 1 || bytes <= 0)
    return 0;
  const double bw = g.crossesNodes ? r.interBus : r.intraBus;
  const double lat = g.crossesNodes ? r.latencyInter : r.latencyIntra;
  const double times = allReduce ? 2 : 1;
  const double n = double(g.n);
  return times * (n - 1) * lat + times * bytes * (n - 1) / n / bw +
         r.perCollective;
}

/// One point-to-point send of `bytes` between two ranks of group `g`.
double p2p(double bytes, const Group &g, const detail::LinkRates &r) {
  if (g.n <= 1 || bytes <= 0)
    return 0;
  return (g.crossesNodes ? r.latencyInter : r.latencyIntra) +
         bytes / (g.crossesNodes ? r.interBus : r.intraBus);
}

/// Forward, backward and recompute of one micro-batch through a stage of
/// `layers` decoder layers (with the embedding on the first, the head on
/// the last): the time model's compute (Time.cpp) on the rank's profile,
/// alone on one GPU, with the bf16 eager rates calibrated on HF.
TimeEstimate stageCompute(const ModelProfile &r, int64_t layers, bool first,
                          bool last, const TrainingSetup &setup,
                          const Hardware &hw, const Strategy &s) {
  ModelProfile stage = r;
  stage.numLayers = layers;
  if (!first)
    stage.embed.clear();
  if (!last)
    stage.head.clear();
  TrainingSetup alone = setup;
  alone.backend = Backend::HF; // FSDP2's bf16 compute (zero 3 below)
  alone.globalBatchSize = s.microBatchSize;
  Hardware one = hw;
  one.nodes = 1;
  one.gpusPerNode = 1;
  Strategy q;
  // FSDP2's bf16 compute; torchtitan's DDP autocasts (memoryHF's zero 0).
  q.zero = setup.backend == Backend::Torchtitan && s.zero == 0 ? 0 : 3;
  q.checkpointing = s.checkpointing;
  q.checkpointLayers = s.checkpointLayers;
  q.microBatchSize = s.microBatchSize;
  return detail::timeFor(stage, alone, one, q);
}

} // namespace

MeshTimeParts meshTimeParts(const ModelProfile &m, const TrainingSetup &setup,
                            const Hardware &hw, const Strategy &s) {
  MeshTimeParts t;
  const Layout &l = s.layout;
  const std::vector<int64_t> chunks =
      stageLayers(m.numLayers, l.pp, l.virtualStages, setup.backend);
  if (chunks.empty()) // refused by meshUnsupportedReason
    return t;
  const int64_t world = hw.worldSize();
  const detail::LinkRates rates = detail::linkRates(hw);
  const ModelProfile r = rankProfile(m, l);
  const bool megatron = setup.backend == Backend::Megatron;
  const double mb = double(s.microBatchSize);
  const double tokens = mb * r.sequenceLength; // the rank's, S / cp each
  const double h = double(m.hiddenSize);
  const double micro = double(s.gradientAccumulation);
  const double v = double(l.virtualStages);

  // Tensor parallelism with sequence parallelism, per collective: the
  // gathered [T, h] bf16 activation. Per layer: forward 2 all-gathers (q/k/v
  // and gate/up inputs) and 2 reduce-scatters (o and down outputs);
  // backward 2 all-gathers (o's and down's output gradients) and 2
  // reduce-scatters (the column linears' input gradients), and on Megatron 2
  // more all-gathers (the saved shard, again, for the weight gradients);
  // a recomputed layer repeats its forward's 4. Exposed (no TP overlap
  // priced). The vocab-parallel embedding and head add one each way.
  const Group tpGroup = l.group(MeshDim::Tp, world, hw.gpusPerNode);
  const double tpOne = ring(tokens * h * 2, tpGroup, rates);
  const double tpLayer = (4 + (megatron ? 6 : 4)) * tpOne;
  // Context parallelism: this rank's K and V, the other ranks' attention.
  const Group cpGroup = l.group(MeshDim::Cp, world, hw.gpusPerNode);
  OpProfile attention;
  for (const OpProfile &op : r.layer)
    if (op.kind == OpKind::Attention)
      attention = op;
  const double kv = 2 * tokens * double(attention.kvHeads) * attention.headDim * 2;
  double cpForward = 0, cpBackward = 0; // exposed
  double cpMoved = 0;                     // all of it, hidden or not
  if (l.cp > 1) {
    const double cp = double(l.cp);
    switch (l.cpKind) {
    case plan::ContextParallel::Ring: {
      // cp - 1 rounds, each a p2p of a K/V chunk (backward: with their
      // gradients) beside one chunk pair of attention.
      const double fwd = mb * detail::fusedAttentionSeconds(
                                  attention, r.sequenceLength, hw, true);
      const double bwd = mb * detail::fusedAttentionSeconds(
                                  attention, r.sequenceLength, hw, false);
      cpForward = (cp - 1) * std::max(0.0, p2p(kv, cpGroup, rates) - fwd / cp);
      cpBackward =
          (cp - 1) * std::max(0.0, p2p(2 * kv, cpGroup, rates) - bwd / cp);
      cpMoved = (cp - 1) * (p2p(kv, cpGroup, rates) + p2p(2 * kv, cpGroup, rates));
      break;
    }
    case plan::ContextParallel::AllGather:
      // Llama 3's: all K and V gathered before attention, their gradients
      // reduce-scattered after its backward, neither hidden.
      cpForward = ring(cp * kv, cpGroup, rates);
      cpBackward = ring(cp * kv, cpGroup, rates);
      break;
    case plan::ContextParallel::AllToAll: {
      // Ulysses: q, k, v and the output re-laid out each way.
      const double q = tokens * double(attention.heads) * attention.headDim * 2;
      const double one = 2 * q + kv; // q + o, and k + v
      cpForward = cpBackward = ring(one, cpGroup, rates) +
                               3 * rates.perCollective;
      break;
    }
    }
    if (l.cpKind != plan::ContextParallel::Ring)
      cpMoved = cpForward + cpBackward;
  }

  // The slowest stage sets the pipeline's pace.
  struct Stage {
    double compute = 0, recompute = 0, forward = 0, backward = 0;
    double tp = 0, cp = 0, cpMoved = 0, optimizer = 0, parameters = 0;
    double total() const { return compute + tp + cp; }
  };
  Stage slowest;
  double largestParameters = 0;
  for (int64_t rank = 0; rank < l.pp; ++rank) {
    const int64_t Lr = rankLayers(chunks, l.pp, rank);
    const bool first = rank == 0, last = rank == l.pp - 1;
    const TimeEstimate c = stageCompute(r, Lr, first, last, setup, hw, s);
    const double recomputed = double(s.checkpointedLayers(Lr));
    const bool full = s.checkpointing == Checkpointing::Full;
    Stage st;
    st.compute = c.computeSeconds;
    st.recompute = c.recomputeSeconds;
    st.forward = (c.computeSeconds - c.recomputeSeconds) / 3;
    st.backward = c.computeSeconds - st.forward;
    st.tp = double(Lr) * tpLayer + (full ? recomputed * 4 * tpOne : 0) +
            ((first ? 2 : 0) + (last ? 2 : 0)) * tpOne;
    st.cp = double(Lr) * (cpForward + cpBackward) +
            (full ? recomputed * cpForward : 0);
    st.cpMoved = double(Lr) * cpMoved;
    st.optimizer = c.optimizerSeconds;
    st.parameters = double(Lr) * r.layerParameters +
                    (first ? double(r.embeddingParameters) : 0) +
                    (last ? double(r.headParameters) : 0);
    largestParameters = std::max(largestParameters, st.parameters);
    if (st.total() > slowest.total())
      slowest = st;
  }
  t.compute = slowest.compute;
  t.recompute = slowest.recompute;
  t.tensorParallel = slowest.tp;
  t.contextParallel = slowest.cp;
  t.microBatch = slowest.total();
  t.bubble = l.pp > 1 ? double(l.pp - 1) / v * t.microBatch : 0;

  // Pipeline p2p: a stage's output (the SP shard) forward and its gradient
  // backward, per micro-batch and chunk boundary. Megatron's interleaved
  // schedule overlaps them (overlap_p2p_comm) but for the fill and drain;
  // 1F1B's batched isend/irecv is waited before the compute.
  double p2pTotal = 0;
  if (l.pp > 1) {
    const Group ppGroup = l.group(MeshDim::Pp, world, hw.gpusPerNode);
    const double one = p2p(tokens * h * 2 / double(l.tp), ppGroup, rates);
    p2pTotal = 2 * (micro * v + double(l.pp) - 1) * one;
    const bool overlapped =
        megatron && l.schedule == plan::PipelineSchedule::Interleaved && v > 1;
    t.pipelineP2p = overlapped ? 2 * double(l.pp - 1) * one : p2pTotal;
  }

  // Data-parallel synchronization of the largest stage's fp32 gradients
  // over the shard group (dp_shard x cp: FSDP2's mesh, Megatron's
  // distributed optimizer), all-reduced across replicas (HSDP).
  const double P = largestParameters;
  const double G = 4 * P;
  const int64_t shard = shardRanks(l, setup.backend, world);
  Group shardGroup;
  shardGroup.n = shard;
  shardGroup.stride = l.tp;
  shardGroup.crossesNodes = shard > 1 && l.tp * shard > hw.gpusPerNode;
  const Group replicas = l.group(MeshDim::DpReplicate, world, hw.gpusPerNode);
  const double replicaAllReduce =
      ring(G / double(std::max<int64_t>(shard, 1)), replicas, rates, true);
  const double hideBackward = slowest.backward; // the last micro-batch's
  double dpTotal = 0, dpExposed = 0;
  const bool sharded = megatron ? s.zero >= 1 : s.zero >= 2;
  if (!sharded) {
    // DDP: one all-reduce over every data-parallel (and cp) rank, bucketed
    // under the last micro-batch's backward.
    Group all = shardGroup;
    all.n = shard * l.replicas(world);
    all.crossesNodes = all.n > 1 && l.tp * all.n > hw.gpusPerNode;
    dpTotal = ring(G, all, rates, true);
    dpExposed = std::max(0.0, dpTotal - hideBackward);
  } else if (megatron && s.zero == 1) {
    // The distributed optimizer: reduce-scatter under the last backward
    // (--overlap-grad-reduce), the updated bf16 parameters all-gathered
    // under the next forward (--overlap-param-gather).
    const double rs = ring(G, shardGroup, rates) + replicaAllReduce;
    const double ag = ring(2 * P, shardGroup, rates);
    dpTotal = rs + ag;
    dpExposed = std::max(0.0, rs - hideBackward) +
                std::max(0.0, ag - slowest.forward);
  } else if (l.pp > 1 && !megatron) {
    // torchtitan under a pipeline: the stage gathered once (under the
    // first forward), its gradients reduced once after the last backward
    // (PipelineStage reduces after the schedule: nothing to hide under).
    const double ag = ring(2 * P, shardGroup, rates);
    const double rs = ring(G, shardGroup, rates) + replicaAllReduce;
    dpTotal = ag + rs;
    dpExposed = std::max(0.0, ag - slowest.forward) + rs;
  } else {
    // ZeRO-3 (FSDP2, Megatron-FSDP): every micro-batch gathers the stage
    // for forward and again for backward and reduce-scatters its
    // gradients; ZeRO-2 gathers once. HSDP's all-reduce after the last.
    const double ag = ring(2 * P, shardGroup, rates);
    const double rs = ring(G, shardGroup, rates);
    const double backwardGathers = s.zero == 3 ? micro : 0;
    const double forwardGathers = s.zero == 3 ? micro : 1;
    dpTotal = forwardGathers * ag + backwardGathers * ag + micro * rs +
              replicaAllReduce;
    dpExposed = forwardGathers * std::max(0.0, ag - slowest.forward) +
                micro * std::max(0.0, (s.zero == 3 ? ag : 0) + rs - slowest.backward) +
                replicaAllReduce;
  }
  t.dataParallel = dpExposed;
  t.communication = micro * (slowest.tp + std::max(slowest.cp, slowest.cpMoved)) +
                    p2pTotal + dpTotal;
  // The optimizer over the rank's partition.
  t.optimizer = slowest.optimizer / (sharded ? double(shard) : 1.0);
  t.step = micro * t.microBatch + t.bubble + t.pipelineP2p + t.dataParallel +
           t.optimizer;
  return t;
}

TimeEstimate meshTime(const ModelProfile &m, const TrainingSetup &setup,
                      const Hardware &hw, const Strategy &s) {
  const MeshTimeParts p = meshTimeParts(m, setup, hw, s);
  TimeEstimate t;
  if (!(p.step > 0))
    return t;
  const double micro = double(s.gradientAccumulation);
  t.stepSeconds = p.step;
  t.computeSeconds = micro * p.compute;
  t.recomputeSeconds = micro * p.recompute;
  t.pipelineBubbleSeconds = p.bubble;
  t.exposedCommunicationSeconds = micro * (p.tensorParallel + p.contextParallel) +
                                  p.pipelineP2p + p.dataParallel;
  t.communicationSeconds = std::max(p.communication, t.exposedCommunicationSeconds);
  t.optimizerSeconds = p.optimizer;
  t.tokensPerSecond = double(setup.globalBatchSize) * m.sequenceLength / p.step;
  t.mfu = modelFlopsPerStep(m, setup.globalBatchSize, setup.method) /
          (p.step * double(hw.worldSize()) * hw.bf16Tflops * 1e12);
  return t;
}

std::string meshUnsupportedReason(const ModelProfile &m,
                                  const TrainingSetup &setup,
                                  const Hardware &hw, const Strategy &s) {
  const Layout &l = s.layout;
  const std::string backend = toString(setup.backend);
  if (setup.method != Method::Full)
    return backend + " trains full models: " +
           (setup.backend == Backend::Torchtitan
                ? "torchtitan has no LoRA/QLoRA"
                : "LoRA/QLoRA are NeMo's (PEFT), not Megatron-LM's") +
           "; use method full, or backend swift-run, hf or deepspeed";
  if (s.offload != Offload::None)
    return backend + " is priced without offload (" +
           (setup.backend == Backend::Torchtitan
                ? "torchtitan's training.enable_cpu_offload"
                : "Megatron's --optimizer-cpu-offload") +
           " is not modelled yet); use offload none";
  if (l.tp < 1 || l.cp < 1 || l.pp < 1 || l.virtualStages < 1 ||
      hw.worldSize() % (l.tp * l.cp * l.pp) != 0)
    return "tp x cp x pp must divide the GPUs";
  if (l.dpShard > 0 && l.dataParallel(hw.worldSize()) % l.dpShard != 0)
    return "dp_shard must divide the data-parallel ranks";
  for (const OpProfile &op : m.layer)
    if (op.kind == OpKind::Attention &&
        (op.heads % l.tp != 0 ||
         (op.kvHeads % l.tp != 0 && l.tp % op.kvHeads != 0)))
      return "tp " + std::to_string(l.tp) + " must divide the " +
             std::to_string(op.heads) + " attention heads and divide or be a "
             "multiple of the " + std::to_string(op.kvHeads) + " KV heads";
  for (const OpProfile &op : m.layer)
    if (op.kind == OpKind::SiluMul &&
        op.outputWidth(m.sequenceLength) % l.tp != 0)
      return "tp " + std::to_string(l.tp) +
             " must divide the intermediate size " +
             std::to_string(op.outputWidth(m.sequenceLength));
  if (m.sequenceLength % l.cp != 0)
    return "cp must divide the sequence length";
  if (stageLayers(m.numLayers, l.pp, l.virtualStages, setup.backend).empty())
    return backend + " cannot split " + std::to_string(m.numLayers) +
           " decoder layers over pp " + std::to_string(l.pp) + " x " +
           std::to_string(l.virtualStages) + " model chunks" +
           (setup.backend == Backend::Megatron
                ? " (it needs layers, or layers + 2 with the embedding and "
                  "loss counted, a multiple of the chunks)"
                : "");
  // Megatron's interleaved schedule runs the micro-batches in groups of
  // microbatch_group_size_per_vp_stage (default pp) contiguous ones per
  // model chunk: it refuses fewer micro-batches than pp, and a last group
  // smaller than pp (Megatron-LM @ d98e8a6, core/pipeline_parallel/
  // schedules.py, forward_backward_pipelining_with_interleaving): the
  // micro-batches per step must be a multiple of pp.
  if (setup.backend == Backend::Megatron &&
      l.schedule == plan::PipelineSchedule::Interleaved && l.virtualStages > 1 &&
      s.gradientAccumulation % l.pp != 0)
    return "Megatron's interleaved schedule needs the micro-batches per step (" +
           std::to_string(s.gradientAccumulation) +
           ") to be a multiple of pp (" + std::to_string(l.pp) + ")";
  if (setup.backend == Backend::Torchtitan) {
    if (s.zero == 0 && (l.tp > 1 || l.pp > 1))
      return "torchtitan without FSDP trains in fp32 under tensor or "
             "pipeline parallelism (maybe_enable_amp); use zero 2 or 3";
    if (s.zero == 1)
      return "torchtitan (FSDP2) has no ZeRO-1: it shards gradients with the "
             "optimizer states; use zero 0, 2 or 3";
    if (s.checkpointing == Checkpointing::Selective)
      return "torchtitan's selective activation checkpointing (op policy) is "
             "not priced; use full or none";
    if (s.checkpointing != Checkpointing::None && s.checkpointLayers >= 0 &&
        s.checkpointLayers != m.numLayers)
      return "torchtitan checkpoints every layer (or every k-th); "
             "checkpoint_layers needs swift-run or megatron";
  } else if (s.zero == 2) {
    return "Megatron's distributed optimizer shards the optimizer states, its "
           "gradient buffer stays whole: use zero 1 (distributed optimizer), "
           "0 (DDP) or 3 (Megatron-FSDP)";
  }
  if (s.zero == 3 && s.prefetchDepth != 1)
    return backend + " is priced with one unit prefetched; prefetch_depth "
                     "needs swift-run";
  return "";
}

} // namespace swift::cost
