//===- Tokenizer.cpp - HF tokenizer.json: reader and encoder --------------===//
//
// The pipeline of HF tokenizers' TokenizerImpl::encode, step by step, with
// the same semantics (the Rust sources are cited by their function names):
//  1. text that is not valid UTF-8 gets U+FFFD per maximal invalid subpart;
//  2. AddedVocabulary::extract_and_normalize: the added tokens with
//     normalized=false are found in the raw text (leftmost-longest, as its
//     aho-corasick), each text between them normalized on its own, then the
//     normalized=true ones found in the normalized text;
//  3. the pre-tokenizer splits each text into pieces;
//  4. the model (BPE) turns each piece into ids;
//  5. the post-processor adds its template's special tokens.
// Offsets follow every step: each normalized byte knows the source bytes
// it came from (TokenizerText.h's Aligned).
//
//===----------------------------------------------------------------------===//

#include "swift/Data/Tokenizer.h"

#include "TokenizerText.h"

#include "swift/Plan/Json.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <queue>
#include <unordered_map>

namespace swift::data {
namespace {

using nlohmann::json;
using plan::briefText;
using plan::JsonField;
using namespace tokenizer_text;

/// Ids above this are refused: a vocabulary is a table of rows (the
/// largest real ones have ~262k), and idToToken keeps one per id.
constexpr int64_t kMaxId = (int64_t(1) << 22) - 1;
/// The most bytes one encode() takes (offsets are 32-bit inside).
constexpr size_t kMaxTextBytes = size_t(128) << 20;
/// tokenizer.json files are 2-35 MB; a bound for the reader.
constexpr uint64_t kMaxTokenizerBytes = uint64_t(256) << 20;

/// A hash map from 64-bit keys to 64-bit values, open addressing: the BPE
/// merge table, looked up for every pair of every piece.
class U64Map {
public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n)
      cap *= 2;
    keys_.assign(cap, kEmpty);
    values_.assign(cap, 0);
    mask_ = cap - 1;
  }
  void set(uint64_t key, uint64_t value) {
    if (2 * (size_ + 1) > keys_.size()) {
      size_t want = std::max<size_t>(16, keys_.size()); // twice the slots
      std::vector<uint64_t> k = std::move(keys_), v = std::move(values_);
      reserve(want);
      size_ = 0;
      for (size_t i = 0; i < k.size(); ++i)
        if (k[i] != kEmpty)
          set(k[i], v[i]);
    }
    size_t i = hash(key) & mask_;
    while (keys_[i] != kEmpty && keys_[i] != key)
      i = (i + 1) & mask_;
    if (keys_[i] == kEmpty)
      ++size_;
    keys_[i] = key;
    values_[i] = value;
  }
  const uint64_t *get(uint64_t key) const {
    if (keys_.empty())
      return nullptr;
    size_t i = hash(key) & mask_;
    while (keys_[i] != kEmpty) {
      if (keys_[i] == key)
        return &values_[i];
      i = (i + 1) & mask_;
    }
    return nullptr;
  }

private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static uint64_t hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
  }
  std::vector<uint64_t> keys_, values_;
  size_t mask_ = 0, size_ = 0;
};

/// Strings to ids without allocating a key per lookup.
using StrMap = std::unordered_map<std::string_view, int64_t>;

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool lstrip = false, rstrip = false, singleWord = false, normalized = false,
       special = false;
};

/// The added tokens of one kind (normalized or not) as a byte trie, for
/// AddedVocabulary::find_matches' leftmost-longest search.
struct AddedMatcher {
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next; // sorted by byte
    int32_t token = -1; // index into Impl::added
  };
  std::vector<Node> nodes{1};
  bool firstByte[256] = {};

  bool empty() const { return nodes.size() == 1; }
  void add(std::string_view s, int32_t token) {
    int32_t n = 0;
    for (unsigned char c : s) {
      auto &next = nodes[n].next;
      auto it = std::lower_bound(next.begin(), next.end(),
                                 std::pair<uint8_t, int32_t>(c, -1));
      if (it != next.end() && it->first == c) {
        n = it->second;
        continue;
      }
      int32_t child = int32_t(nodes.size());
      nodes[n].next.insert(it, {c, child}); // invalidates `next`: not used after
      nodes.emplace_back();
      n = child;
    }
    if (nodes[n].token < 0)
      nodes[n].token = token;
    firstByte[uint8_t(s[0])] = true;
  }
  /// The longest token starting at `at`: {token, length}, or {-1, 0}.
  std::pair<int32_t, size_t> longestAt(std::string_view s, size_t at) const {
    std::pair<int32_t, size_t> best{-1, 0};
    int32_t n = 0;
    for (size_t i = at; i < s.size(); ++i) {
      const auto &next = nodes[n].next;
      auto it = std::lower_bound(next.begin(), next.end(),
                                 std::pair<uint8_t, int32_t>(uint8_t(s[i]), -1));
      if (it == next.end() || it->first != uint8_t(s[i]))
        break;
      n = it->second;
      if (nodes[n].token >= 0)
        best = {nodes[n].token, i + 1 - at};
    }
    return best;
  }
};

