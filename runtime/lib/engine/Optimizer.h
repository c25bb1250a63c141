//===- Optimizer.h - AdamW over the units' partitions ---------------------===//
//
// Private to the engine room. The optimizer of the Engine: each unit's
// AdamW state on its optimizer partition (OptimizerState; Engine.h says
// which buffers exist where), the step's hyperparameters (the schedule's
// lr, bias corrections, the gradient scale, clipping), the global gradient
// norm, and the three ways a step updates: on the device (swift's fused
// AdamW kernels, torch's multi-tensor kernel, or tensor ops), on the host
// (schedule.optimizer.device "cpu": CpuAdam.h, gradients copied down and
// parameters up), and during the backward (a unit's update, or with
// clipping its squares, on a side stream as soon as its gradient is
// final). After an update it publishes the parameters (Storage.h
// TrainableParams::publish).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/engine/Engine.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace swift::rt::engine {

class Collectives;
struct Unit;

/// A unit's optimizer partition [offset, offset + len) of its padded flat
/// buffer and the AdamW state on it.
struct OptimizerState {
  int64_t offset = 0, len = 0;
  // AdamW decays the partition's elements from this one on (the layout's
  // decayBegin, Model.h, relative to offset; 0..len).
  int64_t decayFrom = 0;
  at::Tensor master, expAvg, expAvgSq; // (len); bf16 states in pure bf16
  // bf16-mixed (plan::masterInComputeCopy): `master` is undefined; the fp32
  // master is the compute copy's partition as its high bits plus these low
  // bits (Kernels.h splitMaster).
  at::Tensor masterLow;              // (len) int16
  at::Tensor stepTensor;             // fused AdamW's step counter
  at::Tensor hostGrad, hostParamOut; // (len) offload staging
  // This step: its gradient's squares are in the norm's sum / AdamW
  // updated it (during the backward) / that update wrote the compute copy.
  bool normed = false, updated = false, written = false;
};

class Optimizer {
public:
  /// `units`, `collectives` and `inFlight` (the Engine's collectives in
  /// flight, which publishing adds to) are the Engine's, and outlive this.
  Optimizer(const Plan &plan, const plan::StorageLayout &storage,
            at::Device device, int worldSize, at::ScalarType computeDtype,
            at::ScalarType gradDtype, bool masterInCompute,
            const std::vector<std::unique_ptr<Unit>> &units,
            Collectives &collectives, std::deque<Pending> &inFlight);
  ~Optimizer();

  /// Unit U's state from its initial fp32 values `init` of the range the
  /// rank keeps (from keepBegin; `low`: their low bits where the master is
  /// in the compute copy), and the moments and step from `initial` when it
  /// resumes.
  void initState(Unit &U, const at::Tensor &init, const at::Tensor &low,
                 int64_t keepBegin, const StateSource *initial);

  /// Engine::setUpdateInBackward, where `allowed` by the storage.
  void setUpdateInBackward(bool on, bool allowed);
  int doneInBackward() const { return doneInBackward_; }

  /// The step's AdamW hyperparameters (step number `t`, of `totalSteps`);
  /// zeroes the norm.
  void beginStep(int64_t t, int64_t totalSteps);
  /// Unit U's gradient is final for this step: update it (or add up its
  /// squares) on the side stream, when the plan allows it.
  void gradientFinal(Unit &U);
  /// Waits for the side stream's work (the updates in backward).
  void joinSide() { side_->join(); }
  /// The step's update of every unit not updated in backward, the global
  /// norm (clipping first where the plan clips) and the publishing.
  void step();

  double lr() const { return stepOpt_.lr; }
  /// 1 / (world * G): the summed gradients times it are the mean.
  double scale() const { return stepScale_; }
  /// fp64 sum of the gradients' squares, on the device.
  const at::Tensor &sumSq() const { return sumSq_; }

  /// The compute copy's part that U's partition updates.
  at::Tensor computePart(Unit &U) const;
  /// Unit U's state of `kind`, this rank's partition, in the dtype kept.
  at::Tensor partition(Unit &U, StateKind kind) const;
  at::ScalarType stateDtype(const Unit &U, StateKind kind) const;

private:
  at::Tensor &gradOf(Unit &U) const;
  void addSquares(Unit &U);
  /// This rank's squares of the units not normed yet, summed over the
  /// shard group (the ranks whose shards make the whole gradient).
  void sumSquares();
  /// AdamW on U's partition on the device, gradients times `scale`.
  /// Returns whether the compute copy was written; sets `summed` when a
  /// kernel added the gradient's squares to `sum` (given).
  bool updateOnDevice(Unit &U, double scale, at::Tensor *sum, bool &summed);
  /// The same in tensor ops (CPU, or SWIFT_ADAMW=ops).
  bool updateWithOps(Unit &U, const at::Tensor &g, double scale);
  void updateOnHost(double scale);
  /// torch's multi-tensor AdamW runs the device update (CUDA without
  /// swift's kernels, LibTorch >= 2.1).
  bool torchFused() const;
  void updateTorchFused(double scale);
  void publish(Unit &U, bool written = false);

  const Plan &plan_;
  const plan::StorageLayout &storage_;
  at::Device device_;
  int world_ = 1;
  bool masterInCompute_ = false;
  at::ScalarType computeDtype_, gradDtype_;
  const std::vector<std::unique_ptr<Unit>> &units_;
  Collectives &collectives_;
  std::deque<Pending> &inFlight_;
  // This step's AdamW: lr and bias corrections, scale = 1 / (world * G).
  OptimizerConfig stepOpt_;
  int64_t t_ = 0;
  double stepScale_ = 1, bc1_ = 1, bc2_ = 1;
  at::Tensor sumSq_;
  bool adamwKernels_ = false; // swift's fused AdamW kernels run here
  bool updateInBackward_ = false, normInBackward_ = false;
  std::unique_ptr<SideStream> side_;
  int doneInBackward_ = 0;
};

} // namespace swift::rt::engine
