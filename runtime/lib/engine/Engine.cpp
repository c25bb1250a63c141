//===- Engine.cpp - unit-granular forward/backward with ZeRO 0-3 ----------===//
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
#include "swift/Runtime/engine/Engine.h"
#include "Unit.h"
#include "swift/Runtime/model/Autograd.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/model/Kernels.h"
#include "swift/Runtime/core/TorchCompat.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace swift::rt {

struct Engine::MicroBatch {
  at::Tensor inputs, targets; // (B, S) int64, device
  Rope rope;                  // per-token tables; undefined: the engine's
  Packing packing;            // packed windows; empty: causal
  int64_t firstSample = 0;    // global number of its first sample
  bool masked = false;        // targets may be -100
  double divisor = 0;         // the loss sum's divisor when masked
};

namespace {

at::ScalarType computeDtypeOf(Precision p) {
  return p == Precision::Fp32 ? at::kFloat : at::kBFloat16;
}

// Weight gradients written in place by their GEMMs (Kernels.h GradSink);
// SWIFT_KERNELS=-sink (or 0) returns them through autograd instead, to
// measure the difference.
bool useGradSinks() { return kernelSwitchOn("sink"); }

} // namespace

Engine::Engine(const Plan &plan, Comm &comm, at::Device device,
               const StateSource *initial, const StateSource *base)
    : plan_(plan), m_(plan.model), comm_(comm), device_(device),
      storage_(plan::storageLayout(plan.strategy)),
      lora_(plan.training.method != Method::Full) {

  // The storage layout: the only code of the Engine that reads the
  // strategy (storage_, masterInCompute_, inBackwardAllowed_; Engine.h).
  const int W = comm.worldSize();
  const bool offload = storage_.optimizerOnHost;
  // The schedule rules (plan::checkSchedule) put the optimizer where its
  // state lives.
  SWIFT_ASSERT(offload == (plan.schedule.optimizer.device ==
                           plan::OptimizerDevice::Cpu),
               "the optimizer's placement disagrees with its state's");
  computeDtype_ = computeDtypeOf(plan.training.precision);
  // fp8-* stores as its bf16 twin (Enums.h storagePrecision).
  const Precision storage = plan::storagePrecision(plan.training.precision);
  gradDtype_ = storage == Precision::Bf16 ? at::kBFloat16 : at::kFloat;
  masterInCompute_ =
      plan::masterInComputeCopy(plan.training.precision, plan.strategy.offload);
  auto onDevice = at::TensorOptions().device(device_);
  const int numUnits = int(m_.numLayers) + 2;
  backwardIndex_.resize(numUnits);
  for (size_t i = 0; i < plan.schedule.backward.size(); ++i)
    backwardIndex_[plan.schedule.backward[i].unit] = int(i);
  bucketOf_.assign(numUnits, -1);
  for (size_t b = 0; b < plan.schedule.buckets.size(); ++b)
    for (int u : plan.schedule.buckets[b].units)
      bucketOf_[u] = int(b);

  collectives_ = std::make_unique<engine::Collectives>(comm);
  optimizer_ = std::make_unique<engine::Optimizer>(
      plan, storage_, device_, W, computeDtype_, gradDtype_, masterInCompute_,
      units_, *collectives_, pending_);
  for (int u = 0; u < numUnits; ++u)
    units_.push_back(makeUnit(u, initial, base));
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
  rope_ =
      makeRope(m_, plan.training.sequenceLength, onDevice.dtype(computeDtype_));
  if (initial)
    steps_ = initial->step();

  // The update in backward (plan::updatesInBackward): the units whose
  // backward adds to each unit's gradient.
  contributors_.assign(numUnits, 0);
  for (int u = 0; u < numUnits; ++u)
    for (int o : unitOwners(m_, u))
      ++contributors_[o];
  // Where the storage lets a gradient be final without a reduction
  // (plan::updatesInBackward; units reduced every micro-batch excepted:
  // gradientFinal).
  inBackwardAllowed_ =
      plan::updatesInBackward(plan.strategy.zero, W, plan.strategy.offload,
                              /*clipsGradients=*/false);
  setUpdateInBackward(kernelSwitchOn("overlap"));
}

