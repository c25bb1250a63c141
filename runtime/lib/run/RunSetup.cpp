//===- RunSetup.cpp - a rank's setup and initial state (Run.h) ------------===//
#include "RunParts.h"

#include "swift/Data/SampleEncoder.h"
#include "swift/Plan/Json.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/io/Weights.h"
#include "swift/Runtime/model/Fp8.h"
#include "swift/Runtime/run/Trace.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace swift::rt {

namespace run {
namespace {
std::string activity = "starting";
} // namespace

void setActivity(std::string what) { activity = std::move(what); }

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / (1ull << 30));
  return buf;
}

std::string hsdpText(const Plan &plan) {
  const plan::ShardGroups g = plan::shardGroups(plan.strategy, plan.world);
  if (!g.hybrid())
    return "";
  return " in " + std::to_string(g.replicas) + " shard groups of " +
         std::to_string(g.shard) + (g.shard == 1 ? " rank" : " ranks") +
         " (HSDP)";
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Bytes of the safetensors files in `dir` (a checkpoint or HF directory).
int64_t safetensorsBytes(const std::string &dir) {
  int64_t total = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code sizeEc;
    if (it->path().extension() == ".safetensors")
      if (const uintmax_t size = it->file_size(sizeEc); !sizeEc)
        total += int64_t(size);
  }
  return total;
}

/// "16.06 GB in 7.2 s, 2.23 GB/s".
std::string transferReport(int64_t bytes, double seconds) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.2f GB in %.1f s, %.2f GB/s", bytes / 1e9,
                seconds, seconds > 0 ? bytes / 1e9 / seconds : 0.0);
  return buf;
}

} // namespace run

using namespace run;

const std::string &runActivity() { return activity; }

bool isOutOfMemory(const c10::Error &e) {
  return dynamic_cast<const c10::OutOfMemoryError *>(&e) ||
         std::string(e.what_without_backtrace()).find("DefaultCPUAllocator") !=
             std::string::npos;
}

std::string outOfMemoryHint(const Plan &plan) {
  if (!plan.predicted.peakMemoryBytes)
    return "the plan carries no predicted peak (`swift-plan JOB --emit plan` "
           "prices one); swift-plan can choose a strategy that fits";
  return "the plan predicts a peak of " + gib(plan.predicted.peakMemoryBytes) +
         " per rank for the GPUs of its job. Plan for this machine's GPUs "
         "(swift-plan JOB --set cluster.gpu=NAME, or cluster.profile=FILE), "
         "or ask for less memory: a higher strategy.zero, strategy.offload, "
         "strategy.checkpointing or a smaller training.micro_batch_size "
         "(swift-plan --set KEY=VALUE)";
}

int64_t parseIntFlag(const std::string &flag, const std::string &v, int64_t lo,
                     int64_t hi) {
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  SWIFT_CHECK(!v.empty() && *end == '\0' && x >= lo && x <= hi,
              "command line: ", flag, " \"", v, "\": expected an integer in [",
              lo, ", ", hi, "]");
  return x;
}


/// How the plan's data is read (Data.h): its lines in users' formats
/// (SampleEncoder.h) through the tokenizer files of `tokenizerDir` (read
/// at the first text line).
DataOptions dataOptions(const Plan &plan, const RunOptions &a,
                        const std::string &tokenizerDir) {
  DataOptions o;
  o.vocab = plan.model.vocabSize;
  o.seq = plan.training.sequenceLength;
  o.seed = plan.training.seed;
  o.packing = plan.training.packing;
  o.truncation = plan.training.truncation;
  o.lossOn = plan.training.lossOn;
  const std::string needs =
      tokenizerDir.empty()
          ? "pass --weights MODEL_DIR or --tokenizer DIR (with tokenizer.json)"
          : tokenizerDir + " has no tokenizer.json; pass --tokenizer DIR";
  if (!a.tokenizer.empty()) // a typo must not wait for the first text line
    SWIFT_CHECK(std::filesystem::is_directory(a.tokenizer), "command line: --tokenizer ",
                a.tokenizer, ": not a directory");
  if (!a.chatTemplate.empty()) {
    const std::string why = swift::plan::notRegularFile(a.chatTemplate, "a chat template");
    SWIFT_CHECK(why.empty(), "command line: --chat-template ", a.chatTemplate, ": ", why);
  }
  const swift::data::SampleEncoder encoder = swift::data::SampleEncoder::fromModelDir(
      tokenizerDir, a.chatTemplate, o.vocab, o.lossOn == swift::plan::LossOn::Assistant,
      "the plan's model.vocab_size", needs);
  encoder.feed(o.tokenize);
  o.tokenize.cacheDir = a.dataCache;
  // One process tokenizes (the others wait on the cache's lock): it shows
  // its progress; rank 0 tells about the cache. Uncached, every rank
  // tokenizes, and rank 0 shows it.
  const RankEnv env = readRankEnv();
  if (env.rank == 0 || !o.tokenize.cacheDir.empty()) {
    o.tokenize.progress = &std::cerr;
    o.tokenize.progressIsTerminal = ::isatty(2);
  }
  if (env.rank == 0)
    o.tokenize.notes = &std::cerr;
  return o;
}

