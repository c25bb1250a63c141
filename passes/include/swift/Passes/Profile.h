//===- Profile.h - the cost model's compact view of the IR ------*- C++ -*-===//

#ifndef SWIFT_PASSES_PROFILE_H
#define SWIFT_PASSES_PROFILE_H

#include "swift/Dialect/SwiftOps.h"
#include "swift/Cost/Cost.h"

namespace mlir::swift {

/// Reads every op of `model` through CostOpInterface into a ModelProfile:
/// the ops before, inside and after the (single) decoder-layer repeat, with
/// FLOPs, saved tensors, and parameters. `job` decides which linears carry
/// LoRA adapters.
::swift::cost::ModelProfile buildModelProfile(ModelOp model, JobOp job);

/// The job's fixed setup (backend, precision, method) in cost-model terms.
::swift::cost::TrainingSetup trainingSetup(JobOp job);

/// The cluster in cost-model terms.
::swift::cost::Hardware hardware(ClusterOp cluster);

/// The job's strategy when every decision is made; otherwise nullopt with
/// `missing` naming the open ones ("zero, micro_batch_size").
std::optional<::swift::cost::Strategy>
fixedStrategy(JobOp job, int64_t worldSize, std::string &missing);

} // namespace mlir::swift

#endif // SWIFT_PASSES_PROFILE_H
