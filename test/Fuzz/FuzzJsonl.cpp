//===- FuzzJsonl.cpp - libFuzzer target: JSONL SFT data lines -------------===//
//
// Input: a JSONL file's text; each of its first 8 lines (more add
// refusals, each an exception, not coverage) goes through jsonl::parseLine
// (vocab 256, windows of 32), which must return a sample (ids in range,
// labels -100 or ids, as many as ids, 1 to 32 of them) or nothing for a
// blank line, or throw UserError of one short line; anything else is a
// finding.
//
//===----------------------------------------------------------------------===//
#include "Refusal.h"

#include "swift/Plan/Error.h"
#include "swift/Data/Jsonl.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace jsonl = swift::data::jsonl;
  const std::string text(reinterpret_cast<const char *>(data), size);
  size_t begin = 0;
  for (int line = 1; line <= 8 && begin < text.size(); ++line) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      end = text.size();
    try {
      auto s = jsonl::parseLine(text.substr(begin, end - begin), 256,
                                "data.jsonl: line " + std::to_string(line));
      if (s) {
        if (s->ids.empty() || s->labels.size() != s->ids.size())
          __builtin_trap();
        for (size_t k = 0; k < s->ids.size(); ++k)
          if (s->ids[k] < 0 || s->ids[k] >= 256 ||
              (s->labels[k] != jsonl::kIgnore &&
               (s->labels[k] < 0 || s->labels[k] >= 256)))
            __builtin_trap();
      }
    } catch (const swift::plan::UserError &e) {
      swift::fuzz::checkRefusal(e.what());
    }
    begin = end + 1;
  }
  return 0;
}
