//===- AdapterConfig.cpp - a peft adapter_config.json against the plan ----===//
//
// Field by field as peft 0.21's LoraConfig reads it (its defaults: r 8,
// lora_alpha 8, bias "none", everything else off), and target_modules
// matched against the model's module names as peft's
// check_target_module_exists does.
//
//===----------------------------------------------------------------------===//

#include "swift/Runtime/io/AdapterConfig.h"

#include "swift/Plan/Json.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <tuple>
#include <vector>

namespace swift::rt {
namespace {

using nlohmann::json;
using plan::briefText;
using plan::JsonField;

/// A value that leaves its field at peft's default, or off: null, false,
/// {}, [], "" or "none".
bool unset(const json &v) {
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) ||
         ((v.is_object() || v.is_array()) && v.empty()) ||
         (v.is_string() && (v.get_ref<const std::string &>().empty() ||
                            v.get_ref<const std::string &>() == "none"));
}

/// Fields that change the adapters' math, allowed only unset, and why.
const std::map<std::string, std::string> &offOnly() {
  static const std::map<std::string, std::string> fields = {
      {"use_dora", "DoRA adapters (a magnitude vector per linear) are not "
                   "supported; swift-run trains plain LoRA"},
      {"use_rslora", "rsLoRA scales by lora_alpha / sqrt(r), swift-run's "
                     "LoRA by lora_alpha / r; not supported"},
      {"fan_in_fan_out",
       "the adapter is for linears stored (in, out), as GPT-2's Conv1D; "
       "swift-run's are (out, in) as nn.Linear, for which peft sets it "
       "false: make it false if the adapter was trained on this model"},
      {"bias", "the adapter trains biases too; swift-run trains only "
               "lora_A and lora_B (bias \"none\")"},
      {"lora_bias", "lora_B has a bias; swift-run's has none"},
      {"modules_to_save", "those modules train fully beside the adapters; "
                          "swift-run trains only the adapters"},
      {"trainable_token_indices", "trains embedding rows beside the "
                                  "adapters; not supported"},
      {"target_parameters", "adapts parameters (MoE experts); swift-run "
                            "adapts the linears of target_modules only"},
      {"layer_replication", "stacks repeated layers; swift-run's model has "
                            "the plan's layers"},
      {"use_qalora", "QA-LoRA pools the adapter's input; not supported"},
      {"alora_invocation_tokens", "Activated LoRA adapts only the tokens "
                                  "after these; swift-run adapts every token"},
      {"velora_config", "a LoRA variant swift-run does not implement"},
      {"monteclora_config", "a LoRA variant swift-run does not implement"},
      {"use_bdlora", "a LoRA variant swift-run does not implement"},
      {"arrow_config", "a LoRA variant swift-run does not implement"},
      {"kasa_config", "a LoRA variant swift-run does not implement"},
  };
  return fields;
}

/// Fields that do not change the adapters swift-run loads (bookkeeping,
/// training-only options, initialisation settings of methods refused by
/// init_lora_weights), whatever their value.
bool harmless(const std::string &key) {
  static const std::set<std::string> fields = {
      "base_model_name_or_path", "revision", "inference_mode", "auto_mapping",
      "peft_version", "lora_dropout", "megatron_config", "megatron_core",
      "loftq_config", "eva_config", "corda_config", "lora_ga_config",
      "qalora_group_size", "ensure_weight_tying", "runtime_config"};
  return fields.count(key) > 0;
}

/// A pattern peft evaluates with Python's re, compiled as an ECMAScript
/// std::regex (the same for what adapter configs hold: alternations,
/// classes, repetitions, (?:...)), matched in polynomial time (libstdc++'s
/// breadth-first executor: no backtracking blow-up). A pattern std::regex
/// does not read, or too large to evaluate safely, is refused.
std::regex pythonRegex(const JsonField &where, const std::string &pattern) {
  auto refuse = [&](const std::string &why) {
    where.fail(briefText(pattern, 60) + ": " + why +
               ": list the module names instead, e.g. [\"q_proj\", "
               "\"v_proj\"]");
  };
  if (pattern.size() > 1024)
    refuse("a regular expression of " + std::to_string(pattern.size()) +
           " characters is more than swift-run evaluates (1024)");
  int depth = 0, deepest = 0;
  bool escaped = false, inClass = false;
  for (char ch : pattern) {
    if (escaped) {
      escaped = false;
    } else if (ch == '\\') {
      escaped = true;
    } else if (inClass) {
      inClass = ch != ']';
    } else if (ch == '[') {
      inClass = true;
    } else if (ch == '(') {
      deepest = std::max(deepest, ++depth);
    } else if (ch == ')') {
      --depth;
    }
  }
  if (deepest > 16)
    refuse("groups nested deeper than swift-run evaluates (16)");
  auto flags = std::regex::ECMAScript;
#ifdef __GLIBCXX__
  flags |= std::regex_constants::__polynomial;
#endif
  try {
    return std::regex(pattern, flags);
  } catch (const std::regex_error &e) {
    refuse(std::string("not a regular expression swift-run can evaluate (") +
           e.what() + ")");
  }
  return {};
}

/// The modules a LoRA config may target in a decoder of `numLayers`
/// layers, by their names in HF's model: each layer's seven linears, then
/// the embedding and the head.
struct Module {
  std::string key;  // "model.layers.3.self_attn.q_proj"
  int64_t layer;    // -1: not in a layer
  std::string name; // "q_proj", "embed_tokens", "lm_head"
};

std::vector<Module> loraModules(int64_t numLayers) {
  std::vector<Module> out;
  for (int64_t l = 0; l < numLayers; ++l)
    for (const std::string &name : plan::loraTargetNames()) {
      const bool attention = name == "q_proj" || name == "k_proj" ||
                             name == "v_proj" || name == "o_proj";
      out.push_back({"model.layers." + std::to_string(l) +
                         (attention ? ".self_attn." : ".mlp.") + name,
                     l, name});
    }
  out.push_back({"model.embed_tokens", -1, "embed_tokens"});
  out.push_back({"lm_head", -1, "lm_head"});
  return out;
}

bool endsWithComponent(const std::string &key, const std::string &suffix) {
  return key.size() > suffix.size() &&
         key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         key[key.size() - suffix.size() - 1] == '.';
}

/// "q_proj, k_proj" (at most `max` names, then "...").
std::string listText(const std::vector<std::string> &names, size_t max = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > max)
    out += ", ...";
  return out.empty() ? "none" : out;
}