std::unique_ptr<Engine::Unit> Engine::makeUnit(int u,
                                               const StateSource *initial,
                                               const StateSource *base) {
  const int W = comm_.worldSize(), rank = comm_.rank();
  auto onDevice = at::TensorOptions().device(device_);
  const engine::Placement place{W, rank, storage_.paramsSharded,
                                storage_.paramsOnHost, device_, computeDtype_};
  auto U = std::make_unique<Unit>();
  U->id = u;
  U->layout = trainableLayout(plan_, u);
  const int64_t shardLen = engine::shardLength(U->layout.numel, W);
  const int64_t padded = shardLen * W;
  engine::OptimizerState &opt = U->opt;
  opt.offset = storage_.optimizerSharded ? rank * shardLen : 0;
  opt.len = storage_.optimizerSharded ? shardLen : padded;
  opt.decayFrom =
      std::clamp<int64_t>(U->layout.decayBegin - opt.offset, 0, opt.len);
  const uint64_t seed = plan_.training.seed * 1000003ull + uint64_t(u);
  // LoRA: the frozen base, the pretrained weights (or the seed's), in the
  // compute dtype; this rank's shard of it at ZeRO-3.
  if (lora_)
    U->base = engine::makeBase(plan_, u, place, base, seed);

  // The range of the unit this rank keeps: its shard at ZeRO-3 (where
  // the optimizer partition is the same range), the whole unit otherwise.
  const int64_t keepBegin = storage_.paramsSharded ? rank * shardLen : 0;
  const int64_t keepLen = storage_.paramsSharded ? shardLen : padded;
  // Adapters start from their own stream of the seed (B = 0 anyway).
  at::Tensor init =
      engine::initialRange(U->layout, padded, keepBegin, keepLen, initial,
                           lora_ ? seed + (1ull << 40) : seed, device_);
  at::Tensor compute, low;
  if (masterInCompute_) {
    // Every rank's whole compute copy rounds as the optimizer's split does
    // (ties away from zero), also outside its own partition.
    compute = at::empty({keepLen}, onDevice.dtype(computeDtype_));
    low = at::empty({keepLen}, onDevice.dtype(at::kShort));
    splitMaster(init, compute, low);
  } else {
    compute = init.to(computeDtype_);
  }
  U->params = std::make_unique<engine::TrainableParams>(U->layout, place,
                                                        compute);
  optimizer_->initState(*U, init, low, keepBegin, initial);
  // `grad` and `microGrad` are allocated by the step's gradients of the
  // unit (gradTarget, reduceBucket) and freed after the optimizer step or
  // the reduction.
  if (storage_.optimizerSharded)
    U->gradShard = at::zeros({shardLen}, onDevice.dtype(gradDtype_));
  return U;
}

void Engine::setUpdateInBackward(bool on) {
  optimizer_->setUpdateInBackward(on, inBackwardAllowed_);
}

int Engine::unitsDoneInBackward() const {
  return optimizer_->doneInBackward();
}

Engine::~Engine() {
  // A step that threw (out of memory, a peer gone) can leave collectives in
  // flight that still write into the units' buffers: let them finish (or
  // fail) before those buffers are freed, never after. Their errors are
  // not this exception's story: the one in flight already is.
  auto settle = [](Pending &p) {
    try {
      p.wait();
    } catch (...) {
    }
  };
  for (Pending &p : pending_)
    settle(p);
  for (auto &U : units_) {
    U->params->settle();
    if (U->base)
      U->base->settle();
  }
}

void Engine::gather(int u) {
  Unit &U = *units_[u];
  if (U.params->resident())
    return;
  U.params->gather(*collectives_);
  if (U.base)
    U.base->gather(*collectives_);
}

void Engine::waitGathered(int u) {
  Unit &U = *units_[u];
  SWIFT_ASSERT(U.params->resident(), "unit ", u,
               " used before it was gathered");
  U.params->waitGathered();
  if (U.base)
    U.base->waitGathered();
}

void Engine::release(int u) {
  Unit &U = *units_[u];
  SWIFT_ASSERT(U.params->resident(), "unit ", u, " released twice");
  U.params->release();
  if (U.base)
    U.base->release();
}

std::vector<at::Tensor> Engine::makeLeaves(int u, bool requiresGrad) {
  std::vector<at::Tensor> leaves;
  for (int o : unitOwners(m_, u)) {
    const Unit &O = *units_[o];
    for (const LeafDesc &d : O.layout.leaves) {
      at::Tensor v = O.params->full().narrow(0, d.offset, d.numel()).view(d.shape);
      leaves.push_back(requiresGrad ? v.detach().requires_grad_(true) : v);
    }
  }
  return leaves;
}

