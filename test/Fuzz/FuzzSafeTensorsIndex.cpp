//===- FuzzSafeTensorsIndex.cpp - libFuzzer target: safetensors index -----===//
//
// Input: a model.safetensors.index.json's text. parseIndex must return a
// weight map whose files are plain names in the index's directory, or
// throw UserError of one short line; anything else is a finding.
//
//===----------------------------------------------------------------------===//
#include "Refusal.h"

#include "swift/Plan/Error.h"
#include "swift/Runtime/SafeTensors.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  try {
    for (const auto &[tensor, shard] : swift::rt::safetensors::parseIndex(
             text, "model.safetensors.index.json"))
      if (shard.empty() || shard == "." || shard == ".." ||
          shard.find('/') != std::string::npos ||
          shard.find('\0') != std::string::npos)
        __builtin_trap(); // a file outside the directory
  } catch (const swift::plan::UserError &e) {
    swift::fuzz::checkRefusal(e.what());
  }
  return 0;
}
