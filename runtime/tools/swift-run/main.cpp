//===- swift-run - execute a swift plan -----------------------------------===//
//
// swift-run plan.json [--nproc-per-node N] [--steps N | --epochs E]
//                     [--data FILE] [--inspect-data N]
//                     [--eval-data FILE | --eval-split F] [--eval-every N]
//                     [--device cpu|cuda] [--gpu-memory GIB] [--metrics FILE]
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
#include "swift/Plan/Overrides.h"
#include "swift/Runtime/core/PlanTypes.h"
#include "swift/Runtime/dist/Launch.h"
#include "swift/Runtime/io/Data.h"
#include "swift/Runtime/io/Weights.h"
#include "swift/Runtime/run/Run.h"

#include <c10/util/Exception.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace swift::rt;

namespace {

const char *kUsage =
    "usage: swift-run plan.json [--nproc-per-node N] [--steps N | --epochs "
    "E]\n"
    "                 [--data FILE] [--inspect-data N]\n"
    "                 [--tokenizer DIR] [--chat-template FILE]\n"
    "                 [--eval-data FILE | --eval-split F] [--eval-every N]\n"
    "                 [--device cpu|cuda] [--gpu-memory GIB] [--metrics FILE]\n"
    "                 [--save-params FILE]\n"
    "                 [--log-every N] [--tensorboard DIR] [--report FILE]\n"
    "                 [--set KEY=VALUE]\n"
    "                 [--timeout SECONDS] [--emit-plan FILE] [--trace FILE]\n"
    "                 [--weights DIR] [--export-hf DIR [--export-dtype D]]\n"
    "                 [--save-dir DIR [--save-every N] [--keep K]\n"
    "                  [--overwrite-save-dir]]\n"
    "                 [--resume P [--ignore-data-mismatch]]\n"
    "                 [--adapter DIR] [--merge [--merge-base DIR]]\n"
    "  --set KEY=VALUE   change a plan field that affects neither memory nor\n"
    "                    time (training.optimizer.lr, .betas, .eps,\n"
    "                    .weight_decay, training.lr_schedule.*,\n"
    "                    training.max_grad_norm, training.seed,\n"
    "                    training.loss_on, training.lora.alpha); repeatable\n"
    "  --log-every N     a console line and metrics record every N steps\n"
    "                    (loss: their mean; default: every max(1, steps/100))\n"
    "  --tensorboard DIR TensorBoard event files (loss, lr, grad norm,\n"
    "                    tokens/s, MFU, memory and step time against the\n"
    "                    plan, eval loss)\n"
    "  --report FILE     an HTML page of the run (loss, eval loss, lr, tok/s and\n"
    "                    memory against the plan, data, checkpoints); default\n"
    "                    SAVE_DIR/report.html with --save-dir\n"
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
    "  --gpu-memory GIB  cap each GPU's caching allocator at GIB GiB (default:\n"
    "                    the plan's world.gpu_memory_bytes where the GPU has\n"
    "                    more); a plan predicting a higher peak is refused\n"
    "  --timeout SECONDS   a rank without progress this long exits (default\n"
    "                    120 on CPU, 600 on CUDA)\n"
    "  --trace FILE        write a Chrome trace (operators, CUDA kernels) of\n"
    "                    the third step, or the last of fewer (rank 0)\n";


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


/// Parses argv; also returns argv without --nproc-per-node for the ranks.
RunOptions parseArgs(int argc, char **argv, std::vector<std::string> &childArgs) {
  RunOptions a;
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
      a.nproc = int(parseIntFlag(s, value(), 1, 1024));
      continue; // not passed to the ranks
    } else if (s == "--steps") {
      a.steps = parseIntFlag(s, value(), 0, int64_t(1) << 40);
      a.stepsGiven = true;
    } else if (s == "--epochs") {
      a.epochs = parseReal(s, value(), 0, 1e6, true);
    } else if (s == "--data") {
      a.data = value();
    } else if (s == "--inspect-data") {
      a.inspectData = parseIntFlag(s, value(), 1, int64_t(1) << 40);
    } else if (s == "--prepare-data") {
      a.prepareData = true;
    } else if (s == "--eval-data") {
      a.evalData = value();
    } else if (s == "--eval-split") {
      a.evalSplit = parseReal(s, value(), 0, 1, false);
    } else if (s == "--eval-every") {
      a.evalEvery = parseIntFlag(s, value(), 1, int64_t(1) << 40);
    } else if (s == "--device") {
      a.device = value();
      SWIFT_CHECK(a.device == "cpu" || a.device == "cuda",
                  "command line: --device \"", a.device,
                  "\": expected cpu or cuda");
    } else if (s == "--metrics") {
      a.metrics = value();
    } else if (s == "--tensorboard") {
      a.tensorboard = value();
    } else if (s == "--report") {
      a.report = value();
    } else if (s == "--log-every") {
      a.logEvery = parseIntFlag(s, value(), 1, int64_t(1) << 40);
    } else if (s == "--set") {
      a.overrides.push_back(value());
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
      a.saveEvery = parseIntFlag(s, value(), 1, int64_t(1) << 40);
    } else if (s == "--keep") {
      a.keep = int(parseIntFlag(s, value(), 1, 1 << 20));
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
    } else if (s == "--gpu-memory") {
      a.gpuMemoryGiB = parseReal(s, value(), 0, 1e6, true);
    } else if (s == "--timeout") {
      a.timeout = double(parseIntFlag(s, value(), 1, 1 << 20));
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


/// The plan, with the command line's --set overrides (validated as a
/// plan.json is).
Plan readPlan(const RunOptions &a) {
  if (a.overrides.empty())
    return parsePlan(a.plan);
  nlohmann::json j = swift::plan::readJsonFile(a.plan, "a plan file (plan.json)",
                                               uint64_t(64) << 20);
  for (const std::string &o : a.overrides)
    swift::plan::applyRunOverride(j, o, a.plan);
  return parsePlanText(j.dump(), a.plan);
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
    RunOptions a = parseArgs(argc, argv, childArgs);
    Plan plan = readPlan(a);
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
      reportFatal(who, "error: out of memory while " + runActivity() + ": " +
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