/// Where text data's tokenizer files are: --tokenizer, else the resumed
/// checkpoint's copy (checkpoints carry them), else the model directory.
std::string tokenizerDir(const RunOptions &a, const std::string &checkpointDir,
                         const std::string &weightsDir) {
  if (!a.tokenizer.empty())
    return a.tokenizer;
  if (!checkpointDir.empty() &&
      std::filesystem::exists(std::filesystem::path(checkpointDir) / "tokenizer.json"))
    return checkpointDir;
  return weightsDir;
}

namespace {

/// Creates `dir` if needed and checks a file can be written there.
void checkWritableDir(const std::string &dir, const char *flag) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  SWIFT_CHECK(!ec, "command line: ", flag, " ", dir, ": ", ec.message());
  std::string probe = (std::filesystem::path(dir) / ".swift-write-test").string();
  std::ofstream out(probe);
  SWIFT_CHECK(out.good() && (out << "ok").good(), "command line: ", flag, " ",
              dir, ": not writable");
  out.close();
  std::filesystem::remove(probe, ec);
}

/// A file the run writes at its end (or as it goes) must be writable before
/// the first step: its directory exists and a file can be created there.
void checkWritableFile(const std::string &file, const char *flag) {
  std::filesystem::path path(file);
  std::error_code ec;
  SWIFT_CHECK(!std::filesystem::is_directory(path, ec), "command line: ", flag,
              " ", file, ": is a directory");
  std::filesystem::path dir =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  SWIFT_CHECK(std::filesystem::is_directory(dir, ec), "command line: ", flag,
              " ", file, ": no directory ", dir.string());
  const bool existed = std::filesystem::exists(path, ec);
  std::ofstream out(file, std::ios::app);
  SWIFT_CHECK(out.good(), "command line: ", flag, " ", file, ": not writable");
  out.close();
  if (!existed)
    std::filesystem::remove(path, ec);
}

/// An HF config.json's text, kept verbatim in checkpoints and exports.
std::string readConfigText(const std::string &path) {
  return plan::readRegularFile(path, "an HF config.json (JSON)", 16 << 20);
}

/// FP8 GEMMs need a device that has them (or SWIFT_FP8_EMULATE's CPU
/// emulation, a test mode) and GEMM sizes in multiples of 16.
void checkFp8Runs(const Plan &plan, const at::Device &device,
                  const RankEnv &env) {
  const std::string why = fp8Unsupported(device);
  // SWIFT_FP8_EMULATE=1 runs the CPU emulation of the FP8 GEMMs (Fp8.h)
  // instead of refusing: for the tests of the training path, not speed.
  const bool emulate = device.is_cpu() && std::getenv("SWIFT_FP8_EMULATE");
  if (emulate && env.rank == 0)
    std::cerr << "swift-run: FP8 GEMMs emulated on the CPU "
                 "(SWIFT_FP8_EMULATE; a test mode)" << std::endl;
  SWIFT_CHECK(why.empty() || emulate, "plan: training.precision ",
              toString(plan.training.precision), ": ", why,
              "; plan it with precision ",
              toString(plan::storagePrecision(plan.training.precision)),
              " instead");
  // FP8 tensor cores take K (and cuBLASLt's leading dimensions) in
  // multiples of 16: the widths of the decoder linears and the tokens of
  // a micro-batch (the weight gradient's K).
  const ModelConfig &m = plan.model;
  const int64_t tokens =
      plan.training.microBatchSize * plan.training.sequenceLength;
  for (auto [what, n] : {std::pair<const char *, int64_t>{"hidden_size", m.hiddenSize},
                         {"intermediate_size", m.intermediateSize},
                         {"num_attention_heads x head_dim", m.numHeads * m.headDim},
                         {"num_key_value_heads x head_dim", m.numKvHeads * m.headDim},
                         {"micro_batch_size x sequence_length", tokens}})
    SWIFT_CHECK(n % 16 == 0, "plan: training.precision ",
                toString(plan.training.precision), ": FP8 GEMMs need ",
                what, " to be a multiple of 16 (it is ", n, ")");
}

