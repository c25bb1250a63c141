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
#include "Storage.h"
#include "swift/Runtime/model/Autograd.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/engine/CpuAdam.h"
#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/model/Kernels.h"
#include "swift/Runtime/core/TorchCompat.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace swift::rt {

struct Engine::Unit {
  int id = 0;
  UnitLayout layout;
  // Its parameters (LoRA: the adapters) and LoRA's frozen base (Storage.h).
  std::unique_ptr<engine::TrainableParams> params;
  std::unique_ptr<engine::FrozenBase> base;
  int64_t optOffset = 0, optLen = 0; // optimizer partition of [0, padded)
  // AdamW decays the partition's elements from this one on (the layout's
  // decayBegin, Model.h, relative to optOffset; 0..optLen).
  int64_t decayFrom = 0;
  at::Tensor master, expAvg, expAvgSq; // (optLen); bf16 states in pure bf16
  // bf16-mixed (plan::masterInComputeCopy): `master` is undefined; the fp32
  // master is the compute copy's partition (computePart) as its high bits
  // plus these low bits (Kernels.h splitMaster).
  at::Tensor masterLow; // (optLen) int16
  at::Tensor stepTensor;               // fused AdamW's step counter
  at::Tensor grad;                     // (padded) ZeRO 0/1
  at::Tensor gradShard;                // (shardLen) ZeRO 1-3
  at::Tensor microGrad;                // (padded) ZeRO 2/3, transient
  at::Tensor hostGrad, hostParamOut;   // (optLen) offload staging
  // `grad` still holds last step's values: the step's first gradient is
  // copied into it, not added.
  bool gradFresh = false;
  // This step: its gradient's squares are in sumSq_ / AdamW updated it
  // (during the backward) / that update wrote the compute copy.
  bool normed = false, updated = false, written = false;
  // Per leaf of this unit's computation (makeLeaves order: its owners'
  // leaves): the op that computes the leaf's gradient writes it into the
  // owner's buffer (a GradSink) instead of returning it through autograd.
  std::vector<bool> sunk;
  int64_t padded() const { return params->padded(); }
};

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

bool useFusedAdamW() {
  const char *env = std::getenv("SWIFT_ADAMW");
  return !(env && std::string(env) == "ops");
}

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
  sumSq_ = at::zeros({}, onDevice.dtype(at::kDouble));
  adamwKernels_ = useFusedAdamW() &&
                  useFusedKernels(at::empty({0}, onDevice.dtype(at::kFloat)),
                                  "adamw");
  side_ = std::make_unique<SideStream>(device_);
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
  const bool offload = storage_.optimizerOnHost;
  const Precision storage = plan::storagePrecision(plan_.training.precision);
  auto onDevice = at::TensorOptions().device(device_);
  const engine::Placement place{W, rank, storage_.paramsSharded,
                                storage_.paramsOnHost, device_, computeDtype_};
  auto U = std::make_unique<Unit>();
  U->id = u;
  U->layout = trainableLayout(plan_, u);
  const int64_t shardLen = engine::shardLength(U->layout.numel, W);
  const int64_t padded = shardLen * W;
  U->optOffset = storage_.optimizerSharded ? rank * shardLen : 0;
  U->optLen = storage_.optimizerSharded ? shardLen : padded;
  U->decayFrom =
      std::clamp<int64_t>(U->layout.decayBegin - U->optOffset, 0, U->optLen);
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
  at::Tensor part = init.narrow(0, U->optOffset - keepBegin, U->optLen);
  if (offload) {
    U->master = hostEmpty(U->optLen, at::kFloat, device_);
    U->master.copy_(part);
    U->expAvg = hostEmpty(U->optLen, at::kFloat, device_).zero_();
    U->expAvgSq = hostEmpty(U->optLen, at::kFloat, device_).zero_();
    U->hostGrad = hostEmpty(U->optLen, at::kFloat, device_);
    if (computeDtype_ == at::kBFloat16)
      U->hostParamOut = hostEmpty(U->optLen, at::kBFloat16, device_);
  } else {
    at::ScalarType masterDtype = at::kFloat;
    if (storage == Precision::Bf16) {
      // Pure bf16: the optimizer updates the compute-dtype parameters in
      // place; there is no separate master copy.
      U->master = computePart(*U);
      masterDtype = U->master.scalar_type();
    } else if (masterInCompute_) {
      // The compute copy holds the master's high bits (rounded), masterLow
      // the rest: the same fp32 values in 2 bytes more, not 4.
      U->masterLow = low.narrow(0, U->optOffset - keepBegin, U->optLen).clone();
    } else {
      U->master = part.clone();
    }
    // AdamW's moments in the parameters' dtype: fp32 in bf16-mixed and
    // fp32, bf16 in pure bf16 (as torch.optim.AdamW keeps them there).
    U->expAvg = at::zeros({U->optLen}, onDevice.dtype(masterDtype));
    U->expAvgSq = at::zeros({U->optLen}, onDevice.dtype(masterDtype));
    U->stepTensor = at::zeros({}, onDevice.dtype(at::kFloat));
  }
  if (initial && initial->step() > 0) { // resumed: the moments and step
    at::Tensor values = at::empty({U->optLen}, onDevice.dtype(at::kFloat));
    initial->read(StateKind::ExpAvg, U->layout, U->optOffset, U->optLen, values);
    U->expAvg.copy_(values);
    initial->read(StateKind::ExpAvgSq, U->layout, U->optOffset, U->optLen, values);
    U->expAvgSq.copy_(values);
    if (U->stepTensor.defined())
      U->stepTensor.fill_(double(initial->step()));
  }
  // `grad` and `microGrad` are allocated by the step's gradients of the
  // unit (gradTarget, reduceBucket) and freed after the optimizer step or
  // the reduction.
  if (storage_.optimizerSharded)
    U->gradShard = at::zeros({shardLen}, onDevice.dtype(gradDtype_));
  return U;
}

