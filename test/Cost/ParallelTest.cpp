//===- ParallelTest.cpp - one rank of a device mesh (torchtitan, Megatron) ===//
//
// The rank's profile, the pipeline stages, the micro-batches in flight and
// the model states per rank (cost/lib/Parallel.cpp), each against a hand
// computation or a published closed form (docs/cost-model.md, "Meshes").
//
//===----------------------------------------------------------------------===//

#include "PriceJob.h"

#include "swift/Cost/Parallel.h"

using namespace swift::job::testing;
namespace cost = swift::cost;
using swift::plan::Backend;

namespace {

PricedJob price(std::vector<std::string> sets) {
  static mlir::MLIRContext context;
  return priceJob(context, sets);
}

/// Llama-3.1-8B at S 4096 on `gpus` H100s, priced on `backend` at the trivial
/// layout with the strategy fixed (full fine-tuning, no offload).
PricedJob llama8b(const char *backend, int zero, const char *checkpointing,
                  std::vector<std::string> extra = {}, int gpus = 8) {
  std::vector<std::string> sets = {
      "model=llama3.1-8b", std::string("backend=") + backend,
      "cluster.gpus_per_node=8", "cluster.nodes=" + std::to_string(gpus / 8),
      "training.sequence_length=4096",
      "training.global_batch_size=" + std::to_string(gpus),
      "training.micro_batch_size=1", "strategy.zero=" + std::to_string(zero),
      "strategy.offload=none",
      std::string("strategy.checkpointing=") + checkpointing};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return price(sets);
}

/// `p`'s strategy on `layout` with `microBatches` micro-batches per step.
cost::MemoryEstimate memoryOn(const PricedJob &p, cost::Layout layout,
                              int64_t microBatches = 1) {
  cost::Strategy s = p.strategy;
  s.layout = layout;
  s.gradientAccumulation = microBatches;
  return cost::estimate(p.profile, p.setup, p.hw, s).memory;
}

int64_t part(const cost::MemoryEstimate &m, const std::string &name) {
  for (const auto &[n, bytes] : m.breakdown)
    if (n == name)
      return bytes;
  return 0;
}

const cost::OpProfile &op(const std::vector<cost::OpProfile> &ops,
                          const std::string &name) {
  for (const cost::OpProfile &o : ops)
    if (o.name == name)
      return o;
  for (const cost::OpProfile &o : ops)
    if (o.name.find(name) != std::string::npos)
      return o;
  ADD_FAILURE() << "no op " << name;
  return ops.front();
}

// torchtitan v0.2.2 (generate_llm_fqn_per_model_part) and Megatron with
// --account-for-embedding/loss-in-pipeline-split: L + 2 effective layers,
// one fewer decoder layer on the first and last chunk. Llama-3.1-405B's
// 126 layers on pp 16 (the Llama 3 paper's layout): 7 on stages 0 and 15, 8
// elsewhere; on pp 8 x 2 virtual stages likewise per chunk, so ranks 0 and
// 7 hold 7 + 8 and the rest 16.
TEST(Parallel, StageLayersMatchTorchtitanAndMegatron) {
  std::vector<int64_t> pp16(16, 8);
  pp16.front() = pp16.back() = 7;
  for (Backend b : {Backend::Torchtitan, Backend::Megatron}) {
    EXPECT_EQ(cost::stageLayers(126, 16, 1, b), pp16) << toString(b);
    std::vector<int64_t> v2 = cost::stageLayers(126, 8, 2, b);
    EXPECT_EQ(v2, pp16) << toString(b); // 16 chunks, chunk c on rank c % 8
    EXPECT_EQ(cost::rankLayers(v2, 8, 0), 15);
    EXPECT_EQ(cost::rankLayers(v2, 8, 7), 15);
    EXPECT_EQ(cost::rankLayers(v2, 8, 3), 16);
    EXPECT_EQ(cost::stageLayers(32, 1, 1, b), std::vector<int64_t>{32});
  }
  // Megatron splits uniformly where it can, with no embedding weight.
  EXPECT_EQ(cost::stageLayers(32, 4, 1, Backend::Megatron),
            (std::vector<int64_t>{8, 8, 8, 8}));
  EXPECT_EQ(cost::stageLayers(32, 4, 2, Backend::Megatron),
            std::vector<int64_t>(8, 4));
  // ... and nowhere else (32 and 34 over 3 chunks).
  EXPECT_TRUE(cost::stageLayers(32, 3, 1, Backend::Megatron).empty());
  // torchtitan spreads the remainder over the first stages: 34 = 12+11+11
  // effective, 27 + 2 = 8+7+7+7 (its docs' L = 27, P = 4 example: 7, 7, 7, 6).
  EXPECT_EQ(cost::stageLayers(32, 4, 1, Backend::Torchtitan),
            (std::vector<int64_t>{8, 9, 8, 7}));
  EXPECT_EQ(cost::stageLayers(32, 3, 1, Backend::Torchtitan),
            (std::vector<int64_t>{11, 11, 10}));
  EXPECT_EQ(cost::stageLayers(27, 4, 1, Backend::Torchtitan),
            (std::vector<int64_t>{7, 7, 7, 6}));
  // The embedding or the head may make a stage of its own; more stages
  // than effective layers are refused.
  EXPECT_EQ(cost::stageLayers(2, 4, 1, Backend::Torchtitan),
            (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_TRUE(cost::stageLayers(2, 5, 1, Backend::Torchtitan).empty());
}

// Llama-3.1-8B on tp 8 (hand-computed from its config: h 4096, 32 heads,
// 8 KV heads of 128, intermediate 14336, vocabulary 128256), and with cp 2
// the rank's 2048 queries against all 4096 keys.
TEST(Parallel, RankProfileSplitsByTp) {
  PricedJob p = llama8b("megatron", 1, "none");
  const cost::ModelProfile &m = p.profile;
  cost::Layout tp8;
  tp8.tp = 8;
  cost::ModelProfile r = cost::rankProfile(m, tp8);
  const double S = 4096;
  EXPECT_EQ(op(r.layer, "q_proj").outFeatures, 512);
  EXPECT_EQ(op(r.layer, "q_proj").inFeatures, 4096);
  EXPECT_EQ(op(r.layer, "q_proj").weightElements, 4096 * 4096 / 8);
  EXPECT_EQ(op(r.layer, "q_proj").forwardFlops, int64_t(2 * S * 4096 * 4096 / 8));
  EXPECT_EQ(op(r.layer, "k_proj").outFeatures, 128);
  EXPECT_EQ(op(r.layer, "o_proj").inFeatures, 512);
  EXPECT_EQ(op(r.layer, "o_proj").outFeatures, 4096);
  EXPECT_EQ(op(r.layer, "down_proj").inFeatures, 1792);
  EXPECT_EQ(op(r.layer, "down_proj").weightElements, 4096 * 14336 / 8);
  EXPECT_EQ(op(r.layer, "up_proj").outFeatures, 1792);
  EXPECT_EQ(op(r.layer, "self_attn").heads, 4);
  EXPECT_EQ(op(r.layer, "self_attn").kvHeads, 1);
  EXPECT_EQ(op(r.layer, "self_attn").forwardFlops,
            op(m.layer, "self_attn").forwardFlops / 8);
  // Sequence parallelism: a norm sees [S, h / tp]; its weight is whole.
  EXPECT_EQ(op(r.layer, "input_layernorm").inputElements, int64_t(S) * 512);
  EXPECT_EQ(op(r.layer, "input_layernorm").weightElements, 4096);
  EXPECT_EQ(op(r.layer, "mlp.act").outputElements, int64_t(S) * 1792);
  // Per rank: the seven linears / 8, the two norms whole.
  const int64_t linears = 4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336;
  EXPECT_EQ(r.layerParameters, linears / 8 + 2 * 4096);
  EXPECT_EQ(r.embeddingParameters, 128256 * 4096 / 8);
  EXPECT_EQ(r.headParameters, 128256 * 4096 / 8 + 4096);
  EXPECT_EQ(r.parameters,
            32 * r.layerParameters + r.embeddingParameters + r.headParameters);
  // Without sequence parallelism the norms run on every token.
  EXPECT_EQ(op(cost::rankProfile(m, tp8, false).layer, "input_layernorm")
                .inputElements,
            int64_t(S) * 4096);

  cost::Layout cp2 = tp8;
  cp2.cp = 2;
  cost::ModelProfile c = cost::rankProfile(m, cp2);
  EXPECT_EQ(c.sequenceLength, 2048);
  EXPECT_EQ(op(c.layer, "self_attn").keyLength, 4096);
  EXPECT_EQ(op(c.layer, "self_attn").forwardFlops,
            op(m.layer, "self_attn").forwardFlops / 16);
  EXPECT_EQ(op(c.layer, "input_layernorm").inputElements, 2048 * 512);
  EXPECT_EQ(op(m.layer, "self_attn").keyLength, 0); // the whole sequence
  // Attention time honours the keys: the rank's 2048 queries over 4096
  // keys are twice the pairs of 2048 over 2048 (the q/k/v/o traffic, which
  // scales with the queries, is the same).
  const cost::OpProfile &a = op(c.layer, "self_attn");
  cost::OpProfile own = a;
  own.keyLength = 0;
  const double withKeys = cost::swiftRunAttentionSeconds(a, 2048, p.hw, true);
  const double ownKeys = cost::swiftRunAttentionSeconds(own, 2048, p.hw, true);
  EXPECT_GT(withKeys, 1.3 * ownKeys);
  EXPECT_LT(withKeys, 2 * ownKeys);
}

// 1F1B keeps min(m, pp - i) micro-batches in flight on stage i (Narayanan
// et al. 2021): stage 0 holds pp of them, each its whole stage.
TEST(Parallel, OneF1BFirstStageHoldsPp) {
  cost::Layout pp4;
  pp4.pp = 4;
  EXPECT_EQ(cost::chunksInFlight(pp4, 0, 8), 4);
  EXPECT_EQ(cost::chunksInFlight(pp4, 3, 8), 1);
  EXPECT_EQ(cost::chunksInFlight(pp4, 0, 2), 2);
  EXPECT_EQ(cost::chunksInFlight(cost::Layout{}, 0, 8), 1);
  // In memory: stage 0 of Llama-3.1-8B on torchtitan (8, 9, 8, 7 layers)
  // holds 4 micro-batches of its 8 layers.
  PricedJob p = llama8b("torchtitan", 3, "none");
  cost::MemoryEstimate mem = memoryOn(p, pp4, 8);
  // At the start of the oldest micro-batch's backward: its last layer, 7.
  EXPECT_EQ(mem.peak.str(), "backward, layer 7, stage 0 decoder layer");
  EXPECT_NEAR(double(part(mem, "activations")),
              4.0 * 8 * double(mem.layerActivationBytes), 4 * 8);
  // Two micro-batches per step: two in flight.
  cost::MemoryEstimate two = memoryOn(p, pp4, 2);
  EXPECT_EQ(two.peak.op.rfind("stage 0 ", 0), 0u) << two.peak.str();
  EXPECT_NEAR(double(part(two, "activations")),
              2.0 * 8 * double(mem.layerActivationBytes), 2 * 8);
}

// Interleaved 1F1B (Megatron's get_pp_rank_microbatches, interleaved):
// stage 0 holds 2(pp-1) + (v-1)pp + 1 chunk forwards, i.e.
// L A (1 + (pp-1)/(pp v)) (Korthikanti et al. 2022, section 4.2.3).
TEST(Parallel, InterleavedFirstStageFactor) {
  cost::Layout l;
  l.pp = 4;
  l.virtualStages = 2;
  l.schedule = swift::plan::PipelineSchedule::Interleaved;
  EXPECT_EQ(cost::chunksInFlight(l, 0, 16), 11);
  EXPECT_EQ(cost::chunksInFlight(l, 3, 16), 5);
  EXPECT_EQ(cost::chunksInFlight(l, 0, 2), 4); // capped at m v
  // Llama-3.1-8B on Megatron: 32 layers in 8 chunks of 4.
  PricedJob p = llama8b("megatron", 1, "none");
  cost::MemoryEstimate mem = memoryOn(p, l, 16);
  EXPECT_EQ(mem.peak.op.rfind("stage 0 ", 0), 0u) << mem.peak.str();
  const double L = 32, pp = 4, v = 2;
  EXPECT_NEAR(double(part(mem, "activations")),
              L * double(mem.layerActivationBytes) * (1 + (pp - 1) / (pp * v)),
              L * 2);
}

// Megatron-LM docs/user-guide/features/dist_optimizer.md (@ d98e8a6): bf16 parameters
// with fp32 gradients take 18 bytes per parameter, 6 + 12/d with the
// distributed optimizer over d data-parallel (x context-parallel) ranks.
TEST(Parallel, MegatronDistOptIs6Plus12OverD) {
  for (int zero : {0, 1}) {
    PricedJob p = llama8b("megatron", zero, "full", {}, 16);
    cost::Layout l;
    l.tp = 2;
    l.pp = 2; // 16 GPUs: dp 4
    cost::MemoryEstimate mem = memoryOn(p, l, 4);
    const cost::ModelProfile r = cost::rankProfile(p.profile, l);
    // Stage 0: 16 layers and the embedding; the last: 16 layers and the head.
    const bool first = mem.peak.op.rfind("stage 0 ", 0) == 0;
    const double P = 16.0 * r.layerParameters +
                     double(first ? r.embeddingParameters : r.headParameters);
    const double d = 4;
    EXPECT_NEAR(double(mem.modelStateBytes), (zero ? 6 + 12 / d : 18) * P, 4)
        << "zero " << zero;
  }
  // cp joins the optimizer's shards: dp 2 x cp 2.
  PricedJob p = llama8b("megatron", 1, "full", {}, 16);
  cost::Layout l;
  l.tp = 2;
  l.pp = 2;
  l.cp = 2;
  EXPECT_EQ(cost::shardRanks(l, Backend::Megatron, 16), 4);
  EXPECT_EQ(cost::shardRanks(l, Backend::Torchtitan, 16), 4);
  l.dpShard = 1; // HSDP: torchtitan shards over dp_shard x cp only
  EXPECT_EQ(cost::shardRanks(l, Backend::Torchtitan, 16), 2);
}

// Korthikanti et al. 2022 (Reducing Activation Recomputation in Large
// Transformer Models, eq. 5 with selective recompute): 34 s b h / t bytes
// per layer with tensor and sequence parallelism. Their GPT layer (MHA, a
// 4h GeLU MLP, dropout) has no S^2 term left once the core attention is
// recomputed; ours is flash attention (no S^2 saved in the first place) with
// a SwiGLU MLP of ~8h/3 (the 4h GeLU's parameters and saved widths), no
// dropout: 32 h of their 34 (the two dropout masks).
TEST(Parallel, KorthikantiSelectiveBytesPerToken) {
  PricedJob p = llama8b("megatron", 1, "selective",
                        {"model.num_key_value_heads=32",
                         "model.intermediate_size=10920"});
  for (int64_t t : {1, 2, 4, 8}) {
    cost::Layout l;
    l.tp = t;
    cost::MemoryEstimate mem = memoryOn(p, l);
    const double h = 4096, S = 4096;
    const double perTokenAndH = double(mem.layerActivationBytes) / (S * h);
    EXPECT_NEAR(perTokenAndH, 34.0 / double(t), 0.15 * 34.0 / double(t))
        << "tp " << t;
  }
}

// At tp = pp = cp = 1 torchtitan is FSDP2 with bf16 parameters and fp32
// reduction, the stack memoryHF prices for hf at ZeRO-2/3: the same model
// states per GPU, and the same unsharded parameters and reduce-scatter
// buffers in a layer's backward (the root group, a layer and its prefetched
// neighbour, a layer's bf16 gradient and two fp32 buffers). Activations
// differ: torchtitan's own model has no KV cache and no logits held from
// the previous step.
TEST(Parallel, TorchtitanStatesEqualHfFsdp2AtDpOnly) {
  for (int zero : {2, 3}) {
    PricedJob hf = llama8b("hf", zero, "full");
    PricedJob tt = llama8b("torchtitan", zero, "full");
    EXPECT_EQ(tt.estimate.memory.modelStateBytes, hf.estimate.memory.modelStateBytes)
        << "zero " << zero;
  }
  // Llama-3.1-8B at ZeRO-3, both peaking at the end of backward (layer 0's,
  // every gradient alive): the same parameter, optimizer and gradient
  // shards, the same gathered parameters (the root group, a layer and the
  // next one prefetched, a layer's reduce-scatter buffers), the same
  // activations (layer 0 recomputed) and SwiGLU backward. hf's loop also
  // holds the previous step's logits (previous_outputs); torchtitan's does
  // not.
  PricedJob hf = llama8b("hf", 3, "full");
  PricedJob tt = llama8b("torchtitan", 3, "full");
  const cost::MemoryEstimate &a = hf.estimate.memory, &b = tt.estimate.memory;
  ASSERT_EQ(a.peak.phase, "backward") << a.peak.str();
  ASSERT_EQ(b.peak.phase, "backward") << b.peak.str();
  const cost::ModelProfile &m = tt.profile;
  const double root = double(m.embeddingParameters + m.headParameters);
  const double layer = double(m.layerParameters);
  EXPECT_NEAR(double(part(b, "gathered_parameters")),
              2 * root + 2 * 2 * layer + 2 * layer + 2 * 4 * layer, 1);
  for (const char *name : {"parameters", "optimizer_states", "gradients",
                           "gathered_parameters", "activations",
                           "backward_temporaries"})
    EXPECT_EQ(part(a, name), part(b, name)) << name;
  EXPECT_EQ(a.peakBytes - part(a, "previous_outputs"), b.peakBytes);
}

// The mesh backends run full fine-tuning without offload; the others run
// no mesh.
TEST(Parallel, UnsupportedOnTheMeshBackends) {
  PricedJob p = llama8b("torchtitan", 3, "full");
  cost::TrainingSetup lora = p.setup;
  lora.method = swift::plan::Method::Lora;
  EXPECT_NE(cost::unsupportedReason(p.profile, lora, p.hw, p.strategy)
                .find("torchtitan has no LoRA/QLoRA"),
            std::string::npos);
  cost::Strategy offload = p.strategy;
  offload.offload = swift::plan::Offload::OptimizerAndParams;
  EXPECT_NE(cost::unsupportedReason(p.profile, p.setup, p.hw, offload)
                .find("is priced without offload (torchtitan's "
                      "training.enable_cpu_offload is not modelled yet)"),
            std::string::npos);
  cost::Strategy tp = p.strategy;
  tp.layout.tp = 8;
  tp.gradientAccumulation = 8; // 8 GPUs / tp 8: one data-parallel rank
  EXPECT_EQ(cost::unsupportedReason(p.profile, p.setup, p.hw, tp), "");
  tp.layout.tp = 3;
  EXPECT_EQ(cost::unsupportedReason(p.profile, p.setup, p.hw, tp),
            "tp x cp x pp must divide the GPUs");
  // torchtitan v0.2.2's maybe_enable_amp: no mixed precision without FSDP
  // under TP or PP.
  PricedJob ddp = llama8b("torchtitan", 0, "full");
  cost::Strategy ddpTp = ddp.strategy;
  ddpTp.layout.tp = 2;
  ddpTp.gradientAccumulation = 2;
  EXPECT_NE(cost::unsupportedReason(ddp.profile, ddp.setup, ddp.hw, ddpTp)
                .find("trains in fp32"),
            std::string::npos);
  // Megatron's distributed optimizer is zero 1; its layers split evenly.
  PricedJob mg = llama8b("megatron", 1, "full");
  cost::Strategy z2 = mg.strategy;
  z2.zero = 2;
  EXPECT_NE(cost::unsupportedReason(mg.profile, mg.setup, mg.hw, z2).find("use zero 1"),
            std::string::npos);
  cost::Strategy pp8 = mg.strategy; // 32 layers: 32 and 34 over 8 x 3 chunks
  pp8.layout.pp = 8;
  pp8.layout.virtualStages = 3;
  pp8.layout.schedule = swift::plan::PipelineSchedule::Interleaved;
  pp8.gradientAccumulation = 8;
  EXPECT_EQ(cost::unsupportedReason(mg.profile, mg.setup, mg.hw, pp8),
            "megatron cannot split 32 decoder layers over pp 8 x 3 model chunks "
            "(it needs layers, or layers + 2 with the embedding and loss "
            "counted, a multiple of the chunks)");
  pp8.layout.virtualStages = 2; // 32 / 16
  EXPECT_EQ(cost::unsupportedReason(mg.profile, mg.setup, mg.hw, pp8), "");
  // The same batch in 4 micro-batches of 2: fewer than pp, which Megatron's
  // interleaved schedule refuses (1F1B runs it).
  cost::Strategy few = pp8;
  few.microBatchSize = 2;
  few.gradientAccumulation = 4;
  EXPECT_EQ(cost::unsupportedReason(mg.profile, mg.setup, mg.hw, few),
            "Megatron's interleaved schedule needs the micro-batches per step "
            "(4) to be a multiple of pp (8)");
  few.layout.virtualStages = 1;
  few.layout.schedule = swift::plan::PipelineSchedule::OneFOneB;
  EXPECT_EQ(cost::unsupportedReason(mg.profile, mg.setup, mg.hw, few), "");
  PricedJob hf = llama8b("hf", 3, "full");
  cost::Strategy hfTp = hf.strategy;
  hfTp.layout.tp = 2;
  EXPECT_NE(cost::unsupportedReason(hf.profile, hf.setup, hf.hw, hfTp)
                .find("hf runs data parallelism only"),
            std::string::npos);
}

} // namespace

namespace {

/// Links that cost nothing: no latency, unbounded bandwidth.
void freeLinks(cost::Hardware &hw) {
  for (cost::Link *l : {&hw.intraNode, &hw.interNode}) {
    l->bandwidthGBps = 1e12;
    l->latencyUs = 0;
  }
}

cost::MeshTimeParts timeOn(const PricedJob &p, cost::Layout layout,
                           int64_t microBatches, const cost::Hardware &hw) {
  cost::Strategy s = p.strategy;
  s.layout = layout;
  s.gradientAccumulation = microBatches;
  return cost::meshTimeParts(p.profile, p.setup, hw, s);
}

// On free links a pipeline's step is (m + (pp-1)/v) micro-batch times of
// its slowest stage (Narayanan et al. 2021; interleaved: Megatron's
// (pp-1)/(m v) bubble fraction), plus what does not grow with m (the
// optimizer and the data-parallel sync). The micro-batch time is measured
// as the step's growth with m, not read from the model.
TEST(MeshTime, BubbleIsPpMinus1OverMv) {
  PricedJob p = llama8b("megatron", 1, "full");
  cost::Hardware hw = p.hw;
  freeLinks(hw);
  for (int64_t v : {1, 2}) {
    cost::Layout l;
    l.pp = 4;
    l.virtualStages = v;
    if (v > 1)
      l.schedule = swift::plan::PipelineSchedule::Interleaved;
    const int64_t m = 8;
    cost::MeshTimeParts a = timeOn(p, l, m, hw), b = timeOn(p, l, 2 * m, hw);
    const double C = (b.step - a.step) / double(m);
    ASSERT_GT(C, 0);
    const double fixed = a.optimizer + a.dataParallel;
    EXPECT_NEAR((a.step - fixed) / (double(m) * C) - 1, 3.0 / double(m * v), 1e-9)
        << "v " << v;
    EXPECT_LT(a.pipelineP2p, 1e-9);
  }
  // No pipeline, no bubble.
  EXPECT_EQ(timeOn(p, cost::Layout{}, 8, hw).bubble, 0);
}

// Tensor parallelism costs nothing at tp 1; at tp 2 each layer moves the
// [T, h] activation ten times on Megatron (forward 2 all-gathers and 2
// reduce-scatters, backward 2 reduce-scatters and 4 all-gathers: the
// output gradients and the saved shard again), eight on torchtitan, and a
// fully recomputed layer four more; the vocab-parallel embedding and head
// one each way. The bytes' share, by hand: halving the bus bandwidth adds
// bytes x (tp-1)/tp / bw per collective.
TEST(MeshTime, TpCostsNothingAtTp1) {
  for (const char *backend : {"megatron", "torchtitan"}) {
    PricedJob p = llama8b(backend, backend == std::string("megatron") ? 1 : 3, "full");
    EXPECT_EQ(timeOn(p, cost::Layout{}, 1, p.hw).tensorParallel, 0) << backend;
    cost::Layout tp2;
    tp2.tp = 2;
    cost::Hardware fast = p.hw, slow = p.hw;
    fast.measured.intraNodeBusGBps = 200;
    slow.measured.intraNodeBusGBps = 100;
    const double a = timeOn(p, tp2, 1, fast).tensorParallel;
    const double b = timeOn(p, tp2, 1, slow).tensorParallel;
    EXPECT_GT(a, 0) << backend;
    const double bytes = 4096.0 * 4096 * 2; // T = 4096 tokens x h x bf16
    const double perLayer =
        (backend == std::string("megatron") ? 10 : 8) + 4; // + the recompute
    const double collectives = 32 * perLayer + 4;
    EXPECT_NEAR(b - a, collectives * bytes * 0.5 * (1 / 100e9 - 1 / 200e9),
                1e-9)
        << backend;
  }
}

// Ring attention hides each K/V exchange under a chunk pair of attention:
// at 64K tokens on NVLink nothing shows; at 4K over a slow link the
// exchange is exposed. The all-gather (Llama 3's) is never hidden.
TEST(MeshTime, RingHiddenWhenAttentionIsLonger) {
  cost::Layout cp2;
  cp2.cp = 2;
  PricedJob longer = llama8b("megatron", 1, "full",
                             {"training.sequence_length=65536"});
  EXPECT_EQ(timeOn(longer, cp2, 1, longer.hw).contextParallel, 0);
  cost::Layout gather = cp2;
  gather.cpKind = swift::plan::ContextParallel::AllGather;
  EXPECT_GT(timeOn(longer, gather, 1, longer.hw).contextParallel, 0);

  PricedJob shorter = llama8b("megatron", 1, "full");
  cost::Hardware slow = shorter.hw;
  slow.measured.intraNodeBusGBps = 1;
  EXPECT_GT(timeOn(shorter, cp2, 1, slow).contextParallel, 0);
  EXPECT_EQ(timeOn(shorter, cp2, 1, shorter.hw).contextParallel, 0);
}

// The step's parts add up, and estimate() reports them for the mesh
// backends (the bubble a part of its own).
TEST(MeshTime, EstimateReportsTheParts) {
  PricedJob p = llama8b("torchtitan", 3, "full");
  cost::Strategy s = p.strategy;
  s.layout.pp = 4;
  s.gradientAccumulation = 8;
  cost::TimeEstimate t = cost::estimate(p.profile, p.setup, p.hw, s).time;
  EXPECT_GT(t.pipelineBubbleSeconds, 0);
  EXPECT_NEAR(t.stepSeconds,
              t.computeSeconds + t.pipelineBubbleSeconds +
                  t.exposedCommunicationSeconds + t.optimizerSeconds,
              1e-9 * t.stepSeconds);
  EXPECT_GT(t.mfu, 0);
  EXPECT_LT(t.mfu, 1);
}

} // namespace
