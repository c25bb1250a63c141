//===- Report.h - what swift-plan prints ------------------------*- C++ -*-===//

#ifndef SWIFT_TOOLS_SWIFT_PLAN_REPORT_H
#define SWIFT_TOOLS_SWIFT_PLAN_REPORT_H

#include "swift/Planner/Job.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace swift::plan {

/// Facts about the job read back from the annotated IR (the IR is the
/// source of every number printed).
struct JobFacts {
  int64_t parameters = 0;
  int64_t trainableParameters = 0;
  int64_t tokensPerStep = 0;
};

JobFacts readFacts(mlir::ModuleOp module);

/// The readable summary: model shape, size, tokens per step, cluster.
void printSummary(llvm::raw_ostream &os, const planner::JobSpec &job,
                  const JobFacts &facts);

/// The same as one JSON object (DESIGN.md's keys).
void printJson(llvm::raw_ostream &os, const planner::JobSpec &job,
               const JobFacts &facts);

} // namespace swift::plan

#endif // SWIFT_TOOLS_SWIFT_PLAN_REPORT_H
