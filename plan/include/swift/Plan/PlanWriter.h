//===- PlanWriter.h - plan.json through the runtime's schema ----*- C++ -*-===//
//
// The compiler writes plans with the runtime's own code: it fills a
// swift::plan::Plan (plan/include/swift/Plan/Plan.h, the one definition
// of the schema), adds the schedule the materialization passes built, and
// the runtime's parser validates the result before it is printed. No field
// name of plan.json is spelled on the compiler side.
//
// Plain C++ (the runtime's JSON code uses exceptions); callable from
// -fno-exceptions code: errors come back as a message.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_PLANNER_PLANWRITER_H
#define SWIFT_PLANNER_PLANWRITER_H

#include "swift/Plan/Plan.h"

#include <string>

namespace swift::plan {

/// Returns plan.json's text for `plan` with its schedule replaced by
/// `scheduleJson` (the "schedule" object, as swift::emit::scheduleJson
/// writes it), after the runtime's full validation; on failure returns ""
/// and sets `error`.
std::string writePlan(const swift::plan::Plan &plan,
                      const std::string &scheduleJson, std::string &error);

} // namespace swift::plan

#endif // SWIFT_PLANNER_PLANWRITER_H
