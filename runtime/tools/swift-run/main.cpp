//===- swift-run - execute a swift plan -----------------------------------===//
//
// swift-run plan.json [--nproc-per-node N] [--steps N | --epochs E]
//                     [--data FILE] [--inspect-data N]
//                     [--eval-data FILE | --eval-split F] [--eval-every N]
//                     [--device cpu|cuda] [--metrics FILE]
//                     [--save-params FILE] [--timeout SECONDS]
//                     [--weights DIR] [--export-hf DIR [--export-dtype D]]
//                     [--save-dir DIR [--save-every N] [--keep K]
//                      [--overwrite-save-dir]]
//                     [--resume P [--ignore-data-mismatch]]
//                     [--emit-plan FILE] [--trace FILE]
//
// Exit codes: 0 done; 2 bad input (one line naming file, field, why);
// 1 a failure while running (a rank died, a collective failed, CUDA error).
//
//===----------------------------------------------------------------------===//
#include "swift/Plan/Json.h"
#include "swift/Runtime/Check.h"
#include "swift/Runtime/Checkpoint.h"
#include "swift/Runtime/Comm.h"
#include "swift/Runtime/Data.h"
#include "swift/Runtime/Device.h"
#include "swift/Runtime/Engine.h"
#include "swift/Runtime/Fp8.h"
#include "swift/Runtime/Launch.h"
#include "swift/Runtime/PlanTypes.h"
#include "swift/Data/SampleEncoder.h"
#include "swift/Runtime/Trace.h"
#include "swift/Runtime/Weights.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>

using namespace swift::rt;

