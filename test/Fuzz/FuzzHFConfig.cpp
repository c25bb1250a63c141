//===- FuzzHFConfig.cpp - libFuzzer target: HF config.json reader ---------===//
//
// Input: a config.json's text, read by both entries to the one HF config
// reader (swift/Plan/HFConfig.h): the job reader's loadHFConfig (located
// diagnostics) must return a model or one diagnostic, and swift-run's
// plan::readHFConfigFile a config or a UserError; both must agree, and an
// accepted config must not differ from its own model (hfDifferences).
// Anything else is a finding (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//
#include "FuzzFile.h"

#include "swift/Job/Job.h"
#include "swift/Plan/HFConfig.h"

#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = swift::fuzz::writeInput(
      std::string(reinterpret_cast<const char *>(data), size), "config.json");
  swift::job::Diagnostic error;
  auto model = swift::job::loadHFConfig(path, error);
  if (!model && error.message.empty())
    __builtin_trap(); // a refusal must say why
  bool accepted = true;
  try {
    const swift::plan::HFConfig config = swift::plan::readHFConfigFile(path);
    if (!swift::plan::hfDifferences(config, config.model).empty()) {
      std::fprintf(stderr, "a config differs from its own model\n");
      __builtin_trap();
    }
  } catch (const swift::plan::UserError &e) {
    accepted = false;
    if (std::string(e.what()).empty())
      __builtin_trap();
  }
  if (accepted != model.has_value()) {
    std::fprintf(stderr, "the job reader %s, swift-run's reader %s\n",
                 model ? "accepts" : error.str().c_str(),
                 accepted ? "accepts" : "refuses");
    __builtin_trap();
  }
  return 0;
}