void Engine::materializeBase(int u) {
  for (int o : unitOwners(m_, u))
    if (units_[o]->base)
      units_[o]->base->materialize();
}

void Engine::dematerializeBase(int u) {
  for (int o : unitOwners(m_, u))
    if (units_[o]->base)
      units_[o]->base->dematerialize();
}

std::vector<at::Tensor> Engine::baseLeaves(int u) {
  std::vector<at::Tensor> leaves;
  for (int o : unitOwners(m_, u)) {
    std::vector<at::Tensor> own = units_[o]->base->leaves();
    leaves.insert(leaves.end(), own.begin(), own.end());
  }
  return leaves;
}

bool Engine::reducedEveryMicroBatch(int u) const {
  return plan_.schedule.buckets[bucketOf_[u]].everyMicroBatch;
}

at::Tensor &Engine::gradTarget(int u, bool &fresh) {
  Unit &O = *units_[u];
  fresh = false;
  if (reducedEveryMicroBatch(u)) { // reduced after this micro-batch
    if (!O.microGrad.defined())
      O.microGrad = at::zeros(
          {O.padded()}, at::TensorOptions().device(device_).dtype(gradDtype_));
    return O.microGrad;
  }
  // Accumulated until the last micro-batch: the buffer lives from the unit's first gradient of the step
  // (here) to the end of the step, as torch's gradients do with
  // zero_grad(set_to_none=True): between steps, and in the forward before
  // the head, no gradient memory is held. That gradient overwrites it (no
  // zeroing pass, no read of zeros); only the padding past the last
  // parameter, which no gradient covers, is zeroed.
  if (!O.grad.defined()) {
    O.grad = at::empty(
        {O.padded()}, at::TensorOptions().device(device_).dtype(gradDtype_));
    O.grad.narrow(0, O.layout.numel, O.padded() - O.layout.numel).zero_();
  }
  fresh = O.gradFresh;
  return O.grad;
}

