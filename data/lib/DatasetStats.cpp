//===- DatasetStats.cpp - what a dataset becomes, for the planner ---------===//
#include "swift/Data/DatasetStats.h"

#include "swift/Data/SampleEncoder.h"
#include "swift/Plan/Error.h"

#include <algorithm>
#include <exception>
#include <vector>

namespace swift::data {

std::optional<DatasetStats> describeDataset(const DatasetQuery &q,
                                            std::string &error) {
  try {
    TokenizeOptions o;
    o.vocab = q.vocab;
    o.cacheDir = q.cacheDir;
    o.progress = q.progress;
    o.progressIsTerminal = q.progressIsTerminal;
    o.notes = q.progress;
    SampleEncoder::fromModelDir(q.tokenizerDir, q.chatTemplate, q.vocab,
                                q.lossOn == plan::LossOn::Assistant,
                                "the job's model vocab_size", q.needs)
        .feed(o);
    std::shared_ptr<const TokenizedFile> file = TokenizedFile::open(q.path, o);
    SWIFT_CHECK(file->samples() > 0, q.path, ": holds no samples");
    const Pieces pieces = cutToWindows(*file, q.seq, q.truncation);
    std::vector<int64_t> lengths, trained;
    DatasetStats out;
    DataSummary &s = out.summary;
    for (const Piece &p : pieces.kept) {
      lengths.push_back(p.length);
      trained.push_back(p.trained);
      s.tokens += p.length;
      s.trained += p.trained;
    }
    s.path = q.path;
    s.seq = q.seq;
    s.samples = int64_t(pieces.kept.size());
    s.windows =
        int64_t(layOutWindows(lengths, trained, q.seq, q.packing).windows.size());
    s.dropped = pieces.dropped;
    s.truncated = pieces.truncated;
    std::vector<int64_t> all(size_t(file->samples()));
    for (int64_t i = 0; i < file->samples(); ++i)
      all[size_t(i)] = file->info(i).length;
    std::sort(all.begin(), all.end());
    auto at = [&](double f) {
      return all[std::min(all.size() - 1, size_t(f * double(all.size())))];
    };
    out.shortest = all.front();
    out.median = at(0.5);
    out.p90 = at(0.9);
    out.p99 = at(0.99);
    out.longest = all.back();
    out.stepsPerEpoch = q.globalBatchSize > 0
                            ? (s.windows + q.globalBatchSize - 1) / q.globalBatchSize
                            : 0;
    out.cacheEntry = file->cacheEntry();
    out.reused = file->reused();
    return out;
  } catch (const std::exception &e) {
    error = e.what();
    return std::nullopt;
  }
}

} // namespace swift::data
