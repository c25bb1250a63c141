//===- Optimizer.cpp - AdamW over the units' partitions -------------------===//
#include "Optimizer.h"
#include "Unit.h"

#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/TorchCompat.h"
#include "swift/Runtime/engine/CpuAdam.h"
#include "swift/Runtime/model/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace swift::rt::engine {

namespace {

bool useFusedAdamW() {
  const char *env = std::getenv("SWIFT_ADAMW");
  return !(env && std::string(env) == "ops");
}

} // namespace

Optimizer::Optimizer(const Plan &plan, const plan::StorageLayout &storage,
                     at::Device device, int worldSize,
                     at::ScalarType computeDtype, at::ScalarType gradDtype,
                     bool masterInCompute,
                     const std::vector<std::unique_ptr<Unit>> &units,
                     Collectives &collectives, std::deque<Pending> &inFlight)
    : plan_(plan), storage_(storage), device_(device), world_(worldSize),
      masterInCompute_(masterInCompute), computeDtype_(computeDtype),
      gradDtype_(gradDtype), units_(units), collectives_(collectives),
      inFlight_(inFlight) {
  auto onDevice = at::TensorOptions().device(device_);
  sumSq_ = at::zeros({}, onDevice.dtype(at::kDouble));
  adamwKernels_ =
      useFusedAdamW() &&
      useFusedKernels(at::empty({0}, onDevice.dtype(at::kFloat)), "adamw");
  side_ = std::make_unique<SideStream>(device_);
}

Optimizer::~Optimizer() = default;

void Optimizer::initState(Unit &U, const at::Tensor &init,
                          const at::Tensor &low, int64_t keepBegin,
                          const StateSource *initial) {
  OptimizerState &o = U.opt;
  auto onDevice = at::TensorOptions().device(device_);
  at::Tensor part = init.narrow(0, o.offset - keepBegin, o.len);
  if (storage_.optimizerOnHost) {
    o.master = hostEmpty(o.len, at::kFloat, device_);
    o.master.copy_(part);
    o.expAvg = hostEmpty(o.len, at::kFloat, device_).zero_();
    o.expAvgSq = hostEmpty(o.len, at::kFloat, device_).zero_();
    o.hostGrad = hostEmpty(o.len, at::kFloat, device_);
    if (computeDtype_ == at::kBFloat16)
      o.hostParamOut = hostEmpty(o.len, at::kBFloat16, device_);
  } else {
    at::ScalarType masterDtype = at::kFloat;
    if (plan::storagePrecision(plan_.training.precision) == Precision::Bf16) {
      // Pure bf16: the optimizer updates the compute-dtype parameters in
      // place; there is no separate master copy.
      o.master = computePart(U);
      masterDtype = o.master.scalar_type();
    } else if (masterInCompute_) {
      // The compute copy holds the master's high bits (rounded), masterLow
      // the rest: the same fp32 values in 2 bytes more, not 4.
      o.masterLow = low.narrow(0, o.offset - keepBegin, o.len).clone();
    } else {
      o.master = part.clone();
    }
    // AdamW's moments in the parameters' dtype: fp32 in bf16-mixed and
    // fp32, bf16 in pure bf16 (as torch.optim.AdamW keeps them there).
    o.expAvg = at::zeros({o.len}, onDevice.dtype(masterDtype));
    o.expAvgSq = at::zeros({o.len}, onDevice.dtype(masterDtype));
    o.stepTensor = at::zeros({}, onDevice.dtype(at::kFloat));
  }
  if (initial && initial->step() > 0) { // resumed: the moments and step
    at::Tensor values = at::empty({o.len}, onDevice.dtype(at::kFloat));
    initial->read(StateKind::ExpAvg, U.layout, o.offset, o.len, values);
    o.expAvg.copy_(values);
    initial->read(StateKind::ExpAvgSq, U.layout, o.offset, o.len, values);
    o.expAvgSq.copy_(values);
    if (o.stepTensor.defined())
      o.stepTensor.fill_(double(initial->step()));
  }
}

void Optimizer::setUpdateInBackward(bool on, bool allowedByStorage) {
  // On CUDA only with swift's AdamW kernels (one unit per launch): torch's
  // multi-tensor kernel, the fallback without them, updates all at once.
  const bool allowed =
      on && (!device_.is_cuda() || adamwKernels_) && allowedByStorage;
  // Clipping: the same units' squares, added up there.
  const bool clips = plan_.training.maxGradNorm.has_value();
  updateInBackward_ = allowed && !clips;
  normInBackward_ = allowed && clips;
}

