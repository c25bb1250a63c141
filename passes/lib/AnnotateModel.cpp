//===- AnnotateModel.cpp - model size and tokens per step on the job ------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"

namespace mlir::swift {
#define GEN_PASS_DEF_ANNOTATEMODELPASS
#include "swift/Passes/Passes.h.inc"
} // namespace mlir::swift

using namespace mlir;
using namespace mlir::swift;

namespace {
struct AnnotateModelPass
    : mlir::swift::impl::AnnotateModelPassBase<AnnotateModelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    bool failedAny = false;
    module.walk([&](JobOp job) {
      auto model = symbols.lookup<ModelOp>(job.getModel());
      if (!model) {
        job.emitOpError("model '") << job.getModel() << "' not found";
        failedAny = true;
        return;
      }
      int64_t all = model.getNumParameters();
      int64_t trainable = model.getNumTrainableParameters(
          job.getMethod(), job.getLoraAttr());
      numParameters = all;
      numTrainable = trainable;
      job.setCountsAttr(CountsAttr::get(job.getContext(), all, trainable,
                                        job.getTokensPerStep()));
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
