//===- PriceJob.h - import a job and price its fixed strategy -*- C++ -*-===//

#ifndef SWIFT_TEST_COST_PRICEJOB_H
#define SWIFT_TEST_COST_PRICEJOB_H

#include "../Job/TestUtil.h"

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Pipelines.h"

#include "mlir/IR/MLIRContext.h"

namespace swift::job::testing {

/// A job's compact view, setup, cluster and fixed strategy, and its price.
struct PricedJob {
  cost::ModelProfile profile;
  cost::TrainingSetup setup;
  cost::Hardware hw;
  cost::Strategy strategy;
  cost::Estimate estimate;
};

/// Loads kBaseJob with `sets` (which must fix every strategy decision),
/// plans it through the strategy phase and prices the strategy the way
/// swift-estimate-cost does.
inline PricedJob priceJob(mlir::MLIRContext &context,
                          const std::vector<std::string> &sets) {
  Diagnostic diag;
  auto job = loadJob(writeTemp(kBaseJob), sets, diag);
  EXPECT_TRUE(job) << diag.str();
  PricedJob p;
  if (!job)
    return p;
  // Through the strategy phase: the search prices the fixed strategy and
  // records the micro-batch and gradient accumulation on the job.
  mlir::swift::PlanningOptions options;
  options.last = mlir::swift::Phase::Strategy;
  mlir::swift::PlannedJob planned = mlir::swift::planJob(*job, context, options);
  EXPECT_EQ(planned.error, "");
  mlir::ModuleOp module = *planned.module;
  mlir::swift::JobOp jobOp;
  mlir::swift::ModelOp model;
  mlir::swift::ClusterOp cluster;
  module->walk([&](mlir::Operation *op) {
    if (auto j = llvm::dyn_cast<mlir::swift::JobOp>(op))
      jobOp = j;
    if (auto m = llvm::dyn_cast<mlir::swift::ModelOp>(op))
      model = m;
    if (auto c = llvm::dyn_cast<mlir::swift::ClusterOp>(op))
      cluster = c;
  });
  std::string missing;
  auto strategy = jobOp.fixedStrategy(missing);
  EXPECT_TRUE(strategy) << missing;
  if (!strategy)
    return p;
  p.strategy = *strategy;
  p.profile = model.profile(jobOp);
  p.setup = jobOp.trainingSetup();
  p.hw = cluster.hardware();
  EXPECT_EQ(cost::unsupportedReason(p.profile, p.setup, p.hw, p.strategy), "");
  p.estimate = cost::estimate(p.profile, p.setup, p.hw, p.strategy);
  return p;
}

} // namespace swift::job::testing

#endif // SWIFT_TEST_COST_PRICEJOB_H
