//===- ActivationOffloadTest.cpp - checkpointed inputs on the host --------===//
//
// strategy.offload_activations (plan.schedule.units[u].offload_input): the
// fully checkpointed decoders it names keep their input on the host between
// their forward and their backward (ActivationStash.h). On the CPU that is a
// copy out and back of the same values: every loss and parameter is the run
// without offload's, bit for bit, whatever else the plan does (ZeRO 0-3 at
// two ranks, optimizer/param offload, LoRA, QLoRA, packing, accumulation,
// FP8, evaluation between steps). And swift-run --gpu-memory's refusals.
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>

using namespace swift::rt::testing;

namespace {

/// `p` with full checkpointing, and with the first `k` decoders' inputs on
/// the host (-1: all; 0: none, the reference).
json offloading(json p, int k) {
  p["strategy"]["checkpointing"] = "full";
  if (k != 0)
    p["strategy"]["offload_activations"] = k;
  return p;
}

json loraPlan(int zero, int world, const std::string &method) {
  return withLora(tinyPlan(zero, world), method, 0.1);
}

/// The run of `plan` with and without offloading `k` decoders' inputs
/// gives the same losses (eval losses too) and parameters, bit for bit;
/// the offloading run says how many units offload. Returns that run.
Result expectSameAsWithout(const json &plan, int k, const std::string &args,
                           const std::string &what,
                           const std::string &env = "") {
  const int world = plan["world"]["size"].get<int>();
  const std::string common = "--steps 3 --save-params params.bin" +
                             std::string(" --nproc-per-node ") +
                             std::to_string(world) + " " + args;
  Result ref = runPlan(offloading(plan, 0), common, env);
  Result off = runPlan(offloading(plan, k), common, env);
  EXPECT_EQ(ref.exitCode, 0) << what << "\n" << ref.output;
  EXPECT_EQ(off.exitCode, 0) << what << "\n" << off.output;
  const int layers = plan["model"]["num_hidden_layers"].get<int>();
  const std::string line =
      "activation offload on rank 0: " + std::to_string(k < 0 ? layers : k) +
      " of " + std::to_string(layers) +
      " decoders keep their checkpointed input on the "
      "host";
  EXPECT_NE(off.output.find(line), std::string::npos) << what << "\n"
                                                      << off.output;
  EXPECT_EQ(ref.output.find("activation offload"), std::string::npos)
      << ref.output;
  EXPECT_EQ(ref.metrics.size(), off.metrics.size()) << what;
  for (size_t i = 0; i < std::min(ref.metrics.size(), off.metrics.size()); ++i)
    for (const char *key : {"loss", "eval_loss"})
      if (ref.metrics[i].contains(key)) {
        EXPECT_TRUE(off.metrics[i].contains(key)) << what;
        EXPECT_EQ(ref.metrics[i][key].get<double>(),
                  off.metrics[i].value(key, -1.0))
            << what << ", " << key << " of record " << i;
      }
  EXPECT_EQ(ref.losses().size(), 3u) << what;
  EXPECT_TRUE(slurp(ref.dir + "/params.bin") == slurp(off.dir + "/params.bin"))
      << what << ": the parameters differ";
  return off;
}

/// 24 samples of 10 to 20 tokens: packed windows of two or three.
std::string packableData() {
  std::mt19937 rng(11);
  std::vector<Sample> samples;
  for (int i = 0; i < 24; ++i) {
    Sample s;
    const int n = std::uniform_int_distribution<int>(10, 20)(rng);
    for (int k = 0; k < n; ++k)
      s.ids.push_back(std::uniform_int_distribution<int>(0, 255)(rng));
    samples.push_back(s);
  }
  return writeJsonl(samples);
}

/// One error line naming the flag, and exit 2, before any step.
void expectOneLineRefusal(const Result &r, const std::string &text,
                          const std::string &what) {
  EXPECT_EQ(r.exitCode, 2) << what << "\n" << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
      << what << "\n"
      << r.output;
  EXPECT_NE(r.output.find("swift-run: error: "), std::string::npos)
      << what << "\n"
      << r.output;
  EXPECT_NE(r.output.find(text), std::string::npos) << what << "\n" << r.output;
}

} // namespace

TEST(ActivationOffload, FullFineTuneIsBitIdenticalAtEveryZeroStage) {
  // World 1: 4 micro-batches a step and the update in backward; world 2
  // (Gloo): 2 micro-batches, ZeRO 0 and 3, ZeRO-3 with the optimizer and
  // the parameter shards on the host, ZeRO-2 with the optimizer there.
  for (auto [zero, world, offload] :
       {std::tuple<int, int, const char *>{0, 1, "none"},
        {0, 2, "none"},
        {3, 2, "none"},
        {2, 2, "optimizer"},
        {3, 2, "optimizer+params"}}) {
    json p = tinyPlan(zero, world);
    p["strategy"]["offload"] = offload;
    expectSameAsWithout(p, -1, "",
                        "zero " + std::to_string(zero) + ", world " +
                            std::to_string(world) + ", offload " + offload);
  }
}

