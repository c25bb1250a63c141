//===- PlanWriter.cpp - plan.json through the runtime's schema ------------===//

#include "swift/Plan/PlanWriter.h"

#include <nlohmann/json.hpp>

#include <exception>

namespace swift::plan {

std::string writePlan(const swift::plan::Plan &plan,
                      const std::string &scheduleJson, std::string &error) {
  try {
    nlohmann::json document = nlohmann::json::parse(swift::plan::planToJson(plan));
    document["schedule"] = nlohmann::json::parse(scheduleJson);
    swift::plan::Plan checked =
        swift::plan::parsePlanText(document.dump(), "the emitted plan");
    return swift::plan::planToJson(checked);
  } catch (const std::exception &e) {
    error = e.what();
    return "";
  }
}

} // namespace swift::plan
