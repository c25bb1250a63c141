//===- swift-opt.cpp - mlir-opt for the swift dialect ---------------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"
#include "swift/Passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::swift::registerSwiftPasses();
  mlir::swift::registerMaterializePipeline();
  mlir::DialectRegistry registry;
  registry.insert<mlir::swift::SwiftDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "swift optimizer driver\n", registry));
}
