//===- Schedule.cpp - the schedule algorithm and the schedule rules -------===//
//
// buildSchedule() and checkSchedule() are the only schedule algorithm and
// the only schedule rules of the project (Schedule.h says who calls them).
// The rules are the executor's assumptions (runtime/lib/engine/UnitDriver.cpp).
//
//===----------------------------------------------------------------------===//
#include "swift/Plan/Schedule.h"
#include "swift/Plan/Error.h"

#include <algorithm>

namespace swift::plan {

int64_t ModelConfig::numEmbeddingParameters() const {
  return vocabSize * hiddenSize;
}

int64_t unitParameterCount(const ModelConfig &m, int unit) {
  const int64_t C = m.hiddenSize, D = m.headDim, I = m.intermediateSize;
  const int64_t q = m.numHeads * D, kv = m.numKvHeads * D;
  if (unit == 0)
    return m.vocabSize * C;
  if (unit == m.numLayers + 1)
    return C + (m.tieWordEmbeddings ? 0 : m.vocabSize * C);
  int64_t n = 2 * C                        // input / post-attention norms
              + q * C + 2 * kv * C + C * q // q, k, v, o
              + 3 * I * C;                 // gate, up, down
  if (m.qkvBias)
    n += q + 2 * kv;
  if (m.oBias)
    n += C;
  if (m.qkNorm)
    n += 2 * D;
  return n;
}

int64_t ModelConfig::numParameters() const {
  int64_t n = 0;
  for (int u = 0; u < numLayers + 2; ++u)
    n += unitParameterCount(*this, u);
  return n;
}

std::vector<int> unitOwners(const ModelConfig &m, int unit) {
  if (unit == m.numLayers + 1 && m.tieWordEmbeddings)
    return {unit, 0};
  return {unit};
}

StorageLayout storageLayout(const StrategyConfig &s) {
  StorageLayout l;
  l.paramsSharded = s.zero == 3;
  l.optimizerSharded = s.zero >= 1;
  l.gradsSharded = s.zero >= 2;
  l.optimizerOnHost = s.offload != Offload::None;
  l.paramsOnHost = s.offload == Offload::OptimizerAndParams;
  return l;
}

namespace {

/// Updated parameters are all-gathered where they are whole on every rank
/// but updated in shards (ZeRO 1/2): the rule and the algorithm's choice.
bool gathersUpdatedParams(const StorageLayout &l) {
  return l.optimizerSharded && !l.paramsSharded;
}

} // namespace

Checkpointing layerCheckpoint(const StrategyConfig &s, int64_t layer) {
  bool inRange = s.checkpointLayers < 0 || layer < s.checkpointLayers;
  return inRange ? s.checkpointing : Checkpointing::None;
}

bool layerOffloadsInput(const StrategyConfig &s, int64_t layer) {
  if (layerCheckpoint(s, layer) != Checkpointing::Full)
    return false;
  return s.offloadActivations < 0 || layer < s.offloadActivations;
}

std::vector<int64_t> unitParameterCounts(const ModelConfig &m) {
  std::vector<int64_t> out;
  for (int u = 0; u < m.numLayers + 2; ++u)
    out.push_back(unitParameterCount(m, u));
  return out;
}

BuiltSchedule buildSchedule(const ModelConfig &m, const StrategyConfig &st,
                            const std::vector<int64_t> &unitParameters) {
  const int numUnits = int(m.numLayers) + 2, last = numUnits - 1;
  SWIFT_ASSERT(unitParameters.size() == size_t(numUnits),
               "one parameter count per unit");
  BuiltSchedule out;
  Schedule &s = out.schedule;
  for (int u = 0; u < numUnits; ++u) {
    UnitSpec spec;
    spec.kind = u == 0      ? UnitKind::Embedding
                : u == last ? UnitKind::Head
                            : UnitKind::Decoder;
    if (spec.kind == UnitKind::Decoder) {
      spec.layer = u - 1;
      spec.checkpoint = layerCheckpoint(st, spec.layer);
      spec.offloadInput = layerOffloadsInput(st, spec.layer);
    }
    s.units.push_back(spec);
  }
  // Buckets in backward order, so each closes as early as possible.
  Bucket current;
  int64_t currentBytes = 0;
  const StorageLayout storage = storageLayout(st);
  const Collective coll = storage.optimizerSharded ? Collective::ReduceScatter
                                                   : Collective::AllReduce;
  auto close = [&] {
    if (current.units.empty())
      return;
    current.collective = coll;
    // Where whole gradients are kept, accumulate them and reduce once.
    current.everyMicroBatch = storage.gradsSharded;
    s.buckets.push_back(current);
    out.bucketBytes.push_back(currentBytes);
    current = Bucket{};
    currentBytes = 0;
  };
  for (int u = last; u >= 0; --u) {
    current.units.push_back(u);
    currentBytes += unitParameters[u] * kBucketBytesPerParameter;
    if (currentBytes >= st.bucketBytes)
      close();
  }
  close();

  const bool z3 = storage.paramsSharded;
  const int depth = st.prefetchDepth;
  // Gathers the owners of the unit `ahead` steps after `step`'s own.
  auto gather = [&](ProgramStep &step, std::vector<int> &aheads, int unit,
                    int ahead) {
    for (int o : unitOwners(m, unit)) {
      step.gather.push_back(o);
      aheads.push_back(ahead);
    }
  };
  // Forward: gather this unit's owners (skipped when already prefetched) and
  // the owners of the next `depth` units; release after use. The tied head
  // gathers unit 0 again: holding the embedding table for the whole forward
  // would cost more than a second all-gather.
  for (int u = 0; u < numUnits; ++u) {
    ProgramStep stp;
    std::vector<int> aheads;
    stp.unit = u;
    if (z3) {
      for (int k = 0; k <= depth && u + k < numUnits; ++k)
        gather(stp, aheads, u + k, k);
      // The head is computed last in forward and first in backward: keep it
      // (and the tied embedding) gathered across the turn.
      if (u != last)
        stp.release = {u};
    }
    s.forward.push_back(stp);
    out.forwardAhead.push_back(aheads);
  }
  // Backward: reverse order; a bucket is reduced once its last unit (the
  // lowest-numbered, plus the head for a tied unit 0, which backward runs
  // first) is done: at the backward step of that unit, last - unit, found
  // once per bucket.
  std::vector<std::vector<int>> readyAt(numUnits);
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    int step = 0;
    for (int x : s.buckets[b].units)
      step = std::max(step, last - x);
    readyAt[step].push_back(int(b));
  }
  for (int u = last; u >= 0; --u) {
    ProgramStep stp;
    std::vector<int> aheads;
    stp.unit = u;
    if (z3) {
      // The embedding's backward reads no weights (a scatter-add of the
      // incoming gradient), so unit 0 is never gathered in backward.
      for (int k = 0; k <= depth && u - k >= 1; ++k)
        gather(stp, aheads, u - k, k);
      if (u != 0)
        stp.release = {u};
      if (u == last && m.tieWordEmbeddings)
        stp.release.push_back(0);
    }
    stp.reduce = readyAt[last - u];
    s.backward.push_back(stp);
    out.backwardAhead.push_back(aheads);
  }
  s.optimizer.device = storage.optimizerOnHost ? OptimizerDevice::Cpu
                                               : OptimizerDevice::Accelerator;
  s.optimizer.gatherParams = gathersUpdatedParams(storage);
  return out;
}

