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
// Every error is a UserError (Error.h): the tools exit 2 with one line. It
// is a JsonError, which also gives the field, the reason and, where known,
// the line and column apart, for readers that print them their own way
// (the job reader's "config.json:LINE:COL: error: FIELD: why").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Enums.h"
#include "swift/Plan/Error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>

namespace swift::plan {

/// Deeper nesting than any document swift reads (plan.json nests 5).
constexpr int kMaxJsonDepth = 256;

/// A place in a JSON text: 1-based line and column (in bytes); 0 when
/// unknown.
struct JsonPosition {
  int line = 0;
  int column = 0;
};

/// Where each value of a document starts, by its path as JsonField names it
/// ("" for the root, "rope_scaling.factor"); an array's elements are not
/// listed (positionOf() gives the array's).
using JsonPositions = std::map<std::string, JsonPosition>;

/// The position of `field` in `positions`, or of its nearest enclosing value
/// there ("rope_scaling" for an absent "rope_scaling.factor"); {} when none.
JsonPosition positionOf(const JsonPositions &positions, std::string field);

/// Every error of this reader: what() is the one line a tool prints
/// ("FILE: FIELD: why", "FILE: why"); the parts are kept apart too.
struct JsonError : UserError {
  JsonError(const std::string &message, std::string field, std::string why,
            JsonPosition at = {})
      : UserError(message), field(std::move(field)), why(std::move(why)),
        at(at) {}
  std::string field; // the JSON path, "" for the document as a whole
  std::string why;   // the message after "FILE: FIELD: "
  JsonPosition at;   // where in the text, when known
};

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
/// errors past the syntax name the field's path. Every error has its line
/// and column (JsonError::at); `positions`, when given, receives where each
/// value starts, for errors found past the parse (JsonField::positions).
nlohmann::json parseJson(const std::string &text, const std::string &file,
                         JsonPositions *positions = nullptr);
/// parseJson into an object type that keeps its keys in the order written
/// (a chat message's keys reach the template in that order), with the same
/// checks: one parse serves both.
nlohmann::ordered_json parseOrderedJson(const std::string &text,
                                        const std::string &file,
                                        JsonPositions *positions = nullptr);

/// readRegularFile + parseJson.
nlohmann::json readJsonFile(const std::string &path, const std::string &expected,
                            uint64_t maxBytes);

/// `text` cut to `max` characters with "..." after, its control characters
/// escaped as JSON does (\n, \u0001): a message quotes a value on its one
/// line, never a whole file.
std::string briefText(const std::string &text, size_t max = 80);

/// A JSON value with its path in its file, for reading typed fields whose
/// errors name both: "FILE: FIELD: why".
struct JsonField {
  const nlohmann::json &j;
  std::string where; // e.g. "training.optimizer", "" for the root
  const std::string &file;
  /// parseJson's positions of the document, if kept: errors then say where
  /// (JsonError::at: the field, or the value that lacks it).
  const JsonPositions *positions = nullptr;

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
    fail("unknown value \"" + briefText(s, 40) + "\" (expected " +
         enumChoices<E>() + ")");
  }
  /// Rejects keys not in `known`: a typo must not silently mean "default".
  void onlyKeys(std::initializer_list<const char *> known) const;
  /// The value as JSON, cut to `max` characters ("..." after), for messages
  /// that quote it.
  std::string brief(size_t max = 80) const;
};

} // namespace swift::plan
