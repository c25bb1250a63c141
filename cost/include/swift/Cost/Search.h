//===- Search.h - choosing a strategy ---------------------------*- C++ -*-===//
//
// Enumerates, on backends torchtitan and megatron, device meshes (tp x cp x
// pp, pipeline schedule and model chunks), then shard groups (HSDP; on
// several nodes only) x ZeRO stage x
// offload x checkpointing (none, selective, full, first-k layers) x
// micro-batch (gradient accumulation keeping the global batch) x bucket
// size x prefetch depth, honouring every decision the job
// fixed, prices each candidate with the cost model and ranks them: highest
// predicted tokens/s among those whose peak fits under the usable memory
// (capacity minus the margin), ties to less memory. Exhaustive except where
// a bound proves a region cannot win: model states alone over the usable
// memory prune every micro-batch of a (zero, offload) pair, and first-k
// checkpointing is bisected (memory falls and time rises with k). Per mesh,
// shard group and ZeRO stage the leanest strategy (smallest micro-batch,
// full checkpointing) is priced first: when it does not fit, nothing of
// that family does.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_COST_SEARCH_H
#define SWIFT_COST_SEARCH_H

#include "swift/Cost/Cost.h"

#include <optional>
#include <string>
#include <vector>

namespace swift::cost {

/// Decisions the job fixed; nullopt means the search chooses.
struct FixedDecisions {
  std::optional<int> zero;
  std::optional<Offload> offload;
  std::optional<Checkpointing> checkpointing;
  std::optional<int64_t> checkpointLayers;
  std::optional<int64_t> microBatchSize;
  std::optional<int64_t> bucketBytes;
  std::optional<int> prefetchDepth;
  /// strategy.offload_activations (0 none, -1 all, k) and
  /// strategy.mlp_tile_tokens (0 untiled); open: the search adds them to a
  /// fully checkpointed strategy that does not fit without them.
  std::optional<int64_t> offloadActivations;
  std::optional<int64_t> mlpTileTokens;
  /// strategy.dp_shard: the ranks of one shard group (HSDP; the
  /// data-parallel ranks: one group). Open: on several nodes the search
  /// tries every data-parallel rank, one node's GPUs and the powers of 2
  /// between (ties go to one group, which needs less memory).
  std::optional<int64_t> dpShard;
  /// strategy.tp, .pp, .cp, .pp_schedule, .virtual_stages (backends
  /// torchtitan and megatron; the others run tp = pp = cp = 1). Open: tp
  /// among the divisors of the GPUs per node, pp among the divisors of
  /// W / (tp x cp) up to the layers, cp 1 (and, from 32K-token sequences,
  /// the powers of 2 that leave chunks of >= 2048 tokens), 1F1B and every
  /// legal interleaving.
  std::optional<int64_t> tp, pp, cp, virtualStages;
  std::optional<plan::PipelineSchedule> ppSchedule;
  /// The ZeRO stages the search chooses among when `zero` is open, in
  /// increasing order; empty: any (0-3). A stack that runs some stages only
  /// (ms-swift: QLoRA not under ZeRO-3, swift::emit::msSwiftMaxZero())
  /// narrows it. Each allowed stage is searched as if the job fixed it, and
  /// the best outcome wins: one that fits by throughput, else the closest
  /// by its peak, ties to the lower stage. `zero`, when fixed, must be one
  /// of them (else SearchResult::error).
  std::vector<int> allowedZero;
};

struct SearchOptions {
  /// Fraction of the capacity kept free for allocator fragmentation (the
  /// caching allocator reserves 2-60% above what it hands out), and of the
  /// host's memory (usableHostBytes()).
  double memoryMargin = 0.10;
  /// How many runners-up to keep, best first (with shard groups chosen,
  /// the last is the best with one group, wherever it ranks; with a mesh
  /// that splits the model chosen, the best without a split is kept the
  /// same way).
  size_t alternatives = 5;
};

struct Candidate {
  Strategy strategy;
  Estimate estimate;
  bool fits = false;
  std::string verdict; // why it lost, or "chosen"
};

struct SearchResult {
  std::optional<Candidate> best;       // nullopt: nothing fits
  std::vector<Candidate> alternatives; // best first, distinct from `best`
  std::optional<Candidate> closest;    // smallest peak when nothing fits
  int64_t usableBytes = 0;             // capacity minus the margin
  int64_t usableHostBytes = 0;         // host memory per node minus the margin
  size_t evaluated = 0;                // strategies priced
  size_t considered = 0;               // strategies in the space
  /// The job admits no strategy at all: "FIELD[, FIELD]...: message", the
  /// field to change first, then the others involved (job keys, as
  /// swift::job::diagnoseJob() locates them).
  std::string error;
};

/// The host memory per node a strategy may plan for: the host's, less the
/// same margin as the GPU's (room for the OS and the page cache, and for
/// the allocations the per-rank estimate misses).
int64_t usableHostBytes(const Hardware &hw, double memoryMargin);

/// The MLP tile the search tries (tokens): large enough that each tile's
/// GEMMs run at full rate, small enough that a tile's [tile, ffn]
/// temporaries are a few hundred MiB on 8B-70B models.
inline constexpr int64_t kSearchMlpTileTokens = 8192;

SearchResult search(const ModelProfile &model, const TrainingSetup &setup,
                    const Hardware &hw, const FixedDecisions &fixed,
                    const SearchOptions &options = {});

/// One line naming a strategy: "zero 3, offload none, checkpointing full,
/// micro-batch 2 x 8 accumulation" (", tp 8, pp 4 (interleaved, 2 virtual),
/// cp 2" with a mesh, ", dp_shard 8" with shard groups).
std::string describe(const Strategy &s);

} // namespace swift::cost

#endif // SWIFT_COST_SEARCH_H
