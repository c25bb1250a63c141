//===- Json.cpp - strict JSON documents with located errors ---------------===//

#include "swift/Plan/Json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

using nlohmann::json;
namespace fs = std::filesystem;

namespace swift::plan {

std::string notRegularFile(const std::string &path, const std::string &expected) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    return "cannot read the file: " + ec.message(); // a symlink loop, EACCES
  switch (status.type()) {
  case fs::file_type::regular:
    return "";
  case fs::file_type::not_found:
    return "no such file";
  case fs::file_type::directory:
    return "is a directory; expected " + expected;
  case fs::file_type::fifo:
    return "is a FIFO, not a regular file; expected " + expected;
  case fs::file_type::character:
  case fs::file_type::block:
    return "is a device, not a regular file; expected " + expected;
  default:
    return "is not a regular file; expected " + expected;
  }
}

std::string readRegularFile(const std::string &path, const std::string &expected,
                            uint64_t maxBytes) {
  auto fail = [&](const std::string &why) { throw UserError(path + ": " + why); };
  if (std::string why = notRegularFile(path, expected); !why.empty())
    fail(why);
  auto tooLarge = [&] {
    std::ostringstream os;
    os << "is larger than ";
    if (maxBytes % (1 << 20) == 0)
      os << (maxBytes >> 20) << " MiB";
    else
      os << maxBytes << " bytes";
    os << "; expected " << expected;
    fail(os.str());
  };
  std::error_code ec;
  if (uintmax_t size = fs::file_size(path, ec); !ec && size > maxBytes)
    tooLarge();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(std::string("cannot read the file: ") + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, size_t(in.gcount()));
    if (text.size() > maxBytes)
      tooLarge();
  }
  if (in.bad())
    fail(std::string("cannot read the file: ") + std::strerror(errno));
  return text;
}

namespace {
/// Thrown from the parser's callback; carries a message without the
/// parser's own prefix, and the field it is about.
struct Refused {
  std::string field;
  std::string why;
};

/// A character iterator that records how far the parser has read: the
/// parser's callback has no position, but it runs right after the token it
/// reports was read (a number's one character of lookahead included).
class CountingIterator {
public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  CountingIterator(const char *p, size_t *read) : p(p), read(read) {}
  const char &operator*() const { return *p; }
  CountingIterator &operator++() {
    ++p;
    ++*read;
    return *this;
  }
  bool operator==(const CountingIterator &o) const { return p == o.p; }
  bool operator!=(const CountingIterator &o) const { return p != o.p; }

private:
  const char *p;
  size_t *read;
};

/// Line and column of byte offsets of a text, asked in increasing order
/// (each byte is looked at once; an earlier offset starts over).
class LineCounter {
public:
  explicit LineCounter(const std::string &text) : text(text) {}
  JsonPosition at(size_t offset) {
    offset = std::min(offset, text.size());
    if (offset < done) {
      done = lineStart = 0;
      line = 1;
    }
    for (; done < offset; ++done)
      if (text[done] == '\n') {
        ++line;
        lineStart = done + 1;
      }
    return {line, int(offset - lineStart) + 1};
  }

private:
  const std::string &text;
  size_t done = 0, lineStart = 0;
  int line = 1;
};
} // namespace

JsonPosition positionOf(const JsonPositions &positions, std::string field) {
  for (;;) {
    if (auto it = positions.find(field); it != positions.end())
      return it->second;
    if (field.empty())
      return {};
    // Up one level: drop "[i]" or ".key" (or the first key).
    size_t cut = field.back() == ']' ? field.rfind('[') : field.rfind('.');
    field = cut == std::string::npos ? "" : field.substr(0, cut);
  }
}

