//===- Data.cpp - synthetic and file-backed token sources -----------------===//
#include "swift/Runtime/Data.h"
#include "swift/Runtime/Check.h"
#include "swift/Runtime/Files.h"
#include "swift/Runtime/Jsonl.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

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
    fd_ = openRegularFile(path, "a token file (raw uint" +
                                    std::to_string(width_ * 8) + " ids)");
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

using jsonl::kIgnore;

/// The lines of a regular file, read in chunks ('\n' ends a line; a last
/// line without one counts). A line is bounded: past kMaxLineBytes it is
/// refused instead of filling the memory.
class LineReader {
public:
  static constexpr size_t kMaxLineBytes = size_t(256) << 20;
  explicit LineReader(const std::string &path)
      : path_(path), fd_(openRegularFile(path, "a JSON Lines file")) {}
  ~LineReader() { ::close(fd_); }
  LineReader(const LineReader &) = delete;
  LineReader &operator=(const LineReader &) = delete;

  /// The next line into `line`; false at the end of the file.
  bool next(std::string &line) {
    for (;;) {
      if (size_t nl = buffer_.find('\n', scanned_); nl != std::string::npos) {
        line.assign(buffer_, begin_, nl - begin_);
        begin_ = scanned_ = nl + 1;
        ++number_;
        return true;
      }
      scanned_ = buffer_.size();
      SWIFT_CHECK(buffer_.size() - begin_ <= kMaxLineBytes, path_, ": line ",
                  number_ + 1, " is longer than ", kMaxLineBytes >> 20,
                  " MiB (a JSON Lines file holds one sample a line)");
      if (eof_) {
        if (begin_ == buffer_.size())
          return false;
        line.assign(buffer_, begin_, std::string::npos);
        begin_ = scanned_ = buffer_.size();
        ++number_;
        return true;
      }
      // Only the line being read is kept: moved to the front once per
      // chunk, not once per line.
      buffer_.erase(0, begin_);
      scanned_ -= begin_;
      begin_ = 0;
      char chunk[1 << 16];
      ssize_t n = ::read(fd_, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR)
        continue;
      SWIFT_CHECK(n >= 0, path_, ": read failed: ", std::strerror(errno));
      if (n == 0)
        eof_ = true;
      buffer_.append(chunk, size_t(n));
    }
  }
  /// The 1-based number of the line next() returned last.
  int64_t number() const { return number_; }

private:
  std::string path_;
  int fd_;
  std::string buffer_;
  size_t begin_ = 0;   // the current line's first byte in buffer_
  size_t scanned_ = 0; // buffer_[begin_, scanned_) holds no '\n'
  bool eof_ = false;
  int64_t number_ = 0;
};

/// JSONL samples laid out into windows once, at load (Data.h).
class JsonlTokens final : public TokenSource {
public:
  JsonlTokens(const std::string &path, int64_t vocab, int64_t seq,
              bool packing)
      : seq_(seq), packing_(packing) {
    LineReader in(path);
    std::string text;
    while (in.next(text)) {
      std::optional<jsonl::Sample> sample = jsonl::parseLine(
          text, vocab, seq, path + ": line " + std::to_string(in.number()));
      if (!sample)
        continue;
      const std::vector<int32_t> &ids = sample->ids, &labels = sample->labels;
      const int64_t n = int64_t(ids.size());
      int64_t trained = 0;
      for (int64_t k = 1; k < n; ++k) // labels[k] is position k-1's target
        trained += labels[k] != kIgnore;
      starts_.push_back(int64_t(ids_.size()));
      lengths_.push_back(n);
      trained_.push_back(trained);
      ids_.insert(ids_.end(), ids.begin(), ids.end());
      labels_.insert(labels_.end(), labels.begin(), labels.end());
    }
    SWIFT_CHECK(!lengths_.empty(), path, ": holds no samples");
    // Nothing to learn from: every step's loss and gradient would be 0.
    SWIFT_CHECK(std::any_of(trained_.begin(), trained_.end(),
                            [](int64_t t) { return t > 0; }),
                path,
                ": no sample has a target (every label after a sample's "
                "first is -100, or every sample is one token long)");
    layOut();
  }

