//===- Search.cpp - enumerate, price and rank strategies ------------------===//

#include "swift/Cost/Search.h"
#include "swift/Cost/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace swift::cost {

std::string describe(const Strategy &s) {
  std::string text = "zero " + std::to_string(s.zero) + ", offload " +
                     toString(s.offload) + ", checkpointing " +
                     toString(s.checkpointing);
  if (s.checkpointing != Checkpointing::None && s.checkpointLayers >= 0)
    text += " (first " + std::to_string(s.checkpointLayers) + " layers)";
  if (s.offloadActivations < 0)
    text += ", activations offloaded";
  else if (s.offloadActivations > 0)
    text += ", activations of the first " + std::to_string(s.offloadActivations) +
            " layers offloaded";
  if (s.mlpTileTokens > 0)
    text += ", MLP in tiles of " + std::to_string(s.mlpTileTokens) + " tokens";
  const Layout &l = s.layout;
  if (l.tp > 1)
    text += ", tp " + std::to_string(l.tp);
  if (l.pp > 1) {
    text += ", pp " + std::to_string(l.pp) + " (" + toString(l.schedule);
    if (l.virtualStages > 1)
      text += ", " + std::to_string(l.virtualStages) + " virtual";
    text += ")";
  }
  if (l.cp > 1)
    text += ", cp " + std::to_string(l.cp);
  if (l.dpShard > 0)
    text += ", dp_shard " + std::to_string(l.dpShard);
  text += ", micro-batch " + std::to_string(s.microBatchSize) + " x " +
          std::to_string(s.gradientAccumulation) + " accumulation";
  return text;
}

namespace {

constexpr double kGiB = double(int64_t(1) << 30);

std::string gib(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f GiB", bytes / kGiB);
  return buffer;
}

template <typename T>
std::vector<T> choices(const std::optional<T> &fixed, std::vector<T> all) {
  return fixed ? std::vector<T>{*fixed} : all;
}

/// The keys a job fixed that decide which strategies a backend can run, as
/// (field, value): offload first, whose rules (it needs ZeRO) refuse most.
std::vector<std::pair<std::string, std::string>>
refusingKeys(const FixedDecisions &fixed, Backend backend) {
  std::vector<std::pair<std::string, std::string>> keys;
  if (fixed.dpShard)
    keys.push_back({"strategy.dp_shard", std::to_string(*fixed.dpShard)});
  if (fixed.offload)
    keys.push_back({"strategy.offload", toString(*fixed.offload)});
  if (fixed.zero)
    keys.push_back({"strategy.zero", std::to_string(*fixed.zero)});
  if (fixed.checkpointing)
    keys.push_back({"strategy.checkpointing", toString(*fixed.checkpointing)});
  if (fixed.checkpointLayers)
    keys.push_back({"strategy.checkpoint_layers",
                    std::to_string(*fixed.checkpointLayers)});
  if (fixed.offloadActivations && *fixed.offloadActivations != 0)
    keys.push_back({"strategy.offload_activations",
                    *fixed.offloadActivations < 0
                        ? std::string("all")
                        : std::to_string(*fixed.offloadActivations)});
  if (fixed.mlpTileTokens && *fixed.mlpTileTokens != 0)
    keys.push_back({"strategy.mlp_tile_tokens",
                    std::to_string(*fixed.mlpTileTokens)});
  if (backend != Backend::SwiftRun)
    keys.push_back({"backend", toString(backend)});
  return keys;
}

/// SearchResult::error for a job whose fixed keys leave no strategy the
/// backend can run: "FIELD, FIELD: with FIELD=VALUE and ..., BACKEND can
/// run no strategy: WHY".
std::string noStrategyError(const FixedDecisions &fixed, Backend backend,
                            const std::string &why) {
  std::vector<std::pair<std::string, std::string>> keys =
      refusingKeys(fixed, backend);
  if (keys.empty()) // not expected: some strategy runs on every backend
    keys.push_back({"backend", toString(backend)});
  std::string fields, values;
  for (size_t i = 0; i < keys.size(); ++i) {
    fields += (i ? ", " : "") + keys[i].first;
    values += (i == 0 ? "" : i + 1 == keys.size() ? " and " : ", ") +
              keys[i].first + "=" + keys[i].second;
  }
  return fields + ": with " + values + ", " + toString(backend) +
         " can run no strategy: " + why;
}

/// Predicted throughputs closer than this are a tie, decided by memory.
constexpr double kTie = 1e-3;

/// A strict order: fitting before not; fitting ones faster first, then
/// leaner; others by how little they need.
bool better(const Candidate &a, const Candidate &b) {
  if (a.fits != b.fits)
    return a.fits;
  if (!a.fits)
    return a.estimate.memory.peakBytes < b.estimate.memory.peakBytes;
  double ta = a.estimate.time.tokensPerSecond, tb = b.estimate.time.tokensPerSecond;
  if (ta != tb)
    return ta > tb;
  return a.estimate.memory.peakBytes < b.estimate.memory.peakBytes;
}

/// Moves the leanest of the candidates tied with the fastest to the front.
void breakTies(std::vector<Candidate> &ranked) {
  if (ranked.empty() || !ranked.front().fits)
    return;
  double top = ranked.front().estimate.time.tokensPerSecond;
  auto leanest = ranked.begin();
  for (auto it = ranked.begin(); it != ranked.end() && it->fits &&
                                 it->estimate.time.tokensPerSecond >= top * (1 - kTie);
       ++it)
    if (it->estimate.memory.peakBytes < leanest->estimate.memory.peakBytes)
      leanest = it;
  std::rotate(ranked.begin(), leanest, leanest + 1);
}

class Searcher {
public:
  Searcher(const ModelProfile &m, const TrainingSetup &setup, const Hardware &hw,
           const SearchOptions &options, SearchResult &result)
      : m(m), setup(setup), hw(hw), options(options), result(result) {}

