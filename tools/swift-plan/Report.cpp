//===- Report.cpp - swift-plan's report and JSON --------------------------===//

#include "Report.h"
#include "ReportParts.h"

#include "swift/Cost/Search.h"
#include "swift/Html/Html.h"
#include "swift/Dialect/SwiftOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using mlir::swift::CandidateAttr;
using mlir::swift::DecisionAttr;
using mlir::swift::EstimateAttr;
using mlir::swift::JobOp;
using mlir::swift::MeshAttr;
using mlir::swift::WhatIf;

namespace swift::report {
namespace {

double real(const llvm::APFloat &x) { return x.convertToDouble(); }

/// What the annotate pass counted on the job (0s before it).
struct Counts {
  int64_t parameters = 0, trainableParameters = 0, tokensPerStep = 0;
};
Counts counts(JobOp job) {
  mlir::swift::CountsAttr c = job.getCountsAttr();
  if (!c)
    return {};
  return {c.getParameters(), c.getTrainableParameters(), c.getTokensPerStep()};
}

/// The breakdown, largest part first (ties in name order).
std::vector<std::pair<std::string, int64_t>> breakdown(EstimateAttr e) {
  std::vector<std::pair<std::string, int64_t>> parts;
  for (NamedAttribute part : e.getBreakdown())
    parts.push_back(
        {part.getName().str(), cast<IntegerAttr>(part.getValue()).getInt()});
  std::stable_sort(parts.begin(), parts.end(),
                   [](auto &a, auto &b) { return a.second > b.second; });
  return parts;
}

/// 8030261248 -> "8,030,261,248".
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

/// 8030261248 -> "8.03B".
std::string humanCount(int64_t n) {
  char buffer[32];
  if (n >= 1000000000)
    snprintf(buffer, sizeof(buffer), "%.2fB", n / 1e9);
  else if (n >= 1000000)
    snprintf(buffer, sizeof(buffer), "%.1fM", n / 1e6);
  else
    snprintf(buffer, sizeof(buffer), "%lld", static_cast<long long>(n));
  return buffer;
}

std::string gib(int64_t bytes) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%.2f GiB", bytes / double(int64_t(1) << 30));
  return buffer;
}

std::string seconds(double s) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), s < 0.01 ? "%.4f s" : "%.3f s", s);
  return buffer;
}

template <typename E> std::string strategyKey(const std::optional<E> &v) {
  return v ? plan::toString(*v) : "auto";
}

/// " (lr 0.0003, betas [0.9, 0.95], ...)" when the job sets the optimizer's
/// settings, else "" (the report of a job without them is unchanged).
std::string optimizerSettingsText(const job::TrainingSpec &t) {
  if (!t.optimizerSettingsGiven)
    return "";
  const plan::OptimizerConfig &o = t.optimizerConfig;
  const plan::LrScheduleConfig &l = t.lrSchedule;
  std::string out;
  llvm::raw_string_ostream os(out);
  os << " (lr " << llvm::format("%g", o.lr) << ", betas ["
     << llvm::format("%g", o.beta1) << ", " << llvm::format("%g", o.beta2)
     << "], eps " << llvm::format("%g", o.eps) << ", weight_decay "
     << llvm::format("%g", o.weightDecay) << "; lr " << plan::toString(l.decay);
  if (l.minLrRatio > 0)
    os << " to " << llvm::format("%g", l.minLrRatio) << " x lr";
  if (l.warmupSteps > 0)
    os << " after " << l.warmupSteps << " warmup steps";
  os << "; max_grad_norm ";
  if (t.maxGradNorm && *t.maxGradNorm > 0)
    os << llvm::format("%g", *t.maxGradNorm);
  else
    os << "none";
  os << "; seed " << t.seed << ")";
  return out;
}

