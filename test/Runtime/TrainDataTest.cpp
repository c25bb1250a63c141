//===- TrainDataTest.cpp - truncation, data line, epochs, eval, inspect ---===//
//
// swift-run's training-data options end to end (issue 29; RunPlan.h):
// training.truncation on over-long samples, the start-of-run data line,
// --inspect-data, --epochs (reshuffled epochs, exact resume, the manifest's
// epoch), and evaluation (--eval-data / --eval-split / --eval-every: the
// token-weighted eval_loss at ZeRO 0 and 3, world 2, LoRA).
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include <cmath>
#include <map>
#include <random>

using namespace swift::rt::testing;

namespace {

/// n samples of distinct lengths (3 + i % 29 tokens, ids from the index):
/// the tokens of a step say which samples it read.
std::vector<Sample> distinctSamples(int n) {
  std::vector<Sample> out;
  for (int i = 0; i < n; ++i) {
    Sample s;
    for (int j = 0; j < 3 + i % 29; ++j)
      s.ids.push_back((7 * i + j) % 256);
    out.push_back(s);
  }
  return out;
}

/// One sample per window (no packing): windows = samples.
json unpacked(json p) {
  p["training"]["packing"] = false;
  return p;
}

/// The stdout lines of a run that start with `prefix`.
std::vector<std::string> linesStarting(const std::string &output,
                                       const std::string &prefix) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0)
      out.push_back(line);
  return out;
}

std::vector<json> stepMetrics(const Result &r) {
  std::vector<json> out;
  for (const json &m : r.metrics)
    if (m.contains("loss"))
      out.push_back(m);
  return out;
}

std::vector<json> evalMetrics(const Result &r) {
  std::vector<json> out;
  for (const json &m : r.metrics)
    if (m.contains("eval_loss"))
      out.push_back(m);
  return out;
}

json loraPlan(int zero, int world, double dropout) {
  json p = tinyPlan(zero, world);
  p["training"]["method"] = "lora";
  p["training"]["lora"] = {{"rank", 4},
                           {"alpha", 8.0},
                           {"dropout", dropout},
                           {"targets", {"q_proj", "v_proj", "down_proj"}}};
  return p;
}

//===----------------------------------------------------------------------===//
// training.truncation and the data line
//===----------------------------------------------------------------------===//

/// Lines 1 and 3 fit the window (32); line 2 holds 40 tokens 0..39 with
/// labels 100..139.
std::string overLongFile(const std::string &dir) {
  Sample longOne;
  for (int k = 0; k < 40; ++k) {
    longOne.ids.push_back(k);
    longOne.labels.push_back(100 + k);
  }
  return writeJsonl({{{1, 2, 3, 4}, {}}, longOne, {{5, 6, 7}, {}}}, dir + "/long.jsonl");
}

json withTruncation(const std::string &mode) {
  json p = tinyPlan(0, 1);
  if (!mode.empty())
    p["training"]["truncation"] = mode;
  return p;
}

