//===- Data.cpp - synthetic and file-backed token sources -----------------===//
#include "swift/Runtime/io/Data.h"
#include "swift/Data/Files.h"
#include "swift/Data/Jsonl.h"
#include "swift/Runtime/core/Check.h"

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

/// The samples of a JSONL file, tokenized once (data::TokenizedFile: the
/// token cache) and cut to the window (training.truncation).
struct SampleStore {
  std::shared_ptr<const data::TokenizedFile> file;
  data::Pieces pieces;
};

std::shared_ptr<const SampleStore> loadSamples(const std::string &path,
                                               const DataOptions &o) {
  data::TokenizeOptions t = o.tokenize;
  t.vocab = o.vocab;
  auto store = std::make_shared<SampleStore>();
  store->file = data::TokenizedFile::open(path, t);
  store->pieces = data::cutToWindows(*store->file, o.seq, o.truncation);
  const data::Pieces &p = store->pieces;
  SWIFT_CHECK(!p.kept.empty(), path, ": holds no samples",
              p.dropped ? ": all " + std::to_string(p.dropped) +
                              " are longer than the window "
                              "(training.sequence_length " +
                              std::to_string(o.seq) +
                              ") and training.truncation drop left them "
                              "out (right or left keeps them, cut)"
                        : std::string());
  return store;
}

/// JSONL samples (some of a SampleStore's pieces) laid out into windows
/// once, at load (data::layOutWindows). A training source maps sample
/// numbers to windows epoch by epoch; an evaluation source holds its
/// windows once.
class JsonlTokens final : public TokenSource {
public:
  JsonlTokens(std::shared_ptr<const SampleStore> store,
              std::vector<int64_t> members, const std::string &path,
              const DataOptions &o, bool epochs)
      : store_(std::move(store)), seq_(o.seq), seed_(o.seed),
        packing_(o.packing), epochs_(epochs) {
    std::vector<int64_t> lengths, trained;
    lengths.reserve(members.size());
    trained.reserve(members.size());
    for (int64_t m : members) {
      const data::Piece &p = store_->pieces.kept[size_t(m)];
      lengths.push_back(p.length);
      trained.push_back(p.trained);
      summary_.tokens += p.length;
      summary_.trained += p.trained;
    }
    data::WindowLayout layout =
        data::layOutWindows(lengths, trained, seq_, packing_);
    windows_ = std::move(layout.windows);
    order_.reserve(layout.order.size());
    for (int64_t i : layout.order)
      order_.push_back(members[size_t(i)]);
    summary_.path = path;
    summary_.seq = seq_;
    summary_.samples = int64_t(members.size());
    summary_.windows = int64_t(windows_.size());
    summary_.dropped = store_->pieces.dropped;
    summary_.truncated = store_->pieces.truncated;
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
    const data::TokenizedFile &file = *store_->file;
    std::vector<int64_t> labels(static_cast<size_t>(seq_));
    for (int64_t i = 0; i < count; ++i) {
      const data::Window *w = window(first + i);
      const int64_t row = i * seq_;
      int64_t p = 0;
      for (int64_t j = 0; w && j < w->count; ++j) {
        const data::Piece &piece =
            store_->pieces.kept[size_t(order_[size_t(w->first + j)])];
        const int64_t n = piece.length;
        file.read(piece.sample, piece.offset, n, in + row + p, labels.data());
        // labels[k + 1] is position k's target; the last token predicts
        // nothing (the next sample's first token is not its target).
        for (int64_t k = 0; k < n; ++k) {
          tg[row + p + k] = k + 1 < n ? labels[size_t(k + 1)] : kIgnore;
          if (pos) {
            pos[row + p + k] = k;
            seg[row + p + k] = j;
          }
        }
        p += n;
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
    return sumOver(first, count, &data::Window::trained);
  }
  int64_t realTokens(int64_t first, int64_t count) override {
    return sumOver(first, count, &data::Window::used);
  }
  int64_t windowsPerEpoch() const override { return int64_t(windows_.size()); }
  const DataSummary *summary() const override { return &summary_; }
  void setHeldOut(int64_t samples) { summary_.heldOut = samples; }

private:
  /// Sample number p's window (Data.h "Epochs"); an evaluation source's
  /// past its last: none (an empty window).
  const data::Window *window(int64_t p) {
    const int64_t W = int64_t(windows_.size());
    if (!epochs_)
      return p < W ? &windows_[size_t(p)] : nullptr;
    const int64_t epoch = p / W, i = p % W;
    if (epoch == 0)
      return &windows_[size_t(i)];
    return &windows_[size_t(epochOrder(epoch)[size_t(i)])];
  }
  /// `field` summed over the windows of samples first..first+count-1.
  int64_t sumOver(int64_t first, int64_t count,
                  int64_t data::Window::*field) {
    int64_t n = 0;
    for (int64_t i = 0; i < count; ++i)
      if (const data::Window *w = window(first + i))
        n += w->*field;
    return n;
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
  int64_t seq_;
  uint64_t seed_;
  bool packing_, epochs_;
  std::vector<data::Window> windows_;
  std::vector<int64_t> order_; // pieces, window by window
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
    std::shared_ptr<const SampleStore> store = loadSamples(path, o);
    const int64_t n = int64_t(store->pieces.kept.size());
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
  std::shared_ptr<const SampleStore> store = loadSamples(path, o);
  std::vector<int64_t> all(store->pieces.kept.size());
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
  // In file order, one line at a time: the text of a sample is not kept
  // by the token cache.
  const LineToSample toSample =
      o.tokenize.lineToSample ? o.tokenize.lineToSample
                              : data::tokenIdsLines(o.vocab);
  data::LineReader in(path);
  std::string text;
  for (int64_t shown = 0; shown < count && in.next(text);) {
    const std::string where = path + ": line " + std::to_string(in.number());
    std::optional<data::jsonl::Sample> s = toSample(text, where);
    if (!s)
      continue;
    std::optional<data::Cut> cut =
        data::cutToWindow(int64_t(s->ids.size()), o.seq, o.truncation, where);
    if (!cut)
      continue; // dropped: not trained on
    auto part = [&](const std::vector<int32_t> &v) {
      return std::vector<int32_t>(v.begin() + cut->offset,
                                  v.begin() + cut->offset + cut->length);
    };
    nlohmann::ordered_json j;
    j["text"] =
        s->text ? nlohmann::ordered_json(*s->text) : nlohmann::ordered_json();
    j["input_ids"] = part(s->ids);
    j["labels"] = part(s->labels);
    j["line"] = in.number();
    out << j.dump(-1, ' ', false,
                  nlohmann::ordered_json::error_handler_t::replace)
        << "\n";
    ++shown;
  }
  out.flush();
}

} // namespace swift::rt