void printJob(raw_ostream &os, const job::JobSpec &job, const Counts &facts) {
  const auto &m = job.model;
  const auto &t = job.training;
  const auto &c = job.cluster;
  os << "job       " << job.path << "\n";
  os << "model     " << m.name << " (" << m.modelType << "): "
     << m.numHiddenLayers << " layers, hidden " << m.hiddenSize << ", ffn "
     << m.intermediateSize << ", heads " << m.numAttentionHeads << " (kv "
     << m.numKeyValueHeads << ", dim " << m.headDim << "), vocab "
     << m.vocabSize << (m.tieWordEmbeddings ? ", tied embeddings" : "")
     << (m.qkvBias ? ", qkv bias" : "") << (m.qkNorm ? ", qk-norm" : "")
     << "\n";
  os << "          " << grouped(facts.parameters) << " parameters ("
     << humanCount(facts.parameters) << ")";
  if (facts.trainableParameters != facts.parameters)
    os << ", " << grouped(facts.trainableParameters) << " trainable ("
       << plan::toString(t.method) << " rank " << t.lora.rank << ")";
  os << "\n";
  if (!m.weights.empty())
    os << "          weights " << m.weights << " (safetensors)\n";
  os << "training  " << t.sequenceLength << " tokens x " << t.globalBatchSize
     << " sequences = " << grouped(facts.tokensPerStep)
     << " tokens per step; micro-batch "
     << (t.microBatchSize ? std::to_string(*t.microBatchSize) : "auto") << "; "
     << plan::toString(t.precision) << " " << plan::toString(t.optimizer)
     << optimizerSettingsText(t) << ", " << plan::toString(t.method) << "\n";
  os << "cluster   " << c.nodes << " node" << (c.nodes > 1 ? "s" : "") << " x "
     << c.gpusPerNode << " " << c.gpu.name << " = " << c.numGpus()
     << " GPUs; " << llvm::format("%g", c.gpu.memoryGiB) << " GiB, "
     << llvm::format("%g", c.gpu.bf16Tflops) << " TFLOP/s bf16, ";
  if (c.gpu.fp8Tflops > 0)
    os << llvm::format("%g", c.gpu.fp8Tflops) << " fp8, ";
  os << llvm::format("%g", c.gpu.hbmGBps) << " GB/s each\n";
  os << "          intra-node " << c.intraNode.name << " ("
     << llvm::format("%g", c.intraNode.bandwidthGBps) << " GB/s)";
  if (c.nodes > 1)
    os << ", inter-node " << c.interNode.name << " ("
       << llvm::format("%g", c.interNode.bandwidthGBps) << " GB/s)";
  os << "; host " << llvm::format("%g", c.hostMemoryGiB) << " GiB per node\n";
  os << "backend   " << plan::toString(job.backend) << "; strategy: zero "
     << (job.strategy.zero ? std::to_string(*job.strategy.zero) : "auto")
     << ", offload " << strategyKey(job.strategy.offload) << ", checkpointing "
     << strategyKey(job.strategy.checkpointing);
  if (job.strategy.checkpointLayers)
    os << " (first " << *job.strategy.checkpointLayers << " layers)";
  if (job.strategy.offloadActivations)
    os << ", offload_activations " << *job.strategy.offloadActivations;
  if (job.strategy.mlpTileTokens)
    os << ", mlp_tile_tokens " << *job.strategy.mlpTileTokens;
  os << "\n";
}

/// The candidate's shard groups when it has several (HSDP): its mesh's
/// dp_shard and dp_replicate; nullopt for one group of every GPU.
std::optional<std::pair<int64_t, int64_t>> shardGroups(CandidateAttr c) {
  MeshAttr mesh = c ? c.getMesh() : MeshAttr();
  if (!mesh || mesh.getDpReplicate() <= 1)
    return std::nullopt;
  return std::make_pair(mesh.getDpShard(), mesh.getDpReplicate());
}

/// The candidate's mesh when it splits the model (tp, pp or cp above 1);
/// null otherwise.
MeshAttr splitMesh(CandidateAttr c) {
  MeshAttr mesh = c ? c.getMesh() : MeshAttr();
  if (!mesh || (mesh.getTp() <= 1 && mesh.getPp() <= 1 && mesh.getCp() <= 1))
    return MeshAttr();
  return mesh;
}

/// "tp 8 x pp 16 (interleaved, 2 virtual) x cp 2 x dp 4" for a mesh that
/// splits the model, then "HSDP: shard groups of 8, 4 replicas" (DeepSpeed:
/// "ZeRO++ hpZ: ..."); "" for one group of every GPU.
std::string layoutSummary(CandidateAttr c, plan::Backend backend) {
  std::string text;
  if (MeshAttr mesh = splitMesh(c)) {
    auto part = [&](const char *name, int64_t degree) {
      if (degree > 1)
        text += (text.empty() ? "" : " x ") + std::string(name) + " " +
                std::to_string(degree);
    };
    part("tp", mesh.getTp());
    part("pp", mesh.getPp());
    if (mesh.getPp() > 1) {
      text += " (" + std::string(plan::toString(mesh.getPpSchedule()));
      if (mesh.getVirtualStages() > 1)
        text += ", " + std::to_string(mesh.getVirtualStages()) + " virtual";
      text += ")";
    }
    part("cp", mesh.getCp());
    text += " x dp " + std::to_string(mesh.getDpShard() * mesh.getDpReplicate());
  }
  auto groups = shardGroups(c);
  if (!groups)
    return text;
  std::string S = std::to_string(groups->first),
              R = std::to_string(groups->second);
  text += text.empty() ? "" : "; ";
  if (backend == plan::Backend::DeepSpeed)
    return text + "ZeRO++ hpZ: secondary weight partitions in groups of " + S +
           ", " + R + " groups";
  return text + "HSDP: shard groups of " + S + ", " + R + " replicas";
}

