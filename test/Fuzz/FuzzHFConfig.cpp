//===- FuzzHFConfig.cpp - libFuzzer target: HF config.json reader ---------===//
//
// Input: a config.json's text. loadHFConfig must return a model or one
// diagnostic; anything else is a finding (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//
#include "FuzzFile.h"

#include "swift/Job/Job.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = swift::fuzz::writeInput(
      std::string(reinterpret_cast<const char *>(data), size), "config.json");
  swift::job::Diagnostic error;
  auto model = swift::job::loadHFConfig(path, error);
  if (!model && error.message.empty())
    __builtin_trap(); // a refusal must say why
  return 0;
}
