//===- Report.cpp - swift-plan's summary and JSON -------------------------===//

#include "Report.h"

#include "swift/Dialect/SwiftOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

using namespace mlir;

namespace swift::plan {

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
  });
  return facts;
}

/// 8030261248 -> "8,030,261,248".
static std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

/// 8030261248 -> "8.03B".
static std::string humanCount(int64_t n) {
  char buffer[32];
  if (n >= 1000000000)
    snprintf(buffer, sizeof(buffer), "%.2fB", n / 1e9);
  else if (n >= 1000000)
    snprintf(buffer, sizeof(buffer), "%.1fM", n / 1e6);
  else
    snprintf(buffer, sizeof(buffer), "%lld", static_cast<long long>(n));
  return buffer;
}

static std::string strategyKey(const std::optional<std::string> &v) {
  return v ? *v : "auto";
}

void printSummary(raw_ostream &os, const planner::JobSpec &job,
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
       << t.method << " rank " << t.lora.rank << ")";
  os << "\n";
  os << "training  " << t.sequenceLength << " tokens x " << t.globalBatchSize
     << " sequences = " << grouped(facts.tokensPerStep)
     << " tokens per step; micro-batch "
     << (t.microBatchSize ? std::to_string(*t.microBatchSize) : "auto") << "; "
     << t.precision << " " << t.optimizer << ", " << t.method << "\n";
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
  os << "backend   " << job.backend << "; strategy: zero "
     << (job.strategy.zero ? std::to_string(*job.strategy.zero) : "auto")
     << ", offload " << strategyKey(job.strategy.offload) << ", checkpointing "
     << strategyKey(job.strategy.checkpointing);
  if (job.strategy.checkpointLayers)
    os << " (first " << *job.strategy.checkpointLayers << " layers)";
  os << "\n";
}

void printJson(raw_ostream &os, const planner::JobSpec &job,
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
      if (t.microBatchSize)
        j.attribute("micro_batch_size", *t.microBatchSize);
      else
        j.attribute("micro_batch_size", "auto");
      j.attribute("tokens_per_step", facts.tokensPerStep);
      j.attribute("precision", t.precision);
      j.attribute("optimizer", t.optimizer);
      j.attribute("method", t.method);
    });
    j.attributeObject("cluster", [&] {
      j.attribute("gpu", c.gpu.name);
      j.attribute("gpu_memory_bytes",
                  static_cast<int64_t>(c.gpu.memoryGiB * (1ll << 30)));
      j.attribute("gpus_per_node", c.gpusPerNode);
      j.attribute("nodes", c.nodes);
      j.attribute("gpus", c.numGpus());
      j.attribute("intra_node", c.intraNode.name);
      j.attribute("inter_node", c.interNode.name);
    });
    j.attribute("backend", job.backend);
  });
  os << "\n";
}

} // namespace swift::plan
