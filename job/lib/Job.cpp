//===- Job.cpp - reading and validating job files -------------------------===//
//
// Errors are thrown as JobError inside this file (yaml-cpp throws too) and
// turned into one Diagnostic at the API boundary; nothing escapes.
//
//===----------------------------------------------------------------------===//

#include "swift/Job/Job.h"
#include "swift/Job/Presets.h"
#include "swift/Plan/HFConfig.h"
#include "swift/Plan/Json.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace swift::job {

std::string Diagnostic::location() const {
  return line > 0 ? file + ":" + std::to_string(line) + ":" +
                        std::to_string(column)
                  : file;
}

std::string Diagnostic::str() const {
  std::ostringstream os;
  os << location();
  os << (warning ? ": warning: " : ": error: ");
  if (!field.empty())
    os << field << ": ";
  os << message;
  return os.str();
}

static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string>
closestMatch(const std::string &word,
             const std::vector<std::string> &candidates) {
  std::optional<std::string> best;
  size_t bestDistance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string &candidate : candidates) {
    size_t d = editDistance(word, candidate);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  return best;
}

static std::string joinList(const std::vector<std::string> &items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + items[i];
  return out;
}

namespace {

//===----------------------------------------------------------------------===//
// The schema: which keys each mapping may hold.
//===----------------------------------------------------------------------===//

std::string join(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}

// The keys of an inline model: the HF config.json fields the model reads
// (swift/Plan/HFConfig.h) and its name. The other config.json fields it may
// carry (pasted from a real config) are plan::hfOtherFields().
const std::vector<std::string> &modelKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = plan::hfModelFields();
    k.push_back("name");
    return k;
  }();
  return keys;
}

/// Each mapping of the job and the keys it may hold ("" is the top level).
const std::map<std::string, std::vector<std::string>> &schema() {
  static const std::map<std::string, std::vector<std::string>> sections = {
      {"", {"model", "training", "cluster", "backend", "strategy"}},
      {"training",
       {"sequence_length", "global_batch_size", "micro_batch_size",
        "precision", "optimizer", "lr_schedule", "max_grad_norm", "seed",
        "method", "lora", "packing", "truncation", "loss_on"}},
      {"training.lora", {"rank", "alpha", "dropout", "targets"}},
      {"training.optimizer", {"name", "lr", "betas", "eps", "weight_decay"}},
      {"training.lr_schedule", {"warmup_steps", "decay", "min_lr_ratio"}},
      {"cluster",
       {"gpu", "gpus_per_node", "nodes", "interconnect", "host", "profile"}},
      {"cluster.gpu",
       {"preset", "name", "memory_gib", "bf16_tflops", "fp8_tflops",
        "hbm_gbps", "host_link_gbps", "nvlink_gbps"}},
      {"cluster.interconnect", {"intra_node", "inter_node"}},
      {"cluster.interconnect.intra_node",
       {"preset", "name", "bandwidth_gbps", "latency_us"}},
      {"cluster.interconnect.inter_node",
       {"preset", "name", "bandwidth_gbps", "latency_us"}},
      {"cluster.host", {"memory_gib"}},
      {"strategy",
       {"zero", "offload", "checkpointing", "checkpoint_layers", "bucket_mib",
        "prefetch_depth", "offload_activations", "mlp_tile_tokens", "tp", "pp",
        "cp", "dp_shard", "pp_schedule", "virtual_stages"}},
  };
  return sections;
}

const std::vector<std::string> *allowedKeys(const std::string &path) {
  auto it = schema().find(path);
  return it == schema().end() ? nullptr : &it->second;
}

/// The full paths of the job where `key` is known, other than in `path`
/// itself (training.optimizer.lr for training.lr); those under `path` when
/// there are any, since a key one level too high is the likely slip.
std::vector<std::string> pathsOfKey(const std::string &path,
                                    const std::string &key) {
  std::vector<std::string> all, under;
  auto consider = [&](const std::string &section,
                      const std::vector<std::string> &keys) {
    if (section == path || !std::count(keys.begin(), keys.end(), key))
      return;
    std::string full = join(section, key);
    all.push_back(full);
    if (path.empty() || section.rfind(path + ".", 0) == 0)
      under.push_back(full);
  };
  for (const auto &[section, keys] : schema())
    consider(section, keys);
  consider("model", modelKeys());
  return under.empty() ? all : under;
}

/// What to say after "unknown key" for `key` in the mapping `path`: where
/// the key belongs when it is known elsewhere in the job (`jobKeys`: `path`
/// is the job's), else the closest key of `allowed`, else the list.
std::string unknownKeyHint(const std::string &path, const std::string &key,
                           const std::vector<std::string> &allowed,
                           bool jobKeys = true) {
  std::vector<std::string> elsewhere;
  if (jobKeys)
    elsewhere = pathsOfKey(path, key);
  // A key of many sections (name, preset) points nowhere in particular.
  if (!elsewhere.empty() && elsewhere.size() <= 3) {
    std::string hint = "; did you mean ";
    for (size_t i = 0; i < elsewhere.size(); ++i)
      hint += (i == 0 ? "'" : i + 1 == elsewhere.size() ? " or '" : ", '") +
              elsewhere[i] + "'";
    return hint + "?";
  }
  if (auto close = closestMatch(key, allowed))
    return "; did you mean '" + *close + "'?";
  return "; expected one of: " + joinList(allowed);
}

template <typename Preset>
std::vector<std::string> presetNames(const std::vector<Preset> &table) {
  std::vector<std::string> out;
  for (const Preset &p : table)
    out.push_back(p.name);
  return out;
}

/// "unknown GPU preset 'h300'; did you mean 'h100'? (presets: ...; or ...)"
template <typename Preset>
std::string unknownPreset(const std::string &kind, const std::string &name,
                          const std::vector<Preset> &table,
                          const std::string &otherwise) {
  std::vector<std::string> names = presetNames(table);
  std::string message = "unknown " + kind + " preset '" + name + "'";
  if (auto close = closestMatch(name, names))
    message += "; did you mean '" + *close + "'?";
  return message + " (presets: " + joinList(names) + "; " + otherwise + ")";
}

struct JobError {
  Diagnostic diag;
};

// What Diagnostic::file says for an override: "--set KEY=VALUE".
const std::string kSetPrefix = "--set ";

// Upper bounds on sizes: the model's and the batch's are the plan layer's
// (plan::limits), so that every job the planner accepts gives a plan
// swift-run reads; the cluster's below are the job's own. Products of sizes
// (tokens x hidden x layers ...) stay far from overflowing.
namespace limits = plan::limits;
constexpr int64_t kBig = int64_t(1) << 40;
constexpr int64_t kMaxGpusPerNode = 1024;
constexpr int64_t kMaxNodes = 65536;
constexpr int64_t kMaxWorld = 1 << 20;

//===----------------------------------------------------------------------===//
// Reading files.
//===----------------------------------------------------------------------===//

// The most a job, config.json or hardware profile may hold: far above any
// real one (a config.json is a few KiB), low enough that a wrong path fails
// at once instead of filling memory.
constexpr uintmax_t kMaxInputBytes = uintmax_t(64) << 20;

/// The text of `path`, a file the user named; `expected` says what it should
/// be ("a job file (YAML)"). Only regular files are opened (plan/Json.h).
/// HF config.json files are JSON and parsed by plan::parseJson; jobs and
/// profiles are YAML.
std::string readInput(const std::string &path, const std::string &expected) {
  try {
    return plan::readRegularFile(path, expected, kMaxInputBytes);
  } catch (const plan::UserError &e) {
    // "PATH: why" -> a diagnostic located at PATH.
    std::string why = e.what();
    if (why.rfind(path + ": ", 0) == 0)
      why = why.substr(path.size() + 2);
    throw JobError{{path, 0, 0, "", why}};
  }
}