  /// Prices `s`; returns whether it fits. Unsupported strategies are
  /// counted and skipped. `keepIt` false: a probe of a bisection, priced
  /// but not a candidate (the bisection's answer is priced again as one).
  /// `overGpu`: set to whether `s` needs more than the GPU's usable memory
  /// (a strategy can also fail on the host's).
  std::optional<bool> price(const Strategy &s, bool keepIt = true,
                            bool *overGpu = nullptr) {
    ++result.considered;
    std::string why = unsupportedReason(m, setup, hw, s);
    if (!why.empty()) {
      if (firstRefusal.empty())
        firstRefusal = why;
      return std::nullopt;
    }
    ++result.evaluated;
    // No timeline: the chosen strategy's is EstimateCostPass's.
    Candidate c{s, estimate(m, setup, hw, s, EstimateOptions{/*timeline=*/false})};
    c.fits = c.estimate.memory.peakBytes <= result.usableBytes &&
             c.estimate.memory.hostBytes <= result.usableHostBytes;
    bool fits = c.fits;
    if (overGpu)
      *overGpu = c.estimate.memory.peakBytes > result.usableBytes;
    if (keepIt)
      keep(std::move(c));
    return fits;
  }

  /// Why the backend refused the first strategy it could not run.
  std::string firstRefusal;

  std::vector<Candidate> ranked() {
    std::vector<Candidate> all;
    for (auto &entry : bestPerFamily)
      all.push_back(entry.second);
    std::sort(all.begin(), all.end(), better);
    breakTies(all);
    return all;
  }

private:
  /// The best candidate of each (mesh, shard group, zero, offload,
  /// checkpointing) family, so alternatives are different strategies rather
  /// than other micro-batches.
  void keep(Candidate c) {
    const Layout &l = c.strategy.layout;
    auto key = std::make_tuple(l.tp, l.pp, l.cp, l.virtualStages,
                               l.dpShard, c.strategy.zero,
                               int(c.strategy.offload),
                               int(c.strategy.checkpointing),
                               c.strategy.checkpointLayers >= 0,
                               c.strategy.offloadActivations != 0,
                               c.strategy.mlpTileTokens > 0);
    auto it = bestPerFamily.find(key);
    if (it == bestPerFamily.end() || better(c, it->second))
      bestPerFamily[key] = std::move(c);
  }