TEST(Truncation, DropRightLeftAndErrorOnAnOverLongSample) {
  const std::string data = overLongFile(freshDir());
  // drop (the default, absent from the plan) and right/left: the run
  // trains; inspect shows what each made of line 2.
  for (const std::string mode : {"", "drop", "right", "left"}) {
    Result run = runPlan(withTruncation(mode), "--steps 1 --data " + data);
    ASSERT_EQ(run.exitCode, 0) << mode << "\n" << run.output;
    const bool drops = mode.empty() || mode == "drop";
    EXPECT_NE(run.output.find(drops ? "(1 dropped, 0 truncated: longer than "
                                      "sequence_length 32)"
                                    : "(0 dropped, 1 truncated: longer than "
                                      "sequence_length 32)"),
              std::string::npos)
        << mode << "\n"
        << run.output;
    Result shown =
        runPlan(withTruncation(mode), "--inspect-data 3 --data " + data);
    ASSERT_EQ(shown.exitCode, 0) << shown.output;
    std::vector<std::string> lines = linesStarting(shown.output, "{");
    ASSERT_EQ(lines.size(), drops ? 2u : 3u) << shown.output;
    if (drops) {
      EXPECT_EQ(json::parse(lines[1]).at("line"), 3);
      continue;
    }
    const json cut = json::parse(lines[1]);
    EXPECT_EQ(cut.at("line"), 2);
    std::vector<int> ids, labels;
    for (int k = mode == "right" ? 0 : 8; (int)ids.size() < 32; ++k) {
      ids.push_back(k);
      labels.push_back(100 + k);
    }
    EXPECT_EQ(cut.at("input_ids").get<std::vector<int>>(), ids) << mode;
    EXPECT_EQ(cut.at("labels").get<std::vector<int>>(), labels) << mode;
  }
  Result refused = runPlan(withTruncation("error"), "--steps 1 --data " + data);
  EXPECT_EQ(refused.exitCode, 2) << refused.output;
  EXPECT_NE(refused.output.find(
                "long.jsonl: line 2: a sample of 40 tokens is longer than the "
                "window (training.sequence_length 32); training.truncation "
                "error refuses it"),
            std::string::npos)
      << refused.output;
  // A plan's truncation is one of the four.
  Result bad = runPlan(withTruncation("middle"), "--steps 1");
  EXPECT_EQ(bad.exitCode, 2) << bad.output;
  EXPECT_NE(bad.output.find("truncation"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("middle"), std::string::npos) << bad.output;
}

TEST(Truncation, AFileWhoseSamplesAreAllDroppedExitsTwo) {
  const std::string dir = freshDir();
  const std::string data =
      writeJsonl({{std::vector<int>(33, 1), {}}, {std::vector<int>(50, 2), {}}},
                 dir + "/all-long.jsonl");
  Result r = runPlan(tinyPlan(0, 1), "--steps 1 --data " + data);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("all-long.jsonl: holds no samples: all 2 are longer "
                          "than the window (training.sequence_length 32)"),
            std::string::npos)
      << r.output;
}

TEST(DataLine, CountsSamplesTokensWindowsAndTrainedTokens) {
  // 6 samples of 20, 12, 30, 2, 9 and 40 tokens (the last dropped); the
  // second's labels mask all but its last 3 positions.
  const std::string dir = freshDir();
  std::vector<Sample> samples;
  for (int n : {20, 12, 30, 2, 9, 40})
    samples.push_back({std::vector<int>(size_t(n), 5), {}});
  samples[1].labels = std::vector<int>(12, -100);
  for (int k = 9; k < 12; ++k)
    samples[1].labels[size_t(k)] = 5;
  const std::string data = writeJsonl(samples, dir + "/d.jsonl");
  // Packed best-fit decreasing into 32: {30, 2}, {20, 12}, {9}: 3 windows
  // of 73 tokens; trained: n - 1 per sample, the masked one 3.
  const int64_t tokens = 20 + 12 + 30 + 2 + 9, trained = 19 + 3 + 29 + 1 + 8;
  Result r = runPlan(tinyPlan(0, 1), "--steps 1 --data " + data);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  char efficiency[16];
  std::snprintf(efficiency, sizeof efficiency, "%.1f%%",
                100.0 * double(tokens) / (3 * 32));
  const std::string expected =
      "swift-run: data " + data + ": 5 samples, " + std::to_string(tokens) +
      " tokens (1 dropped, 0 truncated: longer than sequence_length 32), 3 "
      "windows of 32 (packing efficiency " +
      efficiency + "), " + std::to_string(trained) + " trained tokens";
  EXPECT_NE(r.output.find(expected + "\n"), std::string::npos)
      << expected << "\n"
      << r.output;
  // Before the first step.
  EXPECT_LT(r.output.find("swift-run: data "), r.output.find("step 1/1"));
}

//===----------------------------------------------------------------------===//
// The token cache (--data-cache), --prepare-data
//===----------------------------------------------------------------------===//

