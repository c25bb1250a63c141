//===- Dataset.h - a JSONL dataset, tokenized once, as windows -*- C++ -*-===//
//
// What swift-run trains on and swift-plan --data counts, from one file:
//
//  1. TokenizedFile: every line of a JSONL file made into a sample (token
//     ids and labels) by a LineToSample (SampleEncoder for the formats users
//     have, jsonl::parseLine for token ids), on every core, written once to
//     a token cache and memory-mapped from it. Host memory stays bounded
//     whatever the file's size: the text is read in chunks of about 1 MiB,
//     a few per thread in flight, and the tokens go to disk as they come;
//     what stays in memory is the mapping, which a rank only touches where
//     its windows are.
//  2. cutToWindow: training.truncation, applied to the samples when they
//     are used (the cache holds whole samples, so one cache serves any
//     sequence_length).
//  3. layOutWindows: the samples laid out into windows of S positions,
//     packed (best-fit decreasing) or one per window.
//
// The token cache (docs/runtime.md "Token cache"). An entry is a directory
// DIR/tokens/KEY/ (samples.bin, ids.u32, labels.i32 when needed, meta.json
// written last); KEY hashes the data file's content, the LineToSample's
// identity (TokenizeOptions::key: the tokenizer files, the template, the
// format options) and the data layer's own sources (a change in how lines
// become tokens is a new key). An entry is built in a temporary directory
// and renamed into place; processes that want the same entry wait on its
// lock file instead of tokenizing again, so the ranks of a run and any
// later run tokenize once. The content hash of a file is remembered by its
// (device, inode, size, mtime, ctime) in DIR/files/, so an unchanged file
// is not read again to be hashed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Data/Jsonl.h"
#include "swift/Plan/Enums.h"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace swift::data {

/// One line of a data file -> one sample (nullopt: a blank line). `where`
/// ("data.jsonl: line 7") starts every UserError it throws. Called from
/// many threads at once: it must be safe to (SampleEncoder::encode and
/// jsonl::parseLine are).
using LineToSample = std::function<std::optional<jsonl::Sample>(
    const std::string &line, const std::string &where)>;
/// Token-id lines (jsonl::parseLine) with ids below `vocab`.
LineToSample tokenIdsLines(int64_t vocab);

/// n with thousands separators ("1,234,567").
std::string groupedDigits(int64_t n);

/// The lines of a regular file, read in chunks ('\n' ends a line; a last
/// line without one counts). A line is bounded: past kMaxLineBytes it is
/// refused (UserError naming the line) instead of filling the memory.
class LineReader {
public:
  static constexpr size_t kMaxLineBytes = size_t(256) << 20;
  explicit LineReader(const std::string &path);
  ~LineReader();
  LineReader(const LineReader &) = delete;
  LineReader &operator=(const LineReader &) = delete;
  /// The next line into `line`; false at the end of the file.
  bool next(std::string &line);
  /// Whole lines, at least `bytes` of them unless the file ends first (the
  /// last one without its '\n'), appended to `text`; the count of lines
  /// they hold. 0: the end of the file.
  int64_t nextLines(std::string &text, size_t bytes);
  /// The 1-based number of the last line returned.
  int64_t number() const { return number_; }
  /// Bytes of the file consumed so far.
  uint64_t consumed() const { return consumed_; }

private:
  bool fill();
  std::string path_;
  int fd_;
  std::string buffer_;
  size_t begin_ = 0;   // the current line's first byte in buffer_
  size_t scanned_ = 0; // buffer_[begin_, scanned_) holds no '\n'
  bool eof_ = false;
  int64_t number_ = 0;
  uint64_t consumed_ = 0;
};

/// Where the token cache lives when none is given: $SWIFT_CACHE_DIR, else
/// $XDG_CACHE_HOME/swift, else $HOME/.cache/swift.
std::string defaultCacheDir();

struct TokenizeOptions {
  LineToSample lineToSample; // empty: tokenIdsLines(vocab)
  int64_t vocab = 0;
  /// What makes lineToSample's samples (SampleEncoder::fingerprint(), or
  /// "token ids below VOCAB"): part of the cache key. Empty with a
  /// lineToSample given: the samples cannot be cached.
  std::string key;
  /// The cache's directory; empty: no cache (the samples go to a temporary
  /// directory that is removed once mapped).
  std::string cacheDir;
  /// Threads that tokenize; 0: every core this process may run on.
  int threads = 0;
  /// Progress (a line that rewrites itself on a terminal, one line every
  /// 10 s otherwise, and the result), or none.
  std::ostream *progress = nullptr;
  bool progressIsTerminal = false;
  /// The lines about the cache (reused, waiting for another process), or
  /// none: in a run of many ranks, one rank's.
  std::ostream *notes = nullptr;
  /// How long a wait for another process's lock lasts before a note says
  /// so: the ranks of one run wait on each other briefly, which is no news.
  double waitNoteAfterSeconds = 5;
  /// Called every chunk and every second of waiting (a watchdog's sign of
  /// life), or none.
  std::function<void()> alive;
};

