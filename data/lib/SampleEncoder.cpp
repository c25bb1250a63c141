//===- SampleEncoder.cpp - a dataset line, in the format users have, as ids -===//

#include "swift/Data/SampleEncoder.h"

#include "swift/Plan/Json.h"
#include "swift/Data/ChatTemplate.h"
#include "swift/Data/Hash.h"
#include "swift/Plan/Error.h"
#include "swift/Data/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <mutex>

namespace swift::data {
using plan::UserError;
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

/// The keys each format is recognized by (all of them present).
struct FormatKeys {
  DataFormat format;
  std::vector<const char *> keys;
};
const std::vector<FormatKeys> &formats() {
  static const std::vector<FormatKeys> table = {
      {DataFormat::Tokens, {"input_ids"}},
      {DataFormat::Messages, {"messages"}},
      {DataFormat::ShareGPT, {"conversations"}},
      {DataFormat::Alpaca, {"instruction", "output"}},
      {DataFormat::PromptCompletion, {"prompt", "completion"}},
      {DataFormat::Text, {"text"}},
  };
  return table;
}

/// ShareGPT's speaker names and the chat role each one is.
const char *shareGptRole(const std::string &from) {
  if (from == "human" || from == "user")
    return "user";
  if (from == "gpt" || from == "assistant" || from == "model")
    return "assistant";
  if (from == "system")
    return "system";
  return nullptr;
}

/// A conversation to render, with the messages whose content is trained.
struct Conversation {
  // In the line's key order: a template's tojson and items() show it, and
  // Python keeps it (nlohmann::json sorts keys).
  ordered_json messages = ordered_json::array();
  std::vector<bool> trained; // per message
};

class LineEncoder {
public:
  LineEncoder(const ordered_json &j, const std::string &where, const Tokenizer *tok,
              const ChatTemplate *chat, bool assistantOnly, const std::string &needs)
      : j_(j), where_(where), tok_(tok), chat_(chat),
        assistantOnly_(assistantOnly), needs_(needs) {}

  [[noreturn]] void fail(const std::string &why) const {
    throw UserError(where_ + ": " + why);
  }

  /// The string at `key` of `o` (named `field` in errors).
  const std::string &str(const ordered_json &o, const char *key,
                         const std::string &field) const {
    auto it = o.find(key);
    if (it == o.end())
      fail("missing \"" + field + "\"");
    if (!it->is_string())
      fail("\"" + field + "\" is " + std::string(it->type_name()) +
           " " + plan::briefText(it->dump(-1, ' ', false, json::error_handler_t::replace), 40) +
           ", not a string");
    return it->get_ref<const std::string &>();
  }

  const Tokenizer &tokenizer(DataFormat f) const {
    if (!tok_)
      fail(std::string("a \"") + formatKeys(f) +
           "\" line is text and needs the model's tokenizer: " + needs_);
    return *tok_;
  }
  const ChatTemplate &chat(DataFormat f) const {
    tokenizer(f);
    if (!chat_ || !chat_->hasTemplate())
      fail(std::string("a \"") + formatKeys(f) +
           "\" line needs a chat template, and the model's "
           "tokenizer_config.json has none: pass --chat-template FILE");
    return *chat_;
  }

  /// `messages` (key `key` of the line) checked and copied: roles
  /// system/user/assistant, string contents, an assistant turn with text.
  void addMessages(Conversation &c, const ordered_json &list, const std::string &key,
                   bool trainAssistant) const {
    if (!list.is_array())
      fail("\"" + key + "\" is " + list.type_name() + ", not a list of messages");
    for (size_t i = 0; i < list.size(); ++i) {
      const ordered_json &m = list[i];
      const std::string field = key + "[" + std::to_string(i) + "]";
      if (!m.is_object())
        fail("\"" + field + "\" is " + m.type_name() + ", not a message object");
      const std::string &role = str(m, "role", field + ".role");
      if (role != "system" && role != "user" && role != "assistant")
        fail("\"" + field + ".role\" is \"" + plan::briefText(role, 40) +
             "\": expected system, user or assistant");
      const std::string &content = str(m, "content", field + ".content");
      if (role == "assistant" && content.find_first_not_of(" \t\r\n") == std::string::npos)
        fail("\"" + field + ".content\": an assistant turn with no content");
      for (const char *k : {"reasoning_content"})
        if (m.contains(k))
          str(m, k, field + "." + k);
      c.messages.push_back(m);
      c.trained.push_back(trainAssistant && role == "assistant");
    }
  }

