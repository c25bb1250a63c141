//===- DatasetStats.h - what a dataset becomes, for the planner -*- C++ -*-===//
//
// swift-plan --data: a JSONL file tokenized through the same token cache
// swift-run uses (Dataset.h), cut and laid out into windows as training
// will, and summarized: samples, tokens, windows, sample lengths, steps per
// epoch. A plain interface that throws nothing (swift-plan is built without
// exceptions).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Data/Dataset.h"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace swift::data {

struct DatasetQuery {
  std::string path;
  /// The tokenizer files (tokenizer.json, tokenizer_config.json) and an
  /// optional template file overriding the tokenizer's (SampleEncoder).
  std::string tokenizerDir, chatTemplate;
  /// What a text line needs when the tokenizer files are missing.
  std::string needs;
  std::string cacheDir; // "": tokenize without a cache
  int64_t vocab = 0, seq = 0, globalBatchSize = 0;
  plan::Truncation truncation = plan::Truncation::Drop;
  plan::LossOn lossOn = plan::LossOn::Assistant;
  bool packing = true;
  std::ostream *progress = nullptr; // tokenizing progress, or none
  bool progressIsTerminal = false;
};

struct DatasetStats {
  DataSummary summary; // the training data line, as swift-run prints it
  /// Sample lengths in tokens, before truncation: shortest, median, 90th
  /// and 99th percentile, longest.
  int64_t shortest = 0, median = 0, p90 = 0, p99 = 0, longest = 0;
  int64_t stepsPerEpoch = 0; // ceil(windows / global batch)
  std::string cacheEntry;    // "": not cached
  bool reused = false;       // nothing was tokenized
};

/// The dataset of `q`; nullopt with `error` (one line naming the file, and
/// the line and field when a line is bad) when it cannot be read.
std::optional<DatasetStats> describeDataset(const DatasetQuery &q,
                                            std::string &error);

} // namespace swift::data
