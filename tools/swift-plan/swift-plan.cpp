//===- swift-plan.cpp - plan a training job -------------------------------===//
//
// swift-plan JOB.yaml [--set KEY=VALUE]... [--json] [--explain] [--html FILE]
//            [--emit summary|mlir|plan|deepspeed|ms-swift|torchtitan|megatron|launch]
//            [-o FILE]
//            [--plan-file FILE] [--ds-config FILE]
//            [--dump-phases-to DIR] [--compile-to PHASE]
//
// The job goes through the phases of swift/Passes/Pipelines.h (import,
// annotate, strategy, estimate, schedule); --dump-phases-to writes the IR
// after each phase, --compile-to stops there. This file parses flags and
// prints; planning and re-planning are the passes library's.
//
// An artifact for another stack is priced on that stack: --emit plan under
// backend swift-run, --emit deepspeed and --emit ms-swift (HF Trainer +
// DeepSpeed) under backend deepspeed, whatever the job's backend; the
// strategy is chosen again there, within what the stack can express, and
// a note on stderr names the backend priced when it is not the job's.
// --emit torchtitan and --emit megatron are priced, until the cost model
// has backends of their own (issue 32), on the backend that runs the same
// data-parallel stack: hf (FSDP2, as torchtitan) and deepspeed (ZeRO 0-3,
// as Megatron's DDP, distributed optimizer and Megatron-FSDP; without
// offload).
//
// Exit codes: 0 planned, 3 nothing fits (with what would), 2 bad input (one
// line on stderr saying where and why), 1 internal error.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include "swift/Dialect/SwiftOps.h"
#include "swift/Emit/Emit.h"
#include "swift/Data/DatasetStats.h"
#include "swift/Job/Job.h"
#include "swift/Passes/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

#include <unistd.h>

#include <iostream>

using namespace llvm;

namespace {
enum class Emit {
  Summary,
  MLIR,
  Plan,
  DeepSpeed,
  MsSwift,
  Torchtitan,
  Megatron,
  Launch
};

cl::OptionCategory category("swift-plan options");
cl::opt<std::string> jobFile(cl::Positional, cl::desc("<job.yaml>"),
                             cl::Required, cl::cat(category));
cl::list<std::string> overrides("set",
                                cl::desc("Override a job key (KEY=VALUE, "
                                         "e.g. strategy.zero=3)"),
                                cl::value_desc("KEY=VALUE"), cl::cat(category));
cl::opt<bool> jsonReport("json", cl::desc("Print the report as JSON"),
                   cl::cat(category));
cl::opt<std::string> htmlFile(
    "html",
    cl::desc("Also write the report as one self-contained HTML page with its "
             "charts (memory of every strategy priced, memory over a step, "
             "time) to FILE"),
    cl::value_desc("FILE"), cl::init(""));
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
                                         "ds_config.json for DeepSpeed under "
                                         "the HF Trainer (its launch line "
                                         "on stderr)"),
                              clEnumValN(Emit::MsSwift, "ms-swift",
                                         "the `swift sft` command line for "
                                         "ms-swift"),
                              clEnumValN(Emit::Torchtitan, "torchtitan",
                                         "torchtitan's job TOML (v0.2.2), "
                                         "its torchrun line in comments"),
                              clEnumValN(Emit::Megatron, "megatron",
                                         "Megatron-LM's pretrain_gpt.py "
                                         "command line (core_v0.15.3)"),
                              clEnumValN(Emit::Launch, "launch",
                                         "torchrun / swift-run command lines")),
                   cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
cl::opt<std::string> planFile(
    "plan-file",
    cl::desc("The plan file the --emit launch commands run (default "
             "plan.json; write it with --emit plan -o FILE)"),
    cl::value_desc("file"), cl::init("plan.json"), cl::cat(category));
