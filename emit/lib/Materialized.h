//===- Materialized.h - the module the emitters read -----------*- C++ -*-===//

#ifndef SWIFT_PLANNER_LIB_EMIT_MATERIALIZED_H
#define SWIFT_PLANNER_LIB_EMIT_MATERIALIZED_H

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Profile.h"

namespace swift::emit {

/// A module after the materialize pipeline: its one job with everything
/// the emitters read.
struct Materialized {
  mlir::swift::JobOp job;
  mlir::swift::ClusterOp cluster;
  mlir::swift::ScheduleOp schedule;
  cost::Strategy strategy;
  int64_t worldSize = 1;
};

/// Finds them or emits an error saying what is missing.
mlir::FailureOr<Materialized> findMaterialized(mlir::ModuleOp module);

} // namespace swift::emit

#endif // SWIFT_PLANNER_LIB_EMIT_MATERIALIZED_H
