//===- HtmlReport.cpp - swift-plan --html: the plan as a page -------------===//
//
// One self-contained page (swift/Html/Html.h) of what the report says, drawn:
// the memory of the chosen strategy and of every alternative priced
// (stacked bars of the parts alive at each one's peak, against the usable
// line), the chosen strategy's memory over one step (the estimate's
// timeline, the peak marked and named), the step time's parts, the host
// memory, then the job, the text report with --explain's detail and the
// phases the IR went through. Everything is read from the job's typed
// attributes, as the text report is.
//
//===----------------------------------------------------------------------===//
#include "Report.h"
#include "ReportParts.h"

#include "swift/Html/Html.h"
#include "swift/Passes/Pipelines.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace swift::report {
namespace {

using mlir::swift::CandidateAttr;
using mlir::swift::DecisionAttr;
using mlir::swift::EstimateAttr;
using mlir::swift::JobOp;
using mlir::swift::MemoryPointAttr;

constexpr double kGiB = double(int64_t(1) << 30);

double real(const llvm::APFloat &x) { return x.convertToDouble(); }

/// A candidate's bar: its parts in GiB, largest first; `label` under it,
/// the strategy in its tooltip.
html::Bar bar(CandidateAttr c, const std::string &label, bool chosen) {
  html::Bar b{label, describe(c), {}, chosen};
  if (c.getBreakdown())
    for (mlir::NamedAttribute part : c.getBreakdown())
      b.parts.push_back({part.getName().str(),
                         double(mlir::cast<mlir::IntegerAttr>(part.getValue()).getInt()) /
                             kGiB});
  std::stable_sort(b.parts.begin(), b.parts.end(),
                   [](const html::BarPart &x, const html::BarPart &y) {
                     return x.value > y.value;
                   });
  return b;
}

/// "backward, layer 31, decoder layer" of a memory point.
std::string where(MemoryPointAttr p) {
  std::string s = p.getPhase().str();
  if (p.getLayer() >= 0)
    s += ", layer " + std::to_string(p.getLayer());
  if (!p.getOp().empty())
    s += ", " + p.getOp().str();
  return s;
}

void memorySection(html::Page &page, DecisionAttr decision) {
  page.heading("Memory per GPU: the chosen strategy and the alternatives");
  html::BarChart chart{"memory at each strategy's peak", "GiB", {}, {}};
  // Numbered as the table below lists them: 1 is the chosen one (the
  // closest when nothing fits).
  int n = 0;
  if (CandidateAttr picked = decision.getPicked())
    chart.bars.push_back(bar(picked, std::to_string(++n) + (decision.getFits() ? " (chosen)" : " (closest)"), true));
  for (CandidateAttr c : decision.getAlternativeCandidates())
    chart.bars.push_back(bar(c, std::to_string(++n), false));
  chart.limit = {{"usable", double(decision.getUsableBytes()) / kGiB}};
  page.raw(html::stackedBarsSvg(chart));
  std::vector<std::vector<std::string>> rows = {
      {"", "strategy", "peak", "tokens/s", "verdict"}};
  auto row = [&](CandidateAttr c) {
    rows.push_back({std::to_string(rows.size()), describe(c), html::readable(double(c.getPeakBytes()) / kGiB) + " GiB",
                    html::readable(real(c.getTokensPerSecond())), c.getVerdict().str()});
  };
  if (CandidateAttr picked = decision.getPicked())
    row(picked);
  for (CandidateAttr c : decision.getAlternativeCandidates())
    row(c);
  page.table(rows);
}

void timelineSection(html::Page &page, EstimateAttr e, DecisionAttr decision) {
  if (!e.getTimeline() || e.getTimeline().empty())
    return;
  page.heading("Memory over one step (the chosen strategy)");
  html::Series allocated{"allocated", {}, false};
  std::optional<std::pair<std::string, std::pair<double, double>>> peak;
  for (mlir::Attribute a : e.getTimeline()) {
    auto p = mlir::cast<MemoryPointAttr>(a);
    const std::pair<double, double> xy{double(allocated.points.size()),
                                       double(p.getBytes()) / kGiB};
    allocated.points.push_back(xy);
    if (p.getBytes() == e.getPeakBytes() && !peak)
      peak = {{"peak " + html::readable(xy.second) + " GiB: " + where(p), xy}};
  }
  html::LineChart chart{"allocated memory through the step", "point of the step (in order)",
                        "GiB", {allocated}, {}, peak, true};
  chart.reference = {{"usable", double(decision.getUsableBytes()) / kGiB}};
  page.raw(html::lineChartSvg(chart));
  page.paragraph("Each decoder layer's forward, the loss's forward and backward, each "
                 "decoder layer's backward (last layer first) and the optimizer step, as "
                 "the cost model walks the step; the peak is its largest point.");
}

void timeSection(html::Page &page, EstimateAttr e) {
  page.heading("Time of one step");
  const double compute = real(e.getComputeSeconds()),
               recompute = real(e.getRecomputeSeconds());
  html::BarChart chart{"step time", "s", {}, {}};
  chart.bars.push_back({"step", "the time of one optimizer step",
                        {{"compute", compute - recompute},
                         {"recompute", recompute},
                         {"exposed communication", real(e.getExposedCommunicationSeconds())},
                         {"offload", real(e.getOffloadSeconds())},
                         {"optimizer", real(e.getOptimizerSeconds())}},
                        true});
  page.raw(html::stackedBarsSvg(chart));
  page.table({{"part", "seconds"},
              {"step", html::readable(real(e.getStepSeconds()))},
              {"compute (forward, backward, recompute)", html::readable(compute)},
              {"recompute", html::readable(recompute)},
              {"communication (hidden or not)", html::readable(real(e.getCommunicationSeconds()))},
              {"exposed communication", html::readable(real(e.getExposedCommunicationSeconds()))},
              {"offload", html::readable(real(e.getOffloadSeconds()))},
              {"optimizer", html::readable(real(e.getOptimizerSeconds()))},
              {"tokens/s (all GPUs)", html::readable(real(e.getTokensPerSecond()))},
              {"MFU", html::readable(100 * real(e.getMfu())) + "%"}});
}

} // namespace