std::string ScheduleViolation::path() const {
  static const char *const names[] = {"units", "buckets", "forward", "backward",
                                      "optimizer"};
  std::string out = names[static_cast<int>(part)];
  if (entry >= 0)
    out += "[" + std::to_string(entry) + "]";
  if (!field.empty())
    out += "." + field;
  return out;
}

std::optional<std::string> offloadViolation(const StrategyConfig &s) {
  if (s.offload == Offload::OptimizerAndParams && s.zero != 3)
    return std::string("\"optimizer+params\" needs zero 3 (only sharded "
                       "parameters can live on the host between uses)");
  if (s.offload != Offload::None && s.zero == 0)
    return std::string(
        "offload needs zero >= 1 (the host optimizer updates shards)");
  return std::nullopt;
}

std::optional<std::string> activationOffloadViolation(const StrategyConfig &s) {
  if (s.offloadActivations < -1)
    return std::string("offload_activations must be >= 0, or -1 (every "
                       "checkpointed layer)");
  if (s.mlpTileTokens < 0)
    return std::string("mlp_tile_tokens must be >= 0 (0: untiled)");
  if (s.offloadActivations != 0 && s.checkpointing != Checkpointing::Full)
    return std::string("offload_activations needs checkpointing \"full\" "
                       "(a checkpointed layer's input is what moves to the "
                       "host)");
  return std::nullopt;
}

