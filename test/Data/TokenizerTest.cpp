//===- TokenizerTest.cpp - tokenizer.json against HF's ids -----------------===//
//
// The real tokenizer files of Qwen3, Qwen2.5, Llama 3.1, Llama 2 and Mistral
// Nemo (scripts/fetch_tokenizers.sh) encode the committed corpus
// (test/data/tokenizer/corpus.jsonl, 5,000+ strings) to exactly the ids of
// HF's tokenizers, the Rust library (test/data/tokenizer/NAME.jsonl.gz, made
// by benchmarks/reference/make_tokenizer_references.mjs), with and without
// special tokens; offsets, invalid UTF-8, threads, and the refusals of bad
// tokenizer files (one UserError naming the file and the field).
//
//===----------------------------------------------------------------------===//
#include "swift/Plan/Error.h"
#include "swift/Data/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

using swift::data::Tokenizer;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char *const kNames[] = {"qwen3", "qwen2_5", "llama3_1", "llama2", "mistral_nemo"};

std::string tokenizerPath(const std::string &name) {
  std::string dir = SWIFT_TOKENIZERS_DIR;
  std::string path = dir + "/" + name + "/tokenizer.json";
  if (!fs::exists(path))
    throw std::runtime_error(path + " is missing: run scripts/fetch_tokenizers.sh");
  return path;
}

/// Each tokenizer read once for the whole test program.
const Tokenizer &tokenizer(const std::string &name) {
  static std::map<std::string, Tokenizer> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, Tokenizer::load(tokenizerPath(name))).first;
  return it->second;
}

