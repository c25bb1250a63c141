//===- UnitDriver.cpp - the units' forward, backward, gathers, reductions ===//
//
// Each unit is one node of the outer autograd graph (Autograd.h). Its
// forward runs the unit's ops on fresh leaf views of the gathered flat
// parameters and keeps that inner graph (or, under full checkpointing, only
// the input). Its backward, called by autograd in reverse unit order, runs
// the schedule entry for the unit: prefetch gathers, recompute if needed,
// differentiate the inner graph, add the parameter gradients into the flat
// gradient buffers, release, launch bucket reductions.
//
//===----------------------------------------------------------------------===//
#include "UnitDriver.h"
#include "ActivationStash.h"
#include "Unit.h"

#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/model/Autograd.h"
#include "swift/Runtime/model/Kernels.h"

#include <algorithm>

namespace swift::rt::engine {

namespace {

// Weight gradients written in place by their GEMMs (Kernels.h GradSink);
// SWIFT_KERNELS=-sink (or 0) returns them through autograd instead, to
// measure the difference.
bool useGradSinks() { return kernelSwitchOn("sink"); }

} // namespace

UnitDriver::UnitDriver(const Plan &plan, at::Device device,
                       at::ScalarType computeDtype, at::ScalarType gradDtype,
                       const std::vector<std::unique_ptr<Unit>> &units,
                       Collectives &collectives, Optimizer &optimizer,
                       ActivationStash &stash, std::deque<Pending> &inFlight)
    : plan_(plan), m_(plan.model), device_(device), computeDtype_(computeDtype),
      gradDtype_(gradDtype), units_(units), collectives_(collectives),
      optimizer_(optimizer), stash_(stash), inFlight_(inFlight),
      probe_(device), lora_(plan.training.method != Method::Full) {
  const int numUnits = int(units_.size());
  backwardIndex_.resize(numUnits);
  for (size_t i = 0; i < plan.schedule.backward.size(); ++i)
    backwardIndex_[plan.schedule.backward[i].unit] = int(i);
  bucketOf_.assign(numUnits, -1);
  for (size_t b = 0; b < plan.schedule.buckets.size(); ++b)
    for (int u : plan.schedule.buckets[b].units)
      bucketOf_[u] = int(b);
  // Sinks: the decoder's GEMM weights (its 2-D leaves), the embedding
  // table (its backward adds rows into the buffer), and the head's lm_head
  // (or the tied table), whose gradient the loss computes during the
  // forward. The head's only where that gradient accumulates in the
  // step-long buffer (its bucket is reduced on the last micro-batch only),
  // which holds it from the forward on: a micro-batch buffer would be
  // allocated at the forward.
  for (int u = 0; u < numUnits; ++u) {
    std::vector<bool> &sunk = units_[u]->sunk;
    for (int o : unitOwners(m_, u))
      for (const LeafDesc &d : units_[o]->layout.leaves)
        sunk.push_back(!lora_ && useGradSinks() && u <= m_.numLayers &&
                       d.shape.size() == 2);
    if (!lora_ && u == m_.numLayers + 1 && useGradSinks() &&
        !reducedEveryMicroBatch(unitOwners(m_, u).back()))
      sunk.back() = true;
  }
  rope_ = makeRope(m_, plan.training.sequenceLength,
                   at::TensorOptions().device(device_).dtype(computeDtype_));
  // The update in backward (plan::updatesInBackward): the units whose
  // backward adds to each unit's gradient.
  contributors_.assign(numUnits, 0);
  for (int u = 0; u < numUnits; ++u)
    for (int o : unitOwners(m_, u))
      ++contributors_[o];
}

at::Tensor UnitDriver::forward(const MicroBatch &mb, bool last) {
  lastMicroBatch_ = last;
  contributorsLeft_ = contributors_;
  // A leaf that requires grad, so the first unit's node joins the graph.
  at::Tensor x =
      at::zeros({}, at::TensorOptions().device(device_)).requires_grad_(true);
  for (const ProgramStep &st : plan_.schedule.forward) {
    for (int g : st.gather)
      gather(g);
    x = unitForward(st.unit, x, mb);
    for (int r : st.release)
      release(r);
  }
  return x;
}

at::Tensor UnitDriver::evaluate(const MicroBatch &mb) {
  at::NoGradGuard noGrad;
  evaluating_ = true;
  at::Tensor x;
  // The schedule's forward program, its gathers and releases included.
  for (const ProgramStep &st : plan_.schedule.forward) {
    for (int g : st.gather)
      gather(g);
    const int u = st.unit;
    for (int o : unitOwners(m_, u))
      waitGathered(o);
    materializeBase(u);
    x = computeUnit(u, x, makeLeaves(u, false), mb);
    dematerializeBase(u);
    for (int r : st.release)
      release(r);
  }
  evaluating_ = false;
  return x;
}

void UnitDriver::gather(int u) {
  Unit &U = *units_[u];
  if (U.params->resident())
    return;
  U.params->gather(collectives_);
  if (U.base)
    U.base->gather(collectives_);
}

void UnitDriver::waitGathered(int u) {
  Unit &U = *units_[u];
  SWIFT_ASSERT(U.params->resident(), "unit ", u,
               " used before it was gathered");
  U.params->waitGathered();
  if (U.base)
    U.base->waitGathered();
}

void UnitDriver::release(int u) {
  Unit &U = *units_[u];
  SWIFT_ASSERT(U.params->resident(), "unit ", u, " released twice");
  U.params->release();
  if (U.base)
    U.base->release();
}

std::vector<at::Tensor> UnitDriver::makeLeaves(int u, bool requiresGrad) {
  std::vector<at::Tensor> leaves;
  for (int o : unitOwners(m_, u)) {
    const Unit &O = *units_[o];
    for (const LeafDesc &d : O.layout.leaves) {
      at::Tensor v =
          O.params->full().narrow(0, d.offset, d.numel()).view(d.shape);
      leaves.push_back(requiresGrad ? v.detach().requires_grad_(true) : v);
    }
  }
  return leaves;
}

void UnitDriver::materializeBase(int u) {
  for (int o : unitOwners(m_, u))
    if (units_[o]->base)
      units_[o]->base->materialize();
}

void UnitDriver::dematerializeBase(int u) {
  for (int o : unitOwners(m_, u))
    if (units_[o]->base)
      units_[o]->base->dematerialize();
}

std::vector<at::Tensor> UnitDriver::baseLeaves(int u) {
  std::vector<at::Tensor> leaves;
  for (int o : unitOwners(m_, u)) {
    std::vector<at::Tensor> own = units_[o]->base->leaves();
    leaves.insert(leaves.end(), own.begin(), own.end());
  }
  return leaves;
}

bool UnitDriver::reducedEveryMicroBatch(int u) const {
  return plan_.schedule.buckets[bucketOf_[u]].everyMicroBatch;
}

at::Tensor &UnitDriver::gradTarget(int u, bool &fresh) {
  Unit &O = *units_[u];
  fresh = false;
  if (reducedEveryMicroBatch(u)) { // reduced after this micro-batch
    if (!O.microGrad.defined())
      O.microGrad = at::zeros(
          {O.padded()}, at::TensorOptions().device(device_).dtype(gradDtype_));
    return O.microGrad;
  }
  // Accumulated until the last micro-batch: the buffer lives from the unit's
  // first gradient of the step (here) to the end of the step, as torch's
  // gradients do with zero_grad(set_to_none=True): between steps, and in the
  // forward before the head, no gradient memory is held. That gradient
  // overwrites it (no zeroing pass, no read of zeros); only the padding past
  // the last parameter, which no gradient covers, is zeroed.
  if (!O.grad.defined()) {
    O.grad = at::empty({O.padded()},
                       at::TensorOptions().device(device_).dtype(gradDtype_));
    O.grad.narrow(0, O.layout.numel, O.padded() - O.layout.numel).zero_();
  }
  fresh = O.gradFresh;
  return O.grad;
}

std::vector<GradSink> UnitDriver::makeSinks(int u) {
  const Unit &U = *units_[u];
  std::vector<GradSink> sinks(U.sunk.size());
  size_t i = 0;
  for (int o : unitOwners(m_, u))
    for (const LeafDesc &d : units_[o]->layout.leaves) {
      if (U.sunk[i++])
        sinks[i - 1] = [this, o, d]() {
          bool fresh;
          at::Tensor &target = gradTarget(o, fresh);
          return std::make_pair(
              target.narrow(0, d.offset, d.numel()).view(d.shape), !fresh);
        };
    }
  return sinks;
}

at::Tensor UnitDriver::computeUnit(int u, const at::Tensor &x,
                                   const std::vector<at::Tensor> &leaves,
                                   const MicroBatch &mb, bool forBackward) {
  const bool selective =
      plan_.schedule.units[u].checkpoint == Checkpointing::Selective;
  const Rope &rope = mb.rope.cos.defined() ? mb.rope : rope_;
  if (lora_) { // the frozen base's weights, the adapters' leaves
    std::vector<at::Tensor> base = baseLeaves(u);
    if (u == 0)
      return embeddingForward(base[0], mb.inputs);
    if (u == m_.numLayers + 1)
      return headLoss(m_, x, base[0], base[1], mb.targets, GradSink(),
                      mb.masked, mb.divisor);
    DecoderAdapters adapters = bindAdapters(m_, plan_.training.lora, leaves);
    adapters.dropout = evaluating_ ? 0.0 : plan_.training.lora.dropout;
    // (seed, first sample, unit): the same masks at any world size and in
    // a recomputation.
    adapters.dropoutSeed =
        (plan_.training.seed * 1000003ull + uint64_t(mb.firstSample)) *
            4099ull +
        uint64_t(u);
    return decoderForward(m_, bindDecoder(m_, base), x, rope, selective,
                          forBackward, mb.packing, &adapters,
                          plan_.strategy.mlpTileTokens);
  }
  const bool grads = !leaves.empty() && leaves.front().requires_grad();
  if (u == 0)
    return embeddingForward(leaves[0], mb.inputs,
                            grads ? makeSinks(u)[0] : GradSink());
  if (u == m_.numLayers + 1) // [norm, lm_head or the tied table]
    return headLoss(m_, x, leaves[0], leaves[1], mb.targets,
                    grads ? makeSinks(u)[1] : GradSink(), mb.masked,
                    mb.divisor);
  DecoderWeights w =
      bindDecoder(m_, leaves, grads ? makeSinks(u) : std::vector<GradSink>());
  w.fp8 = plan::fp8Gemms(plan_.training.precision);
  return decoderForward(m_, w, x, rope, selective, forBackward, mb.packing,
                        nullptr, plan_.strategy.mlpTileTokens);
}

at::Tensor UnitDriver::unitForward(int u, const at::Tensor &x,
                                   const MicroBatch &mb) {
  for (int o : unitOwners(m_, u))
    waitGathered(o);
  probe_.mark("forward", u, "start");
  const bool full = plan_.schedule.units[u].checkpoint == Checkpointing::Full;
  materializeBase(u); // QLoRA: dequantized for this computation only
  at::Tensor xIn = u == 0 ? at::Tensor() : x.detach();
  // The plan's offload_input (always a full checkpoint): the input goes to
  // the host while the unit computes; the backward takes it back.
  const bool offload = full && stash_.offloads(u);
  if (offload)
    stash_.stash(u, xIn);
  at::Tensor out;
  std::vector<at::Tensor> inputs;
  if (full) {
    at::NoGradGuard noGrad;
    out = computeUnit(u, xIn, makeLeaves(u, false), mb);
  } else {
    at::AutoGradMode enable(true);
    if (xIn.defined())
      xIn.requires_grad_(true);
    inputs = makeLeaves(u, true);
    out = computeUnit(u, xIn, inputs, mb);
    inputs.insert(inputs.begin(), xIn);
  }
  dematerializeBase(u); // saved views keep the storage object, not its bytes
  std::vector<at::Tensor> outs{out.detach()};
  at::Tensor xSaved = full && !offload ? xIn : at::Tensor();
  if (full)
    out = at::Tensor();
  probe_.mark("forward", u, "end");
  MicroBatch mbCopy = mb;
  attachBackward(
      {x}, outs,
      [this, u, mbCopy, xSaved, out,
       inputs](std::vector<at::Tensor> &&grads) mutable {
        return unitBackward(u, std::move(grads), mbCopy, xSaved, std::move(out),
                            std::move(inputs));
      },
      "UnitBackward");
  return outs[0];
}

std::vector<at::Tensor>
UnitDriver::unitBackward(int u, std::vector<at::Tensor> &&grads, MicroBatch &mb,
                         const at::Tensor &xSaved, at::Tensor out,
                         std::vector<at::Tensor> inputs) {
  const ProgramStep &st = plan_.schedule.backward[backwardIndex_[u]];
  for (int g : st.gather)
    gather(g);
  stash_.prefetchAfter(u); // one offloaded input ahead, on the copy stream
  if (u != 0) // the embedding's backward reads no weights
    for (int o : unitOwners(m_, u))
      waitGathered(o);
  probe_.mark("backward", u, "start");
  materializeBase(u);   // QLoRA: the same values, dequantized again
  if (!out.defined()) { // full checkpointing: rebuild the inner graph
    at::AutoGradMode enable(true);
    at::Tensor xIn = (stash_.offloads(u) ? stash_.take(u) : xSaved)
                         .detach()
                         .requires_grad_(true);
    inputs = makeLeaves(u, true);
    out = computeUnit(u, xIn, inputs, mb, /*forBackward=*/true);
    inputs.insert(inputs.begin(), xIn);
  }
  // LoRA's embedding unit trains nothing and has no input gradient.
  const bool anyGrad =
      std::any_of(inputs.begin(), inputs.end(), [](const at::Tensor &t) {
        return t.defined() && t.requires_grad();
      });
  probe_.mark("backward", u, "recomputed");
  std::vector<at::Tensor> g = anyGrad ? differentiate({out}, {grads[0]}, inputs)
                                      : std::vector<at::Tensor>(inputs.size());
  probe_.mark("backward", u, "differentiated");
  out = at::Tensor();
  inputs.clear();
  dematerializeBase(u);
  accumulateGrads(u, std::vector<at::Tensor>(g.begin() + 1, g.end()));
  if (lastMicroBatch_)
    for (int o : unitOwners(m_, u))
      if (--contributorsLeft_[o] == 0)
        gradientFinal(o);
  for (int r : st.release)
    release(r);
  for (int b : st.reduce)
    if (plan_.schedule.buckets[b].everyMicroBatch || lastMicroBatch_)
      reduceBucket(b);
  return {g[0]};
}

void UnitDriver::accumulateGrads(int u,
                                 const std::vector<at::Tensor> &leafGrads) {
  const std::vector<bool> &sunk = units_[u]->sunk;
  size_t i = 0;
  for (int o : unitOwners(m_, u)) {
    Unit &O = *units_[o];
    bool fresh;
    at::Tensor target = gradTarget(o, fresh);
    O.gradFresh = false;
    for (size_t l = 0; l < O.layout.leaves.size(); ++l, ++i) {
      const LeafDesc &d = O.layout.leaves[l];
      const at::Tensor &g = leafGrads[i];
      if (sunk[i]) // the op that computed it wrote it already
        continue;
      at::Tensor dst = target.narrow(0, d.offset, d.numel()).view(d.shape);
      if (g.defined())
        fresh ? dst.copy_(g) : dst.add_(g);
      else if (fresh)
        dst.zero_();
    }
  }
  SWIFT_ASSERT(i == leafGrads.size(), "gradient count mismatch");
}

void UnitDriver::reduceScatter(Unit &U, at::Tensor full) {
  Pending rs = collectives_.reduceScatterAdd(std::move(full), U.gradShard);
  if (!lastMicroBatch_ || !collectives_.hasReplicas()) {
    inFlight_.push_back(std::move(rs));
    return;
  }
  // HSDP: the step's shard, complete once this (its last) reduce-scatter
  // is (inFlight_ is waited for oldest first, so the earlier micro-batches'
  // are too), summed across the replica groups. Issued when this is waited
  // for: every rank waits in the same order, and the Gloo reduce-scatter
  // adds into the shard only in its own wait.
  auto reduced = std::make_shared<Pending>(std::move(rs));
  at::Tensor shard = U.gradShard;
  inFlight_.push_back(Pending([this, reduced, shard]() mutable {
    reduced->wait();
    collectives_.allReduceReplicas(shard).wait();
    shard = at::Tensor();
  }));
}

void UnitDriver::reduceBucket(int b) {
  const plan::Bucket &bucket = plan_.schedule.buckets[b];
  const bool allReduce = bucket.collective == plan::Collective::AllReduce;
  for (int u : bucket.units) {
    Unit &U = *units_[u];
    if (U.padded() == 0) { // trains nothing (LoRA's embedding and head)
      U.microGrad = at::Tensor();
      continue;
    }
    if (!bucket.everyMicroBatch) { // the step's accumulated gradient
      if (allReduce)
        inFlight_.push_back(collectives_.allReduceSum(U.grad));
      else
        reduceScatter(U, U.grad);
      continue;
    }
    SWIFT_ASSERT(U.microGrad.defined(), "unit ", u, " has no gradient");
    // The Pending now holds the only reference: the buffer lives until the
    // reduction is complete, then returns to the allocator.
    at::Tensor micro = std::move(U.microGrad);
    U.microGrad = at::Tensor();
    if (!allReduce) {
      reduceScatter(U, std::move(micro));
      continue;
    }
    // All-reduced in place, then added into the step's gradient (the first
    // micro-batch's becomes it) once complete: in micro-batch order, as
    // inFlight_ is waited for oldest first.
    auto reduced = std::make_shared<Pending>(collectives_.allReduceSum(micro));
    inFlight_.push_back(Pending([this, u, reduced, micro]() mutable {
      reduced->wait();
      Unit &V = *units_[u];
      if (V.grad.defined())
        V.grad.add_(micro);
      else
        V.grad = std::move(micro);
      micro = at::Tensor();
    }));
  }
  // Bound the gradient buffers held by reductions in flight (ZeRO-2/3 keep
  // a full-size micro-batch gradient per unit until its reduce-scatter is
  // done). Waiting on the oldest only orders the compute stream after it
  // (CUDA) or blocks until Gloo is done with it (CPU); the newest stay in
  // flight and overlap with the backward of the next units.
  // plan::kReductionsInFlight: two buckets' worth of units, typically:
  // enough to overlap one reduction with the next unit's backward.
  while (inFlight_.size() > size_t(plan::kReductionsInFlight)) {
    inFlight_.front().wait();
    inFlight_.pop_front();
  }
}

void UnitDriver::finishPending() {
  for (Pending &p : inFlight_)
    p.wait();
  inFlight_.clear();
}

void UnitDriver::gradientFinal(int u) {
  // A gradient reduced every micro-batch is final only once its last
  // reduction is added in: it is updated after the backward.
  if (!reducedEveryMicroBatch(u))
    optimizer_.gradientFinal(*units_[u]);
}

MicroBatch UnitDriver::deviceMicroBatch(const Batch &b, int64_t firstSample,
                                        double divisor) const {
  MicroBatch mb;
  mb.inputs = toDeviceAsync(b.inputs, device_, at::kLong);
  mb.targets = toDeviceAsync(b.targets, device_, at::kLong);
  if (b.positions.defined())
    mb.rope = ropeAt(rope_, toDeviceAsync(b.positions, device_, at::kLong));
  if (b.segments.defined())
    mb.packing = makePacking(b.segments, device_, computeDtype_, m_.headDim);
  mb.masked = b.masked;
  mb.divisor = divisor;
  mb.firstSample = b.firstSample >= 0 ? b.firstSample : firstSample;
  return mb;
}

} // namespace swift::rt::engine
