// The HTML reports: well-formed, self-contained, with the charts a reader
// expects, and bounded in size on large graphs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/random_graph.h"
#include "dplace/report/html_report.h"
#include "dplace/report/svg.h"
#include "dplace/testing/xml_check.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_xml::CheckXml;
using testing_xml::XmlCheck;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(XmlCheckTest, AcceptsWellFormedAndCountsElements) {
  const XmlCheck ok = CheckXml(
      "<!DOCTYPE html>\n<html><body a=\"1\" b='x &amp; y'><br/>"
      "<p>a &lt; b &#8211; c</p><!-- <not a tag> --></body></html>");
  ASSERT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(ok.elements.at("br"), 1);
  EXPECT_EQ(ok.elements.at("p"), 1);
}

TEST(XmlCheckTest, RejectsWhatABrowserWouldGuessAt) {
  EXPECT_THAT(CheckXml("<a><b></a></b>").error, HasSubstr("</a> closes <b>"));
  EXPECT_THAT(CheckXml("<a>x & y</a>").error, HasSubstr("bare '&'"));
  EXPECT_THAT(CheckXml("<a x=1></a>").error, HasSubstr("unquoted"));
  EXPECT_THAT(CheckXml("<a x=\"1\" x=\"2\"></a>").error, HasSubstr("twice"));
  EXPECT_THAT(CheckXml("<a><b></a>").error, HasSubstr("closes"));
  EXPECT_THAT(CheckXml("<a></a><b></b>").error, HasSubstr("second root"));
  EXPECT_THAT(CheckXml("<a>").error, HasSubstr("not closed"));
  EXPECT_THAT(CheckXml("<a>1 < 2</a>").error, HasSubstr("not starting a tag"));
}

TEST(SvgTest, EscapesTextAndSkipsNonFinitePoints) {
  EXPECT_EQ(report::Escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
  report::Series s{"m<1>", "#000"};
  s.x = {1, 2, 3, 4};
  s.y = {1, NAN, 2, 3};
  report::PlotOptions o;
  o.title = "t & u";
  const std::string svg = report::Plot({s}, {{"bound", 0.5}}, o);
  const XmlCheck check = CheckXml(svg);
  ASSERT_TRUE(check.ok()) << check.error;
  // The gap splits the line in two.
  EXPECT_EQ(check.elements.at("polyline"), 2);
  EXPECT_THAT(svg, HasSubstr("m&lt;1&gt;"));
}

TEST(SvgTest, LogAxesTickDecades) {
  report::Series s{"sim", "#000"};
  s.x = {1e3, 1e4, 1e5};
  s.y = {1e-3, 1e-2, 1e-1};
  report::PlotOptions o;
  o.log_x = o.log_y = true;
  const std::string svg = report::Plot({s}, {}, o);
  ASSERT_TRUE(CheckXml(svg).ok());
  EXPECT_THAT(svg, HasSubstr(">1e+05<"));
  EXPECT_THAT(svg, HasSubstr(">0.001<"));
}

TEST(SvgTest, BarOverCapacityIsRed) {
  const std::string svg =
      report::BarChart({{"gpu:0", 13, 12, "#1f77b4", "13 / 12"},
                        {"gpu:1", 5, 12, "#ff7f0e", ""}},
                       {});
  ASSERT_TRUE(CheckXml(svg).ok());
  EXPECT_EQ(Count(svg, "#d62728"), 1);
}

// A random graph placed at random on 4 K80s, simulated with its timeline.
Graph RandomGraph(int ops) {
  RandomGraphOptions options;
  options.num_ops = ops;
  return MakeRandomLayeredGraph(options);
}

struct Placed {
  explicit Placed(int ops)
      : graph(RandomGraph(ops)),
        cluster(*MakeClusterPreset("k80x4")),
        placement(MakeRandomPlacement(graph, cluster, 7)) {
    CostModel cost(graph, cluster);
    Simulator simulator(cost);
    SimOptions sim_options;
    sim_options.record_timeline = true;
    sim = *simulator.Simulate(placement, sim_options);
  }
  PlacementReportInput Input() const {
    PlacementReportInput in;
    in.graph = &graph;
    in.cluster = &cluster;
    in.placement = &placement;
    in.sim = &sim;
    in.method = "random";
    in.command = "dplace place --model random:ops=N --method random";
    in.lower_bound = {sim.bounds.Max() / 2, "total work"};
    return in;
  }
  Graph graph;
  Cluster cluster;
  Placement placement;
  SimResult sim;
};

TEST(PlacementReportTest, WellFormedSelfContainedWithEveryChart) {
  Placed p(400);
  const std::string html = PlacementReportHtml(p.Input());
  const XmlCheck check = CheckXml(html);
  ASSERT_TRUE(check.ok()) << check.error;
  // Layers, op map, load, memory, Gantt: each an <svg>.
  EXPECT_GE(check.elements.at("svg"), 5);
  EXPECT_GT(check.elements.at("rect"), 100);
  EXPECT_THAT(html, HasSubstr("class=\"chart gantt\""));
  EXPECT_THAT(html, HasSubstr("gpu:3"));
  EXPECT_THAT(html, HasSubstr(p.graph.hash()));
  // No script, no external resource.
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("href=")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  // Classical placer: no learning curve.
  EXPECT_THAT(html, Not(HasSubstr("Learning curve")));
}

TEST(PlacementReportTest, LearnedPlacerGetsALearningCurve) {
  Placed p(200);
  PlacementReportInput in = p.Input();
  double best = 0;
  for (int i = 0; i < 50; ++i) {
    const bool feasible = i % 7 != 3;
    const double t = 2.0 - i * 0.02;
    if (feasible && (best == 0 || t < best)) best = t;
    in.history.push_back({feasible ? t : 100.0, feasible, best});
  }
  const std::string html = PlacementReportHtml(in);
  const XmlCheck check = CheckXml(html);
  ASSERT_TRUE(check.ok()) << check.error;
  EXPECT_THAT(html, HasSubstr("Learning curve"));
  EXPECT_GE(check.elements.at("polyline"), 1);  // Best so far.
  EXPECT_GE(check.elements.at("path"), 2);      // Feasible and OOM dots.
}

TEST(PlacementReportTest, LargeGraphStaysSmall) {
  Placed p(40000);
  PlacementReportInput in = p.Input();
  in.max_rects_per_lane = 1000;
  const std::string html = PlacementReportHtml(in);
  ASSERT_TRUE(CheckXml(html).ok());
  EXPECT_LT(html.size(), 3u << 20) << html.size() << " bytes";
  // At most max_rects_per_lane merged bars per lane; 5 devices and at most
  // 8 links carry traffic on k80x4, plus the other charts' rects.
  const int gantt_start = static_cast<int>(html.find("class=\"chart gantt\""));
  const std::string gantt = html.substr(gantt_start);
  EXPECT_LT(Count(gantt, "<rect"), 14 * 1000 + 20);
}

TEST(BenchReportTest, RejectsOtherDocumentsNamingTheSource) {
  StatusOr<std::string> html = BenchReportHtml("{\"format\": \"x\"}", "r.json");
  ASSERT_FALSE(html.ok());
  EXPECT_THAT(html.status().message(), HasSubstr("r.json"));
  EXPECT_THAT(BenchReportHtml("{", "r.json").status().message(),
              HasSubstr("r.json: not a dplace.bench-results document"));
}

}  // namespace
}  // namespace dplace
