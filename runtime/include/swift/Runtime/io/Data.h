//===- Data.h - training tokens by global sample number -------------------===//
//
// A sample is S+1 token ids (inputs and next-token targets). Sample numbers
// are global: step t of a run consumes samples [t*GBS, (t+1)*GBS), and the
// micro-batch (k, rank r) of that step takes B consecutive samples starting
// at t*GBS + (k*W + r)*B. Any world size therefore sees the same global
// batch, which is what makes world-N runs reproduce world-1 losses.
//
// Token files: raw little-endian token ids, no header; uint16 unless the
// file name ends in ".u32" or ".uint32" (then uint32). Sample i is the
// window starting at token (i*S) mod (N - S), wrapping around the file.
//
// JSONL files (name ends in ".jsonl"): one sample a line, made by the data
// layer (swift/Data/Dataset.h): each line becomes a sample through the
// LineToSample the source is given (token-id lines, or SampleEncoder for the
// formats users have), on every core, once: the token cache keeps the
// samples for later runs and the other ranks, memory-mapped. A sample
// longer than sequence_length tokens is training.truncation's: dropped
// (default), cut keeping its start (right) or its end (left), or refused
// naming its line (error). The samples are laid out into windows of S
// positions once, at load: packed (best-fit decreasing, a sample is never
// split) or, without packing, one sample per window. The tail of a window
// is padding (id 0, never a target).
//
// Epochs. The W windows of a JSONL file are one epoch; the run consumes
// them as one stream of global sample (window) numbers: number p is
// window perm_e(p mod W) of epoch e = p / W, where perm_0 is the file's
// order (the packing's window order) and perm_e (e >= 1) a permutation
// drawn from (training.seed, e). A step that crosses an epoch's end takes
// its first windows from one epoch and the rest from the next one's
// permutation: every step is a whole global batch, and E epochs are
// ceil(E x W / GBS) steps. The mapping is a function of p alone, so any
// world size and any resume point see the same windows.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Enums.h"
#include "swift/Data/Dataset.h"

#include <ATen/ATen.h>

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

namespace swift::rt {

using data::DataSummary;
using data::groupedDigits;
using data::LineToSample;

/// What one micro-batch trains on: B windows of S positions.
struct Batch {
  at::Tensor inputs;  // (B, S) int64
  at::Tensor targets; // (B, S) int64: next-token ids, -100 = no loss there
  /// (B, S) int64 RoPE positions, restarting at 0 per sample; undefined:
  /// 0..S-1 in every window.
  at::Tensor positions;
  /// (B, S) int64 sample index within its window (packed windows: attention
  /// stays within a sample); undefined: one causal sequence per window.
  at::Tensor segments;
  /// Targets may be -100 (JSONL); false: every position is trained on and
  /// the loss keeps the raw-token arithmetic (mean per micro-batch).
  bool masked = false;
  /// The global number of the batch's first sample (window): seeds what is
  /// random per sample (LoRA dropout), the same at any world size; -1:
  /// unknown (the engine then uses its step and micro-batch counters).
  int64_t firstSample = -1;
};

class TokenSource {
public:
  virtual ~TokenSource() = default;
  /// (count, S+1) int64 token ids of samples first .. first+count-1 (raw
  /// and synthetic sources; a JSONL source has no such view and throws).
  virtual at::Tensor samples(int64_t first, int64_t count) = 0;
  /// Samples first .. first+count-1 as model inputs; by default the first S
  /// ids of each sample and the S next ones as targets.
  virtual Batch batch(int64_t first, int64_t count);
  /// Positions with a target (not -100) in those samples: what the loss of
  /// a step is averaged over.
  virtual int64_t trainedTokens(int64_t first, int64_t count);
  /// Real (non-padding) tokens in those samples, for tokens/s.
  virtual int64_t realTokens(int64_t first, int64_t count);
  /// JSONL: the windows of one epoch (Epochs above); 0: an endless stream
  /// (synthetic tokens, token files).
  virtual int64_t windowsPerEpoch() const { return 0; }
  /// JSONL: what the file became (the start-of-run data line).
  virtual const DataSummary *summary() const { return nullptr; }
};

struct DataOptions {
  int64_t vocab = 0, seq = 0; // model.vocab_size, training.sequence_length
  uint64_t seed = 0;          // training.seed: synthetic data, epochs' order
  bool packing = true;
  plan::Truncation truncation = plan::Truncation::Drop;
  /// training.loss_on: for a LineToSample that renders text (the assistant
  /// turns' tokens or all as labels); token-id lines carry their labels.
  plan::LossOn lossOn = plan::LossOn::Assistant;
  /// How lines become samples, the token cache, progress (Dataset.h);
  /// its vocab is this vocab.
  data::TokenizeOptions tokenize;
};

/// The training source of --data `path` (any format, below) and, when
/// `evalFraction` > 0 (--eval-split), the evaluation source of a
/// deterministic fraction of its samples (drawn from the seed, held out
/// of training; JSONL only). An evaluation source holds its windows once,
/// in file order, unshuffled; numbers past its last window are empty
/// windows (no tokens, no targets).
struct DataSources {
  std::unique_ptr<TokenSource> train, eval;
};
DataSources makeDataSources(const std::string &path, const DataOptions &o,
                            double evalFraction = 0);
/// A JSONL file as an evaluation source (--eval-data), as above.
std::unique_ptr<TokenSource> makeEvalSource(const std::string &path,
                                            const DataOptions &o);

/// --inspect-data: the first `count` samples of JSONL `path` in file order,
/// after truncation (a dropped sample is left out), one JSON object a line
/// on `out`: {"text": "..." or null, "input_ids": [...], "labels": [...],
/// "line": N} (text null: a token-id line has none).
void inspectData(const std::string &path, const DataOptions &o, int64_t count,
                 std::ostream &out);

/// makeDataSources(path, {vocab, seq, seed, packing}).train:
/// path empty: deterministic synthetic tokens from (seed, sample number):
/// a start token and a per-sample stride, so the next token is learnable
/// from the current one and the loss falls. A name ending in ".jsonl": a
/// JSONL file (above), packed when `packing`; throws UserError naming the
/// line for bad data (data::jsonl::parseLine), or when no sample is left or has
/// a target.
/// Otherwise a token file; throws UserError when it is missing, not a
/// regular file, too short, or holds ids >= vocab.
std::unique_ptr<TokenSource> makeTokenSource(const std::string &path,
                                             int64_t vocab, int64_t seq,
                                             uint64_t seed,
                                             bool packing = true);

} // namespace swift::rt
