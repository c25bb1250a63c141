//===- LoggingTest.cpp - --log-every, --tensorboard, --set ----------------===//
//
// What a run shows and what it may change without planning again, through
// the real swift-run (RunPlan.h): logging intervals average their steps as
// HF Trainer does, TensorBoard's event files read back with an independent
// reader (test/Runtime/tfevents.py: its own CRC-32C and protobuf decoding)
// hold the metrics' numbers, and --set changes exactly the fields that
// affect neither memory nor time.
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include <cstdio>
#include <filesystem>
#include <map>

namespace {

using namespace swift::rt::testing;

/// tfevents.py's events of the one event file in `dir`, and its exit code
/// (its error line is a test failure unless `failureExpected`).
std::vector<json> readEvents(const std::string &dir, int &exitCode,
                             bool failureExpected = false) {
  std::string file;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
      EXPECT_TRUE(file.empty()) << "two event files in " << dir;
      file = e.path().string();
    }
  EXPECT_FALSE(file.empty()) << "no event file in " << dir;
  const std::string out = dir + "/read.jsonl";
  const std::string cmd = std::string("python3 ") + SWIFT_TFEVENTS_READER + " " +
                          file + " > " + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  std::vector<json> events;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);)
    if (exitCode == 0)
      events.push_back(json::parse(line));
    else if (!failureExpected)
      ADD_FAILURE() << line;
  return events;
}

TEST(Logging, AnIntervalLogsTheMeanLossOfItsStepsAndTheLastStepsLrAndNorm) {
  json p = tinyPlan(2, 2);
  p["training"]["lr_schedule"] = {{"warmup_steps", 2}, {"decay", "cosine"}};
  const Result every = runPlan(p, "--steps 7 --nproc-per-node 2 --log-every 1");
  const Result third = runPlan(p, "--steps 7 --nproc-per-node 2 --log-every 3");
  ASSERT_EQ(every.exitCode, 0) << every.output;
  ASSERT_EQ(third.exitCode, 0) << third.output;
  ASSERT_EQ(every.metrics.size(), 7u);
  // Steps 3, 6 and the last, 7.
  ASSERT_EQ(third.metrics.size(), 3u) << third.output;
  const int ends[] = {3, 6, 7}, starts[] = {1, 4, 7};
  for (int k = 0; k < 3; ++k) {
    const json &m = third.metrics[size_t(k)];
    EXPECT_EQ(m.at("step").get<int>(), ends[k]);
    double sum = 0;
    for (int s = starts[k]; s <= ends[k]; ++s)
      sum += every.metrics[size_t(s - 1)].at("loss").get<double>();
    const int n = ends[k] - starts[k] + 1;
    EXPECT_NEAR(m.at("loss").get<double>(), sum / n, 1e-12) << "interval " << k;
    const json &last = every.metrics[size_t(ends[k] - 1)];
    EXPECT_EQ(m.at("lr").get<double>(), last.at("lr").get<double>());
    EXPECT_EQ(m.at("grad_norm").get<double>(), last.at("grad_norm").get<double>());
    EXPECT_EQ(m.value("logged_steps", 1), n);
  }
  // One console line per logged step.
  size_t lines = 0;
  for (size_t at = 0; (at = third.output.find("\nstep ", at)) != std::string::npos; ++at)
    ++lines;
  EXPECT_EQ(lines, 3u) << third.output;
}

TEST(Logging, ByDefaultALongRunLogsAboutAHundredTimes) {
  json p = tinyPlan(0, 1);
  p["model"]["num_hidden_layers"] = 1;
  const Result r = runPlan(p, "--steps 250");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // Every max(1, 250 / 100) = 2 steps, and the last: 2, 4, ..., 250.
  ASSERT_EQ(r.metrics.size(), 125u);
  EXPECT_EQ(r.metrics.front().at("step").get<int>(), 2);
  EXPECT_EQ(r.metrics.back().at("step").get<int>(), 250);
}

