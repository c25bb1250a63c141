//===- WeightsTest.cpp - HF model directories in and out of swift-run -----===//
//
// swift-run --weights / plan "weights" and --export-hf, end to end on CPU:
// an exported model loads back bit for bit, a loaded model trains exactly
// as the same weights generated in memory, any ZeRO stage and world size
// loads the same model, and damaged or mismatched directories are refused
// (exit 2) naming the file and the tensor before any step runs.
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include "swift/Runtime/io/SafeTensors.h"

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

using namespace swift::rt::testing;
namespace st = swift::rt::safetensors;

namespace {

std::string exported(const Result &r) { return r.dir + "/hf"; }

/// The tiny model's random initial weights, exported as fp32.
Result exportInitial(int zero = 0, int world = 1) {
  Result r = runPlan(tinyPlan(zero, world),
                     "--steps 0 --export-hf hf --export-dtype fp32 "
                     "--nproc-per-node " +
                         std::to_string(world));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  return r;
}

/// Every tensor of a model directory as fp32, by name.
std::map<std::string, std::vector<float>> readModel(const std::string &dir) {
  st::ModelWeights w(dir);
  std::map<std::string, std::vector<float>> out;
  for (const std::string &name : w.names()) {
    auto [t, f] = w.find(name);
    std::vector<float> v(static_cast<size_t>(t->numel()));
    f->readF32(*t, 0, t->numel(), v.data());
    out[name] = std::move(v);
  }
  return out;
}

TEST(Weights, ExportLoadExportIsBitIdentical) {
  Result a = exportInitial();
  EXPECT_TRUE(fs::exists(exported(a) + "/config.json"));
  Result b = runPlan(tinyPlan(0, 1), "--steps 0 --weights " + exported(a) +
                                         " --export-hf hf --export-dtype fp32");
  ASSERT_EQ(b.exitCode, 0) << b.output;
  EXPECT_EQ(slurp(exported(a) + "/model.safetensors"),
            slurp(exported(b) + "/model.safetensors"));
  // The input's config.json is preserved verbatim.
  EXPECT_EQ(slurp(exported(a) + "/config.json"),
            slurp(exported(b) + "/config.json"));
  // bf16 in, bf16 out: bit-identical too (an fp32 master of a bf16 value
  // rounds back to it).
  Result c = runPlan(tinyPlan(0, 1), "--steps 0 --weights " + exported(a) +
                                         " --export-hf hf");
  ASSERT_EQ(c.exitCode, 0) << c.output;
  Result d = runPlan(tinyPlan(0, 1), "--steps 0 --weights " + exported(c) +
                                         " --export-hf hf --export-dtype bf16");
  ASSERT_EQ(d.exitCode, 0) << d.output;
  EXPECT_EQ(slurp(exported(c) + "/model.safetensors"),
            slurp(exported(d) + "/model.safetensors"));
  EXPECT_LT(fs::file_size(exported(c) + "/model.safetensors"),
            fs::file_size(exported(a) + "/model.safetensors"));
  // What was written is the model's parameters under HF's names.
  auto model = readModel(exported(a));
  EXPECT_TRUE(model.count("model.embed_tokens.weight"));
  EXPECT_TRUE(model.count("model.layers.1.self_attn.q_norm.weight"));
  EXPECT_TRUE(model.count("model.norm.weight"));
  EXPECT_FALSE(model.count("lm_head.weight")); // tied
}

TEST(Weights, LoadedWeightsTrainAsTheSameWeightsInMemory) {
  Result a = exportInitial();
  Result fromSeed = runPlan(tinyPlan(0, 1), "--steps 3");
  Result loaded =
      runPlan(tinyPlan(0, 1), "--steps 3 --weights " + exported(a));
  ASSERT_EQ(loaded.exitCode, 0) << loaded.output;
  // Same initial values, same computation: bit for bit.
  expectSameLosses(fromSeed, loaded, 0.0, "loaded vs seed");
  // A plan's "weights" says the same as --weights.
  json p = tinyPlan(0, 1);
  p["weights"] = {{"format", "safetensors"}, {"path", exported(a)}};
  expectSameLosses(fromSeed, runPlan(p, "--steps 3"), 0.0, "plan weights");
}

TEST(Weights, EveryZeroStageAndWorldLoadsTheSameModel) {
  Result a = exportInitial();
  Result one = runPlan(tinyPlan(0, 1), "--steps 3 --weights " + exported(a) +
                                           " --export-hf hf --export-dtype fp32");
  ASSERT_EQ(one.exitCode, 0) << one.output;
  auto trainedOne = readModel(exported(one));
  for (int zero : {1, 2, 3}) {
    Result two = runPlan(tinyPlan(zero, 2),
                         "--steps 3 --nproc-per-node 2 --weights " +
                             exported(a) + " --export-hf hf --export-dtype fp32");
    expectSameLosses(one, two, kLossTol, "zero " + std::to_string(zero));
    // The export gathers every rank's shard of the masters. World 2 sums
    // gradients in another order; AdamW normalizes each update, so an
    // element whose gradient is near zero can move by up to lr (1e-3) on
    // either side: a tenth of that bounds the difference after 3 steps.
    auto trainedTwo = readModel(exported(two));
    ASSERT_EQ(trainedOne.size(), trainedTwo.size());
    for (auto &[name, values] : trainedOne)
      EXPECT_LT(maxAbsDiff(values, trainedTwo[name]), 1e-4)
          << name << " zero " << zero;
    // Untrained, each rank's shard read and the gather are exact.
    Result same = runPlan(tinyPlan(zero, 2),
                          "--steps 0 --nproc-per-node 2 --weights " +
                              exported(a) + " --export-hf hf --export-dtype fp32");
    ASSERT_EQ(same.exitCode, 0) << same.output;
    EXPECT_EQ(slurp(exported(a) + "/model.safetensors"),
              slurp(exported(same) + "/model.safetensors"))
        << "zero " << zero;
  }
}

TEST(Weights, MismatchedOrDamagedDirectoriesAreRefusedBeforeTraining) {
  Result a = exportInitial();
  const std::string good = exported(a);
  auto model = readModel(good);
  // Rewrites the model with `edit` applied to its tensor list.
  auto rewrite = [&](const std::string &dir,
                     const std::function<void(std::vector<st::TensorSpec> &)> &edit) {
    std::vector<st::TensorSpec> specs;
    st::ModelWeights w(good);
    for (const std::string &name : w.names())
      specs.push_back({name, st::DType::F32, w.find(name).first->shape});
    edit(specs);
    st::write(
        dir, specs,
        [&](size_t i, const st::ByteSink &sink) {
          std::vector<float> values(static_cast<size_t>(st::TensorSpec(specs[i]).bytes() / 4));
          auto it = model.find(specs[i].name);
          if (it != model.end() && it->second.size() == values.size())
            values = it->second;
          sink(values.data(), values.size() * 4);
        },
        int64_t(1) << 40);
  };
  auto expectRefused = [&](const std::string &dir, const std::string &what,
                           const std::string &args = "") {
    Result r = runPlan(tinyPlan(0, 1), "--steps 2 --weights " + dir + args);
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("step 1/"), std::string::npos) << r.output;
    EXPECT_TRUE(r.metrics.empty());
  };
  std::string base = a.dir;
  rewrite(base + "/missing", [](auto &specs) {
    specs.erase(std::find_if(specs.begin(), specs.end(), [](auto &t) {
      return t.name == "model.layers.0.mlp.down_proj.weight";
    }));
  });
  expectRefused(base + "/missing",
                "tensor \"model.layers.0.mlp.down_proj.weight\" is missing");
  rewrite(base + "/extra", [](auto &specs) {
    specs.push_back({"model.layers.2.mlp.down_proj.weight", st::DType::F32, {64, 128}});
  });
  expectRefused(base + "/extra",
                "tensor \"model.layers.2.mlp.down_proj.weight\" is not a "
                "parameter of the plan's model");
  rewrite(base + "/shape", [](auto &specs) {
    for (auto &t : specs)
      if (t.name == "model.norm.weight")
        t.shape = {32};
  });
  expectRefused(base + "/shape",
                "model.safetensors: tensor \"model.norm.weight\" has shape "
                "[32], but the model needs [64]");
  fs::create_directories(base + "/truncated");
  fs::copy_file(good + "/model.safetensors",
                base + "/truncated/model.safetensors");
  fs::resize_file(base + "/truncated/model.safetensors",
                  fs::file_size(good + "/model.safetensors") - 100);
  expectRefused(base + "/truncated", "truncated file");
  expectRefused(base + "/nowhere", "no model.safetensors");
  // An export directory that cannot be written fails before step 1.
  expectRefused(good, "--export-hf /proc/swift-cannot-write: ",
                " --export-hf /proc/swift-cannot-write");
  Result dtype = runPlan(tinyPlan(0, 1), "--steps 1 --export-hf x --export-dtype int8");
  EXPECT_EQ(dtype.exitCode, 2) << dtype.output;
  EXPECT_NE(dtype.output.find("--export-dtype \"int8\": expected bf16, fp16 or fp32"),
            std::string::npos)
      << dtype.output;
}