  /// Samples into windows. Packing: best-fit decreasing (TRL's "bfd", what
  /// ms-swift's binpacking does too): longest sample first, each into the
  /// window it fills most tightly, a new window when none has room; then
  /// the windows in the order of their first sample in the file, and the
  /// samples of a window in file order, so the file's order (its shuffle)
  /// survives. Next-fit in file order would leave ~30% of the windows
  /// empty on uniformly distributed lengths. No packing: one sample each.
  void layOut() {
    const int64_t numSamples = int64_t(lengths_.size());
    std::vector<std::vector<int64_t>> members;
    if (!packing_) {
      for (int64_t s = 0; s < numSamples; ++s)
        members.push_back({s});
    } else {
      std::vector<int64_t> order(static_cast<size_t>(numSamples));
      for (int64_t s = 0; s < numSamples; ++s)
        order[size_t(s)] = s;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return lengths_[size_t(a)] > lengths_[size_t(b)];
      });
      std::multimap<int64_t, size_t> room; // free positions -> window
      for (int64_t s : order) {
        const int64_t n = lengths_[size_t(s)];
        auto it = room.lower_bound(n);
        size_t w;
        int64_t free;
        if (it == room.end()) {
          w = members.size();
          members.emplace_back();
          free = seq_;
        } else {
          w = it->second;
          free = it->first;
          room.erase(it);
        }
        members[w].push_back(s);
        if (free - n > 0)
          room.emplace(free - n, w);
      }
      for (std::vector<int64_t> &m : members)
        std::sort(m.begin(), m.end());
      std::sort(members.begin(), members.end(),
                [](const auto &a, const auto &b) { return a[0] < b[0]; });
    }
    for (const std::vector<int64_t> &m : members) {
      Window w{int64_t(order_.size()), int64_t(m.size()), 0, 0};
      for (int64_t s : m) {
        order_.push_back(s);
        w.used += lengths_[size_t(s)];
        w.trained += trained_[size_t(s)];
      }
      windows_.push_back(w);
    }
  }

  at::Tensor samples(int64_t, int64_t) override {
    SWIFT_ASSERT(false, "a JSONL source has no raw-token view; use batch()");
    return {};
  }

  Batch batch(int64_t first, int64_t count) override {
    Batch b;
    b.firstSample = first;
    b.masked = true;
    b.inputs = at::zeros({count, seq_}, at::kLong);
    b.targets = at::full({count, seq_}, kIgnore, at::kLong);
    int64_t *in = b.inputs.data_ptr<int64_t>(),
            *tg = b.targets.data_ptr<int64_t>();
    int64_t *pos = nullptr, *seg = nullptr;
    if (packing_) {
      b.positions = at::zeros({count, seq_}, at::kLong);
      b.segments = at::zeros({count, seq_}, at::kLong);
      pos = b.positions.data_ptr<int64_t>();
      seg = b.segments.data_ptr<int64_t>();
    }
    for (int64_t i = 0; i < count; ++i) {
      const Window &w = window(first + i);
      const int64_t row = i * seq_;
      int64_t p = 0;
      for (int64_t j = 0; j < w.count; ++j) {
        const int64_t s = order_[size_t(w.first + j)];
        const int64_t n = lengths_[size_t(s)], off = starts_[size_t(s)];
        for (int64_t k = 0; k < n; ++k, ++p) {
          in[row + p] = ids_[off + k];
          // The last token predicts nothing: the next sample's first token
          // is not its target.
          tg[row + p] = k + 1 < n ? labels_[off + k + 1] : kIgnore;
          if (pos) {
            pos[row + p] = k;
            seg[row + p] = j;
          }
        }
      }
      // Padding (id 0, no target): its own segment, positions from 0.
      for (int64_t k = 0; pos && p + k < seq_; ++k) {
        pos[row + p + k] = k;
        seg[row + p + k] = w.count;
      }
    }
    return b;
  }

  int64_t trainedTokens(int64_t first, int64_t count) override {
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i)
      n += window(first + i).trained;
    return n;
  }
  int64_t realTokens(int64_t first, int64_t count) override {
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i)
      n += window(first + i).used;
    return n;
  }

private:
  struct Window {
    int64_t first = 0, count = 0; // samples order_[first .. first+count-1]
    int64_t used = 0;             // positions they fill
    int64_t trained = 0;          // positions with a target
  };
  const Window &window(int64_t i) const {
    return windows_[size_t(i % int64_t(windows_.size()))];
  }
  int64_t seq_;
  bool packing_;
  std::vector<Window> windows_;
  std::vector<int64_t> starts_, lengths_; // per sample, into ids_/labels_
  std::vector<int64_t> trained_;          // per sample, positions with a target
  std::vector<int64_t> order_;            // samples, window by window
  std::vector<int32_t> ids_, labels_;
};

} // namespace

Batch TokenSource::batch(int64_t first, int64_t count) {
  at::Tensor t = samples(first, count);
  const int64_t S = t.size(1) - 1;
  Batch b;
  b.inputs = t.narrow(1, 0, S);
  b.targets = t.narrow(1, 1, S);
  b.firstSample = first;
  return b;
}

int64_t TokenSource::trainedTokens(int64_t first, int64_t count) {
  return count * (samples(first, 1).size(1) - 1);
}

int64_t TokenSource::realTokens(int64_t first, int64_t count) {
  return trainedTokens(first, count);
}

std::unique_ptr<TokenSource> makeTokenSource(const std::string &path,
                                             int64_t vocab, int64_t seq,
                                             uint64_t seed, bool packing) {
  if (path.empty())
    return std::make_unique<SyntheticTokens>(vocab, seq, seed);
  // The format is the name's: any file's bytes read as token ids, so a
  // guess would train on an HF .json or a .parquet as if it were tokens.
  auto endsWith = [&](const std::string &ext) {
    return path.size() >= ext.size() &&
           path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (endsWith(".jsonl"))
    return std::make_unique<JsonlTokens>(path, vocab, seq, packing);
  for (const char *ext : {".bin", ".u16", ".uint16", ".u32", ".uint32"})
    if (endsWith(ext))
      return std::make_unique<FileTokens>(path, vocab, seq);
  SWIFT_CHECK(!endsWith(".json"), path,
              ": a .json file; --data reads JSON Lines: name it .jsonl with "
              "one {\"input_ids\": [...], \"labels\": [...]} object per "
              "line (a JSON array of such objects: write one element per "
              "line)");
  SWIFT_CHECK(false, path,
              ": unknown data format; --data takes .jsonl (JSON Lines of "
              "{\"input_ids\": [...], \"labels\": [...]}) or raw token ids: "
              ".bin/.u16/.uint16 (uint16), .u32/.uint32 (uint32)");
  return nullptr;
}

} // namespace swift::rt
