//===- CheckpointTest.cpp - save, resume, reshard, survive a kill ---------===//
//
// swift-run --save-dir / --resume on CPU: N steps straight equal k steps +
// a resume to N bit for bit (losses and parameters) at world 1 and 2,
// ZeRO 0-3, with and without offload, and in HSDP's 2 shard groups of 2; a
// checkpoint written at one world size, ZeRO stage or HSDP layout resumes
// at others; a rank killed in the middle of a
// save leaves the previous checkpoint loadable and `latest` naming it.
// Damaged manifests and symlink loops are one-line refusals naming the
// field; --keep orders by the manifests' steps and never deletes the
// newest write; another run's save dir is refused; a resume continues the
// checkpoint's data at the samples it consumed or refuses.
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include <functional>

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
  int dpShard = 0; // HSDP's shard groups (strategy.dp_shard); 0: none
};

class Resume : public ::testing::TestWithParam<Case> {};

TEST_P(Resume, StraightEqualsSavedAndResumedBitForBit) {
  const Case c = GetParam();
  json p = planWith(c.zero, c.world, c.offload);
  if (c.dpShard > 0)
    p["strategy"]["dp_shard"] = c.dpShard;
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
                      Case{3, 2, "optimizer+params"},
                      Case{1, 4, "none", 2}, Case{3, 4, "optimizer", 2}),
    [](const ::testing::TestParamInfo<Case> &info) {
      std::string o = info.param.offload;
      std::replace(o.begin(), o.end(), '+', '_');
      std::string name = "zero" + std::to_string(info.param.zero) + "_world" +
                         std::to_string(info.param.world) + "_" + o;
      if (info.param.dpShard > 0)
        name += "_shard" + std::to_string(info.param.dpShard);
      return name;
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

// HSDP: a checkpoint of 2 shard groups of 2 ranks holds every unit whole,
// by name (each group's shards gathered once), so it resumes at world 1 and
// at plain world 4; and one written at world 1 resumes in 2 shard groups.
// Other worlds sum the same gradients in another order: 1e-6, as above.
TEST(Checkpoint, ReshardsBetweenHsdpAndWorldOne) {
  auto hsdp = [](int zero) {
    json p = planWith(zero, 4, "none");
    p["strategy"]["dp_shard"] = 2;
    return p;
  };
  struct Run {
    json plan;
    int world;
  };
  auto check = [](const Run &from, const std::vector<Run> &to) {
    Result straight = runPlan(from.plan, "--steps 6" + nproc(from.world));
    ASSERT_EQ(straight.exitCode, 0) << straight.output;
    Result first =
        runPlan(from.plan, "--steps 3 --save-dir ckpt" + nproc(from.world));
    ASSERT_EQ(first.exitCode, 0) << first.output;
    for (const Run &r : to) {
      Result resumed = runPlan(r.plan, "--steps 6 --resume " + first.dir +
                                           "/ckpt" + nproc(r.world));
      ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
      ASSERT_EQ(resumed.metrics.size(), 3u);
      for (int i = 0; i < 3; ++i)
        EXPECT_NEAR(resumed.metrics[size_t(i)].at("loss").get<double>(),
                    straight.metrics[size_t(i + 3)].at("loss").get<double>(),
                    1e-6)
            << "world " << from.world << " -> " << r.plan["strategy"].dump()
            << " world " << r.world << ", step " << i + 4;
    }
  };
  // Written in 2x2 at ZeRO-3 (each rank holds half of every unit).
  check({hsdp(3), 4}, {{planWith(0, 1, "none"), 1},
                       {planWith(3, 4, "none"), 4}});
  // Written at world 1, resumed in 2x2 at ZeRO 1 and 3.
  check({planWith(0, 1, "none"), 1}, {{hsdp(1), 4}, {hsdp(3), 4}});
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
  // Each step's line, then its checkpoint's.
  for (int step = 1; step <= 5; ++step) {
    const size_t line = r.output.find("step " + std::to_string(step) + "/5 |");
    const size_t saved =
        r.output.find("saved ckpt/step-0000000" + std::to_string(step));
    ASSERT_NE(line, std::string::npos) << r.output;
    ASSERT_NE(saved, std::string::npos) << r.output;
    EXPECT_LT(line, saved) << r.output;
    if (step < 5)
      EXPECT_LT(saved, r.output.find("step " + std::to_string(step + 1) + "/5 |"))
          << r.output;
  }
  std::vector<std::string> kept;
  for (const auto &e : fs::directory_iterator(r.dir + "/ckpt"))
    kept.push_back(e.path().filename().string());
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"latest", "report.html", "step-00000004",
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
  // A damaged latest says what is wrong with it (manifests: below).
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

/// Lines of `text`.
size_t lines(const std::string &text) {
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

size_t occurrences(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

/// The names in `dir`, sorted.
std::vector<std::string> listing(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Checkpoint, DamagedManifestsAreOneLineRefusalsNamingTheField) {
  json p = planWith(0, 1, "none");
  Result r = runPlan(p, "--steps 2 --save-dir ckpt");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::string manifestPath = r.dir + "/ckpt/step-00000002/manifest.json";
  const std::string original = slurp(manifestPath);
  ASSERT_NE(original.find("\"step\": 2,"), std::string::npos) << original;
  auto edited = [&](const std::function<void(json &)> &edit) {
    json m = json::parse(original);
    edit(m);
    return m.dump(1);
  };
  auto replaced = [&](const std::string &from, const std::string &to) {
    std::string text = original;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      // Past int64: read as step -1, it segfaulted, or with --steps 0
      // "trained" one step at lr -0.001 and exported that, exit 0.
      {replaced("\"step\": 2,", "\"step\": 18446744073709551615,"),
       "manifest.json: step: value 18446744073709551615 out of range"},
      {edited([](json &m) { m["step"] = -5; }),
       "manifest.json: step: value -5 out of range"},
      {edited([](json &m) { m["step"] = "five"; }),
       "manifest.json: step: expected an integer, got string \"five\""},
      {edited([](json &m) { m["samples_consumed"] = uint64_t(1) << 63; }),
       "manifest.json: samples_consumed: value 9223372036854775808 out of "
       "range"},
      {edited([](json &m) { m["written_by"]["world_size"] = 0; }),
       "manifest.json: written_by.world_size: value 0 out of range"},
      {edited([](json &m) { m["written_by"]["zero"] = 7; }),
       "manifest.json: written_by.zero: value 7 out of range"},
      {edited([](json &m) { m["global_batch_size"] = 0; }),
       "manifest.json: global_batch_size: value 0 out of range"},
      {edited([](json &m) { m["data"]["sequence_length"] = -1; }),
       "manifest.json: data.sequence_length: value -1 out of range"},
      {edited([](json &m) { m["version"] = "1"; }),
       "manifest.json: version: expected an integer, got string \"1\""},
      {edited([](json &m) { m["version"] = 4; }),
       "manifest.json: version: 4: written by a newer swift-run"},
      {edited([](json &m) { m["epoch"] = -1; }), "manifest.json: epoch: "},
      {edited([](json &m) {
         m["version"] = 2;
         m["epoch"] = 1.5;
       }),
       "manifest.json: epoch: unknown field"},
      {edited([](json &m) { m["format"] = 1; }),
       "manifest.json: format: expected a string, got number 1"},
      {replaced("{", "{\"step\": 7,"), "the key \"step\" is given twice"},
  };
  for (const Case &c : cases) {
    std::ofstream(manifestPath, std::ios::trunc) << c.text;
    Result refused = runPlan(p, "--steps 0 --export-hf hf --resume " + r.dir +
                                    "/ckpt");
    EXPECT_EQ(refused.exitCode, 2) << c.message << "\n" << refused.output;
    EXPECT_NE(refused.output.find(c.message), std::string::npos)
        << refused.output;
    EXPECT_EQ(lines(refused.output), 1u) << refused.output;
    EXPECT_FALSE(fs::exists(refused.dir + "/hf/model.safetensors"));
  }
  // In range, but its next step's samples are not: refused before it.
  std::ofstream(manifestPath, std::ios::trunc)
      << edited([](json &m) { m["samples_consumed"] = int64_t(1) << 40; });
  Result past = runPlan(p, "--steps 3 --resume " + r.dir + "/ckpt");
  EXPECT_EQ(past.exitCode, 2) << past.output;
  EXPECT_NE(past.output.find("command line: --steps 3: 1 steps of "
                             "global_batch_size 8 from sample 1099511627776 "
                             "count past 2^40 samples"),
            std::string::npos)
      << past.output;
  // A version 1 manifest (no data, no global batch) still resumes, saying
  // that it cannot check the data.
  std::ofstream(manifestPath, std::ios::trunc) << edited([](json &m) {
    m["version"] = 1;
    m.erase("data");
    m.erase("global_batch_size");
  });
  Result v1 = runPlan(p, "--steps 3 --resume " + r.dir + "/ckpt");
  EXPECT_EQ(v1.exitCode, 0) << v1.output;
  EXPECT_NE(v1.output.find("does not record the data its run trained on (a "
                           "version 1 manifest): the run continues on "
                           "synthetic tokens at sample 16"),
            std::string::npos)
      << v1.output;
}

TEST(Checkpoint, SymlinkLoopsAreOneLineRefusals) {
  // --resume at a loop; a save dir whose latest is one; a step directory
  // whose manifest.json is one. They were `filesystem error` lines, exit 1.
  const std::string dir = freshDir();
  fs::create_symlink(dir + "/loop", dir + "/loop");
  fs::create_directories(dir + "/save");
  fs::create_symlink(dir + "/save/latest", dir + "/save/latest");
  fs::create_directories(dir + "/step");
  fs::create_symlink(dir + "/step/manifest.json", dir + "/step/manifest.json");
  for (auto [path, message] :
       {std::pair<std::string, std::string>{
            "/loop", "command line: --resume " + dir + "/loop: Too many levels "
                     "of symbolic links"},
        {"/save", dir + "/save/latest: cannot read the file: Too many levels "
                        "of symbolic links"},
        {"/step", dir + "/step/manifest.json: cannot read the file: Too many "
                        "levels of symbolic links"}}) {
    Result r = runPlan(planWith(0, 1, "none"), "--steps 2 --resume " + dir + path);
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_EQ(lines(r.output), 1u) << r.output;
  }
}

TEST(Checkpoint, KeepOrdersByTheManifestsStepsAndNeverDeletesTheNewestWrite) {
  json p = planWith(0, 1, "none");
  Result first = runPlan(p, "--steps 6 --save-dir ckpt --save-every 2");
  ASSERT_EQ(first.exitCode, 0) << first.output;
  const std::string ckpt = first.dir + "/ckpt";
  // A copy of step 2 whose name sorts after every other (ordering by name
  // kept it and deleted the newest write), a directory whose manifest
  // cannot be read (not the run's to delete) and a killed save's leftover.
  fs::copy(ckpt + "/step-00000002", ckpt + "/step-99",
           fs::copy_options::recursive);
  fs::create_directories(ckpt + "/step-00000001");
  std::ofstream(ckpt + "/step-00000001/manifest.json") << "{";
  fs::create_directories(ckpt + "/.partial-step-00000003");
  // Resumed from step 4 into the same directory, keeping 2: the save of
  // step 5 keeps step 6 (the highest other step) and itself; the save of
  // step 6 replaces that and keeps step 5.
  Result resumed = runPlan(p, "--steps 6 --save-every 1 --keep 2 --save-dir " +
                                  ckpt + " --resume " + ckpt + "/step-00000004");
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_EQ(listing(ckpt),
            (std::vector<std::string>{"latest", "report.html", "step-00000001",
                                      "step-00000005", "step-00000006"}));
  EXPECT_EQ(slurp(ckpt + "/latest"), "step-00000006\n");
  // Said once, though both saves found it.
  EXPECT_EQ(occurrences(resumed.output, "--keep leaves " + ckpt +
                                            "/step-00000001 alone"),
            1u)
      << resumed.output;
}

TEST(Checkpoint, ASaveDirOfAnotherRunIsRefusedUnlessOverwritten) {
  json p = planWith(0, 1, "none");
  Result other = runPlan(p, "--steps 6 --save-dir ckpt");
  ASSERT_EQ(other.exitCode, 0) << other.output;
  const std::string ckpt = other.dir + "/ckpt";
  // A new run with --keep 1 deleted its own step 2 (step-00000002 sorted
  // before step-00000006), leaving latest naming nothing.
  Result refused = runPlan(p, "--steps 2 --keep 1 --save-dir " + ckpt);
  EXPECT_EQ(refused.exitCode, 2) << refused.output;
  EXPECT_NE(refused.output.find("--save-dir " + ckpt +
                                " holds another run's checkpoints (latest, "
                                "step-00000006) and this run does not resume "
                                "from them"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("step 1/"), std::string::npos);
  EXPECT_EQ(listing(ckpt), (std::vector<std::string>{"latest", "report.html", "step-00000006"}));
  // --overwrite-save-dir: this run's first checkpoint replaces them.
  Result overwrote =
      runPlan(p, "--steps 2 --keep 1 --overwrite-save-dir --save-dir " + ckpt);
  ASSERT_EQ(overwrote.exitCode, 0) << overwrote.output;
  EXPECT_NE(overwrote.output.find("this run's first checkpoint replaces them"),
            std::string::npos);
  EXPECT_EQ(listing(ckpt), (std::vector<std::string>{"latest", "report.html", "step-00000002"}));
  EXPECT_EQ(slurp(ckpt + "/latest"), "step-00000002\n");
  // A killed save's leftover is another run's too (it may still be saving).
  const std::string leftover = freshDir();
  fs::create_directories(leftover + "/.partial-step-00000004");
  Result partial = runPlan(p, "--steps 1 --save-dir " + leftover);
  EXPECT_EQ(partial.exitCode, 2) << partial.output;
  EXPECT_NE(partial.output.find("holds another run's checkpoints "
                                "(.partial-step-00000004)"),
            std::string::npos)
      << partial.output;
}

/// A JSONL file of 64 samples whose lengths (first + i % 29 tokens) differ,
/// so that the tokens a step trains on say which samples it read.
std::string writeJsonl(const std::string &path, int first) {
  std::ofstream out(path);
  for (int i = 0; i < 64; ++i) {
    json ids = json::array();
    for (int j = 0; j < first + i % 29; ++j)
      ids.push_back((7 * i + j) % 256);
    out << json{{"input_ids", ids}}.dump() << "\n";
  }
  return path;
}

json unpackedPlan(int64_t globalBatch) {
  json p = planWith(0, 1, "none");
  p["training"]["packing"] = false;
  p["training"]["global_batch_size"] = globalBatch;
  p["training"]["gradient_accumulation"] = globalBatch / 2;
  return p;
}

TEST(Checkpoint, ResumeContinuesTheCheckpointsDataAtTheSamplesItConsumed) {
  const std::string dir = freshDir();
  const std::string data = writeJsonl(dir + "/data.jsonl", 2);
  const json p = unpackedPlan(8);
  Result first = runPlan(p, "--data " + data +
                                " --steps 5 --save-dir ckpt --save-every 3");
  ASSERT_EQ(first.exitCode, 0) << first.output;
  ASSERT_EQ(first.metrics.size(), 5u);
  const std::string ckpt = first.dir + "/ckpt";
  // Resumed at a global batch of 16: from sample 24 (3 x 8), not sample
  // 48 (3 x 16): its step 4 trains on the first run's steps 4 and 5.
  Result doubled =
      runPlan(unpackedPlan(16),
              "--steps 4 --resume " + ckpt + "/step-00000003 --data " + data);
  ASSERT_EQ(doubled.exitCode, 0) << doubled.output;
  EXPECT_NE(doubled.output.find("the checkpoint trained with global_batch_size "
                                "8, the plan has 16: the data continues at "
                                "sample 24"),
            std::string::npos)
      << doubled.output;
  ASSERT_EQ(doubled.metrics.size(), 1u);
  EXPECT_EQ(doubled.metrics[0].at("tokens").get<int64_t>(),
            first.metrics[3].at("tokens").get<int64_t>() +
                first.metrics[4].at("tokens").get<int64_t>());
  // --steps below the checkpoint's step would train nothing silently.
  Result below = runPlan(p, "--steps 4 --resume " + ckpt);
  EXPECT_EQ(below.exitCode, 2) << below.output;
  EXPECT_NE(below.output.find("--steps 4 is below the step of the checkpoint "
                              "(5, "),
            std::string::npos)
      << below.output;
  // Without --data: refused, naming the recorded file (it is given again,
  // never assumed: issue 29), even with --ignore-data-mismatch.
  for (const char *ignore : {"", " --ignore-data-mismatch"}) {
    Result none = runPlan(p, "--steps 6 --resume " + ckpt + ignore);
    EXPECT_EQ(none.exitCode, 2) << none.output;
    EXPECT_NE(none.output.find("data: the checkpoint trained on --data " +
                               data + " ("),
              std::string::npos)
        << none.output;
    EXPECT_NE(none.output.find("resume with --data " + data), std::string::npos)
        << none.output;
  }
  // Moved: given the new path, its fingerprint recognizes it.
  fs::rename(data, dir + "/moved.jsonl");
  // An export trains nothing: the data does not matter.
  Result exported =
      runPlan(p, "--steps 0 --resume " + ckpt + " --export-hf hf");
  EXPECT_EQ(exported.exitCode, 0) << exported.output;
  Result moved =
      runPlan(p, "--steps 6 --resume " + ckpt + " --data " + dir + "/moved.jsonl");
  ASSERT_EQ(moved.exitCode, 0) << moved.output;
  EXPECT_NE(moved.output.find("--data " + dir +
                              "/moved.jsonl is the checkpoint's data, moved"),
            std::string::npos)
      << moved.output;
  // The same file cut into other windows is other data.
  json packed = p;
  packed["training"]["packing"] = true;
  Result repacked = runPlan(packed, "--steps 6 --resume " + ckpt + " --data " +
                                        dir + "/moved.jsonl");
  EXPECT_EQ(repacked.exitCode, 2) << repacked.output;
  EXPECT_NE(repacked.output.find("the checkpoint's run had training.packing "
                                 "false, the plan has true"),
            std::string::npos)
      << repacked.output;
}

TEST(Checkpoint, ResumeOnOtherDataIsRefusedUnlessIgnored) {
  const std::string dir = freshDir();
  const std::string data = writeJsonl(dir + "/data.jsonl", 2);
  const std::string other = writeJsonl(dir + "/other.jsonl", 3);
  const json p = unpackedPlan(8);
  Result first = runPlan(p, "--data " + data + " --steps 2 --save-dir ckpt");
  ASSERT_EQ(first.exitCode, 0) << first.output;
  const std::string resume = "--steps 3 --resume " + first.dir + "/ckpt";
  Result refused = runPlan(p, resume + " --data " + other);
  EXPECT_EQ(refused.exitCode, 2) << refused.output;
  EXPECT_NE(refused.output.find("data: --data " + other + " is " + other),
            std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find(", not the data the checkpoint trained on: " +
                                data),
            std::string::npos)
      << refused.output;
  Result ignored = runPlan(p, resume + " --data " + other +
                                  " --ignore-data-mismatch");
  ASSERT_EQ(ignored.exitCode, 0) << ignored.output;
  EXPECT_NE(ignored.output.find("warning: --ignore-data-mismatch: --data " +
                                other),
            std::string::npos)
      << ignored.output;
  EXPECT_NE(ignored.output.find("the run continues on " + other +
                                " at sample 16"),
            std::string::npos)
      << ignored.output;
  // The recorded file, changed since.
  std::ofstream(data, std::ios::app) << "{\"input_ids\": [1, 2, 3]}\n";
  Result changed = runPlan(p, resume + " --data " + data);
  EXPECT_EQ(changed.exitCode, 2) << changed.output;
  EXPECT_NE(changed.output.find("data: --data " + data + " is " + data),
            std::string::npos)
      << changed.output;
  EXPECT_NE(changed.output.find(", not the data the checkpoint trained on: "),
            std::string::npos);
  // A checkpoint of synthetic tokens records them too.
  Result synthetic = runPlan(p, "--steps 2 --save-dir ckpt");
  ASSERT_EQ(synthetic.exitCode, 0) << synthetic.output;
  Result onFile = runPlan(p, "--steps 3 --resume " + synthetic.dir +
                                 "/ckpt --data " + other);
  EXPECT_EQ(onFile.exitCode, 2) << onFile.output;
  EXPECT_NE(onFile.output.find("data: the checkpoint trained on synthetic "
                               "tokens (seed 1234), not on --data " + other),
            std::string::npos)
      << onFile.output;
}

} // namespace
