//===- RunParts.h - the parts of a rank's run (Run.h), between its files -===//
//
// Private to runtime/lib/run/Run*.cpp: what setup hands the train loop and the
// export.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/dist/Comm.h"
#include "swift/Runtime/engine/Engine.h"
#include "swift/Runtime/io/Checkpoint.h"
#include "swift/Runtime/io/Manifest.h"
#include "swift/Runtime/run/Run.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace swift::rt::run {

/// Sets what runActivity() says.
void setActivity(std::string what);

std::string gib(int64_t bytes);
double secondsSince(std::chrono::steady_clock::time_point start);
/// Bytes of the safetensors files in `dir` (a checkpoint or HF directory).
int64_t safetensorsBytes(const std::string &dir);
/// "16.06 GB in 7.2 s, 2.23 GB/s".
std::string transferReport(int64_t bytes, double seconds);
/// HSDP's layout as the run's start line and report say it: " in 2 shard
/// groups of 4 ranks (HSDP)"; "" without strategy.dp_shard.
std::string hsdpText(const Plan &plan);

/// The state a run starts from: full fine-tuning's weights (a checkpoint,
/// or HF weights); LoRA's adapters (a checkpoint, or a peft adapter) and
/// frozen base (HF weights; a LoRA checkpoint holds no base).
struct InitialState {
  std::unique_ptr<StateSource> initial, base;
  const Checkpoint *resumed = nullptr; // `initial`, when it is a checkpoint
  std::string weightsDir;              // --weights, the plan's, or the base
  std::string resumedDir() const { return resumed ? resumed->dir() : ""; }
};

/// The run's data and where in it the run starts.
struct RunData {
  std::unique_ptr<TokenSource> train, eval;
  DataRecord record;        // what checkpoints record of it
  int64_t epochWindows = 0; // JSONL: the windows of an epoch (0: endless)
  int64_t firstStep = 0, firstSample = 0;
};

/// What exports and checkpoints carry beside the weights: the HF
/// config.json's text and the tokenizer files.
struct RunArtifacts {
  std::string hfConfig;
  TokenizerFiles tokenizer;
};

/// What the run report (RunReport.cpp) shows: rank 0's logged steps,
/// evaluations, checkpoints and export.
struct RunHistory {
  struct Logged {
    int64_t step = 0;
    double loss = 0, lr = 0, gradNorm = 0, tokensPerSecond = 0, stepSeconds = 0;
    int64_t peakMem = 0; // device peak (CUDA) or host RSS (CPU)
  };
  std::vector<Logged> logged;
  std::vector<std::pair<int64_t, double>> evals;          // step, eval_loss
  std::vector<std::pair<int64_t, std::string>> checkpoints; // step, directory
  std::string exported;
  double meanTokensPerSecond = 0; // first step excluded (the console's)
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

/// Everything the train loop and the export use.
struct RunContext {
  const Plan &plan;
  RunOptions &options; // steps: --epochs' count once the data is known
  const RankEnv &env;
  at::Device device;
  Watchdog &watchdog;
  Comm &comm;
  Engine &engine;
  const InitialState &state;
  RunData &data;
  const RunArtifacts &artifacts;
  bool replaceSaved = false; // --overwrite-save-dir: at the first save
  RunHistory history;         // rank 0's
  bool lead() const { return env.rank == 0; }
};

/// Where the run report goes: --report FILE, else SAVE_DIR/report.html
/// with --save-dir, else nowhere ("").
std::string reportPath(const RunOptions &options);
/// Rank 0: writes the run report (RunReport.cpp) as it stands; a report
/// that cannot be written is a warning (the run's work is done).
void writeRunReport(const RunContext &run);

/// The steps, evaluations and checkpoints (RunLoop.cpp).
void trainLoop(RunContext &run);
/// --export-hf and --save-params after the last step (RunLoop.cpp).
void exportResults(RunContext &run);

} // namespace swift::rt::run
