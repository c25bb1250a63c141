//===- Jsonl.cpp - one line of a JSONL SFT data file ----------------------===//

#include "swift/Data/Jsonl.h"

#include "swift/Plan/Json.h"
#include "swift/Plan/Error.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <map>
#include <vector>

namespace swift::data::jsonl {
using plan::UserError;
namespace {

using nlohmann::json;

/// The text of each float of the array `key` of the object `text`, as
/// written, by index ("" for the other elements): nlohmann keeps a float's
/// value, not its digits (99999999999999999999999 would print as
/// 9.999999999999999e+22). One pass over the line.
std::vector<std::string> floatsAsWritten(const std::string &text,
                                         const std::string &key) {
  struct Finder : nlohmann::json_sax<json> {
    const std::string &wanted;
    int depth = 0;
    bool inKey = false, inArray = false;
    std::vector<std::string> found; // one per element of the array
    explicit Finder(const std::string &k) : wanted(k) {}
    // A value at depth 2 of the array is one element.
    bool element(const std::string &written = "") {
      if (inArray && depth == 2)
        found.push_back(written);
      return true;
    }
    bool null() override { return element(); }
    bool boolean(bool) override { return element(); }
    bool number_integer(number_integer_t) override { return element(); }
    bool number_unsigned(number_unsigned_t) override { return element(); }
    bool number_float(number_float_t, const string_t &s) override {
      return element(s);
    }
    bool string(string_t &) override { return element(); }
    bool binary(binary_t &) override { return element(); }
    bool start_object(std::size_t) override {
      element();
      ++depth;
      return true;
    }
    bool key(string_t &k) override {
      if (depth == 1)
        inKey = k == wanted;
      return true;
    }
    bool end_object() override {
      --depth;
      return true;
    }
    bool start_array(std::size_t) override {
      element();
      ++depth;
      if (depth == 2 && inKey)
        inArray = true;
      return true;
    }
    bool end_array() override {
      if (depth == 2 && inArray)
        return false; // done
      --depth;
      return true;
    }
    bool parse_error(std::size_t, const std::string &,
                     const nlohmann::detail::exception &) override {
      return false;
    }
  } finder(key);
  json::sax_parse(text, &finder, json::input_format_t::json, false);
  return finder.found;
}

/// An integer literal (a float only because it overflows 64 bits).
bool isIntegerLiteral(const std::string &s) {
  size_t k = !s.empty() && s[0] == '-';
  if (k == s.size())
    return false;
  for (; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9')
      return false;
  return true;
}

} // namespace

std::optional<Sample> parseLine(const std::string &text, int64_t vocab,
                                const std::string &where) {
  if (text.find_first_not_of(" \t\r") == std::string::npos)
    return std::nullopt; // blank lines carry no sample (as HF's JSON reader)
  return parseLine(plan::parseOrderedJson(text, where), text, vocab, where);
}

Sample parseLine(const nlohmann::ordered_json &j, const std::string &text,
                 int64_t vocab, const std::string &where) {
  auto fail = [&](const std::string &why) {
    throw UserError(where + ": " + why);
  };
  if (!j.is_object())
    fail(std::string("expected an object {\"input_ids\": [...]}, got ") +
         j.type_name());
  // Keys HF would train with that swift-run does not read: ignoring them
  // would train otherwise than HF. Any other key is a column HF's Trainer
  // drops (remove_unused_columns) and is ignored here too.
  for (const auto &[key, why] : std::initializer_list<std::pair<const char *, const char *>>{
           {"label", "HF's collators rename it to \"labels\"; name it so"},
           {"label_ids", "HF's collators rename it to \"labels\"; name it so"},
           {"position_ids", "swift-run numbers the positions of each sample "
                            "from 0; remove them"},
           {"inputs_embeds", "swift-run trains on token ids; remove it"}})
    if (j.contains(key))
      fail(std::string("\"") + key + "\" is not read: " + why);
  if (!j.contains("input_ids"))
    fail("missing \"input_ids\"");

  // The floats of each array, as written, found once per array when it
  // holds one.
  std::map<std::string, std::vector<std::string>> floats;
  auto floatAsWritten = [&](const char *key, size_t k) -> std::string {
    auto it = floats.find(key);
    if (it == floats.end())
      it = floats.emplace(key, floatsAsWritten(text, key)).first;
    return k < it->second.size() ? it->second[k] : "";
  };
  // The integers of `key` (past 64 bits: saturated, so that it is out of
  // every range and quoted as written).
  auto integers = [&](const char *key) {
    const auto &a = j.at(key);
    if (!a.is_array())
      fail(std::string(key) + " is not a list of integers");
    std::vector<int64_t> out;
    out.reserve(a.size());
    for (size_t k = 0; k < a.size(); ++k) {
      const auto &v = a[k];
      if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        out.push_back(u > uint64_t(std::numeric_limits<int64_t>::max())
                          ? std::numeric_limits<int64_t>::max()
                          : int64_t(u));
        continue;
      }
      if (v.is_number_integer()) {
        out.push_back(v.get<int64_t>());
        continue;
      }
      std::string written = v.is_number_float() ? floatAsWritten(key, k) : "";
      if (isIntegerLiteral(written)) {
        out.push_back(written[0] == '-' ? std::numeric_limits<int64_t>::min()
                                        : std::numeric_limits<int64_t>::max());
        continue;
      }
      if (written.empty())
        written = v.dump(-1, ' ', false, json::error_handler_t::replace);
      fail(std::string(key) + "[" + std::to_string(k) + "] is " +
           plan::briefText(written, 40) + ", not an integer");
    }
    return out;
  };
  // Element k of `key` as written, for a message.
  auto written = [&](const char *key, size_t k) {
    const auto &v = j.at(key)[k];
    std::string s = v.is_number_float() ? floatAsWritten(key, k) : "";
    return plan::briefText(s.empty() ? v.dump() : s, 40);
  };