TEST(Weights, LargeModelsAreShardedWithAnIndex) {
  // SWIFT_EXPORT_SHARD_BYTES stands in for HF's 5 GB at this size.
  json p = tinyPlan(0, 1);
  Result r = runPlan(p, "--steps 0 --export-hf hf --export-dtype fp32",
                     "SWIFT_EXPORT_SHARD_BYTES=200000");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  json index = json::parse(slurp(exported(r) + "/model.safetensors.index.json"));
  EXPECT_GT(index["weight_map"].size(), 10u);
  std::set<std::string> shards;
  for (auto &[name, file] : index["weight_map"].items())
    shards.insert(file.get<std::string>());
  EXPECT_GE(shards.size(), 2u);
  for (const std::string &file : shards) {
    EXPECT_TRUE(fs::exists(exported(r) + "/" + file)) << file;
    EXPECT_LE(fs::file_size(exported(r) + "/" + file), 200000u + 4096) << file;
  }
  EXPECT_FALSE(fs::exists(exported(r) + "/model.safetensors"));
  // It loads back as the same model.
  Result back = runPlan(p, "--steps 0 --weights " + exported(r) +
                               " --export-hf again --export-dtype fp32");
  ASSERT_EQ(back.exitCode, 0) << back.output;
  EXPECT_EQ(readModel(exported(r)), readModel(back.dir + "/again"));
}

