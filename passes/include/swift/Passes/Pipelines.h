//===- Pipelines.h - named pass pipelines ---------------------*- C++ -*-===//

#ifndef SWIFT_PASSES_PIPELINES_H
#define SWIFT_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir::swift {

/// The "materialize" phase: turns a job whose strategy is fixed (every key
/// of #swift.strategy set and micro_batch_size known, e.g. after
/// swift-choose-strategy or `--set`) into an explicit `swift.schedule`
/// placed after the job, then verifies it. Runs on the ModuleOp. After it,
/// the emitters (emit/include/swift/Emit/Emit.h) read the schedule.
void buildMaterializePipeline(OpPassManager &pm);

/// Registers `--swift-materialize-pipeline` for swift-opt.
void registerMaterializePipeline();

} // namespace mlir::swift

#endif // SWIFT_PASSES_PIPELINES_H
