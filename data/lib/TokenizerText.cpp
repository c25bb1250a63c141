//===- TokenizerText.cpp - UTF-8, Unicode and regexes for the tokenizer ---===//

#include "TokenizerText.h"

#include "swift/Plan/Error.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uniset.h>
#include <unicode/regex.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>
#include <unicode/utf8.h>

#include <atomic>
#include <unordered_map>

namespace swift::data::tokenizer_text {


namespace {

/// The length of the valid UTF-8 sequence at s[i], or 0 and in `bad` the
/// length of the maximal invalid subpart there (WHATWG's decoder).
size_t validAt(std::string_view s, size_t i, size_t &bad) {
  uint8_t b = uint8_t(s[i]);
  if (b < 0x80)
    return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0)
      lo = 0xA0;
    if (b == 0xED)
      hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0)
      lo = 0x90;
    if (b == 0xF4)
      hi = 0x8F;
  } else {
    bad = 1;
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) {
      bad = k;
      return 0;
    }
    uint8_t c = uint8_t(s[i + k]);
    if (c < lo || c > hi) {
      bad = k;
      return 0;
    }
    lo = 0x80;
    hi = 0xBF;
  }
  return need + 1;
}

bool isWhiteSpace(UChar32 c) { return u_hasBinaryProperty(c, UCHAR_WHITE_SPACE); }

/// Rust regex's Unicode \w.
bool isWordChar(UChar32 c) {
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL))
    return true;
  int8_t t = u_charType(c);
  return t == U_NON_SPACING_MARK || t == U_ENCLOSING_MARK ||
         t == U_COMBINING_SPACING_MARK || t == U_DECIMAL_DIGIT_NUMBER ||
         t == U_CONNECTOR_PUNCTUATION;
}

UChar32 lastChar(std::string_view s, size_t &start) {
  int32_t i = int32_t(s.size());
  UChar32 c;
  U8_PREV_OR_FFFD(reinterpret_cast<const uint8_t *>(s.data()), 0, i, c);
  start = size_t(i);
  return c;
}

} // namespace

