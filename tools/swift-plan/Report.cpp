//===- Report.cpp - swift-plan's report and JSON --------------------------===//

#include "Report.h"

#include "swift/Dialect/SwiftOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace mlir;

namespace swift::report {
namespace {

int64_t getInt(DictionaryAttr d, StringRef key) {
  auto a = d ? d.getAs<IntegerAttr>(key) : IntegerAttr();
  return a ? a.getInt() : 0;
}
double getReal(DictionaryAttr d, StringRef key) {
  auto a = d ? d.getAs<FloatAttr>(key) : FloatAttr();
  return a ? a.getValueAsDouble() : 0;
}
std::string getString(DictionaryAttr d, StringRef key) {
  auto a = d ? d.getAs<StringAttr>(key) : StringAttr();
  return a ? a.getValue().str() : "";
}

StrategyFacts readStrategy(DictionaryAttr d) {
  StrategyFacts s;
  s.text = getString(d, "strategy");
  s.zero = getInt(d, "zero");
  s.offload = getString(d, "offload");
  s.checkpointing = getString(d, "checkpointing");
  s.checkpointLayers = getInt(d, "checkpoint_layers");
  s.microBatchSize = getInt(d, "micro_batch_size");
  s.gradientAccumulation = getInt(d, "gradient_accumulation");
  auto fits = d.getAs<BoolAttr>("fits");
  s.fits = fits && fits.getValue();
  s.peakBytes = getInt(d, "peak_bytes");
  s.stepSeconds = getReal(d, "step_seconds");
  s.tokensPerSecond = getReal(d, "tokens_per_second");
  s.verdict = getString(d, "verdict");
  return s;
}

EstimateFacts readEstimate(DictionaryAttr d) {
  EstimateFacts e;
  e.peakBytes = getInt(d, "peak_bytes");
  e.capacityBytes = getInt(d, "capacity_bytes");
  e.hostBytes = getInt(d, "host_bytes");
  auto peak = d.getAs<DictionaryAttr>("peak");
  e.peakPhase = getString(peak, "phase");
  e.peakOp = getString(peak, "op");
  e.peakLayer = getInt(peak, "layer");
  if (auto breakdown = d.getAs<DictionaryAttr>("breakdown"))
    for (NamedAttribute part : breakdown)
      e.breakdown.push_back(
          {part.getName().str(), cast<IntegerAttr>(part.getValue()).getInt()});
  // Largest first.
  std::stable_sort(e.breakdown.begin(), e.breakdown.end(),
                   [](auto &a, auto &b) { return a.second > b.second; });
  e.forwardPeakBytes = getInt(d, "forward_peak_bytes");
  e.backwardPeakBytes = getInt(d, "backward_peak_bytes");
  e.optimizerPeakBytes = getInt(d, "optimizer_peak_bytes");
  e.layerActivationBytes = getInt(d, "layer_activation_bytes");
  e.checkpointedLayerBytes = getInt(d, "checkpointed_layer_bytes");
  e.headActivationBytes = getInt(d, "head_activation_bytes");
  e.stepSeconds = getReal(d, "step_seconds");
  e.computeSeconds = getReal(d, "compute_seconds");
  e.recomputeSeconds = getReal(d, "recompute_seconds");
  e.communicationSeconds = getReal(d, "communication_seconds");
  e.exposedCommunicationSeconds = getReal(d, "exposed_communication_seconds");
  e.offloadSeconds = getReal(d, "offload_seconds");
  e.optimizerSeconds = getReal(d, "optimizer_seconds");
  e.tokensPerSecond = getReal(d, "tokens_per_second");
  e.mfu = getReal(d, "mfu");
  return e;
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

void printJob(raw_ostream &os, const job::JobSpec &job,
              const JobFacts &facts) {
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
  os << "training  " << t.sequenceLength << " tokens x " << t.globalBatchSize
     << " sequences = " << grouped(facts.tokensPerStep)
     << " tokens per step; micro-batch "
     << (t.microBatchSize ? std::to_string(*t.microBatchSize) : "auto") << "; "
     << plan::toString(t.precision) << " " << plan::toString(t.optimizer) << ", "
     << plan::toString(t.method) << "\n";
  os << "cluster   " << c.nodes << " node" << (c.nodes > 1 ? "s" : "") << " x "
     << c.gpusPerNode << " " << c.gpu.name << " = " << c.numGpus()
     << " GPUs; " << llvm::format("%g", c.gpu.memoryGiB) << " GiB, "
     << llvm::format("%g", c.gpu.bf16Tflops) << " TFLOP/s bf16, "
     << llvm::format("%g", c.gpu.hbmGBps) << " GB/s each\n";
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
  os << "\n";
}

/// The decisions of one strategy as JSON attributes (docs/design.md's keys).
void writeDecisions(llvm::json::OStream &j, const StrategyFacts &s) {
  j.attribute("zero", s.zero);
  j.attribute("offload", s.offload);
  j.attribute("checkpointing", s.checkpointing);
  if (s.checkpointLayers >= 0)
    j.attribute("checkpoint_layers", s.checkpointLayers);
  j.attribute("micro_batch_size", s.microBatchSize);
  j.attribute("gradient_accumulation", s.gradientAccumulation);
}

/// The work and memory of each op of one decoder layer, from `swift.cost`.
void printLayerOps(raw_ostream &os, ModuleOp module) {
  os << "  one decoder layer, per micro-batch (math-level saved tensors):\n";
  os << llvm::format("    %-30s %14s %14s %14s %12s\n", "op", "fwd GFLOP",
                     "bwd GFLOP", "recompute", "saved MiB");
  module.walk([&](mlir::swift::RepeatOp repeat) {
    for (Operation &op : repeat.getBody().front()) {
      auto cost = op.getAttrOfType<DictionaryAttr>("swift.cost");
      if (!cost)
        continue;
      std::string name = op.getName().stripDialect().str();
      if (auto linear = dyn_cast<mlir::swift::LinearOp>(op))
        name += " " + linear.getWeightName().str();
      os << llvm::format("    %-30s %14.1f %14.1f %14.1f %12.1f\n", name.c_str(),
                         getInt(cost, "forward_flops") / 1e9,
                         getInt(cost, "backward_flops") / 1e9,
                         getInt(cost, "recompute_flops") / 1e9,
                         getInt(cost, "saved_bytes") / double(1 << 20));
    }
  });
}

} // namespace

JobFacts readFacts(ModuleOp module) {
  JobFacts facts;
  module.walk([&](mlir::swift::JobOp job) {
    auto get = [&](StringRef name) {
      auto attr = job->getAttrOfType<IntegerAttr>(name);
      return attr ? attr.getInt() : 0;
    };
    facts.parameters = get("swift.parameters");
    facts.trainableParameters = get("swift.trainable_parameters");
    facts.tokensPerStep = get("swift.tokens_per_step");
    if (auto d = job->getAttrOfType<DictionaryAttr>("swift.decision")) {
      facts.decided = true;
      facts.fits = getString(d, "status") == "chosen";
      facts.usableBytes = getInt(d, "usable_bytes");
      facts.memoryMargin = getReal(d, "memory_margin");
      facts.evaluated = getInt(d, "evaluated");
      facts.considered = getInt(d, "considered");
      facts.shortfallBytes = getInt(d, "shortfall_bytes");
      if (auto chosen = d.getAs<DictionaryAttr>(facts.fits ? "chosen" : "closest"))
        facts.chosen = readStrategy(chosen);
      if (auto alternatives = d.getAs<ArrayAttr>("alternatives"))
        for (Attribute a : alternatives)
          facts.alternatives.push_back(readStrategy(cast<DictionaryAttr>(a)));
    }
    if (auto strategy = job.getStrategy()) {
      facts.bucketBytes = strategy.getBucketBytes().value_or(0);
      facts.prefetchDepth = strategy.getPrefetchDepth().value_or(0);
    }
    if (auto e = job->getAttrOfType<DictionaryAttr>("swift.estimate"))
      facts.estimate = readEstimate(e);
  });
  return facts;
}

void printReport(raw_ostream &os, const job::JobSpec &job,
                 const JobFacts &facts, ModuleOp module, bool explain) {
  printJob(os, job, facts);
  if (!facts.chosen || !facts.estimate)
    return;
  const StrategyFacts &s = *facts.chosen;
  const EstimateFacts &e = *facts.estimate;
  int64_t gpus = job.cluster.numGpus();
  os << "\n";
  if (facts.fits)
    os << "strategy  " << s.text << "\n          (chosen from "
       << facts.evaluated << " strategies priced)\n";
  else
    os << "NOTHING FITS. closest strategy: " << s.text << "\n";
  os << "memory    peak " << gib(e.peakBytes) << " per GPU at " << e.peakPhase;
  if (e.peakLayer >= 0)
    os << " of layer " << e.peakLayer;
  os << " (" << e.peakOp << "); usable " << gib(facts.usableBytes) << " = "
     << gib(e.capacityBytes) << " capacity - "
     << llvm::format("%.0f", 100 * facts.memoryMargin)
     << "% margin for allocator fragmentation\n";
  for (const auto &[name, bytes] : e.breakdown)
    os << llvm::format("            %-24s %12s\n", name.c_str(), gib(bytes).c_str());
  if (e.hostBytes)
    os << "          host memory per node " << gib(e.hostBytes) << " of "
       << llvm::format("%g", job.cluster.hostMemoryGiB) << " GiB\n";
  os << "time      step " << seconds(e.stepSeconds) << " = compute "
     << seconds(e.computeSeconds);
  if (e.recomputeSeconds > 0)
    os << " (recompute " << seconds(e.recomputeSeconds) << ")";
  os << " + exposed communication " << seconds(e.exposedCommunicationSeconds)
     << " (of " << seconds(e.communicationSeconds) << ") + offload "
     << seconds(e.offloadSeconds) << " + optimizer " << seconds(e.optimizerSeconds)
     << "\n";
  os << "throughput " << grouped(int64_t(e.tokensPerSecond)) << " tokens/s ("
     << grouped(int64_t(e.tokensPerSecond / gpus)) << " per GPU), MFU "
     << llvm::format("%.1f", 100 * e.mfu) << "%\n";
  if (!facts.alternatives.empty()) {
    os << "alternatives\n";
    for (const StrategyFacts &a : facts.alternatives)
      os << "  - " << a.text << ": " << a.verdict << "\n";
  }
  if (const auto &f = facts.fasterIfOpen)
    os << "faster    " << f->change << ": " << f->strategy << ", "
       << grouped(int64_t(f->tokensPerSecond)) << " tokens/s ("
       << llvm::format("%.2f", f->tokensPerSecond / e.tokensPerSecond)
       << "x), peak " << gib(f->peakBytes) << "\n";
  if (!facts.fits) {
    os << "\nshort by " << gib(facts.shortfallBytes) << " per GPU. ";
    if (facts.suggestions.empty()) {
      os << "No single change tried (more GPUs, offload, checkpointing, "
            "LoRA/QLoRA, shorter sequence) makes it fit.\n";
    } else {
      os << "Changes that fit:\n";
      for (const Suggestion &sg : facts.suggestions)
        os << "  - " << sg.change << ": " << sg.strategy << ", peak "
           << gib(sg.peakBytes) << ", " << grouped(int64_t(sg.tokensPerSecond))
           << " tokens/s\n";
    }
  }
  if (explain) {
    os << "\nexplain\n";
    os << "  peak by phase: forward " << gib(e.forwardPeakBytes) << ", backward "
       << gib(e.backwardPeakBytes) << ", optimizer " << gib(e.optimizerPeakBytes)
       << "\n";
    int64_t L = job.model.numHiddenLayers;
    int64_t k = s.checkpointing == "none"
                    ? 0
                    : (s.checkpointLayers < 0 ? L : s.checkpointLayers);
    os << "  activations kept per decoder layer: " << gib(e.layerActivationBytes)
       << " (x " << (L - k) << " layers)";
    if (k)
      os << ", checkpointed " << gib(e.checkpointedLayerBytes) << " (x " << k
         << " layers, one layer recomputed at a time)";
    os << "; head and loss " << gib(e.headActivationBytes) << "\n";
    printLayerOps(os, module);
  }
}

void printJson(raw_ostream &os, const job::JobSpec &job,
               const JobFacts &facts) {
  const auto &m = job.model;
  const auto &t = job.training;
  const auto &c = job.cluster;
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("job", job.path);
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
    });
    j.attributeObject("training", [&] {
      j.attribute("sequence_length", t.sequenceLength);
      j.attribute("global_batch_size", t.globalBatchSize);
      j.attribute("tokens_per_step", facts.tokensPerStep);
      j.attribute("precision", plan::toString(t.precision));
      j.attribute("optimizer", plan::toString(t.optimizer));
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
    j.attribute("backend", plan::toString(job.backend));
    if (!facts.chosen || !facts.estimate)
      return;
    const StrategyFacts &s = *facts.chosen;
    const EstimateFacts &e = *facts.estimate;
    j.attribute("status", facts.fits ? "fits" : "nothing-fits");
    j.attributeObject("strategy", [&] {
      writeDecisions(j, s);
      j.attribute("bucket_bytes", facts.bucketBytes);
      j.attribute("prefetch_depth", facts.prefetchDepth);
    });
    j.attributeObject("memory", [&] {
      j.attribute("peak_bytes", e.peakBytes);
      j.attribute("capacity_bytes", e.capacityBytes);
      j.attribute("usable_bytes", facts.usableBytes);
      j.attribute("fits", facts.fits);
      j.attributeObject("breakdown", [&] {
        for (const auto &[name, bytes] : e.breakdown)
          j.attribute(name, bytes);
      });
      j.attributeObject("peak", [&] {
        j.attribute("phase", e.peakPhase);
        j.attribute("layer", e.peakLayer);
        j.attribute("op", e.peakOp);
      });
      j.attribute("forward_peak_bytes", e.forwardPeakBytes);
      j.attribute("backward_peak_bytes", e.backwardPeakBytes);
      j.attribute("optimizer_peak_bytes", e.optimizerPeakBytes);
      j.attribute("host_bytes_per_node", e.hostBytes);
    });
    j.attributeObject("time", [&] {
      j.attribute("step_seconds", e.stepSeconds);
      j.attribute("compute_seconds", e.computeSeconds);
      j.attribute("recompute_seconds", e.recomputeSeconds);
      j.attribute("communication_seconds", e.communicationSeconds);
      j.attribute("exposed_communication_seconds", e.exposedCommunicationSeconds);
      j.attribute("offload_seconds", e.offloadSeconds);
      j.attribute("optimizer_seconds", e.optimizerSeconds);
    });
    j.attributeObject("throughput", [&] {
      j.attribute("tokens_per_second", e.tokensPerSecond);
      j.attribute("tokens_per_second_per_gpu", e.tokensPerSecond / c.numGpus());
      j.attribute("mfu", e.mfu);
    });
    j.attributeArray("alternatives", [&] {
      for (const StrategyFacts &a : facts.alternatives)
        j.object([&] {
          j.attribute("strategy", a.text);
          writeDecisions(j, a);
          j.attribute("fits", a.fits);
          j.attribute("peak_bytes", a.peakBytes);
          j.attribute("tokens_per_second", a.tokensPerSecond);
          j.attribute("why_not", a.verdict);
        });
    });
    if (const auto &f = facts.fasterIfOpen)
      j.attributeObject("faster_if_open", [&] {
        j.attribute("change", f->change);
        j.attribute("strategy", f->strategy);
        j.attribute("peak_bytes", f->peakBytes);
        j.attribute("tokens_per_second", f->tokensPerSecond);
      });
    j.attributeObject("search", [&] {
      j.attribute("evaluated", facts.evaluated);
      j.attribute("considered", facts.considered);
      j.attribute("memory_margin", facts.memoryMargin);
    });
    if (!facts.fits) {
      j.attribute("shortfall_bytes", facts.shortfallBytes);
      j.attributeArray("suggestions", [&] {
        for (const Suggestion &sg : facts.suggestions)
          j.object([&] {
            j.attribute("change", sg.change);
            j.attribute("strategy", sg.strategy);
            j.attribute("peak_bytes", sg.peakBytes);
            j.attribute("tokens_per_second", sg.tokensPerSecond);
          });
      });
    }
  });
  os << "\n";
}

} // namespace swift::report
