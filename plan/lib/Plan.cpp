//===- Plan.cpp - parse and validate plan.json ----------------------------===//
//
// Every error names the file, the JSON path of the field and why, in one
// line, because the user's next action is to open the file at that field.
//
//===----------------------------------------------------------------------===//
#include "swift/Plan/Plan.h"
#include "swift/Plan/Error.h"
#include "swift/Plan/Json.h"
#include "swift/Plan/Schedule.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

using nlohmann::json;

namespace swift::plan {
namespace {

constexpr int64_t kBig = int64_t(1) << 40;

RopeScaling parseRopeScaling(const JsonField &n) {
  n.object().onlyKeys({"rope_type", "factor", "low_freq_factor",
                       "high_freq_factor", "original_max_position_embeddings"});
  RopeScaling r;
  r.type = n.at("rope_type").choice<RopeType>();
  if (r.type == RopeType::Default)
    return r;
  r.factor = n.at("factor").number(1, 1e6);
  if (r.type == RopeType::Llama3) {
    r.lowFreqFactor = n.at("low_freq_factor").number(1e-6, 1e6);
    r.highFreqFactor = n.at("high_freq_factor").number(1e-6, 1e6);
    if (!(r.highFreqFactor > r.lowFreqFactor))
      n.at("high_freq_factor").fail("must be greater than low_freq_factor");
    r.originalMaxPositionEmbeddings =
        n.at("original_max_position_embeddings").integer(1, kBig);
  }
  return r;
}

ModelConfig parseModel(const JsonField &n) {
  n.object().onlyKeys({"hidden_size", "intermediate_size", "num_hidden_layers",
                       "num_attention_heads", "num_key_value_heads", "head_dim",
                       "vocab_size", "tie_word_embeddings", "rms_norm_eps",
                       "rope_theta", "attention_qkv_bias", "attention_o_bias",
                       "qk_norm", "rope_scaling", "name"});
  ModelConfig m;
  m.hiddenSize = n.at("hidden_size").integer(1, limits::kHiddenSize);
  m.intermediateSize = n.at("intermediate_size").integer(1, limits::kIntermediateSize);
  m.numLayers = n.at("num_hidden_layers").integer(1, limits::kLayers);
  m.numHeads = n.at("num_attention_heads").integer(1, limits::kHeads);
  m.numKvHeads = n.has("num_key_value_heads")
                     ? n.at("num_key_value_heads").integer(1, limits::kHeads)
                     : m.numHeads;
  if (m.numHeads % m.numKvHeads != 0)
    n.at("num_key_value_heads")
        .fail("num_attention_heads (" + std::to_string(m.numHeads) +
              ") is not a multiple of it (" + std::to_string(m.numKvHeads) +
              ")");
  if (n.has("head_dim")) {
    m.headDim = n.at("head_dim").integer(2, limits::kHeadDim);
  } else {
    if (m.hiddenSize % m.numHeads != 0)
      n.at("hidden_size")
          .fail("not divisible by num_attention_heads; give head_dim");
    m.headDim = m.hiddenSize / m.numHeads;
  }
  if (m.headDim % 2 != 0)
    n.fail("head_dim must be even for rotary embeddings");
  m.vocabSize = n.at("vocab_size").integer(2, limits::kVocabSize);
  m.tieWordEmbeddings = n.at("tie_word_embeddings").boolean();
  m.rmsNormEps = n.at("rms_norm_eps").number(0, 1);
  m.ropeTheta = n.at("rope_theta").number(1, 1e12);
  m.qkvBias =
      n.has("attention_qkv_bias") && n.at("attention_qkv_bias").boolean();
  m.oBias = n.has("attention_o_bias") && n.at("attention_o_bias").boolean();
  m.qkNorm = n.has("qk_norm") && n.at("qk_norm").boolean();
  if (n.has("rope_scaling"))
    m.ropeScaling = parseRopeScaling(n.at("rope_scaling"));
  return m;
}

TrainingConfig parseTraining(const JsonField &n) {
  n.object().onlyKeys({"sequence_length", "global_batch_size",
                       "micro_batch_size", "gradient_accumulation", "precision",
                       "optimizer", "lr_schedule", "max_grad_norm", "seed",
                       "packing", "truncation", "loss_on", "method", "lora"});
  TrainingConfig t;
  t.sequenceLength = n.at("sequence_length").integer(2, limits::kSequenceLength);
  t.globalBatchSize = n.at("global_batch_size").integer(1, kBig);
  t.microBatchSize = n.at("micro_batch_size").integer(1, kBig);
  t.gradientAccumulation = n.at("gradient_accumulation").integer(1, kBig);
  t.precision = n.at("precision")
                    .choice<Precision>();
  JsonField o = n.at("optimizer");
  o.object().onlyKeys({"name", "lr", "betas", "eps", "weight_decay"});
  if (o.has("name") && o.at("name").string() != "adamw")
    o.at("name").fail("only \"adamw\" is supported");
  t.optimizer.lr = o.at("lr").number(0, 10);
  JsonField betas = o.at("betas");
  betas.array();
  if (betas.j.size() != 2)
    betas.fail("expected [beta1, beta2]");
  t.optimizer.beta1 = betas.index(0).number(0, 0.999999);
  t.optimizer.beta2 = betas.index(1).number(0, 0.999999);
  t.optimizer.eps = o.at("eps").number(0, 1);
  t.optimizer.weightDecay = o.at("weight_decay").number(0, 10);
  if (n.has("lr_schedule")) {
    JsonField ls = n.at("lr_schedule");
    ls.object().onlyKeys({"warmup_steps", "decay", "min_lr_ratio"});
    if (ls.has("warmup_steps"))
      t.lrSchedule.warmupSteps = ls.at("warmup_steps").integer(0, kBig);
    if (ls.has("decay"))
      t.lrSchedule.decay = ls.at("decay").choice<LrDecay>();
    if (ls.has("min_lr_ratio"))
      t.lrSchedule.minLrRatio = ls.at("min_lr_ratio").number(0, 1);
  }
  if (n.has("max_grad_norm")) {
    JsonField g = n.at("max_grad_norm");
    double v = g.number(0, 1e30);
    if (!(v > 0))
      g.fail("must be > 0 (leave it out for no clipping)");
    t.maxGradNorm = v;
  }
  t.seed = n.has("seed") ? uint64_t(n.at("seed").integer(0, kBig)) : 0;
  t.packing = !n.has("packing") || n.at("packing").boolean();
  if (n.has("truncation"))
    t.truncation = n.at("truncation").choice<Truncation>();
  if (n.has("loss_on"))
    t.lossOn = n.at("loss_on").choice<LossOn>();
  t.method = n.has("method") ? n.at("method").choice<Method>() : Method::Full;
  if (t.method != Method::Full && fp8Gemms(t.precision))
    n.at("precision").fail(std::string(toString(t.precision)) +
                           " runs full fine-tuning only: LoRA/QLoRA "
                           "adapters run bf16 GEMMs (use " +
                           toString(storagePrecision(t.precision)) + ")");
  if (t.method != Method::Full) {
    JsonField l = n.at("lora");
    l.object().onlyKeys({"rank", "alpha", "dropout", "targets"});
    t.lora.rank = l.at("rank").integer(1, 1 << 16);
    t.lora.alpha = l.at("alpha").number(1e-9, 1e9);
    t.lora.dropout = l.has("dropout") ? l.at("dropout").number(0, 0.999) : 0;
    JsonField targets = l.at("targets");
    targets.array();
    t.lora.targets.clear();
    const std::vector<std::string> &known = loraTargetNames();
    for (size_t i = 0; i < targets.j.size(); ++i) {
      JsonField x = targets.index(i);
      std::string name = x.string();
      if (std::find(known.begin(), known.end(), name) == known.end())
        x.fail("'" + name + "' is not a decoder linear (q_proj, k_proj, "
               "v_proj, o_proj, gate_proj, up_proj, down_proj)");
      if (!t.lora.adapts(name))
        t.lora.targets.push_back(name);
    }
    if (t.lora.targets.empty())
      targets.fail("names no linear layer to adapt");
  } else if (n.has("lora")) {
    n.at("lora").fail("given, but method is full");
  }
  return t;
}

WorldConfig parseWorld(const JsonField &n) {
  n.object().onlyKeys({"size", "gpus_per_node", "gpu_memory_bytes"});
  WorldConfig w;
  w.size = n.at("size").integer(1, 1 << 20);
  w.gpusPerNode =
      n.has("gpus_per_node") ? n.at("gpus_per_node").integer(1, 1024) : 1;
  if (n.has("gpu_memory_bytes"))
    w.gpuMemoryBytes = n.at("gpu_memory_bytes").integer(1, kBig * 1024);
  return w;
}

Checkpointing parseCheckpointing(const JsonField &n) {
  return n.choice<Checkpointing>();
}

StrategyConfig parseStrategy(const JsonField &n) {
  n.object().onlyKeys({"zero", "offload", "checkpointing", "checkpoint_layers",
                       "bucket_bytes", "prefetch_depth", "offload_activations",
                       "mlp_tile_tokens", "dp_shard"});
  StrategyConfig s;
  s.zero = int(n.at("zero").integer(0, 3));
  s.offload = n.at("offload").choice<Offload>();
  s.checkpointing = parseCheckpointing(n.at("checkpointing"));
  if (n.has("checkpoint_layers"))
    s.checkpointLayers = n.at("checkpoint_layers").integer(-1, 1 << 20);
  if (n.has("bucket_bytes"))
    s.bucketBytes = n.at("bucket_bytes").integer(1, kBig);
  if (n.has("prefetch_depth"))
    s.prefetchDepth = int(n.at("prefetch_depth").integer(0, 64));
  if (n.has("offload_activations"))
    s.offloadActivations =
        n.at("offload_activations").integer(-1, 1 << 20);
  if (n.has("mlp_tile_tokens"))
    s.mlpTileTokens = n.at("mlp_tile_tokens").integer(0, kBig);
  if (n.has("dp_shard")) // against world.size: checkShardGroups()
    s.dpShard = n.at("dp_shard").integer(1, 1 << 20);
  if (std::optional<std::string> why = offloadViolation(s))
    n.at("offload").fail(*why);
  if (std::optional<std::string> why = activationOffloadViolation(s))
    n.at(n.has("offload_activations") ? "offload_activations"
                                      : "mlp_tile_tokens")
        .fail(*why);
  return s;
}

/// strategy.dp_shard against the world: it divides world.size, and a
/// shard group smaller than the world needs sharded state (zero >= 1:
/// ZeRO-0 keeps every unit whole on every rank, so there is nothing to
/// shard within a group). Equal to world.size it is the default, kept as 0
/// (the writer leaves it out).
void checkShardGroups(StrategyConfig &s, const WorldConfig &w,
                      const JsonField &n) {
  if (s.dpShard == 0)
    return;
  JsonField f = n.at("dp_shard");
  if (w.size % s.dpShard != 0)
    f.fail(std::to_string(s.dpShard) + " does not divide world.size (" +
           std::to_string(w.size) + ")");
  if (s.dpShard == w.size) {
    s.dpShard = 0;
    return;
  }
  if (s.zero == 0)
    f.fail("shard groups of " + std::to_string(s.dpShard) + " of the " +
           std::to_string(w.size) +
           " ranks need zero >= 1 (zero 0 keeps every unit whole on "
           "every rank; leave dp_shard out)");
}

std::vector<int> intList(const JsonField &n, int lo, int hi) {
  n.array();
  std::vector<int> out;
  for (size_t i = 0; i < n.j.size(); ++i)
    out.push_back(int(n.index(i).integer(lo, hi)));
  return out;
}

Schedule parseSchedule(const JsonField &n, const ModelConfig &m) {
  n.object().onlyKeys({"units", "buckets", "forward", "backward", "optimizer"});
  // Types and ranges only: which unit goes where, and everything else the
  // entries must satisfy together, is checkSchedule()'s (Schedule.h).
  const int last = int(m.numLayers) + 1;
  Schedule s;
  JsonField units = n.at("units");
  units.array();
  for (size_t u = 0; u < units.j.size(); ++u) {
    JsonField e = units.index(u);
    e.object().onlyKeys({"kind", "layer", "checkpoint", "offload_input"});
    UnitSpec spec;
    spec.kind = e.at("kind").choice<UnitKind>();
    if (spec.kind == UnitKind::Decoder) {
      spec.layer = e.at("layer").integer(0, m.numLayers - 1);
      if (e.has("checkpoint"))
        spec.checkpoint = parseCheckpointing(e.at("checkpoint"));
    }
    if (e.has("offload_input")) // the schedule rules say where it may be
      spec.offloadInput = e.at("offload_input").boolean();
    s.units.push_back(spec);
  }
  JsonField buckets = n.at("buckets");
  buckets.array();
  for (size_t b = 0; b < buckets.j.size(); ++b) {
    JsonField e = buckets.index(b);
    e.object().onlyKeys({"units", "collective", "every_micro_batch"});
    Bucket bucket;
    bucket.units = intList(e.at("units"), 0, last);
    if (bucket.units.empty())
      e.at("units").fail("a bucket needs at least one unit");
    bucket.collective =
        e.at("collective")
            .choice<Collective>();
    bucket.everyMicroBatch = e.at("every_micro_batch").boolean();
    s.buckets.push_back(bucket);
  }
  const int numBuckets = int(s.buckets.size());
  auto program = [&](const char *key, bool backward) {
    JsonField p = n.at(key);
    p.array();
    std::vector<ProgramStep> steps;
    for (size_t i = 0; i < p.j.size(); ++i) {
      JsonField e = p.index(i);
      e.object().onlyKeys({"unit", "gather", "release", "reduce"});
      ProgramStep st;
      st.unit = int(e.at("unit").integer(0, last));
      if (e.has("gather"))
        st.gather = intList(e.at("gather"), 0, last);
      if (e.has("release"))
        st.release = intList(e.at("release"), 0, last);
      if (e.has("reduce")) {
        if (!backward)
          e.at("reduce").fail("gradient reductions belong to the backward "
                              "program");
        st.reduce = intList(e.at("reduce"), 0, std::max(0, numBuckets - 1));
        if (numBuckets == 0 && !st.reduce.empty())
          e.at("reduce").fail("no buckets are defined");
      }
      steps.push_back(st);
    }
    return steps;
  };
  s.forward = program("forward", false);
  s.backward = program("backward", true);
  JsonField opt = n.at("optimizer");
  opt.object().onlyKeys({"device", "gather_params"});
  s.optimizer.device = opt.at("device").choice<OptimizerDevice>();
  s.optimizer.gatherParams = opt.at("gather_params").boolean();
  return s;
}

} // namespace

Plan parsePlanText(const std::string &text, const std::string &file) {
  json j = parseJson(text, file);
  JsonField root{j, "", file};
  root.object().onlyKeys({"schema", "version", "model", "weights",
                          "training", "world", "strategy", "schedule",
                          "predicted", "comment", "generator"});
  if (root.at("schema").string() != kPlanSchemaName)
    root.at("schema").fail(std::string("expected \"") + kPlanSchemaName +
                           "\"; this is not a swift plan");
  int64_t version = root.at("version").integer(0, 1 << 20);
  if (version != kPlanSchemaVersion)
    root.at("version").fail("plan schema version " + std::to_string(version) +
                            " is not supported by this swift-run (reads "
                            "version " +
                            std::to_string(kPlanSchemaVersion) + ")");
  Plan p;
  p.path = file;
  p.model = parseModel(root.at("model"));
  p.training = parseTraining(root.at("training"));
  p.world = parseWorld(root.at("world"));
  p.strategy = parseStrategy(root.at("strategy"));
  checkShardGroups(p.strategy, p.world, root.at("strategy"));
  const TrainingConfig &t = p.training;
  // micro x world x accumulation = global, checked without overflow: each
  // factor is at most the global batch, and their product is formed only
  // while it stays at most the global batch (a micro-batch of 2^32 + 1 with
  // an accumulation of 2^32 wrapped to a valid-looking product).
  JsonField tj = root.at("training");
  if (t.microBatchSize > t.globalBatchSize)
    tj.at("micro_batch_size")
        .fail(std::to_string(t.microBatchSize) +
              " sequences, more than global_batch_size (" +
              std::to_string(t.globalBatchSize) + ")");
  const int64_t perStep = t.globalBatchSize;
  const bool fits =
      p.world.size <= perStep / t.microBatchSize &&
      t.gradientAccumulation <= perStep / (t.microBatchSize * p.world.size);
  if (!fits || t.microBatchSize * p.world.size * t.gradientAccumulation !=
                   t.globalBatchSize)
    tj.at("gradient_accumulation")
        .fail("global_batch_size (" + std::to_string(t.globalBatchSize) +
              ") != micro_batch_size (" + std::to_string(t.microBatchSize) +
              ") * world.size (" + std::to_string(p.world.size) +
              ") * gradient_accumulation (" +
              std::to_string(t.gradientAccumulation) + ")");
  if (root.has("schedule")) {
    p.schedule = parseSchedule(root.at("schedule"), p.model);
  } else {
    p.schedule =
        buildSchedule(p.model, p.strategy, unitParameterCounts(p.model))
            .schedule;
    p.scheduleDerived = true;
  }
  validateSchedule(p);
  if (root.has("weights")) {
    JsonField w = root.at("weights");
    w.object().onlyKeys({"format", "path"});
    if (w.at("format").string() != "safetensors")
      w.at("format").fail("unknown format \"" + w.at("format").string() +
                          "\" (expected \"safetensors\")");
    p.weights = WeightsConfig{"safetensors", w.at("path").string()};
    if (p.weights->path.empty())
      w.at("path").fail("empty");
  }
  if (root.has("predicted")) {
    JsonField pr = root.at("predicted");
    pr.object().onlyKeys(
        {"peak_memory_bytes", "step_seconds", "tokens_per_second", "mfu"});
    if (pr.has("peak_memory_bytes"))
      p.predicted.peakMemoryBytes =
          pr.at("peak_memory_bytes").integer(0, kBig * 1024);
    if (pr.has("step_seconds"))
      p.predicted.stepSeconds = pr.at("step_seconds").number(0, 1e9);
    if (pr.has("tokens_per_second"))
      p.predicted.tokensPerSecond = pr.at("tokens_per_second").number(0, 1e15);
  }
  return p;
}

std::string modelToJson(const ModelConfig &m) {
  nlohmann::ordered_json j = {{"hidden_size", m.hiddenSize},
                              {"intermediate_size", m.intermediateSize},
                              {"num_hidden_layers", m.numLayers},
                              {"num_attention_heads", m.numHeads},
                              {"num_key_value_heads", m.numKvHeads},
                              {"head_dim", m.headDim},
                              {"vocab_size", m.vocabSize},
                              {"tie_word_embeddings", m.tieWordEmbeddings},
                              {"rms_norm_eps", m.rmsNormEps},
                              {"rope_theta", m.ropeTheta},
                              {"attention_qkv_bias", m.qkvBias},
                              {"attention_o_bias", m.oBias},
                              {"qk_norm", m.qkNorm}};
  const RopeScaling &r = m.ropeScaling;
  if (r.type != RopeType::Default) {
    nlohmann::ordered_json rs = {{"rope_type", toString(r.type)},
                                 {"factor", r.factor}};
    if (r.type == RopeType::Llama3) {
      rs["low_freq_factor"] = r.lowFreqFactor;
      rs["high_freq_factor"] = r.highFreqFactor;
      rs["original_max_position_embeddings"] = r.originalMaxPositionEmbeddings;
    }
    j["rope_scaling"] = rs;
  }
  return j.dump();
}

std::string planToJson(const Plan &p) {
  const ModelConfig &m = p.model;
  const TrainingConfig &t = p.training;
  const StrategyConfig &st = p.strategy;
  const Schedule &s = p.schedule;
  // ordered_json keeps the documented field order in the output.
  using ojson = nlohmann::ordered_json;
  ojson units = ojson::array(), buckets = ojson::array();
  for (const UnitSpec &u : s.units) {
    ojson e = {{"kind", toString(u.kind)}};
    if (u.kind == UnitKind::Decoder) {
      e["layer"] = u.layer;
      e["checkpoint"] = toString(u.checkpoint);
      if (u.offloadInput) // left out when false: older plans stay as is
        e["offload_input"] = true;
    }
    units.push_back(e);
  }
  for (const Bucket &b : s.buckets)
    buckets.push_back({{"units", b.units},
                       {"collective", toString(b.collective)},
                       {"every_micro_batch", b.everyMicroBatch}});
  auto program = [](const std::vector<ProgramStep> &steps, bool backward) {
    ojson out = ojson::array();
    for (const ProgramStep &st : steps) {
      ojson e = {
          {"unit", st.unit}, {"gather", st.gather}, {"release", st.release}};
      if (backward)
        e["reduce"] = st.reduce;
      out.push_back(e);
    }
    return out;
  };
  ojson j = {
      {"schema", kPlanSchemaName},
      {"version", kPlanSchemaVersion},
      {"model", ojson::parse(modelToJson(m))},
      {"training",
       {{"sequence_length", t.sequenceLength},
        {"global_batch_size", t.globalBatchSize},
        {"micro_batch_size", t.microBatchSize},
        {"gradient_accumulation", t.gradientAccumulation},
        {"precision", toString(t.precision)},
        {"optimizer",
         {{"name", "adamw"},
          {"lr", t.optimizer.lr},
          {"betas", {t.optimizer.beta1, t.optimizer.beta2}},
          {"eps", t.optimizer.eps},
          {"weight_decay", t.optimizer.weightDecay}}},
        {"seed", t.seed}}},
      {"world",
       {{"size", p.world.size}, {"gpus_per_node", p.world.gpusPerNode}}},
      {"strategy",
       {{"zero", st.zero},
        {"offload", toString(st.offload)},
        {"checkpointing", toString(st.checkpointing)},
        {"checkpoint_layers", st.checkpointLayers},
        {"bucket_bytes", st.bucketBytes},
        {"prefetch_depth", st.prefetchDepth}}},
      {"schedule",
       {{"units", units},
        {"buckets", buckets},
        {"forward", program(s.forward, false)},
        {"backward", program(s.backward, true)},
        {"optimizer",
         {{"device", toString(s.optimizer.device)},
          {"gather_params", s.optimizer.gatherParams}}}}},
      {"predicted",
       {{"peak_memory_bytes", p.predicted.peakMemoryBytes},
        {"step_seconds", p.predicted.stepSeconds},
        {"tokens_per_second", p.predicted.tokensPerSecond}}}};
  if (p.weights)
    j["weights"] = {{"format", p.weights->format}, {"path", p.weights->path}};
  // Left out when 0 (their default), like packing: older plans stay as is.
  if (st.offloadActivations != 0)
    j["strategy"]["offload_activations"] = st.offloadActivations;
  if (st.mlpTileTokens != 0)
    j["strategy"]["mlp_tile_tokens"] = st.mlpTileTokens;
  // Written only when smaller than world.size (the default: plain ZeRO).
  const ShardGroups groups = shardGroups(st, p.world);
  if (groups.hybrid())
    j["strategy"]["dp_shard"] = groups.shard;
  if (p.world.gpuMemoryBytes != 0)
    j["world"]["gpu_memory_bytes"] = p.world.gpuMemoryBytes;
  if (!t.packing) // the default (true) is left out: older plans stay as is
    j["training"]["packing"] = false;
  if (t.truncation != Truncation::Drop) // left out when default, like packing
    j["training"]["truncation"] = toString(t.truncation);
  if (t.lossOn != LossOn::Assistant)
    j["training"]["loss_on"] = toString(t.lossOn);
  if (!t.lrSchedule.isDefault()) // left out when default, like packing
    j["training"]["lr_schedule"] = {
        {"warmup_steps", t.lrSchedule.warmupSteps},
        {"decay", toString(t.lrSchedule.decay)},
        {"min_lr_ratio", t.lrSchedule.minLrRatio}};
  if (t.maxGradNorm)
    j["training"]["max_grad_norm"] = *t.maxGradNorm;
  if (t.method != Method::Full) {
    j["training"]["method"] = toString(t.method);
    j["training"]["lora"] = {{"rank", t.lora.rank},
                             {"alpha", t.lora.alpha},
                             {"dropout", t.lora.dropout},
                             {"targets", t.lora.targets}};
  }
  return j.dump(1) + "\n";
}

std::string checkedPlanJson(const Plan &plan, const std::string &path,
                            std::string &error) {
  try {
    std::string text = planToJson(plan);
    (void)parsePlanText(text, path);
    return text;
  } catch (const std::exception &e) {
    error = e.what();
    return "";
  }
}

Plan parsePlan(const std::string &path) {
  // A plan is a few KiB per hundred layers; 64 MiB is far above any.
  return parsePlanText(
      readRegularFile(path, "a plan file (plan.json)", uint64_t(64) << 20),
      path);
}

double lrAt(const TrainingConfig &t, int64_t step, int64_t totalSteps) {
  const LrScheduleConfig &ls = t.lrSchedule;
  const double s = double(step - 1), w = double(ls.warmupSteps),
               total = double(totalSteps), m = ls.minLrRatio;
  double f = 1.0;
  if (s < w) {
    f = s / std::max(1.0, w);
  } else if (ls.decay == LrDecay::Linear) {
    f = std::max(0.0, (total - s) / std::max(1.0, total - w));
    f = m + (1 - m) * f;
  } else if (ls.decay == LrDecay::Cosine) {
    double progress = (s - w) / std::max(1.0, total - w);
    f = std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * progress)));
    f = m + (1 - m) * f;
  }
  return t.optimizer.lr * f;
}

ShardGroups shardGroups(const StrategyConfig &s, const WorldConfig &w) {
  ShardGroups g;
  g.shard = s.dpShard > 0 && s.dpShard < w.size ? s.dpShard : w.size;
  g.replicas = w.size / g.shard;
  SWIFT_ASSERT(g.shard * g.replicas == w.size, "dp_shard ", s.dpShard,
               " does not divide world.size ", w.size);
  return g;
}

void checkPlanMatchesWorld(const Plan &plan, int64_t worldSize) {
  SWIFT_CHECK(plan.world.size == worldSize, plan.path,
              ": world.size: plan is for ", plan.world.size,
              " ranks but the job was started with ", worldSize);
}

} // namespace swift::plan