TEST(TokenCache, TheSecondRunAndTheRanksReuseTheTokensAndTrainTheSame) {
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(40), dir + "/d.jsonl");
  const std::string cache = "SWIFT_CACHE_DIR=" + dir + "/cache";
  // --prepare-data: tokenizes into the cache, says what the file became,
  // trains nothing.
  Result prepared =
      runPlan(tinyPlan(0, 1), "--prepare-data --data " + data, cache);
  ASSERT_EQ(prepared.exitCode, 0) << prepared.output;
  EXPECT_NE(prepared.output.find("tokenized " + data + ": 40 samples"),
            std::string::npos)
      << prepared.output;
  EXPECT_NE(prepared.output.find("swift-run: data " + data + ": 40 samples"),
            std::string::npos)
      << prepared.output;
  EXPECT_NE(prepared.output.find("swift-run: an epoch is "), std::string::npos)
      << prepared.output;
  EXPECT_EQ(prepared.output.find("step 1"), std::string::npos);
  Result cached = runPlan(tinyPlan(0, 2), "--nproc-per-node 2 --steps 3 --data " + data, cache);
  ASSERT_EQ(cached.exitCode, 0) << cached.output;
  EXPECT_NE(cached.output.find("40 samples, "), std::string::npos);
  EXPECT_NE(cached.output.find("from the token cache " + dir + "/cache/tokens/"),
            std::string::npos)
      << cached.output;
  EXPECT_EQ(cached.output.find("tokenized "), std::string::npos)
      << cached.output;
  Result fresh = runPlan(tinyPlan(0, 2),
                         "--nproc-per-node 2 --steps 3 --data-cache off --data " + data);
  ASSERT_EQ(fresh.exitCode, 0) << fresh.output;
  EXPECT_EQ(fresh.output.find("token cache"), std::string::npos)
      << fresh.output;
  ASSERT_EQ(cached.metrics.size(), fresh.metrics.size());
  for (size_t i = 0; i < fresh.metrics.size(); ++i)
    EXPECT_EQ(cached.metrics[i]["loss"], fresh.metrics[i]["loss"]) << i;
}

//===----------------------------------------------------------------------===//
// --inspect-data
//===----------------------------------------------------------------------===//

TEST(InspectData, PrintsTheFirstSamplesAsTrainedWithoutLoadingAnything) {
  const std::string dir = freshDir();
  {
    std::ofstream out(dir + "/d.jsonl");
    out << R"({"input_ids": [1, 2, 3], "labels": [-100, 2, 3]})"
        << "\n\n"
        << R"({"input_ids": [0, 7, 8, 9], "attention_mask": [0, 1, 1, 1]})"
        << "\n"
        << R"({"input_ids": [4]})"
        << "\n";
  }
  // Weights that do not exist: nothing is loaded, no rank starts.
  json p = tinyPlan(0, 1);
  Result r = runPlan(p, "--inspect-data 2 --weights " + dir +
                            "/missing --data " + dir + "/d.jsonl");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::vector<std::string> lines = linesStarting(r.output, "{");
  ASSERT_EQ(lines.size(), 2u) << r.output;
  EXPECT_EQ(
      lines[0],
      R"({"text":null,"input_ids":[1,2,3],"labels":[-100,2,3],"line":1})");
  // The padding (attention_mask 0) dropped; labels are the ids.
  EXPECT_EQ(lines[1],
            R"({"text":null,"input_ids":[7,8,9],"labels":[7,8,9],"line":3})");
  EXPECT_EQ(r.output.find("step "), std::string::npos) << r.output;
  EXPECT_TRUE(r.metrics.empty());

  Result noData = runPlan(p, "--inspect-data 2");
  EXPECT_EQ(noData.exitCode, 2) << noData.output;
  EXPECT_NE(noData.output.find("--inspect-data needs --data FILE.jsonl"),
            std::string::npos)
      << noData.output;
  Result zero = runPlan(p, "--inspect-data 0 --data " + dir + "/d.jsonl");
  EXPECT_EQ(zero.exitCode, 2) << zero.output;
}

//===----------------------------------------------------------------------===//
// --epochs
//===----------------------------------------------------------------------===//

