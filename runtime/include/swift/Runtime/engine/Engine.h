//===- Engine.h - executes a plan's schedule: ZeRO 0-3, offload, recompute ==//
//
// Ownership. The Engine owns every buffer of the model state:
//   per unit (Plan.h's units), W ranks in the unit's shard group (the
//   world size, or strategy.dp_shard with HSDP), padded size P = W * shard:
//     full      (P)      compute dtype, device. ZeRO 0-2: always resident.
//                        ZeRO-3: its storage is allocated by a gather and
//                        freed by a release (tensors saved for backward
//                        keep pointing at the same storage object).
//     shard     (P/W)    ZeRO-3 only: compute-dtype parameter shard; on the
//                        host (pinned) with offload "optimizer+params".
//     master, expAvg, expAvgSq (N_opt): the optimizer partition, fp32;
//                        pure bf16 without offload: bf16 moments and no
//                        master (the bf16 parameters are updated in place).
//                        On the host (pinned) with any offload. N_opt = P
//                        at ZeRO-0, P/W otherwise.
//     grad      (P) the step's whole gradient, grad dtype: a unit whose
//                        bucket is reduced on the last micro-batch only
//                        accumulates it over the micro-batches (allocated
//                        by the unit's first gradient of a step: in
//                        backward, the head's in the loss's forward); at
//                        ZeRO-0 a unit whose bucket is reduced every
//                        micro-batch sums its all-reduced micro-batch
//                        gradients in it. Freed after the optimizer step.
//     gradShard ZeRO 1-3: (P/W) reduced gradient shard, grad dtype.
//     microGrad (P) this micro-batch's gradient of a unit whose bucket is
//                        reduced every micro-batch (always at ZeRO 2/3),
//                        alive from the unit's backward until its
//                        reduction completes.
//   grad dtype: fp32, except bf16 for pure bf16.
//   HSDP (plan strategy.dp_shard): the shard group's W ranks shard the
//   units as above; each of the world / W groups holds the same shards, and
//   the reduced gradient shards (gradShard) are summed across the groups
//   (the replica communicator) before the optimizer reads them.
// The Engine borrows the communicators (MeshComms) and the Plan; both must
// outlive it.
//
// Parts (private to the engine room, lib/engine/): the units' parameter
// storage in three kinds (Storage.h: TrainableParams, LoRA's DenseBase,
// QLoRA's Nf4Base), the optimizer (Optimizer.h: each unit's AdamW state,
// the device, host and in-backward updates, clipping and the norm), the
// unit driver (UnitDriver.h: the forward and backward programs, gathers,
// releases, bucket reductions) and the activation stash
// (ActivationStash.h: the checkpointed inputs of the units the schedule
// marks offload_input, in host buffers between their forward and their
// backward). The Engine builds them and is the facade the Run library
// calls.
//
// Strategy and schedule. The plan's strategy decides only the storage
// above (plan::StorageLayout, computed once in the constructor: which
// buffers exist, their sizes, host or device, shard or whole). Everything
// the Engine does with them it reads from plan.schedule: the units'
// recomputation, each program entry's gathers, releases and bucket
// reductions (forward, backward, and evaluate(), which runs the forward
// program), each bucket's collective and whether it runs every
// micro-batch, where the optimizer runs (schedule.optimizer.device: the
// host AdamW, with the gradients copied down and the parameters up) and
// whether updated parameters are all-gathered (gather_params).
//
// The update in backward. At ZeRO-0 on one rank without offload, a unit's
// gradient is final once the last micro-batch's backward has passed every
// unit that reads its parameters (a unit of a bucket reduced every
// micro-batch: once that reduction is added in, after the backward). Without
// clipping AdamW updates it then, on a side stream (Device.h SideStream),
// beside the backward of the units before it, and its gradient buffer is freed;
// with clipping the side stream adds up its squares there (the norm must be
// known before any update). The step's end waits for the side stream and
// updates the rest.
//
// Threading: step() runs on the calling thread; unit backwards run on the
// autograd engine's thread while step() waits in backward(); nothing runs
// concurrently with anything else that touches the Engine.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Schedule.h"
#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/core/PlanTypes.h"
#include "swift/Runtime/dist/Comm.h"
#include "swift/Runtime/io/Data.h"
#include "swift/Runtime/io/ModelState.h"
#include "swift/Runtime/model/Kernels.h"
#include "swift/Runtime/model/Model.h"

#include <ATen/ATen.h>

#include <deque>
#include <memory>
#include <vector>