void Engine::setUpdateInBackward(bool on) {
  // On CUDA only with swift's AdamW kernels (one unit per launch): torch's
  // multi-tensor kernel, the fallback without them, updates all at once.
  const bool allowed =
      on && (!device_.is_cuda() || adamwKernels_) && inBackwardAllowed_;
  // Clipping: the same units' squares, added up there.
  const bool clips = plan_.training.maxGradNorm.has_value();
  updateInBackward_ = allowed && !clips;
  normInBackward_ = allowed && clips;
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

at::Tensor Engine::computePart(Unit &U) {
  return U.params->part(U.optOffset, U.optLen);
}

void Engine::publish(Unit &U, bool written) {
  // The optimizer's output unless it wrote the compute copy already (or
  // the copy holds the master's high bits).
  at::Tensor updated;
  if (!written && !U.masterLow.defined())
    updated = U.hostParamOut.defined() ? U.hostParamOut : U.master;
  U.params->publish(updated, U.optOffset, U.optLen,
                    plan_.schedule.optimizer.gatherParams, *collectives_,
                    pending_);
}

void Engine::beginStep() {
  const TrainingConfig &training = plan_.training;
  const int64_t t = steps_ + 1;
  SWIFT_CHECK(totalSteps_ > 0 || training.lrSchedule.decay == LrDecay::Constant,
              plan_.path, ": training.lr_schedule: decay ",
              toString(training.lrSchedule.decay),
              " needs the run's length (Engine::setTotalSteps)");
  // The schedule's lr for this step; the rest of AdamW as in the plan. The
  // summed gradients times stepScale_ are the step's mean gradient.
  stepOpt_ = training.optimizer;
  stepOpt_.lr = lrAt(training, t, std::max<int64_t>(totalSteps_, t));
  stepScale_ = 1.0 / double(comm_.worldSize() * training.gradientAccumulation);
  bc1_ = 1.0 - std::pow(stepOpt_.beta1, double(t));
  bc2_ = 1.0 - std::pow(stepOpt_.beta2, double(t));
  sumSq_.zero_();
  doneInBackward_ = 0;
  for (auto &U : units_)
    U->normed = U->updated = U->written = false;
}

at::Tensor &Engine::gradOf(Unit &U) {
  return storage_.optimizerSharded ? U.gradShard : U.grad;
}

void Engine::addSquares(Unit &U) {
  if (!addSumOfSquares(gradOf(U), sumSq_)) {
    at::Tensor n = at::norm(gradOf(U), at::Scalar(2.0), at::kFloat);
    sumSq_.add_(n.to(at::kDouble).square());
  }
  U.normed = true;
}

void Engine::gradientFinal(int u) {
  Unit &U = *units_[u];
  // A gradient reduced every micro-batch is final only once its last
  // reduction is added in: it is updated after the backward.
  if (U.padded() == 0 || !(updateInBackward_ || normInBackward_) ||
      reducedEveryMicroBatch(u))
    return;
  side_->run(
      [&] {
        if (updateInBackward_) {
          bool summed = false;
          U.written = updateOnDevice(U, stepScale_, &sumSq_, summed);
          U.updated = true;
          if (summed)
            U.normed = true;
        }
        if (!U.normed) // clipping, or the update's tensor-op path (CPU)
          addSquares(U);
      },
      {U.grad});
  ++doneInBackward_;
  if (U.updated) // the side stream's use keeps its memory until it is done
    U.grad = at::Tensor();
}

bool Engine::updateOnDevice(Unit &U, double scale, at::Tensor *sum,
                            bool &summed) {
  const OptimizerConfig &o = stepOpt_;
  const at::Tensor &g = gradOf(U);
  summed = false;
  if (useFusedAdamW()) {
    // CUDA: one kernel per unit, which adds up the gradient's squares.
    if (masterInCompute_) { // the master's high bits are the compute copy
      at::Tensor hi = computePart(U);
      if (fusedAdamwSplit(hi, U.masterLow, g, U.expAvg, U.expAvgSq, o.lr,
                          o.beta1, o.beta2, o.eps, o.weightDecay, U.decayFrom,
                          scale, bc1_, bc2_, sum))
        return summed = sum != nullptr, true;
    } else if (U.master.scalar_type() == at::kFloat) {
      // A separate fp32 master (fp32 precision; publish copies it), which
      // also writes a bf16 compute copy.
      at::Tensor dst = computePart(U);
      const bool toDst = dst.scalar_type() == at::kBFloat16 &&
                         dst.device() == U.master.device();
      if (fusedAdamwFp32(U.master, g, U.expAvg, U.expAvgSq,
                         toDst ? &dst : nullptr, o.lr, o.beta1, o.beta2, o.eps,
                         o.weightDecay, U.decayFrom, scale, bc1_, bc2_, sum))
        return summed = sum != nullptr, toDst;
    } else if (fusedAdamwBf16(U.master, g, U.expAvg, U.expAvgSq, o.lr, o.beta1,
                              o.beta2, o.eps, o.weightDecay, U.decayFrom, scale,
                              bc1_, bc2_, sum)) { // pure bf16: in place
      return summed = sum != nullptr, false;
    }
  }
  // Tensor ops (CPU, or SWIFT_ADAMW=ops): the update is computed in fp32
  // even for bf16 parameters and states (pure bf16); each stored value is
  // rounded once, and the step uses the moments as stored, as the CUDA
  // kernel does. The gradient is left as it was.
  at::Tensor master = masterInCompute_ ? joinMaster(computePart(U), U.masterLow)
                                       : U.master;
  at::Tensor gf = g.to(at::kFloat) * scale;
  at::Tensor p = master.to(at::kFloat);
  at::Tensor m = U.expAvg.to(at::kFloat), v = U.expAvgSq.to(at::kFloat);
  p.narrow(0, U.decayFrom, p.numel() - U.decayFrom)
      .mul_(1.0 - o.lr * o.weightDecay);
  m.mul_(o.beta1).add_(gf, 1.0 - o.beta1);
  v.mul_(o.beta2).addcmul_(gf, gf, 1.0 - o.beta2);
  if (!m.is_same(U.expAvg)) {
    U.expAvg.copy_(m);
    U.expAvgSq.copy_(v);
    m = U.expAvg.to(at::kFloat);
    v = U.expAvgSq.to(at::kFloat);
  }
  at::Tensor denom = v.sqrt().div_(std::sqrt(bc2_)).add_(o.eps);
  p.addcdiv_(m, denom, -o.lr / bc1_);
  if (!p.is_same(master))
    master.copy_(p);
  if (!masterInCompute_)
    return false;
  at::Tensor hi = computePart(U);
  splitMaster(master, hi, U.masterLow);
  return true;
}

void Engine::optimizerStep() {
  const TrainingConfig &training = plan_.training;
  // The host AdamW (schedule.optimizer.device "cpu"): gradients copied down,
  // parameters up.
  const bool offload =
      plan_.schedule.optimizer.device == plan::OptimizerDevice::Cpu;
  // The updates and norms queued during the backward, before anything
  // reads sumSq_ or the next forward reads their parameters.
  side_->join();
  backwardDone_.record(device_);
  double scale = stepScale_;
  const OptimizerConfig &o = stepOpt_;

  // The global gradient norm. Every element is counted once: at ZeRO-0
  // each rank holds the whole all-reduced gradient (this rank's sum is the
  // total), at ZeRO 1-3 each rank its disjoint shard of it (the sum over
  // ranks is); padding is zero. Sums of squares in fp64, over per-unit fp32
  // norms (or the AdamW kernels' block sums), then * scale: the norm of the
  // mean gradient. Clipping needs it before the update. Without clipping
  // it is only reported: the fused AdamW kernels add this rank's squares
  // up as they read the gradients (no pass of its own: 1.2 ms a step on
  // the 1B), the tensor-op path's are added after the update (it leaves
  // the gradients as they were), and the sum over ranks follows the update.
  // torch's fused kernel unscales the gradients in place: its squares come
  // first.
  const bool torchFused =
#if SWIFT_TORCH_AT_LEAST(2, 1)
      !offload && device_.is_cuda() && useFusedAdamW() && !adamwKernels_ &&
      gradDtype_ == at::kFloat;
#else
      false;
#endif
  const bool upFront = training.maxGradNorm || offload || torchFused;
  if (upFront) {
    for (auto &U : units_)
      if (!U->normed)
        addSquares(*U);
    if (storage_.optimizerSharded)
      collectives_->allReduceSum(sumSq_).wait();
  }
  if (training.maxGradNorm) {
    // torch.nn.utils.clip_grad_norm_: gradients * min(1, max/(norm + 1e-6)),
    // folded into the optimizer's gradient scale (one host sync per step).
    const double norm = std::sqrt(sumSq_.item<double>()) * scale;
    const double coef = *training.maxGradNorm / (norm + 1e-6);
    if (coef < 1.0)
      scale *= coef;
  }

  if (offload) {
    // Pipelined: all gradient downloads are queued at once; the host
    // updates unit i as soon as its download is done (later downloads and
    // earlier uploads overlap with it) and queues unit i's upload.
    std::vector<HostFence> downloaded(units_.size());
    for (size_t i = 0; i < units_.size(); ++i) {
      units_[i]->hostGrad.copy_(gradOf(*units_[i]), /*non_blocking=*/true);
      downloaded[i].record(device_);
    }
    AdamWArgs args{float(o.lr),
                   float(o.beta1),
                   float(o.beta2),
                   float(o.eps),
                   float(o.weightDecay),
                   float(scale),
                   steps_ + 1};
    for (size_t i = 0; i < units_.size(); ++i) {
      Unit &U = *units_[i];
      downloaded[i].wait();
      cpuAdamW(U.master.data_ptr<float>(), U.expAvg.data_ptr<float>(),
               U.expAvgSq.data_ptr<float>(), U.hostGrad.data_ptr<float>(),
               U.optLen, U.decayFrom, args,
               U.hostParamOut.defined()
                   ? reinterpret_cast<uint16_t *>(U.hostParamOut.data_ptr())
                   : nullptr);
      publish(U);
    }
  } else if (torchFused) {
#if SWIFT_TORCH_AT_LEAST(2, 1)
    // CUDA without swift's kernels: torch's multi-tensor AdamW over fp32
    // masters (joined from the compute copy in bf16-mixed, split after).
    // Two groups, as HF Trainer's: each unit's undecayed head and its
    // decayed rest (Unit::decayFrom).
    std::vector<at::Tensor> p[2], g[2], m[2], v[2], steps[2];
    for (auto &U : units_) {
      if (masterInCompute_)
        U->master = joinMaster(computePart(*U), U->masterLow);
      // The fused kernel reads the step count; it does not advance it.
      U->stepTensor.add_(1);
      const int64_t split[3] = {0, U->decayFrom, U->optLen};
      for (int k = 0; k < 2; ++k) {
        const int64_t n = split[k + 1] - split[k];
        if (n == 0)
          continue;
        p[k].push_back(U->master.narrow(0, split[k], n));
        g[k].push_back(gradOf(*U).narrow(0, split[k], n));
        m[k].push_back(U->expAvg.narrow(0, split[k], n));
        v[k].push_back(U->expAvgSq.narrow(0, split[k], n));
        steps[k].push_back(U->stepTensor);
      }
    }
    // grad_scale divides: pass W*G to average the summed gradients.
    at::Tensor gradScale =
        at::full({}, 1.0 / scale, at::TensorOptions().device(device_));
    for (int k = 0; k < 2; ++k)
      if (!p[k].empty())
        at::_fused_adamw_(p[k], g[k], m[k], v[k], {}, steps[k], o.lr, o.beta1,
                          o.beta2, k == 0 ? 0.0 : o.weightDecay, o.eps,
                          /*amsgrad=*/false, /*maximize=*/false, gradScale,
                          /*found_inf=*/{});
    if (masterInCompute_)
      for (auto &U : units_) {
        at::Tensor hi = computePart(*U);
        splitMaster(U->master, hi, U->masterLow);
        U->master = at::Tensor();
        U->written = true;
      }
#endif
  } else {
    for (auto &U : units_) {
      if (U->updated)
        continue;
      bool summed = false;
      U->written = updateOnDevice(*U, scale, U->normed ? nullptr : &sumSq_,
                                  summed);
      if (summed)
        U->normed = true;
    }
  }

  if (!upFront) {
    for (auto &U : units_)
      if (!U->normed)
        addSquares(*U);
    if (storage_.optimizerSharded)
      collectives_->allReduceSum(sumSq_).wait();
  }
  if (!offload)
    for (auto &U : units_)
      publish(*U, U->written);
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
  beginStep();
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
    if (!storage_.optimizerSharded && !U->updated && !U->grad.defined())
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
  p.readout_.copy_(at::stack({lossSum.to(at::kDouble), sumSq_.reshape({})}),
                   /*non_blocking=*/true);
  p.done_.record(device_, /*timed=*/true);
  p.lr_ = stepOpt_.lr;
  p.normScale_ = stepScale_;
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
    add(b.optimizer, U->master); // no-op where it is the parameters
    add(b.optimizer, U->masterLow);
    add(b.optimizer, U->expAvg);
    add(b.optimizer, U->expAvgSq);
    add(b.host, U->hostGrad);
    add(b.host, U->hostParamOut);
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
  const Unit &U = *units_[0];
  if (kind == StateKind::Master && U.masterLow.defined())
    return at::kFloat;
  return (kind == StateKind::Master   ? U.master
          : kind == StateKind::ExpAvg ? U.expAvg
                                      : U.expAvgSq)
      .scalar_type();
}

at::Tensor Engine::stateUnit(int u, StateKind kind) {
  Unit &U = *units_[u];
  const at::Tensor state =
      kind == StateKind::Master
          ? (U.masterLow.defined() ? joinMaster(computePart(U), U.masterLow)
                                   : U.master)
      : kind == StateKind::ExpAvg ? U.expAvg
                                  : U.expAvgSq;
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