void Optimizer::beginStep(int64_t t, int64_t totalSteps) {
  const TrainingConfig &training = plan_.training;
  SWIFT_CHECK(totalSteps > 0 || training.lrSchedule.decay == LrDecay::Constant,
              plan_.path, ": training.lr_schedule: decay ",
              toString(training.lrSchedule.decay),
              " needs the run's length (Engine::setTotalSteps)");
  // The schedule's lr for this step; the rest of AdamW as in the plan. The
  // summed gradients times stepScale_ are the step's mean gradient.
  t_ = t;
  stepOpt_ = training.optimizer;
  stepOpt_.lr = lrAt(training, t, std::max<int64_t>(totalSteps, t));
  stepScale_ = 1.0 / double(world_ * training.gradientAccumulation);
  bc1_ = 1.0 - std::pow(stepOpt_.beta1, double(t));
  bc2_ = 1.0 - std::pow(stepOpt_.beta2, double(t));
  sumSq_.zero_();
  doneInBackward_ = 0;
  for (auto &U : units_)
    U->opt.normed = U->opt.updated = U->opt.written = false;
}

at::Tensor Optimizer::computePart(Unit &U) const {
  return U.params->part(U.opt.offset, U.opt.len);
}

at::Tensor &Optimizer::gradOf(Unit &U) const {
  return storage_.optimizerSharded ? U.gradShard : U.grad;
}

void Optimizer::addSquares(Unit &U) {
  if (!addSumOfSquares(gradOf(U), sumSq_)) {
    at::Tensor n = at::norm(gradOf(U), at::Scalar(2.0), at::kFloat);
    sumSq_.add_(n.to(at::kDouble).square());
  }
  U.opt.normed = true;
}

void Optimizer::sumSquares() {
  for (auto &U : units_)
    if (!U->opt.normed)
      addSquares(*U);
  // Over the shard group (Collectives): its shards are the whole gradient.
  if (storage_.optimizerSharded)
    collectives_.allReduceSum(sumSq_).wait();
}

void Optimizer::gradientFinal(Unit &U) {
  // A gradient reduced every micro-batch is final only once its last
  // reduction is added in: the caller updates it after the backward.
  if (U.padded() == 0 || !(updateInBackward_ || normInBackward_))
    return;
  side_->run(
      [&] {
        if (updateInBackward_) {
          bool summed = false;
          U.opt.written = updateOnDevice(U, stepScale_, &sumSq_, summed);
          U.opt.updated = true;
          if (summed)
            U.opt.normed = true;
        }
        if (!U.opt.normed) // clipping, or the update's tensor-op path (CPU)
          addSquares(U);
      },
      {U.grad});
  ++doneInBackward_;
  if (U.opt.updated) // the side stream's use keeps its memory until done
    U.grad = at::Tensor();
}

bool Optimizer::updateOnDevice(Unit &U, double scale, at::Tensor *sum,
                               bool &summed) {
  const OptimizerConfig &o = stepOpt_;
  OptimizerState &s = U.opt;
  const at::Tensor &g = gradOf(U);
  summed = false;
  if (useFusedAdamW()) {
    // CUDA: one kernel per unit, which adds up the gradient's squares.
    if (masterInCompute_) { // the master's high bits are the compute copy
      at::Tensor hi = computePart(U);
      if (fusedAdamwSplit(hi, s.masterLow, g, s.expAvg, s.expAvgSq, o.lr,
                          o.beta1, o.beta2, o.eps, o.weightDecay, s.decayFrom,
                          scale, bc1_, bc2_, sum))
        return summed = sum != nullptr, true;
    } else if (s.master.scalar_type() == at::kFloat) {
      // A separate fp32 master (fp32 precision; publish copies it), which
      // also writes a bf16 compute copy.
      at::Tensor dst = computePart(U);
      const bool toDst = dst.scalar_type() == at::kBFloat16 &&
                         dst.device() == s.master.device();
      if (fusedAdamwFp32(s.master, g, s.expAvg, s.expAvgSq,
                         toDst ? &dst : nullptr, o.lr, o.beta1, o.beta2, o.eps,
                         o.weightDecay, s.decayFrom, scale, bc1_, bc2_, sum))
        return summed = sum != nullptr, toDst;
    } else if (fusedAdamwBf16(s.master, g, s.expAvg, s.expAvgSq, o.lr, o.beta1,
                              o.beta2, o.eps, o.weightDecay, s.decayFrom, scale,
                              bc1_, bc2_,
                              sum)) { // pure bf16: in place
      return summed = sum != nullptr, false;
    }
  }
  return updateWithOps(U, g, scale);
}