/// target_modules, exclude_modules, layers_to_transform and layers_pattern
/// as peft's check_target_module_exists reads them.
class Selection {
public:
  explicit Selection(const JsonField &config) {
    // exclude_modules: a regex (fullmatch) or names (equal or a suffix).
    if (config.has("exclude_modules") && !unset(config.j["exclude_modules"])) {
      JsonField e = config.at("exclude_modules");
      if (e.j.is_string()) {
        excludeRegex_ = pythonRegex(e, e.string());
      } else {
        e.array();
        for (size_t i = 0; i < e.size(); ++i)
          excluded_.push_back(e.index(i).string());
      }
    }
    JsonField t = config.at("target_modules");
    if (t.j.is_null())
      t.fail("null (peft's default for the architecture): list the modules "
             "the adapter adapts");
    const bool layered = config.has("layers_to_transform") &&
                         !unset(config.j["layers_to_transform"]);
    if (t.j.is_string()) {
      const std::string s = t.string();
      std::string lower = s;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char ch) { return std::tolower(ch); });
      for (const char *key : {"layers_to_transform", "layers_pattern"})
        if (config.has(key) && !config.j[key].is_null())
          config.at(key).fail(
              "given with a target_modules string, which peft refuses");
      if (lower == "all-linear")
        allLinear_ = true;
      else
        regex_ = pythonRegex(t, s);
    } else {
      t.array();
      for (size_t i = 0; i < t.size(); ++i)
        names_.push_back(t.index(i).string());
    }
    if (layered) {
      JsonField l = config.at("layers_to_transform");
      if (l.j.is_array()) {
        for (size_t i = 0; i < l.size(); ++i)
          layers_.insert(l.index(i).integer(0, std::numeric_limits<int64_t>::max()));
      } else {
        layers_.insert(l.integer(0, std::numeric_limits<int64_t>::max()));
      }
      usingLayers_ = true;
      // layers_pattern: the name of the layer list in a module's name;
      // unset: the first numbered name after two components.
      std::vector<std::string> patterns;
      if (config.has("layers_pattern") && !unset(config.j["layers_pattern"])) {
        JsonField p = config.at("layers_pattern");
        if (p.j.is_string()) {
          patterns.push_back(p.string());
        } else {
          p.array();
          for (size_t i = 0; i < p.size(); ++i)
            patterns.push_back(p.index(i).string());
        }
        for (const std::string &pattern : patterns)
          layerRegexes_.push_back(
              pythonRegex(p, R"(.*?\.)" + pattern + R"(\.(\d+)\.)"));
      } else {
        layerRegexes_.push_back(std::regex(R"(.*?\.[^.]*\.(\d+)\.)"));
      }
    }
  }

  bool selects(const std::string &key) const {
    if (excludeRegex_ && std::regex_match(key, *excludeRegex_))
      return false;
    for (const std::string &e : excluded_)
      if (key == e || endsWithComponent(key, e))
        return false;
    if (allLinear_) // peft: every nn.Linear but the output embedding
      return key != "lm_head" && key != "model.embed_tokens";
    if (regex_)
      return std::regex_match(key, *regex_);
    if (std::find(names_.begin(), names_.end(), key) != names_.end())
      return true;
    bool found = false;
    for (const std::string &n : names_)
      found |= endsWithComponent(key, n);
    if (!found || !usingLayers_)
      return found;
    for (const std::regex &r : layerRegexes_) {
      std::smatch m;
      if (std::regex_search(key, m, r,
                            std::regex_constants::match_continuous)) {
        const std::string digits = m[1].str();
        if (digits.size() > 18)
          return false;
        return layers_.count(std::stoll(digits)) > 0;
      }
    }
    return false;
  }

