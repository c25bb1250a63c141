//===- SampleEncoderTest.cpp - dataset lines in users' formats as ids ------===//
//
// The real tokenizers and chat templates (.cache/tokenizers, fetched by
// scripts/fetch_tokenizers.sh): each format's ids, and the labels of the
// assistant-only rule (SampleEncoder.h), checked through the text the
// trained tokens cover.
//
//===----------------------------------------------------------------------===//

#include "swift/Data/ChatTemplate.h"
#include "swift/Plan/Error.h"
#include "swift/Data/SampleEncoder.h"
#include "swift/Data/Tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

namespace swift::data {
namespace {

using nlohmann::json;

/// A real model's tokenizer and template, loaded once per test binary.
struct Model {
  std::shared_ptr<const Tokenizer> tok;
  std::shared_ptr<const ChatTemplate> chat;
};
const Model &model(const std::string &name) {
  static std::map<std::string, Model> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end())
    return it->second;
  const std::string dir = std::string(SWIFT_TOKENIZERS_DIR) + "/" + name;
  if (!std::filesystem::exists(dir + "/tokenizer.json"))
    throw std::runtime_error(dir + "/tokenizer.json is missing: run "
                             "scripts/fetch_tokenizers.sh");
  Model m;
  m.tok = std::make_shared<const Tokenizer>(Tokenizer::load(dir + "/tokenizer.json"));
  m.chat = std::make_shared<const ChatTemplate>(
      ChatTemplate::fromTokenizerConfig(dir + "/tokenizer_config.json"));
  return loaded.emplace(name, std::move(m)).first->second;
}

jsonl::Sample encode(const std::string &name, const json &line,
                     bool assistantOnly = true, int64_t vocab = 1 << 20) {
  const Model &m = model(name);
  SampleEncoder e(vocab, m.tok, m.chat, assistantOnly);
  std::optional<jsonl::Sample> s = e.encode(line.dump(), "data.jsonl: line 1");
  EXPECT_TRUE(s.has_value());
  return s.value_or(jsonl::Sample{});
}

/// The text of the trained tokens, in order, each run of consecutive
/// trained tokens joined, runs separated by "|".
/// `plain`: a text or prompt/completion sample, tokenized with the
/// tokenizer's special tokens (a chat's come from its template).
std::string trainedText(const std::string &name, const jsonl::Sample &s,
                        bool plain = false) {
  const std::string text = s.text.value_or("");
  const Tokenizer::Encoding e = model(name).tok->encode(text, plain);
  EXPECT_EQ(e.ids.size(), s.ids.size());
  std::string out;
  bool inRun = false;
  for (size_t i = 0; i < s.labels.size(); ++i) {
    const bool trained = s.labels[i] != jsonl::kIgnore;
    if (trained) {
      EXPECT_EQ(s.labels[i], s.ids[i]);
      if (!inRun && !out.empty())
        out += "|";
      out += text.substr(e.offsets[i].first,
                           e.offsets[i].second - e.offsets[i].first);
    }
    inRun = trained;
  }
  return out;
}

const json kChat = {
    {"messages",
     {{{"role", "system"}, {"content", "You are terse."}},
      {{"role", "user"}, {"content", "Say hi in Japanese."}},
      {{"role", "assistant"}, {"content", "こんにちは!"}},
      {{"role", "user"}, {"content", "And in Arabic?"}},
      {{"role", "assistant"}, {"content", "مرحبا 👋🏽"}}}}};

TEST(SampleEncoder, AssistantContentAndTheTokenClosingEachTurnAreTrained) {
  // Qwen: <|im_end|> closes a turn; Llama 3.1: <|eot_id|>; Mistral: </s>.
  EXPECT_EQ(trainedText("qwen2_5", encode("qwen2_5", kChat)),
            "こんにちは!<|im_end|>|مرحبا 👋🏽<|im_end|>");
  EXPECT_EQ(trainedText("qwen3", encode("qwen3", kChat)),
            "こんにちは!<|im_end|>|مرحبا 👋🏽<|im_end|>");
  EXPECT_EQ(trainedText("llama3_1", encode("llama3_1", kChat)),
            "こんにちは!<|eot_id|>|مرحبا 👋🏽<|eot_id|>");
}

TEST(SampleEncoder, TheRenderedTextIsTheTemplatesAndTokenizedWithoutAddedTokens) {
  const jsonl::Sample s = encode("qwen2_5", kChat);
  EXPECT_EQ(SampleEncoder::formatOf(kChat, ""), DataFormat::Messages);
  EXPECT_EQ(*s.text, model("qwen2_5").chat->render(kChat["messages"], false).text);
  const Tokenizer::Encoding e = model("qwen2_5").tok->encode(*s.text, false);
  EXPECT_EQ(std::vector<int64_t>(s.ids.begin(), s.ids.end()), e.ids);
}

TEST(SampleEncoder, LossOnAllTrainsEveryToken) {
  const jsonl::Sample s = encode("qwen2_5", kChat, /*assistantOnly=*/false);
  EXPECT_EQ(s.labels, s.ids);
}

TEST(SampleEncoder, ShareGptAndAlpacaAreTheConversationsTheyName) {
  const json share = {{"conversations",
                       {{{"from", "system"}, {"value", "You are terse."}},
                        {{"from", "human"}, {"value", "Say hi in Japanese."}},
                        {{"from", "gpt"}, {"value", "こんにちは!"}},
                        {{"from", "human"}, {"value", "And in Arabic?"}},
                        {{"from", "gpt"}, {"value", "مرحبا 👋🏽"}}}}};
  const jsonl::Sample a = encode("qwen2_5", kChat), b = encode("qwen2_5", share);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(SampleEncoder::formatOf(share, ""), DataFormat::ShareGPT);

  const json alpaca = {{"instruction", "Translate."}, {"input", "cat"},
                       {"output", "gato"}, {"system", "Be brief."}};
  const json same = {{"messages",
                      {{{"role", "system"}, {"content", "Be brief."}},
                       {{"role", "user"}, {"content", "Translate.\ncat"}},
                       {{"role", "assistant"}, {"content", "gato"}}}}};
  EXPECT_EQ(encode("llama3_1", alpaca).ids, encode("llama3_1", same).ids);
  EXPECT_EQ(trainedText("llama3_1", encode("llama3_1", alpaca)), "gato<|eot_id|>");
}

TEST(SampleEncoder, PromptCompletionStringsAreTokenizedAsTrlDoes) {
  // Llama 3.1's post-processor adds <|begin_of_text|>; TRL appends the EOS
  // to the completion; only the completion (and its EOS) is trained.
  const json line = {{"prompt", "The capital of France is"}, {"completion", " Paris."}};
  const jsonl::Sample s = encode("llama3_1", line);
  const std::string eos = model("llama3_1").chat->eosToken();
  EXPECT_EQ(*s.text, "The capital of France is Paris." + eos);
  EXPECT_EQ(s.ids.front(), *model("llama3_1").tok->tokenToId("<|begin_of_text|>"));
  EXPECT_EQ(trainedText("llama3_1", s, /*plain=*/true), " Paris." + eos);
  EXPECT_EQ(s.labels.front(), jsonl::kIgnore);
}

TEST(SampleEncoder, ConversationalPromptCompletionTrainsTheCompletionOnly) {
  const json line = {
      {"prompt", {{{"role", "user"}, {"content", "2+2?"}},
                  {{"role", "assistant"}, {"content", "5"}},
                  {{"role", "user"}, {"content", "Sure?"}}}},
      {"completion", {{{"role", "assistant"}, {"content", "4, sorry."}}}}};
  EXPECT_EQ(trainedText("qwen2_5", encode("qwen2_5", line)), "4, sorry.<|im_end|>");
}

TEST(SampleEncoder, TextIsLanguageModellingWithTheEos) {
  const jsonl::Sample s = encode("qwen2_5", {{"text", "Hello world"}});
  EXPECT_EQ(*s.text, "Hello world" + model("qwen2_5").chat->eosToken());
  EXPECT_EQ(s.labels, s.ids);
  // Already ending in the EOS: not doubled.
  EXPECT_EQ(encode("qwen2_5", {{"text", *s.text}}).text, s.text);
}

TEST(SampleEncoder, InputIdsLinesAreTakenAsTheyAre) {
  const jsonl::Sample s = encode("qwen2_5", {{"input_ids", {5, 6, 7}}, {"labels", {-100, 6, 7}}});
  EXPECT_EQ(s.ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(s.labels, (std::vector<int32_t>{-100, 6, 7}));
  EXPECT_FALSE(s.text.has_value());
  // A tokenized dataset's text column stays a column.
  EXPECT_EQ(encode("qwen2_5", {{"input_ids", {5, 6}}, {"text", "ab"}}).ids,
            (std::vector<int32_t>{5, 6}));
}

/// The one-line error of encoding `line`, "" when it is accepted.
std::string refusal(const std::string &line, int64_t vocab = 1 << 20,
                    bool withTokenizer = true) {
  const Model &m = model("qwen2_5");
  SampleEncoder e(vocab, withTokenizer ? m.tok : nullptr,
                  withTokenizer ? m.chat : nullptr, true);
  try {
    e.encode(line, "d.jsonl: line 3");
  } catch (const swift::plan::UserError &err) {
    EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos);
    return err.what();
  }
  return "";
}

TEST(SampleEncoder, BadLinesAreRefusedNamingTheLineAndTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"messages": [{"role": "robot", "content": "x"}]})",
       "d.jsonl: line 3: \"messages[0].role\" is \"robot\": expected system, user or assistant"},
      {R"({"messages": [{"role": "user", "content": ["x"]}]})",
       "d.jsonl: line 3: \"messages[0].content\" is array"},
      {R"({"messages": [{"role": "user"}]})", "d.jsonl: line 3: missing \"messages[0].content\""},
      {R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": " "}]})",
       "d.jsonl: line 3: \"messages[1].content\": an assistant turn with no content"},
      {R"({"messages": [{"role": "user", "content": "a"}]})",
       "d.jsonl: line 3: no assistant message: nothing to train on"},
      {R"({"messages": "hi"})", "d.jsonl: line 3: \"messages\" is string, not a list of messages"},
      {R"({"conversations": [{"from": "bot", "value": "x"}]})",
       "d.jsonl: line 3: \"conversations[0].from\" is \"bot\""},
      {R"({"text": "a", "messages": []})", "d.jsonl: line 3: the keys of two formats"},
      {R"({"instruction": "a"})", "d.jsonl: line 3: \"instruction\" without its pair"},
      {R"({"question": "a"})", "d.jsonl: line 3: no known format"},
      {R"({"labels": [1]})", "d.jsonl: line 3: missing \"input_ids\""},
      {R"({"text": 5})", "d.jsonl: line 3: \"text\" is number 5, not a string"},
      {R"([1])", "d.jsonl: line 3: expected an object"},
      {R"({"text": "a" "b"})", "d.jsonl: line 3"},
  };
  for (const auto &[line, want] : cases)
    EXPECT_EQ(refusal(line).rfind(want, 0), 0u) << line << "\n  got: " << refusal(line);
  // Text without a tokenizer says what to pass.
  EXPECT_NE(refusal(R"({"text": "hello"})", 1 << 20, false).find("needs the model's tokenizer"),
            std::string::npos);
}

} // namespace
} // namespace swift::data