/// yaml-cpp's message for `e`. Its depth guard (deeper nesting would
/// overflow its recursive parser's stack) only says "bad file".
std::string yamlMessage(const YAML::Exception &e, const std::string &syntax) {
  if (const auto *deep = dynamic_cast<const YAML::DeepRecursion *>(&e))
    return "nested deeper than " + std::to_string(deep->depth() - 1) +
           " levels; a job nests a few";
  return syntax + ": " + e.msg;
}

/// yaml-cpp keeps the first of two equal keys and drops the other without a
/// word; a file (or a --set value) that gives a key twice is refused,
/// naming it. The parser's depth guard bounds the recursion; `seen` visits
/// a collection shared through YAML aliases once.
void checkDuplicateKeys(const YAML::Node &node, const std::string &path,
                        const Diagnostic &at,
                        std::set<std::pair<int, int>> &seen) {
  if (!node.IsMap() && !node.IsSequence())
    return;
  if (YAML::Mark m = node.Mark();
      !m.is_null() && !seen.insert({m.line, m.column}).second)
    return;
  if (node.IsSequence()) {
    for (const YAML::Node &item : node)
      checkDuplicateKeys(item, path, at, seen);
    return;
  }
  std::map<std::string, YAML::Mark> keys;
  for (const auto &entry : node) {
    std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    if (entry.first.IsScalar()) {
      auto [first, fresh] = keys.emplace(key, entry.first.Mark());
      if (!fresh) {
        Diagnostic d = at;
        d.field = join(path, key);
        d.message = "duplicate key '" + key + "'";
        if (at.line > 0 && !first->second.is_null())
          d.message += " (first at line " +
                       std::to_string(first->second.line + 1) + ")";
        d.message += "; give each key once";
        if (d.line > 0 && !entry.first.Mark().is_null()) {
          d.line = entry.first.Mark().line + 1;
          d.column = entry.first.Mark().column + 1;
        }
        throw JobError{d};
      }
    }
    checkDuplicateKeys(entry.second, join(path, key), at, seen);
  }
}

/// `text` read from `file` (a job or profile) as a tree without duplicate
/// keys; `syntax` names the language in errors ("YAML syntax error").
YAML::Node parseInput(const std::string &text, const std::string &file,
                      const std::string &syntax) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception &e) {
    throw JobError{{file, e.mark.is_null() ? 0 : e.mark.line + 1,
                    e.mark.is_null() ? 0 : e.mark.column + 1, "",
                    yamlMessage(e, syntax)}};
  }
  std::set<std::pair<int, int>> seen;
  checkDuplicateKeys(root, "", Diagnostic{file, 1, 1, "", ""}, seen);
  return root;
}

//===----------------------------------------------------------------------===//
// Reading typed values with locations.
//===----------------------------------------------------------------------===//

class Reader {
public:
  Reader(std::string file, std::map<std::string, std::string> overridden)
      : file(std::move(file)), overridden(std::move(overridden)) {}

  [[noreturn]] void fail(const YAML::Node &at, const std::string &field,
                         const std::string &message) const {
    Diagnostic d = locate(at, field);
    d.field = field;
    d.message = message;
    throw JobError{d};
  }

  /// Where `field` (at node `at`) was set: the `--set` that set it or a key
  /// above it, else its position in the file.
  Diagnostic locate(const YAML::Node &at, const std::string &field) const {
    Diagnostic d;
    auto set = overridden.find(field);
    if (set == overridden.end()) {
      // A key inside an overridden value (--set model.x=...) reports the
      // override too.
      for (const auto &[key, text] : overridden)
        if (field.rfind(key + ".", 0) == 0)
          set = overridden.find(key);
    }
    if (set != overridden.end()) {
      d.file = kSetPrefix + set->second;
    } else {
      d.file = file;
      if (at.IsDefined() && at.Mark().line >= 0) {
        d.line = at.Mark().line + 1;
        d.column = at.Mark().column + 1;
      }
    }
    return d;
  }

  /// Rejects keys the schema does not know, suggesting where they belong
  /// (`jobKeys`: `path` is a mapping of the job) or the closest one.
  void checkKeys(const YAML::Node &map, const std::string &path,
                 const std::vector<std::string> &allowed,
                 const std::vector<std::string> &ignored = {},
                 bool jobKeys = true) const {
    for (const auto &entry : map) {
      std::string key = entry.first.Scalar();
      if (std::count(allowed.begin(), allowed.end(), key) ||
          std::count(ignored.begin(), ignored.end(), key))
        continue;
      fail(entry.first, join(path, key),
           "unknown key" + unknownKeyHint(path, key, allowed, jobKeys));
    }
  }

  YAML::Node mapping(const YAML::Node &parent, const std::string &key,
                     const std::string &path) const {
    YAML::Node node = parent[key];
    if (node && !node.IsMap() && !node.IsNull())
      fail(node, join(path, key), "expected a mapping of keys");
    return node;
  }

  std::string scalar(const YAML::Node &node, const std::string &field) const {
    if (!node.IsScalar())
      fail(node, field, "expected a single value, got a " +
                            std::string(node.IsMap() ? "mapping" : "list"));
    return node.Scalar();
  }

  /// An integer in [min, max]; max is a sanity bound (the plan reader's,
  /// where it has one), so that products of sizes cannot overflow.
  int64_t integer(const YAML::Node &node, const std::string &field,
                  int64_t min, int64_t max) const {
    std::string text = scalar(node, field);
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    bool whole = end == text.data() + text.size();
    if (ec == std::errc::result_out_of_range && whole)
      fail(node, field,
           "out of range: " + text +
               (text[0] == '-' ? " (at least " + std::to_string(min)
                               : " (at most " + std::to_string(max)) +
               ")");
    if (ec != std::errc() || !whole)
      fail(node, field, "expected an integer, got '" + text + "'");
    if (value < min)
      fail(node, field,
           "must be " + std::string(min == 1 ? "positive" : ">= " + std::to_string(min)) +
               ", got " + text);
    if (value > max)
      fail(node, field,
           "out of range: " + text + " (at most " + std::to_string(max) + ")");
    return value;
  }

  /// A finite number, positive (or >= 0 with allowZero) and at most max.
  double real(const YAML::Node &node, const std::string &field,
              bool allowZero = false, double max = 1e6) const {
    std::string text = scalar(node, field);
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    errno = 0;
    char *end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    bool parsed = !text.empty() && *end == '\0';
    // 1e400 (strtod: ERANGE and HUGE_VAL) or 1e-400 (ERANGE, ~0).
    if (parsed && errno == ERANGE)
      fail(node, field, "out of range: " + text);
    // strtod reads nan, inf and infinity; YAML spells them .nan and .inf.
    if ((parsed && !std::isfinite(value)) || lower == ".nan" ||
        lower == ".inf" || lower == "+.inf" || lower == "-.inf")
      fail(node, field, "expected a finite number, got '" + text + "'");
    if (!parsed)
      fail(node, field, "expected a number, got '" + text + "'");
    if (allowZero ? value < 0 : value <= 0)
      fail(node, field, std::string("must be ") +
                            (allowZero ? ">= 0" : "positive") + ", got " + text);
    if (value > max) {
      std::ostringstream bound;
      bound << std::setprecision(15) << max;
      fail(node, field, "out of range: " + text + " (at most " + bound.str() + ")");
    }
    return value;
  }

  /// A hardware quantity (GiB, TFLOPS, GB/s): finite, at most 1e6 and, so
  /// that no estimate divides by almost nothing, at least 1e-3 (or 0 with
  /// allowZero).
  double hardware(const YAML::Node &node, const std::string &field,
                  bool allowZero = false) const {
    double value = real(node, field, allowZero, 1e6);
    if (value != 0 && value < 1e-3)
      fail(node, field, "out of range: " + node.Scalar() + " (at least 0.001)");
    return value;
  }

