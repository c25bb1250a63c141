//===- SampleEncoder.h - a dataset line, in the format users have, as ids -===//
//
// One line of `--data FILE.jsonl` becomes one token sample, by the keys of
// the line (docs/runtime.md "Datasets"):
//
//   messages             [{"role": "system"|"user"|"assistant",
//                          "content": "..."}, ...]: the chat template
//   conversations        ShareGPT [{"from": "human"|"gpt"|"system",
//                          "value": "..."}]: the same, roles renamed
//   instruction, output  alpaca (optional "input" and "system"): one user
//                          turn (instruction, a blank line, input) and one
//                          assistant turn, through the template
//   prompt, completion   strings: prompt + completion + EOS, tokenized as
//                          TRL does (the tokenizer's special tokens, no
//                          template); lists of messages: through the template
//   text                 plain language modelling: text + EOS, every token
//                          trained
//   input_ids            token ids as they are (jsonl::parseLine); the
//                          line's other keys are columns (a tokenized
//                          dataset keeps its "text")
//
// The labels (HF's convention: labels[k] = ids[k], or -100 where no loss):
// with `assistantOnly`, a token is trained when its text overlaps the
// content of an assistant message (of the completion, for
// prompt/completion) as it stands in the rendered conversation (the
// template renderer tracks where each output byte comes from:
// ChatTemplate.h), plus the special token that closes that turn (the first
// token after the content, when it is special, past whitespace-only
// tokens: <|im_end|>, <|eot_id|>, </s>). The template's own text is not
// trained. Without it, every token is trained (as TRL's default for chat
// data, and as ms-swift's loss_scale "all").
//
// Torch-free (SwiftFormats): the tokenizing runs on every core, and the
// fuzz build links it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Data/Dataset.h"
#include "swift/Data/Jsonl.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace swift::data {

class Tokenizer;
class ChatTemplate;

/// The format of a dataset line, by its keys.
enum class DataFormat { Tokens, Messages, ShareGPT, Alpaca, PromptCompletion, Text };

/// The key that names the format in messages ("messages", "conversations",
/// "instruction/output", "prompt/completion", "text", "input_ids").
const char *formatKeys(DataFormat f);

class SampleEncoder {
public:
  /// `tokenizer` and `chat` may be null: then only input_ids lines are
  /// taken, and a text line is refused naming what it needs (`needs`, e.g.
  /// "pass --weights MODEL_DIR"). `chat` holds the special tokens (the
  /// EOS that text samples end with) and, when it has one, the template:
  /// without it the chat formats are refused. The tokenizer's ids must fit
  /// the model's `vocab` (Tokenizer::checkFitsModel; `model` names the
  /// model's config in that error).
  SampleEncoder(int64_t vocab, std::shared_ptr<const Tokenizer> tokenizer,
                std::shared_ptr<const ChatTemplate> chat, bool assistantOnly,
                const std::string &model = "the model's vocab_size",
                std::string needs = "pass --weights MODEL_DIR (a directory "
                                    "with tokenizer.json)");

  /// The tokenizer files of a model directory, read when the first text
  /// line comes (token-id data never reads them): DIR/tokenizer.json, and
  /// the special tokens and template of DIR/tokenizer_config.json. The
  /// template is, first found: `chatTemplateFile` (--chat-template: Jinja
  /// text, or a .json tokenizer_config), DIR/chat_template.jinja (where
  /// transformers saves it), tokenizer_config.json's chat_template. `dir`
  /// empty or without tokenizer.json: text lines are refused, saying
  /// `needs`.
  static SampleEncoder fromModelDir(const std::string &dir,
                                    const std::string &chatTemplateFile,
                                    int64_t vocab, bool assistantOnly,
                                    const std::string &model, std::string needs);

  /// The format of a line's JSON object, by its keys; UserError (starting
  /// with `where`) for none or two.
  static DataFormat formatOf(const nlohmann::ordered_json &line, const std::string &where);

  /// The sample of one line (its `text`: what was tokenized, none for
  /// input_ids lines), or nullopt for a blank line. Every error is a
  /// UserError of one line starting with `where` ("data.jsonl: line 7"),
  /// naming the key and why: no known format, keys of two formats, an
  /// unknown role, a message or content that is no string, an assistant
  /// turn with no content, no assistant turn or none the template renders,
  /// a chat template error. The sample's length is not checked here
  /// (training.truncation: Data.cpp). Safe from many threads at once.
  std::optional<jsonl::Sample> encode(const std::string &line,
                                      const std::string &where) const;

  /// What makes this encoder's samples, for the token cache's key
  /// (Dataset.h): the vocabulary size, the label rule and the content of
  /// the tokenizer files and template it reads. Empty for an encoder given
  /// its tokenizer as an object: its samples are not cached.
  std::string fingerprint() const;
  /// This encoder as `o`'s maker of samples: its lineToSample (a copy of
  /// this encoder, shared by the threads) and key (fingerprint()).
  void feed(TokenizeOptions &o) const;
  struct Text; // the tokenizer and template, loaded once

private:
  int64_t vocab_;
  bool assistantOnly_;
  std::shared_ptr<Text> text_;
};

} // namespace swift::data