enum class NormKind { NFC, NFD, NFKC, NFKD, Prepend, Replace };
struct NormStep {
  NormKind kind;
  std::string a, b; // Prepend: a; Replace: a -> b
};

enum class Behavior { Isolated, Removed };
struct PreStep {
  bool byteLevel = false;
  // ByteLevel
  bool addPrefixSpace = false, useRegex = true;
  // Split (and ByteLevel's own regex when useRegex)
  std::shared_ptr<SplitRegex> regex;
  Behavior behavior = Behavior::Isolated;
};

struct Piece {
  uint32_t begin, end; // in the normalized text
  bool prefix;         // a space the ByteLevel pre-tokenizer put before it
};

/// What one thread reuses from call to call: no allocation in the loop.
struct Scratch {
  Aligned norm, tmp;
  std::vector<Piece> pieces, nextPieces;
  std::string word;            // the piece in the model's alphabet
  std::vector<uint32_t> wordAt; // byte of `word` -> normalized byte
  struct Symbol {
    int32_t id, prev, next;
    uint32_t len; // bytes of `word`
  };
  std::vector<Symbol> symbols;
  struct Merge {
    uint32_t pos, rank, id;
    bool operator<(const Merge &o) const { // the heap's top: lowest rank, then pos
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::vector<Merge> heap;
};

Scratch &scratch() {
  thread_local Scratch s;
  return s;
}

} // namespace

struct Tokenizer::Impl {
  std::string file;
  // model
  std::vector<std::string> tokens; // by id (added tokens override)
  std::deque<std::string> vocabKeys; // the keys of `vocab` (stable)
  StrMap vocab;                      // the model's vocabulary
  U64Map merges;                     // (left << 32 | right) -> (rank << 32 | id)
  int64_t unkId = -1;
  bool fuseUnk = false, byteFallback = false, ignoreMerges = false;
  int64_t byteFallbackIds[256]; // <0xNN> tokens, -1 if none
  // byte-level
  bool byteLevel = false;
  int64_t byteIds[256]; // the id of each byte's character, -1 if none
  std::string byteChars[256];
  std::array<uint8_t, 324> charByte{}; // a byte's character -> the byte
  uint64_t uid = 0; // this tokenizer in the threads' piece caches
  // added tokens
  std::deque<AddedToken> added;
  StrMap addedByContent;
  AddedMatcher rawMatcher, normMatcher;
  std::vector<bool> special; // by id
  // the pipeline
  std::vector<NormStep> normalizers;
  std::vector<PreStep> preTokenizers;
  std::vector<int64_t> templatePrefix, templateSuffix;
  int64_t vocabSize = 0;