namespace swift::rt {

namespace engine { // the Engine's parts (lib/engine/)
class ActivationStash;
class Collectives;
class Optimizer;
class UnitDriver;
struct Unit;
} // namespace engine

/// Collectives the Engine issued, by kind: over the shard group (the world
/// without HSDP), and HSDP's all-reduces of gradient shards across the
/// replica groups.
struct CollectiveCounts {
  int64_t allReduce = 0, reduceScatter = 0, allGather = 0;
  int64_t allReduceReplicas = 0;
};

class Engine : public ModelState {
public:
  /// Initial state: `initial` when given (each rank reads the range it
  /// keeps: its ZeRO-3 shard, else the whole units; the moments for its
  /// optimizer partition), otherwise random weights from the plan's seed.
  /// LoRA (plan training.method lora/qlora): `initial` holds the adapters
  /// (a checkpoint or a peft adapter; none: A random, B zero) and `base`
  /// the frozen base (HF weights; none: random from the seed).
  /// `mesh`: the ranks of the plan's world, in the plan's shard groups
  /// (plan::shardGroups); the units' state is sharded over the shard group.
  Engine(const Plan &plan, const MeshComms &mesh, at::Device device,
         const StateSource *initial = nullptr,
         const StateSource *base = nullptr);
  /// One shard group of all of `comm`'s ranks (a plan without dp_shard).
  Engine(const Plan &plan, Comm &comm, at::Device device,
         const StateSource *initial = nullptr,
         const StateSource *base = nullptr);
  ~Engine() override;

  /// One optimizer step. microBatches: gradient_accumulation tensors of
  /// (B, S+1) int64 token ids (host or device). Returns this rank's mean
  /// loss over its micro-batches.
  double step(const std::vector<at::Tensor> &microBatches);

  /// One optimizer step on gradient_accumulation micro-batches (Data.h).
  /// Masked batches (JSONL): the loss of the step is the mean over its
  /// `stepTrainedTokens` trained tokens (all micro-batches, all ranks: HF
  /// Trainer's num_items_in_batch); each micro-batch's loss is its sum over
  /// trained tokens divided by stepTrainedTokens / (world * accumulation),
  /// so the summed, 1/(world * accumulation)-scaled gradients are the
  /// gradient of that mean. Unmasked batches: the mean per micro-batch, as
  /// the (B, S+1) overload. Returns this rank's mean of its micro-batch
  /// losses (times world, summed over ranks, divided by world: the mean).
  double step(const std::vector<Batch> &microBatches,
              int64_t stepTrainedTokens = 0);

  /// What a step reports once its work is done.
  struct StepResult {
    double loss = 0;     // this rank's mean micro-batch loss (as step())
    double gradNorm = 0; // the global norm before clipping (lastGradNorm)
    double lr = 0;       // the schedule's lr of the step
    /// Device seconds from the end of the step finished before this one
    /// to this one's end: the step's time when it was queued behind that
    /// one (nothing idles in between that this misses); negative on CPU
    /// and for the first step.
    double sincePrevious = -1;
    /// The collectives this rank issued in the step, by kind (gradient
    /// reductions, parameter gathers, the norm's sum; one per unit each).
    CollectiveCounts collectives;
  };
  /// A step queued on the device whose numbers are not read yet.
  class PendingStep {
  public:
    bool pending() const { return readout_.defined(); }

  private:
    friend class Engine;
    at::Tensor readout_; // host: the loss sum, the sum of squares
    HostFence done_;     // after the readout's copy
    double lr_ = 0, normScale_ = 1;
    int64_t microBatches_ = 1;
    CollectiveCounts collectives_;
  };
  /// step() in two halves: launchStep queues the whole step (forward,
  /// backward, update) and the copy of its loss and norm to the host, and
  /// returns without waiting for the device (unless clipping, which reads
  /// the norm mid-step); finishStep waits for that step's work only and
  /// reads its numbers. The host can so queue step N+1 before reading step
  /// N: the device does not idle while the host reports, loads the next
  /// batch and queues the next step's forward. Before its first backward a
  /// launch waits for the previous step's backward and in-backward updates
  /// (not its tail), so the gradients those freed are reused, not doubled.
  PendingStep launchStep(const std::vector<Batch> &microBatches,
                         int64_t stepTrainedTokens = 0);
  StepResult finishStep(PendingStep &step);

  /// Evaluation (swift-run --eval-data / --eval-split): the forward of
  /// `microBatches` (masked, Data.h) with the current weights, unit by
  /// unit, without autograd, LoRA dropout or any gradient or optimizer
  /// state; the schedule's forward program with its gathers and releases
  /// (ZeRO-3), what it leaves gathered for the backward released after
  /// the last batch. Returns this rank's sum of per-token cross-entropy over
  /// the batches' targets and their number. Collective at ZeRO-3: every rank
  /// passes the same number of micro-batches.
  struct EvalSums {
    double lossSum = 0;
    int64_t tokens = 0;
  };
  EvalSums evaluate(const std::vector<Batch> &microBatches);

  /// Every parameter (unit by unit in each unit's table order, Model.h) by
  /// its HF name and shape, fp32 on the host, gathered from
  /// the shards (collective: every rank must call it).
  std::vector<std::pair<std::string, at::Tensor>> parameters();

  int64_t stepsDone() const { return steps_; }