TEST(Epochs, StepsAreCeilOfEpochsTimesWindowsOverTheBatchReshuffled) {
  // 20 windows, global batch 8: 2 epochs = ceil(40 / 8) = 5 steps.
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(20), dir + "/d.jsonl");
  const json p = unpacked(tinyPlan(0, 1));
  Result r = runPlan(p, "--epochs 2 --data " + data);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("swift-run: 2 epochs x 20 windows = 5 steps of 8\n"),
            std::string::npos)
      << r.output;
  const std::vector<json> m = stepMetrics(r);
  ASSERT_EQ(m.size(), 5u);
  int64_t total = 0;
  for (const Sample &s : distinctSamples(20))
    total += int64_t(s.ids.size());
  std::vector<int64_t> tokens;
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_DOUBLE_EQ(m[i].at("epoch").get<double>(), 0.4 * double(i + 1));
    tokens.push_back(m[i].at("tokens").get<int64_t>());
  }
  EXPECT_NE(r.output.find("| epoch 2.00\n"), std::string::npos) << r.output;
  // Epoch 0 in file order: steps 1 and 2 are samples 0-7 and 8-15; step 3
  // ends it (16-19) and starts epoch 1's permutation, which steps 4 and 5
  // continue. Each epoch reads every window once: 2 x total.
  int64_t first8 = 0, second8 = 0;
  for (int i = 0; i < 16; ++i)
    (i < 8 ? first8 : second8) += 3 + i % 29;
  EXPECT_EQ(tokens[0], first8);
  EXPECT_EQ(tokens[1], second8);
  EXPECT_EQ(tokens[0] + tokens[1] + tokens[2] + tokens[3] + tokens[4],
            2 * total);
  // Reshuffled: epoch 1's first 8 windows are not epoch 0's first 8 (nor
  // its windows 4-11, what a repeat of the file after 16-19 would read).
  EXPECT_NE(tokens[3], first8);
  EXPECT_NE(tokens[3], second8);
  // The same again: the permutation is (seed, epoch)'s.
  Result again = runPlan(p, "--epochs 2 --data " + data);
  expectSameLosses(r, again, 0, "the same epochs");
  // Another seed, another permutation.
  json reseeded = p;
  reseeded["training"]["seed"] = 99;
  Result other = runPlan(reseeded, "--epochs 2 --data " + data);
  ASSERT_EQ(other.exitCode, 0) << other.output;
  std::vector<int64_t> otherTokens;
  for (const json &s : stepMetrics(other))
    otherTokens.push_back(s.at("tokens").get<int64_t>());
  EXPECT_EQ(otherTokens[0], tokens[0]); // epoch 0: the file's order
  EXPECT_NE(otherTokens, tokens);

  // A fraction of an epoch; --steps on JSONL says its epochs.
  Result half = runPlan(p, "--epochs 0.5 --data " + data);
  EXPECT_NE(half.output.find("swift-run: 0.5 epochs x 20 windows = 2 steps "
                             "of 8\n"),
            std::string::npos)
      << half.output;
  Result steps = runPlan(p, "--steps 3 --data " + data);
  EXPECT_NE(steps.output.find("swift-run: 1.2 epochs x 20 windows = 3 steps "
                              "of 8\n"),
            std::string::npos)
      << steps.output;
}

TEST(Epochs, BadCombinationsExitTwo) {
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(20), dir + "/d.jsonl");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--epochs 2 --steps 3 --data " + data,
       "command line: --steps and --epochs both give the run's length"},
      {"--epochs 0 --data " + data, "command line: --epochs \"0\": expected "
                                    "a number in (0, "},
      {"--epochs two --data " + data, "command line: --epochs \"two\""},
      {"--epochs 1", "command line: --epochs needs --data FILE.jsonl "
                     "(synthetic tokens"},
  };
  for (const Case &c : cases) {
    Result r = runPlan(unpacked(tinyPlan(0, 1)), c.args);
    EXPECT_EQ(r.exitCode, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n"
                                                           << r.output;
  }
}