  void normalize(std::string_view s, size_t base, Aligned &out) const;
  void encodeText(std::string_view src, size_t begin, size_t end,
                  std::vector<int64_t> &ids,
                  std::vector<std::pair<size_t, size_t>> *offsets) const;
  void encodePieces(const Aligned &norm, uint32_t begin, uint32_t end,
                    std::vector<int64_t> &ids,
                    std::vector<std::pair<size_t, size_t>> *offsets) const;
  void bpe(const Aligned &norm, const Piece &piece, std::vector<int64_t> &ids,
           std::vector<std::pair<size_t, size_t>> *offsets) const;
  template <typename Emit>
  void findAdded(const AddedMatcher &m, std::string_view s, Emit emit) const;
};

namespace {

//===----------------------------------------------------------------------===//
// Reading tokenizer.json
//===----------------------------------------------------------------------===//

bool optBool(const JsonField &f, const char *key, bool dflt) {
  if (!f.has(key) || f.j.at(key).is_null())
    return dflt;
  return f.at(key).boolean();
}

std::string typeOf(const JsonField &f) {
  f.object();
  return f.at("type").string();
}

[[noreturn]] void unsupported(const JsonField &f, const std::string &what,
                              const std::string &type,
                              const std::string &supported) {
  JsonField{f.j, f.where + ".type", f.file}.fail(
      "unsupported " + what + " \"" + briefText(type, 40) +
      "\" (swift implements " + supported + "; it does not approximate others)");
}

/// A pattern field {"String": s} or {"Regex": r}: {isRegex, text}.
std::pair<bool, std::string> patternOf(const JsonField &f) {
  f.object();
  if (f.size() != 1)
    f.fail("expected one of {\"String\": ...} or {\"Regex\": ...}");
  if (f.has("String"))
    return {false, f.at("String").string()};
  if (f.has("Regex"))
    return {true, f.at("Regex").string()};
  f.fail("expected one of {\"String\": ...} or {\"Regex\": ...}, got key \"" +
         briefText(f.j.begin().key(), 40) + "\"");
}

void readNormalizer(const JsonField &f, std::vector<NormStep> &out) {
  if (f.j.is_null())
    return;
  std::string type = typeOf(f);
  if (type == "Sequence") {
    f.onlyKeys({"type", "normalizers"});
    JsonField list = f.at("normalizers");
    list.array();
    for (size_t i = 0; i < list.size(); ++i)
      readNormalizer(list.index(i), out);
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    f.onlyKeys({"type"});
    out.push_back({type == "NFC"    ? NormKind::NFC
                   : type == "NFD"  ? NormKind::NFD
                   : type == "NFKC" ? NormKind::NFKC
                                    : NormKind::NFKD,
                   {},
                   {}});
  } else if (type == "Prepend") {
    f.onlyKeys({"type", "prepend"});
    out.push_back({NormKind::Prepend, f.at("prepend").string(), {}});
  } else if (type == "Replace") {
    f.onlyKeys({"type", "pattern", "content"});
    auto [isRegex, pattern] = patternOf(f.at("pattern"));
    if (isRegex)
      f.at("pattern").fail("a Replace normalizer with a Regex pattern is not "
                           "supported (a String pattern is)");
    if (pattern.empty())
      f.at("pattern").at("String").fail("empty pattern");
    out.push_back({NormKind::Replace, pattern, f.at("content").string()});
  } else {
    unsupported(f, "normalizer", type,
                "NFC, NFD, NFKC, NFKD, Prepend, Replace of a String, Sequence");
  }
}

void readPreTokenizer(const JsonField &f, std::vector<PreStep> &out) {
  if (f.j.is_null())
    return;
  std::string type = typeOf(f);
  if (!out.empty() && out.back().byteLevel)
    f.fail("a pre-tokenizer after ByteLevel is not supported (it would see "
           "ByteLevel's characters, not the text)");
  if (type == "Sequence") {
    f.onlyKeys({"type", "pretokenizers"});
    JsonField list = f.at("pretokenizers");
    list.array();
    for (size_t i = 0; i < list.size(); ++i)
      readPreTokenizer(list.index(i), out);
  } else if (type == "Split") {
    f.onlyKeys({"type", "pattern", "behavior", "invert"});
    PreStep step;
    auto [isRegex, pattern] = patternOf(f.at("pattern"));
    JsonField pf = f.at("pattern").at(isRegex ? "Regex" : "String");
    if (pattern.empty())
      pf.fail("empty pattern");
    std::string error;
    step.regex = SplitRegex::compile(pattern, !isRegex, f.file + ": " + pf.where, error);
    if (!step.regex)
      pf.fail(error);
    std::string behavior = f.at("behavior").string();
    if (behavior == "Isolated")
      step.behavior = Behavior::Isolated;
    else if (behavior == "Removed")
      step.behavior = Behavior::Removed;
    else
      f.at("behavior").fail("unsupported behavior \"" + briefText(behavior, 40) +
                            "\" (swift implements Isolated and Removed)");
    if (optBool(f, "invert", false))
      f.at("invert").fail("invert true is not supported");
    out.push_back(std::move(step));
  } else if (type == "ByteLevel") {
    f.onlyKeys({"type", "add_prefix_space", "trim_offsets", "use_regex"});
    PreStep step;
    step.byteLevel = true;
    step.addPrefixSpace = optBool(f, "add_prefix_space", true);
    optBool(f, "trim_offsets", true); // offsets only: read for its type
    step.useRegex = optBool(f, "use_regex", true);
    if (step.useRegex) {
      // GPT-2's pattern, as ByteLevel's RE in HF tokenizers.
      std::string error;
      step.regex = SplitRegex::compile(
          R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
          false, f.file + ": " + f.where + " (GPT-2's regex)", error);
      SWIFT_ASSERT(step.regex, error);
    }
    out.push_back(std::move(step));
  } else {
    unsupported(f, "pre-tokenizer", type, "Split, ByteLevel, Sequence");
  }
}

/// TemplateProcessing's `single`: the ids before and after the text.
void readTemplate(const JsonField &f, Tokenizer::Impl &t) {
  f.onlyKeys({"type", "single", "pair", "special_tokens"});
  JsonField single = f.at("single");
  single.array();
  JsonField specials = f.at("special_tokens");
  specials.object();
  bool seenA = false;
  for (size_t i = 0; i < single.size(); ++i) {
    JsonField item = single.index(i);
    item.object();
    if (item.size() != 1)
      item.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    if (item.has("Sequence")) {
      JsonField seq = item.at("Sequence");
      seq.onlyKeys({"id", "type_id"});
      if (seq.at("id").string() != "A")
        seq.at("id").fail("the single template can only hold sequence A");
      if (seenA)
        item.fail("sequence A twice");
      seenA = true;
    } else if (item.has("SpecialToken")) {
      JsonField st = item.at("SpecialToken");
      st.onlyKeys({"id", "type_id"});
      std::string name = st.at("id").string();
      if (!specials.j.contains(name))
        st.at("id").fail("\"" + briefText(name, 40) +
                         "\" is not in the post-processor's special_tokens");
      JsonField def{specials.j.at(name), specials.where + "[\"" + briefText(name, 40) + "\"]",
                    f.file};
      def.onlyKeys({"id", "ids", "tokens"});
      JsonField idsF = def.at("ids");
      idsF.array();
      for (size_t k = 0; k < idsF.size(); ++k) {
        int64_t id = idsF.index(k).integer(0, kMaxId);
        if (id >= t.vocabSize)
          idsF.index(k).fail("id " + std::to_string(id) +
                             " is not in the vocabulary (its size is " +
                             std::to_string(t.vocabSize) + ")");
        (seenA ? t.templateSuffix : t.templatePrefix).push_back(id);
      }
    } else {
      item.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
  }
  if (!seenA)
    single.fail("the template has no sequence A (the text)");
}

void readPostProcessor(const JsonField &f, Tokenizer::Impl &t, bool &haveTemplate) {
  if (f.j.is_null())
    return;
  std::string type = typeOf(f);
  if (type == "Sequence") {
    f.onlyKeys({"type", "processors"});
    JsonField list = f.at("processors");
    list.array();
    for (size_t i = 0; i < list.size(); ++i)
      readPostProcessor(list.index(i), t, haveTemplate);
  } else if (type == "ByteLevel") {
    // Trims offsets; changes no id.
    f.onlyKeys({"type", "add_prefix_space", "trim_offsets", "use_regex"});
  } else if (type == "TemplateProcessing") {
    if (haveTemplate)
      f.fail("a second TemplateProcessing is not supported");
    haveTemplate = true;
    readTemplate(f, t);
  } else {
    unsupported(f, "post-processor", type, "TemplateProcessing, ByteLevel, Sequence");
  }
}

/// GPT-2's bytes_to_unicode: the character ByteLevel writes for each byte.
uint32_t byteLevelChar(uint8_t b) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    uint32_t n = 0;
    for (int c = 0; c < 256; ++c) {
      bool kept = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174);
      t[c] = kept ? uint32_t(c) : 256 + n++;
    }
    return t;
  }();
  return table[b];
}

