//===- Schedule.cpp - derive and validate a plan's schedule ---------------===//
//
// The rules here are the executor's assumptions (Engine.cpp): a schedule that
// passes validateSchedule() cannot make the engine use parameters that are
// not gathered, free them twice, or reduce gradients that are not final.
//
//===----------------------------------------------------------------------===//
#include "swift/Plan/Error.h"
#include "swift/Plan/Plan.h"

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

Schedule deriveSchedule(const ModelConfig &m, const StrategyConfig &st,
                        int64_t worldSize) {
  (void)worldSize;
  const int numUnits = int(m.numLayers) + 2, last = numUnits - 1;
  Schedule s;
  for (int u = 0; u < numUnits; ++u) {
    UnitSpec spec;
    spec.kind = u == 0      ? UnitKind::Embedding
                : u == last ? UnitKind::Head
                            : UnitKind::Decoder;
    if (spec.kind == UnitKind::Decoder) {
      spec.layer = u - 1;
      bool inRange =
          st.checkpointLayers < 0 || spec.layer < st.checkpointLayers;
      spec.checkpoint = inRange ? st.checkpointing : Checkpointing::None;
    }
    s.units.push_back(spec);
  }
  // Buckets are sized in fp32 gradient bytes (the reduction dtype unless
  // pure bf16, where buckets then hold half the bytes they are sized for).
  const int64_t bytesPerGrad = 4;
  // Buckets in backward order, so each closes as early as possible.
  Bucket current;
  int64_t currentBytes = 0;
  const Collective coll =
      st.zero == 0 ? Collective::AllReduce : Collective::ReduceScatter;
  auto close = [&] {
    if (current.units.empty())
      return;
    current.collective = coll;
    current.everyMicroBatch = st.zero >= 2;
    s.buckets.push_back(current);
    current = Bucket{};
    currentBytes = 0;
  };
  for (int u = last; u >= 0; --u) {
    current.units.push_back(u);
    currentBytes += unitParameterCount(m, u) * bytesPerGrad;
    if (currentBytes >= st.bucketBytes)
      close();
  }
  close();
  std::vector<int> bucketOfUnit(numUnits);
  for (size_t b = 0; b < s.buckets.size(); ++b)
    for (int u : s.buckets[b].units)
      bucketOfUnit[u] = int(b);

  const bool z3 = st.zero == 3;
  const int depth = st.prefetchDepth;
  // Forward: gather this unit's owners (skipped when already prefetched) and
  // the owners of the next `depth` units; release after use. The tied head
  // gathers unit 0 again: holding the embedding table for the whole forward
  // would cost more than a second all-gather.
  for (int u = 0; u < numUnits; ++u) {
    ProgramStep stp;
    stp.unit = u;
    if (z3) {
      for (int o : unitOwners(m, u))
        stp.gather.push_back(o);
      for (int k = 1; k <= depth && u + k < numUnits; ++k)
        for (int o : unitOwners(m, u + k))
          stp.gather.push_back(o);
      // The head is computed last in forward and first in backward: keep it
      // (and the tied embedding) gathered across the turn.
      if (u != last)
        stp.release = {u};
    }
    s.forward.push_back(stp);
  }
  // Backward: reverse order; a bucket is reduced once its last unit (the
  // lowest-numbered, plus the head for a tied unit 0) is done.
  std::vector<bool> done(numUnits, false);
  std::vector<bool> reduced(s.buckets.size(), false);
  for (int u = last; u >= 0; --u) {
    ProgramStep stp;
    stp.unit = u;
    if (z3) {
      // The embedding's backward reads no weights (a scatter-add of the
      // incoming gradient), so unit 0 is never gathered in backward.
      for (int k = 0; k <= depth && u - k >= 1; ++k)
        for (int o : unitOwners(m, u - k))
          stp.gather.push_back(o);
      if (u != 0)
        stp.release = {u};
      if (u == last && m.tieWordEmbeddings)
        stp.release.push_back(0);
    }
    done[u] = true;
    for (size_t b = 0; b < s.buckets.size(); ++b) {
      if (reduced[b])
        continue;
      bool ready = true;
      for (int x : s.buckets[b].units)
        ready &= done[x] && (x != 0 || !m.tieWordEmbeddings || done[last]);
      if (ready) {
        stp.reduce.push_back(int(b));
        reduced[b] = true;
      }
    }
    s.backward.push_back(stp);
  }
  s.optimizer.device = st.offload == Offload::None
                           ? OptimizerDevice::Accelerator
                           : OptimizerDevice::Cpu;
  s.optimizer.gatherParams = st.zero == 1 || st.zero == 2;
  return s;
}

