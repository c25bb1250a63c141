//===- Html.h - self-contained HTML pages with inline SVG charts -*- C++ -*-===//
//
// What swift-plan --html and swift-run --report write: one HTML file that a
// browser shows offline (inline CSS and SVG, no script, no font or image
// fetched). The charts carry their numbers as data-* attributes, so a test
// can read from the rendered DOM what a reader sees:
//   line chart:    <svg class="chart line" data-title=...>, one
//                  <polyline class="series" data-series=NAME
//                  data-values="y1 y2 ..." data-steps="x1 x2 ..."> per series;
//   stacked bars:  <svg class="chart bars">, one <g class="bar"
//                  data-label=L data-title=... data-total=T> per bar holding one
//                  <rect class="part" data-part=P data-value=V> per part
//                  and <text class="total">; the limit as
//                  <line class="limit" data-value=V>.
// Values are written with 9 significant digits ("%.9g").
//
// Plain C++17, no dependency, no exception: the runtime and the tools
// both use it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace swift::html {

/// `text` with & < > " ' escaped for HTML text and attribute values, as
/// Jinja's (markupsafe's) escape writes them: &amp; &lt; &gt; &#34; &#39;
/// (the chat templates' `| e` filter is this function).
std::string escape(const std::string &text);

/// "%.9g": how values are written into data-* attributes.
std::string exact(double v);

/// A value for a reader: 4 significant digits from 1e-3 to 1e4, whole
/// numbers above ("55.13", "0.0002", "123456"), 2 digits below ("1.2e-05").
std::string readable(double v);

/// A duration people read: "45 s", "2 min 10 s", "5 h 12 min", "3 d 4 h".
std::string duration(double seconds);

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points; // (x, y), x increasing
  bool dashed = false;
};

struct LineChart {
  std::string title, xLabel, yLabel;
  std::vector<Series> series;
  /// A horizontal line (e.g. the plan's prediction), when given.
  std::optional<std::pair<std::string, double>> reference;
  /// A marked point (e.g. the peak) with its label, when given.
  std::optional<std::pair<std::string, std::pair<double, double>>> marker;
  bool yFromZero = false;
};
std::string lineChartSvg(const LineChart &chart);

struct BarPart {
  std::string name;
  double value = 0;
};
struct Bar {
  std::string label; // under the bar (short)
  std::string title; // its tooltip and data-title (e.g. the whole strategy)
  std::vector<BarPart> parts;
  bool highlighted = false; // the chosen one
};
struct BarChart {
  std::string title, unit; // unit: the suffix of a value's text ("GiB")
  std::vector<Bar> bars;
  std::optional<std::pair<std::string, double>> limit; // e.g. usable memory
};
std::string stackedBarsSvg(const BarChart &chart);

/// An HTML page: a title, then blocks in order.
class Page {
public:
  explicit Page(std::string title) : title_(std::move(title)) {}
  void heading(const std::string &text);
  void paragraph(const std::string &text);
  /// Preformatted text (an explanation, a job file).
  void preformatted(const std::string &text);
  /// A table: the first row is the header.
  void table(const std::vector<std::vector<std::string>> &rows);
  /// Markup made by this header's functions (a chart).
  void raw(std::string html) { body_ += html + "\n"; }
  std::string html() const;
  /// Writes html() to `path`: "" when written, else why not ("cannot write:
  /// No space left on device"). No exception: the compiler's tools are
  /// built without them.
  std::string write(const std::string &path) const;

private:
  std::string title_, body_;
};

} // namespace swift::html