  /// The conversation of a ShareGPT line: from/value renamed role/content.
  void addShareGpt(Conversation &c, const ordered_json &list) const {
    if (!list.is_array())
      fail(std::string("\"conversations\" is ") + list.type_name() +
           ", not a list of turns");
    for (size_t i = 0; i < list.size(); ++i) {
      const ordered_json &m = list[i];
      const std::string field = "conversations[" + std::to_string(i) + "]";
      if (!m.is_object())
        fail("\"" + field + "\" is " + m.type_name() + ", not a turn object");
      const std::string &from = str(m, "from", field + ".from");
      const char *role = shareGptRole(from);
      if (!role)
        fail("\"" + field + ".from\" is \"" + plan::briefText(from, 40) +
             "\": expected human, gpt or system (or user, assistant)");
      const std::string &value = str(m, "value", field + ".value");
      if (std::string(role) == "assistant" &&
          value.find_first_not_of(" \t\r\n") == std::string::npos)
        fail("\"" + field + ".value\": an assistant turn with no content");
      c.messages.push_back({{"role", role}, {"content", value}});
      c.trained.push_back(std::string(role) == "assistant");
    }
  }

  /// Renders and tokenizes `c`; labels on the trained messages' content and
  /// the special token closing each of their turns.
  jsonl::Sample encodeChat(const Conversation &c, DataFormat f) const {
    if (c.messages.empty())
      fail(std::string("\"") + formatKeys(f) + "\" has no message");
    if (!std::count(c.trained.begin(), c.trained.end(), true))
      fail("no assistant message: nothing to train on");
    const Tokenizer &t = tokenizer(f);
    const ChatTemplate &templ = chat(f);
    Rendered r;
    try {
      r = templ.renderOrdered(c.messages, /*addGenerationPrompt=*/false);
    } catch (const UserError &e) {
      fail(std::string("the chat template: ") + e.what());
    }
    const Tokenizer::Encoding e = t.encode(r.text, /*addSpecialTokens=*/false);
    jsonl::Sample out;
    out.ids.assign(e.ids.begin(), e.ids.end());
    out.labels.assign(e.ids.size(), jsonl::kIgnore);
    if (!assistantOnly_) {
      out.labels = out.ids;
    } else {
      // The output ranges of trained content, in order.
      std::vector<std::pair<size_t, size_t>> spans;
      for (const SourceSpan &s : r.spans)
        if (s.source >= 0 && size_t(s.source) < c.trained.size() &&
            c.trained[s.source] && s.end > s.begin)
          spans.emplace_back(s.begin, s.end);
      std::sort(spans.begin(), spans.end());
      // Adjacent or overlapping pieces of content are one run.
      std::vector<std::pair<size_t, size_t>> runs;
      for (const auto &s : spans)
        if (!runs.empty() && s.first <= runs.back().second)
          runs.back().second = std::max(runs.back().second, s.second);
        else
          runs.push_back(s);
      spans.swap(runs);
      size_t k = 0; // the first span that may still overlap token i
      for (size_t i = 0; i < e.ids.size(); ++i) {
        const auto [b, en] = e.offsets[i];
        while (k < spans.size() && spans[k].second <= b)
          ++k;
        if (k < spans.size() && spans[k].first < en && b < en) {
          out.labels[i] = out.ids[i];
          // The end of a trained run: the turn's closing special token, past
          // whitespace-only tokens.
          const bool lastOfRun = i + 1 == e.ids.size() ||
                                 e.offsets[i + 1].first >= spans[k].second;
          if (!lastOfRun)
            continue;
          for (size_t n = i + 1; n < e.ids.size(); ++n) {
            if (t.isSpecial(e.ids[n])) {
              out.labels[n] = out.ids[n];
              break;
            }
            const auto [nb, ne] = e.offsets[n];
            if (r.text.find_first_not_of(" \t\r\n", nb) < ne)
              break;
          }
        }
      }
    }
    if (std::all_of(out.labels.begin(), out.labels.end(),
                    [](int32_t l) { return l == jsonl::kIgnore; }))
      fail("the chat template renders none of the assistant messages' "
           "content (e.g. Qwen3's drops an earlier turn's <think> block): "
           "nothing to train on");
    out.text = std::move(r.text);
    return out;
  }

