//===- HFConfig.cpp - reading an HF config.json ---------------------------===//

#include "swift/Plan/HFConfig.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

using nlohmann::json;

namespace swift::plan {

const std::vector<std::string> &hfModelTypes() {
  static const std::vector<std::string> types = {"llama", "qwen2", "mistral",
                                                 "qwen3"};
  return types;
}

const std::vector<std::string> &hfModelFields() {
  static const std::vector<std::string> fields = {
      "model_type",        "hidden_size",         "intermediate_size",
      "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
      "head_dim",          "vocab_size",          "tie_word_embeddings",
      "attention_bias",    "mlp_bias",            "rms_norm_eps",
      "rope_theta",        "rope_scaling",        "rope_parameters"};
  return fields;
}

const std::vector<std::string> &hfOtherFields() {
  static const std::vector<std::string> fields = {
      "architectures", "torch_dtype", "dtype", "bos_token_id", "eos_token_id",
      "pad_token_id", "hidden_act", "initializer_range", "use_cache",
      "transformers_version", "max_position_embeddings", "sliding_window",
      "use_sliding_window", "max_window_layers", "attention_dropout",
      "pretraining_tp", "layer_types", "_name_or_path"};
  return fields;
}

namespace {

// Far above any real value, far from overflowing a product.
constexpr int64_t kBig = int64_t(1) << 40;

std::string join(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}

std::string joinList(const std::vector<std::string> &items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + items[i];
  return out;
}

/// HF's rope_scaling / rope_parameters mapping at `path`; types swift-run
/// does not compute are refused rather than trained with the wrong
/// positions.
void readRopeScaling(const HFFields &f, const std::string &path, HFConfig &c) {
  if (!f.isMapping(path))
    f.fail(path, "expected a mapping (HF rope_scaling)");
  auto field = [&](const char *key) { return join(path, key); };
  if (f.given(field("rope_theta"))) {
    c.model.ropeTheta = f.positive(field("rope_theta"), 1e12);
    c.ropeThetaField = field("rope_theta");
  }
  // transformers < 4.45 spelled rope_type "type".
  const std::string typeField =
      f.given(field("rope_type")) || !f.given(field("type")) ? field("rope_type")
                                                             : field("type");
  if (!f.given(typeField))
    f.fail(typeField, "missing");
  const std::string name = f.string(typeField);
  std::optional<RopeType> kind = parseEnum<RopeType>(name);
  if (!kind)
    f.fail(typeField, "rope type '" + name + "' is not supported; supported: " +
                          joinList(enumSpellings<RopeType>()) +
                          " (swift would train it with wrong positions)");
  c.ropeScalingField = path;
  RopeScaling &rs = c.model.ropeScaling;
  rs = RopeScaling{};
  rs.type = *kind;
  if (rs.type == RopeType::Default)
    return;
  auto required = [&](const char *key) {
    if (!f.given(field(key)))
      f.fail(field(key), "missing; rope type " + name + " needs it");
    return field(key);
  };
  rs.factor = f.positive(required("factor"), 1e6);
  if (rs.type == RopeType::Llama3) {
    rs.lowFreqFactor = f.positive(required("low_freq_factor"), 1e6);
    rs.highFreqFactor = f.positive(required("high_freq_factor"), 1e6);
    if (!(rs.highFreqFactor > rs.lowFreqFactor))
      f.fail(field("high_freq_factor"), "must be greater than low_freq_factor");
    rs.originalMaxPositionEmbeddings =
        f.integer(required("original_max_position_embeddings"), 1, kBig);
  }
}

/// HF fields that change the model but that swift does not implement:
/// refused where swift-run would train another function (hidden_act); kept
/// with their field where they only matter past a length (the positions the
/// model was trained for, a sliding window), for the job's warnings.
void readUnmodeledFields(const HFFields &f, HFConfig &c) {
  if (f.given("hidden_act")) {
    const std::string name = f.string("hidden_act");
    if (name != "silu" && name != "swish")
      f.fail("hidden_act", "activation '" + name +
                               "' is not supported; swift-run's MLP is SwiGLU "
                               "with silu");
  }
  auto unmodeled = [&](const char *key) -> std::optional<HFUnmodeled> {
    if (!f.given(key))
      return std::nullopt;
    return HFUnmodeled{f.integer(key, 1, kBig), key};
  };
  c.maxPositionEmbeddings = unmodeled("max_position_embeddings");
  // Where HF applies sliding_window: mistral on every layer; qwen2 and
  // qwen3 only with use_sliding_window, on the layers layer_types marks
  // (transformers >= 4.53) or else from max_window_layers on; llama never.
  bool sliding = c.modelType == "mistral";
  if (c.modelType == "qwen2" || c.modelType == "qwen3") {
    sliding = f.given("use_sliding_window") && f.boolean("use_sliding_window");
    if (sliding && f.given("layer_types")) {
      const std::vector<std::string> types = f.strings("layer_types");
      sliding = std::count(types.begin(), types.end(), "sliding_attention") > 0;
    } else if (sliding && f.given("max_window_layers")) {
      sliding = f.integer("max_window_layers", 0, kBig) < c.model.numLayers;
    }
  }
  if (sliding)
    c.slidingWindow = unmodeled("sliding_window");
}

/// The nlohmann document as HFFields; its errors are JsonField's.
class JsonFields : public HFFields {
public:
  JsonFields(const json &root, const std::string &file,
             const JsonPositions *positions)
      : root{root, "", file, positions} {}

