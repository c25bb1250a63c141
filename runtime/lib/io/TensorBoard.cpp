//===- TensorBoard.cpp - TensorBoard event files (tfevents), by hand ------===//
#include "swift/Runtime/io/TensorBoard.h"

#include "swift/Plan/Error.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace swift::rt {
namespace {

std::array<uint32_t, 256> crcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// Protobuf wire format: a field's key is (number << 3) | wire type.
void varint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
void fixed(std::string &out, const void *p, size_t n) { // little endian host
  out.append(static_cast<const char *>(p), n);
}
void bytesField(std::string &out, int field, const std::string &bytes) {
  varint(out, uint64_t(field) << 3 | 2);
  varint(out, bytes.size());
  out += bytes;
}

/// An Event with wall_time and step; `rest` appended (its other fields).
std::string event(int64_t step, const std::string &rest) {
  const double wall = std::chrono::duration<double>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string e;
  varint(e, 1 << 3 | 1);
  fixed(e, &wall, 8);
  varint(e, 2 << 3 | 0);
  varint(e, uint64_t(step));
  return e + rest;
}

} // namespace

uint32_t crc32c(const void *data, size_t n) {
  static const std::array<uint32_t, 256> table = crcTable();
  uint32_t c = 0xFFFFFFFFu;
  const auto *p = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < n; ++i)
    c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

TensorBoardWriter::TensorBoardWriter(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  SWIFT_CHECK(!ec, "command line: --tensorboard ", dir, ": ", ec.message());
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  // TensorBoard reads every file named *tfevents* in the directory; the
  // pid keeps two runs started in the same second apart.
  path_ = (std::filesystem::path(dir) /
           ("events.out.tfevents." +
            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count()) +
            "." + host + "." + std::to_string(::getpid())))
              .string();
  out_.open(path_, std::ios::binary);
  SWIFT_CHECK(out_.good(), "command line: --tensorboard ", dir,
              ": cannot create ", path_, ": ", std::strerror(errno));
  std::string version;
  bytesField(version, 3, "brain.Event:2");
  record(event(0, version));
}

void TensorBoardWriter::scalars(
    int64_t step, const std::vector<std::pair<std::string, double>> &values) {
  std::string summary;
  for (const auto &[tag, value] : values) {
    std::string v;
    bytesField(v, 1, tag);
    varint(v, 2 << 3 | 5);
    const float f = float(value);
    fixed(v, &f, 4);
    bytesField(summary, 1, v);
  }
  std::string rest;
  bytesField(rest, 5, summary);
  record(event(step, rest));
}

void TensorBoardWriter::record(const std::string &e) {
  if (failed_)
    return;
  const uint64_t n = e.size();
  const uint32_t lengthCrc = masked(crc32c(&n, 8));
  const uint32_t dataCrc = masked(crc32c(e.data(), e.size()));
  out_.write(reinterpret_cast<const char *>(&n), 8);
  out_.write(reinterpret_cast<const char *>(&lengthCrc), 4);
  out_.write(e.data(), std::streamsize(e.size()));
  out_.write(reinterpret_cast<const char *>(&dataCrc), 4);
  out_.flush();
  // The run goes on without its TensorBoard file (a full disk must not
  // cost the training): one warning, then nothing more is written.
  if (!out_.good() && !failed_) {
    failed_ = true;
    std::cerr << "swift-run: warning: " << path_ << ": cannot write ("
              << std::strerror(errno) << "); TensorBoard logging stopped"
              << std::endl;
  }
}

} // namespace swift::rt