bool Optimizer::updateWithOps(Unit &U, const at::Tensor &g, double scale) {
  // Tensor ops (CPU, or SWIFT_ADAMW=ops): the update is computed in fp32
  // even for bf16 parameters and states (pure bf16); each stored value is
  // rounded once, and the step uses the moments as stored, as the CUDA
  // kernel does. The gradient is left as it was.
  const OptimizerConfig &o = stepOpt_;
  OptimizerState &s = U.opt;
  at::Tensor master =
      masterInCompute_ ? joinMaster(computePart(U), s.masterLow) : s.master;
  at::Tensor gf = g.to(at::kFloat) * scale;
  at::Tensor p = master.to(at::kFloat);
  at::Tensor m = s.expAvg.to(at::kFloat), v = s.expAvgSq.to(at::kFloat);
  p.narrow(0, s.decayFrom, p.numel() - s.decayFrom)
      .mul_(1.0 - o.lr * o.weightDecay);
  m.mul_(o.beta1).add_(gf, 1.0 - o.beta1);
  v.mul_(o.beta2).addcmul_(gf, gf, 1.0 - o.beta2);
  if (!m.is_same(s.expAvg)) {
    s.expAvg.copy_(m);
    s.expAvgSq.copy_(v);
    m = s.expAvg.to(at::kFloat);
    v = s.expAvgSq.to(at::kFloat);
  }
  at::Tensor denom = v.sqrt().div_(std::sqrt(bc2_)).add_(o.eps);
  p.addcdiv_(m, denom, -o.lr / bc1_);
  if (!p.is_same(master))
    master.copy_(p);
  if (!masterInCompute_)
    return false;
  at::Tensor hi = computePart(U);
  splitMaster(master, hi, s.masterLow);
  return true;
}

bool Optimizer::torchFused() const {
#if SWIFT_TORCH_AT_LEAST(2, 1)
  return plan_.schedule.optimizer.device != plan::OptimizerDevice::Cpu &&
         device_.is_cuda() && useFusedAdamW() && !adamwKernels_ &&
         gradDtype_ == at::kFloat;
#else
  return false;
#endif
}

void Optimizer::step() {
  const TrainingConfig &training = plan_.training;
  // The host AdamW (schedule.optimizer.device "cpu"): gradients copied down,
  // parameters up.
  const bool offload =
      plan_.schedule.optimizer.device == plan::OptimizerDevice::Cpu;
  double scale = stepScale_;

  // The global gradient norm. Every element is counted once: at ZeRO-0
  // each rank holds the whole all-reduced gradient (this rank's sum is the
  // total), at ZeRO 1-3 each rank its disjoint shard of it (the sum over
  // the shard group's ranks is: with HSDP the replica groups hold the same
  // shards, and a sum over the world would count each of them once per
  // group); padding is zero. Sums of squares in fp64, over per-unit fp32
  // norms (or the AdamW kernels' block sums), then * scale: the norm of the
  // mean gradient. Clipping needs it before the update. Without clipping
  // it is only reported: the fused AdamW kernels add this rank's squares
  // up as they read the gradients (no pass of its own: 1.2 ms a step on
  // the 1B), the tensor-op path's are added after the update (it leaves
  // the gradients as they were), and the sum over ranks follows the update.
  // torch's fused kernel unscales the gradients in place: its squares come
  // first.
  const bool fused = torchFused();
  const bool upFront = training.maxGradNorm || offload || fused;
  if (upFront)
    sumSquares();
  if (training.maxGradNorm) {
    // torch.nn.utils.clip_grad_norm_: gradients * min(1, max/(norm + 1e-6)),
    // folded into the optimizer's gradient scale (one host sync per step).
    const double norm = std::sqrt(sumSq_.item<double>()) * scale;
    const double coef = *training.maxGradNorm / (norm + 1e-6);
    if (coef < 1.0)
      scale *= coef;
  }

  if (offload) {
    updateOnHost(scale);
  } else if (fused) {
    updateTorchFused(scale);
  } else {
    for (auto &U : units_) {
      if (U->opt.updated)
        continue;
      bool summed = false;
      U->opt.written =
          updateOnDevice(*U, scale, U->opt.normed ? nullptr : &sumSq_, summed);
      if (summed)
        U->opt.normed = true;
    }
  }

  if (!upFront)
    sumSquares();
  if (!offload)
    for (auto &U : units_)
      publish(*U, U->opt.written);
}

