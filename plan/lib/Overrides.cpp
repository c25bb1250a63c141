//===- Overrides.cpp - plan.json fields a run may change (--set) ----------===//
#include "swift/Plan/Overrides.h"

#include "swift/Plan/Error.h"
#include "swift/Plan/Json.h"

#include <algorithm>

namespace swift::plan {

const std::vector<std::string> &runTimeKeys() {
  static const std::vector<std::string> keys = {
      "training.optimizer.lr",
      "training.optimizer.betas",
      "training.optimizer.eps",
      "training.optimizer.weight_decay",
      "training.lr_schedule.warmup_steps",
      "training.lr_schedule.decay",
      "training.lr_schedule.min_lr_ratio",
      "training.max_grad_norm",
      "training.seed",
      "training.loss_on",
      "training.lora.alpha",
  };
  return keys;
}

namespace {

std::vector<std::string> splitPath(const std::string &key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos)
      return parts;
    start = dot + 1;
  }
}

std::string joined(const std::vector<std::string> &keys) {
  std::string out;
  for (const std::string &k : keys)
    out += (out.empty() ? "" : ", ") + k;
  return out;
}

} // namespace

void applyRunOverride(nlohmann::json &plan, const std::string &assignment,
                      const std::string &file) {
  const std::string what = "command line: --set " + briefText(assignment, 80);
  const size_t eq = assignment.find('=');
  SWIFT_CHECK(eq != std::string::npos && eq > 0, what,
              ": expected KEY=VALUE (e.g. training.optimizer.lr=2e-5)");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  const std::vector<std::string> &allowed = runTimeKeys();
  if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
    // A field the plan has: it was planned.
    const nlohmann::json *at = &plan;
    for (const std::string &part : splitPath(key))
      at = at && at->is_object() && at->contains(part) ? &(*at)[part] : nullptr;
    if (at)
      throw UserError(what + ": " + key +
                      " changes the memory or the time of a step, which the plan "
                      "was made for: plan again (swift-plan JOB --set " +
                      key + "=" + briefText(text, 40) + " --emit plan -o " + file + ")");
    throw UserError(what + ": " + file + " has no field " + briefText(key, 60) +
                    " that a run may change; --set takes " + joined(allowed));
  }
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &) {
    value = text; // a word: cosine, all
  }
  const std::vector<std::string> path = splitPath(key);
  nlohmann::json *at = &plan;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    nlohmann::json &next = (*at)[path[i]];
    if (next.is_null())
      next = nlohmann::json::object();
    SWIFT_CHECK(next.is_object(), what, ": ", file, ": ", path[i],
                " is not an object");
    at = &next;
  }
  if (value.is_null())
    at->erase(path.back());
  else
    (*at)[path.back()] = value;
}

} // namespace swift::plan