/// The rank's device (--device, else CUDA where there is one), checked
/// for what the plan needs of it.
at::Device selectDevice(const Plan &plan, const RunOptions &a,
                        const RankEnv &env) {
  std::string devName = a.device;
  if (devName.empty())
    devName = cudaDeviceCount() > 0 ? "cuda" : "cpu";
  at::Device device(at::kCPU);
  if (devName == "cuda") {
    SWIFT_CHECK(cudaDeviceCount() > env.localRank, "--device cuda: rank ",
                env.rank, " needs GPU ", env.localRank, " but ",
                cudaDeviceCount(), " CUDA device(s) are visible",
                cudaDeviceCount() == 0 ? " (or this build has no CUDA)" : "");
    setCudaDevice(env.localRank);
    device = at::Device(at::kCUDA, c10::DeviceIndex(env.localRank));
  }
  if (plan::fp8Gemms(plan.training.precision))
    checkFp8Runs(plan, device, env);
  return device;
}

/// `bytes` in GiB as "80.00", for the command lines the errors name.
std::string gibNumber(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", double(bytes) / double(1ull << 30));
  return buf;
}

/// The cap of the device's caching allocator and where it comes from.
struct GpuMemoryCap {
  int64_t bytes = 0; // 0: none
  std::string source;
};

/// --gpu-memory, else the plan's world.gpu_memory_bytes where the GPU has
/// more: the caching allocator's cap, set before anything is allocated. A
/// plan whose predicted peak exceeds it is refused now, not at its OOM.
GpuMemoryCap capGpuMemory(const Plan &plan, const RunOptions &a,
                          const at::Device &device) {
  GpuMemoryCap cap;
  if (!device.is_cuda()) { // the plan's capacity means nothing here
    SWIFT_CHECK(a.gpuMemoryGiB == 0, "command line: --gpu-memory needs "
                                     "--device cuda (this run is on the CPU)");
    return cap;
  }
  const int64_t total = deviceTotalMemory(device);
  if (a.gpuMemoryGiB > 0) {
    const double bytes = a.gpuMemoryGiB * double(1ull << 30);
    SWIFT_CHECK(bytes <= double(total), "command line: --gpu-memory ",
                a.gpuMemoryGiB, ": more than the GPU has (", gib(total), ")");
    cap = {int64_t(bytes), "--gpu-memory"};
  } else if (plan.world.gpuMemoryBytes > 0 &&
             plan.world.gpuMemoryBytes < total) {
    cap = {plan.world.gpuMemoryBytes, "the plan's world.gpu_memory_bytes"};
  } else {
    return cap;
  }
  const int64_t peak = plan.predicted.peakMemoryBytes;
  SWIFT_CHECK(peak <= cap.bytes, plan.path,
              ": predicted.peak_memory_bytes: the plan predicts a peak of ",
              gib(peak), " per GPU, over the GPU memory cap of ",
              gib(cap.bytes), " (", cap.source,
              "); plan for that capacity: swift-plan JOB --set "
              "cluster.gpu.memory_gib=", gibNumber(cap.bytes));
  capDeviceMemory(device, cap.bytes);
  return cap;
}

/// The ranks' communicators: the world's and, with HSDP (the plan's
/// strategy.dp_shard), each rank's shard and replica groups'.
struct Comms {
  std::unique_ptr<Comm> world;
  std::unique_ptr<MeshComms> mesh;
};