  bool boolean(const YAML::Node &node, const std::string &field) const {
    std::string text = scalar(node, field);
    // A quoted scalar is a string (a JSON config's "no" is no boolean:
    // Python would read it as true).
    if (node.Tag() == "!")
      fail(node, field, "expected true or false, got the string \"" + text +
                            "\"");
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower == "true" || lower == "yes" || lower == "on")
      return true;
    if (lower == "false" || lower == "no" || lower == "off")
      return false;
    fail(node, field, "expected true or false, got '" + text + "'");
  }

  /// One of the plan enum E's spellings (swift/Plan/Enums.h).
  template <typename E>
  E oneOf(const YAML::Node &node, const std::string &field) const {
    std::string text = scalar(node, field);
    if (std::optional<E> value = plan::parseEnum<E>(text))
      return *value;
    std::vector<std::string> values = plan::enumSpellings<E>();
    std::string message = "'" + text + "' is not one of " + joinList(values);
    if (auto close = closestMatch(text, values))
      message += "; did you mean '" + *close + "'?";
    fail(node, field, message);
  }

  static bool isAuto(const YAML::Node &node) {
    return !node || node.IsNull() || (node.IsScalar() && node.Scalar() == "auto");
  }

  const std::string file;

private:
  std::map<std::string, std::string> overridden;
};

//===----------------------------------------------------------------------===//
// Sections.
//===----------------------------------------------------------------------===//

/// A job's inline `model:` mapping as the HF config reader's fields
/// (swift/Plan/HFConfig.h): its typed reads are the job's, so that errors
/// keep the job's messages and point at the job file's line and column or
/// at the `--set` that set the field.
class YamlFields : public plan::HFFields {
public:
  YamlFields(const Reader &r, const YAML::Node &map, std::string path)
      : r(r), map(map), path(std::move(path)) {}

  bool given(const std::string &field) const override {
    YAML::Node n = node(field);
    return n.IsDefined() && !n.IsNull();
  }
  bool isMapping(const std::string &field) const override {
    return node(field).IsMap();
  }
  int64_t integer(const std::string &field, int64_t lo,
                  int64_t hi) const override {
    return r.integer(node(field), name(field), lo, hi);
  }
  double positive(const std::string &field, double max) const override {
    return r.real(node(field), name(field), /*allowZero=*/false, max);
  }
  bool boolean(const std::string &field) const override {
    return r.boolean(node(field), name(field));
  }
  std::string string(const std::string &field) const override {
    return r.scalar(node(field), name(field));
  }
  std::vector<std::string> strings(const std::string &field) const override {
    std::vector<std::string> out;
    if (YAML::Node list = node(field); list.IsSequence())
      for (const YAML::Node &item : list)
        if (item.IsScalar())
          out.push_back(item.Scalar());
    return out;
  }
  [[noreturn]] void fail(const std::string &field,
                         const std::string &why) const override {
    r.fail(node(field, /*nearest=*/true), name(field), why);
  }
  /// Where `field` was set, for a warning about its value.
  Diagnostic where(const std::string &field) const {
    Diagnostic d = r.locate(node(field, /*nearest=*/true), name(field));
    d.field = name(field);
    return d;
  }

private:
  std::string name(const std::string &field) const { return join(path, field); }
  /// The node at `field`; undefined when absent, or with `nearest` the
  /// deepest mapping on the way that is there.
  YAML::Node node(const std::string &field, bool nearest = false) const {
    YAML::Node n = map;
    std::istringstream keys(field);
    for (std::string key; std::getline(keys, key, '.');) {
      const YAML::Node parent = n;
      YAML::Node child =
          parent.IsMap() ? parent[key] : YAML::Node(YAML::NodeType::Undefined);
      if (!child.IsDefined())
        return nearest ? n : YAML::Node(YAML::NodeType::Undefined);
      n.reset(child);
    }
    return n;
  }

  const Reader &r;
  YAML::Node map;
  std::string path;
};

/// The job's ModelSpec of what the HF config reader read; `where` locates
/// the values it warns about.
ModelSpec modelSpec(const plan::HFConfig &c,
                    const std::function<Diagnostic(const std::string &)> &where) {
  const plan::ModelConfig &m = c.model;
  ModelSpec s;
  s.modelType = c.modelType;
  s.hiddenSize = m.hiddenSize;
  s.intermediateSize = m.intermediateSize;
  s.numHiddenLayers = m.numLayers;
  s.numAttentionHeads = m.numHeads;
  s.numKeyValueHeads = m.numKvHeads;
  s.headDim = m.headDim;
  s.vocabSize = m.vocabSize;
  s.tieWordEmbeddings = m.tieWordEmbeddings;
  s.qkvBias = m.qkvBias;
  s.oBias = m.oBias;
  s.mlpBias = c.mlpBias;
  s.qkNorm = m.qkNorm;
  s.rmsNormEps = m.rmsNormEps;
  s.ropeTheta = m.ropeTheta;
  s.ropeScaling = m.ropeScaling;
  auto located = [&](const std::optional<plan::HFUnmodeled> &v)
      -> std::optional<UnmodeledValue> {
    if (!v)
      return std::nullopt;
    return UnmodeledValue{v->value, where(v->field)};
  };
  s.maxPositionEmbeddings = located(c.maxPositionEmbeddings);
  s.slidingWindow = located(c.slidingWindow);
  return s;
}

/// A model preset as the config.json fields it was copied from; head_dim
/// only where that config.json gives it (otherwise it follows hidden_size
/// and num_attention_heads, also after `--set` changes them).
nlohmann::json presetConfig(const ModelPreset &p) {
  nlohmann::json c = {{"model_type", p.modelType},
                      {"hidden_size", p.hiddenSize},
                      {"intermediate_size", p.intermediateSize},
                      {"num_hidden_layers", p.numHiddenLayers},
                      {"num_attention_heads", p.numAttentionHeads},
                      {"num_key_value_heads", p.numKeyValueHeads},
                      {"vocab_size", p.vocabSize},
                      {"tie_word_embeddings", p.tieWordEmbeddings},
                      {"rms_norm_eps", p.rmsNormEps},
                      {"rope_theta", p.ropeTheta}};
  if (p.headDim)
    c["head_dim"] = p.headDim;
  if (const plan::RopeScaling &rs = p.ropeScaling;
      rs.type != plan::RopeType::Default) {
    c["rope_scaling"] = {{"rope_type", plan::toString(rs.type)},
                         {"factor", rs.factor}};
    if (rs.type == plan::RopeType::Llama3) {
      c["rope_scaling"]["low_freq_factor"] = rs.lowFreqFactor;
      c["rope_scaling"]["high_freq_factor"] = rs.highFreqFactor;
      c["rope_scaling"]["original_max_position_embeddings"] =
          rs.originalMaxPositionEmbeddings;
    }
  }
  return c;
}

/// A preset, read as its config.json (the HF reader's layout rules).
ModelSpec fromPreset(const ModelPreset &p) {
  ModelSpec m = modelSpec(
      plan::readHFConfig(presetConfig(p), std::string("preset ") + p.name),
      [](const std::string &) { return Diagnostic{}; });
  m.name = p.name;
  m.source = hubId(p);
  return m;
}

/// JSON scalars and objects as YAML nodes without marks (a --set's
/// expansion of a preset).
YAML::Node yamlOf(const nlohmann::json &j) {
  if (j.is_object()) {
    YAML::Node map(YAML::NodeType::Map);
    for (const auto &[key, value] : j.items())
      map[key] = yamlOf(value);
    return map;
  }
  if (j.is_boolean())
    return YAML::Node(j.get<bool>());
  if (j.is_number_integer())
    return YAML::Node(j.get<int64_t>());
  if (j.is_number())
    return YAML::Node(j.get<double>());
  return YAML::Node(j.get<std::string>());
}

