//===- Profile.h - the cost model's compact view of the IR ------*- C++ -*-===//

#ifndef SWIFT_PASSES_PROFILE_H
#define SWIFT_PASSES_PROFILE_H

#include "swift/Dialect/SwiftOps.h"
#include "swift/Cost/Cost.h"
#include "swift/Plan/Plan.h"

namespace mlir::swift {

/// Reads every op of `model` through CostOpInterface into a ModelProfile:
/// the ops before, inside and after the (single) decoder-layer repeat, with
/// FLOPs, saved tensors, and parameters. `job` decides which linears carry
/// LoRA adapters.
::swift::cost::ModelProfile buildModelProfile(ModelOp model, JobOp job);

/// plan.json's model section as `model`'s ops spell it: the embedding
/// table's and the projections' shapes, the attention and rotary
/// attributes, which optional parameters exist (a model without an lm_head
/// linear ties it to the embedding table), the layers of its repeats.
/// `mlpBias`, when given, is set to whether the MLP has biases, which
/// plan.json cannot express.
::swift::plan::ModelConfig modelConfig(ModelOp model, bool *mlpBias = nullptr);

/// The job's fixed setup (backend, precision, method) in cost-model terms.
::swift::cost::TrainingSetup trainingSetup(JobOp job);

/// The cluster in cost-model terms.
::swift::cost::Hardware hardware(ClusterOp cluster);

/// The job's strategy when every decision is made; otherwise nullopt with
/// `missing` naming the open ones ("strategy.zero,
/// training.micro_batch_size"); the micro-batch and gradient accumulation
/// are the job's (swift-choose-strategy records both).
std::optional<::swift::cost::Strategy>
fixedStrategy(JobOp job, std::string &missing);

} // namespace mlir::swift

#endif // SWIFT_PASSES_PROFILE_H