namespace {

using Part = ScheduleViolation::Part;

/// Thrown inside checkSchedule() only: the first violation found.
struct Found {
  ScheduleViolation v;
};

[[noreturn]] void fail(Part part, int entry, std::string field, int item,
                       std::string why) {
  throw Found{{part, entry, std::move(field), item, std::move(why)}};
}
[[noreturn]] void fail(Part part, int entry, std::string why) {
  fail(part, entry, "", -1, std::move(why));
}

std::string quoted(const char *s) { return std::string("\"") + s + "\""; }

void checkUnits(const ModelConfig &m, const StrategyConfig &st,
                const Schedule &s) {
  const int numUnits = int(m.numLayers) + 2, last = numUnits - 1;
  if (s.units.size() != size_t(numUnits))
    fail(Part::Units, -1,
         "expected " + std::to_string(numUnits) + " units (embedding, " +
             std::to_string(m.numLayers) + " decoder layers, head), got " +
             std::to_string(s.units.size()));
  for (int u = 0; u < numUnits; ++u) {
    const UnitSpec &spec = s.units[u];
    UnitKind want = u == 0      ? UnitKind::Embedding
                    : u == last ? UnitKind::Head
                                : UnitKind::Decoder;
    if (spec.kind != want)
      fail(Part::Units, u, "kind", -1,
           "unit " + std::to_string(u) + " must be the " + toString(want));
    if (want != UnitKind::Decoder) {
      if (spec.checkpoint != Checkpointing::None)
        fail(Part::Units, u, "checkpoint", -1,
             "only decoder units are checkpointed");
      if (spec.offloadInput)
        fail(Part::Units, u, "offload_input", -1,
             "only decoder units offload their input");
      continue;
    }
    if (spec.layer != u - 1)
      fail(Part::Units, u, "layer", -1,
           "unit " + std::to_string(u) + " is decoder layer " +
               std::to_string(u - 1));
    // The schedule spells the strategy out: it may not disagree with it.
    Checkpointing expected = layerCheckpoint(st, spec.layer);
    if (spec.checkpoint != expected)
      fail(Part::Units, u, "checkpoint", -1,
           quoted(toString(spec.checkpoint)) +
               " disagrees with the strategy (" + quoted(toString(expected)) +
               " from strategy.checkpointing " +
               quoted(toString(st.checkpointing)) + ", checkpoint_layers " +
               std::to_string(st.checkpointLayers) + ")");
    if (spec.offloadInput != layerOffloadsInput(st, spec.layer))
      fail(Part::Units, u, "offload_input", -1,
           std::string(spec.offloadInput ? "true" : "false") +
               " disagrees with the strategy (offload_activations " +
               std::to_string(st.offloadActivations) + " over " +
               std::to_string(st.checkpointing == Checkpointing::Full
                                  ? (st.checkpointLayers < 0
                                         ? m.numLayers
                                         : std::min(st.checkpointLayers,
                                                    m.numLayers))
                                  : 0) +
               " fully checkpointed layers)");
  }
}

/// Autograd fixes the order: forward 0..last, backward last..0. Indices in
/// range; reductions only in backward.
void checkPrograms(const ModelConfig &m, const Schedule &s) {
  const int numUnits = int(m.numLayers) + 2, last = numUnits - 1;
  const int numBuckets = int(s.buckets.size());
  if (s.forward.size() != size_t(numUnits))
    fail(Part::Forward, -1,
         "expected one entry per unit (" + std::to_string(numUnits) + ")");
  if (s.backward.size() != size_t(numUnits))
    fail(Part::Backward, -1,
         "expected one entry per unit (" + std::to_string(numUnits) + ")");
  for (int i = 0; i < numUnits; ++i)
    if (s.forward[i].unit != i)
      fail(Part::Forward, i, "unit", -1,
           "forward must compute units in order 0.." + std::to_string(last));
  for (int i = 0; i < numUnits; ++i)
    if (s.backward[i].unit != last - i)
      fail(Part::Backward, i, "unit", -1,
           "backward must compute units in order " + std::to_string(last) +
               "..0 (autograd's order)");
  for (Part part : {Part::Forward, Part::Backward}) {
    const std::vector<ProgramStep> &prog =
        part == Part::Forward ? s.forward : s.backward;
    for (int i = 0; i < numUnits; ++i) {
      auto inRange = [&](const std::vector<int> &list, const char *field,
                         int size, const char *what) {
        for (size_t j = 0; j < list.size(); ++j)
          if (list[j] < 0 || list[j] >= size)
            fail(part, i, field, int(j),
                 std::string(what) + " " + std::to_string(list[j]) +
                     " does not exist (" + std::to_string(size) + " " + what +
                     "s)");
      };
      inRange(prog[i].gather, "gather", numUnits, "unit");
      inRange(prog[i].release, "release", numUnits, "unit");
      inRange(prog[i].reduce, "reduce", numBuckets, "bucket");
      if (part == Part::Forward && !prog[i].reduce.empty())
        fail(part, i, "reduce", 0,
             "gradient reductions belong to the backward program");
    }
  }
}

/// Residency: ZeRO 0-2 keep every unit's parameters resident; ZeRO-3 holds
/// only shards and must gather before use.
void checkResidency(const ModelConfig &m, const StrategyConfig &st,
                    const Schedule &s) {
  const int numUnits = int(m.numLayers) + 2;
  const int zero = st.zero;
  const bool sharded = storageLayout(st).paramsSharded;
  std::vector<bool> resident(numUnits, !sharded);
  for (Part part : {Part::Forward, Part::Backward}) {
    const std::vector<ProgramStep> &prog =
        part == Part::Forward ? s.forward : s.backward;
    for (size_t i = 0; i < prog.size(); ++i) {
      const ProgramStep &step = prog[i];
      if (!sharded && (!step.gather.empty() || !step.release.empty()))
        fail(part, int(i), step.gather.empty() ? "release" : "gather", 0,
             "gather/release need zero 3 (parameters are replicated at "
             "zero " +
                 std::to_string(zero) + ")");
      for (int u : step.gather)
        resident[u] = true;
      // The embedding's backward is a scatter-add: it reads no weights.
      bool embeddingBackward = part == Part::Backward && step.unit == 0;
      for (int u :
           embeddingBackward ? std::vector<int>{} : unitOwners(m, step.unit))
        if (!resident[u])
          fail(part, int(i),
               "unit " + std::to_string(step.unit) +
                   " needs the parameters of unit " + std::to_string(u) +
                   ", which are not gathered");
      for (size_t j = 0; j < step.release.size(); ++j) {
        int u = step.release[j];
        if (!resident[u])
          fail(part, int(i), "release", int(j),
               "unit " + std::to_string(u) + " is not gathered");
        resident[u] = false;
      }
    }
  }
  if (sharded)
    for (int u = 0; u < numUnits; ++u)
      if (resident[u])
        fail(Part::Backward, -1,
             "unit " + std::to_string(u) +
                 " is still gathered after backward; release it (ZeRO-3 "
                 "reshards every unit each micro-batch)");
}

/// Buckets: a partition of the units; each reduced with the collective the
/// gradients' storage needs, every micro-batch where no whole gradient is
/// kept (at ZeRO 0/1 the frequency is the schedule's choice: every
/// micro-batch reduces a micro-batch buffer and adds the result into the
/// accumulator or the shard); each reduced once in backward, after every
/// unit that writes gradients into it has run.
void checkBuckets(const ModelConfig &m, const StrategyConfig &st,
                  const Schedule &s) {
  const int numUnits = int(m.numLayers) + 2, last = numUnits - 1;
  const int zero = st.zero;
  const StorageLayout storage = storageLayout(st);
  std::vector<int> bucketOf(numUnits, -1);
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    const Bucket &bk = s.buckets[b];
    if (bk.units.empty())
      fail(Part::Buckets, int(b), "units", -1,
           "a bucket needs at least one unit");
    for (size_t j = 0; j < bk.units.size(); ++j) {
      int u = bk.units[j];
      if (u < 0 || u > last)
        fail(Part::Buckets, int(b), "units", int(j),
             "unit " + std::to_string(u) + " does not exist (" +
                 std::to_string(numUnits) + " units)");
      if (bucketOf[u] >= 0)
        fail(Part::Buckets, int(b),
             "unit " + std::to_string(u) + " is already in bucket " +
                 std::to_string(bucketOf[u]));
      bucketOf[u] = int(b);
    }
    // The optimizer reads the whole gradient (all-reduced) or its shard
    // (reduce-scattered).
    Collective want = storage.optimizerSharded ? Collective::ReduceScatter
                                               : Collective::AllReduce;
    if (bk.collective != want)
      fail(Part::Buckets, int(b), "collective", -1,
           "zero " + std::to_string(zero) + " reduces gradients with " +
               toString(want));
    if (storage.gradsSharded && !bk.everyMicroBatch)
      fail(Part::Buckets, int(b), "every_micro_batch", -1,
           "zero >= 2 keeps only gradient shards, so it must reduce every "
           "micro-batch");
  }
  for (int u = 0; u < numUnits; ++u)
    if (bucketOf[u] < 0)
      fail(Part::Buckets, -1, "unit " + std::to_string(u) + " is in no bucket");
  std::vector<int> reducedAt(s.buckets.size(), -1);
  std::vector<bool> done(numUnits, false);
  for (size_t i = 0; i < s.backward.size(); ++i) {
    done[s.backward[i].unit] = true;
    const std::vector<int> &reduce = s.backward[i].reduce;
    for (size_t j = 0; j < reduce.size(); ++j) {
      int b = reduce[j];
      if (reducedAt[b] >= 0)
        fail(Part::Backward, int(i), "reduce", int(j),
             "bucket " + std::to_string(b) + " is reduced twice");
      reducedAt[b] = int(i);
      for (int u : s.buckets[b].units) {
        // Gradients of unit u come from u itself and, for a tied embedding,
        // from the head.
        bool ready = done[u] && (u != 0 || !m.tieWordEmbeddings || done[last]);
        if (!ready)
          fail(Part::Backward, int(i), "reduce", int(j),
               "bucket " + std::to_string(b) + " holds unit " +
                   std::to_string(u) + ", whose gradients are not final yet");
      }
    }
  }
  for (size_t b = 0; b < s.buckets.size(); ++b)
    if (reducedAt[b] < 0)
      fail(Part::Buckets, int(b), "never reduced by the backward program");
}

