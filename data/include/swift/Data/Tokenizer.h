//===- Tokenizer.h - a model directory's tokenizer.json (HF tokenizers) ---===//
//
// Reads the tokenizer.json of HF `tokenizers` and encodes text to exactly
// the ids that library produces: added and special tokens matched first
// (lstrip/rstrip/single_word/normalized as it does), the normalizers
// (NFC/NFD/NFKC/NFKD, Prepend, Replace of a string, Sequence), the
// pre-tokenizers (Split by a regex or string, Isolated or Removed;
// ByteLevel; Sequence), the BPE model (merge ranks, ignore_merges,
// byte_fallback, unk_token, fuse_unk) and the post-processor
// (TemplateProcessing's `single`, ByteLevel: nothing for ids; Sequence).
// Anything else (WordPiece, Unigram, WordLevel, other normalizers,
// pre-tokenizers or post-processors, dropout, regex constructs whose meaning
// differs between Oniguruma and ICU) is refused with a UserError naming
// the file and the field: never approximated. docs/runtime.md "Tokenizer".
//
// Text that is not valid UTF-8 is read as Python's
// bytes.decode("utf-8", errors="replace") and the WHATWG TextDecoder read
// it: each maximal invalid subsequence becomes U+FFFD; its offsets are the
// invalid bytes.
//
// Torch-free (SwiftFormats). encode() is const and safe to call from many
// threads at once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swift::data {

class Tokenizer {
public:
  /// Reads `tokenizerJson` (a regular file, strict JSON); a UserError
  /// "FILE: FIELD: why" for anything it cannot encode exactly.
  static Tokenizer load(const std::string &tokenizerJson);
  /// The same from the file's text; `file` names it in errors.
  static Tokenizer fromJsonText(const std::string &text, const std::string &file);

  Tokenizer(Tokenizer &&) noexcept;
  Tokenizer &operator=(Tokenizer &&) noexcept;
  ~Tokenizer();

  struct Encoding {
    std::vector<int64_t> ids;
    /// The bytes [begin, end) of the input text each id comes from; an
    /// empty range at the place it stands for the ids the post-processor
    /// adds ((0,0) before the text, (n,n) after it) and for a prefix space
    /// the pre-tokenizer adds on its own.
    std::vector<std::pair<size_t, size_t>> offsets;
  };
  /// The ids of `text`; the post-processor's special tokens (e.g. BOS) when
  /// `addSpecialTokens`.
  Encoding encode(std::string_view text, bool addSpecialTokens) const;
  /// The same, appending to `ids` (and to `offsets` when given): no
  /// Encoding to allocate in a loop.
  void encodeInto(std::string_view text, bool addSpecialTokens,
                  std::vector<int64_t> &ids,
                  std::vector<std::pair<size_t, size_t>> *offsets) const;

  /// The highest id + 1, added tokens included.
  int64_t vocabSize() const;
  /// The id of a token (added tokens first, then the model's vocabulary).
  std::optional<int64_t> tokenToId(std::string_view token) const;
  /// The token of an id ("" for an id in no vocabulary below vocabSize());
  /// a UserError for an id outside [0, vocabSize()).
  const std::string &idToToken(int64_t id) const;
  /// Whether `id` is an added token marked "special".
  bool isSpecial(int64_t id) const;
  /// A UserError unless every id fits a model of `modelVocabSize`
  /// embedding rows: "TOKENIZER: has N ids (highest ID "TOKEN"), more than
  /// MODEL's vocab_size M". `model` names the model's config (its file and
  /// field).
  void checkFitsModel(int64_t modelVocabSize, const std::string &model) const;
  /// The file it was read from.
  const std::string &file() const;

  struct Impl;

private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace swift::data
