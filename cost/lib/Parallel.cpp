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
  int64_t tokensTp = sp ? tp : 1; // the residual stream's split under SP
  int64_t outputSplit = 1;
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
    op.forwardFlops /= tp * cp;
    op.backwardFlops /= tp * cp;
    op.backwardFlopsFrozen /= tp * cp;
    break;
  case OpKind::RMSNorm:
  case OpKind::Add:
    op.inputElements = split(op.inputElements, tokensTp);
    op.outputElements = split(op.outputElements, tokensTp);
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
    op.forwardFlops /= tp * cp;
    op.backwardFlops /= tp * cp;
    op.backwardFlopsFrozen /= tp * cp;
    break;
  }
  for (SavedTensor &t : op.saved)
    t.elements = t.elements / cp / (op.kind == OpKind::RMSNorm ||
                                            op.kind == OpKind::Add
                                        ? tokensTp
                                        : outputSplit);
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
using detail::Parts;

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
  const int act = 2;
  double perToken =
      detail::savedBytes(r.layer, r.sequenceLength, exec, setup).perToken;
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
  b.full = x.T * perToken;
  // Full recompute keeps the layer's input (the sequence-parallel shard);
  // Megatron's selective recompute (the core attention) drops what flash
  // attention never kept (the S^2 scores), so it keeps the whole layer.
  b.kept = s.checkpointing == Checkpointing::Full ? x.T * x.streamWidth * act
                                                  : b.full;
  return b;
}

struct Candidate {
  PeakLocation at;
  Parts parts;
  double total() const {
    double t = 0;
    for (const auto &p : parts)
      t += p.second;
    return t;
  }
};

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
  const Exec exec = setup.precision == Precision::Fp32 ? Exec::Fp32
                    : setup.backend == Backend::Megatron ? Exec::Fused
                                                         : Exec::Bf16;
  const RankShapes x = shapesOf(r, l, s, sp);
  const int act = 2;
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
  for (bool start : {true, false}) {
    Candidate bwd =
        base({"backward", start ? int64_t(Lr - 1) : 0, stage + "decoder layer"});
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
  const Exec exec = setup.backend == Backend::Megatron ? Exec::Fused : Exec::Bf16;
  const LayerBytes lb = layerBytes(r, setup, s, x, exec, l.tp, sp);
  mem.layerActivationBytes = toBytes(lb.full);
  mem.checkpointedLayerBytes = toBytes(lb.kept);
  mem.headActivationBytes = toBytes(4 * x.T * x.vocab + x.T * x.hidden * 2);
  // The host: each rank's process (the runtime's ~1 GiB), nothing offloaded.
  mem.hostBytes = toBytes(double(int64_t(1) << 30) * hw.gpusPerNode);
  return mem;
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
  if (setup.backend == Backend::Torchtitan) {
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