  /// `prefix` + `trained` (+ EOS) as TRL tokenizes a string sample: the
  /// tokenizer's special tokens (e.g. Llama's BOS), no template.
  jsonl::Sample encodePlain(const std::string &prefix, const std::string &trained,
                            DataFormat f) const {
    const Tokenizer &t = tokenizer(f);
    const std::string &eos = chat_ ? chat_->eosToken() : std::string();
    std::string text = prefix + trained;
    // TRL's add_eos: the EOS text is appended unless the sample ends in it.
    if (!eos.empty() && (text.size() < eos.size() ||
                         text.compare(text.size() - eos.size(), eos.size(), eos)))
      text += eos;
    const Tokenizer::Encoding e = t.encode(text, /*addSpecialTokens=*/true);
    jsonl::Sample out;
    out.ids.assign(e.ids.begin(), e.ids.end());
    out.labels = out.ids;
    if (assistantOnly_ && !prefix.empty())
      for (size_t i = 0; i < e.ids.size(); ++i)
        // The prompt's tokens, and those the post-processor adds before it.
        if (e.offsets[i].second <= prefix.size())
          out.labels[i] = jsonl::kIgnore;
    out.text = std::move(text);
    return out;
  }

  jsonl::Sample encode(DataFormat f) const {
    switch (f) {
    case DataFormat::Tokens:
      break; // the caller's
    case DataFormat::Messages: {
      Conversation c;
      addMessages(c, j_.at("messages"), "messages", true);
      return encodeChat(c, f);
    }
    case DataFormat::ShareGPT: {
      Conversation c;
      addShareGpt(c, j_.at("conversations"));
      return encodeChat(c, f);
    }
    case DataFormat::Alpaca: {
      // The user turn is the instruction, then the input after a newline
      // (as ms-swift and LLaMA-Factory join them).
      std::string user = str(j_, "instruction", "instruction");
      if (j_.contains("input") && !j_.at("input").is_null()) {
        const std::string &input = str(j_, "input", "input");
        if (!input.empty())
          user += "\n" + input;
      }
      const std::string &output = str(j_, "output", "output");
      if (output.find_first_not_of(" \t\r\n") == std::string::npos)
        fail("\"output\" is empty: an assistant turn with no content");
      Conversation c;
      if (j_.contains("system") && !j_.at("system").is_null()) {
        c.messages.push_back({{"role", "system"}, {"content", str(j_, "system", "system")}});
        c.trained.push_back(false);
      }
      c.messages.push_back({{"role", "user"}, {"content", user}});
      c.trained.push_back(false);
      c.messages.push_back({{"role", "assistant"}, {"content", output}});
      c.trained.push_back(true);
      return encodeChat(c, f);
    }
    case DataFormat::PromptCompletion: {
      const ordered_json &p = j_.at("prompt"), &q = j_.at("completion");
      if (p.is_array() || q.is_array()) {
        // TRL's conversational prompt-completion: lists of messages; the
        // completion's assistant turns are trained.
        Conversation c;
        addMessages(c, p, "prompt", false);
        addMessages(c, q, "completion", true);
        return encodeChat(c, f);
      }
      const std::string &completion = str(j_, "completion", "completion");
      if (completion.empty())
        fail("\"completion\" is empty: nothing to train on");
      return encodePlain(str(j_, "prompt", "prompt"), completion, f);
    }
    case DataFormat::Text: {
      const std::string &text = str(j_, "text", "text");
      if (text.empty())
        fail("\"text\" is empty");
      return encodePlain("", text, f);
    }
    }
    fail("internal: unhandled format");
  }

private:
  const ordered_json &j_; // the line, its keys in order
  const std::string &where_;
  const Tokenizer *tok_;
  const ChatTemplate *chat_;
  bool assistantOnly_;
  const std::string &needs_;
};

} // namespace

const char *formatKeys(DataFormat f) {
  switch (f) {
  case DataFormat::Tokens:
    return "input_ids";
  case DataFormat::Messages:
    return "messages";
  case DataFormat::ShareGPT:
    return "conversations";
  case DataFormat::Alpaca:
    return "instruction/output";
  case DataFormat::PromptCompletion:
    return "prompt/completion";
  case DataFormat::Text:
    return "text";
  }
  return "?";
}

/// The tokenizer and template, given or loaded from a model directory at
/// the first text line.
struct SampleEncoder::Text {
  std::string dir, chatTemplateFile, model, needs;
  std::once_flag once;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::shared_ptr<const ChatTemplate> chat;

  /// Loads them (once) unless given; the tokenizer must fit `vocab`.
  void load(int64_t vocab) {
    std::call_once(once, [&] {
      if (tokenizer || dir.empty() || !std::filesystem::exists(dir + "/tokenizer.json"))
        return;
      auto tok = std::make_shared<const Tokenizer>(Tokenizer::load(dir + "/tokenizer.json"));
      tok->checkFitsModel(vocab, model);
      chat = std::make_shared<const ChatTemplate>(
          ChatTemplate::fromTokenizerDir(dir, chatTemplateFile));
      tokenizer = std::move(tok);
    });
  }
};

