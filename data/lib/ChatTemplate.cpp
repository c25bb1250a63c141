//===- ChatTemplate.cpp - a model's chat template -------------------------===//

#include "swift/Data/ChatTemplate.h"

#include "swift/Plan/Error.h"
#include "swift/Plan/Json.h"

#include <filesystem>

namespace swift::data {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr uint64_t kMaxConfigBytes = 64ull << 20;   // tokenizer_config.json
constexpr uint64_t kMaxTemplateBytes = 1ull << 20;  // a template file

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool looksLikeJsonText(const std::string &s) {
  size_t k = s.find_first_not_of(" \t\r\n");
  return k != std::string::npos && s[k] == '{';
}

/// The chat_template of a parsed tokenizer_config.json, or "" when none.
std::string templateOf(const json &config, const std::string &file) {
  plan::JsonField root{config, "", file};
  root.object();
  if (!config.contains("chat_template") || config["chat_template"].is_null())
    return "";
  const json &t = config["chat_template"];
  if (t.is_string())
    return t.get<std::string>();
  plan::JsonField field = root.at("chat_template");
  if (!t.is_array())
    field.fail("expected a string or a list of {\"name\", \"template\"}");
  for (size_t k = 0; k < t.size(); ++k) {
    plan::JsonField e = field.index(k);
    e.object();
    if (e.at("name").string() == "default")
      return e.at("template").string();
  }
  field.fail("a list of templates without one named \"default\"");
}

/// A special token's text: a string or an AddedToken {"content": ...}.
std::string tokenText(const json &v, const plan::JsonField &field) {
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_object())
    return field.at("content").string();
  field.fail("expected a string or an object with \"content\"");
}

} // namespace

ChatTemplate ChatTemplate::fromConfigJson(const json &config, const std::string &file,
                                          bool needTemplate) {
  ChatTemplate c;
  plan::JsonField root{config, "", file};
  root.object();
  for (const char *key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                          "cls_token", "mask_token"}) {
    if (!config.contains(key) || config[key].is_null())
      continue;
    c.specialTokens_[key] = tokenText(config[key], root.at(key));
  }
  if (config.contains("additional_special_tokens") &&
      !config["additional_special_tokens"].is_null()) {
    plan::JsonField list = root.at("additional_special_tokens");
    list.array();
    ojson tokens = ojson::array();
    for (size_t k = 0; k < list.size(); ++k)
      tokens.push_back(tokenText(config["additional_special_tokens"][k], list.index(k)));
    if (!tokens.empty())
      c.specialTokens_["additional_special_tokens"] = tokens;
  }
  if (c.specialTokens_.contains("eos_token"))
    c.eos_ = c.specialTokens_["eos_token"].get<std::string>();
  if (c.specialTokens_.contains("bos_token"))
    c.bos_ = c.specialTokens_["bos_token"].get<std::string>();
  std::string text = templateOf(config, file);
  c.name_ = file + " chat_template";
  if (!text.empty())
    c.template_ = std::make_shared<const jinja::Template>(jinja::Template::parse(text, c.name_));
  else
    SWIFT_CHECK(!needTemplate, file,
                ": has no chat_template; pass --chat-template FILE (docs/runtime.md, Chat "
                "templates)");
  return c;
}

namespace {
json readConfig(const std::string &config, std::string &file) {
  if (looksLikeJsonText(config)) {
    file = "tokenizer_config.json";
    return plan::parseJson(config, file);
  }
  file = config;
  return plan::readJsonFile(config, "a tokenizer_config.json", kMaxConfigBytes);
}
} // namespace

/// The chat_template.jinja of a tokenizer directory, "" when there is none:
/// it is the template, before tokenizer_config.json's, as transformers
/// reads a tokenizer directory (newer HF repositories keep it there).
static std::string templateBeside(const std::filesystem::path &dir) {
  const std::filesystem::path jinja = dir / "chat_template.jinja";
  std::error_code ec;
  return std::filesystem::exists(jinja, ec) ? jinja.string() : "";
}

ChatTemplate ChatTemplate::fromTokenizerConfig(const std::string &config) {
  std::string file;
  json j = readConfig(config, file);
  if (!looksLikeJsonText(config))
    if (std::string jinja = templateBeside(std::filesystem::path(config).parent_path());
        !jinja.empty())
      return fromFile(jinja, fromConfigJson(j, file, false));
  return fromConfigJson(j, file, true);
}

ChatTemplate ChatTemplate::fromTokenizerDir(const std::string &dir,
                                            const std::string &templateFile) {
  ChatTemplate special = specialTokensOf(dir + "/tokenizer_config.json");
  const std::string file = !templateFile.empty() ? templateFile : templateBeside(dir);
  return file.empty() ? special : fromFile(file, special);
}

ChatTemplate ChatTemplate::specialTokensOf(const std::string &config) {
  std::string file;
  json j = readConfig(config, file);
  return fromConfigJson(j, file, false);
}

ChatTemplate ChatTemplate::fromFile(const std::string &templateFile,
                                    const ChatTemplate &specialTokensFrom) {
  ChatTemplate c = specialTokensFrom;
  std::string text;
  if (endsWith(templateFile, ".json")) {
    json j = plan::readJsonFile(templateFile, "a tokenizer_config.json with a chat_template",
                                kMaxConfigBytes);
    text = templateOf(j, templateFile);
    SWIFT_CHECK(!text.empty(), templateFile, ": has no chat_template");
    c.name_ = templateFile + " chat_template";
  } else {
    text = plan::readRegularFile(templateFile, "a Jinja chat template", kMaxTemplateBytes);
    c.name_ = templateFile;
  }
  c.template_ = std::make_shared<const jinja::Template>(jinja::Template::parse(text, c.name_));
  return c;
}

Rendered ChatTemplate::render(const json &messages, bool addGenerationPrompt,
                              const json &extraContext) const {
  // nlohmann::json -> ordered_json keeps its (sorted) order.
  return renderOrdered(ojson(messages), addGenerationPrompt, ojson(extraContext));
}

Rendered ChatTemplate::renderOrdered(const ojson &messages, bool addGenerationPrompt,
                                     const ojson &extraContext) const {
  SWIFT_CHECK(template_, name_, ": no chat template to render");
  SWIFT_CHECK(messages.is_array(), name_, ": messages must be a list, not ",
              messages.type_name());
  SWIFT_CHECK(extraContext.is_object(), name_, ": the extra context must be an object");
  ojson context = specialTokens_;
  context["messages"] = messages;
  context["tools"] = nullptr;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = addGenerationPrompt;
  for (auto it = extraContext.begin(); it != extraContext.end(); ++it)
    context[it.key()] = it.value();
  std::vector<jinja::Tag> tags;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ojson &m = messages[i];
    if (!m.is_object())
      continue;
    std::string base = "/messages/" + std::to_string(i);
    if (m.contains("content") && m["content"].is_string())
      tags.push_back({base + "/content", int(i), false});
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
      tags.push_back({base + "/reasoning_content", int(i), true});
  }
  return template_->render(context, tags, limits);
}

} // namespace swift::data