void readModel(const JsonField &m, Tokenizer::Impl &t) {
  std::string type = typeOf(m);
  if (type != "BPE")
    unsupported(m, "model", type, "BPE");
  m.onlyKeys({"type", "dropout", "unk_token", "continuing_subword_prefix",
              "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
              "vocab", "merges"});
  if (m.has("dropout") && !m.j.at("dropout").is_null())
    m.at("dropout").fail("BPE dropout is not supported (training-time noise; "
                         "set it to null)");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (m.has(key) && !m.j.at(key).is_null() && !m.at(key).string().empty())
      m.at(key).fail("a non-empty value is not supported");
  t.fuseUnk = optBool(m, "fuse_unk", false);
  t.byteFallback = optBool(m, "byte_fallback", false);
  t.ignoreMerges = optBool(m, "ignore_merges", false);

  JsonField vocab = m.at("vocab");
  vocab.object();
  if (vocab.size() == 0)
    vocab.fail("an empty vocabulary");
  t.vocab.reserve(vocab.size());
  std::vector<const std::string *> byId;
  for (auto it = vocab.j.begin(); it != vocab.j.end(); ++it) {
    JsonField entry{it.value(), "model.vocab[\"" + briefText(it.key(), 40) + "\"]",
                    m.file};
    int64_t id = entry.integer(0, kMaxId);
    if (size_t(id) >= byId.size())
      byId.resize(size_t(id) + 1, nullptr);
    if (byId[id])
      entry.fail("id " + std::to_string(id) + " is also \"" +
                 briefText(*byId[id], 40) + "\"'s (each id is one token)");
    byId[id] = &it.key();
    t.vocabKeys.push_back(it.key());
    t.vocab.emplace(std::string_view(t.vocabKeys.back()), id);
  }
  t.tokens.resize(byId.size());
  for (size_t id = 0; id < byId.size(); ++id)
    if (byId[id])
      t.tokens[id] = *byId[id];
  t.vocabSize = int64_t(byId.size());

  if (m.has("unk_token") && !m.j.at("unk_token").is_null()) {
    std::string unk = m.at("unk_token").string();
    auto it = t.vocab.find(unk);
    if (it == t.vocab.end())
      m.at("unk_token").fail("\"" + briefText(unk, 40) + "\" is not in model.vocab");
    t.unkId = it->second;
  }

  JsonField merges = m.at("merges");
  merges.array();
  t.merges.reserve(merges.size());
  std::string joined;
  for (size_t i = 0; i < merges.size(); ++i) {
    JsonField e = merges.index(i);
    std::string a, b;
    if (e.j.is_string()) {
      const std::string &s = e.j.get_ref<const std::string &>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        e.fail("expected \"LEFT RIGHT\" (two tokens, one space), got \"" +
               briefText(s, 40) + "\"");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.j.is_array()) {
      if (e.size() != 2)
        e.fail("expected [LEFT, RIGHT], got " + std::to_string(e.size()) +
               " elements");
      a = e.index(0).string();
      b = e.index(1).string();
    } else {
      e.fail("expected \"LEFT RIGHT\" or [LEFT, RIGHT], got " +
             std::string(e.j.type_name()));
    }
    auto ia = t.vocab.find(a), ib = t.vocab.find(b);
    if (ia == t.vocab.end() || ib == t.vocab.end())
      e.fail("\"" + briefText(ia == t.vocab.end() ? a : b, 40) +
             "\" is not in model.vocab");
    joined = a + b;
    auto ij = t.vocab.find(joined);
    if (ij == t.vocab.end())
      e.fail("the merged token \"" + briefText(joined, 40) +
             "\" is not in model.vocab");
    // A pair given twice keeps its last rank, as HF's merge map does.
    t.merges.set(uint64_t(ia->second) << 32 | uint64_t(ib->second),
                 uint64_t(i) << 32 | uint64_t(ij->second));
  }

  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = t.vocab.find(name);
    t.byteFallbackIds[b] = it == t.vocab.end() ? -1 : it->second;
  }
}