TEST(Weights, AnExportReplacesTheDirectorysModelAndSaysItsDtype) {
  // A sharded export over a single-file one: transformers would load the
  // stale model.safetensors before the index.
  json p = tinyPlan(0, 1);
  Result single = runPlan(p, "--steps 0 --export-hf hf --export-dtype fp32");
  ASSERT_EQ(single.exitCode, 0) << single.output;
  const std::string dir = exported(single);
  Result sharded = runPlan(p, "--steps 1 --export-hf " + dir + " --export-dtype fp32",
                           "SWIFT_EXPORT_SHARD_BYTES=100000");
  ASSERT_EQ(sharded.exitCode, 0) << sharded.output;
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors.index.json"));
  // Then fewer shards, then one file again: nothing of the earlier exports
  // is left beside the new one.
  auto modelFiles = [&] {
    std::set<std::string> names;
    for (const auto &e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("model", 0) == 0)
        names.insert(e.path().filename().string());
    return names;
  };
  const size_t many = modelFiles().size();
  ASSERT_GE(many, 4u); // three shards or more, and the index
  Result fewer = runPlan(p, "--steps 1 --export-hf " + dir + " --export-dtype fp32",
                         "SWIFT_EXPORT_SHARD_BYTES=200000");
  ASSERT_EQ(fewer.exitCode, 0) << fewer.output;
  json index = json::parse(slurp(dir + "/model.safetensors.index.json"));
  std::set<std::string> expected{"model.safetensors.index.json"};
  for (auto &[name, file] : index["weight_map"].items())
    expected.insert(file.get<std::string>());
  EXPECT_LT(expected.size(), many);
  EXPECT_EQ(modelFiles(), expected);
  Result again = runPlan(p, "--steps 1 --export-hf " + dir + " --export-dtype fp32");
  ASSERT_EQ(again.exitCode, 0) << again.output;
  EXPECT_EQ(modelFiles(), std::set<std::string>{"model.safetensors"});

  // config.json says the export's dtype, in the spelling the input used
  // (transformers 5: "dtype"); the rest of the input's config is kept.
  json config = json::parse(slurp(dir + "/config.json"));
  config.erase("torch_dtype");
  config["dtype"] = "float32";
  config["swift_test_marker"] = "kept";
  std::ofstream(dir + "/config.json") << config.dump(2);
  Result bf16 = runPlan(p, "--steps 0 --weights " + dir + " --export-hf out");
  ASSERT_EQ(bf16.exitCode, 0) << bf16.output;
  json out = json::parse(slurp(bf16.dir + "/out/config.json"));
  EXPECT_EQ(out.value("dtype", ""), "bfloat16");
  EXPECT_FALSE(out.contains("torch_dtype"));
  EXPECT_EQ(out.value("swift_test_marker", ""), "kept");

  // The export may not overwrite the model the run reads.
  Result over = runPlan(p, "--steps 1 --weights " + dir + " --export-hf " + dir);
  EXPECT_EQ(over.exitCode, 2) << over.output;
  EXPECT_NE(over.output.find("the export would overwrite the model it read"),
            std::string::npos)
      << over.output;
  EXPECT_EQ(modelFiles(), std::set<std::string>{"model.safetensors"});
}