std::string writeHtml(const std::string &path, const job::JobSpec &spec, JobOp job,
                      const Replanned &replanned, const DataPlan *data) {
  html::Page page("swift-plan: " + spec.path);
  page.paragraph(pricedSummary(job));
  DecisionAttr decision = job.getDecisionAttr();
  EstimateAttr e = job.getEstimateAttr();
  if (decision)
    memorySection(page, decision);
  if (e && decision)
    timelineSection(page, e, decision);
  if (e) {
    timeSection(page, e);
    page.heading("Host memory per node");
    page.table({{"", "bytes"},
                {"needed", html::readable(double(e.getHostBytes()) / kGiB) + " GiB"},
                {"usable", decision ? html::readable(double(usableHostBytes(job, decision)) / kGiB) +
                                          " GiB"
                                    : "n/a"}});
  }
  page.heading("The report (swift-plan --explain)");
  std::string text;
  llvm::raw_string_ostream os(text);
  printReport(os, spec, job, replanned, /*explain=*/true, data);
  page.preformatted(os.str());
  if (auto file = llvm::MemoryBuffer::getFile(spec.path); file && (*file)->getBufferSize() < (1 << 20)) {
    page.heading("The job (" + spec.path + ")");
    page.preformatted((*file)->getBuffer().str());
  }
  page.heading("The phases the IR went through");
  std::vector<std::vector<std::string>> phases = {{"phase", "what it decides"}};
  const char *what[] = {"the job and model as IR", "each op's FLOPs, saved tensors, parameters",
                        "ZeRO stage, offload, checkpointing, micro-batch (the search)",
                        "memory and time of the chosen strategy",
                        "units, buckets, gathers, optimizer placement"};
  for (size_t i = 0; i < std::size(mlir::swift::kPhaseNames); ++i)
    phases.push_back({mlir::swift::kPhaseNames[i], i < std::size(what) ? what[i] : ""});
  page.table(phases);
  page.paragraph("swift-plan JOB --dump-phases-to DIR writes the IR after each phase.");
  return page.write(path);
}

} // namespace swift::report