TEST(Epochs, ResumeMidEpochContinuesBitForBit) {
  // 20 windows, global batch 8: 3 epochs = 8 steps. Stopped after step 3
  // (sample 24: epoch 1.2) and resumed with --epochs 3: the same 8 losses,
  // exactly, and the same weights; resumed at world 2 within tolerance.
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(20), dir + "/d.jsonl");
  const json p = unpacked(tinyPlan(0, 1));
  Result straight =
      runPlan(p, "--epochs 3 --save-params params.bin --data " + data);
  ASSERT_EQ(straight.exitCode, 0) << straight.output;
  ASSERT_EQ(stepMetrics(straight).size(), 8u);
  Result first = runPlan(p, "--steps 3 --save-dir ckpt --data " + data);
  ASSERT_EQ(first.exitCode, 0) << first.output;
  const std::string ckpt = first.dir + "/ckpt";
  const json manifest =
      json::parse(slurp(ckpt + "/step-00000003/manifest.json"));
  EXPECT_EQ(manifest.at("samples_consumed"), 24);
  EXPECT_DOUBLE_EQ(manifest.at("epoch").get<double>(), 1.2);
  EXPECT_EQ(manifest.at("data").at("windows"), 20);
  EXPECT_EQ(manifest.at("data").at("path"), data);
  Result resumed = runPlan(p, "--epochs 3 --save-params params.bin --resume " +
                                  ckpt + " --data " + data);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  const std::vector<json> a = stepMetrics(straight), b = stepMetrics(resumed);
  ASSERT_EQ(b.size(), 5u);
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b[i].at("step"), a[i + 3].at("step"));
    EXPECT_EQ(b[i].at("loss").get<double>(), a[i + 3].at("loss").get<double>())
        << "step " << i + 4;
    EXPECT_EQ(b[i].at("tokens"), a[i + 3].at("tokens"));
    EXPECT_EQ(b[i].at("epoch"), a[i + 3].at("epoch"));
  }
  EXPECT_EQ(readParams(resumed.dir + "/params.bin"),
            readParams(straight.dir + "/params.bin"));
  // At world 2: the same windows in every step.
  Result wide = runPlan(unpacked(tinyPlan(0, 2)),
                        "--epochs 3 --nproc-per-node 2 --resume " + ckpt +
                            " --data " + data);
  ASSERT_EQ(wide.exitCode, 0) << wide.output;
  const std::vector<json> w = stepMetrics(wide);
  ASSERT_EQ(w.size(), 5u);
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_EQ(w[i].at("tokens"), a[i + 3].at("tokens"));
    EXPECT_NEAR(w[i].at("loss").get<double>(),
                a[i + 3].at("loss").get<double>(), kLossTol);
  }
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

struct EvalCase {
  const char *name;
  json plan;
  int world;
};

/// eval_loss = the mean cross-entropy over every label token of the set.
/// An evaluation set that is the first global batch, after one step at lr
/// 0 (the weights unchanged), gives that step's loss: the training loss is
/// the same token-weighted mean over the same windows.
TEST(Eval, LossIsTheTrainingLossOfTheSameWindowsAtEveryStage) {
  const std::string dir = freshDir();
  // 8 samples of 3..10 tokens with some labels masked: unequal counts per
  // window, so a mean of per-batch means would differ.
  std::vector<Sample> samples = distinctSamples(8);
  for (size_t i = 0; i < samples.size(); i += 3) {
    samples[i].labels = samples[i].ids;
    samples[i].labels[1] = -100;
  }
  const std::string data = writeJsonl(samples, dir + "/d.jsonl");
  std::vector<EvalCase> cases = {
      {"zero 0", unpacked(tinyPlan(0, 1)), 1},
      {"zero 3, world 2", unpacked(tinyPlan(3, 2)), 2},
      {"zero 0, world 2", unpacked(tinyPlan(0, 2)), 2},
      {"lora", unpacked(loraPlan(0, 1, 0.0)), 1},
      {"lora zero 3, world 2", unpacked(loraPlan(3, 2, 0.0)), 2},
      {"zero 3, world 2, offload optimizer+params, full checkpointing",
       unpacked(tinyPlan(3, 2)), 2},
      {"qlora zero 3, world 2, offload optimizer+params",
       unpacked(loraPlan(3, 2, 0.0)), 2}};
  cases[5].plan["strategy"]["offload"] = "optimizer+params";
  cases[5].plan["strategy"]["checkpointing"] = "full";
  cases[6].plan["strategy"]["offload"] = "optimizer+params";
  cases[6].plan["training"]["method"] = "qlora";
  for (EvalCase &c : cases) {
    c.plan["training"]["optimizer"]["lr"] = 0.0;
    Result r =
        runPlan(c.plan, "--steps 1 --data " + data + " --eval-data " + data +
                            " --nproc-per-node " + std::to_string(c.world));
    ASSERT_EQ(r.exitCode, 0) << c.name << "\n" << r.output;
    const std::vector<json> steps = stepMetrics(r), evals = evalMetrics(r);
    ASSERT_EQ(steps.size(), 1u) << c.name;
    ASSERT_EQ(evals.size(), 1u) << c.name << "\n" << r.output;
    const double loss = steps[0].at("loss").get<double>(),
                 evalLoss = evals[0].at("eval_loss").get<double>();
    EXPECT_NEAR(evalLoss, loss, 1e-5 * loss) << c.name;
    int64_t labelTokens = 0;
    for (const Sample &s : samples)
      labelTokens += int64_t(s.ids.size()) - 1 - (s.labels.empty() ? 0 : 1);
    EXPECT_EQ(evals[0].at("eval_tokens").get<int64_t>(), labelTokens);
    EXPECT_NE(r.output.find("eval after step 1/1 | eval_loss "),
              std::string::npos)
        << r.output;
  }
}