std::string gunzip(const std::string &path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw std::runtime_error(path + ": " + std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    out.append(buf, size_t(n));
  gzclose(f);
  if (n < 0)
    throw std::runtime_error(path + ": not gzip");
  return out;
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot read");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string unhex(const std::string &h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += char(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

struct Sample {
  std::string text;  // the bytes swift encodes
  bool invalid;      // not valid UTF-8
};

const std::vector<Sample> &corpus() {
  static const std::vector<Sample> samples = [] {
    std::vector<Sample> out;
    for (const std::string &line :
         lines(readFile(std::string(SWIFT_TEST_DATA_DIR) + "/tokenizer/corpus.jsonl"))) {
      json j = json::parse(line);
      if (j.contains("hex"))
        out.push_back({unhex(j["hex"]), true});
      else
        out.push_back({j["text"].get<std::string>(), false});
    }
    return out;
  }();
  return samples;
}

std::string show(const std::vector<int64_t> &ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

class Corpus : public ::testing::TestWithParam<const char *> {};

TEST_P(Corpus, IdsEqualHFTokenizers) {
  const std::string name = GetParam();
  const Tokenizer &t = tokenizer(name);
  const auto &samples = corpus();
  auto expected = lines(gunzip(std::string(SWIFT_TEST_DATA_DIR) + "/tokenizer/" + name + ".jsonl.gz"));
  ASSERT_EQ(expected.size(), samples.size());
  ASSERT_GE(samples.size(), 5000u);
  int failures = 0;
  size_t invalid = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    json e = json::parse(expected[i]);
    auto ids = e["ids"].get<std::vector<int64_t>>();
    std::vector<int64_t> special;
    if (e.contains("special")) {
      special = e["special"].get<std::vector<int64_t>>();
    } else {
      special = e.value("prefix", std::vector<int64_t>{});
      special.insert(special.end(), ids.begin(), ids.end());
      for (int64_t id : e.value("suffix", std::vector<int64_t>{}))
        special.push_back(id);
    }
    invalid += samples[i].invalid;
    auto got = t.encode(samples[i].text, false).ids;
    auto gotSpecial = t.encode(samples[i].text, true).ids;
    if ((got != ids || gotSpecial != special) && ++failures <= 5)
      ADD_FAILURE() << name << " line " << i + 1 << " " << json(samples[i].invalid ? std::string("(invalid UTF-8)") : samples[i].text).dump()
                    << "\n  expected " << show(ids) << "\n  got      " << show(got)
                    << "\n  expected with special " << show(special)
                    << "\n  got with special      " << show(gotSpecial);
  }
  EXPECT_EQ(failures, 0) << name << ": strings whose ids differ";
  EXPECT_GE(invalid, 50u);
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, Corpus, ::testing::ValuesIn(kNames),
                         [](const auto &info) { return std::string(info.param); });

/// A real tokenizer.json with fields set by JSON pointer (variants.json).
Tokenizer variantOf(const json &v) {
  json j = json::parse(readFile(tokenizerPath(v["base"].get<std::string>())));
  for (auto it = v["set"].begin(); it != v["set"].end(); ++it)
    j[json::json_pointer(it.key())] = it.value();
  return Tokenizer::fromJsonText(j.dump(), v["name"].get<std::string>() + "/tokenizer.json");
}

// What the five files do not use, on real files changed a little: GPT-2's
// ByteLevel (its regex, add_prefix_space), lstrip/rstrip, single_word, a
// Split without ByteLevel, NFKC (variants.json).
TEST(Tokenizer, VariantsEqualHFTokenizers) {
  json variants = json::parse(readFile(std::string(SWIFT_TEST_DATA_DIR) + "/tokenizer/variants.json"));
  std::vector<const Sample *> valid;
  for (const Sample &s : corpus())
    if (!s.invalid && valid.size() < 1500)
      valid.push_back(&s);
  for (const json &v : variants["variants"]) {
    std::string name = v["name"];
    Tokenizer t = variantOf(v);
    auto expected = lines(gunzip(std::string(SWIFT_TEST_DATA_DIR) + "/tokenizer/variant-" + name + ".jsonl.gz"));
    ASSERT_EQ(expected.size(), valid.size()) << name;
    int failures = 0, compared = 0;
    for (size_t i = 0; i < valid.size(); ++i) {
      json e = json::parse(expected[i]);
      if (e.contains("skip"))
        continue;
      auto ids = e["ids"].get<std::vector<int64_t>>();
      std::vector<int64_t> special = e.contains("special") ? e["special"].get<std::vector<int64_t>>()
                                                           : e.value("prefix", std::vector<int64_t>{});
      if (!e.contains("special")) {
        special.insert(special.end(), ids.begin(), ids.end());
        for (int64_t id : e.value("suffix", std::vector<int64_t>{}))
          special.push_back(id);
      }
      auto got = t.encode(valid[i]->text, false).ids, gotSpecial = t.encode(valid[i]->text, true).ids;
      ++compared;
      if ((got != ids || gotSpecial != special) && ++failures <= 3)
        ADD_FAILURE() << name << " string " << i << " " << json(valid[i]->text).dump()
                      << "\n  expected " << show(ids) << "\n  got      " << show(got);
    }
    EXPECT_EQ(failures, 0) << name;
    EXPECT_GT(compared, 1400) << name;
  }
  // single_word, by hand too: the token only between non-word characters.
  json sw = {{"name", "single_word"}, {"base", "llama3_1"}, {"set", {{"/added_tokens/6/single_word", true}}}};
  Tokenizer t = variantOf(sw);
  int64_t header = *t.tokenToId("<|start_header_id|>");
  auto has = [&](const std::string &text) {
    auto ids = t.encode(text, false).ids;
    return std::find(ids.begin(), ids.end(), header) != ids.end();
  };
  EXPECT_FALSE(has("<|start_header_id|>system"));
  EXPECT_FALSE(has("x<|start_header_id|>"));
  EXPECT_TRUE(has("<|start_header_id|>"));
  EXPECT_TRUE(has(" <|start_header_id|> system"));
  EXPECT_TRUE(has("<|start_header_id|>\n"));
}

// Offsets: in order, inside the text, and each byte-level token is exactly
// the bytes of its range (Llama 3, Mistral Nemo: no normalizer moves bytes).
TEST(Tokenizer, OffsetsAreTheTokensBytes) {
  for (const char *name : {"llama3_1", "mistral_nemo"}) {
    const Tokenizer &t = tokenizer(name);
    // GPT-2's byte <-> character map, inverted.
    std::map<std::string, uint8_t> byteOf;
    for (int b = 0, n = 0; b < 256; ++b) {
      bool kept = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      uint32_t c = kept ? uint32_t(b) : uint32_t(256 + n++);
      std::string u;
      if (c < 0x80) u += char(c);
      else { u += char(0xC0 | (c >> 6)); u += char(0x80 | (c & 0x3F)); }
      byteOf[u] = uint8_t(b);
    }
    int checked = 0;
    for (const Sample &s : corpus()) {
      if (s.invalid)
        continue;
      Tokenizer::Encoding e = t.encode(s.text, true);
      ASSERT_EQ(e.ids.size(), e.offsets.size());
      size_t prevEnd = 0;
      for (size_t k = 0; k < e.ids.size(); ++k) {
        auto [b, end] = e.offsets[k];
        ASSERT_LE(b, end);
        ASSERT_LE(end, s.text.size());
        ASSERT_GE(b, prevEnd) << name << " " << s.text;
        prevEnd = end;
        std::string bytes;
        if (t.isSpecial(e.ids[k])) {
          bytes = t.idToToken(e.ids[k]);
        } else {
          const std::string &tok = t.idToToken(e.ids[k]);
          for (size_t i = 0; i < tok.size();) {
            size_t len = (uint8_t(tok[i]) >= 0xC0) ? 2 : 1;
            bytes += char(byteOf.at(tok.substr(i, len)));
            i += len;
          }
        }
        if (b == end && b == 0 && k == 0 && t.isSpecial(e.ids[k]))
          continue; // the BOS the template adds: (0, 0)
        ASSERT_EQ(bytes, s.text.substr(b, end - b)) << name << " " << json(s.text).dump();
        ++checked;
      }
      ASSERT_EQ(prevEnd, s.text.size()) << name << ": the tokens cover the text";
    }
    EXPECT_GT(checked, 100000);
  }
}

// Llama 2: the Prepend/Replace normalizer's "▁" stands for the characters
// it replaces; offsets stay inside the text and in order.
TEST(Tokenizer, OffsetsThroughANormalizer) {
  const Tokenizer &t = tokenizer("llama2");
  std::string text = "Hello  world<s>x";
  Tokenizer::Encoding e = t.encode(text, true);
  ASSERT_EQ(e.ids.front(), 1); // BOS
  EXPECT_EQ(e.offsets.front(), (std::pair<size_t, size_t>(0, 0)));
  // "<s>" in the text is the special token, at its bytes.
  bool sawS = false;
  for (size_t k = 1; k < e.ids.size(); ++k)
    if (e.ids[k] == 1) {
      EXPECT_EQ(e.offsets[k], (std::pair<size_t, size_t>(12, 15)));
      sawS = true;
    }
  EXPECT_TRUE(sawS);
  for (auto [b, end] : e.offsets)
    EXPECT_LE(end, text.size());
  // The prepended "▁" stands for no input: alone before byte-fallback
  // tokens it is (0,0), not the first character's bytes (which put the
  // offsets out of order; a FuzzTokenizer finding).
  e = t.encode("\xF0\x9F\xA7\x8A", false); // U+1F9CA, not in the vocabulary
  ASSERT_EQ(e.ids.size(), 5u);
  EXPECT_EQ(e.offsets[0], (std::pair<size_t, size_t>(0, 0)));
  EXPECT_EQ(e.offsets[1], (std::pair<size_t, size_t>(0, 1)));
  EXPECT_EQ(e.offsets[4], (std::pair<size_t, size_t>(3, 4)));
  // Over the corpus, through Llama 2's and Qwen's normalizers: ranges never
  // go back, and stay inside the text.
  for (const char *name : {"llama2", "qwen3"})
    for (const Sample &s : corpus()) {
      Tokenizer::Encoding x = tokenizer(name).encode(s.text, true);
      size_t pb = 0, pe = 0;
      for (auto [b, end] : x.offsets) {
        ASSERT_TRUE(b <= end && end <= s.text.size() && b >= pb && end >= pe)
            << name << " " << json(s.invalid ? std::string("(invalid)") : s.text).dump();
        pb = b;
        pe = end;
      }
    }
}

// Invalid UTF-8 is read as errors="replace" decoding: the same ids as the
// text with U+FFFD, offsets on the invalid bytes.
TEST(Tokenizer, InvalidUtf8IsReplacementCharacters) {
  const Tokenizer &t = tokenizer("qwen3");
  std::string bad = "ab\xC3(\xED\xA0\x80z\xF0\x9F";
  std::string replaced = "ab\xEF\xBF\xBD(\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz\xEF\xBF\xBD";
  Tokenizer::Encoding a = t.encode(bad, false), b = t.encode(replaced, false);
  EXPECT_EQ(a.ids, b.ids);
  ASSERT_FALSE(a.offsets.empty());
  EXPECT_EQ(a.offsets.back().second, bad.size());
  for (auto [x, y] : a.offsets)
    EXPECT_LE(y, bad.size());
  // A lone continuation byte, a cut sequence.
  EXPECT_EQ(t.encode("\x80", false).ids, t.encode("\xEF\xBF\xBD", false).ids);
  EXPECT_EQ(t.encode("x\xE2\x82", false).ids, t.encode("x\xEF\xBF\xBD", false).ids);
}

TEST(Tokenizer, VocabularyAndSpecialTokens) {
  const Tokenizer &q = tokenizer("qwen3");
  EXPECT_EQ(q.vocabSize(), 151669); // 151643 + 26 added tokens
  EXPECT_EQ(q.tokenToId("<|im_end|>"), 151645);
  EXPECT_TRUE(q.isSpecial(151645));
  EXPECT_FALSE(q.isSpecial(151657)); // <tool_call>: added, not special
  EXPECT_EQ(q.idToToken(151644), "<|im_start|>");
  EXPECT_EQ(q.tokenToId("hello"), 14990);
  EXPECT_EQ(q.tokenToId("no such token at all"), std::nullopt);
  EXPECT_THROW(q.idToToken(q.vocabSize()), swift::plan::UserError);
  EXPECT_THROW(q.idToToken(-1), swift::plan::UserError);
  const Tokenizer &l = tokenizer("llama3_1");
  EXPECT_EQ(l.vocabSize(), 128256);
  EXPECT_EQ(l.encode("", true).ids, (std::vector<int64_t>{128000}));
  EXPECT_EQ(l.encode("", false).ids, (std::vector<int64_t>{}));
}

TEST(Tokenizer, VocabularyMustFitTheModel) {
  const Tokenizer &q = tokenizer("qwen3");
  q.checkFitsModel(151936, "config.json: vocab_size"); // Qwen3's padded rows
  try {
    q.checkFitsModel(151000, "config.json: vocab_size");
    FAIL() << "no error";
  } catch (const swift::plan::UserError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("tokenizer.json: has 151669 ids"), std::string::npos) << m;
    EXPECT_NE(m.find("config.json: vocab_size 151000"), std::string::npos) << m;
  }
}

TEST(Tokenizer, ConcurrentEncodesEqualSerialOnes) {
  const Tokenizer &t = tokenizer("llama3_1");
  const auto &samples = corpus();
  std::vector<std::vector<int64_t>> serial;
  for (const Sample &s : samples)
    serial.push_back(t.encode(s.text, true).ids);
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      for (size_t i = size_t(w); i < samples.size(); i += 2)
        bad[size_t(w)] += t.encode(samples[i].text, true).ids != serial[i];
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

//===----------------------------------------------------------------------===//
// Bad tokenizer files: one UserError naming the file and the field.
//===----------------------------------------------------------------------===//

/// A small valid byte-level BPE tokenizer.json, as JSON to edit.
json tiny() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 5, "content": "<|end|>", "single_word": false,
      "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": null, "unk_token": null,
      "continuing_subword_prefix": null, "end_of_word_suffix": null,
      "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
      "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "abab": 4},
      "merges": ["a b", ["ab", "ab"]]}})");
}