TEST(ActivationOffload, SomeUnitsOffloadTheRestKeepTheirInput) {
  // Of 3 checkpointed decoders, offload_activations 1 puts unit 1's input
  // on the host (unit 2's backward prefetches it; the head's and unit 3's
  // prefetch nothing), 2 units 1 and 2's (unit 3's prefetches unit 2's);
  // the others keep theirs on the device.
  json p = tinyPlan(0, 1);
  p["model"]["num_hidden_layers"] = 3;
  Result one =
      expectSameAsWithout(p, 1, "--report r.html", "offload_activations 1");
  expectSameAsWithout(p, 2, "", "offload_activations 2");
  // The run report lists it too.
  EXPECT_NE(
      slurp(one.dir + "/r.html")
          .find("1 of 3 decoders keep their checkpointed input on the host ("),
      std::string::npos);
}

TEST(ActivationOffload, EachUnitGetsItsOwnInputBack) {
  // Four decoders, all offloaded, at 4 micro-batches a step: each unit's
  // input is the output of the unit before it, distinct from every other
  // unit's and from the same unit's in other micro-batches. A stash that
  // hands unit u another unit's input (or another micro-batch's) rebuilds
  // its graph on the wrong values: unit u's weight gradients, and so the
  // parameters after step 1 and the losses from step 2, differ from the
  // run without offload. (Checked: a stash that swaps units 1 and 2's
  // slots, or that copies only the first micro-batch's inputs, fails this
  // test from the first step on.)
  json p = tinyPlan(0, 1);
  p["model"]["num_hidden_layers"] = 4;
  expectSameAsWithout(p, -1, "", "four decoders");
}

TEST(ActivationOffload, LoraAndQloraAreBitIdentical) {
  // With LoRA dropout (its masks are drawn again in the recomputation);
  // QLoRA's NF4 base dequantized again in backward, at ZeRO-3 over two
  // ranks too.
  for (auto [method, zero, world] :
       {std::tuple<const char *, int, int>{"lora", 0, 1},
        {"qlora", 0, 1},
        {"qlora", 3, 2}}) {
    expectSameAsWithout(loraPlan(zero, world, method), -1, "",
                        std::string(method) + ", zero " + std::to_string(zero) +
                            ", world " + std::to_string(world));
  }
}

TEST(ActivationOffload, PackedDataAndEvaluationAreBitIdentical) {
  // Packed windows (block-diagonal attention, per-token positions) and an
  // evaluation after every step, which never stashes.
  const std::string data = packableData();
  expectSameAsWithout(tinyPlan(0, 1), -1,
                      "--data " + data + " --eval-split 0.25 --eval-every 1",
                      "packing + eval");
}

TEST(ActivationOffload, Fp8IsBitIdentical) {
  json p = tinyPlan(0, 1);
  p["training"]["precision"] = "fp8-mixed";
  expectSameAsWithout(p, -1, "", "fp8-mixed", "SWIFT_FP8_EMULATE=1 ");
}

TEST(GpuMemory, RefusedOnTheCpu) {
  // A cap of the CUDA allocator means nothing on the CPU: refused, with
  // or without --device cpu (this build's default device is the CPU).
  for (const char *device : {"", " --device cpu"})
    expectOneLineRefusal(
        runPlan(tinyPlan(0, 1),
                std::string("--steps 1 --gpu-memory 8") + device),
        "command line: --gpu-memory needs --device cuda", device);
}

TEST(GpuMemory, BadValuesNameTheFlag) {
  for (const char *v : {"0", "-4", "abc", "nan", "inf", "8GiB", "2e6", "\"\""})
    expectOneLineRefusal(
        runPlan(tinyPlan(0, 1), std::string("--steps 1 --gpu-memory ") + v),
        "command line: --gpu-memory", v);
}

TEST(GpuMemory, ThePlansCapacityIsIgnoredOnTheCpu) {
  // world.gpu_memory_bytes (1 GiB) below the predicted peak (2 GiB) would
  // be refused on a GPU; on the CPU there is no allocator to cap.
  json p = tinyPlan(0, 1);
  p["world"]["gpu_memory_bytes"] = int64_t(1) << 30;
  p["predicted"] = {{"peak_memory_bytes", int64_t(2) << 30},
                    {"step_seconds", 1.0},
                    {"tokens_per_second", 1.0}};
  Result r = runPlan(p, "--steps 1");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output.find("capped"), std::string::npos) << r.output;
}