bool validUtf8(std::string_view s) {
  for (size_t i = 0, bad = 0; i < s.size();) {
    if (uint8_t(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = validAt(s, i, bad);
    if (!n)
      return false;
    i += n;
  }
  return true;
}

void replaceInvalidUtf8(std::string_view s, std::string &out,
                        std::vector<uint32_t> &begin, std::vector<uint32_t> &end) {
  out.clear();
  begin.clear();
  end.clear();
  static const char kFFFD[] = "\xEF\xBF\xBD";
  for (size_t i = 0, bad = 0; i < s.size();) {
    size_t n = validAt(s, i, bad);
    if (n) {
      out.append(s.data() + i, n);
      begin.insert(begin.end(), n, uint32_t(i));
      end.insert(end.end(), n, uint32_t(i + n));
      i += n;
    } else {
      out.append(kFFFD, 3);
      begin.insert(begin.end(), 3, uint32_t(i));
      end.insert(end.end(), 3, uint32_t(i + bad));
      i += bad;
    }
  }
}

//===----------------------------------------------------------------------===//
// Aligned
//===----------------------------------------------------------------------===//

void Aligned::assign(std::string_view s, size_t at) {
  text.assign(s.data(), s.size());
  identity = true;
  base = at;
  sourceEnd = at + s.size();
  begin.clear();
  end.clear();
}

void Aligned::materialize() {
  if (!identity)
    return;
  begin.resize(text.size());
  end.resize(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    begin[i] = uint32_t(base + i);
    end[i] = uint32_t(base + i + 1);
  }
  identity = false;
}

std::pair<size_t, size_t> Aligned::source(size_t b, size_t e) const {
  if (identity)
    return {base + b, base + e};
  if (b >= e) {
    size_t p = b < text.size() ? begin[b] : sourceEnd;
    return {p, p};
  }
  return {begin[b], end[e - 1]};
}

void Aligned::prepend(const std::string &s) {
  if (text.empty() || s.empty())
    return;
  materialize();
  // An empty range where the text starts: a token of it alone covers no
  // input, one that goes on covers the input it goes on over.
  uint32_t b = begin[0];
  text.insert(0, s);
  begin.insert(begin.begin(), s.size(), b);
  end.insert(end.begin(), s.size(), b);
}

bool Aligned::replace(const std::string &from, const std::string &to, Aligned &tmp,
                      size_t maxBytes) {
  size_t at = text.find(from);
  if (at == std::string::npos)
    return true;
  if (to.size() > from.size()) {
    size_t count = 0;
    for (size_t k = at; k != std::string::npos; k = text.find(from, k + from.size()))
      ++count;
    if (text.size() + count * (to.size() - from.size()) > maxBytes)
      return false;
  }
  materialize();
  tmp.text.clear();
  tmp.begin.clear();
  tmp.end.clear();
  size_t i = 0;
  while (at != std::string::npos) {
    tmp.text.append(text, i, at - i);
    tmp.begin.insert(tmp.begin.end(), begin.begin() + i, begin.begin() + at);
    tmp.end.insert(tmp.end.end(), end.begin() + i, end.begin() + at);
    uint32_t b = begin[at], e = end[at + from.size() - 1];
    tmp.text += to;
    tmp.begin.insert(tmp.begin.end(), to.size(), b);
    tmp.end.insert(tmp.end.end(), to.size(), e);
    i = at + from.size();
    at = text.find(from, i);
  }
  tmp.text.append(text, i, std::string::npos);
  tmp.begin.insert(tmp.begin.end(), begin.begin() + i, begin.end());
  tmp.end.insert(tmp.end.end(), end.begin() + i, end.end());
  text.swap(tmp.text);
  begin.swap(tmp.begin);
  end.swap(tmp.end);
  return true;
}

namespace {

struct OnigCategory {
  const char *name; // "L", "Lu", ...
  const char *set;  // its members as ICU set ranges, "\\x{41}-\\x{5A}..."
};
#include "TokenizerUnicode.inc"

/// ICU's normalizers as HF's behave: HF's tables are of an older Unicode
/// version, so the code points ICU would change (a combining class, a
/// decomposition) that HF does not know (kHFNormalizationKnown) are left
/// as they are (FilteredNormalizer2), and so is the second part of a
/// composition HF does not know (ICU would compose U+11935 U+11930 into
/// U+11938) unless a known composition uses it too.
struct HFNormalizers {
  icu::UnicodeSet filter;
  std::unique_ptr<icu::FilteredNormalizer2> forms[4];
  HFNormalizers() {
    UErrorCode status = U_ZERO_ERROR;
    icu::UnicodeSet known(icu::UnicodeString::fromUTF8(kHFNormalizationKnown), status);
    const icu::Normalizer2 *nfkd = icu::Normalizer2::getNFKDInstance(status);
    const icu::Normalizer2 *nfc = icu::Normalizer2::getNFCInstance(status);
    SWIFT_ASSERT(U_SUCCESS(status), "ICU normalizer tables: ", u_errorName(status));
    icu::UnicodeSet unknown, knownParts;
    icu::UnicodeString d;
    for (UChar32 c = 0; c <= 0x10FFFF; ++c)
      if (known.contains(c) && nfc->getRawDecomposition(c, d) && d.countChar32() == 2)
        knownParts.add(d.char32At(d.moveIndex32(0, 1)));
    for (UChar32 c = 0; c <= 0x10FFFF; ++c) {
      if (known.contains(c))
        continue;
      if (u_getCombiningClass(c) == 0 && !nfkd->getDecomposition(c, d))
        continue;
      unknown.add(c);
      if (nfc->getRawDecomposition(c, d) && d.countChar32() == 2) {
        UChar32 second = d.char32At(d.moveIndex32(0, 1));
        if (!knownParts.contains(second))
          unknown.add(second);
      }
    }
    filter = unknown;
    filter.complement();
    filter.freeze();
    const icu::Normalizer2 *base[4] = {
        icu::Normalizer2::getNFCInstance(status), icu::Normalizer2::getNFDInstance(status),
        icu::Normalizer2::getNFKCInstance(status), icu::Normalizer2::getNFKDInstance(status)};
    SWIFT_ASSERT(U_SUCCESS(status), "ICU normalizers: ", u_errorName(status));
    for (int k = 0; k < 4; ++k)
      forms[k] = std::make_unique<icu::FilteredNormalizer2>(*base[k], filter);
  }
};

} // namespace

void unicodeNormalize(int form, Aligned &a, Aligned &tmp) {
  static const HFNormalizers hf;
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2 *n = hf.forms[form].get();
  if (n->isNormalizedUTF8(icu::StringPiece(a.text.data(), int32_t(a.text.size())), status) &&
      U_SUCCESS(status))
    return;
  status = U_ZERO_ERROR;
  a.materialize();
  tmp.text.clear();
  tmp.begin.clear();
  tmp.end.clear();
  // Chunks between normalization boundaries, each normalized on its own:
  // its output stands for the whole chunk's source bytes when it changed.
  const uint8_t *s = reinterpret_cast<const uint8_t *>(a.text.data());
  int32_t len = int32_t(a.text.size());
  std::string out;
  auto flush = [&](int32_t b, int32_t e) {
    if (b >= e)
      return;
    out.clear();
    icu::StringByteSink<std::string> sink(&out);
    UErrorCode st = U_ZERO_ERROR;
    n->normalizeUTF8(0, icu::StringPiece(a.text.data() + b, e - b), sink, nullptr, st);
    SWIFT_ASSERT(U_SUCCESS(st), "ICU normalize: ", u_errorName(st));
    if (out.size() == size_t(e - b) && a.text.compare(size_t(b), size_t(e - b), out) == 0) {
      tmp.text.append(out);
      tmp.begin.insert(tmp.begin.end(), a.begin.begin() + b, a.begin.begin() + e);
      tmp.end.insert(tmp.end.end(), a.end.begin() + b, a.end.begin() + e);
    } else {
      tmp.text.append(out);
      tmp.begin.insert(tmp.begin.end(), out.size(), a.begin[size_t(b)]);
      tmp.end.insert(tmp.end.end(), out.size(), a.end[size_t(e - 1)]);
    }
  };
  int32_t chunk = 0;
  for (int32_t i = 0; i < len;) {
    int32_t at = i;
    UChar32 c;
    U8_NEXT_OR_FFFD(s, i, len, c);
    if (at > chunk && n->hasBoundaryBefore(c)) {
      flush(chunk, at);
      chunk = at;
    }
  }
  flush(chunk, len);
  a.text.swap(tmp.text);
  a.begin.swap(tmp.begin);
  a.end.swap(tmp.end);
}

bool endsWithWordChar(std::string_view s) {
  if (s.empty())
    return false;
  size_t start;
  return isWordChar(lastChar(s, start));
}

bool startsWithWordChar(std::string_view s) {
  if (s.empty())
    return false;
  int32_t i = 0;
  UChar32 c;
  U8_NEXT_OR_FFFD(reinterpret_cast<const uint8_t *>(s.data()), i, int32_t(s.size()), c);
  return isWordChar(c);
}

size_t lastNonSpaceEnd(std::string_view s) {
  while (!s.empty()) {
    size_t start;
    if (!isWhiteSpace(lastChar(s, start)))
      return s.size();
    s = s.substr(0, start);
  }
  return 0;
}

size_t leadingSpaceBytes(std::string_view s) {
  int32_t i = 0, len = int32_t(s.size());
  while (i < len) {
    int32_t at = i;
    UChar32 c;
    U8_NEXT_OR_FFFD(reinterpret_cast<const uint8_t *>(s.data()), i, len, c);
    if (!isWhiteSpace(c))
      return size_t(at);
  }
  return s.size();
}

//===----------------------------------------------------------------------===//
// SplitRegex
//===----------------------------------------------------------------------===//

struct SplitRegex::Impl {
  std::shared_ptr<icu::RegexPattern> pattern;
  uint64_t uid;
  std::string where;
};

namespace {

/// The ranges of general category `name` as HF tokenizers' Oniguruma has
/// it (Unicode 16.0), or nullptr for a name not in the table.
const char *onigCategory(const std::string &name) {
  for (const OnigCategory &c : kOnigCategories)
    if (name == c.name)
      return c.set;
  return nullptr;
}

/// Oniguruma's pattern in ICU's syntax: \s and \S are Unicode White_Space
/// in Oniguruma (ICU's \s lacks U+000B and U+0085); the general categories
/// \p{L}, \p{N}, \p{Lu}, ... (and \pL, \P{L}) become the explicit sets of
/// the Unicode version HF's Oniguruma has (TokenizerUnicode.inc), not ICU's
/// own. Constructs whose meaning differs and that this does not translate
/// are refused.
bool translate(const std::string &p, std::string &out, std::string &error) {
  out.clear();
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 2 < p.size() && (p[i + 1] == 'p' || p[i + 1] == 'P')) {
      std::string name;
      size_t end;
      if (p[i + 2] == '{') {
        size_t close = p.find('}', i + 3);
        name = close == std::string::npos ? "" : p.substr(i + 3, close - i - 3);
        end = close;
      } else {
        name = p.substr(i + 2, 1);
        end = i + 2;
      }
      if (const char *set = onigCategory(name)) {
        out += p[i + 1] == 'p' ? "[" : "[^";
        out += set;
        out += "]";
        i = end;
        continue;
      }
    }
    if (p[i] != '\\' || i + 1 == p.size()) {
      if (p[i] == '[' && i + 1 < p.size() && p[i + 1] == ':') {
        error = "POSIX bracket classes ([:alpha:]) are not supported";
        return false;
      }
      out += p[i];
      continue;
    }
    char c = p[++i];
    switch (c) {
    case 's':
      out += "\\p{White_Space}";
      break;
    case 'S':
      out += "\\P{White_Space}";
      break;
    case 'w':
    case 'W':
    case 'b':
    case 'B':
    case 'h':
    case 'H':
    case 'G':
    case 'X':
    case 'R':
    case 'K':
    case 'g':
    case 'k':
      error = std::string("the regex escape \\") + c +
              " is not supported (its meaning in Oniguruma, HF tokenizers' "
              "regex engine, differs from ICU's)";
      return false;
    default:
      out += '\\';
      out += c;
    }
  }
  return true;
}

std::atomic<uint64_t> nextUid{1};

} // namespace