  const std::vector<int64_t> ids = integers("input_ids");
  if (ids.empty())
    fail("input_ids is empty");
  const size_t n = ids.size();
  const bool hasLabels = j.contains("labels");
  std::vector<int64_t> labels;
  if (hasLabels) {
    labels = integers("labels");
    if (labels.size() != n)
      fail("labels has " + std::to_string(labels.size()) +
           " entries, input_ids " + std::to_string(n));
  }
  // The sample is positions [first, last): all of them, or those the mask
  // attends.
  size_t first = 0, last = n;
  if (j.contains("attention_mask")) {
    const std::vector<int64_t> mask = integers("attention_mask");
    if (mask.size() != n)
      fail("attention_mask has " + std::to_string(mask.size()) +
           " entries, input_ids " + std::to_string(n));
    for (size_t k = 0; k < n; ++k)
      if (mask[k] != 0 && mask[k] != 1)
        fail("attention_mask[" + std::to_string(k) + "] is " +
             written("attention_mask", k) + ", not 0 or 1");
    while (first < n && mask[first] == 0)
      ++first;
    if (first == n)
      fail("attention_mask is all 0: the line has no token");
    while (mask[last - 1] == 0)
      --last;
    for (size_t k = first; k < last; ++k)
      if (mask[k] == 0)
        fail("attention_mask[" + std::to_string(k) +
             "] is 0 between attended tokens (" + std::to_string(first) +
             " to " + std::to_string(last - 1) +
             "): a line is one causal sequence; only padding at either end "
             "(a run of 0s) is dropped");
    for (size_t k = 0; hasLabels && k < n; ++k)
      if ((k < first || k >= last) && labels[k] != kIgnore)
        fail("labels[" + std::to_string(k) + "] is " + written("labels", k) +
             " on padding (attention_mask[" + std::to_string(k) +
             "] is 0), which is ambiguous: make it -100, or the mask 1");
  }
  Sample s;
  s.ids.reserve(last - first);
  s.labels.reserve(last - first);
  for (size_t k = first; k < last; ++k) {
    if (ids[k] < 0 || ids[k] >= vocab)
      fail("input_ids[" + std::to_string(k) + "] is " + written("input_ids", k) +
           ", not in [0, model.vocab_size " + std::to_string(vocab) + ")");
    s.ids.push_back(int32_t(ids[k]));
    if (!hasLabels) {
      s.labels.push_back(int32_t(ids[k]));
    } else if (labels[k] == kIgnore) {
      s.labels.push_back(kIgnore);
    } else if (labels[k] < 0 || labels[k] >= vocab) {
      fail("labels[" + std::to_string(k) + "] is " + written("labels", k) +
           ", not in [0, model.vocab_size " + std::to_string(vocab) +
           ") or -100");
    } else {
      s.labels.push_back(int32_t(labels[k]));
    }
  }
  return s;
}

} // namespace swift::data::jsonl