  /// The run's length in optimizer steps (swift-run --steps): the T of the
  /// plan's lr schedule (swift::plan::lrAt). Default 0: only a constant
  /// schedule (warmup allowed) may run.
  void setTotalSteps(int64_t steps) { totalSteps_ = steps; }
  /// The last finished step's learning rate (the schedule's) and the
  /// global L2 norm of its averaged gradients over all parameters and
  /// ranks, before clipping (as torch.nn.utils.clip_grad_norm_ returns it).
  double lastLr() const { return lastLr_; }
  double lastGradNorm() const { return lastGradNorm_; }
  int rank() const override { return comm_.rank(); }
  /// Whether a unit's update (no clipping) or gradient norm (clipping) runs
  /// as soon as its gradient is final, during the backward (see above).
  /// Default: on where the plan allows it, unless SWIFT_KERNELS has
  /// "-overlap"; off makes every step update after the whole backward.
  void setUpdateInBackward(bool on);
  /// Units whose gradient the last step updated (or normed) in backward.
  int unitsDoneInBackward() const;

  /// Unit u's optimizer state of `kind` (Master: the fp32 masters, or the
  /// bf16 parameters in pure bf16), flat (padded) on the engine's device,
  /// in the dtype the engine keeps it. Collective at ZeRO 1-3 (the state is
  /// sharded): every rank calls it for the same units in the same order.
  at::Tensor stateUnit(int u, StateKind kind = StateKind::Master) override;
  /// LoRA: unit u's frozen base, flat (padded), compute dtype, on the
  /// device. Collective at ZeRO-3 (gathered from the shards).
  at::Tensor baseUnit(int u) override;
  /// The dtype stateUnit() returns for `kind` (the same for every unit).
  at::ScalarType stateDtype(StateKind kind) const override;

  /// Bytes of model state this rank holds, by kind; on the device unless
  /// `host` (offloaded, pinned). ZeRO-3 parameters count their shard (the
  /// gathered units come and go); ZeRO-2/3 gradients their reduced shard;
  /// ZeRO-0/1 gradients the buffers each step allocates in its backward.
  struct StateBytes {
    int64_t parameters = 0, gradients = 0, optimizer = 0, host = 0;
  };
  StateBytes stateBytes() const;
  /// Activation offload (plan.schedule.units[u].offload_input): the units
  /// whose checkpointed input waits on the host between their forward and
  /// their backward, and the (pinned) host bytes of their buffers, which
  /// the first step allocates and every step reuses.
  struct ActivationOffload {
    int units = 0;
    int64_t hostBytes = 0;
  };
  ActivationOffload activationOffload() const;
  /// Gradient bytes allocated on the device right now: between steps only
  /// ZeRO 1-3's reduced shards (ZeRO-0/1 free the full gradient after the
  /// optimizer, ZeRO-2/3 each micro-batch gradient after its reduction).
  int64_t heldGradientBytes() const;

private:
  using Unit = engine::Unit; // lib/engine/Unit.h

  /// The public constructors': `mesh`, else `own` (MeshComms of one group).
  Engine(const Plan &plan, std::unique_ptr<MeshComms> own,
         const MeshComms *mesh, at::Device device, const StateSource *initial,
         const StateSource *base);

  /// Unit u's storage (Storage.h) and optimizer state, from `initial` and
  /// LoRA's `base` (the constructor's).
  std::unique_ptr<Unit> makeUnit(int u, const StateSource *initial,
                                 const StateSource *base);
  /// The global number of micro-batch k's first sample where `b` has
  /// none: as swift-run numbers samples.
  int64_t firstSample(const Batch &b, int64_t k) const;
  /// The step's update (Optimizer.h), after the updates in backward.
  void optimizerStep();

  const Plan &plan_;
  const ModelConfig &m_;
  std::unique_ptr<MeshComms> ownMesh_; // the Comm& constructor's
  const MeshComms &mesh_;
  Comm &comm_; // the world's
  at::Device device_;
  // What the strategy lays out (see above); the only reader of it.
  plan::StorageLayout storage_;
  // The Comm's collectives, counted since the current step's launch.
  std::unique_ptr<engine::Collectives> collectives_;
  // bf16-mixed keeps the fp32 master in the compute copy plus 16 low bits
  // (plan::masterInComputeCopy).
  bool masterInCompute_ = false;
  at::ScalarType computeDtype_, gradDtype_;
  std::vector<std::unique_ptr<Unit>> units_;
  std::deque<Pending> pending_; // collectives in flight, oldest first
  int64_t steps_ = 0;
  int64_t totalSteps_ = 0;
  double lastLr_ = 0, lastGradNorm_ = 0;
  HostFence backwardDone_; // the last launched step's, after its side work
  HostFence lastDone_;     // the last finished step's end (timed)
  // The update in backward (see above): what the storage allows.
  bool inBackwardAllowed_ = false;
  std::unique_ptr<engine::Optimizer> optimizer_; // AdamW (Optimizer.h)
  // The offloaded checkpointed inputs (ActivationStash.h).
  std::unique_ptr<engine::ActivationStash> stash_;
  // The units' forward and backward (UnitDriver.h).
  std::unique_ptr<engine::UnitDriver> driver_;
  bool lora_ = false;
};

} // namespace swift::rt
