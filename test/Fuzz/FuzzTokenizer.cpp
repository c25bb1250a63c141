//===- FuzzTokenizer.cpp - libFuzzer target: tokenizer.json and encoding --===//
//
// The first byte picks the mode:
//  - even: the rest is a tokenizer.json text. Tokenizer::fromJsonText
//    (data/lib/Tokenizer.cpp) must accept it or throw UserError (one
//    line, file and field named). An accepted file encodes a few strings
//    (fixed ones and the input's own tail) with ids in [0, vocabSize()) and
//    offsets in order inside the text, or refuses with a UserError;
//  - odd: the rest is a text for one of the real tokenizers
//    (scripts/fetch_tokenizers.sh; the second byte picks which), read
//    once, before fuzzing starts: ids in range, offsets inside the text, the ids with
//    special tokens those without plus the template's around them, and for
//    the byte-level ones (Llama 3.1, Mistral Nemo: no normalizer) the
//    tokens' bytes the text itself when it is valid UTF-8.
// Any other exception escapes and is a finding, as are crashes, hangs,
// leaks and sanitizer reports (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//
#include "Refusal.h"

#include "swift/Plan/Error.h"
#include "swift/Data/Tokenizer.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <sys/stat.h>

namespace {

using swift::data::Tokenizer;

[[noreturn]] void finding(const char *what) {
  std::fprintf(stderr, "%s\n", what);
  __builtin_trap();
}

void checkEncoding(const Tokenizer &t, const std::string &text,
                   const Tokenizer::Encoding &e) {
  if (e.ids.size() != e.offsets.size())
    finding("ids and offsets differ in number");
  // Ranges in order: several ids may share characters (the bytes of one
  // character by byte_fallback, a composed character), never go back.
  size_t prevBegin = 0, prevEnd = 0;
  for (size_t k = 0; k < e.ids.size(); ++k) {
    if (e.ids[k] < 0 || e.ids[k] >= t.vocabSize())
      finding("an id outside the vocabulary");
    auto [b, end] = e.offsets[k];
    if (b > end || end > text.size())
      finding("an offset outside the text");
    if (b < prevBegin || end < prevEnd)
      finding("offsets out of order");
    prevBegin = b;
    prevEnd = end;
  }
}

/// Whether `s` is well-formed UTF-8 (written again here: the fuzz target
/// checks the tokenizer, not with it).
bool validUtf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
             : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (!n || i + n > s.size())
      return false;
    for (size_t k = 1; k < n; ++k) {
      unsigned char d = s[i + k];
      unsigned lo = 0x80, hi = 0xBF;
      if (k == 1 && c == 0xE0) lo = 0xA0;
      if (k == 1 && c == 0xED) hi = 0x9F;
      if (k == 1 && c == 0xF0) lo = 0x90;
      if (k == 1 && c == 0xF4) hi = 0x8F;
      if (d < lo || d > hi)
        return false;
    }
    i += n;
  }
  return true;
}

/// GPT-2's byte-level characters back to bytes.
const std::map<std::string, char> &byteOf() {
  static const std::map<std::string, char> m = [] {
    std::map<std::string, char> out;
    for (int b = 0, n = 0; b < 256; ++b) {
      bool kept = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      unsigned c = kept ? unsigned(b) : unsigned(256 + n++);
      std::string u;
      if (c < 0x80) {
        u += char(c);
      } else {
        u += char(0xC0 | (c >> 6));
        u += char(0x80 | (c & 0x3F));
      }
      out[u] = char(b);
    }
    return out;
  }();
  return m;
}

const char *const kReal[] = {"qwen3", "qwen2_5", "llama3_1", "llama2", "mistral_nemo"};

const Tokenizer &real(size_t which) {
  static std::unique_ptr<Tokenizer> loaded[5];
  if (!loaded[which]) {
    std::string path = std::string(SWIFT_TOKENIZERS_DIR) + "/" + kReal[which] + "/tokenizer.json";
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      std::fprintf(stderr, "%s is missing: run scripts/fetch_tokenizers.sh\n", path.c_str());
      std::abort();
    }
    loaded[which] = std::make_unique<Tokenizer>(Tokenizer::load(path));
  }
  return *loaded[which];
}

void fuzzFile(const std::string &json) {
  std::unique_ptr<Tokenizer> t;
  try {
    t = std::make_unique<Tokenizer>(Tokenizer::fromJsonText(json, "fuzz/tokenizer.json"));
  } catch (const swift::plan::UserError &e) {
    swift::fuzz::checkRefusal(e.what());
    return;
  }
  const std::string texts[] = {"", "Hello  world!\n\t123 <s></s>", "caf\xC3\xA9 e\xCC\x81 \xE4\xB8\xAD",
                               "\xFF\xC3(", json.substr(json.size() > 200 ? json.size() - 200 : 0)};
  for (const std::string &text : texts)
    for (bool special : {false, true}) {
      try {
        checkEncoding(*t, text, t->encode(text, special));
      } catch (const swift::plan::UserError &e) {
        swift::fuzz::checkRefusal(e.what());
      }
    }
  if (t->vocabSize() > 0) {
    t->idToToken(t->vocabSize() - 1);
    t->isSpecial(0);
  }
}

void fuzzText(size_t which, const std::string &text) {
  const Tokenizer &t = real(which);
  Tokenizer::Encoding plain = t.encode(text, false), special = t.encode(text, true);
  checkEncoding(t, text, plain);
  checkEncoding(t, text, special);
  // With special tokens: the same ids with the template's around them.
  Tokenizer::Encoding none = t.encode("", true);
  if (special.ids.size() != plain.ids.size() + none.ids.size())
    finding("special tokens are not the template's around the text's ids");
  size_t before = 0;
  while (before < special.ids.size() && special.offsets[before] == std::pair<size_t, size_t>(0, 0) &&
         t.isSpecial(special.ids[before]) && before < none.ids.size())
    ++before;
  for (size_t k = 0; k < plain.ids.size(); ++k)
    if (special.ids[before + k] != plain.ids[k])
      finding("special tokens change the text's ids");
  if ((which == 2 || which == 4) && validUtf8(text)) {
    std::string bytes;
    for (int64_t id : plain.ids) {
      const std::string &tok = t.idToToken(id);
      if (t.isSpecial(id)) { // an added token (all are special in these two)
        bytes += tok;
        continue;
      }
      for (size_t i = 0; i < tok.size();) {
        size_t len = (static_cast<unsigned char>(tok[i]) >= 0xC0) ? 2 : 1;
        auto it = byteOf().find(tok.substr(i, len));
        if (it == byteOf().end())
          finding("a byte-level token of a character outside GPT-2's map");
        bytes += it->second;
        i += len;
      }
    }
    if (bytes != text)
      finding("the tokens' bytes are not the text");
  }
}

} // namespace

// The real tokenizers are read before fuzzing (10 MB of JSON each: seconds
// under ASan, past the per-input time limit).
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  for (size_t k = 0; k < 5; ++k)
    real(k);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    fuzzFile(rest);
  } else {
    if (rest.empty())
      return 0;
    size_t which = static_cast<unsigned char>(rest[0]) % 5;
    fuzzText(which, rest.substr(1));
  }
  return 0;
}
