//===- Report.h - what swift-plan prints ------------------------*- C++ -*-===//
//
// Everything printed is read back from the IR the passes annotated
// (`swift.parameters`, `swift.decision`, `swift.estimate`, per-op
// `swift.cost`), so the report and an IR dump never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_TOOLS_SWIFT_PLAN_REPORT_H
#define SWIFT_TOOLS_SWIFT_PLAN_REPORT_H

#include "swift/Job/Job.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace swift::report {

/// One priced strategy as the decision records it.
struct StrategyFacts {
  std::string text; // "zero 3, offload none, ..."
  int64_t zero = 0;
  std::string offload, checkpointing;
  int64_t checkpointLayers = -1;
  int64_t microBatchSize = 0, gradientAccumulation = 0;
  bool fits = false;
  int64_t peakBytes = 0;
  double stepSeconds = 0, tokensPerSecond = 0;
  std::string verdict;
};

struct EstimateFacts {
  int64_t peakBytes = 0, capacityBytes = 0, hostBytes = 0;
  std::string peakPhase, peakOp;
  int64_t peakLayer = -1;
  std::vector<std::pair<std::string, int64_t>> breakdown;
  int64_t forwardPeakBytes = 0, backwardPeakBytes = 0, optimizerPeakBytes = 0;
  int64_t layerActivationBytes = 0, checkpointedLayerBytes = 0,
          headActivationBytes = 0;
  double stepSeconds = 0, computeSeconds = 0, recomputeSeconds = 0,
         communicationSeconds = 0, exposedCommunicationSeconds = 0,
         offloadSeconds = 0, optimizerSeconds = 0, tokensPerSecond = 0, mfu = 0;
};

/// A change to the job that would make it fit, found by planning again.
struct Suggestion {
  std::string change;   // "16 GPUs (2 nodes x 8)"
  std::string strategy; // what the planner would then choose
  int64_t peakBytes = 0;
  double tokensPerSecond = 0;
};

/// Facts about the job read back from the annotated IR.
struct JobFacts {
  int64_t parameters = 0;
  int64_t trainableParameters = 0;
  int64_t tokensPerStep = 0;
  // From swift-choose-strategy.
  bool decided = false;
  bool fits = false;
  int64_t usableBytes = 0;
  double memoryMargin = 0;
  int64_t evaluated = 0, considered = 0;
  std::optional<StrategyFacts> chosen; // the chosen, or the closest
  std::vector<StrategyFacts> alternatives;
  int64_t shortfallBytes = 0;
  int64_t bucketBytes = 0, prefetchDepth = 0;
  // From swift-estimate-cost.
  std::optional<EstimateFacts> estimate;
  std::vector<Suggestion> suggestions;
  // The strategy keys the job fixes left to swift-plan, when that fits and
  // runs at least 5% faster (planned again: see swift-plan.cpp).
  std::optional<Suggestion> fasterIfOpen;
};

JobFacts readFacts(mlir::ModuleOp module);

/// The readable report: the job, then (when planned) the strategy, memory,
/// time, alternatives; `explain` adds per-phase and per-layer memory and
/// the work and memory of each op of one decoder layer.
void printReport(llvm::raw_ostream &os, const job::JobSpec &job,
                 const JobFacts &facts, mlir::ModuleOp module, bool explain);

/// The same as one JSON object (the keys in docs/design.md, "swift-plan").
void printJson(llvm::raw_ostream &os, const job::JobSpec &job,
               const JobFacts &facts);

} // namespace swift::report

#endif // SWIFT_TOOLS_SWIFT_PLAN_REPORT_H