TEST(Weights, NonFiniteWeightsStopTheRunBeforeAnythingIsSaved) {
  // A loss that is not finite (a diverged run; here weights so large that
  // the forward overflows) stops the run (exit 1) at that step's reading,
  // before its checkpoint, which a rotating --keep would otherwise let
  // replace the good ones.
  Result a = exportInitial();
  const std::string file = exported(a) + "/model.safetensors";
  std::string bytes = slurp(file);
  uint64_t header = 0;
  for (int k = 0; k < 8; ++k)
    header |= uint64_t(uint8_t(bytes[size_t(k)])) << (8 * k);
  const float huge = 3e38f;
  for (size_t at = 8 + header; at + 4 <= bytes.size(); at += 4 * 97)
    std::memcpy(&bytes[at], &huge, 4); // fp32 tensors: every 97th value
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  Result r = runPlan(tinyPlan(0, 1), "--steps 3 --weights " + exported(a) +
                                         " --save-dir ck --save-every 1");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("step 1: the loss is"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("nan"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(r.dir + "/ck/latest")) << r.output;
  EXPECT_TRUE(r.metrics.empty());
}


//===----------------------------------------------------------------------===//
// A directory's config.json against the plan's model (issue 28, item 4b):
// values that change the computation but not the tensors' shapes. Once
// unchecked, the run trained the plan's model and exported the directory's
// config.json with it. test/swift-plan/hf-config-check.test plans the
// committed HF directories with swift-plan and runs them.
//===----------------------------------------------------------------------===//

/// A copy of the model directory `dir` in `to` with its config.json edited.
std::string withConfig(const std::string &dir, const std::string &to,
                       const std::function<void(json &)> &edit) {
  fs::create_directories(to);
  fs::copy_file(dir + "/model.safetensors", to + "/model.safetensors");
  json config = json::parse(slurp(dir + "/config.json"));
  edit(config);
  std::ofstream(to + "/config.json") << config.dump(2);
  return to;
}

TEST(WeightsConfig, ValuesTheShapesDoNotShowMustBeThePlans) {
  // The tiny plan's model (tied, rope_theta 1e4, rms_norm_eps 1e-5, q/k/v
  // and o biases, q/k norms) as swift-run exports it: a Qwen3 config.
  Result a = exportInitial();
  const std::string good = exported(a);
  json exportedConfig = json::parse(slurp(good + "/config.json"));
  EXPECT_EQ(exportedConfig.value("model_type", ""), "qwen3");
  EXPECT_EQ(exportedConfig.value("attention_bias", false), true);
  int n = 0;
  auto run = [&](const std::function<void(json &)> &edit) {
    const std::string dir =
        withConfig(good, a.dir + "/edited" + std::to_string(n++), edit);
    return std::make_pair(dir, runPlan(tinyPlan(0, 1), "--steps 2 --weights " + dir));
  };
  auto refused = [&](const std::function<void(json &)> &edit,
                     const std::string &why) {
    auto [dir, r] = run(edit);
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find(dir + "/config.json: " + why), std::string::npos)
        << r.output;
    EXPECT_TRUE(r.metrics.empty());
    return r.output;
  };
  const std::string fix = "; the run would train the plan's model and export "
                          "it with this config.json: plan the job with model: ";
  std::string out = refused([](json &c) { c["rope_theta"] = 500000.0; },
                            "rope_theta is 500000, the plan's model.rope_theta "
                            "is 10000" + fix);
  EXPECT_NE(out.find("(swift-plan reads its config.json)"), std::string::npos)
      << out;
  refused([](json &c) { c["rms_norm_eps"] = 1e-6; },
          "rms_norm_eps is 1e-06, the plan's model.rms_norm_eps is 1e-05" + fix);
  refused(
      [](json &c) {
        c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
      },
      "rope_scaling.rope_type is linear, the plan's "
      "model.rope_scaling.rope_type is default (no rope_scaling)" + fix);
  // transformers 5's rope_parameters, with rope_theta inside.
  refused(
      [](json &c) {
        c.erase("rope_theta");
        c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
      },
      "rope_parameters.rope_theta is 1000000, the plan's model.rope_theta is "
      "10000" + fix);
  refused([](json &c) { c["tie_word_embeddings"] = false; },
          "tie_word_embeddings is false, the plan's "
          "model.tie_word_embeddings is true" + fix);
  refused([](json &c) { c["attention_bias"] = false; },
          "attention_bias is false, the plan's model.attention_qkv_bias is "
          "true (and 1 more difference)" + fix);
  refused([](json &c) { c["model_type"] = "llama"; },
          "model_type is llama (qk_norm false), the plan's model.qk_norm is "
          "true" + fix);
  // What swift-plan would refuse is refused here too, by the same reader.
  refused([](json &c) { c["hidden_act"] = "gelu"; },
          "hidden_act: activation 'gelu' is not supported");
  refused([](json &c) { c["rope_theta"] = "1e4"; },
          "rope_theta: expected a number, got string \"1e4\"");
  // The plan's values as they come back through text or an IR float pass.
  auto [dir, close] = run([](json &c) {
    c["rope_theta"] = 10000.0 * (1 + 1e-9);
    c["rms_norm_eps"] = double(float(1e-5));
  });
  EXPECT_EQ(close.exitCode, 0) << close.output;
  EXPECT_EQ(close.metrics.size(), 2u);
}

