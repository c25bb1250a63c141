//===- Run.h - one rank of swift-run: setup, initial state, loop, export --===//
//
// What a rank does with a validated plan and the command line's options,
// in four parts (runtime/lib/run/Run*.cpp):
//  - setup (RunSetup.cpp): the device (and FP8's requirements), the
//    watchdog, the communicator, every check of the options and outputs
//    that can fail before the first step;
//  - the initial state (RunSetup.cpp): pretrained weights, a checkpoint or
//    a peft adapter, LoRA's frozen base, and the data with where in it the
//    run starts (a resume continues the checkpoint's data);
//  - the train loop (RunLoop.cpp): steps read one behind, evaluation,
//    checkpoints, the console line and the metrics;
//  - the export (RunLoop.cpp): an HF directory or peft adapter with the
//    tokenizer files, and --save-params.
// swift-run's main() parses the command line and launches ranks; it calls
// runRank() in each.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Runtime/core/PlanTypes.h"
#include "swift/Runtime/dist/Launch.h"
#include "swift/Runtime/io/Data.h"

#include <c10/util/Exception.h>

#include <cstdint>
#include <string>
#include <vector>

namespace swift::rt {

/// swift-run's options as a rank reads them (swift-run --help says what
/// each does).
struct RunOptions {
  std::string plan, data, device, metrics, saveParams, emitPlan, trace;
  std::string weights, exportHF, exportDtype = "bf16";
  std::string saveDir, resume, adapter, mergeBase;
  std::string evalData;
  std::string tensorboard; // --tensorboard DIR
  std::string report;      // --report FILE (HTML); default SAVE_DIR/report.html
  std::vector<std::string> overrides; // --set KEY=VALUE, in order
  int64_t logEvery = 0; // --log-every N; 0: every max(1, steps / 100)
  std::string tokenizer, chatTemplate; // --tokenizer, --chat-template
  std::string dataCache = data::defaultCacheDir(); // "": off
  double epochs = 0;       // --epochs; 0: --steps
  double evalSplit = 0;    // --eval-split; 0: none
  int64_t evalEvery = 0;   // --eval-every; 0: each epoch's end
  int64_t inspectData = 0; // --inspect-data N; 0: train
  bool prepareData = false; // --prepare-data: tokenize into the cache, exit
  bool stepsGiven = false;
  bool merge = false;
  bool exportDtypeGiven = false;
  bool overwriteSaveDir = false;   // replace another run's checkpoints
  bool ignoreDataMismatch = false; // resume on other data
  int64_t saveEvery = 0;           // 0: the last step only
  int keep = 0;                    // 0: keep every checkpoint
  int nproc = 0;
  int64_t steps = 10;
  double timeout = 0; // 0: backend default
  double gpuMemoryGiB = 0; // --gpu-memory; 0: the plan's world.gpu_memory_bytes
};

/// Runs one rank: setup, initial state, the steps, the export. Returns the
/// exit code (0); throws UserError for bad input, RuntimeFailure and
/// PeerFailure for failures while running.
int runRank(const Plan &plan, RunOptions options, const RankEnv &env);

/// How the plan's data is read (Data.h): its lines in users' formats
/// (SampleEncoder.h) through the tokenizer files of `tokenizerDir` (read
/// at the first text line).
DataOptions dataOptions(const Plan &plan, const RunOptions &options,
                        const std::string &tokenizerDir);

/// Where text data's tokenizer files are: --tokenizer, else the resumed
/// checkpoint's copy (checkpoints carry them), else the model directory.
std::string tokenizerDir(const RunOptions &options,
                         const std::string &checkpointDir,
                         const std::string &weightsDir);

/// What the rank is doing now ("running step 7"), for an out-of-memory
/// error to name.
const std::string &runActivity();

/// An allocation the device (or the host) cannot satisfy: the plan does not
/// fit this machine. CUDA raises c10::OutOfMemoryError; LibTorch's CPU
/// allocator raises a plain c10::Error that names itself.
bool isOutOfMemory(const c10::Error &e);

/// The advice printed under an out-of-memory error.
std::string outOfMemoryHint(const Plan &plan);

/// A command line's integer in [lo, hi], else UserError naming `flag`.
int64_t parseIntFlag(const std::string &flag, const std::string &v, int64_t lo,
                     int64_t hi);

} // namespace swift::rt