/// The decisions of one strategy as JSON attributes (docs/design.md's keys).
void writeDecisions(llvm::json::OStream &j, CandidateAttr s) {
  j.attribute("zero", s.getZero());
  j.attribute("offload", plan::toString(s.getOffload()));
  j.attribute("checkpointing", plan::toString(s.getCheckpointing()));
  if (s.getCheckpointLayers() >= 0)
    j.attribute("checkpoint_layers", s.getCheckpointLayers());
  if (s.getOffloadActivations() != 0)
    j.attribute("offload_activations", s.getOffloadActivations());
  if (s.getMlpTileTokens() != 0)
    j.attribute("mlp_tile_tokens", s.getMlpTileTokens());
  if (MeshAttr mesh = splitMesh(s)) { // tp = pp = cp = 1: left out
    j.attribute("tp", mesh.getTp());
    j.attribute("pp", mesh.getPp());
    j.attribute("cp", mesh.getCp());
    if (mesh.getPp() > 1) {
      j.attribute("pp_schedule", plan::toString(mesh.getPpSchedule()));
      j.attribute("virtual_stages", mesh.getVirtualStages());
    }
  }
  if (auto groups = shardGroups(s)) { // one group of every GPU: left out
    j.attribute("dp_shard", groups->first);
    j.attribute("dp_replicate", groups->second);
  }
  j.attribute("micro_batch_size", s.getMicroBatchSize());
  j.attribute("gradient_accumulation", s.getGradientAccumulation());
}

/// Where the strategy keeps activations beyond the GPU: the layer inputs on
/// the host, the MLP in tiles (the search adds them to a fully checkpointed
/// strategy only when it does not fit the GPU without them).
void printActivationDecisions(raw_ostream &os, CandidateAttr s, EstimateAttr e,
                              int64_t checkpointed) {
  if (int64_t k = s.getOffloadActivations()) {
    const int64_t n = k < 0 ? checkpointed : std::min(k, checkpointed);
    os << "  activation offload: the checkpointed inputs of layers 0-" << n - 1
       << " wait in pinned host memory (" << gib(e.getOffloadedActivationBytes())
       << " per GPU); their copies take "
       << llvm::format("%.3g", real(e.getActivationCopySeconds().value_or(
                                   llvm::APFloat(0.0))))
       << " s per step, "
       << llvm::format("%.3g", real(e.getActivationOffloadSeconds().value_or(
                                   llvm::APFloat(0.0))))
       << " s of it not hidden under the layers' compute\n";
  }
  if (int64_t t = s.getMlpTileTokens())
    os << "  MLP tiles of " << t
       << " tokens: each layer's MLP keeps only its input and recomputes its "
          "gate/up and SwiGLU tile by tile in backward\n";
  if (s.getOffloadActivations() || s.getMlpTileTokens())
    os << "  (added because the fully checkpointed strategy does not fit the "
          "GPU without them; set strategy.offload_activations and "
          "strategy.mlp_tile_tokens to fix them)\n";
}

/// The work and memory of each op of one decoder layer, from `swift.cost`.
void printLayerOps(raw_ostream &os, ModuleOp module) {
  os << "  one decoder layer, per micro-batch (math-level saved tensors):\n";
  os << llvm::format("    %-30s %14s %14s %14s %12s\n", "op", "fwd GFLOP",
                     "bwd GFLOP", "recompute", "saved MiB");
  module.walk([&](mlir::swift::RepeatOp repeat) {
    for (Operation &op : repeat.getBody().front()) {
      mlir::swift::OpCostAttr cost = mlir::swift::getOpCost(&op);
      if (!cost)
        continue;
      std::string name = op.getName().stripDialect().str();
      if (auto linear = dyn_cast<mlir::swift::LinearOp>(op))
        name += " " + linear.getWeightName().str();
      os << llvm::format("    %-30s %14.1f %14.1f %14.1f %12.1f\n", name.c_str(),
                         cost.getForwardFlops() / 1e9,
                         cost.getBackwardFlops() / 1e9,
                         cost.getRecomputeFlops() / 1e9,
                         cost.getSavedBytes() / double(1 << 20));
    }
  });
}

} // namespace

