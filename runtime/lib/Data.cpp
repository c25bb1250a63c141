//===- Data.cpp - synthetic and file-backed token sources -----------------===//
#include "swift/Runtime/Data.h"
#include "swift/Runtime/Check.h"
#include "swift/Data/Files.h"
#include "swift/Data/Jsonl.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

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
    fd_ = data::openRegularFile(path, "a token file (raw uint" +
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

using data::jsonl::kIgnore;

/// The lines of a regular file, read in chunks ('\n' ends a line; a last
/// line without one counts). A line is bounded: past kMaxLineBytes it is
/// refused instead of filling the memory.
class LineReader {
public:
  static constexpr size_t kMaxLineBytes = size_t(256) << 20;
  explicit LineReader(const std::string &path)
      : path_(path), fd_(data::openRegularFile(path, "a JSON Lines file")) {}
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

/// Fisher-Yates permutation of 0..n-1 from `key` (splitmix64 stream).
std::vector<int64_t> permutation(int64_t n, uint64_t key) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    p[size_t(i)] = i;
  uint64_t state = key;
  for (int64_t i = n - 1; i > 0; --i) {
    state = splitmix64(state);
    std::swap(p[size_t(i)], p[size_t(state % uint64_t(i + 1))]);
  }
  return p;
}

/// The samples of a JSONL file in file order, after truncation, flat.
struct SampleStore {
  std::vector<int32_t> ids, labels;
  std::vector<int64_t> starts, lengths, trained; // per sample
  int64_t dropped = 0, truncated = 0;
};

/// training.truncation on a sample of `where`: false when it is dropped;
/// `cut` says it was truncated.
bool fitWindow(data::jsonl::Sample &s, const DataOptions &o, const std::string &where,
               bool &cut) {
  cut = false;
  const int64_t n = int64_t(s.ids.size());
  if (n <= o.seq)
    return true;
  switch (o.truncation) {
  case plan::Truncation::Drop:
    return false;
  case plan::Truncation::Error:
    SWIFT_CHECK(false, where, ": a sample of ", n,
                " tokens is longer than the window (training.sequence_length ",
                o.seq,
                "); training.truncation error refuses it (drop, right "
                "or left keep the run going)");
    return false;
  case plan::Truncation::Right:
    s.ids.resize(size_t(o.seq));
    s.labels.resize(size_t(o.seq));
    break;
  case plan::Truncation::Left:
    s.ids.erase(s.ids.begin(), s.ids.end() - o.seq);
    s.labels.erase(s.labels.begin(), s.labels.end() - o.seq);
    break;
  }
  cut = true;
  return true;
}

/// Calls fn(sample, line number) for each sample of `path` in file order,
/// after truncation (dropped ones counted, not passed); fn returns false to
/// stop.
template <typename Fn>
void forEachSample(const std::string &path, const DataOptions &o,
                   int64_t &dropped, int64_t &truncated, Fn fn) {
  const LineToSample toSample =
      o.lineToSample ? o.lineToSample : tokenIdsLines(o.vocab);
  LineReader in(path);
  std::string text;
  while (in.next(text)) {
    const std::string where = path + ": line " + std::to_string(in.number());
    std::optional<data::jsonl::Sample> sample = toSample(text, where);
    if (!sample)
      continue;
    SWIFT_ASSERT(!sample->ids.empty() &&
                     sample->labels.size() == sample->ids.size(),
                 where, ": a sample's ids and labels differ in length");
    bool cut = false;
    if (!fitWindow(*sample, o, where, cut)) {
      ++dropped;
      continue;
    }
    truncated += cut;
    if (!fn(*sample, in.number()))
      return;
  }
}

std::shared_ptr<SampleStore> loadSamples(const std::string &path,
                                         const DataOptions &o) {
  auto store = std::make_shared<SampleStore>();
  SampleStore &st = *store;
  forEachSample(
      path, o, st.dropped, st.truncated,
      [&](const data::jsonl::Sample &sample, int64_t) {
        const std::vector<int32_t> &ids = sample.ids, &labels = sample.labels;
        const int64_t n = int64_t(ids.size());
        int64_t trained = 0;
        for (int64_t k = 1; k < n; ++k) // labels[k]: position k-1's
          trained += labels[k] != kIgnore;
        st.starts.push_back(int64_t(st.ids.size()));
        st.lengths.push_back(n);
        st.trained.push_back(trained);
        st.ids.insert(st.ids.end(), ids.begin(), ids.end());
        st.labels.insert(st.labels.end(), labels.begin(), labels.end());
        return true;
      });
  SWIFT_CHECK(!st.lengths.empty(), path, ": holds no samples",
              st.dropped ? ": all " + std::to_string(st.dropped) +
                               " are longer than the window "
                               "(training.sequence_length " +
                               std::to_string(o.seq) +
                               ") and training.truncation drop left them "
                               "out (right or left keeps them, cut)"
                         : std::string());
  return store;
}

/// JSONL samples (some of a SampleStore's) laid out into windows once, at
/// load (Data.h). A training source maps sample numbers to windows epoch
/// by epoch; an evaluation source holds its windows once.
class JsonlTokens final : public TokenSource {
public:
  JsonlTokens(std::shared_ptr<const SampleStore> store,
              std::vector<int64_t> members, const std::string &path,
              const DataOptions &o, bool epochs)
      : store_(std::move(store)), members_(std::move(members)), seq_(o.seq),
        seed_(o.seed), packing_(o.packing), epochs_(epochs) {
    layOut();
    summary_.path = path;
    summary_.seq = seq_;
    summary_.samples = int64_t(members_.size());
    for (int64_t s : members_) {
      summary_.tokens += store_->lengths[size_t(s)];
      summary_.trained += store_->trained[size_t(s)];
    }
    summary_.windows = int64_t(windows_.size());
    summary_.dropped = store_->dropped;
    summary_.truncated = store_->truncated;
  }

  /// Samples into windows. Packing: best-fit decreasing (TRL's "bfd", what
  /// ms-swift's binpacking does too): longest sample first, each into the
  /// window it fills most tightly, a new window when none has room; then
  /// the windows in the order of their first sample in the file, and the
  /// samples of a window in file order, so the file's order (its shuffle)
  /// survives. Next-fit in file order would leave ~30% of the windows
  /// empty on uniformly distributed lengths. No packing: one sample each.
  void layOut() {
    const std::vector<int64_t> &lengths = store_->lengths;
    std::vector<std::vector<int64_t>> members;
    if (!packing_) {
      for (int64_t s : members_)
        members.push_back({s});
    } else {
      std::vector<int64_t> order = members_;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return lengths[size_t(a)] > lengths[size_t(b)];
      });
      std::multimap<int64_t, size_t> room; // free positions -> window
      for (int64_t s : order) {
        const int64_t n = lengths[size_t(s)];
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
        w.used += lengths[size_t(s)];
        w.trained += store_->trained[size_t(s)];
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
    const SampleStore &st = *store_;
    for (int64_t i = 0; i < count; ++i) {
      const Window *w = window(first + i);
      const int64_t row = i * seq_;
      int64_t p = 0;
      for (int64_t j = 0; w && j < w->count; ++j) {
        const int64_t s = order_[size_t(w->first + j)];
        const int64_t n = st.lengths[size_t(s)], off = st.starts[size_t(s)];
        for (int64_t k = 0; k < n; ++k, ++p) {
          in[row + p] = st.ids[size_t(off + k)];
          // The last token predicts nothing: the next sample's first token
          // is not its target.
          tg[row + p] = k + 1 < n ? st.labels[size_t(off + k + 1)] : kIgnore;
          if (pos) {
            pos[row + p] = k;
            seg[row + p] = j;
          }
        }
      }
      // Padding (id 0, no target): its own segment, positions from 0.
      for (int64_t k = 0; pos && p + k < seq_; ++k) {
        pos[row + p + k] = k;
        seg[row + p + k] = w ? w->count : 0;
      }
    }
    return b;
  }

  int64_t trainedTokens(int64_t first, int64_t count) override {
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i)
      if (const Window *w = window(first + i))
        n += w->trained;
    return n;
  }
  int64_t realTokens(int64_t first, int64_t count) override {
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i)
      if (const Window *w = window(first + i))
        n += w->used;
    return n;
  }
  int64_t windowsPerEpoch() const override { return int64_t(windows_.size()); }
  const DataSummary *summary() const override { return &summary_; }
  void setHeldOut(int64_t samples) { summary_.heldOut = samples; }