  bool given(const std::string &field) const override {
    const json *j = find(field);
    return j && !j->is_null();
  }
  bool isMapping(const std::string &field) const override {
    const json *j = find(field);
    return j && j->is_object();
  }
  int64_t integer(const std::string &field, int64_t lo,
                  int64_t hi) const override {
    return at(field).integer(lo, hi);
  }
  double positive(const std::string &field, double max) const override {
    JsonField f = at(field);
    const double v = f.number(-std::numeric_limits<double>::max(),
                              std::numeric_limits<double>::max());
    if (!(v > 0 && v <= max)) {
      std::ostringstream os;
      os << "value " << f.brief(40) << " out of range (0, " << max << "]";
      f.fail(os.str());
    }
    return v;
  }
  bool boolean(const std::string &field) const override {
    return at(field).boolean();
  }
  std::string string(const std::string &field) const override {
    return at(field).string();
  }
  std::vector<std::string> strings(const std::string &field) const override {
    std::vector<std::string> out;
    if (const json *j = find(field); j && j->is_array())
      for (const json &item : *j)
        if (item.is_string())
          out.push_back(item.get<std::string>());
    return out;
  }
  [[noreturn]] void fail(const std::string &field,
                         const std::string &why) const override {
    JsonField{root.j, field, root.file, root.positions}.fail(why);
  }

private:
  /// The value at `field`, or null when a key on the way is absent.
  const json *find(const std::string &field) const {
    const json *j = &root.j;
    std::istringstream keys(field);
    for (std::string key; std::getline(keys, key, '.');) {
      if (!j->is_object() || !j->contains(key))
        return nullptr;
      j = &(*j)[key];
    }
    return j;
  }
  /// The field for a typed read (its parents are objects: given() said so).
  JsonField at(const std::string &field) const {
    if (!find(field))
      fail(field, "missing required field");
    const json *j = find(field);
    return JsonField{*j, field, root.file, root.positions};
  }

