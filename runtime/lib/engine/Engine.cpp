//===- Engine.cpp - the facade: a run's model state, its steps ------------===//
//
// Builds the units (their storage, Storage.h; their optimizer state,
// Optimizer.h) from the initial state and hands a step's micro-batches to
// the driver (UnitDriver.h: forward, backward, gathers, reductions), then
// the gradients to the optimizer. The state's readers (ModelState) and the
// telemetry read the units here.
//
//===----------------------------------------------------------------------===//
#include "swift/Runtime/engine/Engine.h"

#include "ActivationStash.h"
#include "Unit.h"
#include "UnitDriver.h"

#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/model/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace swift::rt {

namespace {

at::ScalarType computeDtypeOf(Precision p) {
  return p == Precision::Fp32 ? at::kFloat : at::kBFloat16;
}

} // namespace

Engine::Engine(const Plan &plan, const MeshComms &mesh, at::Device device,
               const StateSource *initial, const StateSource *base)
    : Engine(plan, nullptr, &mesh, device, initial, base) {}

Engine::Engine(const Plan &plan, Comm &comm, at::Device device,
               const StateSource *initial, const StateSource *base)
    : Engine(plan, std::make_unique<MeshComms>(comm), nullptr, device, initial,
             base) {}

Engine::Engine(const Plan &plan, std::unique_ptr<MeshComms> own,
               const MeshComms *mesh, at::Device device,
               const StateSource *initial, const StateSource *base)
    : plan_(plan), m_(plan.model), ownMesh_(std::move(own)),
      mesh_(mesh ? *mesh : *ownMesh_), comm_(mesh_.world()), device_(device),
      storage_(plan::storageLayout(plan.strategy)),
      lora_(plan.training.method != Method::Full) {

  // The storage layout: the only code of the Engine that reads the
  // strategy (storage_, masterInCompute_, inBackwardAllowed_; Engine.h).
  const int W = comm_.worldSize();
  // The communicators are the plan's shard groups (RunSetup builds them
  // from plan::shardGroups).
  const plan::ShardGroups groups = plan::shardGroups(plan.strategy, plan.world);
  SWIFT_ASSERT(W != plan.world.size ||
                   (mesh_.shard().worldSize() == groups.shard &&
                    (mesh_.replica() != nullptr) == groups.hybrid()),
               "the communicators are not the plan's shard groups of ",
               groups.shard, " ranks");
  const bool offload = storage_.optimizerOnHost;
  // The schedule rules (plan::checkSchedule) put the optimizer where its
  // state lives.
  SWIFT_ASSERT(
      offload == (plan.schedule.optimizer.device == plan::OptimizerDevice::Cpu),
      "the optimizer's placement disagrees with its state's");
  computeDtype_ = computeDtypeOf(plan.training.precision);
  // fp8-* stores as its bf16 twin (Enums.h storagePrecision).
  const Precision storage = plan::storagePrecision(plan.training.precision);
  gradDtype_ = storage == Precision::Bf16 ? at::kBFloat16 : at::kFloat;
  masterInCompute_ =
      plan::masterInComputeCopy(plan.training.precision, plan.strategy.offload);
  const int numUnits = int(m_.numLayers) + 2;
  collectives_ = std::make_unique<engine::Collectives>(mesh_);
  optimizer_ = std::make_unique<engine::Optimizer>(
      plan, storage_, device_, W, computeDtype_, gradDtype_, masterInCompute_,
      units_, *collectives_, pending_);
  for (int u = 0; u < numUnits; ++u)
    units_.push_back(makeUnit(u, initial, base));
  stash_ = std::make_unique<engine::ActivationStash>(plan, device_,
                                                     computeDtype_);
  driver_ = std::make_unique<engine::UnitDriver>(
      plan, device_, computeDtype_, gradDtype_, units_, *collectives_,
      *optimizer_, *stash_, pending_);
  if (initial)
    steps_ = initial->step();
  // Where the storage lets a gradient be final without a reduction
  // (plan::updatesInBackward; units reduced every micro-batch excepted:
  // gradientFinal).
  inBackwardAllowed_ =
      plan::updatesInBackward(plan.strategy.zero, W, plan.strategy.offload,
                              /*clipsGradients=*/false);
  setUpdateInBackward(kernelSwitchOn("overlap"));
}

std::unique_ptr<Engine::Unit>
Engine::makeUnit(int u, const StateSource *initial, const StateSource *base) {
  // Sharded over the shard group (the world without HSDP): its ranks' shards
  // make the whole unit, and every replica group holds the same ones.
  const int W = mesh_.shard().worldSize(), rank = mesh_.shard().rank();
  auto onDevice = at::TensorOptions().device(device_);
  const engine::Placement place{
      W,       rank,         storage_.paramsSharded, storage_.paramsOnHost,
      device_, computeDtype_};
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
  U->params =
      std::make_unique<engine::TrainableParams>(U->layout, place, compute);
  optimizer_->initState(*U, init, low, keepBegin, initial);
  // `grad` and `microGrad` are allocated by the step's gradients of the
  // unit (UnitDriver gradTarget, reduceBucket) and freed after the optimizer
  // step or the reduction.
  if (storage_.optimizerSharded)
    U->gradShard = at::zeros({shardLen}, onDevice.dtype(gradDtype_));
  return U;
}