/// An HF config.json, through the strict JSON reader and the HF config
/// reader (swift/Plan/HFConfig.h); errors and warnings point at the line
/// and column of the field (or of the object that lacks it).
ModelSpec readHFConfigFile(const std::string &path) {
  const std::string text = readInput(path, plan::kHFConfigExpected);
  plan::JsonPositions positions;
  plan::HFConfig config;
  try {
    config = plan::readHFConfig(plan::parseJson(text, path, &positions), path,
                                &positions);
  } catch (const plan::JsonError &e) {
    throw JobError{{path, e.at.line, e.at.column, e.field, e.why}};
  }
  ModelSpec m = modelSpec(config, [&](const std::string &field) {
    plan::JsonPosition at = plan::positionOf(positions, field);
    return Diagnostic{path, at.line, at.column, field, ""};
  });
  m.name = path;
  return m;
}

ModelSpec readModel(const Reader &r, const YAML::Node &node) {
  if (!node || node.IsNull())
    r.fail(node, "model",
           "missing; name a preset (e.g. llama3.1-8b), a path to an HF "
           "config.json, or a mapping of config.json fields");
  if (node.IsMap()) {
    r.checkKeys(node, "model", modelKeys(), plan::hfOtherFields());
    YamlFields fields(r, node, "model");
    ModelSpec m = modelSpec(plan::readHFConfig(fields, /*modelTypeRequired=*/false),
                            [&](const std::string &f) { return fields.where(f); });
    m.name = node["name"] ? r.scalar(node["name"], "model.name") : "inline";
    return m;
  }
  std::string name = r.scalar(node, "model");
  if (const ModelPreset *p = findModelPreset(name))
    return fromPreset(*p);

  bool looksLikePath = name.find('/') != std::string::npos ||
                       (name.size() > 5 && name.substr(name.size() - 5) == ".json");
  fs::path candidate = name;
  if (candidate.is_relative() && !r.file.empty())
    candidate = fs::path(r.file).parent_path() / name;
  if (!fs::exists(candidate) && fs::exists(name))
    candidate = name;
  // An HF model directory: its config.json, and its weights when it has
  // them (model.safetensors, or shards with their index).
  std::string weights;
  if (fs::is_directory(candidate)) {
    if (!fs::exists(candidate / "config.json"))
      r.fail(node, "model",
             "'" + candidate.string() +
                 "' is a directory without config.json; expected an HF "
                 "model directory (config.json and safetensors), a path to "
                 "an HF config.json, or a preset");
    if (fs::exists(candidate / "model.safetensors") ||
        fs::exists(candidate / "model.safetensors.index.json"))
      weights = fs::absolute(candidate).lexically_normal().string();
    candidate /= "config.json";
  }
  if (fs::exists(candidate)) {
    try {
      ModelSpec m = readHFConfigFile(candidate.string());
      m.weights = weights;
      m.source = weights; // a directory another stack can load; else none
      // Warnings about config.json fields name it like its errors do.
      for (std::optional<UnmodeledValue> *v :
           {&m.maxPositionEmbeddings, &m.slidingWindow})
        if (*v)
          (*v)->where.field = "model -> " + (*v)->where.field;
      return m;
    } catch (JobError &e) {
      // Errors inside config.json name that file; say which key led there.
      e.diag.field = e.diag.field.empty() ? "model" : "model -> " + e.diag.field;
      throw;
    }
  }
  if (looksLikePath)
    r.fail(node, "model",
           "no such file '" + candidate.string() +
               "' (paths are relative to the job file's directory)");
  r.fail(node, "model",
         unknownPreset("model", name, modelPresets(),
                       "or a path to an HF config.json, or a mapping of its fields"));
}

/// training.optimizer: a name (`adamw`) or {name, lr, betas, eps,
/// weight_decay}; absent keys keep the plan's defaults.
void readOptimizer(const Reader &r, const YAML::Node &o, TrainingSpec &s) {
  const std::string path = "training.optimizer";
  if (!o.IsMap()) {
    s.optimizer = r.oneOf<plan::Optimizer>(o, path);
    return;
  }
  r.checkKeys(o, path, *allowedKeys(path));
  if (YAML::Node n = o["name"])
    s.optimizer = r.oneOf<plan::Optimizer>(n, path + ".name");
  plan::OptimizerConfig &c = s.optimizerConfig;
  auto inRange = [&](const YAML::Node &n, const std::string &field, double lo,
                     bool loOpen, double hi, bool hiOpen) {
    double v = r.real(n, field, /*allowZero=*/true,
                      std::numeric_limits<double>::max());
    if ((loOpen ? v <= lo : v < lo) || (hiOpen ? v >= hi : v > hi)) {
      std::ostringstream why;
      why << "must be in " << (loOpen ? "(" : "[") << lo << ", " << hi
          << (hiOpen ? ")" : "]") << ", got " << n.Scalar();
      r.fail(n, field, why.str());
    }
    return v;
  };
  if (YAML::Node n = o["lr"])
    c.lr = inRange(n, path + ".lr", 0, true, 10, false);
  if (YAML::Node n = o["betas"]) {
    if (!n.IsSequence() || n.size() != 2)
      r.fail(n, path + ".betas", "expected a list [beta1, beta2], e.g. [0.9, 0.95]");
    c.beta1 = inRange(n[0], path + ".betas", 0, false, 1, true);
    c.beta2 = inRange(n[1], path + ".betas", 0, false, 1, true);
  }
  if (YAML::Node n = o["eps"])
    c.eps = inRange(n, path + ".eps", 0, true, 1, false);
  if (YAML::Node n = o["weight_decay"])
    c.weightDecay = inRange(n, path + ".weight_decay", 0, false, 10, false);
}

/// training.lr_schedule: {warmup_steps, decay, min_lr_ratio}.
void readLrSchedule(const Reader &r, const YAML::Node &l, TrainingSpec &s) {
  const std::string path = "training.lr_schedule";
  r.checkKeys(l, path, *allowedKeys(path));
  plan::LrScheduleConfig &c = s.lrSchedule;
  if (YAML::Node n = l["warmup_steps"])
    c.warmupSteps = r.integer(n, path + ".warmup_steps", 0, kBig);
  if (YAML::Node n = l["decay"])
    c.decay = r.oneOf<plan::LrDecay>(n, path + ".decay");
  if (YAML::Node n = l["min_lr_ratio"]) {
    c.minLrRatio = r.real(n, path + ".min_lr_ratio", /*allowZero=*/true);
    if (c.minLrRatio > 1)
      r.fail(n, path + ".min_lr_ratio",
             "must be in [0, 1] (a fraction of lr), got " + n.Scalar());
    if (c.minLrRatio > 0 && c.decay == plan::LrDecay::Constant)
      r.fail(n, path + ".min_lr_ratio",
             "has no effect with decay: constant; set decay: cosine or linear");
  }
}

