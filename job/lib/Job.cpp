//===- Job.cpp - reading and validating job files -------------------------===//
//
// Errors are thrown as JobError inside this file (yaml-cpp throws too) and
// turned into one Diagnostic at the API boundary; nothing escapes.
//
//===----------------------------------------------------------------------===//

#include "swift/Job/Job.h"
#include "swift/Job/Presets.h"
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

const std::vector<std::string> &profileKeys() {
  static const std::vector<std::string> v = {
      "matmul_tflops",       "attention_tflops",    "elementwise_gbps",
      "host_link_gbps",      "intra_node_bus_gbps", "inter_node_bus_gbps",
      "collective_latency_us", "cpu_adam_ns_per_param"};
  return v;
}

namespace {

//===----------------------------------------------------------------------===//
// The schema: which keys each mapping may hold.
//===----------------------------------------------------------------------===//

std::string join(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}

// HF config.json fields the model reads.
const std::vector<std::string> kModelKeys = {
    "model_type",          "hidden_size",        "intermediate_size",
    "num_hidden_layers",   "num_attention_heads", "num_key_value_heads",
    "head_dim",            "vocab_size",          "tie_word_embeddings",
    "attention_bias",      "mlp_bias",            "rms_norm_eps",
    "rope_theta",          "rope_scaling",       "rope_parameters",
    "name"};

// config.json fields that do not change memory or time; an inline model may
// carry them (pasted from a real config) without being a typo.
const std::vector<std::string> kIgnoredHFKeys = {
    "architectures", "torch_dtype", "dtype", "bos_token_id", "eos_token_id",
    "pad_token_id", "hidden_act", "initializer_range", "use_cache",
    "transformers_version",
    "max_position_embeddings", "sliding_window", "use_sliding_window",
    "max_window_layers", "attention_dropout", "pretraining_tp",
    "layer_types", "_name_or_path"};

/// Each mapping of the job and the keys it may hold ("" is the top level).
const std::map<std::string, std::vector<std::string>> &schema() {
  static const std::map<std::string, std::vector<std::string>> sections = {
      {"", {"model", "training", "cluster", "backend", "strategy"}},
      {"training",
       {"sequence_length", "global_batch_size", "micro_batch_size",
        "precision", "optimizer", "lr_schedule", "max_grad_norm", "seed",
        "method", "lora", "packing"}},
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
        "prefetch_depth"}},
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
  consider("model", kModelKeys);
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

/// `text` read from `file` (a job, config.json or profile) as a tree without
/// duplicate keys; `syntax` names the language in errors ("YAML syntax
/// error", "not valid JSON").
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

/// HF's rope_scaling / rope_parameters mapping; types swift-run does not
/// compute are refused rather than trained with the wrong positions.
void readRopeScaling(const Reader &r, const YAML::Node &map,
                     const std::string &path, ModelSpec &m) {
  if (!map.IsMap())
    r.fail(map, path, "expected a mapping (HF rope_scaling)");
  auto field = [&](const char *key) { return join(path, key); };
  if (YAML::Node t = map["rope_theta"]; t && !t.IsNull())
    m.ropeTheta = r.real(t, field("rope_theta"), false, 1e12);
  YAML::Node type = map["rope_type"] ? map["rope_type"] : map["type"];
  if (!type)
    r.fail(map, field("rope_type"), "missing");
  std::string name = r.scalar(type, field("rope_type"));
  std::optional<plan::RopeType> kind = plan::parseEnum<plan::RopeType>(name);
  if (!kind)
    r.fail(type, field("rope_type"),
           "rope type '" + name + "' is not supported; supported: " +
               joinList(plan::enumSpellings<plan::RopeType>()) +
               " (swift would train it with wrong positions)");
  plan::RopeScaling &rs = m.ropeScaling;
  rs = plan::RopeScaling{};
  rs.type = *kind;
  if (rs.type == plan::RopeType::Default)
    return;
  auto required = [&](const char *key) {
    YAML::Node v = map[key];
    if (!v || v.IsNull())
      r.fail(map, field(key), "missing; rope type " + name + " needs it");
    return v;
  };
  rs.factor = r.real(required("factor"), field("factor"));
  if (rs.type == plan::RopeType::Llama3) {
    rs.lowFreqFactor = r.real(required("low_freq_factor"), field("low_freq_factor"));
    rs.highFreqFactor = r.real(required("high_freq_factor"), field("high_freq_factor"));
    if (!(rs.highFreqFactor > rs.lowFreqFactor))
      r.fail(map["high_freq_factor"], field("high_freq_factor"),
             "must be greater than low_freq_factor");
    rs.originalMaxPositionEmbeddings =
        r.integer(required("original_max_position_embeddings"),
                  field("original_max_position_embeddings"), 1, kBig);
  }
}

/// HF fields that change the model but that swift does not implement:
/// refused where swift-run would train another function (hidden_act); kept
/// with where they were read where they only matter past a length (the
/// positions the model was trained for, a sliding window), for loadJob's
/// warnings.
void readUnmodeledFields(const Reader &r, const YAML::Node &map,
                         const std::string &path, ModelSpec &m) {
  auto field = [&](const char *key) { return join(path, key); };
  auto given = [&](const char *key) {
    YAML::Node n = map[key];
    return n && !n.IsNull() ? n : YAML::Node(YAML::NodeType::Undefined);
  };
  if (YAML::Node act = given("hidden_act")) {
    std::string name = r.scalar(act, field("hidden_act"));
    if (name != "silu" && name != "swish")
      r.fail(act, field("hidden_act"),
             "activation '" + name +
                 "' is not supported; swift-run's MLP is SwiGLU with silu");
  }
  auto located = [&](const char *key) -> std::optional<UnmodeledValue> {
    YAML::Node n = given(key);
    if (!n)
      return std::nullopt;
    UnmodeledValue v{r.integer(n, field(key), 1, kBig), r.locate(n, field(key))};
    v.where.field = field(key);
    return v;
  };
  m.maxPositionEmbeddings = located("max_position_embeddings");
  // Where HF applies sliding_window: mistral on every layer; qwen2 and
  // qwen3 only with use_sliding_window, on the layers layer_types marks
  // (transformers >= 4.53) or else from max_window_layers on; llama never.
  bool sliding = m.modelType == "mistral";
  if (m.modelType == "qwen2" || m.modelType == "qwen3") {
    YAML::Node use = given("use_sliding_window");
    sliding = use && r.boolean(use, field("use_sliding_window"));
    if (YAML::Node types = given("layer_types"); sliding && types) {
      sliding = false;
      for (const YAML::Node &type : types)
        sliding |= type.IsScalar() && type.Scalar() == "sliding_attention";
    } else if (YAML::Node from = given("max_window_layers"); sliding && from) {
      sliding = r.integer(from, field("max_window_layers"), 0, kBig) <
                m.numHiddenLayers;
    }
  }
  if (sliding)
    m.slidingWindow = located("sliding_window");
}

void readModelFields(const Reader &r, const YAML::Node &map,
                     const std::string &path, bool strict, ModelSpec &m) {
  if (strict)
    r.checkKeys(map, path, kModelKeys, kIgnoredHFKeys);
  auto field = [&](const char *key) { return join(path, key); };
  auto required = [&](const char *key, int64_t max) {
    YAML::Node node = map[key];
    if (!node)
      r.fail(map, field(key), "missing; an HF model config needs it");
    return r.integer(node, field(key), 1, max);
  };

  m.modelType = "llama";
  if (YAML::Node t = map["model_type"]) {
    static const std::vector<std::string> supported = {"llama", "qwen2",
                                                       "mistral", "qwen3"};
    std::string type = r.scalar(t, field("model_type"));
    if (!std::count(supported.begin(), supported.end(), type))
      r.fail(t, field("model_type"),
             "unsupported model_type '" + type +
                 "'; supported: " + joinList(supported) +
                 " (decoder-only Llama-family models)");
    m.modelType = type;
  } else if (!strict) {
    r.fail(map, field("model_type"),
           "missing; expected one of llama, qwen2, mistral, qwen3");
  }
  m.hiddenSize = required("hidden_size", limits::kHiddenSize);
  m.intermediateSize = required("intermediate_size", limits::kIntermediateSize);
  m.numHiddenLayers = required("num_hidden_layers", limits::kLayers);
  m.numAttentionHeads = required("num_attention_heads", limits::kHeads);
  m.vocabSize = required("vocab_size", limits::kVocabSize);
  m.numKeyValueHeads = m.numAttentionHeads;
  if (YAML::Node kv = map["num_key_value_heads"]; kv && !kv.IsNull())
    m.numKeyValueHeads = r.integer(kv, field("num_key_value_heads"), 1, limits::kHeads);
  if (YAML::Node hd = map["head_dim"]; hd && !hd.IsNull()) {
    m.headDim = r.integer(hd, field("head_dim"), 1, limits::kHeadDim);
  } else {
    if (m.hiddenSize % m.numAttentionHeads != 0)
      r.fail(map["num_attention_heads"], field("num_attention_heads"),
             std::to_string(m.numAttentionHeads) +
                 " heads do not divide hidden_size " +
                 std::to_string(m.hiddenSize) + "; fix the sizes or set head_dim");
    m.headDim = m.hiddenSize / m.numAttentionHeads;
  }
  if (m.numAttentionHeads % m.numKeyValueHeads != 0)
    r.fail(map["num_key_value_heads"], field("num_key_value_heads"),
           std::to_string(m.numKeyValueHeads) +
               " key/value heads do not divide num_attention_heads " +
               std::to_string(m.numAttentionHeads) +
               " (grouped-query attention shares each kv head by a whole "
               "number of query heads)");
  if (m.headDim % 2 != 0)
    r.fail(map, field("head_dim"),
           "head_dim " + std::to_string(m.headDim) +
               " is odd; rotary embeddings need an even head_dim");
  if (YAML::Node tie = map["tie_word_embeddings"]; tie && !tie.IsNull())
    m.tieWordEmbeddings = r.boolean(tie, field("tie_word_embeddings"));
  bool attentionBias = false;
  if (YAML::Node b = map["attention_bias"]; b && !b.IsNull())
    attentionBias = r.boolean(b, field("attention_bias"));
  if (YAML::Node b = map["mlp_bias"]; b && !b.IsNull())
    m.mlpBias = r.boolean(b, field("mlp_bias"));
  if (YAML::Node e = map["rms_norm_eps"]; e && !e.IsNull())
    m.rmsNormEps = r.real(e, field("rms_norm_eps"), false, 1);
  if (YAML::Node t = map["rope_theta"]; t && !t.IsNull())
    m.ropeTheta = r.real(t, field("rope_theta"), false, 1e12);
  // transformers < 5 writes rope_scaling (null: none); 5 writes
  // rope_parameters, which also carries rope_theta.
  for (const char *key : {"rope_scaling", "rope_parameters"})
    if (YAML::Node rs = map[key]; rs && !rs.IsNull())
      readRopeScaling(r, rs, field(key), m);
  readUnmodeledFields(r, map, path, m);

  // Bias and norm layout per architecture, as HF transformers builds it.
  if (m.modelType == "qwen2") {
    m.qkvBias = true; // Qwen2Attention: q/k/v with bias, o without.
  } else if (m.modelType == "mistral") {
    m.mlpBias = false;
  } else {
    m.qkvBias = m.oBias = attentionBias;
    m.qkNorm = m.modelType == "qwen3";
  }
}

ModelSpec fromPreset(const ModelPreset &p) {
  ModelSpec m;
  m.name = p.name;
  m.modelType = p.modelType;
  m.hiddenSize = p.hiddenSize;
  m.intermediateSize = p.intermediateSize;
  m.numHiddenLayers = p.numHiddenLayers;
  m.numAttentionHeads = p.numAttentionHeads;
  m.numKeyValueHeads = p.numKeyValueHeads;
  m.headDim = p.headDim ? p.headDim : p.hiddenSize / p.numAttentionHeads;
  m.vocabSize = p.vocabSize;
  m.tieWordEmbeddings = p.tieWordEmbeddings;
  m.qkvBias = std::string(p.modelType) == "qwen2";
  m.qkNorm = std::string(p.modelType) == "qwen3";
  m.rmsNormEps = p.rmsNormEps;
  m.ropeTheta = p.ropeTheta;
  m.ropeScaling = p.ropeScaling;
  m.source = hubId(p);
  return m;
}

ModelSpec readHFConfigFile(const std::string &path) {
  // JSON is YAML; yaml-cpp keeps line/column marks for errors.
  YAML::Node root = parseInput(
      readInput(path, "an HF config.json (a JSON object)"), path,
      "not valid JSON");
  Reader r(path, {});
  if (!root.IsMap())
    r.fail(root, "", "expected a JSON object (an HF config.json)");
  ModelSpec m;
  readModelFields(r, root, "", /*strict=*/false, m);
  m.name = path;
  return m;
}

ModelSpec readModel(const Reader &r, const YAML::Node &node) {
  if (!node || node.IsNull())
    r.fail(node, "model",
           "missing; name a preset (e.g. llama3.1-8b), a path to an HF "
           "config.json, or a mapping of config.json fields");
  if (node.IsMap()) {
    ModelSpec m;
    readModelFields(r, node, "model", /*strict=*/true, m);
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
  std::vector<std::string> allowed = profileKeys();
  pr.checkKeys(profile, "", allowed, {"gpu", "source", "date"},
               /*jobKeys=*/false);
  if (YAML::Node g = profile["gpu"]; g && pr.scalar(g, "gpu") != gpu.name)
    pr.fail(g, "gpu",
            "profile measured on '" + g.Scalar() + "' but the cluster's gpu is '" +
                gpu.name + "'");
  for (const std::string &key : allowed)
    if (YAML::Node v = profile[key])
      // Rates (TFLOPS, GB/s) are hardware quantities; times (latency_us,
      // ns_per_param) only need to be finite and at most 1e6.
      measured.rates[key] = key == "collective_latency_us" ||
                                    key == "cpu_adam_ns_per_param"
                                ? pr.real(v, key)
                                : pr.hardware(v, key);
  measured.path = path.string();
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

StrategySpec readStrategy(const Reader &r, const YAML::Node &root,
                          const ModelSpec &model) {
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
        path == "model" ? &kModelKeys : allowedKeys(path);
    bool ignored = path == "model" && std::count(kIgnoredHFKeys.begin(),
                                                 kIgnoredHFKeys.end(), part);
    if (allowed && !ignored &&
        !std::count(allowed->begin(), allowed->end(), part))
      fail(join(path, part), "unknown key '" + part + "'" +
                                 unknownKeyHint(path, part, *allowed));
    if (i + 1 < parts.size()) {
      YAML::Node child = node[part];
      if (child && child.IsScalar() && path.empty() && part == "model") {
        // A preset: expand it so single fields can be changed.
        if (const ModelPreset *p = findModelPreset(child.Scalar())) {
          ModelSpec m = fromPreset(*p);
          YAML::Node map(YAML::NodeType::Map);
          map["name"] = m.name;
          map["model_type"] = m.modelType;
          map["hidden_size"] = m.hiddenSize;
          map["intermediate_size"] = m.intermediateSize;
          map["num_hidden_layers"] = m.numHiddenLayers;
          map["num_attention_heads"] = m.numAttentionHeads;
          map["num_key_value_heads"] = m.numKeyValueHeads;
          // Only where the model's config.json gives it: otherwise it
          // follows hidden_size / num_attention_heads, as in HF, when
          // either is set.
          if (p->headDim)
            map["head_dim"] = p->headDim;
          map["vocab_size"] = m.vocabSize;
          map["tie_word_embeddings"] = m.tieWordEmbeddings;
          map["rms_norm_eps"] = m.rmsNormEps;
          map["rope_theta"] = m.ropeTheta;
          if (const plan::RopeScaling &rs = m.ropeScaling;
              rs.type != plan::RopeType::Default) {
            YAML::Node scaling(YAML::NodeType::Map);
            scaling["rope_type"] = plan::toString(rs.type);
            scaling["factor"] = rs.factor;
            scaling["low_freq_factor"] = rs.lowFreqFactor;
            scaling["high_freq_factor"] = rs.highFreqFactor;
            scaling["original_max_position_embeddings"] =
                rs.originalMaxPositionEmbeddings;
            map["rope_scaling"] = scaling;
          }
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
           " trains with bf16 GEMMs" +
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
    job.strategy = readStrategy(r, root, job.model);
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