namespace {
/// parseJson and parseOrderedJson: one strict parser for both object types.
template <class Json>
Json parseStrict(const std::string &text, const std::string &file,
                 JsonPositions *positions) {
  // The path to the value being parsed: an object's frame holds its current
  // key and the keys seen, an array's the number of elements finished.
  struct Frame {
    bool array;
    std::string key;
    size_t index = 0;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  auto where = [&] {
    std::string path;
    for (const Frame &f : stack) {
      if (f.array)
        path += "[" + std::to_string(f.index) + "]";
      else if (!f.key.empty())
        path += (path.empty() ? "" : ".") + briefText(f.key, 40);
    }
    // Up to 256 levels of keys: a message keeps the innermost 200
    // characters (cut on a UTF-8 character boundary).
    if (path.size() > 200) {
      size_t cut = path.size() - 200;
      while (cut < path.size() && (uint8_t(path[cut]) & 0xC0) == 0x80)
        ++cut;
      path = "..." + path.substr(cut);
    }
    return path;
  };
  auto finished = [&] {
    if (!stack.empty() && stack.back().array)
      ++stack.back().index;
  };
  // Bytes read so far, and where the text after the last event starts: the
  // token an event reports is the first one there past white space and the
  // separators ',' and ':'.
  size_t read = 0, after = 0;
  auto tokenStart = [&] {
    size_t p = after;
    while (p < text.size() && std::strchr(" \t\r\n,:", text[p]) && text[p])
      ++p;
    return p;
  };
  // An array's elements are located at the array: positions stay fewer
  // than the document's values.
  LineCounter lines(text);
  auto record = [&] {
    if (positions && (stack.empty() || !stack.back().array))
      (*positions)[where()] = lines.at(tokenStart());
  };
  size_t refusedAt = 0;
  typename Json::parser_callback_t track = [&](int depth, typename Json::parse_event_t event,
                                               Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
    case Json::parse_event_t::array_start:
      if (depth >= kMaxJsonDepth) {
        refusedAt = tokenStart();
        throw Refused{"", "nested deeper than " + std::to_string(kMaxJsonDepth) +
                              " levels"};
      }
      record();
      stack.push_back({event == Json::parse_event_t::array_start, "", 0, {}});
      break;
    case Json::parse_event_t::key:
      if (!stack.empty() && parsed.is_string()) {
        Frame &f = stack.back();
        f.key = parsed.template get<std::string>();
        if (!f.keys.insert(f.key).second) {
          refusedAt = tokenStart();
          throw Refused{where(), "the key \"" + briefText(f.key, 40) +
                                     "\" is given twice in one object (a JSON "
                                     "reader would keep one silently); give it "
                                     "once"};
        }
      }
      break;
    case Json::parse_event_t::object_end:
    case Json::parse_event_t::array_end:
      if (!stack.empty())
        stack.pop_back();
      finished();
      break;
    case Json::parse_event_t::value:
      record();
      finished();
      break;
    }
    after = read;
    return true;
  };
  auto fail = [&](const std::string &field, const std::string &why,
                  size_t offset) {
    throw JsonError(file + ": " + (field.empty() ? "" : field + ": ") + why,
                    field, why, lines.at(offset));
  };
  try {
    return Json::parse(CountingIterator(text.data(), &read),
                       CountingIterator(text.data() + text.size(), &read),
                       track);
  } catch (const Refused &r) {
    fail(r.field, r.why, refusedAt);
  } catch (const json::out_of_range &e) {
    // 406: "number overflow parsing '1e400'".
    std::string why = e.what();
    if (size_t p = why.find("] "); p != std::string::npos)
      why = why.substr(p + 2);
    fail(where(), briefText(why, 120) + " (not a finite number)", tokenStart());
  } catch (const json::parse_error &e) {
    // A syntax error. nlohmann's message gives the line and column (kept in
    // what()); `why` leaves them to JsonError::at. e.byte counts the
    // offending character.
    std::string why = e.what();
    if (size_t p = why.find(": "); p != std::string::npos &&
                                   why.find("parse error") < p)
      why = why.substr(p + 2);
    const std::string what = "not valid JSON: " + briefText(e.what(), 200);
    throw JsonError(file + ": " + what, "",
                    "not valid JSON: " + briefText(why, 200),
                    lines.at(e.byte == 0 ? 0 : e.byte - 1));
  } catch (const json::exception &e) {
    fail("", "not valid JSON: " + briefText(e.what(), 200), read);
  }
  return Json(); // not reached
}
} // namespace

json parseJson(const std::string &text, const std::string &file,
               JsonPositions *positions) {
  return parseStrict<json>(text, file, positions);
}

nlohmann::ordered_json parseOrderedJson(const std::string &text,
                                        const std::string &file,
                                        JsonPositions *positions) {
  return parseStrict<nlohmann::ordered_json>(text, file, positions);
}

json readJsonFile(const std::string &path, const std::string &expected,
                  uint64_t maxBytes) {
  return parseJson(readRegularFile(path, expected, maxBytes), path);
}