/// "zero 3, offload none, checkpointing full, micro-batch 2 x 8 accumulation".
std::string describe(CandidateAttr c) {
  cost::Strategy s;
  s.zero = static_cast<int>(c.getZero());
  s.offload = c.getOffload();
  s.checkpointing = c.getCheckpointing();
  s.checkpointLayers = c.getCheckpointLayers();
  s.offloadActivations = c.getOffloadActivations();
  s.mlpTileTokens = c.getMlpTileTokens();
  s.microBatchSize = c.getMicroBatchSize();
  s.gradientAccumulation = c.getGradientAccumulation();
  if (MeshAttr mesh = splitMesh(c)) {
    s.layout.tp = mesh.getTp();
    s.layout.pp = mesh.getPp();
    s.layout.cp = mesh.getCp();
    s.layout.schedule = mesh.getPpSchedule();
    s.layout.virtualStages = mesh.getVirtualStages();
  }
  if (auto groups = shardGroups(c))
    s.layout.dpShard = groups->first;
  return cost::describe(s);
}

/// The host memory per node the search let a strategy use.
int64_t usableHostBytes(JobOp job, DecisionAttr decision) {
  return cost::usableHostBytes(job.lookupCluster().hardware(),
                               real(decision.getMemoryMargin()));
}

std::string pricedSummary(JobOp job) {
  DecisionAttr decision = job.getDecisionAttr();
  EstimateAttr e = job.getEstimateAttr();
  if (!decision || !e)
    return "not priced";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << describe(decision.getPicked()) << ", peaks at "
     << gib(e.getPeakBytes()) << " per GPU of " << gib(decision.getUsableBytes())
     << " usable";
  int64_t usableHost = usableHostBytes(job, decision);
  if (!decision.getFits() && e.getHostBytes() > usableHost)
    os << " and needs " << gib(e.getHostBytes()) << " of host memory per node of "
       << gib(usableHost) << " usable";
  if (decision.getFits())
    os << ", " << grouped(int64_t(real(e.getTokensPerSecond())))
       << " tokens/s predicted";
  return text;
}

int64_t stepsOf(const DataPlan &d, int64_t globalBatchSize) {
  const double windows = double(d.stats.summary.windows) * d.epochs;
  return std::max<int64_t>(1, int64_t(std::ceil(windows / double(globalBatchSize) - 1e-9)));
}

/// The data section: what the file becomes and how long its epochs take.
static void printData(raw_ostream &os, const job::JobSpec &spec,
                      EstimateAttr e, const DataPlan &d) {
  const data::DatasetStats &s = d.stats;
  const int64_t gbs = spec.training.globalBatchSize;
  const double step = e ? real(e.getStepSeconds()) : 0;
  os << "data      " << s.summary.line() << "\n";
  os << "          sample lengths (tokens): shortest " << s.shortest
     << ", median " << s.median << ", 90% " << s.p90 << ", 99% " << s.p99
     << ", longest " << s.longest << "\n";
  os << "          an epoch is " << grouped(s.stepsPerEpoch) << " steps of "
     << gbs << " windows";
  if (step > 0)
    os << ", about " << html::duration(double(s.stepsPerEpoch) * step);
  const int64_t steps = stepsOf(d, gbs);
  os << "; " << llvm::format("%g", d.epochs) << " epoch"
     << (d.epochs == 1 ? "" : "s") << " = " << grouped(steps) << " steps";
  if (step > 0)
    os << ", about " << html::duration(double(steps) * step) << " on "
       << spec.cluster.numGpus() << "x " << spec.cluster.gpu.name;
  os << "\n          tokens "
     << (s.cacheEntry.empty() ? std::string("not cached (--data-cache off)")
         : s.reused           ? "from the token cache " + s.cacheEntry
                              : "cached in " + s.cacheEntry)
     << "\n";
}