/// The ranks' communicator: none for one rank (unless SWIFT_COMM=nccl|gloo
/// forces a backend, to exercise the collective path on a single GPU),
/// NCCL between GPUs, Gloo between CPUs; through the launcher's TCP store.
/// With HSDP, the groups' communicators of the same backend on the same
/// store (MeshComms).
Comms connect(const Plan &plan, const RankEnv &env, const at::Device &device,
              double timeout) {
  const char *forced = std::getenv("SWIFT_COMM");
  std::string backend = forced             ? forced
                        : env.world == 1   ? "local"
                        : device.is_cuda() ? "nccl"
                                           : "gloo";
  c10::intrusive_ptr<c10d::Store> store;
  if (env.world == 1 && backend != "local") {
    store = c10::make_intrusive<c10d::HashStore>();
  } else if (env.world > 1) {
    c10d::TCPStoreOptions o;
    o.port = uint16_t(env.masterPort);
    o.isServer = env.hostStore;
    o.numWorkers = env.world;
    o.waitWorkers = false;
    o.timeout = std::chrono::milliseconds(int64_t(timeout * 1000));
    // Our keys live under "swift/": under torchrun the store is the agent's
    // and holds its keys too.
    store = c10::make_intrusive<c10d::PrefixStore>(
        "swift", c10::make_intrusive<c10d::TCPStore>(env.masterAddr, o));
  }
  CommOptions copt;
  copt.backend = backend;
  copt.rank = env.rank;
  copt.world = env.world;
  copt.localRank = env.localRank;
  copt.store = store;
  copt.timeoutSeconds = timeout;
  Comms comms;
  comms.world = makeComm(copt);
  comms.mesh = std::make_unique<MeshComms>(
      *comms.world, copt,
      int(plan::shardGroups(plan.strategy, plan.world).shard));
  return comms;
}

/// The options that give the initial state, checked against each other
/// and the plan's method.
void checkStateOptions(const Plan &plan, const RunOptions &a) {
  const bool lora = plan.training.method != Method::Full;
  SWIFT_CHECK(lora || (a.adapter.empty() && !a.merge),
              "command line: --adapter and --merge need a LoRA plan "
              "(training.method lora)");
  SWIFT_CHECK(!a.merge || !a.exportHF.empty(),
              "command line: --merge needs --export-hf DIR");
  SWIFT_CHECK(a.mergeBase.empty() || a.merge,
              "command line: --merge-base needs --merge (and --export-hf)");
  // The weights a merge goes into: checked whole (names, shapes, config)
  // before any step, not after the last.
  if (!a.mergeBase.empty())
    (void)HFWeights(a.mergeBase, plan.model);
  SWIFT_CHECK(lora || a.resume.empty() || a.weights.empty(),
              "command line: --resume and --weights both give the initial "
              "state; use one");
  SWIFT_CHECK(a.resume.empty() || a.adapter.empty(),
              "command line: --resume and --adapter both give the adapters; "
              "use one");
}

/// Opens the initial state (InitialState): pretrained weights are checked
/// whole (names, shapes, dtypes) before any state is allocated.
InitialState openInitialState(const Plan &plan, const RunOptions &a) {
  checkStateOptions(plan, a);
  const bool lora = plan.training.method != Method::Full;
  InitialState s;
  s.weightsDir =
      !a.weights.empty() ? a.weights : plan.weights ? plan.weights->path : "";
  if (!a.resume.empty()) {
    auto checkpoint = std::make_unique<Checkpoint>(a.resume, plan);
    s.resumed = checkpoint.get();
    s.initial = std::move(checkpoint);
  } else if (lora && !a.adapter.empty())
    s.initial = std::make_unique<PeftAdapter>(a.adapter, plan);
  else if (!lora && !s.weightsDir.empty())
    s.initial = std::make_unique<HFWeights>(s.weightsDir, plan.model);
  if (lora && s.resumed) {
    // The base a LoRA checkpoint trained on: the one it names, unless the
    // command line or the plan gives one (then they must agree).
    const std::string trained = s.resumed->baseWeights();
    std::error_code ec;
    if (s.weightsDir.empty()) {
      s.weightsDir = trained;
    } else if (!trained.empty() && std::filesystem::exists(trained, ec)) {
      SWIFT_CHECK(std::filesystem::equivalent(trained, s.weightsDir, ec),
                  s.resumed->dir(),
                  ": this LoRA checkpoint trained on the base ", trained,
                  ", not ", s.weightsDir, " (--weights or the plan's weights)");
    }
  }
  if (lora && !s.weightsDir.empty())
    s.base = std::make_unique<HFWeights>(s.weightsDir, plan.model);
  return s;
}