void Engine::setUpdateInBackward(bool on) {
  optimizer_->setUpdateInBackward(on, inBackwardAllowed_);
}

int Engine::unitsDoneInBackward() const { return optimizer_->doneInBackward(); }

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
  // HSDP's all-reduces issued from a reduce-scatter's wait: not now.
  collectives_->abandon();
  for (Pending &p : pending_)
    settle(p);
  for (auto &U : units_) {
    U->params->settle();
    if (U->base)
      U->base->settle();
  }
}

void Engine::optimizerStep() {
  // The updates and norms queued during the backward, before anything
  // reads the norm or the next forward reads their parameters.
  optimizer_->joinSide();
  backwardDone_.record(device_);
  optimizer_->step();
  driver_->finishPending();
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

int64_t Engine::firstSample(const Batch &b, int64_t k) const {
  // Without a data source's numbering: as swift-run numbers samples.
  if (b.firstSample >= 0)
    return b.firstSample;
  return steps_ * plan_.training.globalBatchSize +
         (k * comm_.worldSize() + comm_.rank()) * plan_.training.microBatchSize;
}

Engine::EvalSums Engine::evaluate(const std::vector<Batch> &microBatches) {
  // The last step's work (its in-backward updates included) is done:
  // finishStep waited for it.
  backwardDone_.wait();
  EvalSums sums;
  at::Tensor lossSum = at::zeros({}, at::TensorOptions().device(device_));
  std::vector<bool> residentBefore;
  for (const auto &U : units_)
    residentBefore.push_back(U->params->resident());
  for (const Batch &b : microBatches) {
    SWIFT_ASSERT(b.masked, "evaluation reads masked (JSONL) batches");
    sums.tokens += (b.targets != data::jsonl::kIgnore).sum().item<int64_t>();
    // Divisor 1: the head returns the sum over the batch's targets.
    engine::MicroBatch mb =
        driver_->deviceMicroBatch(b, firstSample(b, 0), 1.0);
    at::Tensor x = driver_->evaluate(mb);
    lossSum += x.to(at::kFloat);
  }
  // What the forward program leaves gathered for the backward (ZeRO-3's
  // head) is released, as the backward program would.
  for (size_t u = 0; u < units_.size(); ++u)
    if (units_[u]->params->resident() && !residentBefore[u])
      driver_->release(int(u));
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
    U->gradFresh = !driver_->reducedEveryMicroBatch(U->id);
    if (U->gradShard.defined())
      U->gradShard.zero_();
  }
  at::Tensor lossSum = at::zeros({}, at::TensorOptions().device(device_));
  for (int64_t k = 0; k < G; ++k) {
    const Batch &b = microBatches[k];
    SWIFT_ASSERT(b.inputs.size(1) == S, "a micro-batch of ", b.inputs.size(1),
                 " positions; the plan has ", S);
    at::Tensor x = driver_->forward(
        driver_->deviceMicroBatch(b, firstSample(b, k), divisor), k == G - 1);
    lossSum += x.detach();
    if (k == 0)
      backwardDone_.wait();
    x.backward();
  }
  driver_->finishPending();
  for (auto &U : units_) {
    if (U->gradFresh) { // a unit no backward reached: its gradient is zero
      bool fresh;
      driver_->gradTarget(U->id, fresh).zero_();
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
  p.readout_.copy_(
      at::stack({lossSum.to(at::kDouble), optimizer_->sumSq().reshape({})}),
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
    if (!driver_->reducedEveryMicroBatch(U->id) || !storage_.optimizerSharded)
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

Engine::ActivationOffload Engine::activationOffload() const {
  return {stash_->units(), stash_->hostBytes()};
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
    driver_->gather(u);
    driver_->waitGathered(u);
  }
  at::Tensor copy = U.base->values(*collectives_);
  if (!wasResident)
    driver_->release(u);
  return copy;
}

std::vector<std::pair<std::string, at::Tensor>> Engine::parameters() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (auto &U : units_) {
    bool wasResident = U->params->resident();
    driver_->gather(U->id);
    driver_->waitGathered(U->id);
    for (const ParamDesc &d : U->layout.params)
      out.emplace_back(d.name,
                       U->params->full()
                           .narrow(0, d.offset, d.numel())
                           .view(d.shape)
                           .to(at::kCPU, at::kFloat, /*non_blocking=*/false,
                               /*copy=*/true));
    if (!wasResident)
      driver_->release(U->id);
  }
  return out;
}

} // namespace swift::rt
