//===- swift-plan.cpp - plan a training job -------------------------------===//
//
// swift-plan JOB.yaml [--set KEY=VALUE]... [--json] [--emit mlir] [-o FILE]
//
// Exit codes: 0 success, 2 bad input (one line on stderr saying where and
// why), 1 internal error.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"
#include "swift/Planner/Import.h"
#include "swift/Planner/Job.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;

namespace {
enum class Emit { Summary, MLIR };

cl::OptionCategory category("swift-plan options");
cl::opt<std::string> jobFile(cl::Positional, cl::desc("<job.yaml>"),
                             cl::Required, cl::cat(category));
cl::list<std::string> overrides("set",
                                cl::desc("Override a job key (KEY=VALUE, "
                                         "e.g. strategy.zero=3)"),
                                cl::value_desc("KEY=VALUE"), cl::cat(category));
cl::opt<bool> json("json", cl::desc("Print the report as JSON"),
                   cl::cat(category));
cl::opt<Emit> emit("emit", cl::desc("What to write"), cl::init(Emit::Summary),
                   cl::values(clEnumValN(Emit::Summary, "summary",
                                         "the readable report (default)"),
                              clEnumValN(Emit::MLIR, "mlir",
                                         "the job as swift IR")),
                   cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));

constexpr int kExitBadInput = 2;
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, "swift training planner\n",
                                   &errs()))
    return kExitBadInput;

  swift::planner::Diagnostic diag;
  std::optional<swift::planner::JobSpec> job =
      swift::planner::loadJob(jobFile, overrides, diag);
  if (!job) {
    errs() << diag.str() << "\n";
    return kExitBadInput;
  }

  mlir::MLIRContext context;
  context.loadDialect<mlir::swift::SwiftDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      swift::planner::importJob(*job, context);
  if (failed(mlir::verify(*module))) {
    errs() << "swift-plan: internal error: the imported IR does not verify\n";
    return 1;
  }
  mlir::PassManager pm(&context);
  pm.addPass(mlir::swift::createAnnotateModelPass());
  if (failed(pm.run(*module)))
    return 1;

  std::string error;
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output) {
    errs() << "swift-plan: -o " << outputFile << ": " << error << "\n";
    return kExitBadInput;
  }
  raw_ostream &os = output->os();
  swift::plan::JobFacts facts = swift::plan::readFacts(*module);
  if (emit == Emit::MLIR)
    module->print(os);
  else if (json)
    swift::plan::printJson(os, *job, facts);
  else
    swift::plan::printSummary(os, *job, facts);
  output->keep();
  return 0;
}