  JsonField root;
};

std::string text(double v) {
  std::ostringstream os;
  os << std::setprecision(9) << v;
  return os.str();
}

std::string text(int64_t v) { return std::to_string(v); }

std::string text(bool v) { return v ? "true" : "false"; }

/// Within 1e-5 relative: a plan.json double printed and read back, or an
/// IR float, agrees; another value does not.
bool close(double a, double b) {
  return std::fabs(a - b) <= 1e-5 * std::max(std::fabs(a), std::fabs(b));
}

} // namespace

HFConfig readHFConfig(const HFFields &f, bool modelTypeRequired) {
  HFConfig c;
  ModelConfig &m = c.model;
  auto required = [&](const char *key, int64_t max) {
    if (!f.given(key))
      f.fail(key, "missing; an HF model config needs it");
    return f.integer(key, 1, max);
  };

  if (f.given("model_type")) {
    const std::string type = f.string("model_type");
    const std::vector<std::string> &supported = hfModelTypes();
    if (!std::count(supported.begin(), supported.end(), type))
      f.fail("model_type", "unsupported model_type '" + type +
                               "'; supported: " + joinList(supported) +
                               " (decoder-only Llama-family models)");
    c.modelType = type;
  } else if (modelTypeRequired) {
    f.fail("model_type", "missing; expected one of " + joinList(hfModelTypes()));
  }
  m.hiddenSize = required("hidden_size", limits::kHiddenSize);
  m.intermediateSize = required("intermediate_size", limits::kIntermediateSize);
  m.numLayers = required("num_hidden_layers", limits::kLayers);
  m.numHeads = required("num_attention_heads", limits::kHeads);
  m.vocabSize = required("vocab_size", limits::kVocabSize);
  m.numKvHeads = m.numHeads;
  if (f.given("num_key_value_heads"))
    m.numKvHeads = f.integer("num_key_value_heads", 1, limits::kHeads);
  if (f.given("head_dim")) {
    m.headDim = f.integer("head_dim", 1, limits::kHeadDim);
  } else {
    if (m.hiddenSize % m.numHeads != 0)
      f.fail("num_attention_heads",
             std::to_string(m.numHeads) + " heads do not divide hidden_size " +
                 std::to_string(m.hiddenSize) +
                 "; fix the sizes or set head_dim");
    m.headDim = m.hiddenSize / m.numHeads;
  }
  if (m.numHeads % m.numKvHeads != 0)
    f.fail("num_key_value_heads",
           std::to_string(m.numKvHeads) +
               " key/value heads do not divide num_attention_heads " +
               std::to_string(m.numHeads) +
               " (grouped-query attention shares each kv head by a whole "
               "number of query heads)");
  if (m.headDim % 2 != 0)
    f.fail("head_dim", "head_dim " + std::to_string(m.headDim) +
                           " is odd; rotary embeddings need an even head_dim");
  if (f.given("tie_word_embeddings"))
    m.tieWordEmbeddings = f.boolean("tie_word_embeddings");
  const bool attentionBias =
      f.given("attention_bias") && f.boolean("attention_bias");
  const bool mlpBias = f.given("mlp_bias") && f.boolean("mlp_bias");
  if (f.given("rms_norm_eps"))
    m.rmsNormEps = f.positive("rms_norm_eps", 1);
  if (f.given("rope_theta"))
    m.ropeTheta = f.positive("rope_theta", 1e12);
  // transformers < 5 writes rope_scaling (null: none); 5 writes
  // rope_parameters, which also carries rope_theta.
  for (const char *key : {"rope_scaling", "rope_parameters"})
    if (f.given(key))
      readRopeScaling(f, key, c);
  readUnmodeledFields(f, c);

  // Bias and norm layout per architecture, as transformers builds it:
  // Qwen2Attention has q/k/v biases and no o bias whatever attention_bias
  // says; Mistral has no biases; Llama and Qwen3 put attention_bias on q,
  // k, v and o, Qwen3 adds q/k RMSNorm. Only Llama's MLP reads mlp_bias.
  if (c.modelType == "qwen2") {
    m.qkvBias = true;
  } else if (c.modelType != "mistral") {
    m.qkvBias = m.oBias = attentionBias;
    m.qkNorm = c.modelType == "qwen3";
  }
  c.mlpBias = c.modelType == "llama" && mlpBias;
  return c;
}

HFConfig readHFConfig(const json &j, const std::string &file,
                      const JsonPositions *positions) {
  JsonFields fields(j, file, positions);
  if (!j.is_object())
    fields.fail("", "expected a JSON object (an HF config.json)");
  return readHFConfig(fields, /*modelTypeRequired=*/true);
}

HFConfig readHFConfigFile(const std::string &path) {
  return readHFConfig(readJsonFile(path, kHFConfigExpected, kMaxHFConfigBytes),
                      path);
}

std::vector<HFDifference> hfDifferences(const HFConfig &hf,
                                        const ModelConfig &plan) {
  std::vector<HFDifference> out;
  const ModelConfig &m = hf.model;
  auto integer = [&](const char *field, int64_t there, int64_t planned,
                     const std::string &planField) {
    if (there != planned)
      out.push_back({field, text(there), "model." + planField, text(planned)});
  };
  integer("hidden_size", m.hiddenSize, plan.hiddenSize, "hidden_size");
  integer("intermediate_size", m.intermediateSize, plan.intermediateSize,
          "intermediate_size");
  integer("num_hidden_layers", m.numLayers, plan.numLayers, "num_hidden_layers");
  integer("num_attention_heads", m.numHeads, plan.numHeads,
          "num_attention_heads");
  integer("num_key_value_heads", m.numKvHeads, plan.numKvHeads,
          "num_key_value_heads");
  integer("head_dim", m.headDim, plan.headDim, "head_dim");
  integer("vocab_size", m.vocabSize, plan.vocabSize, "vocab_size");
  if (m.tieWordEmbeddings != plan.tieWordEmbeddings)
    out.push_back({"tie_word_embeddings", text(m.tieWordEmbeddings),
                   "model.tie_word_embeddings", text(plan.tieWordEmbeddings)});
  if (!close(m.rmsNormEps, plan.rmsNormEps))
    out.push_back({"rms_norm_eps", text(m.rmsNormEps), "model.rms_norm_eps",
                   text(plan.rmsNormEps)});
  if (!close(m.ropeTheta, plan.ropeTheta))
    out.push_back({hf.ropeThetaField, text(m.ropeTheta), "model.rope_theta",
                   text(plan.ropeTheta)});
  const RopeScaling &rs = m.ropeScaling, &prs = plan.ropeScaling;
  const std::string scaling =
      hf.ropeScalingField.empty() ? "rope_scaling" : hf.ropeScalingField;
  if (rs.type != prs.type) {
    out.push_back({scaling + ".rope_type",
                   hf.ropeScalingField.empty() ? "absent (default)"
                                               : toString(rs.type),
                   "model.rope_scaling.rope_type",
                   prs.type == RopeType::Default ? "default (no rope_scaling)"
                                                 : toString(prs.type)});
  } else if (rs.type != RopeType::Default) {
    auto number = [&](const char *key, double there, double planned) {
      if (!close(there, planned))
        out.push_back({scaling + "." + key, text(there),
                       std::string("model.rope_scaling.") + key, text(planned)});
    };
    number("factor", rs.factor, prs.factor);
    if (rs.type == RopeType::Llama3) {
      number("low_freq_factor", rs.lowFreqFactor, prs.lowFreqFactor);
      number("high_freq_factor", rs.highFreqFactor, prs.highFreqFactor);
      if (rs.originalMaxPositionEmbeddings != prs.originalMaxPositionEmbeddings)
        out.push_back({scaling + ".original_max_position_embeddings",
                       text(rs.originalMaxPositionEmbeddings),
                       "model.rope_scaling.original_max_position_embeddings",
                       text(prs.originalMaxPositionEmbeddings)});
    }
  }
  // The layout flags: named by the field that decides them there.
  const bool byType = hf.modelType == "qwen2" || hf.modelType == "mistral";
  auto layout = [&](bool there, bool planned, const std::string &planField) {
    if (there != planned)
      out.push_back({byType ? "model_type" : "attention_bias",
                     byType ? hf.modelType + " (" + planField.substr(6) + " " +
                                  text(there) + ")"
                            : text(there),
                     planField, text(planned)});
  };
  layout(m.qkvBias, plan.qkvBias, "model.attention_qkv_bias");
  layout(m.oBias, plan.oBias, "model.attention_o_bias");
  if (m.qkNorm != plan.qkNorm)
    out.push_back({"model_type",
                   hf.modelType + " (qk_norm " + text(m.qkNorm) + ")",
                   "model.qk_norm", text(plan.qkNorm)});
  if (hf.mlpBias)
    out.push_back({"mlp_bias", "true", "model",
                   "no MLP biases (swift-run has none)"});
  return out;
}

} // namespace swift::plan