TrainingSpec readTraining(const Reader &r, const YAML::Node &root) {
  YAML::Node t = r.mapping(root, "training", "");
  if (!t || t.IsNull())
    r.fail(root, "training",
           "missing; needs at least sequence_length and global_batch_size");
  r.checkKeys(t, "training", *allowedKeys("training"));
  TrainingSpec s;
  auto need = [&](const char *key, int64_t max) {
    if (!t[key])
      r.fail(t, join("training", key), "missing; give a positive integer");
    return r.integer(t[key], join("training", key), 1, max);
  };
  s.sequenceLength = need("sequence_length", limits::kSequenceLength);
  s.globalBatchSize = need("global_batch_size", limits::kBatch);
  if (YAML::Node mb = t["micro_batch_size"]; !Reader::isAuto(mb)) {
    s.microBatchSize = r.integer(mb, "training.micro_batch_size", 1, limits::kBatch);
    if (*s.microBatchSize > s.globalBatchSize)
      r.fail(mb, "training.micro_batch_size",
             "micro_batch_size " + std::to_string(*s.microBatchSize) +
                 " exceeds global_batch_size " +
                 std::to_string(s.globalBatchSize) +
                 "; lower it or use auto");
  }
  if (t["precision"])
    s.precision = r.oneOf<plan::Precision>(t["precision"], "training.precision");
  if (YAML::Node o = t["optimizer"]; o && !o.IsNull())
    readOptimizer(r, o, s);
  if (YAML::Node l = r.mapping(t, "lr_schedule", "training"); l && !l.IsNull())
    readLrSchedule(r, l, s);
  if (YAML::Node g = t["max_grad_norm"]; g && !g.IsNull()) {
    // 0: no clipping (as HF's max_grad_norm=0), but set: ds_config says 0.
    s.maxGradNorm = r.real(g, "training.max_grad_norm", /*allowZero=*/true, 1e30);
  }
  if (YAML::Node seed = t["seed"]; seed && !seed.IsNull())
    s.seed = uint64_t(r.integer(seed, "training.seed", 0, kBig));
  for (const char *key : {"lr_schedule", "max_grad_norm", "seed"})
    if (YAML::Node n = t[key]; n && !n.IsNull())
      s.optimizerSettingsGiven = true;
  if (YAML::Node o = t["optimizer"]; o && o.IsMap())
    s.optimizerSettingsGiven = true;
  if (t["method"])
    s.method = r.oneOf<plan::Method>(t["method"], "training.method");
  if (t["packing"])
    s.packing = r.boolean(t["packing"], "training.packing");
  if (t["truncation"])
    s.truncation = r.oneOf<plan::Truncation>(t["truncation"],
                                             "training.truncation");
  if (t["loss_on"])
    s.lossOn = r.oneOf<plan::LossOn>(t["loss_on"], "training.loss_on");
  if (YAML::Node l = r.mapping(t, "lora", "training"); l && !l.IsNull()) {
    r.checkKeys(l, "training.lora", *allowedKeys("training.lora"));
    if (l["rank"])
      s.lora.rank = r.integer(l["rank"], "training.lora.rank", 1, 1 << 16);
    if (l["alpha"])
      s.lora.alpha = r.real(l["alpha"], "training.lora.alpha", false, 1e9);
    if (YAML::Node d = l["dropout"]; d && !d.IsNull()) {
      s.lora.dropout = r.real(d, "training.lora.dropout", /*allowZero=*/true);
      if (s.lora.dropout >= 1)
        r.fail(d, "training.lora.dropout",
               "must be in [0, 1) (the probability of zeroing an adapter "
               "input), got " + r.scalar(d, "training.lora.dropout"));
    }
    if (YAML::Node targets = l["targets"]) {
      s.lora.targets.clear();
      // all-linear, or names of the decoder linears (plan::loraTargetNames():
      // what swift-run can adapt; lm_head never is).
      std::vector<std::string> known = plan::loraTargetNames();
      known.insert(known.begin(), "all-linear");
      auto add = [&](const YAML::Node &target) {
        std::string name = r.scalar(target, "training.lora.targets");
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          std::string message = "'" + name + "' is not a linear layer of the "
                                "decoder that LoRA can adapt";
          if (auto close = closestMatch(name, known))
            message += "; did you mean '" + *close + "'?";
          r.fail(target, "training.lora.targets",
                 message + " (expected all-linear or a list of " +
                     joinList(plan::loraTargetNames()) + ")");
        }
        s.lora.targets.push_back(name);
      };
      if (targets.IsSequence()) {
        for (const auto &target : targets)
          add(target);
      } else {
        add(targets);
      }
      if (s.lora.targets.empty())
        r.fail(targets, "training.lora.targets",
               "empty; use all-linear or a list like [q_proj, v_proj]");
    }
  }
  return s;
}

GpuSpec readGpu(const Reader &r, const YAML::Node &node) {
  const std::string field = "cluster.gpu";
  auto unknown = [&](const YAML::Node &at, const std::string &name) {
    r.fail(at, field,
           unknownPreset("GPU", name, gpuPresets(),
                         "or a mapping {memory_gib, bf16_tflops, hbm_gbps}"));
  };
  auto fromPreset = [](const GpuPreset &p) {
    return GpuSpec{p.name, p.memoryGiB, p.bf16Tflops, p.hbmGBps,
                   p.hostLinkGBps, p.nvlinkGBps, p.fp8Tflops};
  };
  if (!node || node.IsNull())
    r.fail(node, field,
           "missing; name a GPU preset (" + joinList(presetNames(gpuPresets())) +
               ") or give {memory_gib, bf16_tflops, hbm_gbps}");
  if (!node.IsMap()) {
    std::string name = r.scalar(node, field);
    const GpuPreset *p = findGpuPreset(name);
    if (!p)
      unknown(node, name);
    return fromPreset(*p);
  }
  r.checkKeys(node, field, *allowedKeys(field));
  GpuSpec g{"custom", 0, 0, 0, 32, 0, 0};
  if (YAML::Node preset = node["preset"]) {
    const GpuPreset *p = findGpuPreset(r.scalar(preset, field + ".preset"));
    if (!p)
      unknown(preset, preset.Scalar());
    g = fromPreset(*p);
  }
  auto number = [&](const char *key, double &out, bool allowZero) {
    if (YAML::Node n = node[key])
      out = r.hardware(n, join(field, key), allowZero);
    else if (out <= 0 && !allowZero)
      r.fail(node, join(field, key),
             "missing; a custom GPU needs memory_gib, bf16_tflops and hbm_gbps");
  };
  if (node["name"])
    g.name = r.scalar(node["name"], field + ".name");
  number("memory_gib", g.memoryGiB, false);
  number("bf16_tflops", g.bf16Tflops, false);
  number("hbm_gbps", g.hbmGBps, false);
  number("host_link_gbps", g.hostLinkGBps, false);
  number("nvlink_gbps", g.nvlinkGBps, true);
  number("fp8_tflops", g.fp8Tflops, true); // 0: no FP8 tensor cores
  return g;
}

LinkSpec readLink(const Reader &r, const YAML::Node &node,
                  const std::string &field, const std::string &fallback) {
  auto unknown = [&](const YAML::Node &at, const std::string &name) {
    r.fail(at, field,
           unknownPreset("interconnect", name, linkPresets(),
                         "or a mapping {bandwidth_gbps, latency_us}"));
  };
  auto fromPreset = [](const LinkPreset &p) {
    return LinkSpec{p.name, p.bandwidthGBps, p.latencyUs};
  };
  if (!node || node.IsNull())
    return fromPreset(*findLinkPreset(fallback));
  if (!node.IsMap()) {
    std::string name = r.scalar(node, field);
    const LinkPreset *p = findLinkPreset(name);
    if (!p)
      unknown(node, name);
    return fromPreset(*p);
  }
  r.checkKeys(node, field, *allowedKeys(field));
  LinkSpec l{"custom", 0, 10};
  if (YAML::Node preset = node["preset"]) {
    const LinkPreset *p = findLinkPreset(r.scalar(preset, field + ".preset"));
    if (!p)
      unknown(preset, preset.Scalar());
    l = fromPreset(*p);
  }
  if (node["name"])
    l.name = r.scalar(node["name"], field + ".name");
  if (node["bandwidth_gbps"])
    l.bandwidthGBps = r.hardware(node["bandwidth_gbps"], field + ".bandwidth_gbps");
  else if (l.bandwidthGBps <= 0)
    r.fail(node, field + ".bandwidth_gbps", "missing; give GB/s per direction");
  if (node["latency_us"])
    l.latencyUs = r.real(node["latency_us"], field + ".latency_us", true);
  return l;
}

