//===- swift-plan.cpp - plan a training job -------------------------------===//
//
// swift-plan JOB.yaml [--set KEY=VALUE]... [--json] [--explain]
//            [--emit summary|mlir|plan|deepspeed|launch] [-o FILE]
//            [--dump-phases-to DIR] [--compile-to PHASE]
//
// The job goes through named phases, each a pass pipeline over the swift IR:
//   import    the job file as IR (cluster, model ops, job)
//   annotate  parameters and tokens per step
//   strategy  search; the chosen (or closest) strategy fixed in the job
//   estimate  memory and time of that strategy, per op and per GPU
//   schedule  the strategy made explicit: units, buckets, collectives with
//             stream and prefetch position, offload copies, optimizer
//             placement (swift.schedule), verified
// --dump-phases-to writes the IR after each phase; --compile-to stops there.
//
// Exit codes: 0 planned, 3 nothing fits (with what would), 2 bad input (one
// line on stderr saying where and why), 1 internal error.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include "swift/Dialect/SwiftOps.h"
#include "swift/Passes/Passes.h"
#include "swift/Passes/Pipelines.h"
#include "swift/Emit/Emit.h"
#include "swift/Passes/Import.h"
#include "swift/Job/Job.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;

namespace {
enum class Emit { Summary, MLIR, Plan, DeepSpeed, Launch };

const char *const kPhases[] = {"import", "annotate", "strategy", "estimate",
                               "schedule"};

cl::OptionCategory category("swift-plan options");
cl::opt<std::string> jobFile(cl::Positional, cl::desc("<job.yaml>"),
                             cl::Required, cl::cat(category));
cl::list<std::string> overrides("set",
                                cl::desc("Override a job key (KEY=VALUE, "
                                         "e.g. strategy.zero=3)"),
                                cl::value_desc("KEY=VALUE"), cl::cat(category));
cl::opt<bool> jsonReport("json", cl::desc("Print the report as JSON"),
                   cl::cat(category));
cl::opt<bool> explain("explain",
                      cl::desc("Add per-phase and per-layer memory and the "
                               "cost of each op of a decoder layer"),
                      cl::cat(category));
cl::opt<Emit> emit("emit", cl::desc("What to write"), cl::init(Emit::Summary),
                   cl::values(clEnumValN(Emit::Summary, "summary",
                                         "the readable report (default)"),
                              clEnumValN(Emit::MLIR, "mlir",
                                         "the IR after the last phase run"),
                              clEnumValN(Emit::Plan, "plan",
                                         "plan.json for swift-run"),
                              clEnumValN(Emit::DeepSpeed, "deepspeed",
                                         "ds_config.json for DeepSpeed"),
                              clEnumValN(Emit::Launch, "launch",
                                         "torchrun / swift-run command lines")),
                   cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
cl::opt<std::string> dumpDir("dump-phases-to",
                             cl::desc("Write the IR after each phase to "
                                      "DIR/NN-<phase>.mlir"),
                             cl::value_desc("DIR"), cl::cat(category));
cl::opt<std::string> compileTo(
    "compile-to",
    cl::desc("Stop after this phase: import, annotate, strategy, estimate, "
             "schedule"),
    cl::value_desc("phase"), cl::init("schedule"), cl::cat(category));
cl::opt<double> memoryMargin(
    "memory-margin",
    cl::desc("Fraction of GPU memory kept free for allocator fragmentation "
             "(default 0.10)"),
    cl::init(0.10), cl::cat(category));
cl::opt<bool> noSuggestions("no-suggestions",
                            cl::desc("When nothing fits, do not search for "
                                     "changes that would"),
                            cl::Hidden, cl::cat(category));

constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitNothingFits = 3;

/// The outcome of planning one job spec.
struct Planned {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  swift::report::JobFacts facts;
  std::string error; // a pass's complaint about the job (bad input)
  bool internal = false;
};

int phaseIndex(StringRef name) {
  for (int i = 0; i < int(std::size(kPhases)); ++i)
    if (name == kPhases[i])
      return i;
  return -1;
}

void addPhase(mlir::PassManager &pm, int phase) {
  switch (phase) {
  case 1:
    pm.addPass(mlir::swift::createAnnotateModelPass());
    break;
  case 2: {
    mlir::swift::ChooseStrategyPassOptions options;
    options.memoryMargin = memoryMargin;
    pm.addPass(mlir::swift::createChooseStrategyPass(options));
    break;
  }
  case 3:
    pm.addPass(mlir::swift::createEstimateCostPass());
    break;
  case 4:
    mlir::swift::buildMaterializePipeline(pm);
    break;
  }
}

/// Runs the phases up to `last` on `spec`, dumping each to `dumps` if set.
Planned plan(const swift::job::JobSpec &spec, mlir::MLIRContext &context,
             int last, StringRef dumps) {
  Planned out;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diagnostics += d.str();
    return mlir::success();
  });
  out.module = mlir::swift::importJob(spec, context);
  if (failed(mlir::verify(*out.module))) {
    out.internal = true;
    out.error = "the imported IR does not verify: " + diagnostics;
    return out;
  }
  for (int phase = 0; phase <= last; ++phase) {
    if (phase > 0) {
      mlir::PassManager pm(&context);
      addPhase(pm, phase);
      if (failed(pm.run(*out.module))) {
        out.error = diagnostics;
        return out;
      }
    }
    if (!dumps.empty()) {
      SmallString<128> path(dumps);
      sys::path::append(path, (phase < 9 ? "0" : "") + std::to_string(phase + 1) +
                                  "-" + kPhases[phase] + ".mlir");
      std::error_code ec;
      raw_fd_ostream file(path, ec);
      if (ec) {
        out.error = "--dump-phases-to: cannot write " + path.str().str() + ": " +
                    ec.message();
        return out;
      }
      out.module->print(file);
    }
  }
  out.facts = swift::report::readFacts(*out.module);
  return out;
}