/// A resumed run's data: the file the checkpoint recorded (or one with its
/// fingerprint), with rank 0 telling what differs from the checkpoint's run.
DataRecord resumedData(const Plan &plan, const RunOptions &a,
                       const Checkpoint &resumed, const RankEnv &env) {
  const Manifest &m = resumed.manifest();
  SWIFT_CHECK(a.epochs > 0 || a.steps == 0 || a.steps >= m.step,
              "command line: --steps ", a.steps,
              " is below the step of the checkpoint (", m.step, ", ",
              resumed.dir(), "): --steps is the total to reach; ",
              "--steps 0 or ", m.step, " loads it without training");
  // Without a step to train (an export), the data does not matter.
  const bool trains = a.epochs > 0 || a.steps > m.step;
  DataRecord record;
  std::vector<std::string> notes;
  if (trains)
    record = chooseResumeData(m, resumed.manifestPath(), a.data, plan,
                              a.ignoreDataMismatch, notes);
  const int64_t globalBatch = plan.training.globalBatchSize;
  if (trains && m.globalBatchSize && *m.globalBatchSize != globalBatch)
    notes.push_back(
        "swift-run: warning: the checkpoint trained with global_batch_size " +
        std::to_string(*m.globalBatchSize) + ", the plan has " +
        std::to_string(globalBatch) + ": the data continues at sample " +
        std::to_string(m.samplesConsumed) +
        " (the samples it consumed), the lr schedule at step " +
        std::to_string(m.step));
  if (env.rank == 0)
    for (const std::string &note : notes)
      (note.find(": warning: ") != std::string::npos ? std::cerr : std::cout)
          << note << std::endl;
  return record;
}

/// A resume without --ignore-data-mismatch continues the same samples: the
/// same --eval-split, and the same windows per epoch.
void checkResumedLayout(const RunOptions &a, const Checkpoint &resumed,
                        const RunData &d) {
  const Manifest &m = resumed.manifest();
  if (!m.data || d.record.synthetic || a.ignoreDataMismatch)
    return;
  auto split = [](double f) {
    char text[48] = "none";
    if (f > 0)
      std::snprintf(text, sizeof text, "--eval-split %g", f);
    return std::string(text);
  };
  SWIFT_CHECK(m.data->evalSplit == a.evalSplit, resumed.manifestPath(),
              ": data: the checkpoint's run held out ", split(m.data->evalSplit),
              ", this run ", split(a.evalSplit),
              ": other training samples; resume with the same, or pass "
              "--ignore-data-mismatch");
  if (m.data->windows > 0 && d.epochWindows > 0)
    SWIFT_CHECK(m.data->windows == d.epochWindows, resumed.manifestPath(),
                ": data: the checkpoint's run laid ", d.record.path, " out into ",
                m.data->windows, " windows, this run into ", d.epochWindows,
                " (training.truncation or the line format changed); pass "
                "--ignore-data-mismatch to continue anyway");
}

/// --epochs E as steps: ceil(E x windows / global batch) (Data.h "Epochs":
/// a step crossing an epoch's end takes the next epoch's first windows).
int64_t stepsOfEpochs(const Plan &plan, const RunOptions &a, const RunData &d,
                      const InitialState &state) {
  const int64_t globalBatch = plan.training.globalBatchSize;
  SWIFT_CHECK(d.epochWindows > 0, "command line: --epochs needs --data FILE.jsonl (",
              d.record.synthetic ? "synthetic tokens" : d.record.path,
              " has no epochs: its windows wrap around); use --steps N");
  const double steps = std::ceil(
      a.epochs * double(d.epochWindows) / double(globalBatch) - 1e-9);
  SWIFT_CHECK(steps >= 1 && steps <= double(kMaxSteps),
              "command line: --epochs ", a.epochs, ": ", steps,
              " steps of global_batch_size ", globalBatch, " over ",
              d.epochWindows, " windows");
  const int64_t n = int64_t(steps);
  SWIFT_CHECK(!state.resumed || n >= state.resumed->step(),
              "command line: --epochs ", a.epochs, " is ", n,
              " steps, below the step of the checkpoint (",
              state.resumed->step(), ", ", state.resumed->dir(), ")");
  return n;
}