void readAddedTokens(const JsonField &list, Tokenizer::Impl &t) {
  list.array();
  std::map<int64_t, size_t> seenIds;
  for (size_t i = 0; i < list.size(); ++i) {
    JsonField e = list.index(i);
    e.onlyKeys({"id", "content", "single_word", "lstrip", "rstrip", "normalized",
                "special"});
    AddedToken a;
    a.id = e.at("id").integer(0, kMaxId);
    a.content = e.at("content").string();
    if (a.content.empty())
      e.at("content").fail("an empty added token");
    a.singleWord = optBool(e, "single_word", false);
    a.lstrip = optBool(e, "lstrip", false);
    a.rstrip = optBool(e, "rstrip", false);
    a.special = optBool(e, "special", false);
    a.normalized = optBool(e, "normalized", !a.special);
    auto [it, fresh] = seenIds.emplace(a.id, i);
    if (!fresh && t.added[it->second].content != a.content)
      e.at("id").fail("id " + std::to_string(a.id) + " is also added_tokens[" +
                      std::to_string(it->second) + "]'s");
    if (t.addedByContent.count(a.content))
      e.at("content").fail("\"" + briefText(a.content, 40) +
                           "\" is added twice");
    t.added.push_back(std::move(a)); // a deque: the key below stays valid
    t.addedByContent.emplace(std::string_view(t.added.back().content),
                             t.added.back().id);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

void Tokenizer::Impl::normalize(std::string_view s, size_t base, Aligned &out) const {
  out.assign(s, base);
  Aligned &tmp = scratch().tmp;
  for (const NormStep &n : normalizers) {
    switch (n.kind) {
    case NormKind::NFC:
    case NormKind::NFD:
    case NormKind::NFKC:
    case NormKind::NFKD:
      unicodeNormalize(int(n.kind), out, tmp);
      break;
    case NormKind::Prepend:
      if (!out.text.empty())
        out.prepend(n.a);
      break;
    case NormKind::Replace:
      // HF has no bound; a Sequence of growing Replaces could ask for more
      // memory than there is.
      SWIFT_CHECK(out.replace(n.a, n.b, tmp, 16 * s.size() + 65536), file,
                  ": normalizer: its Replace steps make a text of ", s.size(),
                  " bytes more than 16 times longer; not supported");
      break;
    }
  }
}

template <typename Emit>
void Tokenizer::Impl::findAdded(const AddedMatcher &m, std::string_view s,
                                Emit emit) const {
  // AddedVocabulary::find_matches. emit(tokenIndex or -1, begin, end).
  size_t startOffset = 0, i = 0;
  while (i < s.size()) {
    if (!m.firstByte[uint8_t(s[i])]) {
      ++i;
      continue;
    }
    auto [tok, len] = m.longestAt(s, i);
    if (tok < 0) {
      ++i;
      continue;
    }
    const AddedToken &a = added[size_t(tok)];
    size_t start = i, stop = i + len;
    i = stop; // the search goes on after the match, kept or not
    if (a.singleWord) {
      bool startSpace = start == 0 || !endsWithWordChar(s.substr(0, start));
      bool stopSpace = stop == s.size() || !startsWithWordChar(s.substr(stop));
      if (!startSpace || !stopSpace)
        continue;
    }
    if (a.lstrip)
      start = std::max(startOffset, lastNonSpaceEnd(s.substr(0, start)));
    if (a.rstrip)
      stop += leadingSpaceBytes(s.substr(stop));
    if (start < startOffset) // only after an rstrip swallowed its start
      continue;
    if (startOffset < start)
      emit(-1, startOffset, start);
    emit(tok, start, stop);
    startOffset = stop;
    i = std::max(i, stop);
  }
  if (startOffset < s.size())
    emit(-1, startOffset, s.size());
}

void Tokenizer::Impl::bpe(const Aligned &norm, const Piece &piece,
                          std::vector<int64_t> &ids,
                          std::vector<std::pair<size_t, size_t>> *offsets) const {
  Scratch &sc = scratch();
  std::string &w = sc.word;
  std::vector<uint32_t> &at = sc.wordAt;
  std::string_view text(norm.text.data() + piece.begin, piece.end - piece.begin);
  w.clear();
  at.clear();
  // The piece in the model's alphabet, and each of its bytes' place in the
  // normalized text (the prefix space's: the piece's start).
  if (byteLevel) {
    auto put = [&](uint8_t b, uint32_t pos) {
      const std::string &c = byteChars[b];
      w += c;
      at.insert(at.end(), c.size(), pos);
    };
    if (piece.prefix)
      put(' ', piece.begin);
    for (size_t k = 0; k < text.size(); ++k)
      put(uint8_t(text[k]), uint32_t(piece.begin + k));
  } else {
    w.assign(text);
    for (size_t k = 0; k < text.size(); ++k)
      at.push_back(uint32_t(piece.begin + k));
  }
  at.push_back(piece.end);
  auto emit = [&](int64_t id, size_t b, size_t e) {
    ids.push_back(id);
    if (offsets) {
      bool prefixOnly = piece.prefix && byteLevel && e <= byteChars[' '].size();
      size_t nb = at[b], ne = prefixOnly ? at[b] : (e > 0 ? at[e - 1] + 1 : at[0]);
      if (piece.prefix && byteLevel && b < byteChars[' '].size())
        nb = piece.begin;
      offsets->push_back(norm.source(nb, std::max(nb, ne)));
    }
  };
  // The pieces of natural text repeat: each thread keeps the last 64k
  // short pieces' tokens (ids and lengths) for this tokenizer.
  struct PieceCache {
    uint64_t owner = 0;
    std::unordered_map<std::string, std::vector<uint64_t>> pieces;
  };
  thread_local PieceCache cache;
  bool cacheable = w.size() <= 64;
  if (cacheable) {
    if (cache.owner != uid || cache.pieces.size() >= 65536) {
      cache.pieces.clear();
      cache.owner = uid;
    }
    auto hit = cache.pieces.find(w);
    if (hit != cache.pieces.end()) {
      size_t b = 0;
      for (uint64_t v : hit->second) {
        emit(int64_t(v >> 32), b, b + uint32_t(v));
        b += uint32_t(v);
      }
      return;
    }
  }
  if (ignoreMerges) {
    auto it = vocab.find(std::string_view(w));
    if (it != vocab.end()) {
      emit(it->second, 0, w.size());
      if (cacheable)
        cache.pieces[w] = {uint64_t(it->second) << 32 | uint64_t(w.size())};
      return;
    }
  }
  // BPE::merge_word: a symbol per character (or per byte, by byte_fallback;
  // unknown characters as unk_token, fused by fuse_unk).
  auto &sym = sc.symbols;
  sym.clear();
  auto add = [&](int64_t id, uint32_t len) {
    int32_t n = int32_t(sym.size());
    sym.push_back({int32_t(id), n - 1, n + 1, len});
  };
  int64_t unkPending = -1;
  uint32_t unkLen = 0;
  for (size_t i = 0; i < w.size();) {
    size_t len = utf8Length(uint8_t(w[i]));
    if (i + len > w.size())
      len = w.size() - i;
    int64_t id = -1;
    if (byteLevel && len <= 2) { // a byte's character: its id without hashing
      uint32_t c = len == 1 ? uint8_t(w[i])
                            : (uint32_t(uint8_t(w[i]) & 0x1F) << 6) | (uint8_t(w[i + 1]) & 0x3F);
      id = c < charByte.size() ? byteIds[charByte[c]] : -1;
    } else {
      auto it = vocab.find(std::string_view(w.data() + i, len));
      if (it != vocab.end())
        id = it->second;
    }
    if (id >= 0) {
      if (unkPending >= 0) {
        add(unkPending, unkLen);
        unkPending = -1;
      }
      add(id, uint32_t(len));
    } else {
      bool done = false;
      if (byteFallback) {
        bool all = true;
        for (size_t k = 0; k < len; ++k)
          all &= byteFallbackIds[uint8_t(w[i + k])] >= 0;
        if (all) {
          for (size_t k = 0; k < len; ++k)
            add(byteFallbackIds[uint8_t(w[i + k])], 1);
          done = true;
        }
      }
      if (!done && unkId >= 0) {
        if (unkPending >= 0 && fuseUnk) {
          unkLen += uint32_t(len);
        } else {
          if (unkPending >= 0)
            add(unkPending, unkLen);
          unkPending = unkId;
          unkLen = uint32_t(len);
        }
      }
    }
    i += len;
  }
  if (unkPending >= 0)
    add(unkPending, unkLen);
  if (sym.empty()) {
    if (cacheable)
      cache.pieces[w].clear();
    return;
  }
  sym.back().next = -1;
  // Word::merge_all: the lowest rank first, the leftmost of equal ranks.
  auto &heap = sc.heap;
  heap.clear();
  auto pairOf = [&](size_t a) -> const uint64_t * {
    return merges.get(uint64_t(uint32_t(sym[a].id)) << 32 |
                      uint64_t(uint32_t(sym[size_t(sym[a].next)].id)));
  };
  for (size_t a = 0; a + 1 < sym.size(); ++a)
    if (const uint64_t *m = pairOf(a)) {
      heap.push_back({uint32_t(a), uint32_t(*m >> 32), uint32_t(*m)});
      std::push_heap(heap.begin(), heap.end());
    }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    Scratch::Merge top = heap.back();
    heap.pop_back();
    Scratch::Symbol &left = sym[top.pos];
    if (left.len == 0 || left.next < 0)
      continue;
    const uint64_t *m = pairOf(top.pos);
    if (!m || uint32_t(*m) != top.id)
      continue;
    Scratch::Symbol right = sym[size_t(left.next)];
    sym[size_t(left.next)].len = 0;
    left.id = int32_t(top.id);
    left.len += right.len;
    left.next = right.next;
    if (right.next >= 0)
      sym[size_t(right.next)].prev = int32_t(top.pos);
    if (left.prev >= 0)
      if (const uint64_t *p = pairOf(size_t(left.prev))) {
        heap.push_back({uint32_t(left.prev), uint32_t(*p >> 32), uint32_t(*p)});
        std::push_heap(heap.begin(), heap.end());
      }
    if (left.next >= 0)
      if (const uint64_t *p = pairOf(top.pos)) {
        heap.push_back({top.pos, uint32_t(*p >> 32), uint32_t(*p)});
        std::push_heap(heap.begin(), heap.end());
      }
  }
  std::vector<uint64_t> *cached = nullptr;
  if (cacheable) {
    cached = &cache.pieces[w];
    cached->clear();
  }
  size_t b = 0;
  for (const auto &s : sym)
    if (s.len) {
      emit(s.id, b, b + s.len);
      if (cached)
        cached->push_back(uint64_t(uint32_t(s.id)) << 32 | s.len);
      b += s.len;
    }
}

void Tokenizer::Impl::encodePieces(const Aligned &norm, uint32_t begin, uint32_t end,
                                   std::vector<int64_t> &ids,
                                   std::vector<std::pair<size_t, size_t>> *offsets) const {
  Scratch &sc = scratch();
  auto &pieces = sc.pieces;
  pieces.clear();
  if (begin < end)
    pieces.push_back({begin, end, false});
  for (const PreStep &step : preTokenizers) {
    auto &next = sc.nextPieces;
    next.clear();
    for (const Piece &p : pieces) {
      Piece q = p;
      if (step.byteLevel && step.addPrefixSpace && !q.prefix && norm.text[q.begin] != ' ')
        q.prefix = true;
      if (!step.regex) {
        next.push_back(q);
        continue;
      }
      // The piece's text, with its prefix space when it has one.
      std::string_view text(norm.text.data() + q.begin, q.end - q.begin);
      std::string withSpace;
      if (q.prefix)
        withSpace = " " + std::string(text);
      std::string_view subject = q.prefix ? std::string_view(withSpace) : text;
      size_t shift = q.prefix ? 1 : 0;
      auto push = [&](size_t b, size_t e) {
        if (b == e)
          return;
        bool prefix = q.prefix && b == 0;
        size_t nb = prefix ? 0 : b - shift, ne = e - shift;
        if (!prefix && nb == ne)
          return;
        next.push_back({uint32_t(q.begin + nb), uint32_t(q.begin + ne), prefix});
      };
      size_t prev = 0;
      step.regex->forEachMatch(subject, [&](size_t b, size_t e) {
        push(prev, b);
        if (step.behavior == Behavior::Isolated)
          push(b, e);
        prev = e;
      });
      push(prev, subject.size());
    }
    pieces.swap(next);
  }
  // The model reads the pieces: a copy, bpe() reuses the scratch.
  for (size_t k = 0; k < pieces.size(); ++k) {
    Piece p = pieces[k];
    bpe(norm, p, ids, offsets);
  }
}

void Tokenizer::Impl::encodeText(std::string_view src, size_t begin, size_t end,
                                 std::vector<int64_t> &ids,
                                 std::vector<std::pair<size_t, size_t>> *offsets) const {
  Aligned &norm = scratch().norm;
  normalize(src.substr(begin, end - begin), begin, norm);
  if (normMatcher.empty()) {
    encodePieces(norm, 0, uint32_t(norm.text.size()), ids, offsets);
    return;
  }
  findAdded(normMatcher, norm.text, [&](int32_t tok, size_t b, size_t e) {
    if (tok < 0) {
      encodePieces(norm, uint32_t(b), uint32_t(e), ids, offsets);
    } else {
      ids.push_back(added[size_t(tok)].id);
      if (offsets)
        offsets->push_back(norm.source(b, e));
    }
  });
}

//===----------------------------------------------------------------------===//
// The API
//===----------------------------------------------------------------------===//

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer &&) noexcept = default;
Tokenizer &Tokenizer::operator=(Tokenizer &&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string &path) {
  std::string text = plan::readRegularFile(path, "a HF tokenizer.json", kMaxTokenizerBytes);
  return fromJsonText(text, path);
}

