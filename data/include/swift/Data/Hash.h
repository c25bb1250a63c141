//===- Hash.h - content hashes for the token cache's keys -----*- C++ -*-===//
//
// A fast 64-bit hash of bytes (four independent multiply-rotate lanes over
// 32-byte stripes, then a splitmix-style avalanche), streamed, so a 10 GB
// data file hashes at memory speed. It names cache entries (TokenCache.h):
// not cryptographic, and never used where an adversary picks the input to
// collide with another user's.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace swift::data {

class Hasher {
public:
  explicit Hasher(uint64_t seed = 0);
  Hasher &update(const void *data, size_t size);
  Hasher &update(const std::string &s) { return update(s.data(), s.size()); }
  /// The hash of everything given so far (the hasher may go on).
  uint64_t digest() const;

private:
  void stripe(const unsigned char *p);
  uint64_t lanes_[4];
  unsigned char pending_[32];
  size_t pendingSize_ = 0;
  uint64_t total_ = 0;
};

/// The hash of a regular file's bytes, read in blocks; `progress`, when
/// given, is called with the bytes read so far. UserError naming the file
/// when it cannot be read.
uint64_t hashFile(const std::string &path,
                  void (*progress)(void *, uint64_t) = nullptr,
                  void *context = nullptr);

/// 16 lowercase hex digits.
std::string hex64(uint64_t v);

} // namespace swift::data
