//===- TensorBoard.h - TensorBoard event files (tfevents), by hand --------===//
//
// swift-run --tensorboard DIR writes DIR/events.out.tfevents.<time>.<host>,
// the file TensorBoard (and tensorboardX, HF Trainer's TensorBoardCallback)
// reads: TFRecord framing, one serialized tensorflow.Event per record:
//   record: uint64 length (little endian), uint32 masked CRC32C of those 8
//           bytes, the event's bytes, uint32 masked CRC32C of them;
//   masked: ((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2^32);
//   Event:  wall_time (1, double), step (2, int64), file_version (3,
//           string: "brain.Event:2" in the first record), summary (5);
//   Summary: value (1, repeated); Value: tag (1, string), simple_value (2,
//           float).
// Written here rather than with protobuf and TensorFlow's .proto files: a
// scalar event is five fields of a format TensorBoard has kept since 2016,
// and a dependency (protobuf's runtime, generated code) would be the
// runtime's largest for 150 lines. test/Runtime/tfevents.py reads the
// files back independently (its own CRC32C and protobuf decoding).
//
// Plain C++; the file is flushed after every step's record, so a running
// TensorBoard shows the run as it goes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace swift::rt {

/// CRC-32C (Castagnoli, reflected 0x82F63B78) of `n` bytes.
uint32_t crc32c(const void *data, size_t n);

class TensorBoardWriter {
public:
  /// Creates `dir` if needed and a new event file in it, whose first record
  /// names the format; UserError naming `dir` when it cannot.
  explicit TensorBoardWriter(const std::string &dir);
  /// One event at `step` with these scalars (tag, value), flushed. A file
  /// that cannot be written is warned about once and no longer written.
  void scalars(int64_t step,
               const std::vector<std::pair<std::string, double>> &values);
  const std::string &path() const { return path_; }

private:
  void record(const std::string &event);
  std::string path_;
  std::ofstream out_;
  bool failed_ = false;
};

} // namespace swift::rt
