//===- FuzzPlan.cpp - libFuzzer target: plan reader and validator ---------===//
//
// Input: a plan.json's text. parsePlanText must return a fully validated
// plan or throw UserError (one line, the field named); any other exception
// escapes and is a finding, as are crashes, hangs, leaks and sanitizer
// reports (scripts/fuzz.sh). A plan it accepts must round-trip:
// planToJson's text parses to a plan that prints the same.
//
//===----------------------------------------------------------------------===//
#include "swift/Plan/Error.h"
#include "swift/Plan/Plan.h"
#include "swift/Plan/Schedule.h"

#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace swift::plan;
  std::string text(reinterpret_cast<const char *>(data), size);
  Plan plan;
  try {
    plan = parsePlanText(text, "fuzz.json");
  } catch (const UserError &e) {
    if (std::string(e.what()).empty())
      __builtin_trap(); // a refusal must say why
    return 0;
  }
  std::string once = planToJson(plan);
  std::string twice;
  try {
    twice = planToJson(parsePlanText(once, "roundtrip.json"));
  } catch (const UserError &e) {
    std::fprintf(stderr, "an accepted plan does not re-read: %s\n", e.what());
    __builtin_trap();
  }
  if (once != twice) {
    std::fprintf(stderr, "the plan changed in a round trip\n");
    __builtin_trap();
  }
  return 0;
}
