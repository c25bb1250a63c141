//===- ChatTemplate.h - a model's chat template -----------------*- C++ -*-===//
//
// The chat template of an HF tokenizer (tokenizer_config.json's
// `chat_template`, or a --chat-template file) rendered as transformers'
// apply_chat_template(messages, tokenize=False, add_generation_prompt=...)
// does, through the Jinja subset of Jinja.h, with provenance: message i's
// `content` and `reasoning_content` strings are tagged with source i, and
// the render's spans say where their bytes stand in the text (the
// assistant-only loss mask of docs/runtime.md "Chat templates").
//
// The context is transformers': the special tokens of tokenizer_config.json
// (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
// mask_token: strings or AddedToken objects {"content": ...}; absent or null
// ones are left undefined; additional_special_tokens as a list), messages,
// tools = None, documents = None, add_generation_prompt, then the caller's
// extra context (enable_thinking, tools, date_string, ...) over them.
// Errors are UserErrors of one line naming the file and the template's
// line and column. Immutable once made: render from many threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Data/Jinja.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace swift::data {

class ChatTemplate {
public:
  /// The template and special tokens of a tokenizer_config.json: `config`
  /// is the file's path, or its JSON text itself when it starts with '{'.
  /// chat_template is a string, or HF's list of {"name", "template"} (the
  /// one named "default" is taken). A chat_template.jinja in the file's
  /// directory is the template instead (as transformers reads a tokenizer
  /// directory). A config without either is an error ("... has no
  /// chat_template; pass --chat-template FILE").
  static ChatTemplate fromTokenizerConfig(const std::string &config);

  /// --chat-template FILE: a file ending in ".json" is read as a
  /// tokenizer_config.json (its chat_template); any other file is the Jinja
  /// text itself (as HF's chat_template.jinja). The special tokens come from
  /// `specialTokensFrom` (the model's tokenizer_config.json).
  static ChatTemplate fromFile(const std::string &templateFile,
                               const ChatTemplate &specialTokensFrom);

  /// The special tokens of a tokenizer_config.json with no template (one
  /// whose template comes from --chat-template).
  static ChatTemplate specialTokensOf(const std::string &config);

  /// A tokenizer directory's special tokens (DIR/tokenizer_config.json) and
  /// template, first found: `templateFile` (--chat-template, as fromFile),
  /// DIR/chat_template.jinja, tokenizer_config.json's chat_template; none
  /// is no error here (hasTemplate() is false).
  static ChatTemplate fromTokenizerDir(const std::string &dir,
                                       const std::string &templateFile = "");

  /// Renders `messages` (a JSON array of message objects). Message i's
  /// content and reasoning_content (when strings) are tagged with source i.
  Rendered render(const nlohmann::json &messages, bool addGenerationPrompt,
                  const nlohmann::json &extraContext = nlohmann::json::object()) const;
  /// The same with insertion-ordered objects: a dict's order shows through
  /// `tojson` and `items()`, and Python keeps it (nlohmann::json sorts).
  Rendered renderOrdered(const nlohmann::ordered_json &messages, bool addGenerationPrompt,
                         const nlohmann::ordered_json &extraContext =
                             nlohmann::ordered_json::object()) const;

  const std::string &eosToken() const { return eos_; }
  const std::string &bosToken() const { return bos_; }
  bool hasTemplate() const { return template_ != nullptr; }
  /// Where the template came from ("DIR/tokenizer_config.json chat_template").
  const std::string &name() const { return name_; }
  /// The bounds of each render (tests and the fuzzer lower them).
  jinja::Limits limits;

private:
  static ChatTemplate fromConfigJson(const nlohmann::json &config, const std::string &file,
                                     bool needTemplate);
  std::shared_ptr<const jinja::Template> template_;
  nlohmann::ordered_json specialTokens_ = nlohmann::ordered_json::object();
  std::string eos_, bos_, name_;
};

} // namespace swift::data