/// The strategy's mesh when it splits the model; else its shard groups,
/// when it has several, and why: where its
/// collectives run, and what one group of every GPU would cost instead
/// (the best such alternative's verdict).
static void printLayout(raw_ostream &os, const job::JobSpec &spec,
                        CandidateAttr s, DecisionAttr decision) {
  // A mesh that splits the model: its degrees, and what the best runner-up
  // without a split (tp = pp = cp = 1) would cost.
  if (splitMesh(s)) {
    os << "layout    " << layoutSummary(s, spec.backend) << "\n";
    for (CandidateAttr a : decision.getAlternativeCandidates())
      if (!splitMesh(a)) {
        os << "          no tensor, pipeline or context parallelism ("
           << describe(a) << "): " << a.getVerdict() << "\n";
        break;
      }
    return;
  }
  auto groups = shardGroups(s);
  if (!groups)
    return;
  const auto [S, R] = *groups;
  const job::ClusterSpec &c = spec.cluster;
  const std::string within =
      S <= c.gpusPerNode ? "within a node (" + c.intraNode.name + ")"
                         : "over " + std::to_string((S + c.gpusPerNode - 1) /
                                                    c.gpusPerNode) +
                               " nodes (" + c.interNode.name + ")";
  // A replica group: R ranks S apart.
  const std::string across =
      S * R > c.gpusPerNode ? c.interNode.name : c.intraNode.name;
  os << "layout    " << layoutSummary(s, spec.backend) << "\n          ";
  if (spec.backend == plan::Backend::DeepSpeed)
    os << "states sharded over all " << c.numGpus()
       << " ranks; each rank also keeps its slice of the weights over its "
          "group of "
       << S << ", so every gather after the step's first forward runs "
       << within << "\n";
  else
    os << "model states sharded over each group of " << S
       << ": its gathers and reduce-scatters run " << within
       << "; one all-reduce per unit of the reduced gradient shards crosses "
          "the "
       << R << " groups (" << across << ")\n";
  for (CandidateAttr a : decision.getAlternativeCandidates())
    if (!shardGroups(a)) {
      os << "          one group of all " << c.numGpus() << " GPUs ("
         << describe(a) << "): " << a.getVerdict() << "\n";
      break;
    }
}