private:
  struct Window {
    int64_t first = 0, count = 0; // samples order_[first .. first+count-1]
    int64_t used = 0;             // positions they fill
    int64_t trained = 0;          // positions with a target
  };
  /// Sample number p's window (Data.h "Epochs"); an evaluation source's
  /// past its last: none (an empty window).
  const Window *window(int64_t p) {
    const int64_t W = int64_t(windows_.size());
    if (!epochs_)
      return p < W ? &windows_[size_t(p)] : nullptr;
    const int64_t epoch = p / W, i = p % W;
    if (epoch == 0)
      return &windows_[size_t(i)];
    return &windows_[size_t(epochOrder(epoch)[size_t(i)])];
  }
  /// Epoch e's permutation of the windows (e >= 1), from (seed, e); the
  /// last two are kept (a step spans at most a few epochs' ends).
  const std::vector<int64_t> &epochOrder(int64_t e) {
    for (auto &[epoch, order] : orders_)
      if (epoch == e)
        return order;
    auto &slot = orders_[nextOrder_];
    nextOrder_ ^= 1;
    slot.first = e;
    slot.second = permutation(int64_t(windows_.size()),
                              splitmix64(seed_ ^ splitmix64(uint64_t(e))));
    return slot.second;
  }

  std::shared_ptr<const SampleStore> store_;
  std::vector<int64_t> members_; // store samples this source holds, in order
  int64_t seq_;
  uint64_t seed_;
  bool packing_, epochs_;
  std::vector<Window> windows_;
  std::vector<int64_t> order_; // samples, window by window
  std::pair<int64_t, std::vector<int64_t>> orders_[2] = {{-1, {}}, {-1, {}}};
  int nextOrder_ = 0;
  DataSummary summary_;
};

