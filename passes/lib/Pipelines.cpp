//===- Pipelines.cpp - named pass pipelines -------------------------------===//

#include "swift/Passes/Pipelines.h"
#include "swift/Passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"

void mlir::swift::buildMaterializePipeline(OpPassManager &pm) {
  // Units first: every later decision is per unit (embedding, layer, head).
  pm.addPass(createMaterializeUnitsPass());
  // Buckets and programs: the ZeRO stage's collectives, in the runtime's
  // derived order, so plan.json's explicit schedule equals the derived one.
  pm.addPass(createMaterializeCollectivesPass());
  // The optimizer step before offload: the parameter copy-back of optimizer
  // offload is placed relative to it.
  pm.addPass(createPlaceOptimizerPass());
  pm.addPass(createMaterializeOffloadPass());
  // Last: the whole schedule against the job, so emitters can trust it.
  pm.addPass(createVerifySchedulePass());
}

void mlir::swift::registerMaterializePipeline() {
  PassPipelineRegistration<>(
      "swift-materialize-pipeline",
      "Spell the job's fixed strategy out as a verified swift.schedule",
      buildMaterializePipeline);
}
