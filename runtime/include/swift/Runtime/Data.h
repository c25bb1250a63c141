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
// JSONL files (name ends in ".jsonl"): one sample a line, {"input_ids":
// [...], "labels": [...], "attention_mask": [...]} (labels optional, -100 =
// not trained on, HF's convention: labels[j+1] is the target of position
// j; attention_mask optional, its 0s at either end are padding, dropped;
// the line format and its refusals: Jsonl.h). The samples are
// laid out into windows of S positions once, at load: packed greedily in
// file order (a sample is never split; the next one that does not fit
// starts a new window) or, without packing, one sample per window. The tail
// of a window is padding (id 0, never a target). "Sample" i of the
// interface below is window i mod (number of windows): resuming at a
// window index is starting at that sample number.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>

namespace swift::rt {

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
};

/// path empty: deterministic synthetic tokens from (seed, sample number):
/// a start token and a per-sample stride, so the next token is learnable
/// from the current one and the loss falls. A name ending in ".jsonl": a
/// JSONL file (above), packed when `packing`; throws UserError naming the
/// line for bad data (jsonl::parseLine), or when no sample has a target.
/// Otherwise a token file; throws UserError when it is missing, not a
/// regular file, too short, or holds ids >= vocab.
std::unique_ptr<TokenSource> makeTokenSource(const std::string &path,
                                             int64_t vocab, int64_t seq,
                                             uint64_t seed,
                                             bool packing = true);

} // namespace swift::rt