namespace {

const char *kUsage =
    "usage: swift-run plan.json [--nproc-per-node N] [--steps N | --epochs "
    "E]\n"
    "                 [--data FILE] [--inspect-data N]\n"
    "                 [--tokenizer DIR] [--chat-template FILE]\n"
    "                 [--eval-data FILE | --eval-split F] [--eval-every N]\n"
    "                 [--device cpu|cuda] [--metrics FILE] [--save-params "
    "FILE]\n"
    "                 [--timeout SECONDS] [--emit-plan FILE] [--trace FILE]\n"
    "                 [--weights DIR] [--export-hf DIR [--export-dtype D]]\n"
    "                 [--save-dir DIR [--save-every N] [--keep K]\n"
    "                  [--overwrite-save-dir]]\n"
    "                 [--resume P [--ignore-data-mismatch]]\n"
    "                 [--adapter DIR] [--merge [--merge-base DIR]]\n"
    "  --steps N         optimizer steps (default 10); with --resume the\n"
    "                    total to reach\n"
    "  --epochs E        JSONL data: ceil(E x windows / global batch) steps\n"
    "                    (E may be fractional); windows reshuffled each\n"
    "                    epoch from (seed, epoch)\n"
    "  --data FILE       .jsonl samples, or raw token ids (.bin/.u16/.u32);\n"
    "                    a JSONL line is messages, conversations (ShareGPT),\n"
    "                    instruction/output (alpaca), prompt/completion,\n"
    "                    text or input_ids (docs/runtime.md, Datasets)\n"
    "  --tokenizer DIR   the tokenizer files of text data (tokenizer.json,\n"
    "                    tokenizer_config.json); default: the resumed\n"
    "                    checkpoint's copy, else --weights / the plan's\n"
    "  --chat-template FILE  the chat template (Jinja text, or a .json\n"
    "                    tokenizer_config) instead of the tokenizer's\n"
    "  --data-cache DIR  the token cache: JSONL data is tokenized once (on\n"
    "                    every core) into DIR/tokens, reused by later runs\n"
    "                    and the other ranks (default: $SWIFT_CACHE_DIR,\n"
    "                    else ~/.cache/swift); off: tokenize every run\n"
    "  --prepare-data    tokenize --data (and --eval-data) into the token\n"
    "                    cache, print what it became and exit (a CPU\n"
    "                    machine can do it before the GPU job)\n"
    "  --inspect-data N  print the first N samples of --data as JSON lines\n"
    "                    (text, input_ids, labels after truncation) and exit\n"
    "  --eval-data FILE  evaluate on FILE's samples (JSONL): eval_loss, the\n"
    "                    token-weighted mean cross-entropy over its labels\n"
    "  --eval-split F    hold out a fraction F (0 < F < 1) of --data's\n"
    "                    samples, drawn from the seed, to evaluate on\n"
    "  --eval-every N    evaluate every N steps (default: at each epoch's\n"
    "                    end) and after the last step\n"
    "  --weights DIR     start from an HF model directory's safetensors\n"
    "                    (overrides the plan's \"weights\"; LoRA: the base)\n"
    "  --export-hf DIR   after the run, write the model as an HF directory:\n"
    "                    config.json + safetensors (5 GB shards + index);\n"
    "                    LoRA: a peft adapter directory (adapter_config.json\n"
    "                    + adapter_model.safetensors), or with --merge the\n"
    "                    base with the adapters merged in\n"
    "  --merge-base DIR  merge into DIR's weights as stored (an HF model\n"
    "                    directory, e.g. the run's --weights) instead of the\n"
    "                    base as trained (bf16-rounded; QLoRA: dequantized)\n"
    "  --adapter DIR     LoRA: start the adapters from a peft adapter\n"
    "  --export-dtype D  bf16 (default), fp16 or fp32\n"
    "  --save-dir DIR    checkpoints (masters, AdamW moments, step) as\n"
    "                    DIR/step-N, every --save-every N steps and after the\n"
    "                    last; DIR/latest names the newest; --keep K keeps\n"
    "                    the K of the highest steps; a DIR holding another\n"
    "                    run's checkpoints is refused unless\n"
    "  --overwrite-save-dir  (this run's first checkpoint replaces them)\n"
    "  --resume P        continue from a checkpoint (a step directory, or a\n"
    "                    save directory's latest) at any world size / ZeRO\n"
    "                    stage; --steps is the total to reach (0: no\n"
    "                    training); --data must be the checkpoint's (by\n"
    "                    fingerprint), continued at the samples it consumed\n"
    "  --ignore-data-mismatch  resume on other data than the checkpoint's\n"
    "  --emit-plan FILE  write the validated plan with its schedule spelled\n"
    "                    out (derived when the plan has none) and exit\n"
    "  --save-params FILE  after the run, write every parameter (fp32, the\n"
    "                    units' table order) to FILE, for comparisons\n"
    "  --timeout SECONDS   a rank without progress this long exits (default\n"
    "                    120 on CPU, 600 on CUDA)\n"
    "  --trace FILE        write a Chrome trace (operators, CUDA kernels) of\n"
    "                    the third step, or the last of fewer (rank 0)\n";

struct Args {
  std::string plan, data, device, metrics, saveParams, emitPlan, trace;
  std::string weights, exportHF, exportDtype = "bf16";
  std::string saveDir, resume, adapter, mergeBase;
  std::string evalData;
  std::string tokenizer, chatTemplate; // --tokenizer, --chat-template
  std::string dataCache = swift::data::defaultCacheDir(); // "": off
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
  int64_t saveEvery = 0;                // 0: the last step only
  int keep = 0;                         // 0: keep every checkpoint
  int nproc = 0;
  int64_t steps = 10;
  double timeout = 0; // 0: backend default
};

/// A number strictly between lo and hi (or up to hi when `hiIncluded`).
double parseReal(const std::string &flag, const std::string &v, double lo,
                 double hi, bool hiIncluded) {
  char *end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  SWIFT_CHECK(!v.empty() && *end == '\0' && std::isfinite(x) && x > lo &&
                  (x < hi || (hiIncluded && x == hi)),
              "command line: ", flag, " \"", swift::plan::briefText(v, 40),
              "\": expected a number in (", lo, ", ", hi,
              hiIncluded ? "]" : ")");
  return x;
}

int64_t parseInt(const std::string &flag, const std::string &v, int64_t lo,
                 int64_t hi) {
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  SWIFT_CHECK(!v.empty() && *end == '\0' && x >= lo && x <= hi,
              "command line: ", flag, " \"", v, "\": expected an integer in [",
              lo, ", ", hi, "]");
  return x;
}

/// Parses argv; also returns argv without --nproc-per-node for the ranks.
Args parseArgs(int argc, char **argv, std::vector<std::string> &childArgs) {
  Args a;
  childArgs.push_back(argv[0]);
  std::string previous; // the option before a positional argument
  for (int i = 1; i < argc; ++i) {
    const int first = i;
    std::string s = argv[i];
    // An option's value; another option in its place is a missing value
    // (argparse's rule: "--data --steps 5" is not the file "--steps").
    auto value = [&]() -> std::string {
      SWIFT_CHECK(i + 1 < argc, "command line: ", s, " needs a value");
      const std::string v = argv[i + 1];
      SWIFT_CHECK(v.size() < 2 || v[0] != '-' ||
                      std::isdigit(static_cast<unsigned char>(v[1])),
                  "command line: ", s, " needs a value (got the option ",
                  swift::plan::briefText(v, 40), ")");
      return argv[++i];
    };
    if (s == "-h" || s == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (s == "--nproc-per-node") {
      a.nproc = int(parseInt(s, value(), 1, 1024));
      continue; // not passed to the ranks
    } else if (s == "--steps") {
      a.steps = parseInt(s, value(), 0, int64_t(1) << 40);
      a.stepsGiven = true;
    } else if (s == "--epochs") {
      a.epochs = parseReal(s, value(), 0, 1e6, true);
    } else if (s == "--data") {
      a.data = value();
    } else if (s == "--inspect-data") {
      a.inspectData = parseInt(s, value(), 1, int64_t(1) << 40);
    } else if (s == "--prepare-data") {
      a.prepareData = true;
    } else if (s == "--eval-data") {
      a.evalData = value();
    } else if (s == "--eval-split") {
      a.evalSplit = parseReal(s, value(), 0, 1, false);
    } else if (s == "--eval-every") {
      a.evalEvery = parseInt(s, value(), 1, int64_t(1) << 40);
    } else if (s == "--device") {
      a.device = value();
      SWIFT_CHECK(a.device == "cpu" || a.device == "cuda",
                  "command line: --device \"", a.device,
                  "\": expected cpu or cuda");
    } else if (s == "--metrics") {
      a.metrics = value();
    } else if (s == "--emit-plan") {
      a.emitPlan = value();
    } else if (s == "--trace") {
      a.trace = value();
    } else if (s == "--save-params") {
      a.saveParams = value();
    } else if (s == "--weights") {
      a.weights = value();
    } else if (s == "--tokenizer") {
      a.tokenizer = value();
    } else if (s == "--chat-template") {
      a.chatTemplate = value();
    } else if (s == "--data-cache") {
      a.dataCache = value();
      if (a.dataCache == "off")
        a.dataCache.clear();
    } else if (s == "--save-dir") {
      a.saveDir = value();
    } else if (s == "--save-every") {
      a.saveEvery = parseInt(s, value(), 1, int64_t(1) << 40);
    } else if (s == "--keep") {
      a.keep = int(parseInt(s, value(), 1, 1 << 20));
    } else if (s == "--overwrite-save-dir") {
      a.overwriteSaveDir = true;
    } else if (s == "--resume") {
      a.resume = value();
    } else if (s == "--ignore-data-mismatch") {
      a.ignoreDataMismatch = true;
    } else if (s == "--export-hf") {
      a.exportHF = value();
    } else if (s == "--adapter") {
      a.adapter = value();
    } else if (s == "--merge") {
      a.merge = true;
    } else if (s == "--merge-base") {
      a.mergeBase = value();
    } else if (s == "--export-dtype") {
      a.exportDtype = value();
      a.exportDtypeGiven = true;
      (void)parseExportDtype(a.exportDtype);
    } else if (s == "--timeout") {
      a.timeout = double(parseInt(s, value(), 1, 1 << 20));
    } else {
      SWIFT_CHECK(s.rfind("-", 0) != 0, "command line: unknown option ",
                  swift::plan::briefText(s, 40), "\n", kUsage);
      // One positional argument, the plan: another is a value given to an
      // option that takes none, or one too many.
      SWIFT_CHECK(a.plan.empty(), "command line: unexpected argument \"",
                  swift::plan::briefText(s, 60), "\"",
                  previous.empty() ? std::string()
                                   : " after " + previous +
                                         " (which takes no value)",
                  ": the plan file is ", a.plan,
                  " and every other argument is an option (--data FILE, "
                  "--steps N, ...)");
      a.plan = s;
      childArgs.push_back(s);
      previous.clear();
      continue;
    }
    childArgs.push_back(s);
    previous = s;
    if (i > first) { // the option's value
      childArgs.push_back(argv[i]);
      previous.clear();
    }
  }
  SWIFT_CHECK(!a.plan.empty(), "command line: no plan file given\n", kUsage);
  SWIFT_CHECK(!a.stepsGiven || a.epochs == 0,
              "command line: --steps and --epochs both give the run's "
              "length; use one");
  SWIFT_CHECK(a.evalData.empty() || a.evalSplit == 0,
              "command line: --eval-data and --eval-split both give the "
              "evaluation set; use one");
  SWIFT_CHECK(a.evalEvery == 0 || !a.evalData.empty() || a.evalSplit > 0,
              "command line: --eval-every needs --eval-data FILE or "
              "--eval-split F");
  SWIFT_CHECK(a.inspectData == 0 || !a.data.empty(),
              "command line: --inspect-data needs --data FILE.jsonl");
  SWIFT_CHECK(!a.prepareData || !a.data.empty(),
              "command line: --prepare-data needs --data FILE.jsonl");
  SWIFT_CHECK(!a.saveDir.empty() || (a.saveEvery == 0 && a.keep == 0),
              "command line: --save-every and --keep need --save-dir");
  SWIFT_CHECK(!a.overwriteSaveDir || !a.saveDir.empty(),
              "command line: --overwrite-save-dir needs --save-dir");
  SWIFT_CHECK(!a.ignoreDataMismatch || !a.resume.empty(),
              "command line: --ignore-data-mismatch needs --resume");
  SWIFT_CHECK(!a.exportDtypeGiven || !a.exportHF.empty(),
              "command line: --export-dtype needs --export-hf DIR");
  return a;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / (1ull << 30));
  return buf;
}

/// An HF config.json's text, kept verbatim in checkpoints and exports.
std::string readConfigText(const std::string &path) {
  return swift::plan::readRegularFile(path, "an HF config.json (JSON)",
                                      16 << 20);
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

void drawProgress(int64_t done, int64_t total, double eta) {
  const int width = 30;
  int filled = int(width * done / total);
  std::fprintf(stderr, "\r\033[K[%.*s%*s] %lld/%lld eta %.0fs", filled,
               "##############################", width - filled, "",
               (long long)done, (long long)total, eta);
  std::fflush(stderr);
}

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

/// What the rank is doing, for an out-of-memory error to name.
std::string gActivity = "starting";

/// An allocation the device (or the host) cannot satisfy: the plan does not
/// fit this machine. CUDA raises c10::OutOfMemoryError; LibTorch's CPU
/// allocator raises a plain c10::Error that names itself.
bool isOutOfMemory(const c10::Error &e) {
  return dynamic_cast<const c10::OutOfMemoryError *>(&e) ||
         std::string(e.what_without_backtrace()).find("DefaultCPUAllocator") !=
             std::string::npos;
}

/// The advice printed under an out-of-memory error.
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

/// How the plan's data is read (Data.h): its lines in users' formats
/// (SampleEncoder.h) through the tokenizer files of `tokenizerDir` (read
/// at the first text line).
DataOptions dataOptions(const Plan &plan, const Args &a,
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
std::string tokenizerDir(const Args &a, const std::string &checkpointDir,
                         const std::string &weightsDir) {
  if (!a.tokenizer.empty())
    return a.tokenizer;
  if (!checkpointDir.empty() &&
      std::filesystem::exists(std::filesystem::path(checkpointDir) / "tokenizer.json"))
    return checkpointDir;
  return weightsDir;
}

int runRank(const Plan &plan, Args a, const RankEnv &env) {
  checkPlanMatchesWorld(plan, env.world);
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
  if (swift::plan::fp8Gemms(plan.training.precision)) {
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
                toString(swift::plan::storagePrecision(plan.training.precision)),
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
  const double timeout = a.timeout > 0      ? a.timeout
                         : device.is_cuda() ? 600
                                            : 120;
  Watchdog watchdog(timeout);

  // SWIFT_COMM=nccl|gloo forces a backend even for one rank (to exercise
  // the collective path on a single GPU); the default for one rank is no
  // communication at all.
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
  std::unique_ptr<Comm> comm = makeComm(copt);

  const TrainingConfig &t = plan.training;
  const bool lora = t.method != Method::Full;
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
  // Pretrained weights: checked whole (names, shapes, dtypes) before any
  // state is allocated.
  std::string weightsDir =
      !a.weights.empty() ? a.weights : plan.weights ? plan.weights->path : "";
  SWIFT_CHECK(lora || a.resume.empty() || a.weights.empty(),
              "command line: --resume and --weights both give the initial "
              "state; use one");
  SWIFT_CHECK(a.resume.empty() || a.adapter.empty(),
              "command line: --resume and --adapter both give the adapters; "
              "use one");
  // The initial state: full fine-tuning's weights (a checkpoint, or HF
  // weights); LoRA's adapters (a checkpoint, or a peft adapter) and frozen
  // base (HF weights; a LoRA checkpoint holds no base).
  std::unique_ptr<StateSource> initial, base;
  const Checkpoint *resumed = nullptr;
  if (!a.resume.empty()) {
    auto checkpoint = std::make_unique<Checkpoint>(a.resume, plan);
    resumed = checkpoint.get();
    initial = std::move(checkpoint);
  } else if (lora && !a.adapter.empty())
    initial = std::make_unique<PeftAdapter>(a.adapter, plan);
  else if (!lora && !weightsDir.empty())
    initial = std::make_unique<HFWeights>(weightsDir, plan.model);
  if (lora && !a.resume.empty()) {
    // The base a LoRA checkpoint trained on: the one it names, unless the
    // command line or the plan gives one (then they must agree).
    const std::string trained = resumed->baseWeights();
    std::error_code ec;
    if (weightsDir.empty()) {
      weightsDir = trained;
    } else if (!trained.empty() && std::filesystem::exists(trained, ec)) {
      SWIFT_CHECK(std::filesystem::equivalent(trained, weightsDir, ec),
                  resumed->dir(),
                  ": this LoRA checkpoint trained on the base ", trained,
                  ", not ", weightsDir, " (--weights or the plan's weights)");
    }
  }
  if (lora && !weightsDir.empty())
    base = std::make_unique<HFWeights>(weightsDir, plan.model);
  // The data, and where in it the run starts. A resumed run continues the
  // checkpoint's data (the file it recorded, or one with its fingerprint)
  // at the samples it consumed, whatever the global batch now.
  const int64_t firstStep = resumed ? resumed->step() : 0;
  const int64_t firstSample = resumed ? resumed->manifest().samplesConsumed : 0;
  DataRecord dataRecord;
  if (resumed) {
    const Manifest &m = resumed->manifest();
    SWIFT_CHECK(a.epochs > 0 || a.steps == 0 || a.steps >= m.step,
                "command line: --steps ", a.steps,
                " is below the step of the checkpoint (", m.step, ", ",
                resumed->dir(), "): --steps is the total to reach; ",
                "--steps 0 or ", m.step, " loads it without training");
    // Without a step to train (an export), the data does not matter.
    const bool trains = a.epochs > 0 || a.steps > m.step;
    std::vector<std::string> notes;
    if (trains)
      dataRecord = chooseResumeData(m, resumed->manifestPath(), a.data, plan,
                                    a.ignoreDataMismatch, notes);
    if (trains && m.globalBatchSize && *m.globalBatchSize != t.globalBatchSize)
      notes.push_back(
          "swift-run: warning: the checkpoint trained with global_batch_size " +
          std::to_string(*m.globalBatchSize) + ", the plan has " +
          std::to_string(t.globalBatchSize) + ": the data continues at sample " +
          std::to_string(firstSample) +
          " (the samples it consumed), the lr schedule at step " +
          std::to_string(m.step));
    if (env.rank == 0)
      for (const std::string &note : notes)
        (note.find(": warning: ") != std::string::npos ? std::cerr : std::cout)
            << note << std::endl;
  }
  DataOptions dataOpts =
      dataOptions(plan, a, tokenizerDir(a, resumed ? resumed->dir() : "", weightsDir));
  dataOpts.tokenize.alive = [&watchdog] { watchdog.progress("tokenizing the data"); };
  DataSources sources = makeDataSources(resumed ? dataRecord.path : a.data,
                                        dataOpts, a.evalSplit);
  std::unique_ptr<TokenSource> &data = sources.train;
  std::unique_ptr<TokenSource> evalData =
      !a.evalData.empty() ? makeEvalSource(a.evalData, dataOpts)
                          : std::move(sources.eval);
  if (!resumed) // the fingerprint the checkpoints record, taken once
    dataRecord = describeData(a.data, plan);
  // JSONL: the windows of an epoch (0: an endless stream of windows).
  const int64_t epochWindows = data->windowsPerEpoch();
  if (resumed && resumed->manifest().data && !dataRecord.synthetic &&
      !a.ignoreDataMismatch) {
    const double recorded = resumed->manifest().data->evalSplit;
    auto split = [](double f) {
      char text[48] = "none";
      if (f > 0)
        std::snprintf(text, sizeof text, "--eval-split %g", f);
      return std::string(text);
    };
    SWIFT_CHECK(recorded == a.evalSplit, resumed->manifestPath(),
                ": data: the checkpoint's run held out ", split(recorded),
                ", this run ", split(a.evalSplit),
                ": other training samples; resume with the same, or pass "
                "--ignore-data-mismatch");
  }
  if (resumed && !dataRecord.synthetic && resumed->manifest().data &&
      resumed->manifest().data->windows > 0 && epochWindows > 0 &&
      !a.ignoreDataMismatch)
    SWIFT_CHECK(resumed->manifest().data->windows == epochWindows,
                resumed->manifestPath(), ": data: the checkpoint's run laid ",
                dataRecord.path, " out into ",
                resumed->manifest().data->windows, " windows, this run into ",
                epochWindows, " (training.truncation or the line format "
                "changed); pass --ignore-data-mismatch to continue anyway");
  dataRecord.windows = epochWindows;
  dataRecord.evalSplit = dataRecord.synthetic ? 0 : a.evalSplit;
  // The run's length: --epochs E is ceil(E x windows / global batch) steps
  // (Data.h "Epochs": a step crossing an epoch's end takes the next
  // epoch's first windows).
  if (a.epochs > 0) {
    SWIFT_CHECK(epochWindows > 0, "command line: --epochs needs --data FILE.jsonl (",
                dataRecord.synthetic ? "synthetic tokens" : dataRecord.path,
                " has no epochs: its windows wrap around); use --steps N");
    const double steps = std::ceil(
        a.epochs * double(epochWindows) / double(t.globalBatchSize) - 1e-9);
    SWIFT_CHECK(steps >= 1 && steps <= double(kMaxSteps),
                "command line: --epochs ", a.epochs, ": ", steps,
                " steps of global_batch_size ", t.globalBatchSize, " over ",
                epochWindows, " windows");
    a.steps = int64_t(steps);
    SWIFT_CHECK(!resumed || a.steps >= resumed->step(), "command line: --epochs ",
                a.epochs, " is ", a.steps, " steps, below the step of the "
                "checkpoint (", resumed->step(), ", ", resumed->dir(), ")");
  }
  if (env.rank == 0) {
    if (const DataSummary *sum = data->summary())
      std::cout << "swift-run: data " << sum->line() << std::endl;
    if (evalData && !a.evalData.empty())
      std::cout << "swift-run: eval data " << evalData->summary()->line()
                << std::endl;
    if (epochWindows > 0) {
      char epochs[32];
      const double e = a.epochs > 0
                           ? a.epochs
                           : double(a.steps) * double(t.globalBatchSize) /
                                 double(epochWindows);
      std::snprintf(epochs, sizeof epochs, "%.4g", e);
      std::cout << "swift-run: " << epochs << " epoch" << (e == 1 ? "" : "s")
                << " x " << groupedDigits(epochWindows)
                << " windows = " << groupedDigits(a.steps) << " step"
                << (a.steps == 1 ? "" : "s") << " of "
                << groupedDigits(t.globalBatchSize) << std::endl;
    }
  }
  // Every step's first sample (firstSample + steps x global batch) is
  // below kMaxSamples.
  int64_t samplesToRun = 0;
  SWIFT_CHECK(!__builtin_mul_overflow(std::max<int64_t>(a.steps - firstStep, 0),
                                      t.globalBatchSize, &samplesToRun) &&
                  samplesToRun <= kMaxSamples - firstSample,
              "command line: --steps ", a.steps, ": ", a.steps - firstStep,
              " steps of global_batch_size ", t.globalBatchSize,
              " from sample ", firstSample, " count past 2^40 samples, the "
              "most a run consumes");
  // The export replaces a directory's model files: never the run's input.
  if (!a.exportHF.empty()) {
    auto same = [&](const std::string &dir) {
      std::error_code ec;
      return !dir.empty() && std::filesystem::exists(dir, ec) &&
             std::filesystem::exists(a.exportHF, ec) &&
             std::filesystem::equivalent(dir, a.exportHF, ec);
    };
    std::vector<std::pair<std::string, std::string>> inputs = {
        {weightsDir, "the model's weights (--weights or the plan's)"},
        {a.adapter, "the adapter (--adapter)"},
        {a.mergeBase, "the weights merged into (--merge-base)"},
        {a.resume, "the resumed checkpoints (--resume)"}};
    if (resumed)
      inputs.push_back({resumed->dir(), "the resumed checkpoint"});
    for (const auto &[dir, what] : inputs)
      if (same(dir))
        throw UserError("--export-hf " + a.exportHF + " is " + what +
                         ": the export would overwrite the model it read; "
                         "export to another directory");
  }
  // Directories that cannot be written fail now, not after the last step;
  // so does a save dir of another run's checkpoints.
  bool replaceSaved = false; // --overwrite-save-dir: at the first save
  if (env.rank == 0) {
    if (!a.exportHF.empty())
      checkWritableDir(a.exportHF, "--export-hf");
    if (!a.saveDir.empty()) {
      checkWritableDir(a.saveDir, "--save-dir");
      replaceSaved = checkSaveDir(a.saveDir, resumed ? resumed->dir() : "",
                                  a.overwriteSaveDir);
    }
    if (!a.saveParams.empty())
      checkWritableFile(a.saveParams, "--save-params");
    if (!a.metrics.empty())
      checkWritableFile(a.metrics, "--metrics");
    // A LibTorch that cannot profile or write traces fails now, not at the
    // traced step (after which the run's checkpoint and export were lost).
    if (!a.trace.empty()) {
      StepTrace probe;
      probe.start(device);
      probe.stop(a.trace);
    }
  }
  gActivity = initial ? "loading the initial state" : "allocating the model states";
  // The HF config.json that exports and checkpoints preserve: the resumed
  // checkpoint's, else the input model's (read now: --keep may delete the
  // resumed checkpoint before the export).
  std::string hfConfigPath;
  if (resumed)
    hfConfigPath = resumed->hfConfig();
  std::error_code configEc;
  if (hfConfigPath.empty() && !weightsDir.empty() &&
      std::filesystem::exists(
          std::filesystem::symlink_status(
              std::filesystem::path(weightsDir) / "config.json", configEc)))
    hfConfigPath = (std::filesystem::path(weightsDir) / "config.json").string();
  const std::string hfConfig =
      hfConfigPath.empty() ? "" : readConfigText(hfConfigPath);
  // The tokenizer files the exports and checkpoints carry: those the data
  // is read with (tokenizerDir: --tokenizer, the resumed checkpoint's, the
  // --weights directory's; LoRA: the base's).
  TokenizerFiles tokenizer =
      readTokenizerFiles(tokenizerDir(a, resumed ? resumed->dir() : "", weightsDir));
  // A --chat-template in Jinja is the template the model trained with: the
  // export's chat_template.jinja, which transformers prefers to
  // tokenizer_config.json's.
  if (!a.chatTemplate.empty() && !tokenizer.empty() &&
      std::filesystem::path(a.chatTemplate).extension() != ".json") {
    tokenizer.erase(std::remove_if(tokenizer.begin(), tokenizer.end(),
                                   [](const auto &f) { return f.first == "chat_template.jinja"; }),
                    tokenizer.end());
    tokenizer.emplace_back("chat_template.jinja",
                           swift::plan::readRegularFile(a.chatTemplate, "a chat template",
                                                        uint64_t(1) << 24));
  }
  const auto loadStart = std::chrono::steady_clock::now();
  Engine engine(plan, *comm, device, initial.get(), base.get());
  if (env.rank == 0 && (initial || base)) {
    std::string from = resumed ? resumed->dir()
                       : !a.adapter.empty() ? a.adapter
                                            : weightsDir;
    int64_t bytes = safetensorsBytes(from);
    if (lora && base && from != weightsDir) {
      bytes += safetensorsBytes(weightsDir);
      from = weightsDir + " + " + from;
    }
    std::cout << "swift-run: loaded " << from << " ("
              << transferReport(bytes, secondsSince(loadStart)) << ")"
              << std::endl;
    if (resumed)
      std::cout << "swift-run: resuming from " << from << " after step "
                << engine.stepsDone() << ", at sample " << firstSample
                << std::endl;
  }
  engine.setTotalSteps(a.steps); // the lr schedule's length
  watchdog.progress("initialization");

  const bool lead = env.rank == 0;
  std::ofstream metrics;
  if (lead && !a.metrics.empty()) {
    metrics.open(a.metrics);
    SWIFT_CHECK(metrics.good(), a.metrics, ": cannot open metrics file");
  }
  const bool tty = lead && isatty(STDERR_FILENO);
  if (lead)
    std::cout << "swift-run: " << plan.path << ": "
              << plan.model.numParameters() << " parameters, world "
              << env.world << ", zero " << plan.strategy.zero << ", offload "
              << toString(plan.strategy.offload) << ", checkpointing "
              << toString(plan.strategy.checkpointing) << ", "
              << toString(t.precision) << ", device " << device << ", schedule "
              << (plan.scheduleDerived ? "derived" : "from plan") << std::endl;
  if (lead) {
    const Engine::StateBytes sb = engine.stateBytes();
    std::cout << "model states on rank 0: parameters " << sb.parameters
              << " B, gradients " << sb.gradients << " B, optimizer "
              << sb.optimizer << " B, host " << sb.host << " B ("
              << gib(sb.parameters + sb.gradients + sb.optimizer)
              << " on the device)" << std::endl;
  }

  const double flopsTok =
      flopsPerToken(plan.model, t.sequenceLength, t.method != Method::Full);
  const double peak = peakFlops(device);
  const int64_t tokensPerStep = t.globalBatchSize * t.sequenceLength;
  const char *fault = std::getenv("SWIFT_FAULT_KILL"); // "rank:step", tests
  StepTrace trace;
  double sumRate = 0;
  int64_t rated = 0;
  auto runStart = std::chrono::steady_clock::now();
  SWIFT_ASSERT(engine.stepsDone() == firstStep);
  // Steps are read one behind: step s+1 is queued (Engine::launchStep)
  // before step s's numbers are read, so the device does not idle while
  // the host reports, loads the next batch and queues its first kernels. A
  // step that is traced, saved or last is read before anything else is
  // queued.
  struct Launched {
    Engine::PendingStep pending;
    int64_t step = 0, tokens = 0, peakMem = 0;
    bool traced = false;
    bool behind = false; // queued while the previous step was unread
    std::chrono::steady_clock::time_point start;
  };
  std::optional<Launched> inFlight;
  // Off: each step read before the next is queued (and on CPU, where a
  // step's work is done when it has been queued).
  const bool readsBehind = device.is_cuda() && kernelSwitchOn("ahead");
  // The first sample of step s (0-based): the data continues where the
  // checkpoint's run stopped, at any global batch.
  auto sampleOf = [&](int64_t s) {
    return firstSample + (s - firstStep) * t.globalBatchSize;
  };
  // JSONL: the epochs done after step s (fractional, as HF logs them).
  auto epochAfter = [&](int64_t s) -> std::optional<double> {
    if (epochWindows == 0)
      return std::nullopt;
    return double(sampleOf(s + 1)) / double(epochWindows);
  };
  // Evaluation after step s: every --eval-every steps (default: where the
  // step ends an epoch) and after the last.
  auto evaluatesAfter = [&](int64_t s) {
    if (!evalData)
      return false;
    if (s + 1 == a.steps)
      return true;
    if (a.evalEvery)
      return (s + 1) % a.evalEvery == 0;
    return epochWindows > 0 &&
           sampleOf(s + 1) / epochWindows > sampleOf(s) / epochWindows;
  };
  // eval_loss: the cross-entropy summed over every label token of the
  // evaluation set, divided by their number (token-weighted over the whole
  // set). Each rank evaluates micro-batches of its share (windows r*B ..
  // of each W*B); one all-reduce of (sum, count).
  auto evaluate = [&](int64_t s) {
    gActivity = "evaluating after step " + std::to_string(s + 1);
    const int64_t B = t.microBatchSize, stride = B * env.world,
                  windows = evalData->windowsPerEpoch();
    Engine::EvalSums sums;
    for (int64_t first = 0; first < windows; first += stride) {
      const Engine::EvalSums e =
          engine.evaluate({evalData->batch(first + env.rank * B, B)});
      sums.lossSum += e.lossSum;
      sums.tokens += e.tokens;
      watchdog.progress("an evaluation");
    }
    std::vector<double> v{sums.lossSum, double(sums.tokens)};
    comm->allReduceHost(v);
    const double loss = v[0] / v[1];
    if (!lead)
      return;
    if (tty)
      std::fprintf(stderr, "\r\033[K");
    char line[160];
    std::snprintf(line, sizeof line,
                  "eval after step %lld/%lld | eval_loss %.6f | %lld tokens",
                  (long long)(s + 1), (long long)a.steps, loss,
                  (long long)v[1]);
    std::cout << line;
    if (const std::optional<double> e = epochAfter(s)) {
      std::snprintf(line, sizeof line, " | epoch %.2f", *e);
      std::cout << line;
    }
    std::cout << std::endl;
    if (metrics.is_open()) {
      nlohmann::json j = {
          {"step", s + 1}, {"eval_loss", loss}, {"eval_tokens", int64_t(v[1])}};
      if (const std::optional<double> e = epochAfter(s))
        j["epoch"] = *e;
      metrics << j.dump() << std::endl;
    }
  };
  auto savesAfter = [&](int64_t s) {
    return !a.saveDir.empty() &&
           ((a.saveEvery && (s + 1) % a.saveEvery == 0) || s + 1 == a.steps);
  };
  // Rank 0's line (and metrics) of step s.
  auto report = [&](int64_t s, const Engine::StepResult &r, double loss,
                    double dt, double tps, double mfu, const Launched &l) {
    const int64_t peakMem = l.peakMem;
    if (tty)
      std::fprintf(stderr, "\r\033[K");
    // MFU needs the device's peak FLOP/s (n/a where unknown: CPU); on CPU
    // the peak is the process's resident memory, not comparable with the
    // plan's GPU prediction.
    char mfuText[32], memText[96];
    if (peak > 0)
      std::snprintf(mfuText, sizeof mfuText, "%.1f%%", 100 * mfu);
    else
      std::snprintf(mfuText, sizeof mfuText, "n/a");
    if (device.is_cuda())
      std::snprintf(memText, sizeof memText, "peak %s (plan %s)",
                    gib(peakMem).c_str(),
                    plan.predicted.peakMemoryBytes
                        ? gib(plan.predicted.peakMemoryBytes).c_str()
                        : "n/a");
    else
      std::snprintf(memText, sizeof memText, "host RSS %s",
                    gib(peakMem).c_str());
    char line[320], epochText[32] = "";
    if (const std::optional<double> e = epochAfter(s))
      std::snprintf(epochText, sizeof epochText, " | epoch %.2f", *e);
    std::snprintf(line, sizeof line,
                  "step %lld/%lld | loss %.6f | lr %.3g | grad norm %.4g | "
                  "%.3f s | %.0f tok/s | MFU %s | %s%s",
                  (long long)(s + 1), (long long)a.steps, loss, r.lr,
                  r.gradNorm, dt, tps, mfuText, memText, epochText);
    std::cout << line << std::endl;
    if (metrics.is_open()) {
      nlohmann::json j = {
          {"step", s + 1},
          {"loss", loss},
          {"lr", r.lr},
          {"grad_norm", r.gradNorm},
          {"step_seconds", dt},
          {"tokens_per_second", tps},
          {"tokens", l.tokens},
          {"mfu", peak > 0 ? nlohmann::json(mfu) : nlohmann::json()},
          // The device's peak is what the plan predicts; a CPU run has only
          // the process's resident set, which is not comparable.
          {device.is_cuda() ? "peak_memory_bytes" : "host_rss_bytes", peakMem},
          {"planned_peak_memory_bytes", plan.predicted.peakMemoryBytes},
          {"planned_step_seconds", plan.predicted.stepSeconds},
          {"planned_tokens_per_second", plan.predicted.tokensPerSecond},
          {"world_size", env.world},
          {"collectives",
           {{"all_reduce", r.collectives.allReduce},
            {"reduce_scatter", r.collectives.reduceScatter},
            {"all_gather", r.collectives.allGather}}}};
      if (const std::optional<double> e = epochAfter(s))
        j["epoch"] = *e;
      if (device.is_cuda()) // what fragmentation adds to the allocated peak
        j["peak_reserved_bytes"] = peakReservedBytes(device);
      metrics << j.dump() << std::endl;
    }
  };
  auto readStep = [&](Launched &l) {
    const int64_t s = l.step;
    const Engine::StepResult r = engine.finishStep(l.pending);
    if (l.traced)
      trace.stop(a.trace);
    // Queued behind the previous step: the device's time from that one's
    // end to this one's (the host may read either late). Otherwise from
    // its launch to its reading.
    double dt =
        l.behind && r.sincePrevious >= 0
            ? r.sincePrevious
            : secondsSince(l.start);
    std::vector<double> v{r.loss, dt};
    comm->allReduceHost(v);
    const double loss = v[0] / env.world;
    dt = v[1] / env.world;
    // A non-finite loss or gradient norm means the weights are, or are
    // about to be: stop before saving them (a rotating --keep would delete
    // the good checkpoints) or training on. Every rank reads the same
    // numbers (the loss all-reduced, the norm global).
    auto number = [](double x) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", x);
      return std::string(text);
    };
    if (!std::isfinite(loss) || !std::isfinite(r.gradNorm))
      throw RuntimeFailure(
          "step " + std::to_string(s + 1) + ": the loss is " +
          number(loss) + " and the gradient norm " +
          number(r.gradNorm) +
          ": training diverged (or the initial weights hold NaN/inf); "
          "stopped before saving anything of this step" +
          (a.saveDir.empty() ? std::string()
                             : " (--save-dir " + a.saveDir +
                                   " keeps the earlier checkpoints)"));
    watchdog.progress("a training step");
    const double tps = double(l.tokens) / dt;
    const double mfu = peak > 0 ? tps * flopsTok / (peak * env.world) : 0;
    if (s > 0 || a.steps == 1) {
      sumRate += tps;
      ++rated;
    }
    if (lead)
      report(s, r, loss, dt, tps, mfu, l);
    if (evaluatesAfter(s))
      evaluate(s);
    // The step's line first (and its evaluation's), then its checkpoint's.
    if (savesAfter(s)) {
      gActivity = "saving the checkpoint of step " + std::to_string(s + 1);
      const auto saveStart = std::chrono::steady_clock::now();
      SaveRequest save;
      save.saveDir = a.saveDir;
      save.step = s + 1;
      save.samplesConsumed = sampleOf(s + 1);
      save.epoch = epochAfter(s);
      save.keep = a.keep;
      save.replaceOthers = replaceSaved;
      save.hfConfig = hfConfig;
      save.baseWeights = lora ? weightsDir : std::string();
      save.data = dataRecord;
      save.tokenizer = &tokenizer;
      const std::string saved = saveCheckpoint(engine, plan, save);
      replaceSaved = false;
      comm->barrier();
      watchdog.progress("a checkpoint");
      if (lead)
        std::cout << "swift-run: saved " << saved << " ("
                  << transferReport(safetensorsBytes(saved),
                                    secondsSince(saveStart))
                  << ")" << std::endl;
    }
    if (tty) {
      double elapsed = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - runStart)
                           .count();
      drawProgress(s + 1, a.steps,
                   elapsed / double(s + 1 - firstStep) * double(a.steps - s - 1));
    }
  };
  auto readInFlight = [&] {
    if (inFlight)
      readStep(*inFlight);
    inFlight.reset();
  };
  for (int64_t s = firstStep; s < a.steps; ++s) {
    if (fault && std::to_string(env.rank) + ":" + std::to_string(s) == fault)
      std::raise(SIGKILL);
    // Global sample (window) numbers: the step's batch at any world size.
    std::vector<Batch> micro;
    for (int64_t k = 0; k < t.gradientAccumulation; ++k)
      micro.push_back(data->batch(
          sampleOf(s) + (k * env.world + env.rank) * t.microBatchSize,
          t.microBatchSize));
    // The loss averages over the step's trained tokens (JSONL: labels not
    // -100), counted over the whole global batch on every rank; tokens/s
    // counts real (non-padding) tokens.
    const int64_t stepTrained =
        micro[0].masked
            ? data->trainedTokens(sampleOf(s), t.globalBatchSize)
            : 0;
    Launched l;
    l.step = s;
    l.tokens = micro[0].masked
                   ? data->realTokens(sampleOf(s), t.globalBatchSize)
                   : tokensPerStep;
    // Every rank reads (a collective) and queues (collectives) in the same
    // order: the traced step runs alone on all of them, traced on rank 0.
    const bool tracedStep =
        !a.trace.empty() && s == std::min<int64_t>(2, a.steps - 1);
    static const bool traceBehind = std::getenv("SWIFT_TRACE_BEHIND");
    const bool alone = tracedStep && !traceBehind;
    l.traced = lead && tracedStep;
    if (alone) // its trace holds its own work only
      readInFlight();
    gActivity = "running step " + std::to_string(s + 1);
    resetPeakMemory(device);
    if (l.traced)
      trace.start(device);
    l.start = std::chrono::steady_clock::now();
    l.behind = inFlight.has_value();
    l.pending = engine.launchStep(micro, stepTrained);
    // The allocator's peak is the host's view: every allocation of the
    // step was made while queueing it.
    l.peakMem = peakMemoryBytes(device);
    readInFlight();
    inFlight = std::move(l);
    if (alone || savesAfter(s) || evaluatesAfter(s) || s + 1 == a.steps ||
        !readsBehind)
      readInFlight();
  }
  // No step to train (--steps 0, or a checkpoint at its --steps): the
  // evaluation is of the weights as loaded.
  if (evalData && firstStep >= a.steps)
    evaluate(firstStep - 1);
  if (tty)
    std::fprintf(stderr, "\n");
  if (lead && rated)
    std::cout << "swift-run: mean " << int64_t(sumRate / rated)
              << " tok/s over " << rated << " step(s)"
              << (a.steps > 1 ? " (first step excluded)" : "") << std::endl;
  if (!a.exportHF.empty()) {
    gActivity = "exporting the model";
    ExportOptions options;
    options.dtype = parseExportDtype(a.exportDtype);
    // Tests (and the curious) shard small models as HF shards large ones.
    if (const char *shard = std::getenv("SWIFT_EXPORT_SHARD_BYTES"))
      options.maxShardBytes = parseInt("SWIFT_EXPORT_SHARD_BYTES", shard, 1,
                                       int64_t(1) << 50);
    options.configText = hfConfig;
    options.maxPositionEmbeddings = std::max<int64_t>(4096, t.sequenceLength);
    options.mergeBase = a.mergeBase;
    const auto exportStart = std::chrono::steady_clock::now();
    if (lora && !a.merge)
      exportAdapter(engine, plan, a.exportHF, options, weightsDir);
    else
      exportHF(engine, plan, a.exportHF, options);
    if (lead) // beside the weights or the adapter
      writeTokenizerFiles(a.exportHF, tokenizer);
    if (lead)
      std::cout << "swift-run: exported to " << a.exportHF << " ("
                << transferReport(safetensorsBytes(a.exportHF),
                                  secondsSince(exportStart))
                << ")" << std::endl;
  }
  if (!a.saveParams.empty()) {
    auto params = engine.parameters();
    if (lead) {
      // Raw fp32, in the units' table order (docs/runtime.md).
      std::ofstream out(a.saveParams, std::ios::binary);
      SWIFT_CHECK(out.good(), a.saveParams, ": cannot write");
      for (auto &[name, tensor] : params)
        out.write(static_cast<const char *>(tensor.contiguous().data_ptr()),
                  std::streamsize(tensor.numel() * sizeof(float)));
    }
  }
  comm->barrier();
  watchdog.progress("shutdown");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // The caching allocator maps memory into growable segments unless the
  // user configured it: the gradient buffers that each step allocates in
  // backward and frees after the optimizer (Engine.h) then reuse the
  // activations' memory instead of new segments. Measured on the H200
  // (benchmarks/runtime/alloc_probe.sh): Llama-3.1-8B pure bf16 reserves
  // 65.96 GiB for a 63.62 GiB allocated peak, 76.71 GiB without; tokens/s
  // within 1%. Ranks inherit it.
  setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", /*overwrite=*/0);
  installCrashHandler("swift-run");
  std::string who = "swift-run";
  std::string oomHint;
  try {
    std::vector<std::string> childArgs;
    Args a = parseArgs(argc, argv, childArgs);
    Plan plan = parsePlan(a.plan);
    oomHint = outOfMemoryHint(plan);
    // No weights, no device, no ranks: the samples as training reads them.
    if (a.inspectData > 0) {
      inspectData(a.data,
                  dataOptions(plan, a,
                              tokenizerDir(a, "", !a.weights.empty() ? a.weights
                                                  : plan.weights ? plan.weights->path
                                                                 : "")),
                  a.inspectData, std::cout);
      return 0;
    }
    if (a.prepareData) {
      const DataOptions o = dataOptions(
          plan, a,
          tokenizerDir(a, "", !a.weights.empty() ? a.weights
                              : plan.weights ? plan.weights->path
                                             : ""));
      DataSources sources = makeDataSources(a.data, o, a.evalSplit);
      std::cout << "swift-run: data " << sources.train->summary()->line() << "\n";
      if (const int64_t w = sources.train->windowsPerEpoch())
        std::cout << "swift-run: an epoch is " << groupedDigits(w)
                  << " windows, "
                  << groupedDigits((w + plan.training.globalBatchSize - 1) /
                                   plan.training.globalBatchSize)
                  << " steps of global batch "
                  << plan.training.globalBatchSize << "\n";
      if (!a.evalData.empty())
        std::cout << "swift-run: eval data "
                  << makeEvalSource(a.evalData, o)->summary()->line() << "\n";
      return 0;
    }
    if (!a.emitPlan.empty()) {
      std::ofstream out(a.emitPlan);
      SWIFT_CHECK(out.good(), a.emitPlan, ": cannot write");
      out << planToJson(plan);
      return 0;
    }
    const char *hosted = std::getenv("SWIFT_STORE_HOSTED");
    if (a.nproc > 0 && !(hosted && std::string(hosted) == "1")) {
      checkPlanMatchesWorld(plan, a.nproc);
      return launchLocalRanks(a.nproc, childArgs);
    }
    RankEnv env = readRankEnv();
    if (env.world > 1)
      who += " rank " + std::to_string(env.rank);
    return runRank(plan, a, env);
  } catch (const UserError &e) {
    reportFatal(who, std::string("error: ") + e.what(), /*peerFailure=*/false,
                /*exitCode=*/2);
    return 2;
  } catch (const PeerFailure &e) {
    reportFatal(who, std::string("error: ") + e.what(), /*peerFailure=*/true);
    return 1;
  } catch (const c10::Error &e) {
    if (isOutOfMemory(e)) {
      reportFatal(who, "error: out of memory while " + gActivity + ": " +
                           e.what_without_backtrace() + "\n" + oomHint);
      return 1;
    }
    reportFatal(who, std::string("error: ") + e.what_without_backtrace());
    return 1;
  } catch (const std::exception &e) {
    reportFatal(who, std::string("error: ") + e.what());
    return 1;
  }
}