Tokenizer Tokenizer::fromJsonText(const std::string &text, const std::string &file) {
  json j = plan::parseJson(text, file);
  auto t = std::make_unique<Impl>();
  t->file = file;
  JsonField root{j, "", t->file};
  root.object();
  readModel(root.at("model"), *t);
  if (root.has("added_tokens") && !j.at("added_tokens").is_null())
    readAddedTokens(root.at("added_tokens"), *t);
  if (root.has("normalizer"))
    readNormalizer(root.at("normalizer"), t->normalizers);
  if (root.has("pre_tokenizer"))
    readPreTokenizer(root.at("pre_tokenizer"), t->preTokenizers);
  for (const PreStep &s : t->preTokenizers)
    t->byteLevel |= s.byteLevel;
  for (const AddedToken &a : t->added) {
    t->vocabSize = std::max(t->vocabSize, a.id + 1);
  }
  t->tokens.resize(size_t(t->vocabSize));
  t->special.assign(size_t(t->vocabSize), false);
  for (size_t i = 0; i < t->added.size(); ++i) {
    const AddedToken &a = t->added[i];
    t->tokens[size_t(a.id)] = a.content;
    t->special[size_t(a.id)] = a.special;
    if (!a.normalized) {
      t->rawMatcher.add(a.content, int32_t(i));
    } else {
      // Found in the normalized text: its content normalized the same way.
      Aligned n;
      t->normalize(a.content, 0, n);
      if (!n.text.empty())
        t->normMatcher.add(n.text, int32_t(i));
    }
  }
  static std::atomic<uint64_t> nextUid{1};
  t->uid = nextUid++;
  if (t->byteLevel)
    for (int b = 0; b < 256; ++b) {
      t->charByte[byteLevelChar(uint8_t(b))] = uint8_t(b);
      t->byteChars[b] = utf8Encode(byteLevelChar(uint8_t(b)));
      auto it = t->vocab.find(t->byteChars[b]);
      t->byteIds[b] = it == t->vocab.end() ? -1 : it->second;
    }
  if (root.has("post_processor")) {
    bool haveTemplate = false;
    readPostProcessor(root.at("post_processor"), *t, haveTemplate);
  }
  return Tokenizer(std::move(t));
}