/// Changes a user can make when nothing fits, each planned for real.
std::vector<swift::report::Suggestion>
suggest(const swift::job::JobSpec &job, mlir::MLIRContext &context) {
  using swift::job::JobSpec;
  std::vector<std::pair<std::string, JobSpec>> tries;
  // More GPUs: fill the node, then double nodes, keeping the global batch.
  for (int64_t gpus = job.cluster.numGpus() * 2;
       gpus <= std::max<int64_t>(job.cluster.numGpus() * 16, 8); gpus *= 2) {
    JobSpec more = job;
    more.cluster.gpusPerNode = std::min<int64_t>(gpus, std::max<int64_t>(8, job.cluster.gpusPerNode));
    more.cluster.nodes = (gpus + more.cluster.gpusPerNode - 1) / more.cluster.gpusPerNode;
    if (job.training.globalBatchSize % more.cluster.numGpus() != 0)
      continue;
    tries.push_back({std::to_string(more.cluster.numGpus()) + " GPUs (" +
                         std::to_string(more.cluster.nodes) + " node" +
                         (more.cluster.nodes > 1 ? "s" : "") + " x " +
                         std::to_string(more.cluster.gpusPerNode) + ")",
                     more});
  }
  if (job.strategy.offload || job.strategy.zero || job.strategy.checkpointing ||
      job.training.microBatchSize) {
    JobSpec open = job;
    open.strategy = {};
    open.training.microBatchSize.reset();
    tries.push_back({"let swift-plan choose zero, offload, checkpointing and the "
                     "micro-batch",
                     open});
  }
  if (job.training.method == swift::plan::Method::Full) {
    for (swift::plan::Method method :
         {swift::plan::Method::Lora, swift::plan::Method::QLora}) {
      JobSpec adapters = job;
      adapters.training.method = method;
      adapters.strategy = {};
      adapters.training.microBatchSize.reset();
      if (adapters.backend == swift::plan::Backend::SwiftRun)
        adapters.backend = swift::plan::Backend::HF;
      tries.push_back({std::string("training.method ") +
                           swift::plan::toString(method) +
                           (job.backend == swift::plan::Backend::SwiftRun
                                ? " (backend hf)"
                                : ""),
                       adapters});
    }
  }
  for (int64_t seq = job.training.sequenceLength / 2; seq >= 512; seq /= 2) {
    JobSpec shorter = job;
    shorter.training.sequenceLength = seq;
    tries.push_back({"sequence_length " + std::to_string(seq), shorter});
  }

  std::vector<swift::report::Suggestion> found;
  bool gpusFound = false, seqFound = false;
  for (auto &[change, spec] : tries) {
    bool isGpus = change.find(" GPUs (") != std::string::npos;
    bool isSeq = change.rfind("sequence_length", 0) == 0;
    if ((isGpus && gpusFound) || (isSeq && seqFound))
      continue; // the smallest change of each kind is enough
    Planned p = plan(spec, context, /*last=*/3, "");
    if (!p.error.empty() || !p.facts.fits || !p.facts.chosen || !p.facts.estimate)
      continue;
    found.push_back({change, p.facts.chosen->text, p.facts.estimate->peakBytes,
                     p.facts.estimate->tokensPerSecond});
    gpusFound |= isGpus;
    seqFound |= isSeq;
  }
  return found;
}