std::string briefText(const std::string &text, size_t max) {
  // Control characters escaped as JSON writes them: a newline in a key
  // would otherwise break the message's one line. Only what is shown is
  // escaped (a value may be megabytes).
  std::string shown;
  for (size_t i = 0; i < text.size() && shown.size() <= max; ++i) {
    const unsigned char c = uint8_t(text[i]);
    if (c >= 0x20 && c != 0x7f) {
      shown += char(c);
      continue;
    }
    switch (c) {
    case '\n': shown += "\\n"; break;
    case '\r': shown += "\\r"; break;
    case '\t': shown += "\\t"; break;
    default: {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      shown += escaped;
    }
    }
  }
  if (shown.size() <= max)
    return shown;
  // Cut on a UTF-8 character boundary.
  size_t cut = max;
  while (cut > 0 && (uint8_t(shown[cut]) & 0xC0) == 0x80)
    --cut;
  return shown.substr(0, cut) + "...";
}

void JsonField::fail(const std::string &why) const {
  throw JsonError(file + ": " + (where.empty() ? "<root>" : where) + ": " + why,
                  where, why,
                  positions ? positionOf(*positions, where) : JsonPosition{});
}

JsonField JsonField::at(const char *key) const {
  std::string sub = where.empty() ? key : where + "." + key;
  if (!j.is_object())
    fail("expected an object, got " + std::string(j.type_name()));
  if (!j.contains(key))
    JsonField{j, sub, file, positions}.fail("missing required field");
  return JsonField{j.at(key), sub, file, positions};
}

JsonField JsonField::index(size_t i) const {
  return JsonField{j.at(i), where + "[" + std::to_string(i) + "]", file,
                   positions};
}

const JsonField &JsonField::object() const {
  if (!j.is_object())
    fail("expected an object, got " + std::string(j.type_name()));
  return *this;
}

const JsonField &JsonField::array() const {
  if (!j.is_array())
    fail("expected an array, got " + std::string(j.type_name()));
  return *this;
}

int64_t JsonField::integer(int64_t lo, int64_t hi) const {
  // A whole number too big for 64 bits: nlohmann reads it as unsigned (up
  // to 2^64 - 1) or as a float (beyond); either is out of range, not "not
  // an integer" (and get<int64_t> would wrap an unsigned).
  auto outOfRange = [&](const std::string &value) {
    std::ostringstream os;
    os << "value " << value << " out of range [" << lo << ", " << hi << "]";
    fail(os.str());
  };
  if ((j.is_number_unsigned() &&
       j.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) ||
      (j.is_number_float() && std::abs(j.get<double>()) >= 0x1p63))
    outOfRange(brief(40));
  if (!j.is_number_integer())
    fail("expected an integer, got " + std::string(j.type_name()) +
         (j.is_primitive() ? " " + brief(40) : std::string()));
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi)
    outOfRange(std::to_string(v));
  return v;
}

double JsonField::number(double lo, double hi) const {
  if (!j.is_number())
    fail("expected a number, got " + std::string(j.type_name()) +
         (j.is_primitive() ? " " + brief(40) : std::string()));
  const double v = j.get<double>();
  if (!std::isfinite(v))
    fail("expected a finite number, got " + brief(40));
  if (!(v >= lo && v <= hi)) {
    std::ostringstream os;
    os << "value " << v << " out of range [" << lo << ", " << hi << "]";
    fail(os.str());
  }
  return v;
}

bool JsonField::boolean() const {
  if (!j.is_boolean())
    fail("expected true or false, got " + std::string(j.type_name()) +
         (j.is_primitive() ? " " + brief(40) : std::string()));
  return j.get<bool>();
}

std::string JsonField::string() const {
  if (!j.is_string())
    fail("expected a string, got " + std::string(j.type_name()) +
         (j.is_primitive() ? " " + brief(40) : std::string()));
  return j.get<std::string>();
}

void JsonField::onlyKeys(std::initializer_list<const char *> known) const {
  object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char *k : known)
      ok |= it.key() == k;
    if (!ok)
      JsonField{it.value(),
                where.empty() ? briefText(it.key())
                              : where + "." + briefText(it.key()),
                file, positions}
          .fail("unknown field");
  }
}

std::string JsonField::brief(size_t max) const {
  return briefText(j.dump(-1, ' ', false, json::error_handler_t::replace), max);
}

} // namespace swift::plan
