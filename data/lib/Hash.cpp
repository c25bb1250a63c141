//===- Hash.cpp - content hashes for the token cache's keys ---------------===//
#include "swift/Data/Hash.h"

#include "swift/Data/Files.h"
#include "swift/Plan/Error.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace swift::data {
namespace {

constexpr uint64_t kMul1 = 0x9fb21c651e98df25ull;
constexpr uint64_t kMul2 = 0xc2b2ae3d27d4eb4full;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load64(const unsigned char *p) {
  uint64_t v;
  std::memcpy(&v, p, 8); // little-endian hosts: the bytes' order as read
  return v;
}

uint64_t avalanche(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  return x ^ (x >> 32);
}

} // namespace

Hasher::Hasher(uint64_t seed) {
  for (int i = 0; i < 4; ++i)
    lanes_[i] = avalanche(seed + uint64_t(i + 1) * kMul1);
}

void Hasher::stripe(const unsigned char *p) {
  for (int i = 0; i < 4; ++i)
    lanes_[i] = rotl(lanes_[i] ^ (load64(p + 8 * i) * kMul2), 29) * kMul1;
}

Hasher &Hasher::update(const void *data, size_t size) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  total_ += size;
  if (pendingSize_) {
    const size_t take = std::min(size, sizeof pending_ - pendingSize_);
    std::memcpy(pending_ + pendingSize_, p, take);
    pendingSize_ += take;
    p += take;
    size -= take;
    if (pendingSize_ < sizeof pending_)
      return *this;
    stripe(pending_);
    pendingSize_ = 0;
  }
  for (; size >= 32; p += 32, size -= 32)
    stripe(p);
  std::memcpy(pending_, p, size);
  pendingSize_ = size;
  return *this;
}

uint64_t Hasher::digest() const {
  uint64_t h = total_ * kMul2;
  for (int i = 0; i < 4; ++i)
    h = rotl(h ^ avalanche(lanes_[i]), 27) * kMul1;
  size_t i = 0;
  for (; i + 8 <= pendingSize_; i += 8)
    h = rotl(h ^ (load64(pending_ + i) * kMul2), 31) * kMul1;
  for (; i < pendingSize_; ++i)
    h = rotl(h ^ (uint64_t(pending_[i]) * kMul1), 11) * kMul2;
  return avalanche(h);
}

uint64_t hashFile(const std::string &path, void (*progress)(void *, uint64_t),
                  void *context) {
  const int fd = openRegularFile(path, "a data file");
  Hasher h;
  std::vector<unsigned char> block(size_t(4) << 20);
  uint64_t done = 0;
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), block.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      SWIFT_CHECK(false, path, ": read failed: ", std::strerror(err));
    }
    if (n == 0)
      break;
    h.update(block.data(), size_t(n));
    done += uint64_t(n);
    if (progress)
      progress(context, done);
  }
  ::close(fd);
  return h.digest();
}

std::string hex64(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4)
    s[size_t(i)] = digits[v & 15];
  return s;
}

} // namespace swift::data
