//===- TokenizerText.h - UTF-8, Unicode and regexes for Tokenizer.cpp -----===//
//
// The text side of the tokenizer (ICU underneath): UTF-8 checks and
// U+FFFD replacement, text that remembers where each of its bytes came from
// (normalizers change lengths; offsets must still point into the input),
// Unicode normalization forms, character classes of added-token matching,
// and the pre-tokenizers' split regexes in Oniguruma's meaning (HF
// tokenizers' regex engine) run by ICU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swift::data::tokenizer_text {

/// The bytes of a UTF-8 sequence that starts with `lead` (1 for a byte
/// that cannot start one).
inline size_t utf8Length(uint8_t lead) {
  return lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : lead < 0xF8 ? 4 : 1;
}
/// The UTF-8 bytes of a code point (inline: Jinja.cpp uses it too, and it
/// needs no ICU).
inline std::string utf8Encode(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += char(c);
  } else if (c < 0x800) {
    s += char(0xC0 | (c >> 6));
    s += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += char(0xE0 | (c >> 12));
    s += char(0x80 | ((c >> 6) & 0x3F));
    s += char(0x80 | (c & 0x3F));
  } else {
    s += char(0xF0 | (c >> 18));
    s += char(0x80 | ((c >> 12) & 0x3F));
    s += char(0x80 | ((c >> 6) & 0x3F));
    s += char(0x80 | (c & 0x3F));
  }
  return s;
}
/// Whether `s` is well-formed UTF-8 (no surrogates, overlongs, or code
/// points past U+10FFFF).
bool validUtf8(std::string_view s);
/// `s` with each maximal invalid subpart replaced by U+FFFD (WHATWG's and
/// Python's errors="replace" decoding); for each byte of `out`, the bytes
/// [begin, end) of `s` it stands for.
void replaceInvalidUtf8(std::string_view s, std::string &out,
                        std::vector<uint32_t> &begin, std::vector<uint32_t> &end);

/// Text whose every byte knows the source bytes [begin, end) it came from:
/// identity until a normalizer changes it.
struct Aligned {
  std::string text;
  std::vector<uint32_t> begin, end; // per byte of text, unless identity
  bool identity = true;
  size_t base = 0, sourceEnd = 0; // the source range of the whole text

  void assign(std::string_view s, size_t at);
  /// The source bytes of text bytes [b, e) (an empty range at its place
  /// when b == e).
  std::pair<size_t, size_t> source(size_t b, size_t e) const;
  /// Prepend normalizer: `s` before the text, standing for no source byte
  /// (an empty range at the text's start).
  void prepend(const std::string &s);
  /// Replace normalizer: every `from` (left to right, not overlapping)
  /// becomes `to`, standing for the bytes it replaces. False (and the text
  /// unchanged) when the result would be over `maxBytes`.
  bool replace(const std::string &from, const std::string &to, Aligned &tmp,
               size_t maxBytes);
  void materialize();
};

/// NFC (0), NFD (1), NFKC (2), NFKD (3) of `a` in place.
void unicodeNormalize(int form, Aligned &a, Aligned &tmp);

/// HF's added-token helpers: whether `s` ends / starts with a word
/// character (Rust regex's \w), where the whitespace (\s) at the end of
/// `s` starts, and how many bytes of whitespace `s` starts with.
bool endsWithWordChar(std::string_view s);
bool startsWithWordChar(std::string_view s);
size_t lastNonSpaceEnd(std::string_view s);
size_t leadingSpaceBytes(std::string_view s);

/// A Split pre-tokenizer's pattern (a regex as Oniguruma reads it, or a
/// literal string), for finding its matches in UTF-8 text. Thread-safe.
class SplitRegex {
public:
  /// nullptr and `error` for a pattern ICU cannot read or one whose meaning
  /// differs between Oniguruma and ICU. `where` ("FILE: FIELD") names it
  /// in the UserError of a match that backtracks without end.
  static std::shared_ptr<SplitRegex> compile(const std::string &pattern,
                                             bool literal, const std::string &where,
                                             std::string &error);
  ~SplitRegex();
  /// Calls f(begin, end) for each non-empty match, left to right.
  template <typename F> void forEachMatch(std::string_view s, F f) const {
    std::vector<std::pair<uint32_t, uint32_t>> &m = matchBuffer();
    matches(s, m);
    for (auto [b, e] : m)
      f(size_t(b), size_t(e));
  }
  void matches(std::string_view s, std::vector<std::pair<uint32_t, uint32_t>> &out) const;
  struct Impl;

private:
  static std::vector<std::pair<uint32_t, uint32_t>> &matchBuffer();
  std::unique_ptr<Impl> impl_;
};

} // namespace swift::data::tokenizer_text