TEST(Eval, NoLoraDropoutAndNoUpdate) {
  // LoRA dropout 0.1 trains differently from 0 but evaluates the same
  // (dropout is off), and evaluating does not change training: the losses
  // with and without --eval-data are the same.
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(8), dir + "/d.jsonl");
  json off = unpacked(loraPlan(0, 1, 0.0)), on = unpacked(loraPlan(0, 1, 0.1));
  // Adapters with B != 0 (fresh ones add nothing, dropped out or not).
  json trainer = off;
  trainer["training"]["optimizer"]["lr"] = 1e-2;
  Result adapter = runPlan(trainer, "--steps 2 --export-hf hf --data " + data);
  ASSERT_EQ(adapter.exitCode, 0) << adapter.output;
  off["training"]["optimizer"]["lr"] = 0.0;
  on["training"]["optimizer"]["lr"] = 0.0;
  const std::string args = "--steps 2 --eval-every 1 --adapter " + adapter.dir +
                           "/hf --data " + data + " --eval-data " + data;
  Result a = runPlan(off, args), b = runPlan(on, args);
  ASSERT_EQ(a.exitCode, 0) << a.output;
  ASSERT_EQ(b.exitCode, 0) << b.output;
  EXPECT_NE(a.losses()[0], b.losses()[0]); // dropout trains
  ASSERT_EQ(evalMetrics(a).size(), 2u);
  ASSERT_EQ(evalMetrics(b).size(), 2u);
  EXPECT_EQ(evalMetrics(a)[0].at("eval_loss"),
            evalMetrics(b)[0].at("eval_loss"));
  json full = unpacked(tinyPlan(0, 1));
  Result plain = runPlan(full, "--steps 3 --save-params p.bin --data " + data);
  Result evaluated = runPlan(full, "--steps 3 --eval-every 1 --save-params "
                                   "p.bin --data " +
                                       data + " --eval-data " + data);
  ASSERT_EQ(evaluated.exitCode, 0) << evaluated.output;
  expectSameLosses(plain, evaluated, 0, "evaluating changes nothing");
  EXPECT_EQ(readParams(plain.dir + "/p.bin"),
            readParams(evaluated.dir + "/p.bin"));
  ASSERT_EQ(evalMetrics(evaluated).size(), 3u);
  EXPECT_NE(evalMetrics(evaluated)[0].at("eval_loss"),
            evalMetrics(evaluated)[2].at("eval_loss")); // it learns
}

TEST(Eval, SplitHoldsOutAFractionAndEvaluatesAtEachEpochsEnd) {
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(20), dir + "/d.jsonl");
  const json p = unpacked(tinyPlan(0, 1));
  // 5 of 20 held out: 15 windows, 2 epochs = ceil(30 / 8) = 4 steps;
  // epoch ends in steps 2 (sample 16 > 15) and 4.
  Result r = runPlan(p, "--epochs 2 --data " + data + " --eval-split 0.25");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find(": 15 samples, "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", 5 held out for evaluation, 15 windows of 32"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("swift-run: 2 epochs x 15 windows = 4 steps of 8"),
            std::string::npos)
      << r.output;
  std::vector<int64_t> evalSteps;
  for (const json &e : evalMetrics(r)) {
    evalSteps.push_back(e.at("step").get<int64_t>());
    EXPECT_TRUE(std::isfinite(e.at("eval_loss").get<double>()));
  }
  EXPECT_EQ(evalSteps, (std::vector<int64_t>{2, 4})) << r.output;
  // The held-out samples never train: training tokens of epoch 0 (steps 1
  // and the first 7 windows of step 2) total the 15 kept samples'.
  Result again = runPlan(p, "--epochs 2 --data " + data + " --eval-split 0.25");
  expectSameLosses(r, again, 0, "the same split");
  ASSERT_EQ(evalMetrics(again).size(), 2u);
  EXPECT_EQ(evalMetrics(again)[0].at("eval_loss"),
            evalMetrics(r)[0].at("eval_loss"));
  // --eval-every 3: steps 3 and the last (4).
  Result every = runPlan(p, "--epochs 2 --eval-every 3 --data " + data +
                                " --eval-split 0.25");
  ASSERT_EQ(every.exitCode, 0) << every.output;
  evalSteps.clear();
  for (const json &e : evalMetrics(every))
    evalSteps.push_back(e.at("step").get<int64_t>());
  EXPECT_EQ(evalSteps, (std::vector<int64_t>{3, 4})) << every.output;
}