/// Simulates the programs and checks every rule the executor relies on.
void validateSchedule(const Plan &p) {
  const std::string &file = p.path;
  const Schedule &s = p.schedule;
  const int numUnits = int(p.model.numLayers) + 2, last = numUnits - 1;
  const int zero = p.strategy.zero;
  auto fail = [&](const std::string &where, const std::string &why) {
    throw UserError(file + ": schedule." + where + ": " + why);
  };
  auto stepName = [](const char *prog, size_t i) {
    return std::string(prog) + "[" + std::to_string(i) + "]";
  };
  // Autograd fixes the order: forward 0..last, backward last..0.
  if (s.forward.size() != size_t(numUnits))
    fail("forward",
         "expected one entry per unit (" + std::to_string(numUnits) + ")");
  if (s.backward.size() != size_t(numUnits))
    fail("backward",
         "expected one entry per unit (" + std::to_string(numUnits) + ")");
  for (int i = 0; i < numUnits; ++i) {
    if (s.forward[i].unit != i)
      fail(stepName("forward", i) + ".unit",
           "forward must compute units in order 0.." + std::to_string(last));
    if (s.backward[i].unit != last - i)
      fail(stepName("backward", i) + ".unit",
           "backward must compute units in order " + std::to_string(last) +
               "..0 (autograd's order)");
  }
  // Residency: ZeRO 0-2 keep every unit's parameters resident; ZeRO-3 holds
  // only shards and must gather before use.
  std::vector<bool> resident(numUnits, zero < 3);
  auto run = [&](const std::vector<ProgramStep> &prog, const char *name) {
    for (size_t i = 0; i < prog.size(); ++i) {
      const ProgramStep &st = prog[i];
      if (zero < 3 && (!st.gather.empty() || !st.release.empty()))
        fail(stepName(name, i), "gather/release need zero 3 (parameters are "
                                "replicated at zero " +
                                    std::to_string(zero) + ")");
      for (int u : st.gather)
        resident[u] = true;
      bool embeddingBackward = prog.data() == s.backward.data() && st.unit == 0;
      for (int u : embeddingBackward ? std::vector<int>{}
                                     : unitOwners(p.model, st.unit))
        if (!resident[u])
          fail(stepName(name, i), "unit " + std::to_string(st.unit) +
                                      " needs the parameters of unit " +
                                      std::to_string(u) +
                                      ", which are not gathered");
      for (int u : st.release) {
        if (!resident[u])
          fail(stepName(name, i) + ".release",
               "unit " + std::to_string(u) + " is not gathered");
        resident[u] = false;
      }
    }
  };
  run(s.forward, "forward");
  run(s.backward, "backward");
  if (zero == 3)
    for (int u = 0; u < numUnits; ++u)
      if (resident[u])
        fail("backward", "unit " + std::to_string(u) +
                             " is still gathered after backward; release it "
                             "(ZeRO-3 reshards every unit each micro-batch)");
  // Buckets: a partition of the units; each reduced once in backward, after
  // every unit that writes gradients into it has run.
  std::vector<int> bucketOf(numUnits, -1);
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    const Bucket &bk = s.buckets[b];
    std::string where = "buckets[" + std::to_string(b) + "]";
    for (int u : bk.units) {
      if (bucketOf[u] >= 0)
        fail(where, "unit " + std::to_string(u) + " is already in bucket " +
                        std::to_string(bucketOf[u]));
      bucketOf[u] = int(b);
    }
    Collective want =
        zero == 0 ? Collective::AllReduce : Collective::ReduceScatter;
    if (bk.collective != want)
      fail(where + ".collective", std::string("zero ") + std::to_string(zero) +
                                      " reduces gradients with " +
                                      toString(want));
    bool wantEvery = zero >= 2;
    if (bk.everyMicroBatch != wantEvery)
      fail(where + ".every_micro_batch",
           wantEvery ? "zero >= 2 keeps only gradient shards, so it must "
                       "reduce every micro-batch"
                     : "zero 0/1 accumulate full gradients locally and "
                       "reduce on the last micro-batch only");
  }
  for (int u = 0; u < numUnits; ++u)
    if (bucketOf[u] < 0)
      fail("buckets", "unit " + std::to_string(u) + " is in no bucket");
  std::vector<int> reducedAt(s.buckets.size(), -1);
  std::vector<bool> done(numUnits, false);
  for (size_t i = 0; i < s.backward.size(); ++i) {
    done[s.backward[i].unit] = true;
    for (int b : s.backward[i].reduce) {
      if (reducedAt[b] >= 0)
        fail(stepName("backward", i) + ".reduce",
             "bucket " + std::to_string(b) + " is reduced twice");
      reducedAt[b] = int(i);
      for (int u : s.buckets[b].units) {
        // Gradients of unit u come from u itself and, for a tied embedding,
        // from the head.
        bool ready =
            done[u] && (u != 0 || !p.model.tieWordEmbeddings || done[last]);
        if (!ready)
          fail(stepName("backward", i) + ".reduce",
               "bucket " + std::to_string(b) + " holds unit " +
                   std::to_string(u) + ", whose gradients are not final yet");
      }
    }
  }
  for (size_t b = 0; b < s.buckets.size(); ++b)
    if (reducedAt[b] < 0)
      fail("buckets[" + std::to_string(b) + "]",
           "never reduced by the backward program");
  if (s.optimizer.gatherParams != (zero == 1 || zero == 2))
    fail("optimizer.gather_params", zero == 1 || zero == 2
                                        ? "zero 1/2 must all-gather the "
                                          "updated parameters"
                                        : "only zero 1/2 all-gather updated "
                                          "parameters");
  bool cpu = s.optimizer.device == OptimizerDevice::Cpu;
  if (cpu != (p.strategy.offload != Offload::None))
    fail("optimizer.device", "must be \"cpu\" exactly when strategy.offload "
                             "is not \"none\"");
}

} // namespace swift::plan