std::string refusal(const json &j) {
  try {
    Tokenizer::fromJsonText(j.dump(), "tok/tokenizer.json");
  } catch (const swift::plan::UserError &e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Tokenizer, TinyFileEncodes) {
  Tokenizer t = Tokenizer::fromJsonText(tiny().dump(), "tok/tokenizer.json");
  EXPECT_EQ(t.encode("abab ab<|end|>", false).ids, (std::vector<int64_t>{4, 3, 2, 5}));
  EXPECT_EQ(t.vocabSize(), 6);
  EXPECT_EQ(t.idToToken(5), "<|end|>");
}

TEST(Tokenizer, RefusesWhatItDoesNotImplement) {
  struct Case {
    std::function<void(json &)> edit;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](json &j) { j["model"]["type"] = "WordPiece"; },
       "tok/tokenizer.json: model.type: unsupported model \"WordPiece\""},
      {[](json &j) { j["model"]["type"] = "Unigram"; },
       "model.type: unsupported model \"Unigram\""},
      {[](json &j) { j["normalizer"] = {{"type", "Lowercase"}}; },
       "normalizer.type: unsupported normalizer \"Lowercase\""},
      {[](json &j) { j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Metaspace"}}; },
       "pre_tokenizer.pretokenizers[0].type: unsupported pre-tokenizer \"Metaspace\""},
      {[](json &j) { j["post_processor"] = {{"type", "BertProcessing"}}; },
       "post_processor.type: unsupported post-processor \"BertProcessing\""},
      {[](json &j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithPrevious"; },
       "pre_tokenizer.pretokenizers[0].behavior: unsupported behavior"},
      {[](json &j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+"; },
       "pre_tokenizer.pretokenizers[0].pattern.Regex: the regex escape \\w is not supported"},
      {[](json &j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a"; },
       "pre_tokenizer.pretokenizers[0].pattern.Regex: the regex does not compile"},
      {[](json &j) { j["model"]["dropout"] = 0.1; }, "model.dropout: BPE dropout is not supported"},
      {[](json &j) { j["model"]["merges"][0] = "a  b"; },
       "model.merges[0]: expected \"LEFT RIGHT\" (two tokens, one space)"},
      {[](json &j) { j["model"]["merges"][0] = "a c"; },
       "model.merges[0]: \"c\" is not in model.vocab"},
      {[](json &j) { j["model"]["merges"][0] = "b a"; },
       "model.merges[0]: the merged token \"ba\" is not in model.vocab"},
      {[](json &j) { j["model"]["merges"][1] = json::array({"ab"}); },
       "model.merges[1]: expected [LEFT, RIGHT], got 1 elements"},
      {[](json &j) { j["model"]["merges"][1] = 7; },
       "model.merges[1]: expected \"LEFT RIGHT\" or [LEFT, RIGHT], got number"},
      {[](json &j) { j["model"]["vocab"]["b"] = 0; },
       "is also \"a\"'s (each id is one token)"},
      {[](json &j) { j["model"]["vocab"]["b"] = -1; }, "model.vocab[\"b\"]: value -1 out of range"},
      {[](json &j) { j["model"]["vocab"]["b"] = 1LL << 40; }, "out of range [0, 4194303]"},
      {[](json &j) { j["model"]["unk_token"] = "<unk>"; },
       "model.unk_token: \"<unk>\" is not in model.vocab"},
      {[](json &j) { j["added_tokens"][0]["id"] = -3; }, "added_tokens[0].id: value -3 out of range"},
      {[](json &j) { j["added_tokens"].push_back(j["added_tokens"][0]); },
       "added_tokens[1].content: \"<|end|>\" is added twice"},
      {[](json &j) { j["added_tokens"][0]["content"] = ""; },
       "added_tokens[0].content: an empty added token"},
      {[](json &j) { j["model"].erase("vocab"); }, "model.vocab: missing required field"},
      {[](json &j) { j["model"]["vocab"] = json::array(); }, "model.vocab: expected an object"},
      {[](json &j) {
         j["model"]["vocab"] = json::object();
         j["model"]["merges"] = json::array();
       },
       "model.vocab: an empty vocabulary"},
      {[](json &j) { j["model"]["surprise"] = 1; }, "model.surprise"},
      {[](json &j) {
         j["post_processor"] = json::parse(R"({"type": "TemplateProcessing",
           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
           "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [99], "tokens": ["<s>"]}}})");
       },
       "post_processor.special_tokens[\"<s>\"].ids[0]: id 99 is not in the vocabulary (its size is 6)"},
      {[](json &j) { j["model"]["continuing_subword_prefix"] = "##"; },
       "model.continuing_subword_prefix: a non-empty value is not supported"},
  };
  for (const Case &c : cases) {
    json j = tiny();
    c.edit(j);
    std::string m = refusal(j);
    EXPECT_NE(m.find(c.message), std::string::npos) << "expected \"" << c.message << "\", got: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_LT(m.size(), 400u) << m;
  }
}

TEST(Tokenizer, RefusesBadFiles) {
  EXPECT_NE(refusal(json::parse("[1]")).find("tok/tokenizer.json: <root>: expected an object"),
            std::string::npos);
  try {
    Tokenizer::fromJsonText("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"a\": 1}}}",
                            "tok/tokenizer.json");
    FAIL() << "a duplicate vocabulary key accepted";
  } catch (const swift::plan::UserError &e) {
    EXPECT_NE(std::string(e.what()).find("tok/tokenizer.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"a\""), std::string::npos) << e.what();
  }
  try {
    Tokenizer::load("/nonexistent/tokenizer.json");
    FAIL() << "a missing file accepted";
  } catch (const swift::plan::UserError &e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tokenizer.json"), std::string::npos);
  }
}

// What a file allows but no text should cost: a regex that backtracks
// without end, Replace normalizers that grow the text without bound.
TEST(Tokenizer, RefusesRunawayPatterns) {
  json j = tiny();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a|aa)+c";
  Tokenizer t = Tokenizer::fromJsonText(j.dump(), "tok/tokenizer.json");
  EXPECT_EQ(t.encode("aab", false).ids, (std::vector<int64_t>{0, 2})); // no match: one piece
  try {
    t.encode(std::string(200, 'a'), false);
    FAIL() << "no error";
  } catch (const swift::plan::UserError &e) {
    EXPECT_NE(std::string(e.what()).find("tok/tokenizer.json: pre_tokenizer.pretokenizers[0]."
                                         "pattern.Regex: the regex backtracks without end"),
              std::string::npos) << e.what();
  }
  j = tiny();
  json grow = {{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", std::string(100, 'a')}};
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {grow, grow, grow}}};
  Tokenizer g = Tokenizer::fromJsonText(j.dump(), "tok/tokenizer.json");
  try {
    g.encode("aaaa", false);
    FAIL() << "no error";
  } catch (const swift::plan::UserError &e) {
    EXPECT_NE(std::string(e.what()).find("tok/tokenizer.json: normalizer: its Replace steps"),
              std::string::npos) << e.what();
  }
}

// Added-token flags as HF's AddedVocabulary applies them.
TEST(Tokenizer, AddedTokenFlags) {
  json j = tiny();
  j["normalizer"] = nullptr;
  j["added_tokens"] = json::parse(R"([
    {"id": 5, "content": "<|end|>", "lstrip": true, "rstrip": true, "single_word": false, "normalized": false, "special": true},
    {"id": 6, "content": "ab", "lstrip": false, "rstrip": false, "single_word": true, "normalized": false, "special": false}])");
  Tokenizer t = Tokenizer::fromJsonText(j.dump(), "tok/tokenizer.json");
  // lstrip/rstrip: the spaces around <|end|> are part of it.
  Tokenizer::Encoding e = t.encode("a  <|end|> b", false);
  EXPECT_EQ(e.ids, (std::vector<int64_t>{0, 5, 1}));
  EXPECT_EQ(e.offsets[1], (std::pair<size_t, size_t>(1, 11)));
  // single_word: "ab" inside a word is not the added token (the model's
  // "ab" has the same id 2 here, so look at the split: "abab" merges to 4).
  EXPECT_EQ(t.encode("abab", false).ids, (std::vector<int64_t>{4}));
  EXPECT_EQ(t.encode("x ab", false).ids.back(), 6);
}

} // namespace