std::shared_ptr<SplitRegex> SplitRegex::compile(const std::string &pattern,
                                                bool literal, const std::string &where,
                                                std::string &error) {
  std::string translated;
  if (!literal && !translate(pattern, translated, error))
    return nullptr;
  if (literal)
    translated = pattern;
  UErrorCode status = U_ZERO_ERROR;
  UParseError pe{};
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(translated);
  std::shared_ptr<icu::RegexPattern> compiled(
      icu::RegexPattern::compile(u, literal ? UREGEX_LITERAL : 0, pe, status));
  if (U_FAILURE(status) || !compiled) {
    error = std::string("the regex does not compile: ") + u_errorName(status) +
            (pe.offset >= 0 ? " at character " + std::to_string(pe.offset + 1) : "");
    return nullptr;
  }
  auto r = std::shared_ptr<SplitRegex>(new SplitRegex());
  r->impl_ = std::make_unique<Impl>(Impl{std::move(compiled), nextUid++, where});
  return r;
}

SplitRegex::~SplitRegex() = default;

std::vector<std::pair<uint32_t, uint32_t>> &SplitRegex::matchBuffer() {
  thread_local std::vector<std::pair<uint32_t, uint32_t>> m;
  return m;
}

void SplitRegex::matches(std::string_view s,
                         std::vector<std::pair<uint32_t, uint32_t>> &out) const {
  out.clear();
  // One matcher per pattern and thread (a matcher is not thread-safe); it
  // keeps its pattern alive.
  struct Entry {
    std::shared_ptr<icu::RegexPattern> pattern;
    std::unique_ptr<icu::RegexMatcher> matcher;
  };
  thread_local std::unordered_map<uint64_t, Entry> matchers;
  auto it = matchers.find(impl_->uid);
  if (it == matchers.end()) {
    if (matchers.size() > 64)
      matchers.clear();
    UErrorCode status = U_ZERO_ERROR;
    Entry e{impl_->pattern, std::unique_ptr<icu::RegexMatcher>(impl_->pattern->matcher(status))};
    SWIFT_ASSERT(U_SUCCESS(status), "ICU matcher: ", u_errorName(status));
    // A pattern that backtracks without end (a fuzzer's, a user's) must
    // not hang the data pipeline: ICU stops it (the limit is in its match
    // steps, about a second) or at 64 MiB of backtracking stack.
    e.matcher->setTimeLimit(1000, status);
    e.matcher->setStackLimit(64 << 20, status);
    SWIFT_ASSERT(U_SUCCESS(status), "ICU matcher limits: ", u_errorName(status));
    it = matchers.emplace(impl_->uid, std::move(e)).first;
  }
  icu::RegexMatcher &m = *it->second.matcher;
  UErrorCode status = U_ZERO_ERROR;
  // ICU matches UTF-16 text about twice as fast as UTF-8 through a UText:
  // the text in UTF-16, with each UTF-16 unit's byte offset.
  thread_local icu::UnicodeString u;
  thread_local std::vector<uint32_t> byteAt;
  u.remove();
  byteAt.clear();
  {
    const uint8_t *p = reinterpret_cast<const uint8_t *>(s.data());
    int32_t len = int32_t(s.size());
    for (int32_t i = 0; i < len;) {
      int32_t at = i;
      UChar32 c;
      U8_NEXT_OR_FFFD(p, i, len, c);
      u.append(c);
      byteAt.push_back(uint32_t(at));
      if (c > 0xFFFF)
        byteAt.push_back(uint32_t(at));
    }
    byteAt.push_back(uint32_t(len));
  }
  m.reset(u);
  while (m.find(status) && U_SUCCESS(status)) {
    int32_t b = m.start(status), e = m.end(status);
    if (e > b)
      out.push_back({byteAt[size_t(b)], byteAt[size_t(e)]});
  }
  m.reset(icu::UnicodeString());
  SWIFT_CHECK(status != U_REGEX_TIME_OUT && status != U_REGEX_STACK_OVERFLOW,
              impl_->where, ": the regex backtracks without end on a text of ",
              s.size(), " bytes (", u_errorName(status), "); not supported");
  SWIFT_ASSERT(U_SUCCESS(status), "ICU regex: ", u_errorName(status));
}

} // namespace swift::data::tokenizer_text
