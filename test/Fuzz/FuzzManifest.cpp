//===- FuzzManifest.cpp - libFuzzer target: checkpoint manifest reader ----===//
//
// Input: a checkpoint's manifest.json text. parseManifest (torch-free,
// runtime/lib/io/Manifest.cpp) must return a manifest whose every number is
// in range, or throw UserError (one line, the field named); any other
// exception escapes and is a finding, as are crashes, hangs, leaks and
// sanitizer reports (scripts/fuzz.sh). A manifest it accepts must
// round-trip: manifestToJson's text parses to a manifest that prints the
// same.
//
// Build (no LibTorch): Manifest.cpp with the runtime's include directory,
// linked with SwiftPlan.
//
//===----------------------------------------------------------------------===//
#include "swift/Plan/Error.h"
#include "swift/Runtime/io/Manifest.h"

#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace swift::rt;
  std::string text(reinterpret_cast<const char *>(data), size);
  Manifest m;
  try {
    m = parseManifest(text, "fuzz/manifest.json");
  } catch (const swift::plan::UserError &e) {
    const std::string why = e.what();
    if (why.empty() || why.size() > 1000)
      __builtin_trap(); // a refusal says why, in one readable line
    return 0;
  }
  // What the runtime relies on: the step and the samples in range (a step
  // past int64 once wrapped to -1 and trained at a negative lr).
  if (m.step < 0 || m.step > kMaxSteps || m.samplesConsumed < 0 ||
      m.samplesConsumed > kMaxSamples || m.writtenWorldSize < 1 ||
      m.writtenZero < 0 || m.writtenZero > 3 ||
      (m.globalBatchSize && *m.globalBatchSize < 1) || !m.model.is_object() ||
      (m.data && !m.data->synthetic && m.data->bytes < 0)) {
    std::fprintf(stderr, "an accepted manifest holds a value out of range\n");
    __builtin_trap();
  }
  const std::string once = manifestToJson(m);
  std::string twice;
  try {
    twice = manifestToJson(parseManifest(once, "roundtrip/manifest.json"));
  } catch (const swift::plan::UserError &e) {
    std::fprintf(stderr, "an accepted manifest does not re-read: %s\n",
                 e.what());
    __builtin_trap();
  }
  if (once != twice) {
    std::fprintf(stderr, "the manifest changed in a round trip\n");
    __builtin_trap();
  }
  return 0;
}
