//===- CheckpointTest.cpp - save, resume, reshard, survive a kill ---------===//
//
// swift-run --save-dir / --resume on CPU: N steps straight equal k steps +
// a resume to N bit for bit (losses and parameters) at world 1 and 2,
// ZeRO 0-3, with and without offload; a checkpoint written at one world
// size and ZeRO stage resumes at others; a rank killed in the middle of a
// save leaves the previous checkpoint loadable and `latest` naming it.
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

using namespace swift::rt::testing;

namespace {

json planWith(int zero, int world, const std::string &offload) {
  json p = tinyPlan(zero, world);
  p["strategy"]["offload"] = offload;
  p["training"]["lr_schedule"] = {
      {"warmup_steps", 2}, {"decay", "cosine"}, {"min_lr_ratio", 0.1}};
  p["training"]["max_grad_norm"] = 0.5;
  return p;
}

std::string nproc(int world) {
  return " --nproc-per-node " + std::to_string(world);
}

struct Case {
  int zero, world;
  const char *offload;
};

class Resume : public ::testing::TestWithParam<Case> {};

TEST_P(Resume, StraightEqualsSavedAndResumedBitForBit) {
  const Case c = GetParam();
  json p = planWith(c.zero, c.world, c.offload);
  Result straight =
      runPlan(p, "--steps 6 --save-params params.bin" + nproc(c.world));
  ASSERT_EQ(straight.exitCode, 0) << straight.output;
  Result first = runPlan(p, "--steps 3 --save-dir ckpt" + nproc(c.world));
  ASSERT_EQ(first.exitCode, 0) << first.output;
  EXPECT_EQ(slurp(first.dir + "/ckpt/latest"), "step-00000003\n");
  Result resumed =
      runPlan(p, "--steps 6 --save-params params.bin --resume " + first.dir +
                     "/ckpt" + nproc(c.world));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming from " + first.dir +
                                "/ckpt/step-00000003 after step 3"),
            std::string::npos)
      << resumed.output;
  // The first run's 3 steps and the resumed run's 3 (numbered 4-6) are the
  // straight run's 6, exactly: lr schedule, clipping, moments, data.
  ASSERT_EQ(first.metrics.size(), 3u);
  ASSERT_EQ(resumed.metrics.size(), 3u);
  for (int i = 0; i < 6; ++i) {
    const json &got = i < 3 ? first.metrics[size_t(i)] : resumed.metrics[size_t(i - 3)];
    const json &want = straight.metrics[size_t(i)];
    EXPECT_EQ(got.at("step"), want.at("step"));
    EXPECT_EQ(got.at("loss").get<double>(), want.at("loss").get<double>())
        << "step " << i + 1;
    EXPECT_EQ(got.at("lr").get<double>(), want.at("lr").get<double>());
  }
  EXPECT_EQ(slurp(straight.dir + "/params.bin"),
            slurp(resumed.dir + "/params.bin"));
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, Resume,
    ::testing::Values(Case{0, 1, "none"}, Case{1, 1, "optimizer"},
                      Case{0, 2, "none"}, Case{1, 2, "none"},
                      Case{2, 2, "optimizer"}, Case{3, 2, "none"},
                      Case{3, 2, "optimizer+params"}),
    [](const ::testing::TestParamInfo<Case> &info) {
      std::string o = info.param.offload;
      std::replace(o.begin(), o.end(), '+', '_');
      return "zero" + std::to_string(info.param.zero) + "_world" +
             std::to_string(info.param.world) + "_" + o;
    });

TEST(Checkpoint, DoesNotDependOnTheWorldOrStageThatWroteIt) {
  json written = planWith(3, 2, "none");
  Result straight = runPlan(written, "--steps 6" + nproc(2));
  ASSERT_EQ(straight.exitCode, 0) << straight.output;
  Result first = runPlan(written, "--steps 3 --save-dir ckpt" + nproc(2));
  ASSERT_EQ(first.exitCode, 0) << first.output;
  for (auto [zero, world] : {std::pair{0, 1}, std::pair{2, 4}}) {
    Result resumed = runPlan(planWith(zero, world, "none"),
                             "--steps 6 --resume " + first.dir + "/ckpt" +
                                 nproc(world));
    ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
    ASSERT_EQ(resumed.metrics.size(), 3u);
    // Other worlds sum the same gradients in another order.
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(resumed.metrics[size_t(i)].at("loss").get<double>(),
                  straight.metrics[size_t(i + 3)].at("loss").get<double>(), 1e-6)
          << "zero " << zero << " world " << world << " step " << i + 4;
  }
}

