//===- PlanWriter.cpp - plan.json through the runtime's schema ------------===//

#include "swift/Planner/PlanWriter.h"

#include <nlohmann/json.hpp>

#include <exception>

namespace swift::planner {

std::string writePlan(const swift::rt::Plan &plan,
                      const std::string &scheduleJson, std::string &error) {
  try {
    nlohmann::json document = nlohmann::json::parse(swift::rt::planToJson(plan));
    document["schedule"] = nlohmann::json::parse(scheduleJson);
    swift::rt::Plan checked =
        swift::rt::parsePlanText(document.dump(), "the emitted plan");
    return swift::rt::planToJson(checked);
  } catch (const std::exception &e) {
    error = e.what();
    return "";
  }
}

} // namespace swift::planner
