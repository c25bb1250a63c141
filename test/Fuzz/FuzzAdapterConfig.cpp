//===- FuzzAdapterConfig.cpp - libFuzzer target: peft adapter_config.json -===//
//
// Input: an adapter_config.json's text, checked against the LoRA of the
// committed peft adapters (test/data/peft: r 4, lora_alpha 8, the seven
// decoder linears) on a 2-layer model. parseJson + checkAdapterConfig must
// accept it or throw UserError of one short line; anything else (a
// std::regex_error, a crash, a hang in a regular expression) is a finding.
//
//===----------------------------------------------------------------------===//
#include "Refusal.h"

#include "swift/Plan/Error.h"
#include "swift/Plan/Json.h"
#include "swift/Runtime/io/AdapterConfig.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  swift::plan::LoraConfig lora;
  lora.rank = 4;
  lora.alpha = 8;
  try {
    swift::rt::checkAdapterConfig(
        swift::plan::parseJson(text, "adapter_config.json"),
        "adapter_config.json", lora, 2);
  } catch (const swift::plan::UserError &e) {
    swift::fuzz::checkRefusal(e.what());
  }
  return 0;
}
