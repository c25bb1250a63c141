//===- RunLoop.cpp - a rank's steps, evaluations, checkpoints, export -----===//
#include "RunParts.h"

#include "swift/Html/Html.h"
#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/core/Device.h"
#include "swift/Runtime/io/TensorBoard.h"
#include "swift/Runtime/io/Weights.h"
#include "swift/Runtime/model/Kernels.h"
#include "swift/Runtime/model/Model.h"
#include "swift/Runtime/run/Trace.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace swift::rt::run {
namespace {

/// The line that rewrites itself on a terminal: the whole run's progress
/// and ETA, and the last step's numbers.
void drawProgress(int64_t done, int64_t total, double eta, const std::string &last) {
  const int width = 24;
  const int filled = int(width * done / total);
  std::fprintf(stderr, "\r\033[K[%.*s%*s] %lld/%lld eta %s | %s", filled,
               "########################", width - filled, "",
               (long long)done, (long long)total, html::duration(eta).c_str(),
               last.c_str());
  std::fflush(stderr);
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

/// The steps of a run. Steps are read one behind: step s+1 is queued
/// (Engine::launchStep) before step s's numbers are read, so the device
/// does not idle while the host reports, loads the next batch and queues
/// its first kernels. A step that is traced, saved, evaluated after or
/// last is read before anything else is queued.
class TrainLoop {
public:
  explicit TrainLoop(RunContext &run);
  void run();

private:
  /// A step queued on the device and not read yet.
  struct Launched {
    Engine::PendingStep pending;
    int64_t step = 0, tokens = 0, peakMem = 0;
    bool traced = false;
    bool alone = false;  // --trace's step: read before and after it
    bool behind = false; // queued while the previous step was unread
    std::chrono::steady_clock::time_point start;
  };

  /// The first sample of step s (0-based): the data continues where the
  /// checkpoint's run stopped, at any global batch.
  int64_t sampleOf(int64_t s) const {
    return r_.data.firstSample + (s - r_.data.firstStep) * t_.globalBatchSize;
  }
  /// JSONL: the epochs done after step s (fractional, as HF logs them).
  std::optional<double> epochAfter(int64_t s) const {
    if (r_.data.epochWindows == 0)
      return std::nullopt;
    return double(sampleOf(s + 1)) / double(r_.data.epochWindows);
  }
  bool evaluatesAfter(int64_t s) const;
  bool savesAfter(int64_t s) const {
    return !a_.saveDir.empty() &&
           ((a_.saveEvery && (s + 1) % a_.saveEvery == 0) || s + 1 == a_.steps);
  }
  Launched launch(int64_t s);
  void evaluate(int64_t s);
  /// The numbers of the steps since the last logged one (--log-every).
  struct Interval {
    int64_t steps = 0, tokens = 0, peakMem = 0;
    double lossSum = 0, seconds = 0;
  };
  void report(int64_t s, const Engine::StepResult &r, const Interval &i);
  std::string progressText(const Engine::StepResult &r, double loss, double tps,
                           int64_t peakMem) const;
  void readStep(Launched &l);
  void save(int64_t s);
  void readInFlight() {
    if (inFlight_)
      readStep(*inFlight_);
    inFlight_.reset();
  }

  RunContext &r_;
  const RunOptions &a_;
  const TrainingConfig &t_;
  const bool lead_, tty_;
  std::ofstream metrics_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  const int64_t logEvery_;
  Interval interval_;
  const double flopsTok_, peak_;
  StepTrace trace_;
  double sumRate_ = 0;
  int64_t rated_ = 0;
  std::chrono::steady_clock::time_point runStart_;
  std::optional<Launched> inFlight_;
};

TrainLoop::TrainLoop(RunContext &run)
    : r_(run), a_(run.options), t_(run.plan.training), lead_(run.lead()),
      tty_(lead_ && isatty(STDERR_FILENO)),
      logEvery_(a_.logEvery ? a_.logEvery : std::max<int64_t>(1, a_.steps / 100)),
      flopsTok_(flopsPerToken(run.plan.model, t_.sequenceLength,
                              t_.method != Method::Full)),
      peak_(peakFlops(run.device)) {
  if (lead_ && !a_.metrics.empty()) {
    metrics_.open(a_.metrics);
    SWIFT_CHECK(metrics_.good(), a_.metrics, ": cannot open metrics file");
  }
  if (lead_ && !a_.tensorboard.empty())
    tensorboard_ = std::make_unique<TensorBoardWriter>(a_.tensorboard);
}

/// Evaluation after step s: every --eval-every steps (default: where the
/// step ends an epoch) and after the last.
bool TrainLoop::evaluatesAfter(int64_t s) const {
  if (!r_.data.eval)
    return false;
  if (s + 1 == a_.steps)
    return true;
  if (a_.evalEvery)
    return (s + 1) % a_.evalEvery == 0;
  const int64_t w = r_.data.epochWindows;
  return w > 0 && sampleOf(s + 1) / w > sampleOf(s) / w;
}

/// eval_loss: the cross-entropy summed over every label token of the
/// evaluation set, divided by their number (token-weighted over the whole
/// set). Each rank evaluates micro-batches of its share (windows r*B .. of
/// each W*B); one all-reduce of (sum, count).
void TrainLoop::evaluate(int64_t s) {
  setActivity("evaluating after step " + std::to_string(s + 1));
  const int64_t B = t_.microBatchSize, stride = B * r_.env.world,
                windows = r_.data.eval->windowsPerEpoch();
  Engine::EvalSums sums;
  for (int64_t first = 0; first < windows; first += stride) {
    const Engine::EvalSums e =
        r_.engine.evaluate({r_.data.eval->batch(first + r_.env.rank * B, B)});
    sums.lossSum += e.lossSum;
    sums.tokens += e.tokens;
    r_.watchdog.progress("an evaluation");
  }
  std::vector<double> v{sums.lossSum, double(sums.tokens)};
  r_.comm.allReduceHost(v);
  const double loss = v[0] / v[1];
  if (!lead_)
    return;
  if (tty_)
    std::fprintf(stderr, "\r\033[K");
  char line[160];
  std::snprintf(line, sizeof line,
                "eval after step %lld/%lld | eval_loss %.6f | %lld tokens",
                (long long)(s + 1), (long long)a_.steps, loss, (long long)v[1]);
  std::cout << line;
  if (const std::optional<double> e = epochAfter(s)) {
    std::snprintf(line, sizeof line, " | epoch %.2f", *e);
    std::cout << line;
  }
  std::cout << std::endl;
  r_.history.evals.push_back({s + 1, loss});
  if (metrics_.is_open()) {
    nlohmann::json j = {
        {"step", s + 1}, {"eval_loss", loss}, {"eval_tokens", int64_t(v[1])}};
    if (const std::optional<double> e = epochAfter(s))
      j["epoch"] = *e;
    metrics_ << j.dump() << std::endl;
  }
  if (tensorboard_)
    tensorboard_->scalars(s + 1, {{"eval/loss", loss}});
}

/// Rank 0's line (and metrics, and TensorBoard's scalars) of the logging
/// interval that ends with step s: the mean loss and step time of its
/// steps, their tokens over their time, the highest peak; the last step's
/// lr and gradient norm (as HF Trainer logs).
void TrainLoop::report(int64_t s, const Engine::StepResult &r,
                       const Interval &i) {
  const Plan &plan = r_.plan;
  const bool cuda = r_.device.is_cuda();
  const double loss = i.lossSum / double(i.steps);
  const double dt = i.seconds / double(i.steps);
  const double tps = double(i.tokens) / i.seconds;
  const double mfu = peak_ > 0 ? tps * flopsTok_ / (peak_ * r_.env.world) : 0;
  if (tty_)
    std::fprintf(stderr, "\r\033[K");
  // MFU needs the device's peak FLOP/s (n/a where unknown: CPU); on CPU
  // the peak is the process's resident memory, not comparable with the
  // plan's GPU prediction.
  char mfuText[32], memText[96];
  if (peak_ > 0)
    std::snprintf(mfuText, sizeof mfuText, "%.1f%%", 100 * mfu);
  else
    std::snprintf(mfuText, sizeof mfuText, "n/a");
  if (cuda)
    std::snprintf(memText, sizeof memText, "peak %s (plan %s)",
                  gib(i.peakMem).c_str(),
                  plan.predicted.peakMemoryBytes
                      ? gib(plan.predicted.peakMemoryBytes).c_str()
                      : "n/a");
  else
    std::snprintf(memText, sizeof memText, "host RSS %s", gib(i.peakMem).c_str());
  char line[320], epochText[32] = "";
  if (const std::optional<double> e = epochAfter(s))
    std::snprintf(epochText, sizeof epochText, " | epoch %.2f", *e);
  std::snprintf(line, sizeof line,
                "step %lld/%lld | loss %.6f | lr %.3g | grad norm %.4g | "
                "%.3f s | %.0f tok/s | MFU %s | %s%s",
                (long long)(s + 1), (long long)a_.steps, loss, r.lr, r.gradNorm,
                dt, tps, mfuText, memText, epochText);
  std::cout << line << std::endl;
  r_.history.logged.push_back({s + 1, loss, r.lr, r.gradNorm, tps, dt, i.peakMem});
  const std::optional<double> epoch = epochAfter(s);
  if (metrics_.is_open()) {
    nlohmann::json j = {
        {"step", s + 1},
        {"loss", loss},
        {"lr", r.lr},
        {"grad_norm", r.gradNorm},
        {"step_seconds", dt},
        {"tokens_per_second", tps},
        {"tokens", i.tokens},
        {"mfu", peak_ > 0 ? nlohmann::json(mfu) : nlohmann::json()},
        // The device's peak is what the plan predicts; a CPU run has only
        // the process's resident set, which is not comparable.
        {cuda ? "peak_memory_bytes" : "host_rss_bytes", i.peakMem},
        {"planned_peak_memory_bytes", plan.predicted.peakMemoryBytes},
        {"planned_step_seconds", plan.predicted.stepSeconds},
        {"planned_tokens_per_second", plan.predicted.tokensPerSecond},
        {"world_size", r_.env.world},
        // The collectives the (last) step ran, as its schedule says.
        {"collectives",
         {{"all_reduce", r.collectives.allReduce},
          {"reduce_scatter", r.collectives.reduceScatter},
          {"all_gather", r.collectives.allGather},
          {"all_reduce_replicas", r.collectives.allReduceReplicas}}}};
    if (i.steps > 1) // a --log-every interval: the steps it averages
      j["logged_steps"] = i.steps;
    if (epoch)
      j["epoch"] = *epoch;
    if (cuda) // what fragmentation adds to the allocated peak
      j["peak_reserved_bytes"] = peakReservedBytes(r_.device);
    metrics_ << j.dump() << std::endl;
  }
  if (tensorboard_) {
    // HF Trainer's tags where it has them (train/loss, train/learning_rate,
    // train/grad_norm, train/epoch, eval/loss).
    const double gibs = double(int64_t(1) << 30);
    std::vector<std::pair<std::string, double>> v = {
        {"train/loss", loss},
        {"train/learning_rate", r.lr},
        {"train/grad_norm", r.gradNorm},
        {"train/tokens_per_second", tps},
        {"time/step_seconds", dt},
        {cuda ? "memory/peak_gib" : "memory/host_rss_gib", double(i.peakMem) / gibs}};
    if (plan.predicted.stepSeconds > 0) // a plan that was priced
      v.push_back({"time/planned_step_seconds", plan.predicted.stepSeconds});
    if (plan.predicted.peakMemoryBytes > 0)
      v.push_back({"memory/planned_peak_gib",
                   double(plan.predicted.peakMemoryBytes) / gibs});
    if (peak_ > 0)
      v.push_back({"train/mfu", mfu});
    if (epoch)
      v.push_back({"train/epoch", *epoch});
    tensorboard_->scalars(s + 1, v);
  }
}

/// The progress line's numbers of one step.
std::string TrainLoop::progressText(const Engine::StepResult &r, double loss,
                                    double tps, int64_t peakMem) const {
  char text[160];
  const int64_t planned = r_.plan.predicted.peakMemoryBytes;
  std::snprintf(text, sizeof text, "%.0f tok/s | %s%s%s | loss %.4f | lr %.3g",
                tps, gib(peakMem).c_str(), planned ? " of plan " : "",
                planned ? gib(planned).c_str() : "", loss, r.lr);
  return text;
}

/// The checkpoint of step s, after its line (and its evaluation's).
void TrainLoop::save(int64_t s) {
  setActivity("saving the checkpoint of step " + std::to_string(s + 1));
  const auto saveStart = std::chrono::steady_clock::now();
  SaveRequest save;
  save.saveDir = a_.saveDir;
  save.step = s + 1;
  save.samplesConsumed = sampleOf(s + 1);
  save.epoch = epochAfter(s);
  save.keep = a_.keep;
  save.replaceOthers = r_.replaceSaved;
  save.hfConfig = r_.artifacts.hfConfig;
  save.baseWeights =
      t_.method != Method::Full ? r_.state.weightsDir : std::string();
  save.data = r_.data.record;
  save.tokenizer = &r_.artifacts.tokenizer;
  const std::string saved = saveCheckpoint(r_.engine, r_.plan, save);
  r_.replaceSaved = false;
  r_.comm.barrier();
  r_.watchdog.progress("a checkpoint");
  if (lead_) {
    std::cout << "swift-run: saved " << saved << " ("
              << transferReport(safetensorsBytes(saved), secondsSince(saveStart))
              << ")" << std::endl;
    // The report as it stands, beside the checkpoint a killed run keeps.
    r_.history.checkpoints.push_back({s + 1, saved});
    writeRunReport(r_);
  }
}

void TrainLoop::readStep(Launched &l) {
  const int64_t s = l.step;
  const Engine::StepResult r = r_.engine.finishStep(l.pending);
  if (l.traced)
    trace_.stop(a_.trace);
  // Queued behind the previous step: the device's time from that one's
  // end to this one's (the host may read either late). Otherwise from its
  // launch to its reading.
  double dt = l.behind && r.sincePrevious >= 0 ? r.sincePrevious
                                               : secondsSince(l.start);
  std::vector<double> v{r.loss, dt};
  r_.comm.allReduceHost(v);
  const double loss = v[0] / r_.env.world;
  dt = v[1] / r_.env.world;
  // A non-finite loss or gradient norm means the weights are, or are about
  // to be: stop before saving them (a rotating --keep would delete the good
  // checkpoints) or training on. Every rank reads the same numbers (the
  // loss all-reduced, the norm global).
  if (!std::isfinite(loss) || !std::isfinite(r.gradNorm))
    throw RuntimeFailure(
        "step " + std::to_string(s + 1) + ": the loss is " + number(loss) +
        " and the gradient norm " + number(r.gradNorm) +
        ": training diverged (or the initial weights hold NaN/inf); "
        "stopped before saving anything of this step" +
        (a_.saveDir.empty() ? std::string()
                            : " (--save-dir " + a_.saveDir +
                                  " keeps the earlier checkpoints)"));
  r_.watchdog.progress("a training step");
  const double tps = double(l.tokens) / dt;
  if (s > 0 || a_.steps == 1) {
    sumRate_ += tps;
    ++rated_;
  }
  interval_.steps += 1;
  interval_.tokens += l.tokens;
  interval_.lossSum += loss;
  interval_.seconds += dt;
  interval_.peakMem = std::max(interval_.peakMem, l.peakMem);
  if ((s + 1) % logEvery_ == 0 || s + 1 == a_.steps) {
    if (lead_)
      report(s, r, interval_);
    interval_ = Interval();
  }
  if (evaluatesAfter(s))
    evaluate(s);
  if (savesAfter(s))
    save(s);
  if (tty_) {
    const double elapsed = secondsSince(runStart_);
    drawProgress(s + 1, a_.steps,
                 elapsed / double(s + 1 - r_.data.firstStep) *
                     double(a_.steps - s - 1),
                 progressText(r, loss, tps, l.peakMem));
  }
}

/// Queues step s: its micro-batches (global sample numbers: the step's
/// batch at any world size), traced on rank 0 when it is --trace's.
TrainLoop::Launched TrainLoop::launch(int64_t s) {
  const RankEnv &env = r_.env;
  std::vector<Batch> micro;
  for (int64_t k = 0; k < t_.gradientAccumulation; ++k)
    micro.push_back(r_.data.train->batch(
        sampleOf(s) + (k * env.world + env.rank) * t_.microBatchSize,
        t_.microBatchSize));
  // The loss averages over the step's trained tokens (JSONL: labels not
  // -100), counted over the whole global batch on every rank; tokens/s
  // counts real (non-padding) tokens.
  const int64_t stepTrained =
      micro[0].masked ? r_.data.train->trainedTokens(sampleOf(s), t_.globalBatchSize)
                      : 0;
  Launched l;
  l.step = s;
  l.tokens = micro[0].masked
                 ? r_.data.train->realTokens(sampleOf(s), t_.globalBatchSize)
                 : t_.globalBatchSize * t_.sequenceLength;
  // Every rank reads (a collective) and queues (collectives) in the same
  // order: the traced step runs alone on all of them, traced on rank 0.
  const bool tracedStep =
      !a_.trace.empty() && s == std::min<int64_t>(2, a_.steps - 1);
  static const bool traceBehind = std::getenv("SWIFT_TRACE_BEHIND");
  l.alone = tracedStep && !traceBehind;
  l.traced = lead_ && tracedStep;
  if (l.alone) // its trace holds its own work only
    readInFlight();
  setActivity("running step " + std::to_string(s + 1));
  resetPeakMemory(r_.device);
  if (l.traced)
    trace_.start(r_.device);
  l.start = std::chrono::steady_clock::now();
  l.behind = inFlight_.has_value();
  l.pending = r_.engine.launchStep(micro, stepTrained);
  // The allocator's peak is the host's view: every allocation of the step
  // was made while queueing it.
  l.peakMem = peakMemoryBytes(r_.device);
  return l;
}

void TrainLoop::run() {
  const char *fault = std::getenv("SWIFT_FAULT_KILL"); // "rank:step", tests
  runStart_ = std::chrono::steady_clock::now();
  SWIFT_ASSERT(r_.engine.stepsDone() == r_.data.firstStep);
  // Off: each step read before the next is queued (and on CPU, where a
  // step's work is done when it has been queued).
  const bool readsBehind = r_.device.is_cuda() && kernelSwitchOn("ahead");
  for (int64_t s = r_.data.firstStep; s < a_.steps; ++s) {
    if (fault && std::to_string(r_.env.rank) + ":" + std::to_string(s) == fault)
      std::raise(SIGKILL);
    Launched l = launch(s);
    const bool alone = l.alone;
    readInFlight();
    inFlight_ = std::move(l);
    if (alone || savesAfter(s) || evaluatesAfter(s) || s + 1 == a_.steps ||
        !readsBehind)
      readInFlight();
  }
  // No step to train (--steps 0, or a checkpoint at its --steps): the
  // evaluation is of the weights as loaded.
  if (r_.data.eval && r_.data.firstStep >= a_.steps)
    evaluate(r_.data.firstStep - 1);
  if (tty_)
    std::fprintf(stderr, "\n");
  if (rated_)
    r_.history.meanTokensPerSecond = sumRate_ / double(rated_);
  if (lead_ && rated_)
    std::cout << "swift-run: mean " << int64_t(sumRate_ / rated_)
              << " tok/s over " << rated_ << " step(s)"
              << (a_.steps > 1 ? " (first step excluded)" : "") << std::endl;
}

} // namespace

void trainLoop(RunContext &run) { TrainLoop(run).run(); }

void exportResults(RunContext &run) {
  const RunOptions &a = run.options;
  const bool lead = run.lead();
  if (!a.exportHF.empty()) {
    setActivity("exporting the model");
    ExportOptions options;
    options.dtype = parseExportDtype(a.exportDtype);
    // Tests (and the curious) shard small models as HF shards large ones.
    if (const char *shard = std::getenv("SWIFT_EXPORT_SHARD_BYTES"))
      options.maxShardBytes = parseIntFlag("SWIFT_EXPORT_SHARD_BYTES", shard, 1,
                                           int64_t(1) << 50);
    options.configText = run.artifacts.hfConfig;
    options.maxPositionEmbeddings =
        std::max<int64_t>(4096, run.plan.training.sequenceLength);
    options.mergeBase = a.mergeBase;
    const auto exportStart = std::chrono::steady_clock::now();
    if (run.plan.training.method != Method::Full && !a.merge)
      exportAdapter(run.engine, run.plan, a.exportHF, options, run.state.weightsDir);
    else
      exportHF(run.engine, run.plan, a.exportHF, options);
    if (lead) // beside the weights or the adapter
      writeTokenizerFiles(a.exportHF, run.artifacts.tokenizer);
    run.history.exported = a.exportHF;
    if (lead)
      std::cout << "swift-run: exported to " << a.exportHF << " ("
                << transferReport(safetensorsBytes(a.exportHF),
                                  secondsSince(exportStart))
                << ")" << std::endl;
  }
  if (!a.saveParams.empty()) {
    auto params = run.engine.parameters();
    if (lead) {
      // Raw fp32, in the units' table order (docs/runtime.md).
      std::ofstream out(a.saveParams, std::ios::binary);
      SWIFT_CHECK(out.good(), a.saveParams, ": cannot write");
      for (auto &[name, tensor] : params)
        out.write(static_cast<const char *>(tensor.contiguous().data_ptr()),
                  std::streamsize(tensor.numel() * sizeof(float)));
    }
  }
}

} // namespace swift::rt::run