SampleEncoder::SampleEncoder(int64_t vocab, std::shared_ptr<const Tokenizer> tokenizer,
                             std::shared_ptr<const ChatTemplate> chat, bool assistantOnly,
                             const std::string &model, std::string needs)
    : vocab_(vocab), assistantOnly_(assistantOnly), text_(std::make_shared<Text>()) {
  if (tokenizer)
    tokenizer->checkFitsModel(vocab_, model);
  text_->tokenizer = std::move(tokenizer);
  text_->chat = std::move(chat);
  text_->needs = std::move(needs);
}

SampleEncoder SampleEncoder::fromModelDir(const std::string &dir,
                                          const std::string &chatTemplateFile,
                                          int64_t vocab, bool assistantOnly,
                                          const std::string &model, std::string needs) {
  SampleEncoder e(vocab, nullptr, nullptr, assistantOnly, model, std::move(needs));
  e.text_->dir = dir;
  e.text_->chatTemplateFile = chatTemplateFile;
  e.text_->model = model;
  return e;
}

std::string SampleEncoder::fingerprint() const {
  if (text_->tokenizer || text_->chat)
    return "";
  std::string out = "SampleEncoder vocab " + std::to_string(vocab_) +
                    (assistantOnly_ ? ", assistant tokens" : ", all tokens");
  auto file = [&](const std::string &path) {
    std::error_code ec;
    if (path.empty() || !std::filesystem::is_regular_file(path, ec))
      return;
    out += "\n" + std::filesystem::path(path).filename().string() + " " +
           hex64(hashFile(path));
  };
  if (!text_->dir.empty())
    for (const char *name :
         {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"})
      file(text_->dir + "/" + name);
  if (!text_->chatTemplateFile.empty()) {
    out += "\n--chat-template";
    file(text_->chatTemplateFile);
  }
  return out;
}

void SampleEncoder::feed(TokenizeOptions &o) const {
  auto self = std::make_shared<const SampleEncoder>(*this);
  o.lineToSample = [self](const std::string &line, const std::string &where) {
    return self->encode(line, where);
  };
  o.key = fingerprint();
}

DataFormat SampleEncoder::formatOf(const ordered_json &j, const std::string &where) {
  if (!j.is_object())
    throw UserError(where + ": expected an object (\"messages\", "
                    "\"conversations\", \"instruction\"/\"output\", "
                    "\"prompt\"/\"completion\", \"text\" or \"input_ids\"), got " +
                    j.type_name());
  // Token ids are what trains: a tokenized dataset keeps its text column
  // (HF's map(tokenize) does), which is then only a column.
  if (j.contains("input_ids"))
    return DataFormat::Tokens;
  std::vector<DataFormat> found;
  for (const FormatKeys &f : formats())
    if (std::all_of(f.keys.begin(), f.keys.end(),
                    [&](const char *k) { return j.contains(k); }))
      found.push_back(f.format);
  if (found.size() > 1)
    throw UserError(where + ": the keys of two formats (\"" +
                    formatKeys(found[0]) + "\" and \"" + formatKeys(found[1]) +
                    "\"): keep one");
  if (found.empty()) {
    std::string why = "no known format: expected \"messages\", "
                      "\"conversations\", \"instruction\" and \"output\", "
                      "\"prompt\" and \"completion\", \"text\" or \"input_ids\"";
    // Half of a format is the likelier mistake.
    for (const char *k : {"instruction", "output", "prompt", "completion"})
      if (j.contains(k))
        why = std::string("\"") + k + "\" without its pair (alpaca: "
              "\"instruction\" and \"output\"; \"prompt\" and \"completion\")";
    for (const char *k : {"labels", "attention_mask"})
      if (j.contains(k))
        why = std::string("missing \"input_ids\" (a token line: it has \"") + k + "\")";
    throw UserError(where + ": " + why);
  }
  return found[0];
}

std::optional<jsonl::Sample> SampleEncoder::encode(const std::string &line,
                                                   const std::string &where) const {
  if (line.find_first_not_of(" \t\r") == std::string::npos)
    return std::nullopt; // blank lines carry no sample (as HF's JSON reader)
  // Parsed once, its keys in order (a template's tojson and items() show
  // them as written, as Python keeps them).
  const ordered_json j = plan::parseOrderedJson(line, where);
  const DataFormat f = formatOf(j, where);
  if (f == DataFormat::Tokens)
    return jsonl::parseLine(j, line, vocab_, where);
  text_->load(vocab_);
  return LineEncoder(j, where, text_->tokenizer.get(), text_->chat.get(),
                     assistantOnly_, text_->needs)
      .encode(f);
}

} // namespace swift::data
