//===- Overrides.h - plan.json fields a run may change (--set) -*- C++ -*-===//
//
// swift-run PLAN --set KEY=VALUE changes a field of the plan that affects
// neither memory nor time (the optimizer's settings, the lr schedule,
// clipping, the seed, which tokens train, LoRA's alpha) without planning
// again. A field that does (batch, sequence, strategy, precision, the
// model, LoRA's rank, targets and dropout: dropout keeps a mask's input) is
// refused, naming the swift-plan command that plans it. runTimeKeys() is
// the one list.
//
// Plain C++17, like the rest of plan/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace swift::plan {

/// The plan.json paths --set may change at run time.
const std::vector<std::string> &runTimeKeys();

/// Applies "KEY=VALUE" to `plan` (a plan.json document read from `file`):
/// VALUE is JSON where it parses as JSON (a number, [0.9, 0.95], true,
/// null: removes the field), otherwise a string (cosine). UserError
/// "command line: --set ...: why" for a malformed assignment, a key not in
/// runTimeKeys() (a plan field that changes memory or time names the
/// swift-plan command; any other the keys that may be set). The result is
/// validated by the caller (parsePlanText).
void applyRunOverride(nlohmann::json &plan, const std::string &assignment,
                      const std::string &file);

} // namespace swift::plan