private:
  bool allLinear_ = false;
  std::optional<std::regex> regex_, excludeRegex_;
  std::vector<std::string> names_, excluded_;
  bool usingLayers_ = false;
  std::set<int64_t> layers_;
  std::vector<std::regex> layerRegexes_;
};

} // namespace

void checkAdapterConfig(const json &config, const std::string &path,
                        const plan::LoraConfig &lora, int64_t numLayers) {
  const JsonField c{config, "", path};
  c.object();
  {
    const std::string type = c.at("peft_type").string();
    if (type != "LORA")
      c.at("peft_type").fail("\"" + briefText(type, 40) +
                             "\", not LORA: swift-run loads LoRA adapters");
  }
  const int64_t r = c.at("r").integer(1, std::numeric_limits<int64_t>::max());
  if (r != lora.rank)
    c.at("r").fail(std::to_string(r) + ", but the plan's lora rank is " +
                   std::to_string(lora.rank) +
                   " (plan the job with the adapter's r)");
  const double alpha = c.at("lora_alpha").number(-1e300, 1e300);
  if (std::fabs(alpha - lora.alpha) > 1e-9 * std::max(1.0, std::fabs(lora.alpha)))
    c.at("lora_alpha").fail(c.at("lora_alpha").brief(40) +
                            ", but the plan's lora alpha is " +
                            plan::JsonField{json(lora.alpha), "", path}.brief(40) +
                            " (plan the job with the adapter's lora_alpha)");
  for (auto it = config.begin(); it != config.end(); ++it) {
    const std::string &key = it.key();
    const JsonField f{it.value(), briefText(key, 40), path};
    static const std::set<std::string> checkedBelow = {
        "peft_type", "r", "lora_alpha", "target_modules", "exclude_modules",
        "layers_to_transform", "layers_pattern", "rank_pattern",
        "alpha_pattern", "init_lora_weights", "task_type"};
    if (checkedBelow.count(key) || harmless(key) || unset(it.value()))
      continue;
    if (auto why = offOnly().find(key); why != offOnly().end())
      f.fail(f.brief(40) + ": " + why->second);
    f.fail("a field swift-run does not know, set to " + f.brief(40) +
           ": it may change the adapter; remove it if this is a plain LoRA "
           "adapter");
  }
  if (c.has("task_type") && !c.j["task_type"].is_null()) {
    const std::string task = c.at("task_type").string();
    if (task != "CAUSAL_LM")
      c.at("task_type").fail("\"" + briefText(task, 40) +
                             "\": an adapter for another head (peft trains "
                             "it beside the adapters); swift-run trains "
                             "causal LMs (CAUSAL_LM)");
  }
  if (c.has("init_lora_weights")) {
    const JsonField init = c.at("init_lora_weights");
    bool plain = init.j.is_null() || init.j.is_boolean();
    if (init.j.is_string())
      for (const char *ok : {"gaussian", "orthogonal", "eva"})
        plain |= init.j.get_ref<const std::string &>() == ok;
    if (!plain)
      init.fail(init.brief(40) +
                ": initialisations other than true, false, \"gaussian\", "
                "\"orthogonal\" and \"eva\" change the base weights (pissa, "
                "olora, corda, loftq, lora_ga) or freeze B (mica): convert "
                "the adapter to a plain LoRA one with peft first");
  }
  for (const auto &[key, value, what] :
       {std::tuple<const char *, double, const char *>{"rank_pattern", double(r), "r"},
        {"alpha_pattern", alpha, "lora_alpha"}}) {
    const std::string given = c.at(what).brief(40);
    if (!c.has(key) || unset(c.j[key]))
      continue;
    const JsonField p = c.at(key);
    p.object();
    for (auto it = p.j.begin(); it != p.j.end(); ++it) {
      const JsonField e{it.value(), std::string(key) + "[\"" +
                                        briefText(it.key(), 40) + "\"]",
                        path};
      if (e.number(-1e300, 1e300) != value)
        e.fail(e.brief(40) + ", but " + what + " is " + given +
               ": swift-run gives every adapted linear the plan's one " +
               what);
    }
  }

  // The modules the adapter adapts: exactly the plan's targets, in every
  // layer.
  const Selection selection(c);
  std::map<std::string, int64_t> layersOf; // linear -> layers it is adapted in
  std::vector<std::string> outside;        // modules outside the decoder
  for (const Module &m : loraModules(numLayers))
    if (selection.selects(m.key)) {
      if (m.layer < 0)
        outside.push_back(m.name);
      else
        ++layersOf[m.name];
    }
  const JsonField targets = c.at("target_modules");
  if (!outside.empty())
    targets.fail(targets.brief(60) + " adapts " + listText(outside) +
                 "; swift-run adapts the decoder's linears only");
  std::vector<std::string> adapted;
  for (const std::string &name : plan::loraTargetNames()) {
    auto it = layersOf.find(name);
    if (it == layersOf.end())
      continue;
    if (it->second != numLayers)
      targets.fail(targets.brief(60) + " adapts " + name + " in " +
                   std::to_string(it->second) + " of the " +
                   std::to_string(numLayers) +
                   " layers (layers_to_transform, exclude_modules); "
                   "swift-run adapts every layer");
    adapted.push_back(name);
  }
  std::vector<std::string> planned;
  for (const std::string &name : plan::loraTargetNames())
    if (lora.adapts(name))
      planned.push_back(name);
  if (adapted != planned)
    targets.fail(targets.brief(60) + " adapts " + listText(adapted) +
                 ", but the plan's lora targets are " + listText(planned) +
                 " (plan the job with the adapter's targets)");
}

} // namespace swift::rt