TEST(TensorBoard, EventFilesHoldTheMetricsAndReadBackWithTheirCrcs) {
  json p = tinyPlan(1, 2);
  p["predicted"] = {{"peak_memory_bytes", int64_t(3) << 30},
                    {"step_seconds", 0.25},
                    {"tokens_per_second", 1024.0}};
  const std::string data = writeJsonl(
      {{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {}},
       {{20, 21, 22, 23, 24, 25, 26, 27}, {}},
       {{30, 31, 32, 33, 34, 35, 36, 37, 38, 39}, {}}});
  const Result r = runPlan(p, "--steps 4 --nproc-per-node 2 --tensorboard tb "
                              "--data " + data + " --eval-split 0.34 --eval-every 2");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  int code = -1;
  const std::vector<json> events = readEvents(r.dir + "/tb", code);
  ASSERT_EQ(code, 0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].at("file_version"), "brain.Event:2");
  // The train events carry the metrics' numbers (as float32), the eval
  // events the eval_loss of the same step.
  size_t train = 0, evals = 0;
  for (const json &m : r.metrics) {
    const int step = m.at("step").get<int>();
    const json *e = nullptr;
    for (const json &ev : events)
      if (ev.value("step", -1) == step && ev.contains("scalars") &&
          ev["scalars"].contains(m.contains("eval_loss") ? "eval/loss" : "train/loss"))
        e = &ev;
    ASSERT_NE(e, nullptr) << m.dump();
    const json &s = e->at("scalars");
    auto same = [&](const char *tag, double want) {
      EXPECT_NEAR(s.at(tag).get<double>(), want, 1e-6 * std::max(1.0, std::abs(want)))
          << tag << " at step " << step;
    };
    if (m.contains("eval_loss")) {
      same("eval/loss", m.at("eval_loss").get<double>());
      ++evals;
      continue;
    }
    same("train/loss", m.at("loss").get<double>());
    same("train/learning_rate", m.at("lr").get<double>());
    same("train/grad_norm", m.at("grad_norm").get<double>());
    same("train/tokens_per_second", m.at("tokens_per_second").get<double>());
    same("time/step_seconds", m.at("step_seconds").get<double>());
    same("time/planned_step_seconds", 0.25);
    same("memory/planned_peak_gib", 3.0);
    same("memory/host_rss_gib", m.at("host_rss_bytes").get<double>() / (1 << 30));
    EXPECT_TRUE(s.contains("train/epoch"));
    ++train;
  }
  EXPECT_EQ(train, 4u);
  EXPECT_EQ(evals, 2u); // after steps 2 and 4
  // The reader is no rubber stamp: one flipped byte of the last record's
  // data is a CRC error.
  for (const auto &f : fs::directory_iterator(r.dir + "/tb"))
    if (f.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
      std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
      io.seekg(-8, std::ios::end);
      char c = 0;
      io.read(&c, 1);
      io.seekp(-8, std::ios::end);
      c = char(c ^ 0x40);
      io.write(&c, 1);
    }
  int bad = 0;
  readEvents(r.dir + "/tb", bad, /*failureExpected=*/true);
  EXPECT_NE(bad, 0);
}

TEST(Overrides, SetChangesWhatAffectsNeitherMemoryNorTimeWithoutPlanning) {
  json p = tinyPlan(0, 2);
  json planned = p;
  planned["training"]["optimizer"]["lr"] = 3e-3;
  planned["training"]["optimizer"]["betas"] = {0.8, 0.99};
  planned["training"]["lr_schedule"] = {{"warmup_steps", 1}, {"decay", "linear"}};
  planned["training"]["max_grad_norm"] = 0.5;
  const Result want = runPlan(planned, "--steps 4 --nproc-per-node 2");
  const Result got = runPlan(
      p, "--steps 4 --nproc-per-node 2 --set training.optimizer.lr=3e-3 "
         "--set training.optimizer.betas=[0.8,0.99] "
         "--set training.lr_schedule.warmup_steps=1 "
         "--set training.lr_schedule.decay=linear --set training.max_grad_norm=0.5");
  ASSERT_EQ(want.exitCode, 0) << want.output;
  ASSERT_EQ(got.exitCode, 0) << got.output;
  ASSERT_EQ(got.metrics.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(got.metrics[i].at("loss"), want.metrics[i].at("loss")) << i;
    EXPECT_EQ(got.metrics[i].at("lr"), want.metrics[i].at("lr")) << i;
  }
  // And it did change the run.
  const Result plain = runPlan(p, "--steps 4 --nproc-per-node 2");
  ASSERT_EQ(plain.exitCode, 0) << plain.output;
  EXPECT_NE(plain.metrics[3].at("loss"), got.metrics[3].at("loss"));
  // null removes a field: no clipping again.
  const Result unclipped = runPlan(planned, "--steps 4 --nproc-per-node 2 "
                                            "--set training.max_grad_norm=null");
  ASSERT_EQ(unclipped.exitCode, 0) << unclipped.output;
  EXPECT_NE(unclipped.metrics[3].at("loss"), want.metrics[3].at("loss"));
}