TEST(Eval, WithoutAStepTheLoadedWeightsAreEvaluated) {
  // --steps 0 (or a checkpoint resumed at its step): the weights as loaded,
  // the same as a run's first step's loss on that data (lr 0 not needed).
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(8), dir + "/d.jsonl");
  const json p = unpacked(tinyPlan(0, 1));
  Result none = runPlan(p, "--steps 0 --eval-data " + data);
  ASSERT_EQ(none.exitCode, 0) << none.output;
  ASSERT_EQ(evalMetrics(none).size(), 1u) << none.output;
  EXPECT_EQ(evalMetrics(none)[0].at("step"), 0);
  EXPECT_NE(none.output.find("eval after step 0/0 | eval_loss "),
            std::string::npos)
      << none.output;
  Result step = runPlan(p, "--steps 1 --data " + data);
  ASSERT_EQ(step.exitCode, 0) << step.output;
  EXPECT_NEAR(evalMetrics(none)[0].at("eval_loss").get<double>(),
              step.losses()[0], 1e-5 * step.losses()[0]);
  Result saved = runPlan(p, "--steps 2 --save-dir ckpt --data " + data);
  ASSERT_EQ(saved.exitCode, 0) << saved.output;
  Result resumed = runPlan(p, "--steps 2 --resume " + saved.dir +
                                  "/ckpt --eval-data " + data);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  ASSERT_EQ(evalMetrics(resumed).size(), 1u) << resumed.output;
  EXPECT_EQ(evalMetrics(resumed)[0].at("step"), 2);
}

TEST(Eval, ResumeKeepsTheSplit) {
  // The held-out samples are not trained on: a resume with another split
  // (or none) would train on other samples; refused unless ignored.
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(20), dir + "/d.jsonl");
  const json p = unpacked(tinyPlan(0, 1));
  Result first = runPlan(p, "--steps 2 --save-dir ckpt --eval-split 0.25 "
                            "--data " +
                                data);
  ASSERT_EQ(first.exitCode, 0) << first.output;
  const std::string ckpt = first.dir + "/ckpt";
  const json manifest =
      json::parse(slurp(ckpt + "/step-00000002/manifest.json"));
  EXPECT_EQ(manifest.at("data").at("eval_split"), 0.25);
  EXPECT_EQ(manifest.at("data").at("windows"), 15);
  Result none = runPlan(p, "--steps 3 --resume " + ckpt + " --data " + data);
  EXPECT_EQ(none.exitCode, 2) << none.output;
  EXPECT_NE(none.output.find("data: the checkpoint's run held out --eval-split "
                             "0.25, this run none"),
            std::string::npos)
      << none.output;
  Result same = runPlan(p, "--steps 3 --resume " + ckpt +
                               " --eval-split 0.25 --data " + data);
  ASSERT_EQ(same.exitCode, 0) << same.output;
  Result ignored = runPlan(p, "--steps 3 --resume " + ckpt + " --data " + data +
                                  " --ignore-data-mismatch");
  EXPECT_EQ(ignored.exitCode, 0) << ignored.output;
}