Tokenizer::Encoding Tokenizer::encode(std::string_view text, bool addSpecialTokens) const {
  Encoding e;
  encodeInto(text, addSpecialTokens, e.ids, &e.offsets);
  return e;
}

void Tokenizer::encodeInto(std::string_view text, bool addSpecialTokens,
                           std::vector<int64_t> &ids,
                           std::vector<std::pair<size_t, size_t>> *offsets) const {
  const Impl &t = *impl_;
  SWIFT_CHECK(text.size() <= kMaxTextBytes, t.file, ": a text of ", text.size(),
              " bytes to encode at once; the most is ", kMaxTextBytes);
  // Invalid UTF-8: U+FFFD for each maximal invalid subpart.
  std::string_view src = text;
  bool replaced = !validUtf8(text);
  std::vector<uint32_t> srcBegin, srcEnd;
  std::string srcText;
  if (replaced) {
    replaceInvalidUtf8(text, srcText, srcBegin, srcEnd);
    src = srcText;
  }
  if (addSpecialTokens)
    for (int64_t id : t.templatePrefix) {
      ids.push_back(id);
      if (offsets)
        offsets->push_back({0, 0});
    }
  size_t firstText = offsets ? offsets->size() : 0;
  t.findAdded(t.rawMatcher, src, [&](int32_t tok, size_t b, size_t e) {
    if (tok < 0) {
      t.encodeText(src, b, e, ids, offsets);
    } else {
      ids.push_back(t.added[size_t(tok)].id);
      if (offsets)
        offsets->push_back({b, e});
    }
  });
  if (replaced && offsets)
    for (size_t k = firstText; k < offsets->size(); ++k) {
      auto &[b, e] = (*offsets)[k];
      size_t nb = b < src.size() ? srcBegin[b] : text.size();
      size_t ne = e > b ? srcEnd[e - 1] : nb;
      b = nb;
      e = ne;
    }
  if (addSpecialTokens)
    for (int64_t id : t.templateSuffix) {
      ids.push_back(id);
      if (offsets)
        offsets->push_back({text.size(), text.size()});
    }
}

