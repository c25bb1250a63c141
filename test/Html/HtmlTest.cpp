//===- HtmlTest.cpp - the HTML/SVG writer of swift/Html/Html.h ------===//
//
// What the browser tests (test/report_dom.py through Chromium) cannot
// single out: escaping, the number texts, and that each chart states its
// numbers exactly in the attributes a reader of the DOM uses.
//
//===----------------------------------------------------------------------===//
#include "swift/Html/Html.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

namespace swift::html {
namespace {

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(Html, TextIsEscapedInTextAndAttributes) {
  EXPECT_EQ(escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  Page page("a <b> title");
  page.table({{"k", "v"}, {"<script>", "\"quoted\""}});
  const std::string html = page.html();
  EXPECT_EQ(html.find("<script"), std::string::npos) << html;
  EXPECT_NE(html.find("<title>a &lt;b&gt; title</title>"), std::string::npos);
}

TEST(Html, NumbersReadAsPeopleWriteThem) {
  EXPECT_EQ(readable(55.1337), "55.13");
  EXPECT_EQ(readable(0.0002), "0.0002");
  EXPECT_EQ(readable(1.2e-5), "1.2e-05");
  EXPECT_EQ(readable(123456), "123456");
  EXPECT_EQ(readable(-2.5), "-2.5");
  EXPECT_EQ(readable(0), "0");
  EXPECT_EQ(exact(1.0 / 3), "0.333333333");
  EXPECT_EQ(duration(45), "45 s");
  EXPECT_EQ(duration(130), "2 min 10 s");
  EXPECT_EQ(duration(5 * 3600 + 12 * 60), "5 h 12 min");
  EXPECT_EQ(duration(3 * 86400 + 4 * 3600), "3 d 4 h");
}

TEST(Html, ALineChartStatesEverySeriesValue) {
  LineChart c{"loss", "step", "loss", {}, {}, {}, false};
  c.series.push_back({"loss", {{1, 2.5}, {2, 2.25}, {3, 2.125}}, false});
  c.series.push_back({"eval_loss", {{3, 2.0}}, true});
  c.reference = {{"plan", 2.2}};
  c.marker = {{"peak", {2, 2.25}}};
  const std::string svg = lineChartSvg(c);
  EXPECT_NE(svg.find("data-series=\"loss\" data-values=\"2.5 2.25 2.125\" "
                     "data-steps=\"1 2 3\""),
            std::string::npos) << svg;
  EXPECT_NE(svg.find("data-series=\"eval_loss\" data-values=\"2\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"reference\" data-value=\"2.2\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"marker\" data-x=\"2\" data-y=\"2.25\""), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
}

TEST(Html, StackedBarsStateTheirPartsTotalsAndLimit) {
  BarChart c{"memory", "GiB", {}, {}};
  c.bars.push_back({"zero-1", "ZeRO-1", {{"weights", 2}, {"optimizer", 12}}, false});
  c.bars.push_back({"zero-3", "ZeRO-3", {{"weights", 0.5}, {"optimizer", 3}, {"activations", 20}}, true});
  c.limit = {{"usable", 74.5}};
  const std::string svg = stackedBarsSvg(c);
  EXPECT_NE(svg.find("class=\"bar\" data-label=\"zero-1\" data-title=\"ZeRO-1\" data-total=\"14\""),
            std::string::npos) << svg;
  EXPECT_NE(svg.find("class=\"bar chosen\" data-label=\"zero-3\" data-title=\"ZeRO-3\" data-total=\"23.5\""),
            std::string::npos) << svg;
  EXPECT_EQ(count(svg, "class=\"part\""), 5u);
  EXPECT_NE(svg.find("class=\"limit\" data-value=\"74.5\""), std::string::npos);
  EXPECT_NE(svg.find(">23.5 GiB<"), std::string::npos);
}

TEST(Html, WriteSaysWhyAFileCannotBeWritten) {
  Page page("p");
  EXPECT_EQ(page.write("/nonexistent-dir/report.html").rfind("cannot write: ", 0), 0u);
  const std::string path =
      (std::filesystem::temp_directory_path() / "swift-report-test.html").string();
  EXPECT_EQ(page.write(path), "");
  EXPECT_GT(std::filesystem::file_size(path), 100u);
  std::filesystem::remove(path);
}

} // namespace
} // namespace swift::html