  const ModelProfile &m;
  const TrainingSetup &setup;
  const Hardware &hw;
  const SearchOptions &options;
  SearchResult &result;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, int,
                     int, bool, bool, bool>,
           Candidate>
      bestPerFamily;
};

/// The fewest offloaded layers (1..L) with which `s` fits the GPU, given
/// that all of them do: GPU memory falls as more layers offload (and host
/// memory grows), so bisect; prices the result as a candidate and returns
/// whether it fits, the host included.
bool fewestOffloaded(Strategy s, int64_t L, Searcher &searcher) {
  int64_t lo = 0, hi = L;
  while (hi - lo > 1) {
    int64_t k = (lo + hi) / 2;
    Strategy probe = s;
    probe.offloadActivations = k;
    bool overGpu = true;
    if (searcher.price(probe, /*keepIt=*/false, &overGpu) && !overGpu)
      hi = k;
    else
      lo = k;
  }
  s.offloadActivations = hi < L ? hi : -1;
  std::optional<bool> fits = searcher.price(s);
  return fits && *fits;
}

/// A fully checkpointed swift-run strategy that does not fit as it is: the
/// layer inputs moved to the host first (their copies overlap with the
/// layers' compute), then the MLP tiled (which recomputes gate/up), then
/// both; the first that fits, with the fewest layers offloaded. Decisions
/// the job fixed stay as fixed. Returns whether one fits. Only for `s`
/// over the GPU's memory: moving activations to the host cannot help one
/// over the host's.
bool fitActivations(const Strategy &s, int64_t L, int64_t tokens,
                    const FixedDecisions &fixed, Searcher &searcher) {
  const bool offloadOpen = !fixed.offloadActivations;
  const bool tilesOpen = !fixed.mlpTileTokens && tokens > kSearchMlpTileTokens;
  struct Option { bool offload, tiles; };
  std::optional<Strategy> leanest; // the last option tried: all of them on
  for (Option o : {Option{true, false}, Option{false, true}, Option{true, true}}) {
    if ((o.offload && !offloadOpen) || (o.tiles && !tilesOpen))
      continue;
    Strategy probe = s;
    if (o.offload)
      probe.offloadActivations = -1;
    if (o.tiles)
      probe.mlpTileTokens = kSearchMlpTileTokens;
    // A probe: the candidate is the fewest layers offloaded that fit, or,
    // when no option fits, the last one (the leanest on the GPU).
    bool overGpu = true;
    std::optional<bool> ok = searcher.price(probe, /*keepIt=*/false, &overGpu);
    leanest = probe;
    if (!ok || overGpu)
      continue;
    if (o.offload ? fewestOffloaded(probe, L, searcher) : *searcher.price(probe))
      return true;
    leanest.reset(); // priced as a candidate already
  }
  if (leanest) // nothing fits: what comes closest is a candidate
    searcher.price(*leanest);
  return false;
}

/// Which limits `c` is over: the GPU's, the host's or both.
std::string overLimits(const Candidate &c, const SearchResult &result) {
  const MemoryEstimate &m = c.estimate.memory;
  std::string over;
  if (m.peakBytes > result.usableBytes)
    over = "over GPU memory by " + gib(m.peakBytes - result.usableBytes);
  if (m.hostBytes > result.usableHostBytes)
    over += (over.empty() ? "" : "; ") + std::string("needs ") +
            gib(m.hostBytes) + " of host memory per node, " +
            gib(result.usableHostBytes) + " usable";
  return over;
}

std::string verdict(const Candidate &c, const Candidate &best,
                    const SearchResult &result) {
  if (!c.fits)
    return overLimits(c, result);
  double slower = 1 - c.estimate.time.tokensPerSecond / best.estimate.time.tokensPerSecond;
  char buffer[160];
  int64_t more = c.estimate.memory.peakBytes - best.estimate.memory.peakBytes;
  if (slower < kTie && more >= 0) {
    std::snprintf(buffer, sizeof(buffer), "as fast (within 0.1%%), %s more memory",
                  gib(double(more)).c_str());
    return buffer;
  }
  // Name the part of the step that grew most against the chosen strategy.
  const TimeEstimate &t = c.estimate.time, &b = best.estimate.time;
  std::pair<double, const char *> parts[] = {
      {t.computeSeconds - b.computeSeconds, "compute"},
      {t.exposedCommunicationSeconds - b.exposedCommunicationSeconds,
       "exposed communication"},
      {t.offloadSeconds + t.optimizerSeconds - b.offloadSeconds - b.optimizerSeconds,
       "offload and optimizer step"}};
  auto *worst = std::max_element(std::begin(parts), std::end(parts));
  bool ms = worst->first < 1;
  std::snprintf(buffer, sizeof(buffer), "%.1f%% slower (+%.3g %s of %s per step)",
                100 * slower, ms ? 1e3 * worst->first : worst->first,
                ms ? "ms" : "s", worst->second);
  return buffer;
}

} // namespace

