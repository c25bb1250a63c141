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
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>

namespace swift::rt {

class TokenSource {
public:
  virtual ~TokenSource() = default;
  /// (count, S+1) int64 token ids of samples first .. first+count-1.
  virtual at::Tensor samples(int64_t first, int64_t count) = 0;
};

/// path empty: deterministic synthetic tokens from (seed, sample number):
/// a start token and a per-sample stride, so the next token is learnable
/// from the current one and the loss falls. Otherwise a token file; throws
/// UserError when it is missing, too short, or holds ids >= vocab.
std::unique_ptr<TokenSource> makeTokenSource(const std::string &path,
                                             int64_t vocab, int64_t seq,
                                             uint64_t seed);

} // namespace swift::rt