/// One sample of a TokenizedFile.
struct SampleInfo {
  int64_t start = 0;   // its first token's index in the file's tokens
  int64_t length = 0;  // its tokens
  int64_t trained = 0; // positions with a target (labels[k] != -100, k >= 1)
  int64_t line = 0;    // the 1-based line it came from
};

/// The samples of a JSONL file in file order (blank lines make none),
/// whole: before training.truncation. Immutable and safe to share.
class TokenizedFile {
public:
  /// Tokenizes `path` (or maps its cache entry). UserError, naming the
  /// file and line, for the first bad line in file order, as the
  /// LineToSample says; for a file that is no regular file; for a cache
  /// that cannot be written (with the directory and why).
  static std::shared_ptr<const TokenizedFile> open(const std::string &path,
                                                   const TokenizeOptions &o);
  ~TokenizedFile();

  const std::string &path() const { return path_; }
  int64_t samples() const { return samples_; }
  int64_t tokens() const { return tokens_; }
  SampleInfo info(int64_t sample) const;
  /// Tokens [from, from + n) of `sample`: ids, and labels (kIgnore where
  /// no loss) when `labels` is not null.
  void read(int64_t sample, int64_t from, int64_t n, int64_t *ids,
            int64_t *labels) const;
  /// Positions with a target among tokens [from + 1, from + n) of `sample`
  /// (what a sample cut to those tokens trains on).
  int64_t trainedIn(int64_t sample, int64_t from, int64_t n) const;
  /// The cache entry it is mapped from ("": none).
  const std::string &cacheEntry() const { return entry_; }
  /// Whether it came from the cache as it was (nothing tokenized).
  bool reused() const { return reused_; }

  struct Mapping;

private:
  TokenizedFile() = default;
  std::string path_, entry_;
  bool reused_ = false;
  int64_t samples_ = 0, tokens_ = 0;
  std::unique_ptr<Mapping> map_;
};

/// What training.truncation makes of a sample of `length` tokens in a
/// window of `seq` positions: the tokens [offset, offset + length) kept,
/// `cut` when that is not all of them; nullopt: dropped. truncation error
/// throws the UserError starting with `where` ("data.jsonl: line 7").
struct Cut {
  int64_t offset = 0, length = 0;
  bool cut = false;
};
std::optional<Cut> cutToWindow(int64_t length, int64_t seq,
                               plan::Truncation truncation,
                               const std::string &where);

/// A sample as training uses it: tokens [offset, offset + length) of
/// TokenizedFile sample `sample`, with `trained` positions with a target.
struct Piece {
  int64_t sample = 0, offset = 0, length = 0, trained = 0;
};
struct Pieces {
  std::vector<Piece> kept; // in file order
  int64_t dropped = 0, truncated = 0;
};
/// cutToWindow on every sample of `file`.
Pieces cutToWindows(const TokenizedFile &file, int64_t seq,
                    plan::Truncation truncation);

/// Samples laid out into windows of `seq` positions. Packing: best-fit
/// decreasing (TRL's "bfd", what ms-swift's binpacking does too): longest
/// first, each into the window it fills most tightly, a new window when
/// none has room; then the windows in the order of their first sample,
/// and the samples of a window in order, so the file's order (its
/// shuffle) survives. Next-fit in file order would leave ~30% of the
/// windows empty on uniformly distributed lengths. No packing: one sample
/// a window.
struct Window {
  int64_t first = 0, count = 0; // samples order[first .. first+count-1]
  int64_t used = 0;             // positions they fill
  int64_t trained = 0;          // positions with a target
};
struct WindowLayout {
  std::vector<int64_t> order; // indices into the lengths given, by window
  std::vector<Window> windows;
};
WindowLayout layOutWindows(const std::vector<int64_t> &lengths,
                           const std::vector<int64_t> &trained, int64_t seq,
                           bool packing);

/// What a JSONL file (or the part of it a source holds) became.
struct DataSummary {
  std::string path;
  int64_t seq = 0;
  int64_t samples = 0;   // in the source's windows
  int64_t tokens = 0;    // their tokens (after truncation)
  int64_t trained = 0;   // their positions with a target (label tokens)
  int64_t windows = 0;   // windows of seq positions
  int64_t dropped = 0;   // the file's samples longer than seq, dropped
  int64_t truncated = 0; // ... cut to seq
  int64_t heldOut = 0;   // samples held out for evaluation (--eval-split)
  /// Real tokens / window positions.
  double packingEfficiency() const;
  /// "data.jsonl: 1000 samples, 95000 tokens (3 dropped, 2 truncated: ...),
  /// 760 windows of 128, packing efficiency 97.6%, 45000 trained tokens".
  std::string line() const;
};

} // namespace swift::data