int64_t usableHostBytes(const Hardware &hw, double memoryMargin) {
  return static_cast<int64_t>(hw.hostMemoryBytes * (1 - memoryMargin));
}

namespace {

/// The device meshes the search tries (shard groups aside): the layout the
/// job fixed, on backends other than torchtitan and megatron (pricing
/// refuses it if it is not trivial); on those two, tp among the divisors of
/// the GPUs per node (tensor parallelism within a node), cp 1 or, from
/// 32K-token sequences, the powers of 2 that leave chunks of >= 2048 tokens
/// with S % 2cp == 0 (a shorter chunk cannot hide a ring round), pp among
/// the divisors of W / (tp x cp) up to the layers, and 1F1B or every
/// interleaving (v >= 2 model chunks per rank) the backend can split the
/// layers into. Each range is the fixed value when the job fixed it. Heads,
/// KV heads and the intermediate size are checked by pricing
/// (meshUnsupportedReason).
std::vector<Layout> meshes(const ModelProfile &m, const TrainingSetup &setup,
                           const Hardware &hw, const FixedDecisions &fixed) {
  const int64_t W = hw.worldSize(), L = m.numLayers, S = m.sequenceLength;
  Layout fixedLayout;
  fixedLayout.tp = fixed.tp.value_or(1);
  fixedLayout.pp = fixed.pp.value_or(1);
  fixedLayout.cp = fixed.cp.value_or(1);
  fixedLayout.virtualStages = fixed.virtualStages.value_or(1);
  fixedLayout.schedule =
      fixed.ppSchedule.value_or(plan::PipelineSchedule::OneFOneB);
  if (!meshBackend(setup.backend))
    return {fixedLayout};
  std::vector<int64_t> tps, cps;
  if (fixed.tp)
    tps = {*fixed.tp};
  else
    for (int64_t t = 1; t <= hw.gpusPerNode; ++t)
      if (hw.gpusPerNode % t == 0)
        tps.push_back(t);
  cps = {1};
  if (fixed.cp)
    cps = {*fixed.cp};
  else if (S >= 32768)
    for (int64_t c = 2; S / c >= 2048; c *= 2)
      if (S % (2 * c) == 0)
        cps.push_back(c);
  std::vector<Layout> out;
  for (int64_t tp : tps)
    for (int64_t cp : cps) {
      if (tp < 1 || cp < 1 || W % (tp * cp) != 0) {
        Layout l = fixedLayout; // refused with the reason
        l.tp = tp;
        l.cp = cp;
        out.push_back(l);
        continue;
      }
      std::vector<int64_t> pps;
      if (fixed.pp)
        pps = {*fixed.pp};
      else
        for (int64_t p = 1; p <= std::min(L, W / (tp * cp)); ++p)
          if ((W / (tp * cp)) % p == 0)
            pps.push_back(p);
      for (int64_t pp : pps) {
        std::vector<plan::PipelineSchedule> schedules = {
            plan::PipelineSchedule::OneFOneB};
        if (fixed.ppSchedule)
          schedules = {*fixed.ppSchedule};
        else if (pp > 1)
          schedules.push_back(plan::PipelineSchedule::Interleaved);
        for (plan::PipelineSchedule schedule : schedules) {
          std::vector<int64_t> vs = {1};
          if (fixed.virtualStages)
            vs = {*fixed.virtualStages};
          else if (schedule == plan::PipelineSchedule::Interleaved) {
            vs.clear();
            for (int64_t v = 2; pp * v <= L + 2; ++v)
              if (!stageLayers(L, pp, v, setup.backend).empty())
                vs.push_back(v);
          }
          for (int64_t v : vs) {
            Layout l;
            l.tp = tp;
            l.cp = cp;
            l.pp = pp;
            l.schedule = schedule;
            l.virtualStages = v;
            out.push_back(l);
          }
        }
      }
    }
  return out;
}

/// The search over the space `fixed` leaves (allowedZero aside).
SearchResult searchSpace(const ModelProfile &m, const TrainingSetup &setup,
                         const Hardware &hw, const FixedDecisions &fixed,
                         const SearchOptions &options) {
  SearchResult result;
  int64_t W = hw.worldSize();
  int64_t L = m.numLayers;
  result.usableBytes = static_cast<int64_t>(
      (hw.memoryBytes - (int64_t(1) << 30)) * (1 - options.memoryMargin));
  result.usableHostBytes = usableHostBytes(hw, options.memoryMargin);
  const bool mesh = meshBackend(setup.backend);
  Searcher searcher(m, setup, hw, options, result);
  // The meshes whose data-parallel ranks split the global batch evenly (and
  // whose share a fixed micro-batch divides); the first error otherwise.
  std::string batchError;
  std::vector<Layout> layouts;
  for (const Layout &layout : meshes(m, setup, hw, fixed)) {
    const int64_t ranks = layout.tp * layout.cp * layout.pp;
    if (ranks < 1 || W % ranks != 0) {
      if (batchError.empty())
        batchError = "strategy.tp, strategy.cp, strategy.pp: tp x cp x pp (" +
                     std::to_string(layout.tp) + " x " +
                     std::to_string(layout.cp) + " x " +
                     std::to_string(layout.pp) + ") must divide the " +
                     std::to_string(W) + " GPUs";
      continue;
    }
    const int64_t dp = layout.dataParallel(W);
    if ( setup.globalBatchSize % dp != 0) {
      if (batchError.empty())
        batchError =
            "training.global_batch_size, cluster.gpus_per_node, "
            "cluster.nodes: " +
            std::to_string(setup.globalBatchSize) +
            " sequences do not divide evenly over the " +
            (dp == W ? std::to_string(W) + " GPUs"
                     : std::to_string(dp) + " data-parallel ranks (" +
                           std::to_string(W) + " GPUs / tp x cp x pp)") +
            "; use a multiple of " + std::to_string(dp);
      continue;
    }
    const int64_t perRank = setup.globalBatchSize / dp;
    if (fixed.microBatchSize && perRank % *fixed.microBatchSize != 0) {
      if (batchError.empty())
        batchError = "training.micro_batch_size: " +
                     std::to_string(*fixed.microBatchSize) +
                     " does not divide the " + std::to_string(perRank) +
                     (dp == W ? " sequences each GPU gets per step "
                                "(global_batch_size / GPUs)"
                              : " sequences each data-parallel rank gets per "
                                "step (global_batch_size / data-parallel ranks)");
      continue;
    }
    // A fixed shard group narrows the meshes to those whose data-parallel
    // ranks it divides.
    if (fixed.dpShard && (*fixed.dpShard < 1 || dp % *fixed.dpShard != 0)) {
      if (batchError.empty())
        batchError = "strategy.dp_shard: " + std::to_string(*fixed.dpShard) +
                     " does not divide the " + std::to_string(dp) +
                     " data-parallel ranks";
      continue;
    }
    layouts.push_back(layout);
  }
  if (layouts.empty()) {
    result.error = batchError;
    return result;
  }

  for (const Layout &layout : layouts) {
  const int64_t dataParallel = layout.dataParallel(W);
  const int64_t perGpu = setup.globalBatchSize / dataParallel;
  std::vector<int64_t> micros;
  for (int64_t b = 1; b <= perGpu; ++b)
    if (perGpu % b == 0)
      micros.push_back(b);
  if (fixed.microBatchSize)
    micros = {*fixed.microBatchSize};

  // Shard groups (HSDP): one group of every data-parallel rank (0), and on
  // several nodes also one node's data-parallel ranks and the powers of 2
  // between, each dividing the ranks.
  const int64_t perNode = std::max<int64_t>(1, hw.gpusPerNode / (layout.tp * layout.cp));
  std::vector<int64_t> shards = {0};
  if (fixed.dpShard) { // it divides them (above)
    shards = {*fixed.dpShard == dataParallel ? 0 : *fixed.dpShard};
  } else if (hw.nodes > 1) {
    // Largest groups first (the pruning below).
    for (int64_t g = int64_t(1) << 62; g > perNode; g /= 2)
      if (g < dataParallel && dataParallel % g == 0)
        shards.push_back(g);
    if (dataParallel % perNode == 0 && perNode < dataParallel)
      shards.push_back(perNode);
  }
  // A strategy's memory (GPU and host) only grows as its groups shrink:
  // its states are sharded over fewer ranks (DeepSpeed's hpZ adds a
  // partition). So a strategy that does not fit with larger groups is not
  // priced with smaller ones: the decisions that fit with the previous
  // group size, and with this one.
  std::set<std::tuple<int, int, int, int64_t, int64_t, int>> fitLarger, fitHere;
  int64_t previousShard = -1;

  // Strategies without checkpointing that fit: first-k checkpointing is
  // explored only where they do not (it can only be slower otherwise).
  std::set<std::tuple<int64_t, int, int, int64_t, int64_t, int>> fitWithout;
  bool sharded = W > 1;
  std::vector<int64_t> buckets = {25 << 20};
  // The mesh engines size their own buckets (not priced): one is tried.
  if (setup.backend != Backend::HF && sharded && !mesh)
    buckets.push_back(200 << 20);
  if (fixed.bucketBytes)
    buckets = {*fixed.bucketBytes};
  for (int64_t shard : shards)
    for (int zero : choices<int>(fixed.zero, {0, 1, 2, 3})) {
      if (mesh) {
        // Nothing is sharded without ZeRO: shard groups change nothing.
        if (zero == 0 && shard != shards.front() && !fixed.dpShard)
          continue;
        // The leanest strategy of this mesh, group and stage (the smallest
        // micro-batch, every layer checkpointed): memory only grows from
        // it, so when it does not fit (or the backend refuses the mesh or
        // stage) nothing else of the family is priced. It stays a
        // candidate: the closest when nothing fits.
        Strategy lean;
        lean.zero = zero;
        lean.offload = fixed.offload.value_or(Offload::None);
        lean.checkpointing = fixed.checkpointing.value_or(Checkpointing::Full);
        lean.checkpointLayers = lean.checkpointing == Checkpointing::None
                                    ? -1
                                    : fixed.checkpointLayers.value_or(-1);
        lean.microBatchSize = micros.front();
        lean.gradientAccumulation = perGpu / micros.front();
        lean.bucketBytes = buckets.front();
        lean.prefetchDepth = fixed.prefetchDepth.value_or(1);
        lean.offloadActivations = fixed.offloadActivations.value_or(0);
        lean.mlpTileTokens = fixed.mlpTileTokens.value_or(0);
        lean.layout = layout;
        lean.layout.dpShard = shard;
        std::optional<bool> fits = searcher.price(lean);
        if (!fits || !*fits)
          continue;
      }
      for (Offload offload : choices<Offload>(
               fixed.offload, {Offload::None, Offload::Optimizer, Offload::OptimizerAndParams}))
        for (Checkpointing ckpt : choices<Checkpointing>(
                 fixed.checkpointing,
                 {Checkpointing::None, Checkpointing::Selective, Checkpointing::Full}))
          for (int64_t bucket : buckets)
            for (int prefetch : fixed.prefetchDepth ? std::vector<int>{*fixed.prefetchDepth}
                                : (zero == 3 && setup.backend == Backend::SwiftRun)
                                    ? std::vector<int>{1, 2}
                                    : std::vector<int>{1}) {
              // Memory grows with the micro-batch: once one does not fit, no
              // larger one will.
              for (int64_t micro : micros) {
                Strategy s;
                s.zero = zero;
                s.offload = offload;
                s.checkpointing = ckpt;
                s.microBatchSize = micro;
                s.gradientAccumulation = perGpu / micro;
                s.bucketBytes = bucket;
                s.prefetchDepth = prefetch;
                s.checkpointLayers =
                    ckpt == Checkpointing::None ? -1 : fixed.checkpointLayers.value_or(-1);
                s.offloadActivations = fixed.offloadActivations.value_or(0);
                s.mlpTileTokens = fixed.mlpTileTokens.value_or(0);
                s.layout = layout;
                s.layout.dpShard = shard;
                // One GPU shards nothing: ZeRO stages only matter there with
                // offload.
                if (W == 1 && zero > 0 && offload == Offload::None && !fixed.zero)
                  break;
                if (shard != previousShard) {
                  if (previousShard >= 0)
                    fitLarger = std::move(fitHere);
                  fitHere.clear();
                  previousShard = shard;
                }
                auto decisions = std::make_tuple(zero, int(offload), int(ckpt),
                                                 micro, bucket, prefetch);
                if (shard != shards.front() && !fitLarger.count(decisions))
                  break; // nor does any larger micro-batch
                bool overGpu = false;
                std::optional<bool> fits = searcher.price(s, true, &overGpu);
                if (!fits)
                  break; // the backend cannot run this family
                // Fitting only with activations on the host or the MLP in
                // tiles: every layer stays checkpointed (fewer would need more
                // of both).
                bool refined = false;
                if (overGpu && ckpt == Checkpointing::Full &&
                    setup.backend == Backend::SwiftRun) {
                  fits = fitActivations(s, L, micro * m.sequenceLength, fixed,
                                        searcher);
                  refined = *fits;
                }
                auto key = std::make_tuple(shard, zero, int(offload), micro,
                                           bucket, prefetch);
                if (ckpt == Checkpointing::None && *fits)
                  fitWithout.insert(key);
                if (*fits)
                  fitHere.insert(decisions);
                // A job that fixes checkpointing means every layer unless it
                // also names checkpoint_layers; first-k is the planner's own
                // refinement when checkpointing is open.
                if (ckpt != Checkpointing::None && !fixed.checkpointing && *fits &&
                    !refined && setup.backend == Backend::SwiftRun &&
                    !fitWithout.count(key)) {
                  // All layers fit; the fewest checkpointed layers that still
                  // fit recompute least. Memory falls as k grows: bisect.
                  int64_t lo = 0, hi = L;
                  while (hi - lo > 1) {
                    int64_t k = (lo + hi) / 2;
                    Strategy probe = s;
                    probe.checkpointLayers = k;
                    std::optional<bool> ok = searcher.price(probe);
                    if (ok && *ok)
                      hi = k;
                    else
                      lo = k;
                  }
                  if (hi < L) {
                    Strategy firstK = s;
                    firstK.checkpointLayers = hi;
                    searcher.price(firstK);
                  }
                }
                if (!*fits)
                  break;
              }
            }
    }
  }

  std::vector<Candidate> ranked = searcher.ranked();
  if (ranked.empty()) {
    result.error = noStrategyError(fixed, setup.backend, searcher.firstRefusal);
    return result;
  }
  if (ranked.front().fits) {
    result.best = ranked.front();
    result.best->verdict = "chosen";
  } else {
    result.closest = ranked.front();
  }
  const Candidate &reference = result.best ? *result.best : ranked.front();
  std::vector<size_t> runnersUp;
  for (size_t i = result.best ? 1 : 0;
       i < ranked.size() && runnersUp.size() < options.alternatives; ++i)
    runnersUp.push_back(i);
  // Shard groups chosen: the best with one group of every rank stays among
  // the runners-up (last, when it ranks lower), so the report can say what
  // the groups save.
  // Likewise a mesh that splits the model (tp, pp or cp above 1): the best
  // without a split stays (before it, when both are kept).
  size_t slots = runnersUp.size();
  auto keepBest = [&](auto kind) {
    if (!result.best || kind(*result.best) || slots == 0 ||
        std::any_of(runnersUp.begin(), runnersUp.end(),
                    [&](size_t i) { return kind(ranked[i]); }))
      return;
    auto plain = std::find_if(ranked.begin(), ranked.end(), kind);
    if (plain != ranked.end())
      runnersUp[--slots] = size_t(plain - ranked.begin());
  };
  keepBest([](const Candidate &c) { return c.strategy.layout.dpShard == 0; });
  keepBest([](const Candidate &c) {
    const Layout &l = c.strategy.layout;
    return l.tp == 1 && l.pp == 1 && l.cp == 1;
  });
  // Kept out of rank order: back in it.
  std::sort(runnersUp.begin(), runnersUp.end());
  for (size_t i : runnersUp) {
    Candidate c = ranked[i];
    c.verdict = verdict(c, reference, result);
    result.alternatives.push_back(std::move(c));
  }
  if (result.closest)
    result.closest->verdict = verdict(*result.closest, *result.closest, result);
  return result;
}

/// How a search's outcome ranks against another's: one that fits by its
/// throughput, above one where nothing fits, by how little its closest
/// needs, above one that found no strategy at all.
std::pair<int, double> outcomeRank(const SearchResult &r) {
  if (r.best)
    return {2, r.best->estimate.time.tokensPerSecond};
  if (r.closest)
    return {1, -double(r.closest->estimate.memory.peakBytes)};
  return {0, 0.0};
}

} // namespace

