//===- Materialized.h - the module the emitters read -----------*- C++ -*-===//

#ifndef SWIFT_EMIT_LIB_MATERIALIZED_H
#define SWIFT_EMIT_LIB_MATERIALIZED_H

#include "swift/Dialect/SwiftOps.h"
#include "swift/Plan/Plan.h"

namespace swift::emit {

/// A module after the materialize pipeline: its one job with everything
/// the emitters read.
struct Materialized {
  mlir::swift::JobOp job;
  mlir::swift::ModelOp model;
  mlir::swift::ClusterOp cluster;
  mlir::swift::ScheduleOp schedule;
  cost::Strategy strategy;
  int64_t worldSize = 1;
};

/// Finds them or emits an error saying what is missing.
mlir::FailureOr<Materialized> findMaterialized(mlir::ModuleOp module);

/// findMaterialized() for the emitters of stacks that run a device mesh
/// (torchtitan, Megatron-LM), with strategy.layout read from the job's
/// #swift.strategy (tp, pp, cp, dp_shard, pp_schedule, virtual_stages).
/// JobOp::completeStrategy() refuses a layout the cost model does not
/// price yet (JobOp::unpricedLayout()); these emitters translate any layout
/// the IR verifies, so the rest of the strategy is read from the job with
/// its layout keys set aside (and put back before returning).
mlir::FailureOr<Materialized> findMeshMaterialized(mlir::ModuleOp module);

/// "tp 8 x pp 4 x dp_shard 8 x dp_replicate 2" (degrees above 1; "data
/// parallel only" when none).
std::string describeLayout(const cost::Layout &layout, int64_t world);

/// The shortest text that reads back as `x` ("0.0001", "1e-08", "32").
std::string exactNumber(double x);

/// The job's AdamW settings, lr schedule, clipping and seed into `t`
/// (plan.json's defaults where the job has no #swift.adamw; max_grad_norm
/// stays unset for no clipping).
void readOptimizerSettings(mlir::swift::JobOp job, ::swift::plan::TrainingConfig &t);

} // namespace swift::emit

#endif // SWIFT_EMIT_LIB_MATERIALIZED_H