/// Rank 0's lines about the data: what it became, and the run's epochs.
void printDataLines(const Plan &plan, const RunOptions &a, const RunData &d) {
  if (const DataSummary *sum = d.train->summary())
    std::cout << "swift-run: data " << sum->line() << std::endl;
  if (d.eval && !a.evalData.empty())
    std::cout << "swift-run: eval data " << d.eval->summary()->line()
              << std::endl;
  if (d.epochWindows == 0)
    return;
  const int64_t globalBatch = plan.training.globalBatchSize;
  char epochs[32];
  const double e = a.epochs > 0 ? a.epochs
                                : double(a.steps) * double(globalBatch) /
                                      double(d.epochWindows);
  std::snprintf(epochs, sizeof epochs, "%.4g", e);
  std::cout << "swift-run: " << epochs << " epoch" << (e == 1 ? "" : "s")
            << " x " << groupedDigits(d.epochWindows) << " windows = "
            << groupedDigits(a.steps) << " step" << (a.steps == 1 ? "" : "s")
            << " of " << groupedDigits(globalBatch) << std::endl;
}

/// The data and where the run starts in it. A resumed run continues the
/// checkpoint's data (the file it recorded, or one with its fingerprint)
/// at the samples it consumed, whatever the global batch now. Sets
/// a.steps from --epochs.
RunData openRunData(const Plan &plan, RunOptions &a, const InitialState &state,
                    const RankEnv &env, Watchdog &watchdog) {
  RunData d;
  const Checkpoint *resumed = state.resumed;
  d.firstStep = resumed ? resumed->step() : 0;
  d.firstSample = resumed ? resumed->manifest().samplesConsumed : 0;
  if (resumed)
    d.record = resumedData(plan, a, *resumed, env);
  DataOptions dataOpts =
      dataOptions(plan, a, tokenizerDir(a, state.resumedDir(), state.weightsDir));
  dataOpts.tokenize.alive = [&watchdog] { watchdog.progress("tokenizing the data"); };
  DataSources sources = makeDataSources(resumed ? d.record.path : a.data,
                                        dataOpts, a.evalSplit);
  d.train = std::move(sources.train);
  d.eval = !a.evalData.empty() ? makeEvalSource(a.evalData, dataOpts)
                               : std::move(sources.eval);
  if (!resumed) // the fingerprint the checkpoints record, taken once
    d.record = describeData(a.data, plan);
  d.epochWindows = d.train->windowsPerEpoch();
  if (resumed)
    checkResumedLayout(a, *resumed, d);
  d.record.windows = d.epochWindows;
  d.record.evalSplit = d.record.synthetic ? 0 : a.evalSplit;
  if (a.epochs > 0)
    a.steps = stepsOfEpochs(plan, a, d, state);
  if (env.rank == 0)
    printDataLines(plan, a, d);
  // Every step's first sample (firstSample + steps x global batch) is
  // below kMaxSamples.
  const int64_t globalBatch = plan.training.globalBatchSize;
  int64_t samplesToRun = 0;
  SWIFT_CHECK(!__builtin_mul_overflow(std::max<int64_t>(a.steps - d.firstStep, 0),
                                      globalBatch, &samplesToRun) &&
                  samplesToRun <= kMaxSamples - d.firstSample,
              "command line: --steps ", a.steps, ": ", a.steps - d.firstStep,
              " steps of global_batch_size ", globalBatch, " from sample ",
              d.firstSample, " count past 2^40 samples, the most a run consumes");
  return d;
}