TEST(Checkpoint, KeepsTheInputConfigForExportsAfterAResume) {
  // An HF directory whose config.json carries fields the plan does not
  // (max_position_embeddings, a marker): a run from it saves a checkpoint
  // (with --keep 1, so the resumed checkpoint is deleted before the end),
  // and the export after the resume writes that config.json, not one made
  // from the plan, but for its dtype, the export's.
  json p = planWith(0, 1, "none");
  Result init = runPlan(p, "--steps 0 --export-hf model --export-dtype fp32");
  ASSERT_EQ(init.exitCode, 0) << init.output;
  json config = json::parse(slurp(init.dir + "/model/config.json"));
  config["max_position_embeddings"] = 12345;
  config["swift_test_marker"] = "kept";
  std::ofstream(init.dir + "/model/config.json") << config.dump(2);
  Result first = runPlan(p, "--steps 2 --save-dir " + init.dir +
                                "/ckpt --weights " + init.dir + "/model");
  ASSERT_EQ(first.exitCode, 0) << first.output;
  EXPECT_EQ(json::parse(slurp(init.dir + "/ckpt/step-00000002/config.json")),
            config);
  Result resumed =
      runPlan(p, "--steps 4 --save-dir " + init.dir + "/ckpt --keep 1 --resume " +
                     init.dir + "/ckpt --export-hf out");
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_FALSE(fs::exists(init.dir + "/ckpt/step-00000002"));
  // The export's dtype (bf16, the default) replaces the input's fp32.
  json exported = config;
  exported["torch_dtype"] = "bfloat16";
  EXPECT_EQ(json::parse(slurp(resumed.dir + "/out/config.json")), exported);
}

TEST(Checkpoint, AKillMidSaveLeavesThePreviousOneLatestAndLoadable) {
  json p = planWith(2, 2, "none");
  Result killed = runPlan(p, "--steps 4 --save-dir ckpt --save-every 2" + nproc(2),
                          "SWIFT_FAULT_KILL_SAVE=4");
  EXPECT_NE(killed.exitCode, 0) << killed.output;
  const std::string ckpt = killed.dir + "/ckpt";
  EXPECT_EQ(slurp(ckpt + "/latest"), "step-00000002\n");
  EXPECT_TRUE(fs::exists(ckpt + "/step-00000002/manifest.json"));
  EXPECT_FALSE(fs::exists(ckpt + "/step-00000004"));
  // The interrupted save left only its partial directory behind.
  EXPECT_TRUE(fs::exists(ckpt + "/.partial-step-00000004"));
  Result straight = runPlan(p, "--steps 4" + nproc(2));
  Result resumed = runPlan(p, "--steps 4 --resume " + ckpt + nproc(2));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  ASSERT_EQ(resumed.metrics.size(), 2u);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(resumed.metrics[size_t(i)].at("loss").get<double>(),
              straight.metrics[size_t(i + 2)].at("loss").get<double>());
}

TEST(Checkpoint, KeepsTheNewestAndRefusesAnotherModel) {
  json p = planWith(0, 1, "none");
  Result r = runPlan(p, "--steps 5 --save-dir ckpt --save-every 1 --keep 2");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  std::vector<std::string> kept;
  for (const auto &e : fs::directory_iterator(r.dir + "/ckpt"))
    kept.push_back(e.path().filename().string());
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"latest", "step-00000004",
                                            "step-00000005"}));
  // Resuming from r's checkpoints is refused (exit 2) with `message`.
  auto expectRefused = [&](const json &plan, const std::string &from,
                           const std::string &message) {
    Result refused = runPlan(plan, "--steps 6 --resume " + from);
    EXPECT_EQ(refused.exitCode, 2) << refused.output;
    EXPECT_NE(refused.output.find(message), std::string::npos)
        << refused.output;
  };
  json other = p;
  other["model"]["intermediate_size"] = 96;
  expectRefused(other, r.dir + "/ckpt",
                "a checkpoint of another model: intermediate_size is 128, the "
                "plan's model has 96");
  expectRefused(p, r.dir, "not a checkpoint");
  // A damaged manifest or latest says what is wrong with it.
  const std::string step5 = r.dir + "/ckpt/step-00000005/manifest.json";
  const std::string manifestText = slurp(step5);
  json manifest = json::parse(manifestText);
  for (const json &bad : {json(-5), json("five")}) {
    manifest["step"] = bad;
    std::ofstream(step5, std::ios::trunc) << manifest.dump();
    expectRefused(p, r.dir + "/ckpt",
                  "manifest.json: step is " + bad.dump() +
                      ", not a count of steps");
  }
  std::ofstream(step5, std::ios::trunc) << manifestText;
  std::ofstream(r.dir + "/ckpt/latest", std::ios::trunc) << "step-00000009\n";
  expectRefused(p, r.dir + "/ckpt",
                "latest: names step-00000009, which is not a directory there");
  std::ofstream(r.dir + "/ckpt/latest", std::ios::trunc) << "step-00000005\n";
  // Resume with --steps 0 and export: the checkpoint's model, no training.
  Result exported = runPlan(p, "--steps 0 --resume " + r.dir +
                                   "/ckpt --export-hf hf --export-dtype fp32");
  ASSERT_EQ(exported.exitCode, 0) << exported.output;
  EXPECT_TRUE(exported.metrics.empty());
  EXPECT_TRUE(fs::exists(exported.dir + "/hf/model.safetensors"));
}

} // namespace
