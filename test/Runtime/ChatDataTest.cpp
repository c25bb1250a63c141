//===- ChatDataTest.cpp - swift-run on chat and text data ------------------===//
//
// The real swift-run on JSONL lines in users' formats, tokenized with the
// real Qwen2.5 tokenizer and chat template (.cache/tokenizers, fetched by
// scripts/fetch_tokenizers.sh) for a tiny model with Qwen2.5's vocabulary:
// what --inspect-data shows, training on it, the loss_on key, the exported
// tokenizer files, and the refusals.
//
//===----------------------------------------------------------------------===//

#include "RunPlan.h"

#include <gtest/gtest.h>

namespace swift::rt::testing {
namespace {

const std::string kQwen = std::string(SWIFT_TOKENIZERS_DIR) + "/qwen2_5";

/// The tiny plan with Qwen2.5's 151,936 embedding rows.
json qwenPlan() {
  if (!fs::exists(kQwen + "/tokenizer.json"))
    throw std::runtime_error(kQwen + "/tokenizer.json is missing: run scripts/fetch_tokenizers.sh");
  json p = tinyPlan(0, 1);
  p["model"]["vocab_size"] = 151936;
  p["training"]["sequence_length"] = 64;
  return p;
}

/// A data file of `lines` in a new directory.
std::string dataFile(const std::vector<std::string> &lines) {
  const std::string path = freshDir() + "/chat.jsonl";
  std::ofstream out(path);
  for (const std::string &l : lines)
    out << l << "\n";
  return path;
}

const std::string kChat =
    R"({"messages": [{"role": "user", "content": "Hi, in Japanese?"}, {"role": "assistant", "content": "こんにちは"}]})";
const std::string kAlpaca = R"({"instruction": "Translate.", "input": "cat", "output": "gato"})";
const std::string kShare =
    R"({"conversations": [{"from": "human", "value": "2+2?"}, {"from": "gpt", "value": "4"}]})";
const std::string kText = R"({"text": "Plain text, trained whole."})";

std::vector<json> inspected(const Result &r) {
  std::vector<json> out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{')
      out.push_back(json::parse(line));
  return out;
}

TEST(ChatData, InspectShowsTheRenderedConversationAndItsAssistantLabels) {
  const std::string data = dataFile({kChat, kAlpaca, kShare, kText});
  Result r = runPlan(qwenPlan(), "--inspect-data 4 --tokenizer " + kQwen + " --data " + data);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::vector<json> s = inspected(r);
  ASSERT_EQ(s.size(), 4u) << r.output;
  // Qwen2.5's template adds its default system prompt.
  EXPECT_EQ(s[0]["text"],
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
            "helpful assistant.<|im_end|>\n<|im_start|>user\nHi, in Japanese?<|im_end|>\n"
            "<|im_start|>assistant\nこんにちは<|im_end|>\n");
  for (const json &j : s) {
    ASSERT_EQ(j["input_ids"].size(), j["labels"].size());
    size_t trained = 0;
    for (size_t k = 0; k < j["labels"].size(); ++k)
      if (j["labels"][k] != -100) {
        EXPECT_EQ(j["labels"][k], j["input_ids"][k]);
        ++trained;
      }
    EXPECT_GT(trained, 0u) << j.dump();
  }
  // The conversation's trained tokens: こんにちは and <|im_end|> (151645),
  // at the end but for the template's final "\n".
  const json &ids = s[0]["input_ids"], &labels = s[0]["labels"];
  const size_t n = ids.size();
  EXPECT_EQ(labels[n - 1], -100);      // "\n"
  EXPECT_EQ(labels[n - 2], 151645);    // <|im_end|>
  EXPECT_NE(labels[n - 3], -100);      // the content's last token
  EXPECT_EQ(labels[0], -100);          // <|im_start|>
  // Plain text: every token, and the EOS (<|im_end|> in Qwen2.5-Instruct's
  // config) appended as TRL does.
  EXPECT_EQ(s[3]["text"], "Plain text, trained whole.<|im_end|>");
  EXPECT_EQ(s[3]["labels"], s[3]["input_ids"]);
}

TEST(ChatData, LossOnAllTrainsTheTemplateToo) {
  json p = qwenPlan();
  p["training"]["loss_on"] = "all";
  Result r = runPlan(p, "--inspect-data 1 --tokenizer " + kQwen + " --data " + dataFile({kChat}));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::vector<json> s = inspected(r);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]["labels"], s[0]["input_ids"]);
}

TEST(ChatData, TrainsOnMixedFormatsAndExportsTheTokenizerItReadTheDataWith) {
  std::vector<std::string> lines;
  for (int k = 0; k < 4; ++k)
    lines.insert(lines.end(), {kChat, kAlpaca, kShare, kText});
  const std::string data = dataFile(lines);
  const std::string out = freshDir() + "/export";
  Result r = runPlan(qwenPlan(), "--steps 2 --tokenizer " + kQwen + " --data " + data +
                                     " --export-hf " + out);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  ASSERT_EQ(r.losses().size(), 2u) << r.output;
  for (double l : r.losses())
    EXPECT_TRUE(std::isfinite(l) && l > 5) << r.output; // ~ln(151936) = 11.9
  EXPECT_EQ(slurp(out + "/tokenizer.json"), slurp(kQwen + "/tokenizer.json"));
  EXPECT_EQ(slurp(out + "/tokenizer_config.json"), slurp(kQwen + "/tokenizer_config.json"));
}

TEST(ChatData, AChatTemplateFileRendersAndIsExportedAsTheModelsTemplate) {
  const std::string dir = freshDir();
  std::ofstream(dir + "/t.jinja")
      << "{% for m in messages %}<|im_start|>{{ m.role }}: {{ m.content }}<|im_end|>{% endfor %}";
  const std::string out = dir + "/export";
  Result r = runPlan(qwenPlan(), "--inspect-data 1 --tokenizer " + kQwen + " --chat-template " +
                                     dir + "/t.jinja --data " + dataFile({kChat}));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(inspected(r).at(0)["text"],
            "<|im_start|>user: Hi, in Japanese?<|im_end|><|im_start|>assistant: "
            "こんにちは<|im_end|>");
  Result t = runPlan(qwenPlan(), "--steps 1 --tokenizer " + kQwen + " --chat-template " + dir +
                                     "/t.jinja --data " + dataFile({kChat, kChat}) +
                                     " --export-hf " + out);
  ASSERT_EQ(t.exitCode, 0) << t.output;
  EXPECT_EQ(slurp(out + "/chat_template.jinja"), slurp(dir + "/t.jinja"));
}

TEST(ChatData, BadDataAndMissingTokenizersAreOneLineRefusals) {
  struct Case {
    std::string args, want;
  };
  const std::string bad = dataFile({kChat, R"({"messages": [{"role": "bot", "content": "x"}]})"});
  const std::vector<Case> cases = {
      {"--steps 1 --data " + dataFile({kText}),
       "a \"text\" line is text and needs the model's tokenizer: pass --weights MODEL_DIR or "
       "--tokenizer DIR"},
      {"--steps 1 --tokenizer " + kQwen + " --data " + bad,
       "chat.jsonl: line 2: \"messages[0].role\" is \"bot\": expected system, user or assistant"},
      {"--steps 1 --tokenizer /nonexistent --data " + dataFile({kText}),
       "command line: --tokenizer /nonexistent: not a directory"},
      {"--steps 1 --tokenizer " + kQwen + " --chat-template /nonexistent.jinja --data " +
           dataFile({kText}),
       "command line: --chat-template /nonexistent.jinja: no such file"},
  };
  for (const Case &c : cases) {
    Result r = runPlan(qwenPlan(), c.args);
    EXPECT_EQ(r.exitCode, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.want), std::string::npos) << c.args << "\n" << r.output;
  }
  // A tokenizer_config.json without a template (Llama 2's) for chat data;
  // a template that raises (Mistral's roles must alternate).
  const std::string twoUsers = dataFile(
      {R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}]})"});
  json big = qwenPlan();
  big["model"]["vocab_size"] = 131072;
  for (const Case &c : std::vector<Case>{
           {"--inspect-data 1 --tokenizer " + std::string(SWIFT_TOKENIZERS_DIR) +
                "/llama2 --data " + twoUsers,
            "chat.jsonl: line 1: a \"messages\" line needs a chat template, and the model's "
            "tokenizer_config.json has none: pass --chat-template FILE"},
           {"--inspect-data 1 --tokenizer " + std::string(SWIFT_TOKENIZERS_DIR) +
                "/mistral_nemo --data " + twoUsers,
            "chat.jsonl: line 1: the chat template: "},
       }) {
    Result r = runPlan(big, c.args);
    EXPECT_EQ(r.exitCode, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.want), std::string::npos) << c.args << "\n" << r.output;
  }
  Result raised = runPlan(big, "--inspect-data 1 --tokenizer " +
                                   std::string(SWIFT_TOKENIZERS_DIR) + "/mistral_nemo --data " +
                                   twoUsers);
  EXPECT_NE(raised.output.find("roles must alternate user/assistant"), std::string::npos)
      << raised.output;
  Result noTemplate = runPlan(big, "--inspect-data 1 --tokenizer " +
                                       std::string(SWIFT_TOKENIZERS_DIR) + "/llama2 --data " +
                                       twoUsers);
  EXPECT_EQ(noTemplate.output.find("the chat template"), std::string::npos)
      << noTemplate.output; // said once, not wrapped as a render error
  // A tokenizer whose ids the model does not hold.
  Result small = runPlan(tinyPlan(0, 1), "--steps 1 --tokenizer " + kQwen + " --data " +
                                             dataFile({kText}));
  EXPECT_EQ(small.exitCode, 2) << small.output;
  EXPECT_NE(small.output.find("the plan's model.vocab_size"), std::string::npos) << small.output;
}

} // namespace
} // namespace swift::rt::testing
