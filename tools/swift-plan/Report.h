//===- Report.h - what swift-plan prints ------------------------*- C++ -*-===//
//
// Everything printed about the plan is read from the job's typed attributes
// (#swift.decision, #swift.estimate, #swift.counts, per-op
// `swift.cost` #swift.op_cost) and from what re-planning found, so the report and an IR
// dump never disagree; the job file is echoed from its JobSpec.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_TOOLS_SWIFT_PLAN_REPORT_H
#define SWIFT_TOOLS_SWIFT_PLAN_REPORT_H

#include "swift/Data/DatasetStats.h"
#include "swift/Job/Job.h"
#include "swift/Passes/Pipelines.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <vector>

namespace swift::report {

/// What re-planning changed copies of the job found.
struct Replanned {
  std::vector<mlir::swift::WhatIf> changesThatFit; // when nothing fits
  std::optional<mlir::swift::WhatIf> fasterIfOpen;
  std::optional<mlir::swift::WhatIf> fasterWithFp8;
  std::optional<mlir::swift::WhatIf> withoutClipping;
  std::optional<mlir::swift::WhatIf> fasterOnStack;
};

/// swift-plan --data: what the dataset becomes, and the run's length.
struct DataPlan {
  data::DatasetStats stats;
  double epochs = 1;
};
/// The steps of `epochs` epochs of the data (ceil(E x windows / global
/// batch), as swift-run --epochs counts them).
int64_t stepsOf(const DataPlan &d, int64_t globalBatchSize);

/// The readable report: the job, then (when planned) the strategy, memory,
/// time, alternatives, the data (with --data: samples, windows, steps and
/// time per epoch and for the run); `explain` adds per-phase and per-layer
/// memory and the work and memory of each op of one decoder layer.
void printReport(llvm::raw_ostream &os, const job::JobSpec &spec,
                 mlir::swift::JobOp job, const Replanned &replanned,
                 bool explain, const DataPlan *data = nullptr);

/// One line for the strategy the job's decision holds (the closest one when
/// nothing fits): its decisions, peak per GPU against what is usable, and
/// its predicted tokens/s, or, when it does not fit, the host memory it
/// needs where that is what is short.
std::string pricedSummary(mlir::swift::JobOp job);

/// The same as one JSON object (docs/design.md, "swift-plan"). Prints
/// nothing and returns false, with `error` set, when the object would not be
/// valid JSON (an estimate that is NaN or infinite): --json never prints
/// `nan` or `inf`.
bool printJson(llvm::raw_ostream &os, const job::JobSpec &spec,
               mlir::swift::JobOp job, const Replanned &replanned,
               std::string &error, const DataPlan *data = nullptr);

/// swift-plan --html FILE: the report as one self-contained page with its
/// charts (HtmlReport.cpp). Returns "" when written, else why not.
std::string writeHtml(const std::string &path, const job::JobSpec &spec,
                      mlir::swift::JobOp job, const Replanned &replanned,
                      const DataPlan *data = nullptr);

} // namespace swift::report

#endif // SWIFT_TOOLS_SWIFT_PLAN_REPORT_H
