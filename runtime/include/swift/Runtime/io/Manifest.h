//===- Manifest.h - a checkpoint's manifest.json, torch-free ---*- C++ -*-===//
//
// A checkpoint's manifest.json says what the checkpoint is: the step it was
// saved after, the samples the run had consumed by then (the data position
// of a resume), the global batch and precision it trained with, the model
// (and what it trains: full or LoRA), the world that wrote it, a LoRA run's
// base and the data it trained on (a file's path, format, size and
// fingerprint, its windows and held-out fraction, or synthetic tokens and
// their seed), and the epoch the position is in (JSONL data).
//
// Plain C++ on the plan layer (no LibTorch), so that a fuzzer exercises the
// reader (test/Fuzz/FuzzManifest.cpp). Everything is read through the strict
// JSON reader (swift/Plan/Json.h): every number range-checked, every error a
// UserError naming the file and the field.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/core/PlanTypes.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace swift::rt {

inline constexpr const char *kCheckpointFormat = "swift.checkpoint";
/// 1: no global_batch_size, no data (read: the data is then unknown);
/// 2: no epoch, no data windows.
inline constexpr int64_t kManifestVersion = 3;
/// The most steps (and the most a checkpoint's step) a run counts: the
/// bound of --steps.
inline constexpr int64_t kMaxSteps = int64_t(1) << 40;
/// The most samples a run consumes (steps x global batch stay below): the
/// data's positions (samples x sequence_length tokens) stay in int64.
inline constexpr int64_t kMaxSamples = int64_t(1) << 40;

/// What a run trains on: synthetic tokens (from a seed) or a --data file.
struct DataRecord {
  bool synthetic = true;
  uint64_t seed = 0;          // synthetic: training.seed
  std::string path;           // a file: as given to --data
  std::string absolutePath;   // ... and absolute
  std::string format;         // its name's extension: how it is read
  int64_t bytes = 0;          // its size
  std::string fingerprint;    // dataFingerprint()
  bool packing = true;        // a file: training.packing
  int64_t sequenceLength = 0; // training.sequence_length: the windows
  /// A JSONL file: its windows (one epoch, Data.h); 0: not known (a token
  /// file, or a manifest of version 2).
  int64_t windows = 0;
  /// --eval-split: the fraction of the file's samples held out of
  /// training (0: none); another fraction is other training data.
  double evalSplit = 0;
  /// "data.jsonl (12345 bytes)" or "synthetic tokens (seed 1234)".
  std::string describe() const;
};

struct Manifest {
  int64_t version = kManifestVersion;
  int64_t step = 0;
  int64_t samplesConsumed = 0;
  std::optional<int64_t> globalBatchSize; // version >= 2
  std::string precision;
  nlohmann::json model; // manifestModel() of the plan that wrote it
  int64_t writtenWorldSize = 1;
  int64_t writtenZero = 0;
  /// LoRA: the frozen base's HF directory ("" the seed's random base).
  std::optional<std::string> baseWeights;
  std::optional<DataRecord> data; // version >= 2
  /// samplesConsumed / data windows: the epochs done (JSONL data,
  /// version >= 3); informative, the position is samplesConsumed.
  std::optional<double> epoch;
};

/// A manifest's text; `file` names it in every error (UserError).
Manifest parseManifest(const std::string &text, const std::string &file);
/// The manifest at `path` (a regular file, bounded), as parseManifest.
Manifest readManifest(const std::string &path);
/// The manifest as written to manifest.json (parseManifest reads it back).
std::string manifestToJson(const Manifest &manifest);

/// The plan's "model" section, and what it trains (LoRA: the method and the
/// adapters' shape): what a checkpoint must match.
nlohmann::json manifestModel(const Plan &plan);
/// Refuses (UserError naming `file`) a checkpoint of another model.
void checkSameModel(const Manifest &manifest, const Plan &plan,
                    const std::string &file);

/// A cheap fingerprint of a data file, computed once when a run starts: a
/// 64-bit FNV-1a hash (16 hex digits) of its size and its first and last
/// MiB. Sets `bytes` to the size. UserError when it cannot be read.
std::string dataFingerprint(const std::string &path, int64_t &bytes);

/// What this run trains on: `path` ("" for synthetic tokens) with the
/// plan's seed, packing and sequence length.
DataRecord describeData(const std::string &path, const Plan &plan);

/// The data a resumed run trains on (its record, fingerprint taken), given the
/// checkpoint's manifest (at `file`) and --data (`given`, "" when absent):
///  - no --data: synthetic tokens when the checkpoint trained on them; a
///    checkpoint of a data file is refused (UserError naming the file,
///    even with `ignoreMismatch`): the data is given again, not assumed;
///  - --data FILE: FILE, when it is the recorded data (by fingerprint: a
///    moved copy is fine);
///  - anything else (another file, a changed one, synthetic
///    vs a file, another seed, packing or sequence length) is refused
///    (UserError naming both) unless `ignoreMismatch`
///    (--ignore-data-mismatch): then `given` (or synthetic tokens).
/// `notes` gets the lines to print (a recorded file used, a moved file, a
/// mismatch ignored, a checkpoint that records no data).
DataRecord chooseResumeData(const Manifest &manifest, const std::string &file,
                            const std::string &given, const Plan &plan,
                            bool ignoreMismatch,
                            std::vector<std::string> &notes);

} // namespace swift::rt