bool endsWith(const std::string &path, const std::string &ext) {
  return path.size() >= ext.size() &&
         path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

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

std::string groupedDigits(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

LineToSample tokenIdsLines(int64_t vocab) {
  return [vocab](const std::string &line, const std::string &where) {
    return data::jsonl::parseLine(line, vocab, where);
  };
}

double DataSummary::packingEfficiency() const {
  return windows ? double(tokens) / double(windows * seq) : 0;
}

std::string DataSummary::line() const {
  std::string out = path + ": " + groupedDigits(samples) + " samples, " +
                    groupedDigits(tokens) + " tokens";
  if (dropped || truncated)
    out += " (" + groupedDigits(dropped) + " dropped, " +
           groupedDigits(truncated) +
           " truncated: longer than sequence_length " + std::to_string(seq) +
           ")";
  if (heldOut)
    out += ", " + groupedDigits(heldOut) + " held out for evaluation";
  char eff[32];
  std::snprintf(eff, sizeof eff, "%.1f%%", 100 * packingEfficiency());
  out += ", " + groupedDigits(windows) + " windows of " + std::to_string(seq) +
         " (packing efficiency " + eff + "), " + groupedDigits(trained) +
         " trained tokens";
  return out;
}

DataSources makeDataSources(const std::string &path, const DataOptions &o,
                            double evalFraction) {
  DataSources out;
  if (path.empty()) {
    SWIFT_CHECK(evalFraction == 0,
                "command line: --eval-split needs --data "
                "FILE.jsonl (synthetic tokens have no samples to hold out)");
    out.train = std::make_unique<SyntheticTokens>(o.vocab, o.seq, o.seed);
    return out;
  }
  // The format is the name's: any file's bytes read as token ids, so a
  // guess would train on an HF .json or a .parquet as if it were tokens.
  if (endsWith(path, ".jsonl")) {
    std::shared_ptr<SampleStore> store = loadSamples(path, o);
    const int64_t n = int64_t(store->lengths.size());
    std::vector<int64_t> train, eval;
    if (evalFraction > 0) {
      const int64_t k = int64_t(std::llround(evalFraction * double(n)));
      SWIFT_CHECK(k >= 1 && k < n, "command line: --eval-split ", evalFraction,
                  ": ", k, " of the ", n, " samples of ", path,
                  " would be held out; both training and evaluation need "
                  "at least one");
      // Held out: the first k of a permutation of the samples drawn from
      // the seed (another stream than the epochs'), in file order.
      const std::vector<int64_t> perm =
          permutation(n, splitmix64(o.seed ^ 0x65766c2d73706c74ull));
      std::vector<char> held(size_t(n), 0);
      for (int64_t i = 0; i < k; ++i)
        held[size_t(perm[size_t(i)])] = 1;
      for (int64_t s = 0; s < n; ++s)
        (held[size_t(s)] ? eval : train).push_back(s);
    } else {
      for (int64_t s = 0; s < n; ++s)
        train.push_back(s);
    }
    auto trainSource = std::make_unique<JsonlTokens>(store, std::move(train),
                                                     path, o, /*epochs=*/true);
    // Nothing to learn from: every step's loss and gradient would be 0.
    SWIFT_CHECK(trainSource->summary()->trained > 0, path,
                ": no sample has a target (every label after a sample's "
                "first is -100, or every sample is one token long)");
    if (!eval.empty()) {
      auto evalSource = std::make_unique<JsonlTokens>(
          store, std::move(eval), path, o, /*epochs=*/false);
      SWIFT_CHECK(evalSource->summary()->trained > 0,
                  "command line: "
                  "--eval-split ",
                  evalFraction, ": no sample held out of ", path,
                  " has a target");
      trainSource->setHeldOut(evalSource->summary()->samples);
      out.eval = std::move(evalSource);
    }
    out.train = std::move(trainSource);
    return out;
  }
  SWIFT_CHECK(evalFraction == 0,
              "command line: --eval-split needs JSONL "
              "data (",
              path, " is a token file: windows, not samples)");
  for (const char *ext : {".bin", ".u16", ".uint16", ".u32", ".uint32"})
    if (endsWith(path, ext)) {
      out.train = std::make_unique<FileTokens>(path, o.vocab, o.seq);
      return out;
    }
  SWIFT_CHECK(!endsWith(path, ".json"), path,
              ": a .json file; --data reads JSON Lines: name it .jsonl with "
              "one {\"input_ids\": [...], \"labels\": [...]} object per "
              "line (a JSON array of such objects: write one element per "
              "line)");
  SWIFT_CHECK(false, path,
              ": unknown data format; --data takes .jsonl (JSON Lines of "
              "{\"input_ids\": [...], \"labels\": [...]}) or raw token ids: "
              ".bin/.u16/.uint16 (uint16), .u32/.uint32 (uint32)");
  return out;
}

std::unique_ptr<TokenSource> makeEvalSource(const std::string &path,
                                            const DataOptions &o) {
  SWIFT_CHECK(endsWith(path, ".jsonl"), "command line: --eval-data ", path,
              ": evaluation reads JSONL samples (a .jsonl file)");
  std::shared_ptr<SampleStore> store = loadSamples(path, o);
  std::vector<int64_t> all(store->lengths.size());
  for (size_t s = 0; s < all.size(); ++s)
    all[s] = int64_t(s);
  auto source = std::make_unique<JsonlTokens>(store, std::move(all), path, o,
                                              /*epochs=*/false);
  SWIFT_CHECK(source->summary()->trained > 0, "command line: --eval-data ",
              path, ": no sample has a target");
  return source;
}

std::unique_ptr<TokenSource> makeTokenSource(const std::string &path,
                                             int64_t vocab, int64_t seq,
                                             uint64_t seed, bool packing) {
  DataOptions o;
  o.vocab = vocab;
  o.seq = seq;
  o.seed = seed;
  o.packing = packing;
  return makeDataSources(path, o).train;
}

void inspectData(const std::string &path, const DataOptions &o, int64_t count,
                 std::ostream &out) {
  SWIFT_CHECK(endsWith(path, ".jsonl"),
              "command line: --inspect-data needs "
              "--data FILE.jsonl (",
              path.empty() ? "synthetic tokens" : path, " has no samples)");
  int64_t dropped = 0, truncated = 0, shown = 0;
  if (count > 0)
    forEachSample(
        path, o, dropped, truncated, [&](const data::jsonl::Sample &s, int64_t line) {
          nlohmann::ordered_json j;
          j["text"] = s.text ? nlohmann::ordered_json(*s.text)
                             : nlohmann::ordered_json();
          j["input_ids"] = s.ids;
          j["labels"] = s.labels;
          j["line"] = line;
          out << j.dump(-1, ' ', false,
                        nlohmann::ordered_json::error_handler_t::replace)
              << "\n";
          return ++shown < count;
        });
  out.flush();
}

} // namespace swift::rt