int64_t Tokenizer::vocabSize() const { return impl_->vocabSize; }

std::optional<int64_t> Tokenizer::tokenToId(std::string_view token) const {
  auto a = impl_->addedByContent.find(token);
  if (a != impl_->addedByContent.end())
    return a->second;
  auto v = impl_->vocab.find(token);
  if (v != impl_->vocab.end())
    return v->second;
  return std::nullopt;
}

const std::string &Tokenizer::idToToken(int64_t id) const {
  SWIFT_CHECK(id >= 0 && id < impl_->vocabSize, impl_->file, ": id ", id,
              " is not in the vocabulary [0, ", impl_->vocabSize, ")");
  return impl_->tokens[size_t(id)];
}

bool Tokenizer::isSpecial(int64_t id) const {
  return id >= 0 && id < impl_->vocabSize && impl_->special[size_t(id)];
}

void Tokenizer::checkFitsModel(int64_t modelVocabSize, const std::string &model) const {
  const Impl &t = *impl_;
  if (t.vocabSize <= modelVocabSize)
    return;
  SWIFT_CHECK(false, t.file, ": has ", t.vocabSize,
              " ids (highest ", t.vocabSize - 1, " \"",
              briefText(t.tokens[size_t(t.vocabSize - 1)], 40), "\"), more than ",
              model, " ", modelVocabSize,
              ": the model has no embedding row for them (a tokenizer of "
              "another model?)");
}

const std::string &Tokenizer::file() const { return impl_->file; }

} // namespace swift::data
