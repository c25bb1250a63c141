//===- Jsonl.h - one line of a JSONL SFT data file ------------*- C++ -*-===//
//
// The line format of `--data FILE.jsonl` (Data.h, docs/runtime.md "Data"):
// {"input_ids": [...], "labels": [...], "attention_mask": [...]}, labels
// and attention_mask optional. Plain C++ (the torch-free SwiftFormats
// library, fuzzed by test/Fuzz/FuzzJsonl.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace swift::data::jsonl {

/// HF's ignore_index: a label that is no target.
constexpr int32_t kIgnore = -100;

/// One sample: token ids and HF causal-LM labels of the same length
/// (labels[k+1] is position k's target; kIgnore: none). Without "labels"
/// in the line, the labels are the ids. `text`: what the sample was made
/// from when a line holds text (a conversation rendered by its chat
/// template); nullopt for token-id lines.
struct Sample {
  std::vector<int32_t> ids, labels;
  std::optional<std::string> text;
};

/// The sample of one line of a JSONL file, or nullopt for a blank line
/// (spaces, tabs, a '\r'). Every error is a UserError of one short line
/// starting with `where` ("data.jsonl: line 7"), naming the key and
/// quoting the value as written (briefly), never the line:
///  - not strict JSON (a key given twice included), not an object;
///  - input_ids missing, not a list, empty; an id not an integer, or not
///    in [0, vocab);
///  - labels (optional) of another length, a label neither -100 nor an id;
///  - attention_mask (optional, as a tokenizer writes it): 0/1 values of
///    input_ids' length. A run of 0s at either end is padding and is
///    dropped with its ids and labels (which must be -100 there: a padded
///    target is ambiguous); a 0 between attended tokens is refused (a line
///    is one causal sequence), as is a mask of only 0s;
///  - keys a causal LM's training would read but swift-run does not
///    (position_ids, inputs_embeds) and the spellings HF's collators
///    rename to labels (label, label_ids); any other key is ignored, as
///    HF's Trainer drops the columns the model does not take.
/// A sample of any length is returned: what one longer than the window
/// becomes is training.truncation's (Data.cpp).
std::optional<Sample> parseLine(const std::string &text, int64_t vocab,
                                const std::string &where);
/// parseLine of a line already parsed (plan::parseOrderedJson of `text`,
/// which must be an object or is refused; `text` quotes numbers as written).
Sample parseLine(const nlohmann::ordered_json &line, const std::string &text,
                 int64_t vocab, const std::string &where);

} // namespace swift::data::jsonl
