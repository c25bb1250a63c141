//===- AdapterConfig.h - a peft adapter_config.json against the plan -----===//
//
// `swift-run --adapter DIR` starts a LoRA run from a peft adapter. Its
// adapter_config.json must describe the adapters the plan trains: a field
// that would change the math and is not the plan's is refused, never
// ignored (docs/runtime.md, "LoRA"). Plain C++ (the torch-free
// SwiftFormats library, fuzzed by test/Fuzz/FuzzAdapterConfig.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Plan.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace swift::rt {

/// Checks `config`, the adapter_config.json at `path` (read with
/// plan::readJsonFile), against the plan's `lora` on a model of
/// `numLayers` decoder layers; a UserError of one line naming `path`, the
/// field, its value and what to do otherwise:
///  - peft_type LORA; r and lora_alpha the plan's; task_type CAUSAL_LM;
///  - target_modules (a list, "all-linear" or a regular expression, less
///    exclude_modules, restricted by layers_to_transform/layers_pattern as
///    peft matches them) selecting exactly the plan's targets in every
///    layer;
///  - rank_pattern / alpha_pattern giving no module another r / alpha;
///  - init_lora_weights that leaves the base as it was (true, false,
///    "gaussian", "orthogonal", "eva");
///  - use_dora, use_rslora, fan_in_fan_out, bias, lora_bias,
///    modules_to_save, trainable_token_indices, target_parameters,
///    layer_replication, use_qalora, alora_invocation_tokens and the
///    variants' configs unset (null, false, {}, [], "none");
///  - any other field: one known not to change the adapters (lora_dropout,
///    base_model_name_or_path, ...) or unset.
void checkAdapterConfig(const nlohmann::json &config, const std::string &path,
                        const plan::LoraConfig &lora, int64_t numLayers);

} // namespace swift::rt
