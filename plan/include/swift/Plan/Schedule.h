//===- Schedule.h - the one schedule algorithm and its rules ----*- C++ -*-===//
//
// A schedule (Plan.h's Schedule: units, buckets, forward/backward programs,
// optimizer placement) is computed in one place and checked by one set of
// rules, both here:
//  - buildSchedule() is the algorithm. swift-plan's materialize passes call
//    it and translate its result into swift.schedule ops; parsePlan() calls
//    it to complete a plan.json without a "schedule" section.
//  - checkSchedule() is the rule set. parsePlan() runs it on every plan
//    (validateSchedule()); swift-verify-schedule translates the IR's
//    schedule into a Schedule and runs it too, adding only the checks of
//    what plan.json does not carry (streams, prefetch positions, recompute
//    marks, bucket sizes, host copies).
// The rules are the executor's assumptions (runtime/lib/engine/UnitDriver.cpp): a
// schedule that passes them cannot make the engine use parameters that are
// not gathered, free them twice, or reduce gradients that are not final.
//
// Plain C++17, like the rest of plan/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace swift::plan {

/// Bytes per parameter that buckets are sized in: fp32 gradients, whatever
/// the reduction dtype (pure bf16 buckets then hold half the bytes they are
/// sized for), so the grouping does not depend on the precision.
inline constexpr int64_t kBucketBytesPerParameter = 4;

/// What the strategy lays out in memory on each rank: which model-state
/// buffers exist, their sizes and where they live. The schedule's rules
/// check its decisions against these facts (checkSchedule) and the runtime
/// allocates its buffers by them (Engine's constructor); everything else
/// the runtime does, it reads from the schedule.
struct StorageLayout {
  /// ZeRO-3: each rank keeps a shard of every unit's parameters; the whole
  /// unit exists only between a gather and a release.
  bool paramsSharded = false;
  /// ZeRO 1-3: each rank's optimizer partition (master, moments) is its
  /// shard of every unit, and the gradient it reads is the reduced shard.
  /// Otherwise the partition is the whole unit and the gradient the whole,
  /// all-reduced one.
  bool optimizerSharded = false;
  /// ZeRO 2/3: no step-long whole gradient; each micro-batch's gradient
  /// lives until its reduction.
  bool gradsSharded = false;
  /// Offload (any): the master and the moments live on the host.
  bool optimizerOnHost = false;
  /// Offload "optimizer+params": the parameter shards live on the host.
  bool paramsOnHost = false;
};
StorageLayout storageLayout(const StrategyConfig &s);

/// The checkpoint mode the strategy gives decoder `layer`: the strategy's
/// `checkpointing` on the first `checkpoint_layers` decoders (all of them
/// when -1), none on the others.
Checkpointing layerCheckpoint(const StrategyConfig &s, int64_t layer);

/// Whether the strategy keeps decoder `layer`'s checkpointed input on the
/// host (strategy.offload_activations): the first k of the checkpointed
/// layers (all of them when -1); never an uncheckpointed one.
bool layerOffloadsInput(const StrategyConfig &s, int64_t layer);

/// The strategy's rule about activation offload and MLP tiles: what moves
/// to the host is a fully checkpointed layer's input, so offload_activations
/// needs checkpointing full; it and mlp_tile_tokens are >= -1 and >= 0.
/// Returns why it is broken, or nullopt.
std::optional<std::string> activationOffloadViolation(const StrategyConfig &s);

/// unitParameterCount() of every unit, 0..L+1: what a plan.json model's
/// buckets are sized by.
std::vector<int64_t> unitParameterCounts(const ModelConfig &m);