std::vector<GradSink> Engine::makeSinks(int u) {
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

at::Tensor Engine::computeUnit(int u, const at::Tensor &x,
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
    DecoderAdapters adapters =
        bindAdapters(m_, plan_.training.lora, leaves);
    adapters.dropout = evaluating_ ? 0.0 : plan_.training.lora.dropout;
    // (seed, first sample, unit): the same masks at any world size and in
    // a recomputation.
    adapters.dropoutSeed =
        (plan_.training.seed * 1000003ull + uint64_t(mb.firstSample)) * 4099ull +
        uint64_t(u);
    return decoderForward(m_, bindDecoder(m_, base), x, rope, selective,
                          forBackward, mb.packing, &adapters);
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
  return decoderForward(m_, w, x, rope, selective, forBackward, mb.packing);
}

at::Tensor Engine::unitForward(int u, const at::Tensor &x, MicroBatch &mb) {
  for (int o : unitOwners(m_, u))
    waitGathered(o);
  const bool full = plan_.schedule.units[u].checkpoint == Checkpointing::Full;
  materializeBase(u); // QLoRA: dequantized for this computation only
  at::Tensor xIn = u == 0 ? at::Tensor() : x.detach();
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
  at::Tensor xSaved = full ? xIn : at::Tensor();
  if (full)
    out = at::Tensor();
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
Engine::unitBackward(int u, std::vector<at::Tensor> &&grads, MicroBatch &mb,
                     const at::Tensor &xSaved, at::Tensor out,
                     std::vector<at::Tensor> inputs) {
  const ProgramStep &st = plan_.schedule.backward[backwardIndex_[u]];
  for (int g : st.gather)
    gather(g);
  if (u != 0) // the embedding's backward reads no weights
    for (int o : unitOwners(m_, u))
      waitGathered(o);
  materializeBase(u); // QLoRA: the same values, dequantized again
  if (!out.defined()) { // full checkpointing: rebuild the inner graph
    at::AutoGradMode enable(true);
    at::Tensor xIn = xSaved.detach().requires_grad_(true);
    inputs = makeLeaves(u, true);
    out = computeUnit(u, xIn, inputs, mb, /*forBackward=*/true);
    inputs.insert(inputs.begin(), xIn);
  }
  // LoRA's embedding unit trains nothing and has no input gradient.
  const bool anyGrad = std::any_of(inputs.begin(), inputs.end(),
                                   [](const at::Tensor &t) {
                                     return t.defined() && t.requires_grad();
                                   });
  std::vector<at::Tensor> g =
      anyGrad ? differentiate({out}, {grads[0]}, inputs)
              : std::vector<at::Tensor>(inputs.size());
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

void Engine::accumulateGrads(int u, const std::vector<at::Tensor> &leafGrads) {
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

void Engine::reduceBucket(int b) {
  const plan::Bucket &bucket = plan_.schedule.buckets[b];
  const bool allReduce = bucket.collective == plan::Collective::AllReduce;
  for (int u : bucket.units) {
    Unit &U = *units_[u];
    if (U.padded() == 0) { // trains nothing (LoRA's embedding and head)
      U.microGrad = at::Tensor();
      continue;
    }
    if (!bucket.everyMicroBatch) { // the step's accumulated gradient
      pending_.push_back(allReduce
                           ? collectives_->allReduceSum(U.grad)
                           : collectives_->reduceScatterAdd(U.grad, U.gradShard));
      continue;
    }
    SWIFT_ASSERT(U.microGrad.defined(), "unit ", u, " has no gradient");
    // The Pending now holds the only reference: the buffer lives until the
    // reduction is complete, then returns to the allocator.
    at::Tensor micro = std::move(U.microGrad);
    U.microGrad = at::Tensor();
    if (!allReduce) {
      pending_.push_back(
          collectives_->reduceScatterAdd(std::move(micro), U.gradShard));
      continue;
    }
    // All-reduced in place, then added into the step's gradient (the first
    // micro-batch's becomes it) once complete: in micro-batch order, as
    // pending_ is waited for oldest first.
    auto reduced = std::make_shared<Pending>(collectives_->allReduceSum(micro));
    pending_.push_back(Pending([this, u, reduced, micro]() mutable {
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
  while (pending_.size() > size_t(plan::kReductionsInFlight)) {
    pending_.front().wait();
    pending_.pop_front();
  }
}

void Engine::finishPending() {
  for (Pending &p : pending_)
    p.wait();
  pending_.clear();
}

void Engine::gradientFinal(int u) {
  // A gradient reduced every micro-batch is final only once its last
  // reduction is added in: it is updated after the backward.
  if (!reducedEveryMicroBatch(u))
    optimizer_->gradientFinal(*units_[u]);
}

void Engine::optimizerStep() {
  // The updates and norms queued during the backward, before anything
  // reads the norm or the next forward reads their parameters.
  optimizer_->joinSide();
  backwardDone_.record(device_);
  optimizer_->step();
  finishPending();
}

double Engine::step(const std::vector<at::Tensor> &microBatches) {
  const int64_t S = plan_.training.sequenceLength;
  std::vector<Batch> batches;
  for (const at::Tensor &t : microBatches) {
    Batch b;
    b.inputs = t.narrow(1, 0, S);
    b.targets = t.narrow(1, 1, S);
    batches.push_back(std::move(b));
  }
  return step(batches);
}

double Engine::step(const std::vector<Batch> &microBatches,
                    int64_t stepTrainedTokens) {
  PendingStep p = launchStep(microBatches, stepTrainedTokens);
  return finishStep(p).loss;
}

Engine::StepResult Engine::finishStep(PendingStep &p) {
  SWIFT_ASSERT(p.pending(), "finishStep of a step not launched (or finished)");
  p.done_.wait();
  const double *v = p.readout_.data_ptr<double>();
  StepResult r;
  r.loss = v[0] / double(p.microBatches_);
  r.gradNorm = std::sqrt(v[1]) * p.normScale_;
  r.lr = p.lr_;
  r.sincePrevious = HostFence::secondsBetween(lastDone_, p.done_);
  r.collectives = p.collectives_;
  lastDone_ = p.done_;
  p.readout_ = at::Tensor();
  lastLr_ = r.lr;
  lastGradNorm_ = r.gradNorm;
  return r;
}

Engine::MicroBatch Engine::deviceMicroBatch(const Batch &b, int64_t k,
                                            double divisor) {
  MicroBatch mb;
  mb.inputs = toDeviceAsync(b.inputs, device_, at::kLong);
  mb.targets = toDeviceAsync(b.targets, device_, at::kLong);
  if (b.positions.defined())
    mb.rope = ropeAt(rope_, toDeviceAsync(b.positions, device_, at::kLong));
  if (b.segments.defined())
    mb.packing = makePacking(b.segments, device_, computeDtype_, m_.headDim);
  mb.masked = b.masked;
  mb.divisor = divisor;
  // Without a data source's numbering: as swift-run numbers samples.
  mb.firstSample = b.firstSample >= 0
                       ? b.firstSample
                       : steps_ * plan_.training.globalBatchSize +
                             (k * comm_.worldSize() + comm_.rank()) *
                                 plan_.training.microBatchSize;
  return mb;
}

Engine::EvalSums Engine::evaluate(const std::vector<Batch> &microBatches) {
  // The last step's work (its in-backward updates included) is done:
  // finishStep waited for it.
  backwardDone_.wait();
  at::NoGradGuard noGrad;
  evaluating_ = true;
  EvalSums sums;
  at::Tensor lossSum = at::zeros({}, at::TensorOptions().device(device_));
  std::vector<bool> residentBefore;
  for (const auto &U : units_)
    residentBefore.push_back(U->params->resident());
  for (const Batch &b : microBatches) {
    SWIFT_ASSERT(b.masked, "evaluation reads masked (JSONL) batches");
    sums.tokens += (b.targets != data::jsonl::kIgnore).sum().item<int64_t>();
    // Divisor 1: the head returns the sum over the batch's targets.
    MicroBatch mb = deviceMicroBatch(b, 0, 1.0);
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
    lossSum += x.to(at::kFloat);
  }
  // What the forward program leaves gathered for the backward (ZeRO-3's
  // head) is released, as the backward program would.
  for (size_t u = 0; u < units_.size(); ++u)
    if (units_[u]->params->resident() && !residentBefore[u])
      release(int(u));
  evaluating_ = false;
  sums.lossSum = lossSum.to(at::kDouble).item<double>();
  return sums;
}

Engine::PendingStep Engine::launchStep(const std::vector<Batch> &microBatches,
                                       int64_t stepTrainedTokens) {
  const int64_t G = plan_.training.gradientAccumulation,
                S = plan_.training.sequenceLength;
  collectives_->counts = CollectiveCounts();
  // The previous step's gradients freed during its backward (the side
  // stream's updates hold them) become reusable once that work is done.
  // The host waits for it before this step's first backward, where
  // gradients are allocated (the forward reuses the activations the
  // previous backward freed in stream order); with "-lead" before the
  // forward already.
  static const bool leads = kernelSwitchOn("lead");
  if (!leads)
    backwardDone_.wait();
  SWIFT_ASSERT(int64_t(microBatches.size()) == G, "expected ", G,
               " micro-batches");
  // Masked: every micro-batch divides its sum by N / (W * G), the same
  // number on every rank and at every world size (W * G is fixed by the
  // global batch), so the step's gradient is the mean over its N tokens.
  const double divisor =
      double(stepTrainedTokens) / double(comm_.worldSize() * G);
  optimizer_->beginStep(steps_ + 1, totalSteps_);
  for (auto &U : units_) {
    // Accumulated until the last micro-batch: allocated and overwritten by
    // the unit's first gradient (gradTarget, accumulateGrads).
    U->gradFresh = !reducedEveryMicroBatch(U->id);
    if (U->gradShard.defined())
      U->gradShard.zero_();
  }
  at::Tensor lossSum = at::zeros({}, at::TensorOptions().device(device_));
  for (int64_t k = 0; k < G; ++k) {
    lastMicroBatch_ = k == G - 1;
    contributorsLeft_ = contributors_;
    const Batch &b = microBatches[k];
    SWIFT_ASSERT(b.inputs.size(1) == S, "a micro-batch of ", b.inputs.size(1),
                 " positions; the plan has ", S);
    MicroBatch mb = deviceMicroBatch(b, k, divisor);
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
    lossSum += x.detach();
    if (k == 0)
      backwardDone_.wait();
    x.backward();
  }
  finishPending();
  for (auto &U : units_) {
    if (U->gradFresh) { // a unit no backward reached: its gradient is zero
      bool fresh;
      gradTarget(U->id, fresh).zero_();
      U->gradFresh = false;
    }
    // All-reduced every micro-batch but never reduced (it trains nothing):
    // the whole gradient the optimizer reads is zero.
    if (!storage_.optimizerSharded && !U->opt.updated && !U->grad.defined())
      U->grad = at::zeros(
          {U->padded()}, at::TensorOptions().device(device_).dtype(gradDtype_));
  }
  optimizerStep();
  for (auto &U : units_) // the next step allocates them again
    U->grad = at::Tensor();
  ++steps_;
  // The loss and the norm's sum of squares, copied to the host behind the
  // step's work (the next step zeroes sumSq_ after the copy, in order).
  PendingStep p;
  p.readout_ = hostStaging(2, at::kDouble, device_);
  p.readout_.copy_(at::stack({lossSum.to(at::kDouble), optimizer_->sumSq().reshape({})}),
                   /*non_blocking=*/true);
  p.done_.record(device_, /*timed=*/true);
  p.lr_ = optimizer_->lr();
  p.normScale_ = optimizer_->scale();
  p.microBatches_ = G;
  p.collectives_ = collectives_->counts;
  return p;
}

Engine::StateBytes Engine::stateBytes() const {
  StateBytes b;
  std::vector<const void *> seen; // views of one storage count once
  auto add = [&](int64_t &kind, const at::Tensor &t) {
    if (!t.defined() || !t.has_storage() || t.storage().nbytes() == 0)
      return;
    const void *p = t.storage().data();
    if (std::find(seen.begin(), seen.end(), p) != seen.end())
      return;
    seen.push_back(p);
    (t.device() == device_ ? kind : b.host) += int64_t(t.storage().nbytes());
  };
  for (const auto &U : units_) {
    const bool sharded = storage_.paramsSharded;
    add(b.parameters, sharded ? U->params->shard() : U->params->full());
    if (U->base)
      add(b.parameters, U->base->kept());
    // The step's whole gradient each step allocates (gradTarget,
    // reduceBucket), counted whether or not a step is running.
    if (!reducedEveryMicroBatch(U->id) || !storage_.optimizerSharded)
      b.gradients += U->padded() * int64_t(c10::elementSize(gradDtype_));
    add(b.gradients, U->gradShard);
    add(b.optimizer, U->opt.master); // no-op where it is the parameters
    add(b.optimizer, U->opt.masterLow);
    add(b.optimizer, U->opt.expAvg);
    add(b.optimizer, U->opt.expAvgSq);
    add(b.host, U->opt.hostGrad);
    add(b.host, U->opt.hostParamOut);
  }
  return b;
}

int64_t Engine::heldGradientBytes() const {
  int64_t bytes = 0;
  for (const auto &U : units_)
    for (const at::Tensor *t : {&U->grad, &U->gradShard, &U->microGrad})
      if (t->defined() && t->device() == device_)
        bytes += int64_t(t->nbytes());
  return bytes;
}

at::ScalarType Engine::stateDtype(StateKind kind) const {
  return optimizer_->stateDtype(*units_[0], kind);
}

at::Tensor Engine::stateUnit(int u, StateKind kind) {
  Unit &U = *units_[u];
  const at::Tensor state = optimizer_->partition(U, kind);
  at::Tensor mine = state.device() == device_
                        ? state
                        : state.to(device_, /*non_blocking=*/false);
  if (!storage_.optimizerSharded || U.padded() == 0)
    return mine;
  at::Tensor full = at::empty({U.padded()}, mine.options());
  collectives_->allGather(mine.contiguous(), full).wait();
  return full;
}

at::Tensor Engine::baseUnit(int u) {
  Unit &U = *units_[u];
  SWIFT_ASSERT(U.base, "unit ", u, " has no frozen base (not a LoRA run)");
  if (!U.base->quantized())
    return U.base->values(*collectives_);
  // QLoRA: the dequantized base, a copy, of the gathered unit.
  const bool wasResident = U.params->resident() || !storage_.paramsSharded;
  if (storage_.paramsSharded) {
    gather(u);
    waitGathered(u);
  }
  at::Tensor copy = U.base->values(*collectives_);
  if (!wasResident)
    release(u);
  return copy;
}

std::vector<std::pair<std::string, at::Tensor>> Engine::parameters() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (auto &U : units_) {
    bool wasResident = U->params->resident();
    gather(U->id);
    waitGathered(U->id);
    for (const ParamDesc &d : U->layout.params)
      out.emplace_back(d.name,
                       U->params->full().narrow(0, d.offset, d.numel())
                           .view(d.shape)
                           .to(at::kCPU, at::kFloat, /*non_blocking=*/false,
                               /*copy=*/true));
    if (!wasResident)
      release(U->id);
  }
  return out;
}

} // namespace swift::rt
