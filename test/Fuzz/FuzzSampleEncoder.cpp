//===- FuzzSampleEncoder.cpp - libFuzzer target: dataset lines as users write them -===//
//
// Input: a JSONL file's text; each of its first 8 lines goes through
// SampleEncoder with the real Qwen2.5 tokenizer and chat template (loaded
// once from SWIFT_TOKENIZERS_DIR) and Qwen2.5's model vocabulary of
// 151,936. It must return a sample (ids in range, labels -100 or the id
// at their position, as many as ids; a chat sample with a trained token)
// or nothing for a blank line, or throw UserError of one short line;
// anything else is a finding.
//
//===----------------------------------------------------------------------===//
#include "Refusal.h"

#include "swift/Plan/Error.h"
#include "swift/Data/SampleEncoder.h"

#include <algorithm>
#include <string>

namespace {
constexpr int64_t kVocab = 151936;

const swift::data::SampleEncoder &encoder() {
  using namespace swift::data;
  static const SampleEncoder e = SampleEncoder::fromModelDir(
      std::string(SWIFT_TOKENIZERS_DIR) + "/qwen2_5", "", kVocab,
      /*assistantOnly=*/true, "config.json: vocab_size", "");
  return e;
}
} // namespace

// The 7 MB tokenizer.json loads here, outside every execution's time limit:
// a text line makes the encoder read it.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  encoder().encode(R"({"text": "hello"})", "init");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace sd = swift::data;
  const sd::SampleEncoder &e = encoder();
  const std::string text(reinterpret_cast<const char *>(data), size);
  size_t begin = 0;
  for (int line = 1; line <= 8 && begin < text.size(); ++line) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      end = text.size();
    try {
      auto s = e.encode(text.substr(begin, end - begin),
                        "data.jsonl: line " + std::to_string(line));
      if (s) {
        const auto &ids = s->ids, &labels = s->labels;
        const bool text = s->text.has_value(); // not an input_ids line
        if (ids.empty() || labels.size() != ids.size())
          __builtin_trap();
        for (size_t k = 0; k < ids.size(); ++k)
          if (ids[k] < 0 || ids[k] >= kVocab ||
              (labels[k] != sd::jsonl::kIgnore &&
               (text && labels[k] != ids[k])))
            __builtin_trap();
        if (text && std::all_of(labels.begin(), labels.end(),
                        [](int32_t l) { return l == sd::jsonl::kIgnore; }))
          __builtin_trap(); // a text sample that trains nothing
      }
    } catch (const swift::plan::UserError &err) {
      swift::fuzz::checkRefusal(err.what());
    }
    begin = end + 1;
  }
  return 0;
}
