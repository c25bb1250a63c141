//===- Html.cpp - self-contained HTML pages with inline SVG charts ------===//
#include "swift/Html/Html.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace swift::html {
namespace {

// One palette for every chart: series and parts take colors in order.
const char *const kColors[] = {"#2b6cb0", "#dd6b20", "#38a169", "#805ad5",
                               "#d53f8c", "#319795", "#b7791f", "#718096"};
const char *color(size_t i) { return kColors[i % (sizeof kColors / sizeof *kColors)]; }

std::string fmt(const char *format, double v) {
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

/// "Nice" ticks over [lo, hi]: about `n` steps of 1, 2 or 5 x 10^k.
std::vector<double> ticks(double lo, double hi, int n) {
  const double span = hi - lo;
  if (!(span > 0))
    return {lo};
  const double raw = span / n, mag = std::pow(10, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3 ? 2 * mag
                      : raw / mag < 7 ? 5 * mag
                                      : 10 * mag;
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

/// A plot area: data coordinates to SVG pixels.
struct Frame {
  double x0, x1, y0, y1;                         // data ranges
  double left = 64, top = 36, width = 620, height = 220; // pixels
  double px(double x) const {
    return left + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * width;
  }
  double py(double y) const {
    return top + height - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * height;
  }
};

std::string svgOpen(const std::string &cls, const std::string &title,
                    double width, double height) {
  return "<svg class=\"chart " + cls + "\" data-title=\"" + escape(title) +
         "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", width) +
         "\" height=\"" + fmt("%.0f", height) + "\" viewBox=\"0 0 " +
         fmt("%.0f", width) + " " + fmt("%.0f", height) + "\">\n<text x=\"" +
         fmt("%.0f", width / 2) + "\" y=\"20\" class=\"title\">" + escape(title) +
         "</text>\n";
}

std::string text(double x, double y, const std::string &anchor,
                 const std::string &content, const std::string &cls = "") {
  return "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) +
         "\" text-anchor=\"" + anchor + "\"" +
         (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + escape(content) +
         "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2,
                 const std::string &attrs) {
  return "<line x1=\"" + fmt("%.1f", x1) + "\" y1=\"" + fmt("%.1f", y1) +
         "\" x2=\"" + fmt("%.1f", x2) + "\" y2=\"" + fmt("%.1f", y2) + "\" " +
         attrs + "/>\n";
}

} // namespace

std::string escape(const std::string &s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&#34;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  return out;
}

std::string exact(double v) { return fmt("%.9g", v); }

std::string readable(double v) {
  const double a = std::abs(v);
  if (a == 0)
    return "0";
  if (a >= 1e4 && a < 1e12)
    return fmt("%.0f", v); // 123456, not 1.235e+05
  if (a >= 1e-3)
    return fmt("%.4g", v);
  return fmt("%.2g", v);
}

std::string duration(double s) {
  const int64_t t = int64_t(s + 0.5);
  char b[48];
  if (t < 60)
    std::snprintf(b, sizeof b, "%lld s", (long long)t);
  else if (t < 3600)
    std::snprintf(b, sizeof b, "%lld min %lld s", (long long)(t / 60), (long long)(t % 60));
  else if (t < 86400)
    std::snprintf(b, sizeof b, "%lld h %lld min", (long long)(t / 3600),
                  (long long)(t % 3600 / 60));
  else
    std::snprintf(b, sizeof b, "%lld d %lld h", (long long)(t / 86400),
                  (long long)(t % 86400 / 3600));
  return b;
}

std::string lineChartSvg(const LineChart &c) {
  Frame f{0, 1, 0, 1};
  bool any = false;
  for (const Series &s : c.series)
    for (auto [x, y] : s.points) {
      if (!std::isfinite(y))
        continue;
      if (!any) {
        f.x0 = f.x1 = x;
        f.y0 = f.y1 = y;
        any = true;
      }
      f.x0 = std::min(f.x0, x), f.x1 = std::max(f.x1, x);
      f.y0 = std::min(f.y0, y), f.y1 = std::max(f.y1, y);
    }
  if (c.reference)
    f.y0 = std::min(f.y0, c.reference->second), f.y1 = std::max(f.y1, c.reference->second);
  if (c.yFromZero)
    f.y0 = std::min(f.y0, 0.0);
  const double pad = (f.y1 - f.y0) * 0.05 + (f.y1 == f.y0 ? std::abs(f.y1) * 0.1 + 1e-12 : 0);
  f.y1 += pad;
  if (!c.yFromZero || f.y0 < 0)
    f.y0 -= pad;
  const double W = 720, H = f.top + f.height + 44;
  std::string out = svgOpen("line", c.title, W, H);
  // Axes and grid.
  for (double t : ticks(f.y0, f.y1, 5)) {
    out += line(f.left, f.py(t), f.left + f.width, f.py(t), "class=\"grid\"");
    out += text(f.left - 6, f.py(t) + 4, "end", readable(t), "tick");
  }
  for (double t : ticks(f.x0, f.x1, 6))
    out += text(f.px(t), f.top + f.height + 16, "middle", readable(t), "tick");
  out += line(f.left, f.top + f.height, f.left + f.width, f.top + f.height,
              "class=\"axis\"");
  out += line(f.left, f.top, f.left, f.top + f.height, "class=\"axis\"");
  out += text(f.left + f.width / 2, H - 8, "middle", c.xLabel, "label");
  out += "<text class=\"label\" transform=\"translate(14," +
         fmt("%.0f", f.top + f.height / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         escape(c.yLabel) + "</text>\n";
  if (c.reference) {
    const double y = f.py(c.reference->second);
    out += line(f.left, y, f.left + f.width, y,
                "class=\"reference\" data-value=\"" + exact(c.reference->second) + "\"");
    out += text(f.left + f.width - 4, y - 5, "end",
                c.reference->first + " " + readable(c.reference->second), "reference-label");
  }
  // Series, with their values as the DOM gives them to a test.
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series &s = c.series[i];
    std::string points, values, steps;
    for (auto [x, y] : s.points) {
      values += (values.empty() ? "" : " ") + exact(y);
      steps += (steps.empty() ? "" : " ") + exact(x);
      if (std::isfinite(y))
        points += fmt("%.1f", f.px(x)) + "," + fmt("%.1f", f.py(y)) + " ";
    }
    out += "<polyline class=\"series\" data-series=\"" + escape(s.name) +
           "\" data-values=\"" + values + "\" data-steps=\"" + steps +
           "\" fill=\"none\" stroke=\"" + color(i) + "\" stroke-width=\"2\"" +
           (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + points +
           "\"/>\n";
    if (s.points.size() == 1) // a lone point shows as a dot
      out += "<circle cx=\"" + fmt("%.1f", f.px(s.points[0].first)) + "\" cy=\"" +
             fmt("%.1f", f.py(s.points[0].second)) + "\" r=\"3\" fill=\"" +
             color(i) + "\"/>\n";
    out += "<rect x=\"" + fmt("%.0f", f.left + 8 + 150.0 * double(i)) +
           "\" y=\"" + fmt("%.0f", f.top - 6) + "\" width=\"12\" height=\"3\" fill=\"" +
           color(i) + "\"/>\n" +
           text(f.left + 24 + 150.0 * double(i), f.top - 2, "start", s.name, "legend");
  }
  if (c.marker) {
    auto [x, y] = c.marker->second;
    out += "<circle class=\"marker\" data-x=\"" + exact(x) + "\" data-y=\"" +
           exact(y) + "\" cx=\"" + fmt("%.1f", f.px(x)) + "\" cy=\"" +
           fmt("%.1f", f.py(y)) + "\" r=\"5\"/>\n";
    out += text(f.px(x), f.py(y) - 9, f.px(x) > f.left + f.width * 0.7 ? "end" : "middle",
                c.marker->first, "marker-label");
  }
  return out + "</svg>\n";
}

std::string stackedBarsSvg(const BarChart &c) {
  double top = 0;
  for (const Bar &b : c.bars) {
    double total = 0;
    for (const BarPart &p : b.parts)
      total += p.value;
    top = std::max(top, total);
  }
  if (c.limit)
    top = std::max(top, c.limit->second);
  Frame f{0, 1, 0, top > 0 ? top * 1.08 : 1};
  f.height = 240;
  const double slot = 96;
  f.width = std::max(300.0, slot * double(c.bars.size()));
  const double W = f.left + f.width + 190, H = f.top + f.height + 56;
  std::string out = svgOpen("bars", c.title, W, H);
  for (double t : ticks(0, f.y1, 5)) {
    out += line(f.left, f.py(t), f.left + f.width, f.py(t), "class=\"grid\"");
    out += text(f.left - 6, f.py(t) + 4, "end", readable(t), "tick");
  }
  out += line(f.left, f.top + f.height, f.left + f.width, f.top + f.height,
              "class=\"axis\"");
  // The parts' names in first-seen order: one color each, one legend.
  std::vector<std::string> names;
  for (const Bar &b : c.bars)
    for (const BarPart &p : b.parts)
      if (std::find(names.begin(), names.end(), p.name) == names.end())
        names.push_back(p.name);
  for (size_t i = 0; i < c.bars.size(); ++i) {
    const Bar &b = c.bars[i];
    double total = 0;
    for (const BarPart &p : b.parts)
      total += p.value;
    const double x = f.left + slot * double(i) + 18, w = slot - 36;
    out += "<g class=\"bar" + std::string(b.highlighted ? " chosen" : "") +
           "\" data-label=\"" + escape(b.label) + "\" data-title=\"" +
           escape(b.title) + "\" data-total=\"" + exact(total) + "\">\n";
    if (!b.title.empty())
      out += "<title>" + escape(b.title) + "</title>\n";
    double base = 0;
    for (const BarPart &p : b.parts) {
      const size_t k = size_t(std::find(names.begin(), names.end(), p.name) - names.begin());
      const double y = f.py(base + p.value), h = f.py(base) - y;
      out += "<rect class=\"part\" data-part=\"" + escape(p.name) +
             "\" data-value=\"" + exact(p.value) + "\" x=\"" + fmt("%.1f", x) +
             "\" y=\"" + fmt("%.1f", y) + "\" width=\"" + fmt("%.1f", w) +
             "\" height=\"" + fmt("%.1f", std::max(0.0, h)) + "\" fill=\"" +
             color(k) + "\"><title>" + escape(p.name + ": " + readable(p.value) +
                                              " " + c.unit) +
             "</title></rect>\n";
      base += p.value;
    }
    out += text(x + w / 2, f.py(total) - 5, "middle", readable(total) + " " + c.unit,
                "total");
    out += text(x + w / 2, f.top + f.height + 16, "middle", b.label,
                b.highlighted ? "bar-label chosen" : "bar-label");
    out += "</g>\n";
  }
  if (c.limit) {
    const double y = f.py(c.limit->second);
    out += line(f.left, y, f.left + f.width, y,
                "class=\"limit\" data-value=\"" + exact(c.limit->second) + "\"");
    out += text(f.left + f.width - 4, y - 5, "end",
                c.limit->first + " " + readable(c.limit->second) + " " + c.unit,
                "limit-label");
  }
  for (size_t k = 0; k < names.size(); ++k) {
    const double y = f.top + 14 + 18 * double(k);
    out += "<rect x=\"" + fmt("%.0f", f.left + f.width + 20) + "\" y=\"" +
           fmt("%.0f", y - 10) + "\" width=\"12\" height=\"12\" fill=\"" + color(k) +
           "\"/>\n" +
           text(f.left + f.width + 38, y, "start", names[k], "legend");
  }
  return out + "</svg>\n";
}

void Page::heading(const std::string &t) { body_ += "<h2>" + escape(t) + "</h2>\n"; }

void Page::paragraph(const std::string &t) { body_ += "<p>" + escape(t) + "</p>\n"; }

void Page::preformatted(const std::string &t) {
  body_ += "<pre>" + escape(t) + "</pre>\n";
}

void Page::table(const std::vector<std::vector<std::string>> &rows) {
  body_ += "<table>\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    body_ += "<tr>";
    for (const std::string &cell : rows[r])
      body_ += (r == 0 ? "<th>" : "<td>") + escape(cell) + (r == 0 ? "</th>" : "</td>");
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

std::string Page::html() const {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<title>" + escape(title_) + "</title>\n<style>\n"
         "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;"
         "max-width:1100px;color:#1a202c;padding:0 16px}\n"
         "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #e2e8f0}\n"
         "pre{background:#f7fafc;border:1px solid #e2e8f0;padding:10px;overflow-x:auto;"
         "font-size:12px}\n"
         "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #e2e8f0;"
         "padding:3px 8px;text-align:left}th{background:#f7fafc}\n"
         "svg.chart{display:block;margin:8px 0;font-size:11px}\n"
         "svg .title{font-size:14px;font-weight:600;text-anchor:middle}\n"
         "svg .grid{stroke:#edf2f7}svg .axis{stroke:#4a5568}\n"
         "svg .tick,svg .label,svg .legend{fill:#4a5568}\n"
         "svg .reference,svg .limit{stroke:#e53e3e;stroke-dasharray:5 3;stroke-width:1.5}\n"
         "svg .reference-label,svg .limit-label{fill:#e53e3e}\n"
         "svg .marker{fill:none;stroke:#e53e3e;stroke-width:2}svg .marker-label{fill:#e53e3e}\n"
         "svg .total{fill:#2d3748}svg .chosen{font-weight:700}\n"
         "</style>\n</head>\n<body>\n<h1>" + escape(title_) + "</h1>\n" + body_ +
         "</body>\n</html>\n";
}

std::string Page::write(const std::string &path) const {
  std::ofstream out(path, std::ios::binary);
  if (out.good()) {
    out << html();
    out.close();
  }
  return out.good() ? "" : std::string("cannot write: ") + std::strerror(errno);
}

} // namespace swift::html