cl::opt<std::string> dsConfigFile(
    "ds-config",
    cl::desc("The ds_config.json the DeepSpeed and ms-swift command lines "
             "name (default: -o's file with --emit deepspeed, else "
             "ds_config.json)"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
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
    cl::desc("Fraction of GPU memory kept free for allocator fragmentation, "
             "and of host memory (default 0.10)"),
    cl::init(0.10), cl::cat(category));
cl::opt<std::string> dataFile(
    "data",
    cl::desc("A JSONL dataset (any format swift-run --data takes): report "
             "its samples, windows, steps and time per epoch and for the "
             "run, tokenizing it once through swift-run's token cache"),
    cl::value_desc("FILE.jsonl"), cl::cat(category));
cl::opt<double> epochs("epochs",
                       cl::desc("With --data: the run's epochs (default 1)"),
                       cl::init(1.0), cl::cat(category));
cl::opt<std::string> tokenizerDir(
    "tokenizer",
    cl::desc("With --data: the tokenizer files of text data (default: the "
             "job's model directory)"),
    cl::value_desc("DIR"), cl::cat(category));
cl::opt<std::string> chatTemplate(
    "chat-template",
    cl::desc("With --data: the chat template instead of the tokenizer's"),
    cl::value_desc("FILE"), cl::cat(category));
cl::opt<std::string> dataCache(
    "data-cache",
    cl::desc("With --data: the token cache (default $SWIFT_CACHE_DIR, else "
             "~/.cache/swift, as swift-run's); off: none"),
    cl::value_desc("DIR"), cl::cat(category));
cl::opt<bool> noSuggestions("no-suggestions",
                            cl::desc("When nothing fits, do not search for "
                                     "changes that would"),
                            cl::Hidden, cl::cat(category));

/// The backend an artifact runs on, which prices it; nullopt: the job's.
std::optional<swift::plan::Backend> artifactBackend(Emit e) {
  switch (e) {
  case Emit::Plan:
    return swift::plan::Backend::SwiftRun;
  case Emit::DeepSpeed:
  case Emit::MsSwift: // the HF Trainer with a ds_config
    return swift::plan::Backend::DeepSpeed;
  case Emit::Torchtitan:
    return swift::plan::Backend::Torchtitan;
  case Emit::Megatron:
    return swift::plan::Backend::Megatron;
  default:
    return std::nullopt;
  }
}

/// The spelling of `e` on the command line: the --emit option's own table.
std::string emitName(Emit e) {
  const auto &values = emit.getParser();
  for (unsigned i = 0; i < values.getNumOptions(); ++i)
    if (static_cast<const cl::OptionValue<Emit> &>(values.getOptionValue(i))
            .getValue() == e)
      return values.getOption(i).str();
  return "summary";
}

constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitNothingFits = 3;

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, "swift training planner\n",
                                   &errs()))
    return kExitBadInput;
  std::optional<mlir::swift::Phase> last = mlir::swift::parsePhase(compileTo);
  if (!last) {
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
  for (const swift::job::Diagnostic &warning : job->warnings)
    errs() << warning.str() << "\n";
  if (!dumpDir.empty()) {
    if (std::error_code ec = sys::fs::create_directories(dumpDir)) {
      errs() << "swift-plan: --dump-phases-to " << dumpDir << ": "
             << ec.message() << "\n";
      return kExitBadInput;
    }
  }

  mlir::MLIRContext context;
  context.loadDialect<mlir::swift::SwiftDialect>();
  mlir::swift::PlanningOptions options;
  options.memoryMargin = memoryMargin;
  options.last = *last;
  options.dumpDir = dumpDir;
  // An artifact for another stack is priced and chosen on that stack.
  swift::job::JobSpec priced = *job;
  std::optional<swift::plan::Backend> target = artifactBackend(emit);
  const bool repriced = target && *target != job->backend;
  if (repriced) {
    priced.backend = *target;
    priced.origins["backend"] = swift::job::Diagnostic{
        std::string("--emit ") + emitName(emit)};
  }
  const std::string backendName = swift::plan::toString(priced.backend);
  // The stack an artifact is for may not train the job's precision (FP8
  // runs in swift-run only) though the job's own backend does.
  if (std::string why = swift::job::unsupportedPrecision(priced);
      repriced && !why.empty()) {
    errs() << swift::job::diagnoseJob(priced, why).str()
           << " (the job's own backend, "
           << swift::plan::toString(job->backend) << ", can run it)\n";
    return kExitNothingFits;
  }
  // Stacks that train every weight: an adapter job is wrong input for them.
  if (emit == Emit::Torchtitan || emit == Emit::Megatron) {
    const std::string why =
        emit == Emit::Torchtitan
            ? swift::emit::torchtitanLimit(job->training.method)
            : swift::emit::megatronLimit(job->training.method);
    if (!why.empty()) {
      errs() << swift::job::diagnoseJob(*job, "training.method: " + why).str()
             << "\n";
      return kExitBadInput;
    }
  }
  // The job's own backend, checked when the artifact's stack cannot run
  // it: no dumps, no narrowing.
  mlir::swift::PlanningOptions probe = options;
  probe.dumpDir.clear();
  // ms-swift runs some methods at low ZeRO stages only
  // (swift::emit::msSwiftMaxZero): the search chooses among those.
  if (emit == Emit::MsSwift) {
    const int maxZero = swift::emit::msSwiftMaxZero(job->training.method);
    if (job->strategy.zero && *job->strategy.zero > maxZero) {
      errs() << job->path << ": error: strategy.zero: "
             << swift::emit::msSwiftZeroLimit(job->training.method)
             << "; leave it open or set 0-" << maxZero << "\n";
      return kExitNothingFits;
    }
    if (!job->strategy.zero && maxZero < 3)
      for (int zero = 0; zero <= maxZero; ++zero)
        options.allowedZero.push_back(zero);
  }
  mlir::swift::PlannedJob planned =
      mlir::swift::planJob(priced, context, options);
  if (!planned.error.empty()) {
    if (repriced && !planned.internal &&
        mlir::swift::planJob(*job, context, probe).error.empty()) {
      // The job is fine on its own backend; the target stack cannot run
      // what it fixes.
      errs() << swift::job::diagnoseJob(priced, planned.error).str()
             << " (the job's own backend, "
             << swift::plan::toString(job->backend) << ", can run it)\n";
      return kExitNothingFits;
    }
    // A pass's complaint names job keys; say where (file or --set) they
    // were set.
    if (planned.internal)
      errs() << job->path << ": error: " << planned.error << "\n";
    else
      errs() << swift::job::diagnoseJob(*job, planned.error).str() << "\n";
    return planned.internal ? kExitInternal : kExitBadInput;
  }
  using mlir::swift::Phase;
  bool nothingFits = *last >= Phase::Strategy && !planned.fits();
  bool artifact = emit == Emit::Plan || emit == Emit::DeepSpeed ||
                  emit == Emit::MsSwift || emit == Emit::Torchtitan ||
                  emit == Emit::Megatron || emit == Emit::Launch;
  if (artifact && *last < Phase::Schedule) {
    errs() << "swift-plan: --emit plan/deepspeed/ms-swift/torchtitan/"
              "megatron/launch need the schedule phase; drop --compile-to\n";
    return kExitBadInput;
  }
  if (artifact && nothingFits) {
    errs() << job->path << ": error: nothing fits on backend " << backendName
           << ", so there is nothing to emit: the closest strategy, "
           << swift::report::pricedSummary(planned.job)
           << (options.allowedZero.empty()
                   ? ""
                   : "; ZeRO 0-" + std::to_string(options.allowedZero.back()) +
                         " only: " +
                         swift::emit::msSwiftZeroLimit(priced.training.method))
           << (emit == Emit::Megatron
                   ? "; offload none only: " +
                         swift::emit::megatronOffloadLimit()
                   : "")
           << "; run without --emit"
           << (repriced ? " and with --set backend=" + backendName : "")
           << " to see what would fit\n";
    return kExitNothingFits;
  }
  swift::report::Replanned replanned;
  if (nothingFits && !noSuggestions)
    replanned.changesThatFit = mlir::swift::changesThatFit(*job, context, options);
  mlir::swift::EstimateAttr estimate = planned.job.getEstimateAttr();
  if (emit == Emit::Summary && !nothingFits && *last >= Phase::Estimate &&
      estimate) {
    double tokensPerSecond = estimate.getTokensPerSecond().convertToDouble();
    replanned.fasterIfOpen =
        mlir::swift::fasterIfOpen(*job, tokensPerSecond, context, options);
    // FP8 is never chosen for a job; the report suggests it.
    replanned.fasterWithFp8 =
        mlir::swift::fasterWithFp8(*job, tokensPerSecond, context, options);
    // What clipping costs where swift-run could update in the backward.
    replanned.withoutClipping = mlir::swift::withoutClipping(
        *job, tokensPerSecond, estimate.getPeakBytes(), context, options);
    // What the mesh engines would make of a multi-node job (--emit them).
    replanned.fasterOnStack =
        mlir::swift::fasterOnStack(*job, tokensPerSecond, context, options);
  }
  if (repriced)
    errs() << "swift-plan: --emit " << emitName(emit) << " is priced on backend "
           << backendName << " (the job's is "
           << swift::plan::toString(job->backend)
           << "): " << swift::report::pricedSummary(planned.job) << "\n";

  // --data: the dataset through the job's tokenizer, as swift-run reads it.
  std::optional<swift::report::DataPlan> dataPlan;
  if (!dataFile.empty()) {
    if (!(epochs > 0)) {
      errs() << "swift-plan: --epochs must be positive\n";
      return kExitBadInput;
    }
    swift::data::DatasetQuery q;
    q.path = dataFile;
    q.tokenizerDir = !tokenizerDir.empty() ? tokenizerDir.getValue()
                                           : job->model.weights;
    q.needs = q.tokenizerDir.empty()
                  ? "pass --tokenizer DIR (a directory with tokenizer.json), "
                    "or name the model's HF directory in the job"
                  : q.tokenizerDir + " has no tokenizer.json; pass --tokenizer DIR";
    q.chatTemplate = chatTemplate;
    q.cacheDir = dataCache.getNumOccurrences() ? dataCache.getValue()
                                               : swift::data::defaultCacheDir();
    if (q.cacheDir == "off")
      q.cacheDir.clear();
    q.vocab = job->model.vocabSize;
    q.seq = job->training.sequenceLength;
    q.globalBatchSize = job->training.globalBatchSize;
    q.truncation = job->training.truncation;
    q.lossOn = job->training.lossOn;
    q.packing = job->training.packing;
    q.progress = &std::cerr;
    q.progressIsTerminal = ::isatty(2);
    std::string dataError;
    std::optional<swift::data::DatasetStats> stats =
        swift::data::describeDataset(q, dataError);
    if (!stats) {
      errs() << "swift-plan: --data: " << dataError << "\n";
      return kExitBadInput;
    }
    dataPlan = swift::report::DataPlan{*stats, epochs};
  }

  std::string error;
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output) {
    errs() << "swift-plan: -o " << outputFile << ": " << error << "\n";
    return kExitBadInput;
  }
  raw_ostream &os = output->os();
  // The commands run the plan and name the config, never the file they
  // are written to.
  swift::emit::LaunchOptions launchOptions;
  launchOptions.planPath = planFile;
  if (!dsConfigFile.empty())
    launchOptions.deepSpeedConfigPath = dsConfigFile;
  else if (emit == Emit::DeepSpeed && outputFile != "-")
    launchOptions.deepSpeedConfigPath = outputFile;
  if (emit == Emit::Torchtitan && outputFile != "-")
    launchOptions.torchtitanConfigPath = outputFile;
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
    // The config only with the Trainer flags it leaves "auto".
    if (succeeded(swift::emit::trainerFlags(*planned.module)) &&
        succeeded(swift::emit::emitDeepSpeedConfig(*planned.module, os))) {
      // The config and the Trainer flags it leaves "auto" go together.
      errs() << "swift-plan: launch it with:\n";
      (void)swift::emit::emitLaunch(*planned.module, errs(), launchOptions);
    }
  } else if (emit == Emit::MsSwift) {
    (void)swift::emit::emitMsSwift(*planned.module, os, launchOptions);
  } else if (emit == Emit::Torchtitan) {
    (void)swift::emit::emitTorchtitan(*planned.module, os, launchOptions);
  } else if (emit == Emit::Megatron) {
    (void)swift::emit::emitMegatron(*planned.module, os, launchOptions);
  } else if (emit == Emit::Launch) {
    (void)swift::emit::emitLaunch(*planned.module, os, launchOptions);
  } else if (jsonReport) {
    std::string jsonError;
    if (!swift::report::printJson(os, *job, planned.job, replanned, jsonError,
                                  dataPlan ? &*dataPlan : nullptr)) {
      errs() << job->path << ": internal error: " << jsonError
             << " (not printing invalid JSON)\n";
      return kExitInternal;
    }
  } else
    swift::report::printReport(os, *job, planned.job, replanned, explain,
                               dataPlan ? &*dataPlan : nullptr);
  if (!htmlFile.empty()) {
    const std::string why = swift::report::writeHtml(
        htmlFile, *job, planned.job, replanned, dataPlan ? &*dataPlan : nullptr);
    if (!why.empty()) {
      errs() << "swift-plan: --html " << htmlFile << ": " << why << "\n";
      return kExitBadInput;
    }
  }
  if (!emitError.empty()) {
    // An artifact for another stack that the stack cannot run (a schedule
    // the HF Trainer has no name for, ...) is like a strategy it cannot
    // run: exit 3; on the job's own backend it is bad input.
    errs() << job->path << ": error: " << emitError
           << (repriced ? " (the job's own backend, " +
                              std::string(swift::plan::toString(job->backend)) +
                              ", can run it)"
                        : std::string())
           << "\n";
    return repriced ? kExitNothingFits : kExitBadInput;
  }
  output->keep();
  return nothingFits ? kExitNothingFits : 0;
}
