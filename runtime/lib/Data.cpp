//===- Data.cpp - synthetic and file-backed token sources -----------------===//
#include "swift/Runtime/Data.h"
#include "swift/Runtime/Check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace swift::rt {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class SyntheticTokens final : public TokenSource {
public:
  SyntheticTokens(int64_t vocab, int64_t seq, uint64_t seed)
      : vocab_(vocab), seq_(seq), seed_(seed) {}
  at::Tensor samples(int64_t first, int64_t count) override {
    at::Tensor t = at::empty({count, seq_ + 1}, at::kLong);
    int64_t *p = t.data_ptr<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      uint64_t h = splitmix64(seed_ ^ splitmix64(uint64_t(first + i)));
      int64_t tok = int64_t(h % uint64_t(vocab_));
      int64_t stride = 1 + int64_t((h >> 32) % 3);
      for (int64_t j = 0; j <= seq_; ++j) {
        p[i * (seq_ + 1) + j] = tok;
        tok = (tok * 5 + stride) % vocab_;
      }
    }
    return t;
  }

private:
  int64_t vocab_, seq_;
  uint64_t seed_;
};

class FileTokens final : public TokenSource {
public:
  FileTokens(const std::string &path, int64_t vocab, int64_t seq)
      : path_(path), vocab_(vocab), seq_(seq) {
    auto endsWith = [&](const char *s) {
      size_t n = std::strlen(s);
      return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
    };
    width_ = endsWith(".u32") || endsWith(".uint32") ? 4 : 2;
    fd_ = ::open(path.c_str(), O_RDONLY);
    SWIFT_CHECK(fd_ >= 0, path,
                ": cannot open data file: ", std::strerror(errno));
    struct stat st;
    SWIFT_CHECK(fstat(fd_, &st) == 0, path, ": cannot stat data file");
    bytes_ = size_t(st.st_size);
    SWIFT_CHECK(bytes_ % width_ == 0, path, ": size ", bytes_,
                " is not a multiple of ", width_, " (uint", width_ * 8,
                " token ids)");
    numTokens_ = int64_t(bytes_ / width_);
    SWIFT_CHECK(numTokens_ > seq_ + 1, path, ": holds ", numTokens_,
                " tokens; a sample needs sequence_length + 1 = ", seq_ + 1);
    data_ = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd_, 0);
    SWIFT_CHECK(data_ != MAP_FAILED, path, ": mmap failed");
  }
  ~FileTokens() override {
    if (data_ != MAP_FAILED)
      ::munmap(data_, bytes_);
    if (fd_ >= 0)
      ::close(fd_);
  }
  at::Tensor samples(int64_t first, int64_t count) override {
    at::Tensor t = at::empty({count, seq_ + 1}, at::kLong);
    int64_t *p = t.data_ptr<int64_t>();
    const int64_t span = numTokens_ - seq_;
    for (int64_t i = 0; i < count; ++i) {
      int64_t start = ((first + i) % span) * seq_ % span;
      for (int64_t j = 0; j <= seq_; ++j) {
        int64_t pos = start + j;
        int64_t tok = width_ == 2
                          ? int64_t(static_cast<const uint16_t *>(data_)[pos])
                          : int64_t(static_cast<const uint32_t *>(data_)[pos]);
        SWIFT_CHECK(tok < vocab_, path_, ": token ", pos, " is ", tok,
                    ", not below model.vocab_size ", vocab_);
        p[i * (seq_ + 1) + j] = tok;
      }
    }
    return t;
  }

private:
  std::string path_;
  int64_t vocab_, seq_, numTokens_ = 0;
  size_t width_ = 2, bytes_ = 0;
  int fd_ = -1;
  void *data_ = MAP_FAILED;
};

} // namespace

std::unique_ptr<TokenSource> makeTokenSource(const std::string &path,
                                             int64_t vocab, int64_t seq,
                                             uint64_t seed) {
  if (path.empty())
    return std::make_unique<SyntheticTokens>(vocab, seq, seed);
  return std::make_unique<FileTokens>(path, vocab, seq);
}

} // namespace swift::rt