/// A hardware profile: rates measured on the machine
/// (benchmarks/hardware/measure_profile.py writes one).
MeasuredRates readProfile(const Reader &r, const YAML::Node &node,
                          const GpuSpec &gpu) {
  MeasuredRates measured;
  std::string name = r.scalar(node, "cluster.profile");
  fs::path path = name;
  if (path.is_relative() && !r.file.empty())
    path = fs::path(r.file).parent_path() / name;
  if (!fs::exists(path))
    r.fail(node, "cluster.profile",
           "no such file '" + path.string() +
               "' (paths are relative to the job file's directory)");
  YAML::Node profile;
  try {
    profile = parseInput(
        readInput(path.string(), "a hardware profile (YAML of measured rates)"),
        path.string(), "YAML syntax error");
  } catch (JobError &e) {
    if (e.diag.line == 0) // the file itself: say which key named it
      e.diag.field = "cluster.profile";
    throw;
  }
  Reader pr(path.string(), {});
  if (!profile.IsMap())
    pr.fail(profile, "", "expected a mapping of measured rates");
  std::vector<std::string> allowed;
  for (const MeasuredRates::Rate &rate : MeasuredRates::kRates)
    allowed.push_back(rate.key);
  pr.checkKeys(profile, "", allowed, {"gpu", "source", "date"},
               /*jobKeys=*/false);
  if (YAML::Node g = profile["gpu"]; g && pr.scalar(g, "gpu") != gpu.name)
    pr.fail(g, "gpu",
            "profile measured on '" + g.Scalar() + "' but the cluster's gpu is '" +
                gpu.name + "'");
  for (const MeasuredRates::Rate &rate : MeasuredRates::kRates)
    if (YAML::Node v = profile[rate.key])
      // Rates (TFLOPS, GB/s) are hardware quantities; times (latency_us,
      // ns_per_param) only need to be finite and at most 1e6.
      measured.*rate.field =
          rate.isTime ? pr.real(v, rate.key) : pr.hardware(v, rate.key);
  return measured;
}

ClusterSpec readCluster(const Reader &r, const YAML::Node &root) {
  YAML::Node c = r.mapping(root, "cluster", "");
  if (!c || c.IsNull())
    r.fail(root, "cluster", "missing; needs at least gpu (e.g. gpu: h100)");
  r.checkKeys(c, "cluster", *allowedKeys("cluster"));
  ClusterSpec s;
  s.gpu = readGpu(r, c["gpu"]);
  if (c["gpus_per_node"])
    s.gpusPerNode = r.integer(c["gpus_per_node"], "cluster.gpus_per_node", 1, kMaxGpusPerNode);
  if (c["nodes"])
    s.nodes = r.integer(c["nodes"], "cluster.nodes", 1, kMaxNodes);
  if (s.numGpus() > kMaxWorld)
    r.fail(c["nodes"] ? c["nodes"] : c["gpus_per_node"],
           c["nodes"] ? "cluster.nodes" : "cluster.gpus_per_node",
           std::to_string(s.nodes) + " nodes of " +
               std::to_string(s.gpusPerNode) + " GPUs make " +
               std::to_string(s.numGpus()) + " GPUs, more than " +
               std::to_string(kMaxWorld) + " (a plan's world.size bound)");
  const GpuPreset *preset = findGpuPreset(s.gpu.name);
  std::string intraDefault = preset ? preset->intraNode : "pcie4";
  std::string interDefault = preset ? preset->interNode : "ib-100g";
  YAML::Node links = r.mapping(c, "interconnect", "cluster");
  if (links && links.IsMap())
    r.checkKeys(links, "cluster.interconnect",
                *allowedKeys("cluster.interconnect"));
  YAML::Node none;
  s.intraNode = readLink(r, links && links.IsMap() ? links["intra_node"] : none,
                         "cluster.interconnect.intra_node", intraDefault);
  s.interNode = readLink(r, links && links.IsMap() ? links["inter_node"] : none,
                         "cluster.interconnect.inter_node", interDefault);
  if (YAML::Node profile = c["profile"]; profile && !profile.IsNull())
    s.measured = readProfile(r, profile, s.gpu);
  if (YAML::Node host = r.mapping(c, "host", "cluster"); host && host.IsMap()) {
    r.checkKeys(host, "cluster.host", *allowedKeys("cluster.host"));
    if (host["memory_gib"])
      s.hostMemoryGiB = r.hardware(host["memory_gib"], "cluster.host.memory_gib");
  }
  return s;
}

/// strategy's layout keys (tp, pp, cp, dp_shard, pp_schedule,
/// virtual_stages) into `s`, each checked against what the job knows: the
/// GPUs (tp x pp x cp divides them, dp_shard the data-parallel ranks left;
/// an open degree counts 1, so these are necessary whatever the search
/// picks for it), the model (tp splits its heads and MLP, pp stages and
/// chunks hold its layers) and the sequence (cp's balanced chunks).
void readLayout(const Reader &r, const YAML::Node &st, const ModelSpec &model,
                const TrainingSpec &training, const ClusterSpec &cluster,
                StrategySpec &s) {
  const int64_t gpus = cluster.numGpus();
  const int64_t layers = model.numHiddenLayers;
  int64_t perRank = 1; // GPUs one data-parallel rank spans (fixed degrees)
  std::string product; // "tp 4 x pp 4"
  // tp, pp and cp in turn: an integer in [1, max] whose product with the
  // ones before divides the GPUs.
  auto degree = [&](const char *key, int64_t max) -> std::optional<int64_t> {
    YAML::Node n = st[key];
    if (Reader::isAuto(n))
      return std::nullopt;
    const std::string field = join("strategy", key);
    int64_t value = r.integer(n, field, 1, max);
    product += (product.empty() ? "" : " x ") + std::string(key) + " " +
               std::to_string(value);
    perRank *= value; // at most 2^10 x 2^12 x 2^16
    if (gpus % perRank != 0)
      r.fail(n, field,
             product + (perRank == value ? "" : " = " + std::to_string(perRank)) +
                 " does not divide the cluster's " + std::to_string(gpus) +
                 " GPUs (cluster.nodes x cluster.gpus_per_node)");
    return value;
  };
  const std::string notDividing = " does not divide the model's ";
  if ((s.tp = degree("tp", 1024))) {
    const YAML::Node n = st["tp"];
    const int64_t tp = *s.tp, kv = model.numKeyValueHeads;
    // Each tensor-parallel rank computes whole heads and whole MLP columns;
    // key/value heads are split too, or replicated when there are fewer
    // than ranks (each rank then holds one).
    if (model.numAttentionHeads % tp != 0)
      r.fail(n, "strategy.tp",
             std::to_string(tp) + notDividing +
                 std::to_string(model.numAttentionHeads) +
                 " attention heads (each tensor-parallel rank computes whole "
                 "heads)");
    if (kv % tp != 0 && tp % kv != 0)
      r.fail(n, "strategy.tp",
             std::to_string(tp) + " and the model's " + std::to_string(kv) +
                 " key/value heads: neither divides the other (tensor-parallel "
                 "ranks split whole key/value heads, or replicate them)");
    if (model.intermediateSize % tp != 0)
      r.fail(n, "strategy.tp",
             std::to_string(tp) + notDividing + "intermediate_size " +
                 std::to_string(model.intermediateSize) +
                 " (the MLP's columns are split over tensor-parallel ranks)");
  }
  if ((s.pp = degree("pp", limits::kLayers)) && *s.pp > layers)
    r.fail(st["pp"], "strategy.pp",
           std::to_string(*s.pp) + " pipeline stages exceed the model's " +
               std::to_string(layers) + " decoder layers");
  if ((s.cp = degree("cp", 1 << 16)) && *s.cp > 1 &&
      training.sequenceLength % (2 * *s.cp) != 0)
    r.fail(st["cp"], "strategy.cp",
           std::to_string(*s.cp) +
               " needs training.sequence_length to be a multiple of 2 x cp = " +
               std::to_string(2 * *s.cp) + " (each rank takes a chunk from "
               "each end of the sequence, balancing causal attention), got " +
               std::to_string(training.sequenceLength));
  if (YAML::Node n = st["dp_shard"]; !Reader::isAuto(n)) {
    s.dpShard = r.integer(n, "strategy.dp_shard", 1, kMaxWorld);
    const int64_t dataParallel = gpus / perRank;
    if (dataParallel % *s.dpShard != 0)
      r.fail(n, "strategy.dp_shard",
             std::to_string(*s.dpShard) + " does not divide the " +
                 std::to_string(dataParallel) + " data-parallel ranks (" +
                 (product.empty() ? "the cluster's " + std::to_string(gpus) +
                                        " GPUs"
                                  : std::to_string(gpus) + " GPUs / " + product) +
                 ") into equal groups, each sharing one copy of the model "
                 "states");
  }
  if (YAML::Node n = st["pp_schedule"]; !Reader::isAuto(n)) {
    s.ppSchedule = r.oneOf<plan::PipelineSchedule>(n, "strategy.pp_schedule");
    if (s.pp == 1)
      r.fail(n, "strategy.pp_schedule",
             std::string(plan::toString(*s.ppSchedule)) +
                 " schedules a pipeline, but strategy.pp is 1; set pp > 1 or "
                 "leave pp_schedule auto");
  }
  if (YAML::Node n = st["virtual_stages"]; !Reader::isAuto(n)) {
    const std::string field = "strategy.virtual_stages";
    const int64_t v = *(s.virtualStages = r.integer(n, field, 1, limits::kLayers));
    const std::string chunks = std::to_string(v) + " model chunks per pipeline rank";
    if (s.ppSchedule == plan::PipelineSchedule::Interleaved && v == 1)
      r.fail(n, field,
             "pp_schedule interleaved needs at least 2 model chunks per "
             "pipeline rank, got 1");
    if (v > 1 && s.pp == 1)
      r.fail(n, field, chunks + " need a pipeline, but strategy.pp is 1");
    if (v > 1 && s.ppSchedule == plan::PipelineSchedule::OneFOneB)
      r.fail(n, field,
             chunks + " need pp_schedule interleaved, not 1f1b");
    const std::string decoder = " exceed the model's " +
                                std::to_string(layers) + " decoder layers";
    if (v > layers)
      r.fail(n, field, chunks + decoder);
    if (s.pp && *s.pp * v > layers)
      r.fail(n, field,
             "pp " + std::to_string(*s.pp) + " x virtual_stages " +
                 std::to_string(v) + " = " + std::to_string(*s.pp * v) +
                 " model chunks" + decoder);
  }
}

