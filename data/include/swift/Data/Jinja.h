//===- Jinja.h - the Jinja subset of HF chat templates ----------*- C++ -*-===//
//
// A C++ implementation of the Jinja2 subset that HF chat templates use
// (tokenizer_config.json's `chat_template`), rendering as transformers'
// apply_chat_template does: jinja2's ImmutableSandboxedEnvironment with
// trim_blocks and lstrip_blocks, the default Undefined, loop controls, and
// transformers' `tojson` (ensure_ascii=False), `raise_exception` and
// `strftime_now`. docs/runtime.md "Chat templates" lists the subset.
//
// Provenance: every string value carries, besides its bytes, the byte ranges
// that are verbatim copies of a tagged input string (a SourceSpan each).
// Concatenation, output, slicing, strip/trim, split, join and replace keep
// them; other filters (tojson, upper, ...) make untagged text. The render
// returns the spans of its whole output: the chat layer tags each message's
// content, and the data pipeline finds an assistant message's text in the
// rendered conversation through them (the loss mask).
//
// Every error is a swift::plan::UserError "NAME:LINE:COL: why" (the
// template's own line and column): syntax errors, constructs outside the
// subset (refused, never rendered wrongly), a template's raise_exception,
// and renders past the limits (steps, output bytes, nesting).
// Plain C++ (SwiftFormats: no LibTorch). A parsed Template is immutable:
// render it from many threads at once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace swift::data {

/// Bytes [begin, end) of a rendered text are a verbatim copy of the tagged
/// input string `source` from its byte `sourceOffset` on. For a chat,
/// `source` is the message's index and `reasoning` says whether the string
/// is its reasoning_content (true) or its content (false).
struct SourceSpan {
  size_t begin, end;
  int source;
  size_t sourceOffset;
  bool reasoning = false;
  bool operator==(const SourceSpan &o) const {
    return begin == o.begin && end == o.end && source == o.source &&
           sourceOffset == o.sourceOffset && reasoning == o.reasoning;
  }
};

/// A render: the text and its spans, ordered by `begin`, disjoint, and
/// merged where one continues the previous.
struct Rendered {
  std::string text;
  std::vector<SourceSpan> spans;
};

namespace jinja {

/// Bounds of one render (a template is code from a file: it must finish).
struct Limits {
  uint64_t maxSteps = 20'000'000;     // statements, loop turns, expressions
  size_t maxStringBytes = 64u << 20;  // the output and every string value
  size_t maxListItems = 1u << 20;     // every list value (range(), +, *)
  int maxDepth = 200;                 // nested evaluation (and macro calls)
};

/// A string of the context to tag: the value at `pointer` (a JSON pointer,
/// "/messages/3/content") carries spans of `source` (and `reasoning`).
struct Tag {
  std::string pointer;
  int source;
  bool reasoning = false;
};

struct Program; // the parsed template (Jinja.cpp)

class Template {
public:
  /// Parses `text`; `name` starts every error ("qwen3 chat_template:3:7:
  /// unknown filter 'foo'"). Syntax errors and constructs outside the
  /// subset are refused here where they can be seen without rendering.
  static Template parse(const std::string &text, const std::string &name);

  /// Renders with `context` (a JSON object: the template's variables) plus
  /// the globals raise_exception, strftime_now, range, namespace, dict.
  Rendered render(const nlohmann::ordered_json &context,
                  const std::vector<Tag> &tags = {},
                  const Limits &limits = {}) const;

  const std::string &name() const;

private:
  std::shared_ptr<const Program> program_;
};

} // namespace jinja
} // namespace swift::data
