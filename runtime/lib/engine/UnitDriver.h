//===- UnitDriver.h - the units' forward, backward, gathers, reductions --===//
//
// Private to the engine room. Runs the schedule's programs over the units
// (Engine.h): a micro-batch's forward program, unit by unit, each unit one
// node of the outer autograd graph (Autograd.h) whose backward runs the
// unit's backward entry: prefetch gathers, recompute if needed,
// differentiate the inner graph, add the parameter gradients into the
// flat gradient buffers, hand final gradients to the optimizer (the update
// in backward), release, launch the bucket reductions.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "MemoryProbe.h"
#include "swift/Runtime/engine/Engine.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace swift::rt::engine {

class ActivationStash;
class Collectives;
class Optimizer;
struct Unit;

/// A Batch on the device, as the units read it.
struct MicroBatch {
  at::Tensor inputs, targets; // (B, S) int64, device
  Rope rope;                  // per-token tables; undefined: the driver's
  Packing packing;            // packed windows; empty: causal
  int64_t firstSample = 0;    // global number of its first sample
  bool masked = false;        // targets may be -100
  double divisor = 0;         // the loss sum's divisor when masked
};

class UnitDriver {
public:
  /// `units`, `collectives`, `optimizer`, `stash` (the offloaded inputs)
  /// and `inFlight` (the collectives in flight, oldest first) are the
  /// Engine's, and outlive this.
  UnitDriver(const Plan &plan, at::Device device, at::ScalarType computeDtype,
             at::ScalarType gradDtype,
             const std::vector<std::unique_ptr<Unit>> &units,
             Collectives &collectives, Optimizer &optimizer,
             ActivationStash &stash, std::deque<Pending> &inFlight);

  /// `b` on the device; `firstSample`: its first sample's global number
  /// where the batch has none; `divisor`: the masked loss sum's.
  MicroBatch deviceMicroBatch(const Batch &b, int64_t firstSample,
                              double divisor) const;
  /// The forward program on `mb` with autograd: returns the loss, whose
  /// backward() runs the backward program. `last`: the step's last
  /// micro-batch (the final reductions, the update in backward).
  at::Tensor forward(const MicroBatch &mb, bool last);
  /// The forward program without autograd or LoRA dropout: the loss.
  at::Tensor evaluate(const MicroBatch &mb);

  void gather(int u);
  void waitGathered(int u);
  void release(int u);
  /// Unit u's gradient buffer for this micro-batch (allocated at ZeRO-2/3);
  /// `fresh`: the step's first gradient overwrites it (ZeRO 0/1).
  at::Tensor &gradTarget(int u, bool &fresh);
  /// Whether unit u's gradient is reduced every micro-batch (its bucket's
  /// every_micro_batch): then it goes to a micro-batch buffer (microGrad),
  /// else it accumulates in `grad` until the last micro-batch.
  bool reducedEveryMicroBatch(int u) const;
  /// Waits for every collective in flight.
  void finishPending();

private:
  at::Tensor unitForward(int u, const at::Tensor &x, const MicroBatch &mb);
  std::vector<at::Tensor> unitBackward(int u, std::vector<at::Tensor> &&grads,
                                       MicroBatch &mb, const at::Tensor &xSaved,
                                       at::Tensor out,
                                       std::vector<at::Tensor> inputs);
  /// `forBackward`: a full-checkpointing recompute, differentiated but
  /// never read (see decoderForward).
  at::Tensor computeUnit(int u, const at::Tensor &x,
                         const std::vector<at::Tensor> &leaves,
                         const MicroBatch &mb, bool forBackward = false);
  std::vector<at::Tensor> makeLeaves(int u, bool requiresGrad);
  /// LoRA: views of the frozen base of unit u's owners (no gradient).
  std::vector<at::Tensor> baseLeaves(int u);
  /// QLoRA: dequantize unit u's owners' NF4 base (Storage.h Nf4Base) / give
  /// the storage back. Tensors autograd saved keep pointing at the storage
  /// object; the next materialize refills it identically.
  void materializeBase(int u);
  void dematerializeBase(int u);
  /// One GradSink per leaf of unit u (empty where autograd returns it).
  std::vector<GradSink> makeSinks(int u);
  void accumulateGrads(int u, const std::vector<at::Tensor> &leafGrads);
  /// Unit u's gradient is final for this step: the optimizer may update
  /// it now (Optimizer.h), unless it is reduced every micro-batch.
  void gradientFinal(int u);
  void reduceBucket(int b);
  /// Unit U's reduce-scatter of `full` into its gradient shard; with HSDP,
  /// on the step's last micro-batch, followed by the shard's all-reduce
  /// across the replica groups.
  void reduceScatter(Unit &U, at::Tensor full);

  const Plan &plan_;
  const ModelConfig &m_;
  at::Device device_;
  at::ScalarType computeDtype_, gradDtype_;
  const std::vector<std::unique_ptr<Unit>> &units_;
  Collectives &collectives_;
  Optimizer &optimizer_;
  ActivationStash &stash_;
  std::deque<Pending> &inFlight_;
  MemoryProbe probe_; // SWIFT_MEMORY_PROBE: allocated bytes per unit pass
  bool lora_ = false;
  std::vector<int> bucketOf_;      // unit -> its bucket in schedule.buckets
  std::vector<int> backwardIndex_; // unit -> index in schedule.backward
  Rope rope_;
  bool evaluating_ = false; // evaluate(): no LoRA dropout
  bool lastMicroBatch_ = false;
  // The update in backward: per unit the units whose backward contributes
  // to its gradient and how many of them this micro-batch still has to run.
  std::vector<int> contributors_, contributorsLeft_;
};

} // namespace swift::rt::engine