//===----------------------------------------------------------------------===//
// The readers' refusals (issue 28): values, files that are not files, and a
// rank stuck on its own.
//===----------------------------------------------------------------------===//

/// Overwrites element `k` of tensor `name` (fp32) in the model directory
/// or checkpoint `dir` with `value`.
void poke(const std::string &dir, const std::string &name, int64_t k,
          float value) {
  st::ModelWeights w(dir);
  auto [t, f] = w.find(name);
  ASSERT_TRUE(t) << name;
  ASSERT_EQ(t->dtype, st::DType::F32) << name;
  std::fstream out(f->path(), std::ios::binary | std::ios::in | std::ios::out);
  out.seekp(t->dataBegin + 4 * k);
  out.write(reinterpret_cast<const char *>(&value), 4);
}

TEST(Weights, NonFiniteInitialValuesAreRefusedNamingTheTensorAndElement) {
  // NaN in the weights used to end in "training diverged" at step 1,
  // naming no tensor; a negative AdamW second moment trained on silently
  // (sqrt of it: NaN parameters after the step).
  Result a = exportInitial();
  const std::string up = "model.layers.1.mlp.up_proj.weight"; // [128, 64]
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::infinity()}) {
    Result copy = exportInitial();
    poke(exported(copy), up, 2 * 64 + 5, bad);
    Result r = runPlan(tinyPlan(3, 2), "--steps 1 --nproc-per-node 2 --weights " +
                                           exported(copy));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("model.safetensors: tensor \"" + up +
                            "\": element [2, 5] (of [128, 64]) is " +
                            (std::isnan(bad) ? "nan" : "-inf") +
                            "; weights and optimizer states must be finite"),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(r.metrics.empty());
  }
  // A checkpoint's second moment below zero.
  Result saved = runPlan(tinyPlan(0, 1), "--steps 1 --save-dir ck");
  ASSERT_EQ(saved.exitCode, 0) << saved.output;
  const std::string step = saved.dir + "/ck/step-00000001";
  const std::string down = "model.layers.0.mlp.down_proj.weight:exp_avg_sq";
  poke(step, down, 70, -0.25f); // [64, 128]: row 0, column 70
  Result r = runPlan(tinyPlan(0, 1), "--steps 2 --resume " + step);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("tensor \"" + down +
                          "\": element [0, 70] (of [64, 128]) is -0.25; an "
                          "AdamW second moment is never negative"),
            std::string::npos)
      << r.output;
  // -0 is a moment of 0.
  poke(step, down, 70, -0.0f);
  r = runPlan(tinyPlan(0, 1), "--steps 2 --resume " + step);
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST(Weights, AFifoIsRefusedAndAStuckRankBlamesNoPeer) {
  // A FIFO in place of model.safetensors blocked the rank until the
  // watchdog ended it, blaming "a peer rank" of a world of 1.
  Result a = exportInitial();
  const std::string dir = freshDir();
  fs::copy_file(exported(a) + "/config.json", dir + "/config.json");
  ASSERT_EQ(mkfifo((dir + "/model.safetensors").c_str(), 0644), 0);
  Result r = runPlan(tinyPlan(0, 1), "--steps 1 --timeout 1 --weights " + dir);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find(dir + "/model.safetensors: is a FIFO, not a regular "
                                "file; expected a safetensors file"),
            std::string::npos)
      << r.output;
  // A rank that makes no progress says for how long and after what; alone,
  // it blames no peer. Stuck at start-up (an output FIFO nobody reads; its
  // budget is 3x --timeout) ...
  const std::string fifo = freshDir() + "/metrics.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  r = runPlan(tinyPlan(0, 1), "--steps 1 --timeout 1 --metrics " + fifo);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("error: rank 0 of 1 made no progress for 3 s during "
                          "start-up; no other rank runs, so this one is stuck "
                          "or slow"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("peer"), std::string::npos) << r.output;
  // ... or after initialization (SWIFT_FAULT_STALL stalls it there).
  r = runPlan(tinyPlan(0, 1), "--steps 1 --timeout 1",
              "SWIFT_FAULT_STALL=initialization");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("error: rank 0 of 1 made no progress for 1 s after "
                          "initialization; no other rank runs"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("peer"), std::string::npos) << r.output;
  // Among peers, any of them may be the cause.
  r = runPlan(tinyPlan(0, 2), "--steps 1 --timeout 1 --nproc-per-node 2",
              "SWIFT_FAULT_STALL=initialization");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("of 2 made no progress for 1 s after initialization "
                          "(a peer rank probably died, or this rank is "
                          "stuck)"),
            std::string::npos)
      << r.output;
}

} // namespace