/// The job with the strategy keys it fixes (zero, offload, checkpointing,
/// micro-batch) left to swift-plan, planned again: returned when that fits
/// and is at least 5% faster than `pinned` (tokens/s), so the report can say
/// what the fixed keys cost. Nothing when the job fixes none.
std::optional<swift::report::Suggestion>
fasterIfOpen(const swift::job::JobSpec &job, double pinned,
             mlir::MLIRContext &context) {
  std::vector<std::string> fixed;
  if (job.strategy.zero)
    fixed.push_back("zero");
  if (job.strategy.offload)
    fixed.push_back("offload");
  if (job.strategy.checkpointing || job.strategy.checkpointLayers)
    fixed.push_back("checkpointing");
  if (job.training.microBatchSize)
    fixed.push_back("the micro-batch");
  if (fixed.empty() || pinned <= 0)
    return std::nullopt;
  swift::job::JobSpec open = job;
  open.strategy.zero.reset();
  open.strategy.offload.reset();
  open.strategy.checkpointing.reset();
  open.strategy.checkpointLayers.reset();
  open.training.microBatchSize.reset();
  Planned p = plan(open, context, /*last=*/3, "");
  if (!p.error.empty() || !p.facts.fits || !p.facts.chosen ||
      !p.facts.estimate || p.facts.estimate->tokensPerSecond < 1.05 * pinned)
    return std::nullopt;
  std::string change = "with " + fixed[0];
  for (size_t i = 1; i < fixed.size(); ++i)
    change += (i + 1 == fixed.size() ? " and " : ", ") + fixed[i];
  change += " left to swift-plan";
  return swift::report::Suggestion{change, p.facts.chosen->text,
                                 p.facts.estimate->peakBytes,
                                 p.facts.estimate->tokensPerSecond};
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, "swift training planner\n",
                                   &errs()))
    return kExitBadInput;
  int last = phaseIndex(compileTo);
  if (last < 0) {
    errs() << "swift-plan: --compile-to " << compileTo
           << ": unknown phase; use import, annotate, strategy, estimate or "
              "schedule\n";
    return kExitBadInput;
  }
  if (!(memoryMargin >= 0 && memoryMargin < 1)) {
    errs() << "swift-plan: --memory-margin must be in [0, 1)\n";
    return kExitBadInput;
  }

  swift::job::Diagnostic diag;
  std::optional<swift::job::JobSpec> job =
      swift::job::loadJob(jobFile, overrides, diag);
  if (!job) {
    errs() << diag.str() << "\n";
    return kExitBadInput;
  }
  if (!dumpDir.empty()) {
    if (std::error_code ec = sys::fs::create_directories(dumpDir)) {
      errs() << "swift-plan: --dump-phases-to " << dumpDir << ": "
             << ec.message() << "\n";
      return kExitBadInput;
    }
  }

  mlir::MLIRContext context;
  context.loadDialect<mlir::swift::SwiftDialect>();
  Planned planned = plan(*job, context, last, dumpDir);
  if (!planned.error.empty()) {
    errs() << job->path << ": error: " << planned.error << "\n";
    return planned.internal ? kExitInternal : kExitBadInput;
  }
  bool nothingFits = last >= 2 && !planned.facts.fits;
  if (nothingFits && !noSuggestions)
    planned.facts.suggestions = suggest(*job, context);
  if (emit == Emit::Summary && !nothingFits && last >= 3 &&
      planned.facts.estimate)
    planned.facts.fasterIfOpen = fasterIfOpen(
        *job, planned.facts.estimate->tokensPerSecond, context);
  bool artifact = emit == Emit::Plan || emit == Emit::DeepSpeed || emit == Emit::Launch;
  if (artifact && last < 4) {
    errs() << "swift-plan: --emit plan/deepspeed/launch need the schedule "
              "phase; drop --compile-to\n";
    return kExitBadInput;
  }
  if (artifact && nothingFits) {
    errs() << job->path << ": error: nothing fits, so there is no plan to "
           << "emit; run without --emit to see what would fit\n";
    return kExitNothingFits;
  }

  std::string error;
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output) {
    errs() << "swift-plan: -o " << outputFile << ": " << error << "\n";
    return kExitBadInput;
  }
  raw_ostream &os = output->os();
  std::string emitError;
  mlir::ScopedDiagnosticHandler emitDiagnostics(&context, [&](mlir::Diagnostic &d) {
    emitError += d.str();
    return mlir::success();
  });
  if (emit == Emit::MLIR) {
    planned.module->print(os);
  } else if (emit == Emit::Plan) {
    (void)swift::emit::emitPlan(*planned.module, os);
  } else if (emit == Emit::DeepSpeed) {
    (void)swift::emit::emitDeepSpeedConfig(*planned.module, os);
  } else if (emit == Emit::Launch) {
    swift::emit::LaunchOptions options;
    if (outputFile != "-")
      options.planPath = outputFile;
    (void)swift::emit::emitLaunch(*planned.module, os, options);
  } else if (jsonReport)
    swift::report::printJson(os, *job, planned.facts);
  else
    swift::report::printReport(os, *job, planned.facts, *planned.module, explain);
  if (!emitError.empty()) {
    errs() << job->path << ": error: " << emitError << "\n";
    return kExitBadInput;
  }
  output->keep();
  return nothingFits ? kExitNothingFits : 0;
}