TEST(Overrides, WhatChangesMemoryOrTimeIsRefusedNamingSwiftPlan) {
  const json p = tinyPlan(0, 1);
  struct Case {
    const char *set, *says;
  } cases[] = {
      {"training.micro_batch_size=4", "swift-plan JOB --set training.micro_batch_size=4"},
      {"strategy.zero=3", "changes the memory or the time"},
      {"training.precision=bf16", "changes the memory or the time"},
      {"model.hidden_size=128", "changes the memory or the time"},
      {"training.optimizer.lrr=1", "that a run may change; --set takes training.optimizer.lr"},
      {"training.optimizer.lr", "expected KEY=VALUE"},
      {"training.optimizer.lr=-1", "training.optimizer.lr"},
      {"training.lr_schedule.decay=sideways", "training.lr_schedule.decay"},
  };
  for (const Case &c : cases) {
    const Result r = runPlan(p, std::string("--steps 1 --set ") + c.set);
    EXPECT_EQ(r.exitCode, 2) << c.set << ": " << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.set << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_EQ(r.output.find("step 1/"), std::string::npos) << r.output;
  }
}

/// report_dom.py's reading of `html` as headless Chromium renders it,
/// with a screenshot beside it.
json renderedDom(const std::string &html) {
  const std::string out = html + ".dom.json";
  const std::string cmd = std::string("python3 ") + SWIFT_REPORT_DOM + " " + html +
                          " --screenshot " + html + ".png > " + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string text = slurp(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  return json::parse(text, nullptr, false);
}

TEST(Report, TheRunReportShowsTheRunsNumbersInABrowser) {
  json p = tinyPlan(2, 2);
  p["predicted"] = {{"peak_memory_bytes", int64_t(3) << 30},
                    {"step_seconds", 0.25},
                    {"tokens_per_second", 1024.0}};
  std::vector<Sample> samples;
  for (int i = 0; i < 12; ++i)
    samples.push_back({{1 + i, 2 + i, 3 + i, 4 + i, 5 + i, 6 + i, 7 + i, 8 + i, 9, 10}, {}});
  const std::string data = writeJsonl(samples);
  const Result r = runPlan(p, "--steps 6 --nproc-per-node 2 --data " + data +
                                  " --eval-split 0.25 --eval-every 3 --save-dir ck "
                                  "--save-every 3");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // --save-dir's default place.
  const json dom = renderedDom(r.dir + "/ck/report.html");
  ASSERT_FALSE(dom.is_discarded());
  // Self-contained: nothing fetched, no script.
  EXPECT_TRUE(dom.at("external").empty()) << dom.dump();
  EXPECT_EQ(dom.at("scripts"), 0);
  std::map<std::string, json> charts;
  for (const json &c : dom.at("charts"))
    charts[c.at("title").get<std::string>()] = c;
  ASSERT_TRUE(charts.count("loss and eval_loss")) << dom.dump();
  // The curves hold the metrics' numbers.
  std::vector<double> loss, evals, tps;
  for (const json &m : r.metrics)
    if (m.contains("eval_loss"))
      evals.push_back(m.at("eval_loss").get<double>());
    else {
      loss.push_back(m.at("loss").get<double>());
      tps.push_back(m.at("tokens_per_second").get<double>());
    }
  auto expectSeries = [&](const std::string &chart, const std::string &name,
                          const std::vector<double> &want) {
    const json &values = charts[chart].at("series").at(name).at("values");
    ASSERT_EQ(values.size(), want.size()) << chart << " " << name;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(values[i].get<double>(), want[i], 1e-8 * std::max(1.0, std::abs(want[i])))
          << chart << " " << name << " " << i;
  };
  expectSeries("loss and eval_loss", "loss", loss);
  expectSeries("loss and eval_loss", "eval_loss", evals);
  EXPECT_EQ(evals.size(), 2u);
  expectSeries("tokens/s", "tokens/s", tps);
  EXPECT_EQ(charts["tokens/s"].at("reference").get<double>(), 1024.0);
  ASSERT_TRUE(charts.count("learning rate"));
  ASSERT_TRUE(charts.count("host memory (RSS, rank 0)"));
  // The checkpoints it wrote.
  const std::string tables = dom.at("tables").dump();
  EXPECT_NE(tables.find("step-00000003"), std::string::npos) << tables;
  EXPECT_NE(tables.find("step-00000006"), std::string::npos) << tables;
  EXPECT_NE(tables.find("finished"), std::string::npos) << tables;
  EXPECT_GT(fs::file_size(r.dir + "/ck/report.html.png"), 10000u);
}

TEST(Report, AnUnwritableReportIsRefusedBeforeTheFirstStep) {
  const Result r = runPlan(tinyPlan(0, 1), "--steps 2 --report /nonexistent/dir/r.html");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--report /nonexistent/dir/r.html: no directory"),
            std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step 1/"), std::string::npos) << r.output;
}

} // namespace