StrategySpec readStrategy(const Reader &r, const YAML::Node &root,
                          const ModelSpec &model, const TrainingSpec &training,
                          const ClusterSpec &cluster) {
  StrategySpec s;
  YAML::Node st = r.mapping(root, "strategy", "");
  if (!st || st.IsNull())
    return s;
  r.checkKeys(st, "strategy", *allowedKeys("strategy"));
  if (YAML::Node z = st["zero"]; !Reader::isAuto(z)) {
    std::string text = r.scalar(z, "strategy.zero");
    if (text != "0" && text != "1" && text != "2" && text != "3")
      r.fail(z, "strategy.zero", "must be 0, 1, 2, 3 or auto, got '" + text + "'");
    s.zero = text[0] - '0';
  }
  if (YAML::Node o = st["offload"]; !Reader::isAuto(o))
    s.offload = r.oneOf<plan::Offload>(o, "strategy.offload");
  if (YAML::Node c = st["checkpointing"]; !Reader::isAuto(c))
    s.checkpointing = r.oneOf<plan::Checkpointing>(c, "strategy.checkpointing");
  if (YAML::Node b = st["bucket_mib"]; !Reader::isAuto(b)) {
    // At most 1 TiB (the plan's bound on bucket_bytes), so the conversion to
    // bytes is defined; at least one byte.
    double bytes = r.real(b, "strategy.bucket_mib", false, 1 << 20) * (1 << 20);
    if (bytes < 1)
      r.fail(b, "strategy.bucket_mib",
             "must be at least one byte (2^-20 MiB), got " + b.Scalar());
    s.bucketBytes = static_cast<int64_t>(bytes);
  }
  if (YAML::Node p = st["prefetch_depth"]; !Reader::isAuto(p))
    s.prefetchDepth = r.integer(p, "strategy.prefetch_depth", 1, 64);
  if (YAML::Node k = st["checkpoint_layers"]; !Reader::isAuto(k)) {
    s.checkpointLayers = r.integer(k, "strategy.checkpoint_layers", 0, limits::kLayers);
    if (*s.checkpointLayers > model.numHiddenLayers)
      r.fail(k, "strategy.checkpoint_layers",
             std::to_string(*s.checkpointLayers) + " exceeds the model's " +
                 std::to_string(model.numHiddenLayers) + " layers");
    if (s.checkpointing == plan::Checkpointing::None)
      r.fail(k, "strategy.checkpoint_layers",
             "set, but checkpointing is none; use selective or full");
  }
  if (YAML::Node a = st["offload_activations"]; !Reader::isAuto(a)) {
    // none | all | the first k layers
    const std::string text = a.IsScalar() ? a.Scalar() : "";
    if (text == "none")
      s.offloadActivations = 0;
    else if (text == "all")
      s.offloadActivations = -1;
    else if (text.empty() ||
             text.find_first_not_of("0123456789") != std::string::npos)
      r.fail(a, "strategy.offload_activations",
             "expected none, all or a number of layers (0-" +
                 std::to_string(model.numHiddenLayers) + "), got '" + text + "'");
    else
      s.offloadActivations =
          r.integer(a, "strategy.offload_activations", 0, model.numHiddenLayers);
    if (*s.offloadActivations != 0 && s.checkpointing &&
        *s.checkpointing != plan::Checkpointing::Full)
      r.fail(a, "strategy.offload_activations",
             "offloads fully checkpointed layers' inputs, but checkpointing is " +
                 std::string(plan::toString(*s.checkpointing)) + "; use full");
  }
  if (YAML::Node t = st["mlp_tile_tokens"]; !Reader::isAuto(t))
    s.mlpTileTokens = t.IsScalar() && t.Scalar() == "none"
                          ? 0
                          : r.integer(t, "strategy.mlp_tile_tokens", 0,
                                      limits::kSequenceLength);
  readLayout(r, st, model, training, cluster, s);
  return s;
}

//===----------------------------------------------------------------------===//
// --set KEY=VALUE
//===----------------------------------------------------------------------===//

void applyOverride(YAML::Node &root, const std::string &text,
                   std::map<std::string, std::string> &overridden) {
  auto fail = [&](const std::string &field, const std::string &message) {
    throw JobError{{kSetPrefix + text, 0, 0, field, message}};
  };
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    fail("", "expected KEY=VALUE, e.g. --set strategy.zero=3");
  std::string key = text.substr(0, eq);
  std::string value = text.substr(eq + 1);

  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, '.');) {
    if (part.empty())
      fail(key, "empty key component");
    parts.push_back(part);
  }
  YAML::Node node;
  node.reset(root);
  std::string path;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string &part = parts[i];
    const std::vector<std::string> *allowed =
        path == "model" ? &modelKeys() : allowedKeys(path);
    const std::vector<std::string> &other = plan::hfOtherFields();
    bool ignored = path == "model" &&
                   std::count(other.begin(), other.end(), part);
    if (allowed && !ignored &&
        !std::count(allowed->begin(), allowed->end(), part))
      fail(join(path, part), "unknown key '" + part + "'" +
                                 unknownKeyHint(path, part, *allowed));
    if (i + 1 < parts.size()) {
      YAML::Node child = node[part];
      if (child && child.IsScalar() && path.empty() && part == "model") {
        // A preset: expand it so single fields can be changed.
        if (const ModelPreset *p = findModelPreset(child.Scalar())) {
          YAML::Node map = yamlOf(presetConfig(*p));
          map["name"] = p->name;
          node[part] = map;
          child.reset(node[part]);
        } else {
          fail(key, "model is '" + child.Scalar() +
                        "', not a preset or mapping whose fields can be set");
        }
      } else if (child && child.IsScalar() && !child.IsNull()) {
        // e.g. --set cluster.gpu.memory_gib=40 over gpu: h100.
        YAML::Node map(YAML::NodeType::Map);
        // training.optimizer: adamw names the optimizer; the rest presets.
        map[path == "training" && part == "optimizer" ? "name" : "preset"] =
            child.Scalar();
        node[part] = map;
        child.reset(node[part]);
      } else if (!child || !child.IsMap()) {
        node[part] = YAML::Node(YAML::NodeType::Map);
        child.reset(node[part]);
      }
      node.reset(child);
    } else {
      YAML::Node parsed;
      try {
        parsed = YAML::Load(value);
      } catch (const YAML::Exception &e) {
        fail(key, "value " + yamlMessage(e, "is not valid YAML"));
      }
      std::set<std::pair<int, int>> seen;
      checkDuplicateKeys(parsed, key, Diagnostic{kSetPrefix + text}, seen);
      node[part] = parsed;
    }
    path = join(path, part);
  }
  overridden[key] = text;
}

