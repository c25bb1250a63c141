//===- swift-opt.cpp - mlir-opt for the swift dialect ---------------------===//
//
// mlir-opt's driver with the swift dialect and passes, and two differences
// for hostile input: a failure (parse, verify, pass) exits 2 as the other
// tools' bad input does, and input nested deeper than the parser's stack
// allows is refused before parsing instead of overflowing it.
//
//===----------------------------------------------------------------------===//

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"
#include "swift/Passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace {

/// MLIR's parser recurses once per nested region, list or type: 6000
/// nested modules overflowed an 8 MiB stack, 3000 did not. The project's
/// IR nests a few levels.
constexpr int kMaxNesting = 512;

/// The deepest bracket nesting of MLIR text ({ ( [ <), outside string
/// literals and // comments; a '>' without its '<' (an arrow) counts
/// nothing.
int nestingDepth(llvm::StringRef text) {
  int depth = 0, deepest = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') { // a string literal, with escapes
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        ++i;
    } else if (c == '{' || c == '(' || c == '[' || c == '<') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ')' || c == ']' || c == '>') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

} // namespace

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::swift::registerSwiftPasses();
  mlir::swift::registerMaterializePipeline();
  mlir::DialectRegistry registry;
  registry.insert<mlir::swift::SwiftDialect, mlir::func::FuncDialect>();
  auto [inputName, outputName] = mlir::registerAndParseCLIOptions(
      argc, argv, "swift optimizer driver\n", registry);
  const mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) // lists them; reads no input
    return mlir::failed(mlir::MlirOptMain(argc, argv, inputName, outputName,
                                          registry))
               ? 2
               : 0;
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputName, &error);
  if (!input) {
    llvm::errs() << "swift-opt: " << error << "\n";
    return 2;
  }
  const int depth = nestingDepth(input->getBuffer());
  if (depth > kMaxNesting) {
    llvm::errs() << "swift-opt: " << inputName << ": brackets nest " << depth
                 << " levels deep; swift-opt reads at most " << kMaxNesting
                 << "\n";
    return 2;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputName, &error);
  if (!output) {
    llvm::errs() << "swift-opt: " << error << "\n";
    return 2;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 2;
  output->keep();
  return 0;
}