/// buildSchedule()'s result: the schedule plan.json carries, plus what the
/// compiler's IR shows of it and plan.json leaves implicit.
struct BuiltSchedule {
  Schedule schedule;
  /// Per bucket: the gradient bytes it was sized with (its units'
  /// parameters x kBucketBytesPerParameter).
  std::vector<int64_t> bucketBytes;
  /// Per step of schedule.forward / schedule.backward, per entry of its
  /// `gather`: the prefetch position, i.e. how many units after the step's
  /// own unit (in the program's order) the unit that reads the gathered
  /// parameters comes; 0: the step's unit itself.
  std::vector<std::vector<int>> forwardAhead, backwardAhead;
};

/// The schedule algorithm, the only one: units with the strategy's
/// checkpointing (layerCheckpoint); buckets of whole units in backward order,
/// each closed once it reaches `bucket_bytes`, all_reduce at ZeRO-0 and
/// reduce_scatter at 1-3, reduced every micro-batch at ZeRO-2/3 and on the
/// last one otherwise; each bucket reduced right after the backward step
/// that makes its gradients final; at ZeRO-3 forward step u gathers the
/// owners of units u..u+prefetch_depth and releases u (the head stays
/// gathered across the forward/backward turn), backward step u gathers the
/// owners of u..u-prefetch_depth (never the embedding, whose backward reads
/// no weights) and releases u (and unit 0 at a tied head); the optimizer on
/// the CPU exactly when offloading, all-gathering updated parameters at
/// ZeRO-1/2.
///
/// `unitParameters[u]` sizes unit u's gradients in the buckets (L+2
/// entries): unitParameterCounts(m) for a plan.json model; the compiler
/// passes the counts of its IR's parameters.
BuiltSchedule buildSchedule(const ModelConfig &m, const StrategyConfig &s,
                            const std::vector<int64_t> &unitParameters);

/// The first rule a schedule breaks: where, as plan.json's path below
/// "schedule" and as indices the IR's ops are found by, and why.
struct ScheduleViolation {
  enum class Part : uint8_t { Units, Buckets, Forward, Backward, Optimizer };
  Part part = Part::Units;
  /// units[entry], buckets[entry], forward[entry], backward[entry]; -1: the
  /// part as a whole.
  int entry = -1;
  /// The entry's field ("unit", "gather", "release", "reduce", "kind",
  /// "layer", "checkpoint", "collective", "every_micro_batch", "device",
  /// "gather_params"); empty: the entry itself.
  std::string field;
  /// Position in the field's list (gather, release, reduce); -1: none.
  int item = -1;
  std::string why;

  /// plan.json's path below "schedule": "backward[3].reduce", "buckets".
  std::string path() const;
};

/// The strategy's rule about offload: it needs ZeRO >= 1 (the host optimizer
/// updates shards), and offloading parameters needs ZeRO-3 (only sharded
/// parameters live on the host between uses). Returns why it is broken, or
/// nullopt.
std::optional<std::string> offloadViolation(const StrategyConfig &s);

/// The schedule rules, the only ones (docs/plan-schema.md lists them): the
/// units are the model's, in order, checkpointed as the strategy says; each
/// program computes every unit once in autograd's order; with sharded
/// parameters every unit a step reads is gathered when it runs, a released
/// unit was gathered and nothing stays gathered after backward, with whole
/// parameters nothing is gathered or released; the buckets partition the
/// units, each all-reduced where the optimizer reads whole gradients and
/// reduce-scattered where it reads shards, and reduced every micro-batch
/// where no whole gradient is kept (ZeRO 2/3; below, the frequency is free);
/// each bucket is reduced once in backward after every unit writing its
/// gradients has run; the optimizer runs where its state lives and
/// all-gathers updated parameters exactly where they are whole but updated
/// in shards. Returns the first violation, or nullopt.
std::optional<ScheduleViolation> checkSchedule(const ModelConfig &m,
                                               const StrategyConfig &s,
                                               const Schedule &schedule);

/// checkSchedule() on a plan: throws UserError
/// "<plan.path>: schedule.<path>: <why>". parsePlan() calls it.
void validateSchedule(const Plan &plan);

} // namespace swift::plan
