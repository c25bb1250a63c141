//===- FuzzSafeTensorsIndex.cpp - libFuzzer target: safetensors index -----===//
//
// Input: a model.safetensors.index.json's text. parseIndex must return a
// weight map whose files are plain, printable names in the index's
// directory, or throw UserError of one short line; anything else is a
// finding.
//
//===----------------------------------------------------------------------===//
#include "Refusal.h"

#include "swift/Plan/Error.h"
#include "swift/Runtime/io/SafeTensors.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  try {
    for (const auto &[tensor, shard] : swift::rt::safetensors::parseIndex(
             text, "model.safetensors.index.json"))
      for (char c : shard)
        if (c == '/' || uint8_t(c) < 0x20 || uint8_t(c) == 0x7f ||
            shard.empty() || shard == "." || shard == "..")
          __builtin_trap(); // a file outside the directory, or unprintable
  } catch (const swift::plan::UserError &e) {
    swift::fuzz::checkRefusal(e.what());
  }
  return 0;
}
