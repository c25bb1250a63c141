//===- TokenizerWithoutIcu.cpp - the Tokenizer of a build without ICU -----===//
//
// The tokenizer's Unicode (split regexes, normalization forms, character
// classes) is ICU's (TokenizerText.cpp). A machine without ICU's headers
// (libicu-dev) still builds swift-run for token-id data, with this file in
// place of Tokenizer.cpp and TokenizerText.cpp: reading a tokenizer.json
// is refused with how to get one that can (runtime/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "swift/Data/Tokenizer.h"

#include "swift/Plan/Error.h"

namespace swift::data {

struct Tokenizer::Impl {};

namespace {
[[noreturn]] void unavailable(const std::string &file) {
  throw plan::UserError(file + ": this swift-run was built without ICU (Debian/Ubuntu: "
                               "apt install libicu-dev, then rebuild), so it cannot read "
                               "a tokenizer; text data needs one (token-id data does not)");
}
} // namespace

Tokenizer Tokenizer::load(const std::string &tokenizerJson) { unavailable(tokenizerJson); }
Tokenizer Tokenizer::fromJsonText(const std::string &, const std::string &file) {
  unavailable(file);
}
Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer &&) noexcept = default;
Tokenizer &Tokenizer::operator=(Tokenizer &&) noexcept = default;
Tokenizer::~Tokenizer() = default;
// No Tokenizer exists in this build: nothing below is reachable.
Tokenizer::Encoding Tokenizer::encode(std::string_view, bool) const { unavailable(""); }
void Tokenizer::encodeInto(std::string_view, bool, std::vector<int64_t> &,
                           std::vector<std::pair<size_t, size_t>> *) const {
  unavailable("");
}
int64_t Tokenizer::vocabSize() const { unavailable(""); }
std::optional<int64_t> Tokenizer::tokenToId(std::string_view) const { unavailable(""); }
const std::string &Tokenizer::idToToken(int64_t) const { unavailable(""); }
bool Tokenizer::isSpecial(int64_t) const { unavailable(""); }
void Tokenizer::checkFitsModel(int64_t, const std::string &) const { unavailable(""); }
const std::string &Tokenizer::file() const { unavailable(""); }

} // namespace swift::data