/// The export replaces a directory's model files: never the run's input.
void checkExportIsNoInput(const RunOptions &a, const InitialState &state) {
  if (a.exportHF.empty())
    return;
  auto same = [&](const std::string &dir) {
    std::error_code ec;
    return !dir.empty() && std::filesystem::exists(dir, ec) &&
           std::filesystem::exists(a.exportHF, ec) &&
           std::filesystem::equivalent(dir, a.exportHF, ec);
  };
  std::vector<std::pair<std::string, std::string>> inputs = {
      {state.weightsDir, "the model's weights (--weights or the plan's)"},
      {a.adapter, "the adapter (--adapter)"},
      {a.mergeBase, "the weights merged into (--merge-base)"},
      {a.resume, "the resumed checkpoints (--resume)"}};
  if (state.resumed)
    inputs.push_back({state.resumed->dir(), "the resumed checkpoint"});
  for (const auto &[dir, what] : inputs)
    if (same(dir))
      throw UserError("--export-hf " + a.exportHF + " is " + what +
                      ": the export would overwrite the model it read; "
                      "export to another directory");
}

/// Rank 0: the directories and files the run writes fail now, not after
/// the last step; so does a save dir of another run's checkpoints. Returns
/// whether the first save replaces another run's (--overwrite-save-dir).
bool checkOutputs(const RunOptions &a, const InitialState &state,
                  const at::Device &device) {
  bool replaceSaved = false;
  if (!a.exportHF.empty())
    checkWritableDir(a.exportHF, "--export-hf");
  if (!a.saveDir.empty()) {
    checkWritableDir(a.saveDir, "--save-dir");
    replaceSaved = checkSaveDir(a.saveDir, state.resumedDir(), a.overwriteSaveDir);
  }
  if (!a.saveParams.empty())
    checkWritableFile(a.saveParams, "--save-params");
  if (!a.metrics.empty())
    checkWritableFile(a.metrics, "--metrics");
  if (!a.tensorboard.empty())
    checkWritableDir(a.tensorboard, "--tensorboard");
  if (!a.report.empty())
    checkWritableFile(a.report, "--report");
  // A LibTorch that cannot profile or write traces fails now, not at the
  // traced step (after which the run's checkpoint and export were lost).
  if (!a.trace.empty()) {
    StepTrace probe;
    probe.start(device);
    probe.stop(a.trace);
  }
  return replaceSaved;
}

/// The HF config.json that exports and checkpoints preserve (the resumed
/// checkpoint's, else the input model's; read now: --keep may delete the
/// resumed checkpoint before the export), and the tokenizer files they
/// carry: those the data is read with (tokenizerDir: --tokenizer, the
/// resumed checkpoint's, the --weights directory's; LoRA: the base's).
RunArtifacts readArtifacts(const RunOptions &a, const InitialState &state) {
  RunArtifacts r;
  std::string hfConfigPath;
  if (state.resumed)
    hfConfigPath = state.resumed->hfConfig();
  std::error_code configEc;
  if (hfConfigPath.empty() && !state.weightsDir.empty() &&
      std::filesystem::exists(std::filesystem::symlink_status(
          std::filesystem::path(state.weightsDir) / "config.json", configEc)))
    hfConfigPath = (std::filesystem::path(state.weightsDir) / "config.json").string();
  r.hfConfig = hfConfigPath.empty() ? "" : readConfigText(hfConfigPath);
  r.tokenizer = readTokenizerFiles(tokenizerDir(a, state.resumedDir(), state.weightsDir));
  // A --chat-template in Jinja is the template the model trained with: the
  // export's chat_template.jinja, which transformers prefers to
  // tokenizer_config.json's.
  if (!a.chatTemplate.empty() && !r.tokenizer.empty() &&
      std::filesystem::path(a.chatTemplate).extension() != ".json") {
    r.tokenizer.erase(std::remove_if(r.tokenizer.begin(), r.tokenizer.end(),
                                     [](const auto &f) {
                                       return f.first == "chat_template.jinja";
                                     }),
                      r.tokenizer.end());
    r.tokenizer.emplace_back("chat_template.jinja",
                             plan::readRegularFile(a.chatTemplate, "a chat template",
                                                   uint64_t(1) << 24));
  }
  return r;
}

