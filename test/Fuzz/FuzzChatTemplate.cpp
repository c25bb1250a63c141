//===- FuzzChatTemplate.cpp - libFuzzer target: chat templates ------------===//
//
// Input: a chat template's Jinja text. It is parsed (jinja::Template::parse)
// and rendered with a fixed small chat context (messages with content,
// reasoning_content and tool calls, tools, the special tokens) under small
// limits, so that every input finishes well inside the 2 s budget. It must
// render, with spans that are ordered, inside the text and verbatim copies
// of the tagged message strings, or throw UserError of one short line;
// anything else (a crash, another exception, a hang, a sanitizer report) is
// a finding.
//
//===----------------------------------------------------------------------===//
#include "Refusal.h"

#include "swift/Plan/Error.h"
#include "swift/Data/Jinja.h"

#include <nlohmann/json.hpp>

#include <string>

namespace {

using ojson = nlohmann::ordered_json;

const ojson &context() {
  static const ojson c = ojson::parse(R"({
    "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>",
    "add_generation_prompt": true, "enable_thinking": false, "documents": null,
    "tools": [{"type": "function", "function": {"name": "get_weather",
               "description": "Weather", "parameters": {"type": "object",
               "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Hi {{ x }} <|im_end|> 你好 😀"},
      {"role": "assistant", "content": "<think>\nhmm\n</think>\n\n  Hello!\n",
       "reasoning_content": "  because\n"},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "",
       "tool_calls": [{"id": "call12345", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "tool_call_id": "call12345", "content": "{\"temp\": 21}"},
      {"role": "assistant", "content": "It is 21 degrees."}
    ]})");
  return c;
}

std::vector<swift::data::jinja::Tag> tags() {
  std::vector<swift::data::jinja::Tag> t;
  const ojson &m = context()["messages"];
  for (size_t i = 0; i < m.size(); ++i) {
    t.push_back({"/messages/" + std::to_string(i) + "/content", int(i), false});
    if (m[i].contains("reasoning_content"))
      t.push_back({"/messages/" + std::to_string(i) + "/reasoning_content", int(i), true});
  }
  return t;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace jinja = swift::data::jinja;
  static const std::vector<jinja::Tag> kTags = tags();
  jinja::Limits limits;
  limits.maxSteps = 200000;
  limits.maxStringBytes = 1 << 18;
  limits.maxListItems = 1 << 14;
  limits.maxDepth = 120;
  const std::string text(reinterpret_cast<const char *>(data), size);
  try {
    jinja::Template t = jinja::Template::parse(text, "fuzz.jinja");
    swift::data::Rendered r = t.render(context(), kTags, limits);
    if (r.text.size() > limits.maxStringBytes)
      __builtin_trap();
    size_t prev = 0;
    const ojson &m = context()["messages"];
    for (const auto &s : r.spans) {
      if (s.begin < prev || s.begin >= s.end || s.end > r.text.size() || s.source < 0 ||
          size_t(s.source) >= m.size())
        __builtin_trap();
      prev = s.end;
      const std::string src =
          m[s.source][s.reasoning ? "reasoning_content" : "content"].get<std::string>();
      if (s.sourceOffset + (s.end - s.begin) > src.size() ||
          r.text.compare(s.begin, s.end - s.begin, src, s.sourceOffset, s.end - s.begin) != 0)
        __builtin_trap();
    }
  } catch (const swift::plan::UserError &e) {
    swift::fuzz::checkRefusal(e.what());
  }
  return 0;
}