/// Where each key of the job's top level and sections was set.
std::map<std::string, Diagnostic> origins(const Reader &r,
                                          const YAML::Node &root) {
  std::map<std::string, Diagnostic> out;
  for (const auto &section : root) {
    std::string name = section.first.Scalar();
    out[name] = r.locate(section.second, name);
    if (section.second.IsMap())
      for (const auto &entry : section.second) {
        std::string field = join(name, entry.first.Scalar());
        out[field] = r.locate(entry.second, field);
      }
  }
  return out;
}

/// Warnings for config.json values swift does not model, now that the
/// sequence length is known.
std::vector<Diagnostic> unmodeledWarnings(const JobSpec &job) {
  std::vector<Diagnostic> out;
  const ModelSpec &m = job.model;
  int64_t sequence = job.training.sequenceLength;
  auto warn = [&](const UnmodeledValue &v, const std::string &message) {
    Diagnostic d = v.where;
    d.message = message;
    d.warning = true;
    out.push_back(d);
  };
  std::string tokens = std::to_string(sequence) + " tokens";
  if (m.slidingWindow && m.slidingWindow->value < sequence)
    warn(*m.slidingWindow,
         "HF's " + m.modelType + " attends to the last " +
             std::to_string(m.slidingWindow->value) +
             " tokens only, fewer than training.sequence_length " +
             std::to_string(sequence) + "; swift-plan plans, and swift-run "
             "trains, full causal attention over all " + tokens);
  if (m.maxPositionEmbeddings && m.maxPositionEmbeddings->value < sequence)
    warn(*m.maxPositionEmbeddings,
         std::to_string(m.maxPositionEmbeddings->value) +
             " positions, fewer than training.sequence_length " +
             std::to_string(sequence) + "; swift-plan plans, and swift-run "
             "trains, all " + tokens + ", past the model's limit (raise "
             "max_position_embeddings if that is meant)");
  return out;
}

} // namespace

std::string unsupportedPrecision(const JobSpec &job) {
  const plan::Precision p = job.training.precision;
  if (!plan::fp8Gemms(p))
    return "";
  const std::string name = plan::toString(p);
  const std::string twin = plan::toString(plan::storagePrecision(p));
  const GpuSpec &gpu = job.cluster.gpu;
  if (!(gpu.fp8Tflops > 0)) {
    std::vector<std::string> fp8;
    for (const GpuPreset &preset : gpuPresets())
      if (preset.fp8Tflops > 0)
        fp8.push_back(preset.name);
    return "training.precision, cluster.gpu: precision " + name +
           " runs FP8 GEMMs, and cluster.gpu " + gpu.name +
           " has no FP8 tensor cores (FP8 needs Ada or Hopper: " +
           joinList(fp8) + "; a custom gpu gives fp8_tflops); use precision " +
           twin;
  }
  if (job.training.method != plan::Method::Full) {
    const std::string method = plan::toString(job.training.method);
    return "training.precision, training.method: precision " + name +
           " is for full fine-tuning: swift-run's " + method +
           " adapters run bf16 GEMMs; use precision " + twin + " with method " +
           method;
  }
  if (job.backend != plan::Backend::SwiftRun) {
    const std::string backend = plan::toString(job.backend);
    return "training.precision, backend: precision " + name +
           " runs in swift-run only: backend " + backend +
           (job.backend == plan::Backend::Torchtitan ||
                    job.backend == plan::Backend::Megatron
                ? " has FP8 recipes swift does not price yet"
                : " trains with bf16 GEMMs") +
           (job.backend == plan::Backend::DeepSpeed
                ? ", and DeepSpeed and ms-swift artifacts are not emitted for "
                  "FP8"
                : "") +
           "; use backend swift-run, or precision " + twin + " on " + backend;
  }
  return "";
}

Diagnostic diagnoseJob(const JobSpec &job, const std::string &error) {
  // The leading "FIELD[, FIELD]...: ", each field a key of the job.
  std::vector<std::string> fields;
  size_t colon = error.find(": ");
  std::stringstream list(error.substr(0, colon));
  for (std::string field; colon != std::string::npos &&
                          std::getline(list >> std::ws, field, ',');) {
    size_t dot = field.rfind('.');
    std::string parent = dot == std::string::npos ? "" : field.substr(0, dot);
    const std::vector<std::string> *keys = allowedKeys(parent);
    if (!keys || !std::count(keys->begin(), keys->end(), field.substr(dot + 1)))
      return Diagnostic{job.path, 0, 0, "", error};
    fields.push_back(field);
  }
  if (fields.empty())
    return Diagnostic{job.path, 0, 0, "", error};
  auto origin = [&](const std::string &field) {
    auto it = job.origins.find(field);
    return it == job.origins.end() ? Diagnostic{job.path} : it->second;
  };
  Diagnostic d = origin(fields[0]);
  d.field = fields[0];
  d.message = error.substr(colon + 2);
  // The others, where they were set when that is not where the first was:
  // a --set against the file, or the file's value against a --set.
  for (size_t i = 1; i < fields.size(); ++i) {
    Diagnostic other = origin(fields[i]);
    if (!job.origins.count(fields[i]) || other.file == d.file)
      continue;
    bool set = other.file.rfind(kSetPrefix, 0) == 0;
    d.message += "; " + fields[i] + (set ? " set by " : " set at ") +
                 other.location();
  }
  return d;
}

std::optional<ModelSpec> loadHFConfig(const std::string &path,
                                      Diagnostic &error) {
  try {
    return readHFConfigFile(path);
  } catch (const JobError &e) {
    error = e.diag;
    return std::nullopt;
  }
}

std::optional<JobSpec> loadJob(const std::string &path,
                               const std::vector<std::string> &overrides,
                               Diagnostic &error) {
  try {
    YAML::Node root =
        parseInput(readInput(path, "a job file (YAML)"), path, "YAML syntax error");
    if (root.IsNull())
      root = YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap())
      throw JobError{{path, 1, 1, "",
                      "expected a mapping with model, training and cluster"}};

    std::map<std::string, std::string> overridden;
    for (const std::string &text : overrides)
      applyOverride(root, text, overridden);

    Reader r(path, overridden);
    r.checkKeys(root, "", *allowedKeys(""));
    JobSpec job;
    job.path = path;
    job.model = readModel(r, root["model"]);
    job.training = readTraining(r, root);
    job.cluster = readCluster(r, root);
    if (root["backend"])
      job.backend = r.oneOf<plan::Backend>(root["backend"], "backend");
    job.strategy = readStrategy(r, root, job.model, job.training, job.cluster);
    job.origins = origins(r, root);
    if (std::string why = unsupportedPrecision(job); !why.empty())
      throw JobError{diagnoseJob(job, why)};
    job.warnings = unmodeledWarnings(job);
    return job;
  } catch (const JobError &e) {
    error = e.diag;
  } catch (const YAML::Exception &e) {
    // A yaml-cpp error this reader did not anticipate: still one line.
    error = {path, e.mark.line + 1, e.mark.column + 1, "", e.msg};
  } catch (const std::exception &e) {
    error = {path, 0, 0, "", e.what()};
  }
  return std::nullopt;
}

} // namespace swift::job
