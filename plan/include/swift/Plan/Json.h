//===- Json.h - reading the JSON files users hand to swift ----------------===//
//
// One reader for every JSON document swift reads (plan.json, checkpoint
// manifests, safetensors headers and index files, peft adapter configs, HF
// config.json, JSONL lines), so that each refuses bad input the same way:
//  - only regular files are opened (a FIFO would block, /dev/zero never
//    end), and only up to a size fixed per kind of file;
//  - a syntax error gives the line and column, a number that overflows a
//    double the field it was read for;
//  - a key given twice in one object is an error naming it (nlohmann, like
//    Python's json, keeps the last copy without a word);
//  - nesting deeper than kMaxJsonDepth is refused before it is parsed;
//  - JsonField reads typed values with range checks, and every error names
//    the file and the field's path ("training.optimizer.lr: ...").
// Every error is a UserError (Error.h): the tools exit 2 with one line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Enums.h"
#include "swift/Plan/Error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace swift::plan {

/// Deeper nesting than any document swift reads (plan.json nests 5).
constexpr int kMaxJsonDepth = 256;

/// Why `path` cannot be read as a regular file, or "" when it can:
/// "no such file", "is a directory; expected <expected>", "is a FIFO, ...",
/// a symlink loop's error. `expected` says what the file should be ("a
/// checkpoint manifest (JSON)").
std::string notRegularFile(const std::string &path, const std::string &expected);

/// The bytes of `path`, a regular file of at most `maxBytes`; otherwise a
/// UserError "path: why". Bounded while reading too (a file may grow).
std::string readRegularFile(const std::string &path, const std::string &expected,
                            uint64_t maxBytes);

/// `text` as JSON, strictly (see above). `file` prefixes every error; the
/// errors past the syntax name the field's path.
nlohmann::json parseJson(const std::string &text, const std::string &file);

/// readRegularFile + parseJson.
nlohmann::json readJsonFile(const std::string &path, const std::string &expected,
                            uint64_t maxBytes);

/// A JSON value with its path in its file, for reading typed fields whose
/// errors name both: "FILE: FIELD: why".
struct JsonField {
  const nlohmann::json &j;
  std::string where; // e.g. "training.optimizer", "" for the root
  const std::string &file;

  [[noreturn]] void fail(const std::string &why) const;
  bool has(const char *key) const { return j.contains(key); }
  /// The member `key`; missing is an error ("missing required field").
  JsonField at(const char *key) const;
  JsonField index(size_t i) const;
  size_t size() const { return j.size(); }
  const JsonField &object() const;
  const JsonField &array() const;
  /// An integer in [lo, hi]; a whole number past int64 is "out of range",
  /// not wrapped.
  int64_t integer(int64_t lo, int64_t hi) const;
  /// A finite number in [lo, hi].
  double number(double lo, double hi) const;
  bool boolean() const;
  std::string string() const;
  template <typename E> E choice() const {
    std::string s = string();
    if (std::optional<E> value = parseEnum<E>(s))
      return *value;
    fail("unknown value \"" + s + "\" (expected " + enumChoices<E>() + ")");
  }
  /// Rejects keys not in `known`: a typo must not silently mean "default".
  void onlyKeys(std::initializer_list<const char *> known) const;
  /// The value as JSON, cut to `max` characters ("..." after), for messages
  /// that quote it.
  std::string brief(size_t max = 80) const;
};

/// `text` cut to `max` characters with "..." after, its control characters
/// escaped as JSON does (\n, \u0001): a message quotes a value on its one
/// line, never a whole file.
std::string briefText(const std::string &text, size_t max = 80);

} // namespace swift::plan