namespace swift::data {
namespace {
TEST(SampleEncoder, ATokenizerWhoseIdsTheModelDoesNotHoldIsRefused) {
  const Model &m = model("qwen2_5");
  try {
    SampleEncoder(151000, m.tok, m.chat, true, "m/config.json: vocab_size");
    FAIL() << "accepted";
  } catch (const swift::plan::UserError &e) {
    EXPECT_NE(std::string(e.what()).find("m/config.json: vocab_size"), std::string::npos)
        << e.what();
  }
  // Qwen2.5's config.json has 151,936 rows for its 151,665 ids.
  SampleEncoder(151936, m.tok, m.chat, true);
}
} // namespace
} // namespace swift::data

namespace swift::data {
namespace {
namespace fs = std::filesystem;

TEST(SampleEncoder, AModelDirectorysFilesAreReadAtTheFirstTextLine) {
  const fs::path dir = fs::path(testing::TempDir()) / "encoder-model";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string src = std::string(SWIFT_TOKENIZERS_DIR) + "/qwen2_5/";
  // Token-id lines need no tokenizer: a directory without one is fine
  // until a text line comes, which says what it needs.
  SampleEncoder none = SampleEncoder::fromModelDir(dir.string(), "", 151936, true,
                                                   "config.json", "pass --weights DIR");
  EXPECT_EQ(none.encode(R"({"input_ids": [1, 2]})", "l")->ids, (std::vector<int32_t>{1, 2}));
  try {
    none.encode(R"({"text": "a"})", "d.jsonl: line 2");
    FAIL() << "accepted";
  } catch (const swift::plan::UserError &e) {
    EXPECT_EQ(std::string(e.what()),
              "d.jsonl: line 2: a \"text\" line is text and needs the model's "
              "tokenizer: pass --weights DIR");
  }
  fs::copy_file(src + "tokenizer.json", dir / "tokenizer.json");
  fs::copy_file(src + "tokenizer_config.json", dir / "tokenizer_config.json");
  const std::string chat = kChat.dump();
  auto text = [&](const std::string &chatFile) {
    return *SampleEncoder::fromModelDir(dir.string(), chatFile, 151936, true, "config.json", "")
                .encode(chat, "l")
                ->text;
  };
  // tokenizer_config.json's template, then chat_template.jinja (as
  // transformers saves it) over it, then --chat-template over both.
  EXPECT_EQ(text(""), *encode("qwen2_5", kChat).text);
  {
    std::ofstream(dir / "chat_template.jinja")
        << "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}";
  }
  EXPECT_EQ(text("").substr(0, 32), "[system]You are terse.[user]Say ");
  {
    std::ofstream(dir / "mine.jinja") << "{% for m in messages %}{{ m.content }}|{% endfor %}";
  }
  EXPECT_EQ(text((dir / "mine.jinja").string()).substr(0, 16), "You are terse.|S");
  // The vocabulary check waits for the tokenizer too.
  SampleEncoder small = SampleEncoder::fromModelDir(dir.string(), "", 1000, true,
                                                    "m/config.json: vocab_size", "");
  EXPECT_THROW(small.encode(chat, "l"), swift::plan::UserError);
}
} // namespace
} // namespace swift::data

namespace swift::data {
namespace {
TEST(SampleEncoder, AMessagesKeysReachTheTemplateInTheLinesOrder) {
  const std::string file = ::testing::TempDir() + "/tojson.jinja";
  std::ofstream(file) << "{% for m in messages %}{{ m | tojson }}{{ m.content }}{% endfor %}";
  const Model &m = model("qwen2_5");
  auto chat = std::make_shared<const ChatTemplate>(ChatTemplate::fromFile(file, *m.chat));
  SampleEncoder e(1 << 20, m.tok, chat, true);
  const std::optional<jsonl::Sample> s = e.encode(
      R"({"messages": [{"role": "user", "content": "a", "zeta": 1, "alpha": 2}, )"
      R"({"role": "assistant", "content": "b"}]})",
      "l");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->text.value_or(""),
            R"({"role": "user", "content": "a", "zeta": 1, "alpha": 2}a)"
            R"({"role": "assistant", "content": "b"}b)");
}
} // namespace
} // namespace swift::data
