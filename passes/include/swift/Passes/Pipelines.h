//===- Pipelines.h - the phases of planning, and re-planning -----*- C++ -*-===//
//
// swift-plan's work as a library: a job goes through named phases, each a
// pass pipeline over the IR the previous one left:
//   import    the job as IR (cluster, model ops, job)           Import.h
//   annotate  parameters and tokens per step                    swift-annotate-model
//   strategy  search; the chosen (or closest) strategy fixed    swift-choose-strategy
//   estimate  memory and time of that strategy                  swift-estimate-cost
//   schedule  the strategy spelled out as a verified swift.schedule
// and what-if re-planning plans changed copies of a job for real (more GPUs,
// strategy keys left open, adapters, shorter sequences, FP8 GEMMs) to say
// what would fit or run faster.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_PASSES_PIPELINES_H
#define SWIFT_PASSES_PIPELINES_H

#include "swift/Dialect/SwiftOps.h"
#include "swift/Job/Job.h"

#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::swift {

/// The "materialize" pipeline (the schedule phase): turns a job whose
/// strategy is fixed (every key of #swift.strategy set, micro_batch_size
/// and gradient_accumulation known, e.g. after swift-choose-strategy) into
/// an explicit `swift.schedule` placed after the job, then verifies it.
/// Runs on the ModuleOp. After it, the emitters (swift/Emit/Emit.h) read
/// the schedule.
void buildMaterializePipeline(OpPassManager &pm);

/// Registers `--swift-materialize-pipeline` for swift-opt.
void registerMaterializePipeline();

/// The phases, in the order they run.
enum class Phase { Import, Annotate, Strategy, Estimate, Schedule };
inline constexpr const char *kPhaseNames[] = {"import", "annotate", "strategy",
                                              "estimate", "schedule"};
/// The phase named `name`, if any.
std::optional<Phase> parsePhase(llvm::StringRef name);

struct PlanningOptions {
  /// Fraction of GPU memory kept free for allocator fragmentation, and of
  /// host memory.
  double memoryMargin = 0.10;
  /// The last phase to run.
  Phase last = Phase::Schedule;
  /// When set, the IR after each phase is written to DIR/NN-<phase>.mlir.
  std::string dumpDir;
  /// The ZeRO stages the strategy phase chooses among when the job leaves
  /// strategy.zero open (cost::FixedDecisions::allowedZero); empty: 0-3.
  std::vector<int> allowedZero;
};

/// A job after the phases up to `options.last`.
struct PlannedJob {
  OwningOpRef<ModuleOp> module;
  JobOp job; // the module's one job
  /// A pass's complaint about the job (bad input), or a dump that could not
  /// be written; empty on success.
  std::string error;
  bool internal = false; // the error is this code's fault
  /// Whether the search found a strategy that fits (after the strategy
  /// phase).
  bool fits() const;
};

/// Imports `spec` and runs the phases on it.
PlannedJob planJob(const ::swift::job::JobSpec &spec, MLIRContext &context,
                   const PlanningOptions &options);

/// A change to a job, and the strategy swift-plan chooses after it.
struct WhatIf {
  std::string change; // "16 GPUs (2 nodes x 8)"
  CandidateAttr strategy;
  EstimateAttr estimate;
};

/// For a job where nothing fits: the smallest change of each kind that
/// makes it fit (more GPUs, the strategy keys the job fixes left open,
/// LoRA/QLoRA for full fine-tuning, QLoRA for LoRA, a shorter sequence),
/// each planned for real through the estimate phase.
std::vector<WhatIf> changesThatFit(const ::swift::job::JobSpec &job,
                                   MLIRContext &context,
                                   const PlanningOptions &options);

/// The job with the strategy keys it fixes (zero, offload, checkpointing,
/// micro-batch) left to swift-plan, planned again: returned when that fits
/// and is at least 5% faster than `pinnedTokensPerSecond`, so a report can
/// say what the fixed keys cost. Nothing when the job fixes none.
std::optional<WhatIf> fasterIfOpen(const ::swift::job::JobSpec &job,
                                   double pinnedTokensPerSecond,
                                   MLIRContext &context,
                                   const PlanningOptions &options);

/// The job in its FP8 twin (bf16-mixed -> fp8-mixed, bf16 -> fp8-bf16: the
/// decoder linears' GEMMs in FP8, everything stored as before), planned
/// again with the same fixed keys: returned when the twin can run (a full
/// fine-tuning swift-run job on a GPU with FP8), fits and is at least 5%
/// faster than `tokensPerSecond`. swift-plan never switches a job to FP8 by
/// itself; the report suggests it.
std::optional<WhatIf> fasterWithFp8(const ::swift::job::JobSpec &job,
                                    double tokensPerSecond, MLIRContext &context,
                                    const PlanningOptions &options);

/// A swift-run job of full fine-tuning on several nodes, planned again on
/// the mesh engines (backends torchtitan and megatron, whose search also
/// chooses tensor, pipeline and context parallelism) with the same fixed
/// keys: the faster of the two, when it fits and is at least 5% faster than
/// `tokensPerSecond`, so the report can say "--emit megatron" would run the
/// job faster than swift-run can (issue 32, design 0.1).
std::optional<WhatIf> fasterOnStack(const ::swift::job::JobSpec &job,
                                    double tokensPerSecond, MLIRContext &context,
                                    const PlanningOptions &options);

/// A swift-run job on one GPU that clips gradients, without clipping
/// (training.max_grad_norm 0), planned again with the same fixed keys:
/// swift-run then updates each unit during the backward and frees its
/// gradient (plan::updatesInBackward). Returned when that fits and is at
/// least 5% faster than `tokensPerSecond` or peaks at least 10% below
/// `peakBytes`, so a report can say what clipping costs.
std::optional<WhatIf> withoutClipping(const ::swift::job::JobSpec &job,
                                      double tokensPerSecond, int64_t peakBytes,
                                      MLIRContext &context,
                                      const PlanningOptions &options);

} // namespace mlir::swift

#endif // SWIFT_PASSES_PIPELINES_H