void printReport(raw_ostream &os, const job::JobSpec &spec, JobOp job,
                 const Replanned &replanned, bool explain,
                 const DataPlan *data) {
  printJob(os, spec, counts(job));
  DecisionAttr decision = job.getDecisionAttr();
  CandidateAttr s = decision ? decision.getPicked() : CandidateAttr();
  EstimateAttr e = job.getEstimateAttr();
  if (!s || !e)
    return;
  int64_t gpus = spec.cluster.numGpus();
  os << "\n";
  if (decision.getFits())
    os << "strategy  " << describe(s) << "\n          (chosen from "
       << decision.getEvaluated() << " strategies priced)\n";
  else
    os << "NOTHING FITS. closest strategy: " << describe(s) << "\n";
  printLayout(os, spec, s, decision);
  os << "memory    peak " << gib(e.getPeakBytes()) << " per GPU at "
     << e.getPeakPhase();
  if (e.getPeakLayer() >= 0)
    os << " of layer " << e.getPeakLayer();
  os << " (" << e.getPeakOp() << "); usable " << gib(decision.getUsableBytes())
     << " = " << gib(e.getCapacityBytes()) << " capacity - "
     << llvm::format("%.0f", 100 * real(decision.getMemoryMargin()))
     << "% margin for allocator fragmentation\n";
  for (const auto &[name, bytes] : breakdown(e))
    os << llvm::format("            %-24s %12s\n", name.c_str(), gib(bytes).c_str());
  int64_t usableHost = usableHostBytes(job, decision);
  os << "          host memory per node " << gib(e.getHostBytes())
     << " for " << spec.cluster.gpusPerNode << " rank"
     << (spec.cluster.gpusPerNode > 1 ? "s" : "") << "; usable "
     << gib(usableHost) << " = "
     << llvm::format("%g", spec.cluster.hostMemoryGiB) << " GiB - "
     << llvm::format("%.0f", 100 * real(decision.getMemoryMargin()))
     << "% margin\n";
  os << "time      step " << seconds(real(e.getStepSeconds())) << " = compute "
     << seconds(real(e.getComputeSeconds()));
  if (real(e.getRecomputeSeconds()) > 0)
    os << " (recompute " << seconds(real(e.getRecomputeSeconds())) << ")";
  // A pipeline's fill and drain (mesh backends).
  if (std::optional<llvm::APFloat> bubble = e.getPipelineBubbleSeconds())
    os << " + pipeline bubble " << seconds(real(*bubble));
  os << " + exposed communication "
     << seconds(real(e.getExposedCommunicationSeconds())) << " (of "
     << seconds(real(e.getCommunicationSeconds())) << ") + offload "
     << seconds(real(e.getOffloadSeconds())) << " + optimizer "
     << seconds(real(e.getOptimizerSeconds())) << "\n";
  double tokensPerSecond = real(e.getTokensPerSecond());
  os << "throughput " << grouped(int64_t(tokensPerSecond)) << " tokens/s ("
     << grouped(int64_t(tokensPerSecond / gpus)) << " per GPU), MFU "
     << llvm::format("%.1f", 100 * real(e.getMfu())) << "%";
  // MFU counts against the bf16 peak whatever the GEMMs run in (as the
  // benchmarks count it).
  if (plan::fp8Gemms(job.getPrecision()))
    os << " of the bf16 peak; the decoder linears' GEMMs run FP8";
  os << "\n";
  if (data) // the time of a strategy that fits only
    printData(os, spec, decision.getFits() ? e : EstimateAttr(), *data);
  SmallVector<CandidateAttr> alternatives = decision.getAlternativeCandidates();
  if (!alternatives.empty()) {
    os << "alternatives\n";
    for (CandidateAttr a : alternatives)
      os << "  - " << describe(a) << ": " << a.getVerdict() << "\n";
  }
  // A faster change: "LABEL     CHANGE: STRATEGY, N tokens/s (1.22x), peak".
  auto printFaster = [&](const char *label, const std::optional<WhatIf> &f) {
    if (!f)
      return;
    double faster = real(f->estimate.getTokensPerSecond());
    os << llvm::format("%-10s", label) << f->change << ": "
       << describe(f->strategy) << ", " << grouped(int64_t(faster))
       << " tokens/s (" << llvm::format("%.2f", faster / tokensPerSecond)
       << "x), peak " << gib(f->estimate.getPeakBytes()) << "\n";
  };
  printFaster("faster", replanned.fasterIfOpen);
  printFaster("fp8", replanned.fasterWithFp8);
  printFaster("no clip", replanned.withoutClipping);
  printFaster("stack", replanned.fasterOnStack);
  if (!decision.getFits()) {
    // The closest strategy may fit the GPU and fail on the host's memory
    // (its ranks and what they offload): then there is no GPU shortfall to
    // name.
    int64_t shortfall = decision.getShortfallBytes().value_or(0);
    int64_t hostShortfall = e.getHostBytes() - usableHost;
    if (shortfall > 0)
      os << "\nshort by " << gib(shortfall) << " per GPU"
         << (hostShortfall > 0 ? ", and by " + gib(hostShortfall) +
                                     " of host memory per node. "
                               : ". ");
    else
      os << "\nshort of host memory by " << gib(hostShortfall)
         << " per node: the closest strategy fits the GPU, but its ranks "
            "and what they offload do not fit the host. ";
    if (replanned.changesThatFit.empty()) {
      os << "No single change tried (more GPUs, offload, checkpointing, "
            "LoRA/QLoRA, shorter sequence) makes it fit.\n";
    } else {
      os << "Changes that fit:\n";
      for (const WhatIf &w : replanned.changesThatFit)
        os << "  - " << w.change << ": " << describe(w.strategy) << ", peak "
           << gib(w.estimate.getPeakBytes()) << ", "
           << grouped(int64_t(real(w.estimate.getTokensPerSecond())))
           << " tokens/s\n";
    }
  }
  if (explain) {
    os << "\nexplain\n";
    os << "  peak by phase: forward " << gib(e.getForwardPeakBytes())
       << ", backward " << gib(e.getBackwardPeakBytes()) << ", optimizer "
       << gib(e.getOptimizerPeakBytes()) << "\n";
    int64_t L = spec.model.numHiddenLayers;
    int64_t k = s.getCheckpointing() == plan::Checkpointing::None ? 0
                : s.getCheckpointLayers() < 0                     ? L
                                                : s.getCheckpointLayers();
    os << "  activations kept per decoder layer: "
       << gib(e.getLayerActivationBytes()) << " (x " << (L - k) << " layers)";
    if (k)
      os << ", checkpointed " << gib(e.getCheckpointedLayerBytes()) << " (x "
         << k << " layers, one layer recomputed at a time)";
    os << "; head and loss " << gib(e.getHeadActivationBytes()) << "\n";
    printActivationDecisions(os, s, e, k);
    printLayerOps(os, job->getParentOfType<ModuleOp>());
  }
}