SearchResult search(const ModelProfile &m, const TrainingSetup &setup,
                    const Hardware &hw, const FixedDecisions &fixed,
                    const SearchOptions &options) {
  const std::vector<int> &allowed = fixed.allowedZero;
  if (allowed.empty())
    return searchSpace(m, setup, hw, fixed, options);
  if (fixed.zero) {
    if (std::find(allowed.begin(), allowed.end(), *fixed.zero) != allowed.end())
      return searchSpace(m, setup, hw, fixed, options);
    SearchResult result;
    result.error = "strategy.zero: " + std::to_string(*fixed.zero) +
                   " is not among the stages allowed here (" +
                   std::to_string(allowed.front()) + "-" +
                   std::to_string(allowed.back()) + ")";
    return result;
  }
  // Each allowed stage searched as if the job fixed it; the best outcome
  // wins (outcomeRank(); ties: the lower stage), with its runners-up.
  std::optional<SearchResult> best;
  for (int zero : allowed) {
    FixedDecisions stage = fixed;
    stage.zero = zero;
    stage.allowedZero.clear();
    SearchResult r = searchSpace(m, setup, hw, stage, options);
    if (!best || outcomeRank(r) > outcomeRank(*best))
      best = std::move(r);
  }
  return *best;
}

} // namespace swift::cost