TEST(Eval, BadCombinationsExitTwo) {
  const std::string dir = freshDir();
  const std::string data = writeJsonl(distinctSamples(20), dir + "/d.jsonl");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--data " + data + " --eval-data " + data + " --eval-split 0.1",
       "command line: --eval-data and --eval-split both give the evaluation "
       "set"},
      {"--data " + data + " --eval-split 1",
       "command line: --eval-split \"1\": expected a number in (0, 1)"},
      {"--data " + data + " --eval-every 2",
       "command line: --eval-every needs --eval-data FILE or --eval-split F"},
      {"--eval-split 0.5",
       "command line: --eval-split needs --data FILE.jsonl"},
      {"--data " + data + " --eval-split 0.01",
       "command line: --eval-split 0.01: 0 of the 20 samples of " + data +
           " would be held out"},
      {"--data " + data + " --eval-data " + dir + "/none.jsonl",
       dir + "/none.jsonl"},
  };
  for (const Case &c : cases) {
    Result r = runPlan(unpacked(tinyPlan(0, 1)), "--steps 1 " + c.args);
    EXPECT_EQ(r.exitCode, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n"
                                                           << r.output;
  }
}

//===----------------------------------------------------------------------===//
// Tokenizer files in exports and checkpoints
//===----------------------------------------------------------------------===//

TEST(ExportTokenizer, ExportsAndCheckpointsCarryTheModelDirsTokenizerFiles) {
  Result init = runPlan(tinyPlan(0, 1), "--steps 0 --export-hf hf");
  ASSERT_EQ(init.exitCode, 0) << init.output;
  const std::string model = init.dir + "/hf";
  const std::map<std::string, std::string> files = {
      {"tokenizer.json", R"({"model": {"type": "BPE"}})"},
      {"tokenizer_config.json", R"({"eos_token": "</s>"})"},
      {"chat_template.jinja",
       "{% for m in messages %}{{ m.content }}{% endfor %}"},
      {"merges.txt", "#version: 0.2\na b\n"}};
  for (const auto &[name, bytes] : files)
    std::ofstream(model + "/" + name) << bytes;
  std::ofstream(model + "/README.md") << "not a tokenizer file";
  auto expectFiles = [&](const std::string &dir, const std::string &what) {
    for (const auto &[name, bytes] : files)
      EXPECT_EQ(slurp(dir + "/" + name), bytes) << what << ": " << name;
    EXPECT_FALSE(fs::exists(dir + "/README.md")) << what;
    EXPECT_FALSE(fs::exists(dir + "/vocab.json")) << what; // not in the input
  };
  Result full = runPlan(tinyPlan(0, 1), "--steps 1 --weights " + model +
                                            " --export-hf hf --save-dir ckpt");
  ASSERT_EQ(full.exitCode, 0) << full.output;
  expectFiles(full.dir + "/hf", "export");
  expectFiles(full.dir + "/ckpt/step-00000001", "checkpoint");
  // Resumed: the checkpoint's copy (no --weights here).
  Result resumed = runPlan(tinyPlan(0, 1), "--steps 2 --export-hf hf "
                                           "--resume " +
                                               full.dir + "/ckpt");
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  expectFiles(resumed.dir + "/hf", "export after a resume");
  // LoRA: beside the adapter, and beside the merged model.
  Result lora = runPlan(loraPlan(0, 1, 0.0),
                        "--steps 1 --weights " + model + " --export-hf hf");
  ASSERT_EQ(lora.exitCode, 0) << lora.output;
  EXPECT_TRUE(fs::exists(lora.dir + "/hf/adapter_config.json"));
  expectFiles(lora.dir + "/hf", "adapter export");
  Result merged = runPlan(loraPlan(0, 1, 0.0), "--steps 1 --weights " + model +
                                                   " --export-hf hf --merge");
  ASSERT_EQ(merged.exitCode, 0) << merged.output;
  expectFiles(merged.dir + "/hf", "merged export");
  // A tokenizer name that is not a regular file: refused before training.
  fs::create_directory(model + "/vocab.json");
  Result bad = runPlan(tinyPlan(0, 1),
                       "--steps 1 --weights " + model + " --export-hf hf");
  EXPECT_EQ(bad.exitCode, 2) << bad.output;
  EXPECT_NE(bad.output.find(model + "/vocab.json: is a directory; expected a "
                                    "tokenizer file"),
            std::string::npos)
      << bad.output;
  EXPECT_EQ(bad.output.find("step 1/1"), std::string::npos) << bad.output;
}

} // namespace