/// printJson()'s object, unchecked.
static void writeJson(raw_ostream &os, const job::JobSpec &spec, JobOp job,
                      const Replanned &replanned, const DataPlan *data) {
  const auto &m = spec.model;
  const auto &t = spec.training;
  const auto &c = spec.cluster;
  Counts facts = counts(job);
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("job", spec.path);
    j.attributeObject("model", [&] {
      j.attribute("name", m.name);
      j.attribute("model_type", m.modelType);
      j.attribute("parameters", facts.parameters);
      j.attribute("trainable_parameters", facts.trainableParameters);
      j.attribute("hidden_size", m.hiddenSize);
      j.attribute("intermediate_size", m.intermediateSize);
      j.attribute("num_hidden_layers", m.numHiddenLayers);
      j.attribute("num_attention_heads", m.numAttentionHeads);
      j.attribute("num_key_value_heads", m.numKeyValueHeads);
      j.attribute("head_dim", m.headDim);
      j.attribute("vocab_size", m.vocabSize);
      j.attribute("tie_word_embeddings", m.tieWordEmbeddings);
      if (!m.weights.empty())
        j.attribute("weights", m.weights);
    });
    j.attributeObject("training", [&] {
      j.attribute("sequence_length", t.sequenceLength);
      j.attribute("global_batch_size", t.globalBatchSize);
      j.attribute("tokens_per_step", facts.tokensPerStep);
      j.attribute("precision", plan::toString(t.precision));
      j.attribute("optimizer", plan::toString(t.optimizer));
      if (t.optimizerSettingsGiven) { // left out for jobs without them
        const plan::OptimizerConfig &o = t.optimizerConfig;
        j.attributeObject("optimizer_settings", [&] {
          j.attribute("lr", o.lr);
          j.attributeArray("betas", [&] {
            j.value(o.beta1);
            j.value(o.beta2);
          });
          j.attribute("eps", o.eps);
          j.attribute("weight_decay", o.weightDecay);
        });
        j.attributeObject("lr_schedule", [&] {
          j.attribute("warmup_steps", t.lrSchedule.warmupSteps);
          j.attribute("decay", plan::toString(t.lrSchedule.decay));
          j.attribute("min_lr_ratio", t.lrSchedule.minLrRatio);
        });
        if (t.maxGradNorm && *t.maxGradNorm > 0)
          j.attribute("max_grad_norm", *t.maxGradNorm);
        j.attribute("seed", static_cast<int64_t>(t.seed));
      }
      j.attribute("method", plan::toString(t.method));
    });
    j.attributeObject("cluster", [&] {
      j.attribute("gpu", c.gpu.name);
      j.attribute("gpu_memory_bytes",
                  static_cast<int64_t>(c.gpu.memoryGiB * (int64_t(1) << 30)));
      j.attribute("gpus_per_node", c.gpusPerNode);
      j.attribute("nodes", c.nodes);
      j.attribute("gpus", c.numGpus());
      j.attribute("intra_node", c.intraNode.name);
      j.attribute("inter_node", c.interNode.name);
    });
    j.attribute("backend", plan::toString(spec.backend));
    DecisionAttr decision = job.getDecisionAttr();
    CandidateAttr s = decision ? decision.getPicked() : CandidateAttr();
    EstimateAttr e = job.getEstimateAttr();
    if (!s || !e)
      return;
    bool fits = decision.getFits();
    mlir::swift::StrategyAttr strategy = job.getStrategy();
    j.attribute("status", fits ? "fits" : "nothing-fits");
    j.attributeObject("strategy", [&] {
      writeDecisions(j, s);
      if (std::string layout = layoutSummary(s, spec.backend); !layout.empty())
        j.attribute("layout", layout);
      j.attribute("bucket_bytes", strategy.getBucketBytes().value_or(0));
      j.attribute("prefetch_depth", strategy.getPrefetchDepth().value_or(0));
    });
    j.attributeObject("memory", [&] {
      j.attribute("peak_bytes", e.getPeakBytes());
      j.attribute("capacity_bytes", e.getCapacityBytes());
      j.attribute("usable_bytes", decision.getUsableBytes());
      j.attribute("fits", fits);
      j.attributeObject("breakdown", [&] {
        for (const auto &[name, bytes] : breakdown(e))
          j.attribute(name, bytes);
      });
      j.attributeObject("peak", [&] {
        j.attribute("phase", e.getPeakPhase());
        j.attribute("layer", e.getPeakLayer());
        j.attribute("op", e.getPeakOp());
      });
      j.attribute("forward_peak_bytes", e.getForwardPeakBytes());
      j.attribute("backward_peak_bytes", e.getBackwardPeakBytes());
      j.attribute("optimizer_peak_bytes", e.getOptimizerPeakBytes());
      j.attribute("host_bytes_per_node", e.getHostBytes());
      j.attribute("usable_host_bytes_per_node", usableHostBytes(job, decision));
    });
    j.attributeObject("time", [&] {
      j.attribute("step_seconds", real(e.getStepSeconds()));
      j.attribute("compute_seconds", real(e.getComputeSeconds()));
      j.attribute("recompute_seconds", real(e.getRecomputeSeconds()));
      j.attribute("communication_seconds", real(e.getCommunicationSeconds()));
      j.attribute("exposed_communication_seconds",
                  real(e.getExposedCommunicationSeconds()));
      j.attribute("offload_seconds", real(e.getOffloadSeconds()));
      j.attribute("optimizer_seconds", real(e.getOptimizerSeconds()));
    });
    j.attributeObject("throughput", [&] {
      double tokensPerSecond = real(e.getTokensPerSecond());
      j.attribute("tokens_per_second", tokensPerSecond);
      j.attribute("tokens_per_second_per_gpu", tokensPerSecond / c.numGpus());
      j.attribute("mfu", real(e.getMfu()));
    });
    if (data)
      j.attributeObject("data", [&] {
        const data::DatasetStats &d = data->stats;
        const data::DataSummary &sum = d.summary;
        j.attribute("path", sum.path);
        j.attribute("samples", sum.samples);
        j.attribute("tokens", sum.tokens);
        j.attribute("trained_tokens", sum.trained);
        j.attribute("dropped", sum.dropped);
        j.attribute("truncated", sum.truncated);
        j.attribute("windows", sum.windows);
        j.attribute("packing_efficiency", sum.packingEfficiency());
        j.attributeObject("sample_tokens", [&] {
          j.attribute("shortest", d.shortest);
          j.attribute("median", d.median);
          j.attribute("p90", d.p90);
          j.attribute("p99", d.p99);
          j.attribute("longest", d.longest);
        });
        const int64_t steps = stepsOf(*data, t.globalBatchSize);
        j.attribute("steps_per_epoch", d.stepsPerEpoch);
        j.attribute("epochs", data->epochs);
        j.attribute("steps", steps);
        j.attribute("epoch_seconds",
                    double(d.stepsPerEpoch) * real(e.getStepSeconds()));
        j.attribute("run_seconds", double(steps) * real(e.getStepSeconds()));
        j.attribute("token_cache", d.cacheEntry);
      });
    j.attributeArray("alternatives", [&] {
      for (CandidateAttr a : decision.getAlternativeCandidates())
        j.object([&] {
          j.attribute("strategy", describe(a));
          writeDecisions(j, a);
          j.attribute("fits", a.getFits());
          j.attribute("peak_bytes", a.getPeakBytes());
          j.attribute("tokens_per_second", real(a.getTokensPerSecond()));
          j.attribute("why_not", a.getVerdict());
        });
    });
    auto writeWhatIf = [&](const WhatIf &w) {
      j.attribute("change", w.change);
      j.attribute("strategy", describe(w.strategy));
      j.attribute("peak_bytes", w.estimate.getPeakBytes());
      j.attribute("tokens_per_second", real(w.estimate.getTokensPerSecond()));
    };
    if (const std::optional<WhatIf> &f = replanned.fasterIfOpen)
      j.attributeObject("faster_if_open", [&] { writeWhatIf(*f); });
    if (const std::optional<WhatIf> &f = replanned.fasterWithFp8)
      j.attributeObject("faster_with_fp8", [&] { writeWhatIf(*f); });
    if (const std::optional<WhatIf> &f = replanned.withoutClipping)
      j.attributeObject("without_clipping", [&] { writeWhatIf(*f); });
    if (const std::optional<WhatIf> &f = replanned.fasterOnStack)
      j.attributeObject("faster_on_stack", [&] { writeWhatIf(*f); });
    j.attributeObject("search", [&] {
      j.attribute("evaluated", decision.getEvaluated());
      j.attribute("considered", decision.getConsidered());
      j.attribute("memory_margin", real(decision.getMemoryMargin()));
    });
    if (!fits) {
      j.attribute("shortfall_bytes", decision.getShortfallBytes().value_or(0));
      j.attributeArray("suggestions", [&] {
        for (const WhatIf &w : replanned.changesThatFit)
          j.object([&] { writeWhatIf(w); });
      });
    }
  });
  os << "\n";
}

bool printJson(raw_ostream &out, const job::JobSpec &spec, JobOp job,
               const Replanned &replanned, std::string &error,
               const DataPlan *data) {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeJson(os, spec, job, replanned, data);
  // llvm::json prints a NaN or infinite double as nan / inf, which is not
  // JSON; the job reader rejects non-finite inputs, so one here is a bug in
  // an estimate: say which line rather than print it.
  if (llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text)) {
    out << text;
    return true;
  } else {
    llvm::consumeError(parsed.takeError());
  }
  llvm::StringRef rest(text);
  while (!rest.empty()) {
    auto [line, next] = rest.split('\n');
    llvm::StringRef value =
        (line.contains(':') ? line.rsplit(':').second : line).trim().rtrim(',');
    if (!value.starts_with("\"") && (value.contains_insensitive("nan") ||
                                     value.contains_insensitive("inf"))) {
      error = "an estimate is not a finite number: " + line.trim().str();
      return false;
    }
    rest = next;
  }
  error = "the JSON report is not valid JSON";
  return false;
}

} // namespace swift::report
