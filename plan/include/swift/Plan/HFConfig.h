//===- HFConfig.h - reading an HF config.json: the one set of rules -------===//
//
// What swift makes of a Hugging Face config.json (transformers' LlamaConfig,
// Qwen2Config, Qwen3Config, MistralConfig): which fields it reads, their
// types, ranges and defaults, the bias and norm layout each model_type
// builds, head_dim, rope_scaling / rope_parameters, and the values it does
// not model (hidden_act, max_position_embeddings, sliding windows). Written
// once, read by:
//  - the job reader (swift-plan): a job's `model:` naming a config.json or
//    an HF model directory, and an inline mapping of config.json fields
//    (YAML, through an HFFields of its own, so that its errors keep the job
//    file's line and column or the `--set` that set them);
//  - swift-run: a --weights directory's config.json, compared with the
//    plan's model (hfDifferences()).
// Plain C++ with nlohmann-json; errors are UserErrors (JsonErrors for JSON).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Json.h"
#include "swift/Plan/Plan.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace swift::plan {

/// The model_types swift reads: decoder-only Llama-family models.
const std::vector<std::string> &hfModelTypes();

/// The config.json fields that make the model (those readHFConfig() reads
/// into ModelConfig and HFConfig::modelType / mlpBias).
const std::vector<std::string> &hfModelFields();

/// config.json fields that change neither memory nor time, or that swift
/// does not model but checks (hidden_act) or warns about
/// (max_position_embeddings, sliding windows): a job's inline model may
/// carry them, pasted from a real config.
const std::vector<std::string> &hfOtherFields();

/// A config.json value that changes the model but that swift does not
/// model, with the field it was read from.
struct HFUnmodeled {
  int64_t value = 0;
  std::string field; // e.g. "max_position_embeddings"
};

/// What a config.json says, as swift reads it.
struct HFConfig {
  std::string modelType = "llama"; // one of hfModelTypes()
  /// The model: plan.json's "model" section (no "name").
  ModelConfig model;
  /// Biases on gate/up/down (HF llama's mlp_bias): plan.json has no field
  /// for them, swift-run's MLP has none.
  bool mlpBias = false;
  /// HF's max_position_embeddings, and the sliding attention window where
  /// the HF model applies one (mistral; qwen2 and qwen3 with
  /// use_sliding_window, on a layer layer_types or max_window_layers mark):
  /// swift attends over the whole sequence at any length.
  std::optional<HFUnmodeled> maxPositionEmbeddings;
  std::optional<HFUnmodeled> slidingWindow;
  /// Where rope_theta and the rotary scaling were read:
  /// "rope_parameters.rope_theta" (transformers 5) or "rope_theta";
  /// "rope_scaling", "rope_parameters" or "" (neither given).
  std::string ropeThetaField = "rope_theta";
  std::string ropeScalingField;
};

/// The fields of one config.json as a reader holds them: a JSON document
/// (readHFConfig(json)), or a job's YAML mapping. Fields are paths from the
/// config's root, keys joined by '.' ("rope_scaling.factor"). Each typed
/// read refuses a value of the wrong type or range with the source's own
/// message and location (UserError).
class HFFields {
public:
  virtual ~HFFields() = default;
  /// Present and not null.
  virtual bool given(const std::string &field) const = 0;
  /// A mapping (JSON object).
  virtual bool isMapping(const std::string &field) const = 0;
  virtual int64_t integer(const std::string &field, int64_t lo,
                          int64_t hi) const = 0;
  /// A finite number in (0, max].
  virtual double positive(const std::string &field, double max) const = 0;
  virtual bool boolean(const std::string &field) const = 0;
  virtual std::string string(const std::string &field) const = 0;
  /// The string items of the list `field`; none when it is not a list.
  virtual std::vector<std::string> strings(const std::string &field) const = 0;
  /// Refuses the config at `field`: located there, or where it would be
  /// (the mapping that lacks it).
  [[noreturn]] virtual void fail(const std::string &field,
                                 const std::string &why) const = 0;
};

/// The rules. `modelTypeRequired`: a config.json must say its model_type;
/// a job's inline mapping defaults to llama.
HFConfig readHFConfig(const HFFields &fields, bool modelTypeRequired);

/// A config.json document `j` read from `file` (model_type required).
/// Errors are JsonErrors naming the field; with parseJson's `positions`
/// they carry its line and column.
HFConfig readHFConfig(const nlohmann::json &j, const std::string &file,
                      const JsonPositions *positions = nullptr);

/// The most a config.json may hold (a real one is a few KiB).
constexpr uint64_t kMaxHFConfigBytes = uint64_t(64) << 20;

/// What readRegularFile() says a config.json should be.
inline constexpr const char *kHFConfigExpected =
    "an HF config.json (a JSON object)";

/// readJsonFile + readHFConfig: errors are "PATH: FIELD: why".
HFConfig readHFConfigFile(const std::string &path);

/// A value of an HF config that differs from a plan's model.
struct HFDifference {
  std::string field;     // config.json's, e.g. "rope_parameters.factor"
  std::string there;     // its value in config.json, as text
  std::string planField; // plan.json's, e.g. "model.rope_scaling.factor"
  std::string plan;      // the plan's value, as text
};

/// Where `hf` and `plan` describe different models: every field that
/// changes what the model computes (sizes, heads, head_dim, tied
/// embeddings, rms_norm_eps, rope_theta and scaling, biases and q/k norms
/// as the model_type builds them, MLP biases), in that order. Numbers agree
/// within 1e-5 relative (a plan's text round trip of a double, or of the
/// float the IR kept), integers and flags exactly.
std::vector<HFDifference> hfDifferences(const HFConfig &hf,
                                        const ModelConfig &plan);

} // namespace swift::plan
