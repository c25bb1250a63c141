//===- RunReport.cpp - the run's HTML page (swift-run --report) -----------===//
//
// One self-contained page (swift/Html/Html.h): the run's setup, its
// data, the loss and eval_loss, the learning rate, tokens/s and memory
// against the plan's predictions, and the checkpoints and export written.
// Rank 0 writes it after every checkpoint and at the end.
//
//===----------------------------------------------------------------------===//
#include "RunParts.h"

#include "swift/Html/Html.h"

#include <iostream>

namespace swift::rt::run {

std::string reportPath(const RunOptions &a) {
  if (!a.report.empty())
    return a.report;
  return a.saveDir.empty() ? "" : a.saveDir + "/report.html";
}

namespace {

using html::LineChart;
using html::readable;
using html::Series;

/// One series of the logged steps' `field`.
Series series(const RunHistory &h, const std::string &name,
              double RunHistory::Logged::*field, double scale = 1) {
  Series s{name, {}, false};
  for (const RunHistory::Logged &l : h.logged)
    s.points.push_back({double(l.step), l.*field * scale});
  return s;
}

std::vector<std::vector<std::string>> setupRows(const RunContext &run) {
  const Plan &plan = run.plan;
  const TrainingConfig &t = plan.training;
  const RunHistory &h = run.history;
  const double seconds = secondsSince(h.start);
  std::vector<std::vector<std::string>> rows = {
      {"run", run.options.steps > 0 && !h.logged.empty() &&
                      h.logged.back().step == run.options.steps
                  ? "finished"
                  : "in progress"},
      {"plan", plan.path},
      {"model", std::to_string(plan.model.numParameters()) + " parameters, " +
                    std::to_string(plan.model.numLayers) + " layers"},
      {"training", std::string(toString(t.method)) + ", " + toString(t.precision) +
                       ", sequence " + std::to_string(t.sequenceLength) +
                       ", global batch " + std::to_string(t.globalBatchSize) +
                       " (micro " + std::to_string(t.microBatchSize) + " x " +
                       std::to_string(t.gradientAccumulation) + " x " +
                       std::to_string(run.env.world) + " ranks)"},
      {"strategy", "ZeRO-" + std::to_string(plan.strategy.zero) +
                       hsdpText(plan) + ", offload " +
                       toString(plan.strategy.offload) + ", checkpointing " +
                       toString(plan.strategy.checkpointing)},
      {"device", run.device.str() + " x " + std::to_string(run.env.world)},
      {"steps", std::to_string(h.logged.empty() ? run.data.firstStep
                                                : h.logged.back().step) +
                    " of " + std::to_string(run.options.steps)},
      {"time", html::duration(seconds)},
      {"tokens/s", readable(h.meanTokensPerSecond) +
                       (plan.predicted.tokensPerSecond > 0
                            ? " (plan " + readable(plan.predicted.tokensPerSecond) + ")"
                            : "")}};
  if (const Engine::ActivationOffload ao = run.engine.activationOffload();
      ao.units > 0)
    rows.push_back({"activation offload",
                    std::to_string(ao.units) + " of " +
                        std::to_string(plan.model.numLayers) +
                        " decoders keep their checkpointed input on the host (" +
                        gib(ao.hostBytes) + ")"});
  if (const DataSummary *d = run.data.train->summary())
    rows.push_back({"data", d->line()});
  if (run.data.eval && run.data.eval->summary())
    rows.push_back({"eval data", run.data.eval->summary()->line()});
  return rows;
}

} // namespace

void writeRunReport(const RunContext &run) {
  const std::string path = reportPath(run.options);
  if (path.empty())
    return;
  const RunHistory &h = run.history;
  const Plan &plan = run.plan;
  const bool cuda = run.device.is_cuda();
  html::Page page("swift-run report: " + plan.path);
  page.table(setupRows(run));

  page.heading("Loss");
  LineChart loss{"loss and eval_loss", "step", "loss", {}, {}, {}, false};
  loss.series.push_back(series(h, "loss", &RunHistory::Logged::loss));
  if (!h.evals.empty()) {
    Series e{"eval_loss", {}, true};
    for (auto [step, value] : h.evals)
      e.points.push_back({double(step), value});
    loss.series.push_back(e);
  }
  page.raw(html::lineChartSvg(loss));
  page.raw(html::lineChartSvg({"learning rate", "step", "lr",
                                 {series(h, "lr", &RunHistory::Logged::lr)}, {}, {},
                                 true}));

  page.heading("Speed and memory against the plan");
  LineChart speed{"tokens/s", "step", "tokens/s",
                  {series(h, "tokens/s", &RunHistory::Logged::tokensPerSecond)},
                  {}, {}, true};
  if (plan.predicted.tokensPerSecond > 0)
    speed.reference = {{"plan", plan.predicted.tokensPerSecond}};
  page.raw(html::lineChartSvg(speed));
  const double gib = double(int64_t(1) << 30);
  Series mem{cuda ? "peak GiB" : "host RSS GiB", {}, false};
  for (const RunHistory::Logged &l : h.logged)
    mem.points.push_back({double(l.step), double(l.peakMem) / gib});
  LineChart memory{cuda ? "peak memory (allocated, rank 0)" : "host memory (RSS, rank 0)",
                   "step", "GiB", {mem}, {}, {}, true};
  if (cuda && plan.predicted.peakMemoryBytes > 0)
    memory.reference = {{"plan", double(plan.predicted.peakMemoryBytes) / gib}};
  page.raw(html::lineChartSvg(memory));
  if (!cuda)
    page.paragraph("On the CPU the memory is the process's resident set, which the "
                   "plan's GPU prediction does not describe.");

  page.heading("Outputs");
  std::vector<std::vector<std::string>> outputs = {{"step", "checkpoint"}};
  for (const auto &[step, dir] : h.checkpoints)
    outputs.push_back({std::to_string(step), dir});
  if (!h.exported.empty())
    outputs.push_back({"end", "exported to " + h.exported});
  if (outputs.size() == 1)
    page.paragraph("No checkpoint or export was written.");
  else
    page.table(outputs);

  const std::string why = page.write(path);
  if (!why.empty())
    std::cerr << "swift-run: warning: --report " << path << ": " << why << std::endl;
}

} // namespace swift::rt::run