/// Storage facts, not choices: parameters whole on every rank but updated
/// in shards must be all-gathered after the update (elsewhere there is
/// nothing to gather), and the optimizer runs where its state lives.
void checkOptimizer(const StrategyConfig &st, const Schedule &s) {
  const StorageLayout storage = storageLayout(st);
  const bool gather = gathersUpdatedParams(storage);
  if (s.optimizer.gatherParams != gather)
    fail(Part::Optimizer, -1, "gather_params", -1,
         gather ? "zero 1/2 must all-gather the updated parameters"
                : "only zero 1/2 all-gather updated parameters");
  bool cpu = s.optimizer.device == OptimizerDevice::Cpu;
  if (cpu != storage.optimizerOnHost)
    fail(Part::Optimizer, -1, "device", -1,
         "must be \"cpu\" exactly when strategy.offload is not \"none\"");
}

} // namespace

std::optional<ScheduleViolation> checkSchedule(const ModelConfig &m,
                                               const StrategyConfig &st,
                                               const Schedule &s) {
  try {
    // A strategy that breaks its own rule has no valid schedule: say why
    // where the schedule depends on it, the optimizer's placement.
    if (std::optional<std::string> why = offloadViolation(st))
      fail(Part::Optimizer, -1, "device", -1, *why);
    if (std::optional<std::string> why = activationOffloadViolation(st))
      fail(Part::Units, -1, "", -1, *why);
    checkUnits(m, st, s);
    checkPrograms(m, s);
    checkResidency(m, st, s);
    checkBuckets(m, st, s);
    checkOptimizer(st, s);
  } catch (Found &found) {
    return std::move(found.v);
  }
  return std::nullopt;
}

void validateSchedule(const Plan &p) {
  if (std::optional<ScheduleViolation> v =
          checkSchedule(p.model, p.strategy, p.schedule))
    throw UserError(p.path + ": schedule." + v->path() + ": " + v->why);
}

} // namespace swift::plan