void Optimizer::updateOnHost(double scale) {
  // Pipelined: all gradient downloads are queued at once; the host
  // updates unit i as soon as its download is done (later downloads and
  // earlier uploads overlap with it) and queues unit i's upload.
  const OptimizerConfig &o = stepOpt_;
  std::vector<HostFence> downloaded(units_.size());
  for (size_t i = 0; i < units_.size(); ++i) {
    units_[i]->opt.hostGrad.copy_(gradOf(*units_[i]), /*non_blocking=*/true);
    downloaded[i].record(device_);
  }
  AdamWArgs args{float(o.lr),
                 float(o.beta1),
                 float(o.beta2),
                 float(o.eps),
                 float(o.weightDecay),
                 float(scale),
                 t_};
  for (size_t i = 0; i < units_.size(); ++i) {
    Unit &U = *units_[i];
    OptimizerState &s = U.opt;
    downloaded[i].wait();
    cpuAdamW(s.master.data_ptr<float>(), s.expAvg.data_ptr<float>(),
             s.expAvgSq.data_ptr<float>(), s.hostGrad.data_ptr<float>(), s.len,
             s.decayFrom, args,
             s.hostParamOut.defined()
                 ? reinterpret_cast<uint16_t *>(s.hostParamOut.data_ptr())
                 : nullptr);
    publish(U);
  }
}

void Optimizer::updateTorchFused(double scale) {
#if SWIFT_TORCH_AT_LEAST(2, 1)
  // CUDA without swift's kernels: torch's multi-tensor AdamW over fp32
  // masters (joined from the compute copy in bf16-mixed, split after).
  // Two groups, as HF Trainer's: each unit's undecayed head and its
  // decayed rest (OptimizerState::decayFrom).
  const OptimizerConfig &o = stepOpt_;
  std::vector<at::Tensor> p[2], g[2], m[2], v[2], steps[2];
  for (auto &U : units_) {
    OptimizerState &s = U->opt;
    if (masterInCompute_)
      s.master = joinMaster(computePart(*U), s.masterLow);
    // The fused kernel reads the step count; it does not advance it.
    s.stepTensor.add_(1);
    const int64_t split[3] = {0, s.decayFrom, s.len};
    for (int k = 0; k < 2; ++k) {
      const int64_t n = split[k + 1] - split[k];
      if (n == 0)
        continue;
      p[k].push_back(s.master.narrow(0, split[k], n));
      g[k].push_back(gradOf(*U).narrow(0, split[k], n));
      m[k].push_back(s.expAvg.narrow(0, split[k], n));
      v[k].push_back(s.expAvgSq.narrow(0, split[k], n));
      steps[k].push_back(s.stepTensor);
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
      splitMaster(U->opt.master, hi, U->opt.masterLow);
      U->opt.master = at::Tensor();
      U->opt.written = true;
    }
#else
  (void)scale;
  SWIFT_ASSERT(false, "torch's fused AdamW needs LibTorch >= 2.1");
#endif
}

void Optimizer::publish(Unit &U, bool written) {
  // The optimizer's output unless it wrote the compute copy already (or
  // the copy holds the master's high bits).
  const OptimizerState &s = U.opt;
  at::Tensor updated;
  if (!written && !s.masterLow.defined())
    updated = s.hostParamOut.defined() ? s.hostParamOut : s.master;
  U.params->publish(updated, s.offset, s.len,
                    plan_.schedule.optimizer.gatherParams, collectives_,
                    inFlight_);
}

at::ScalarType Optimizer::stateDtype(const Unit &U, StateKind kind) const {
  const OptimizerState &s = U.opt;
  if (kind == StateKind::Master && s.masterLow.defined())
    return at::kFloat;
  return (kind == StateKind::Master   ? s.master
          : kind == StateKind::ExpAvg ? s.expAvg
                                      : s.expAvgSq)
      .scalar_type();
}

at::Tensor Optimizer::partition(Unit &U, StateKind kind) const {
  const OptimizerState &s = U.opt;
  return kind == StateKind::Master
             ? (s.masterLow.defined() ? joinMaster(computePart(U), s.masterLow)
                                      : s.master)
         : kind == StateKind::ExpAvg ? s.expAvg
                                     : s.expAvgSq;
}

} // namespace swift::rt::engine