/// Rank 0's lines once the engine holds the initial state: where it was
/// loaded from, the run's setup and the model states' bytes.
void printStartLines(const Plan &plan, const RunOptions &a, const RankEnv &env,
                     const at::Device &device, const InitialState &state,
                     const RunData &d, const Engine &engine, double loadSeconds) {
  if (state.initial || state.base) {
    const bool lora = plan.training.method != Method::Full;
    std::string from = state.resumed      ? state.resumed->dir()
                       : !a.adapter.empty() ? a.adapter
                                            : state.weightsDir;
    int64_t bytes = safetensorsBytes(from);
    if (lora && state.base && from != state.weightsDir) {
      bytes += safetensorsBytes(state.weightsDir);
      from = state.weightsDir + " + " + from;
    }
    std::cout << "swift-run: loaded " << from << " ("
              << transferReport(bytes, loadSeconds) << ")" << std::endl;
    if (state.resumed)
      std::cout << "swift-run: resuming from " << from << " after step "
                << engine.stepsDone() << ", at sample " << d.firstSample
                << std::endl;
  }
  std::cout << "swift-run: " << plan.path << ": "
            << plan.model.numParameters() << " parameters, world "
            << env.world << hsdpText(plan) << ", zero " << plan.strategy.zero
            << ", offload "
            << toString(plan.strategy.offload) << ", checkpointing "
            << toString(plan.strategy.checkpointing) << ", "
            << toString(plan.training.precision) << ", device " << device
            << ", schedule " << (plan.scheduleDerived ? "derived" : "from plan")
            << std::endl;
  const Engine::StateBytes sb = engine.stateBytes();
  std::cout << "model states on rank 0: parameters " << sb.parameters
            << " B, gradients " << sb.gradients << " B, optimizer "
            << sb.optimizer << " B, host " << sb.host << " B ("
            << gib(sb.parameters + sb.gradients + sb.optimizer)
            << " on the device)" << std::endl;
  const Engine::ActivationOffload ao = engine.activationOffload();
  if (ao.units > 0)
    std::cout << "activation offload on rank 0: " << ao.units << " of "
              << plan.model.numLayers
              << " decoders keep their checkpointed input on the host, "
              << ao.hostBytes << " B " << (device.is_cuda() ? "pinned " : "")
              << "(" << gib(ao.hostBytes) << ")" << std::endl;
}

} // namespace

int runRank(const Plan &plan, RunOptions a, const RankEnv &env) {
  checkPlanMatchesWorld(plan, env.world);
  const at::Device device = selectDevice(plan, a, env);
  const GpuMemoryCap cap = capGpuMemory(plan, a, device);
  if (cap.bytes > 0 && env.rank == 0)
    std::cout << "swift-run: GPU memory capped at " << gib(cap.bytes)
              << " of " << gib(deviceTotalMemory(device)) << " ("
              << cap.source << ")" << std::endl;
  const double timeout = a.timeout > 0      ? a.timeout
                         : device.is_cuda() ? 600
                                            : 120;
  Watchdog watchdog(timeout);
  const Comms comms = connect(plan, env, device, timeout);
  Comm *comm = comms.world.get();
  const InitialState state = openInitialState(plan, a);
  RunData data = openRunData(plan, a, state, env, watchdog);
  checkExportIsNoInput(a, state);
  const bool replaceSaved = env.rank == 0 && checkOutputs(a, state, device);
  setActivity(state.initial ? "loading the initial state"
                            : "allocating the model states");
  const RunArtifacts artifacts = readArtifacts(a, state);
  const auto loadStart = std::chrono::steady_clock::now();
  Engine engine(plan, *comms.mesh, device, state.initial.get(),
                state.base.get());
  if (env.rank == 0)
    printStartLines(plan, a, env, device, state, data, engine,
                    secondsSince(loadStart));
  engine.setTotalSteps(a.steps); // the lr schedule's length
  watchdog.progress("initialization");

  RunContext run{plan,   a,     env,  device,    watchdog,    *comm,
                 engine, state, data, artifacts, replaceSaved};
  trainLoop(run);
  exportResults(run);
  if (env.rank == 0)
    writeRunReport(run);
  comm->barrier();
  watchdog.progress("shutdown");
  return 0;
}

} // namespace swift::rt
