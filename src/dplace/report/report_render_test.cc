// A real browser renders the reports: headless Chromium (Debian package
// `chromium`) screenshots a placement report and a bench report, and the
// PNGs (decoded with libpng) must show the page's charts, not a blank or
// error page. Then the laid-out page is checked from its DOM (a script the
// test adds to its copy of the page; the reports carry none): the module
// rows in model order, no two text labels of a chart overlapping or
// running past its edge, and every chart's axes labelled with their units.
//
// Chromium missing fails the test with a message saying how to install it
// (scripts/install-deps.sh does). On a machine without it, set
// DPLACE_SKIP_CHROMIUM=1 to skip the test explicitly (docs/bench.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <png.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/random_graph.h"
#include "dplace/graph/training.h"
#include "dplace/io/file.h"
#include "dplace/io/onnx/onnx_import.h"
#include "dplace/report/html_report.h"
#include "dplace/testing/temp_dir.h"

namespace dplace {
namespace {

namespace fs = std::filesystem;

// The chromium binary on PATH, or "".
std::string FindChromium() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    for (const char* name : {"chromium", "chromium-browser"}) {
      const fs::path candidate =
          fs::path(dirs.substr(begin, end - begin)) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    begin = end + 1;
  }
  return "";
}

struct Pixels {
  int width = 0, height = 0;
  int64_t non_white = 0;  // Any channel below 245.
  int64_t coloured = 0;   // Saturated: max - min channel > 60.
  std::string error;
};

Pixels DecodePng(const std::string& path) {
  Pixels p;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str())) {
    p.error = std::string("libpng: ") + image.message;
    return p;
  }
  image.format = PNG_FORMAT_RGB;
  std::vector<png_byte> rgb(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, rgb.data(), 0, nullptr)) {
    p.error = std::string("libpng: ") + image.message;
    return p;
  }
  p.width = static_cast<int>(image.width);
  p.height = static_cast<int>(image.height);
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    const int r = rgb[i], g = rgb[i + 1], b = rgb[i + 2];
    if (r < 245 || g < 245 || b < 245) ++p.non_white;
    if (std::max({r, g, b}) - std::min({r, g, b}) > 60) ++p.coloured;
  }
  return p;
}

class ReportRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* skip = std::getenv("DPLACE_SKIP_CHROMIUM");
    if (skip && std::string(skip) == "1") {
      GTEST_SKIP() << "DPLACE_SKIP_CHROMIUM=1: headless-Chromium check "
                      "skipped on request";
    }
    chromium_ = FindChromium();
    ASSERT_FALSE(chromium_.empty())
        << "chromium not found on PATH: install the Debian package "
           "(scripts/install-deps.sh does, or apt-get install chromium), "
           "or set DPLACE_SKIP_CHROMIUM=1 to skip this check explicitly";
    dir_ = FreshTestDir("dplace_render");
  }
  void TearDown() override {
    if (!dir_.empty()) RemoveTree(dir_);
  }

  // Screenshots `html` at 1200x2000 and decodes the PNG.
  Pixels Render(const std::string& name, const std::string& html) {
    const std::string page = dir_ + "/" + name + ".html";
    const std::string png = dir_ + "/" + name + ".png";
    EXPECT_TRUE(WriteTextFile(page, html).ok());
    // Flags that keep Chromium off the network and out of the user's
    // profile; --no-sandbox because CI runs as root, and
    // --disable-dev-shm-usage because containers often have a tiny
    // /dev/shm.
    const std::string command =
        "timeout 180 '" + chromium_ +
        "' --headless --no-sandbox --disable-gpu "
        "--disable-background-networking --disable-component-update "
        "--disable-sync --disable-default-apps --no-first-run "
        "--disable-dev-shm-usage --hide-scrollbars --user-data-dir='" +
        dir_ + "/profile' --screenshot='" + png +
        "' --window-size=1200,2000 'file://" + page + "' >'" + dir_ +
        "/chromium.log' 2>&1";
    const int status = std::system(command.c_str());
    Pixels pixels;
    if (status != 0 || !fs::exists(png)) {
      StatusOr<std::string> log = ReadTextFile(dir_ + "/chromium.log");
      pixels.error = "chromium exited with status " +
                     std::to_string(WEXITSTATUS(status)) + ": " +
                     (log.ok() ? log->substr(0, 2000) : "");
      return pixels;
    }
    return DecodePng(png);
  }

  // Lays `html` out in Chromium with a script that measures it, and
  // returns what the script found: {"rows": [[path, depth, position]...],
  // "overlaps": [...], "clipped": [...], "charts": [{"class", "labels"}]}.
  nlohmann::json CheckDom(const std::string& name, std::string html) {
    const std::string page = dir_ + "/" + name + ".html";
    const size_t end = html.rfind("</body>");
    EXPECT_NE(end, std::string::npos);
    html.insert(end, kDomCheckScript);
    EXPECT_TRUE(WriteTextFile(page, html).ok());
    const std::string dom = dir_ + "/" + name + ".dom";
    const std::string command =
        "timeout 180 '" + chromium_ +
        "' --headless --no-sandbox --disable-gpu "
        "--disable-background-networking --disable-component-update "
        "--disable-sync --disable-default-apps --no-first-run "
        "--disable-dev-shm-usage --user-data-dir='" +
        dir_ + "/profile' --window-size=1200,2000 --dump-dom 'file://" + page +
        "' >'" + dom + "' 2>'" + dir_ + "/chromium.log'";
    const int status = std::system(command.c_str());
    StatusOr<std::string> text = ReadTextFile(dom);
    if (status != 0 || !text.ok()) {
      ADD_FAILURE() << "chromium --dump-dom exited with status "
                    << WEXITSTATUS(status);
      return nlohmann::json();
    }
    const std::string open = "<pre id=\"dom-check\">";
    const size_t begin = text->find(open);
    const size_t close = text->find("</pre>", begin);
    if (begin == std::string::npos || close == std::string::npos) {
      ADD_FAILURE() << "the check script left no result: "
                    << text->substr(0, 500);
      return nlohmann::json();
    }
    std::string found =
        text->substr(begin + open.size(), close - begin - open.size());
    for (const auto& [entity, c] :
         std::vector<std::pair<std::string, std::string>>{{"&lt;", "<"},
                                                          {"&gt;", ">"},
                                                          {"&nbsp;", "\u00a0"},
                                                          {"&amp;", "&"}}) {
      for (size_t at = found.find(entity); at != std::string::npos;
           at = found.find(entity, at + c.size())) {
        found.replace(at, entity.size(), c);
      }
    }
    return nlohmann::json::parse(found);
  }

  // Every chart has an axis label with a unit in parentheses, no two text
  // labels of one SVG overlap, and none runs past its SVG's edge.
  static void ExpectReadableCharts(const nlohmann::json& dom) {
    ASSERT_TRUE(dom.is_object());
    EXPECT_TRUE(dom.at("overlaps").empty()) << dom.at("overlaps").dump(1);
    EXPECT_TRUE(dom.at("clipped").empty()) << dom.at("clipped").dump(1);
    ASSERT_FALSE(dom.at("charts").empty());
    for (const nlohmann::json& chart : dom.at("charts")) {
      SCOPED_TRACE(chart.dump());
      ASSERT_FALSE(chart.at("labels").empty());
      for (const nlohmann::json& label : chart.at("labels")) {
        EXPECT_THAT(label.get<std::string>(),
                    ::testing::MatchesRegex(".*\\(.+\\).*"));
      }
    }
  }

  static constexpr const char* kDomCheckScript = R"(<script>//<![CDATA[
(function () {
  var out = {rows: [], overlaps: [], clipped: [], charts: []};
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  document.querySelectorAll('.module-row').forEach(function (r) {
    out.rows.push([r.getAttribute('data-path'),
                   +r.getAttribute('data-depth'),
                   +r.getAttribute('data-position')]);
  });
  document.querySelectorAll('svg').forEach(function (svg, s) {
    var frame = svg.getBoundingClientRect();
    var boxes = [];
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect();
      if (b.width <= 0 || b.height <= 0) return;
      boxes.push([t.textContent, b]);
      if (b.left < frame.left - 1 || b.right > frame.right + 1 ||
          b.top < frame.top - 1 || b.bottom > frame.bottom + 1) {
        out.clipped.push([s, svg.getAttribute('class'), t.textContent]);
      }
    });
    for (var i = 0; i < boxes.length; ++i) {
      for (var j = i + 1; j < boxes.length; ++j) {
        var a = boxes[i][1], b = boxes[j][1];
        var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) {
          out.overlaps.push([s, svg.getAttribute('class'), boxes[i][0],
                             boxes[j][0]]);
        }
      }
    }
  });
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var labels = [];
    svg.querySelectorAll('.axis-label').forEach(function (t) {
      labels.push(t.textContent);
    });
    out.charts.push({'class': svg.getAttribute('class'), labels: labels});
  });
  var pre = document.createElement('pre');
  pre.id = 'dom-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
//]]></script>
)";

  std::string chromium_;
  std::string dir_;
};

TEST_F(ReportRenderTest, PlacementReportRendersItsCharts) {
  RandomGraphOptions options;
  options.num_ops = 600;
  const Graph graph = MakeRandomLayeredGraph(options);
  const Cluster cluster = *MakeClusterPreset("k80x4");
  const Placement placement = MakeRandomPlacement(graph, cluster, 3);
  const CostModel cost(graph, cluster);
  Simulator simulator(cost);
  SimOptions sim_options;
  sim_options.record_timeline = true;
  const SimResult sim = *simulator.Simulate(placement, sim_options);
  PlacementReportInput in;
  in.graph = &graph;
  in.cluster = &cluster;
  in.placement = &placement;
  in.sim = &sim;
  in.method = "random";
  double best = 0;
  for (int i = 0; i < 80; ++i) {
    const double t = sim.step_time * (1.5 - i / 160.0);
    best = best == 0 ? t : std::min(best, t);
    in.history.push_back({t, true, best});
  }
  const Pixels p = Render("placement", PlacementReportHtml(in));
  ASSERT_TRUE(p.error.empty()) << p.error;
  EXPECT_EQ(p.width, 1200);
  EXPECT_EQ(p.height, 2000);
  const int64_t total = int64_t{p.width} * p.height;
  // Text, axes and bars cover well over 5% of the page; the device and
  // phase colours (op map, layers, Gantt) over 2%. A blank page or
  // Chromium's error page has neither.
  EXPECT_GT(p.non_white, total / 20) << p.non_white << " of " << total;
  EXPECT_GT(p.coloured, total / 50) << p.coloured << " of " << total;
}

// The report of an untrained transformer placed layer by layer over two
// GPUs, with a search that sampled out-of-memory placements: its module
// rows are in model order, and its charts are readable.
TEST_F(ReportRenderTest, PlacementReportReadsInModelOrder) {
  StatusOr<OnnxImport> imported =
      ImportOnnxFile(std::string(DPLACE_SOURCE_DIR) +
                     "/testdata/onnx/transformer_untrained.onnx");
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  StatusOr<Graph> graph = ExpandForTraining(imported->forward);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const std::vector<DeviceId> gpus = cluster.DevicesOfKind(DeviceKind::kGpu);
  Placement placement(graph->num_ops(), gpus[0]);
  for (OpId op = 0; op < graph->num_ops(); ++op) {
    const std::string& scope = graph->scope(op);
    if (scope.rfind("layers.2", 0) == 0 || scope.rfind("layers.3", 0) == 0) {
      placement[op] = gpus[1];
    }
  }
  const CostModel cost(*graph, cluster);
  SimOptions sim_options;
  sim_options.record_timeline = true;
  const SimResult sim = *Simulator(cost).Simulate(placement, sim_options);
  PlacementReportInput in;
  in.graph = &*graph;
  in.cluster = &cluster;
  in.placement = &placement;
  in.sim = &sim;
  in.cost = &cost;
  in.warnings = imported->warnings;
  in.method = "layers";
  in.lower_bound = ProblemLowerBound(Simulator(cost));
  double best = 0;
  for (int i = 0; i < 120; ++i) {
    const bool fits = i % 3 != 0;
    const double t = sim.step_time * (1.6 - i / 240.0);
    if (fits) best = best == 0 ? t : std::min(best, t);
    in.history.push_back({t, fits, best});
  }
  const std::string html = PlacementReportHtml(in);
  // The warnings come first, before the placement.
  EXPECT_LT(html.find("class=\"warnings\""), html.find("<h2>Placement"));
  const nlohmann::json dom = CheckDom("placement", html);
  ExpectReadableCharts(dom);
  std::vector<std::string> top;
  int last = -1;
  for (const nlohmann::json& row : dom.at("rows")) {
    if (row[1].get<int>() != 1) continue;
    top.push_back(row[0].get<std::string>());
    EXPECT_GT(row[2].get<int>(), last) << row.dump();
    last = row[2].get<int>();
  }
  EXPECT_THAT(top, ::testing::IsSupersetOf(
                       {"layers.0", "layers.1", "layers.2", "layers.3"}));
  std::vector<std::string> layers;
  for (const std::string& t : top) {
    if (t.rfind("layers.", 0) == 0) layers.push_back(t);
  }
  EXPECT_THAT(layers, ::testing::ElementsAre("layers.0", "layers.1", "layers.2",
                                             "layers.3"));
}

// A search in which nothing fit says so, and draws no best line.
TEST_F(ReportRenderTest, AllInfeasibleSearchSaysNoFeasiblePlacement) {
  RandomGraphOptions options;
  options.num_ops = 200;
  const Graph graph = MakeRandomLayeredGraph(options);
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const Placement placement = MakeRandomPlacement(graph, cluster, 3);
  const CostModel cost(graph, cluster);
  SimOptions sim_options;
  sim_options.record_timeline = true;
  const SimResult sim = *Simulator(cost).Simulate(placement, sim_options);
  PlacementReportInput in;
  in.graph = &graph;
  in.cluster = &cluster;
  in.placement = &placement;
  in.sim = &sim;
  in.cost = &cost;
  in.method = "search";
  for (int i = 0; i < 50; ++i)
    in.history.push_back({0.002 + i * 1e-5, false, 0});
  const std::string html = PlacementReportHtml(in);
  EXPECT_THAT(html, ::testing::HasSubstr("no feasible placement found"));
  EXPECT_THAT(html, ::testing::HasSubstr("No feasible placement"));
  EXPECT_THAT(html, ::testing::Not(::testing::HasSubstr("best that fits")));
  ExpectReadableCharts(CheckDom("infeasible", html));
}

TEST_F(ReportRenderTest, BenchReportRendersItsPlots) {
  StatusOr<std::string> html = BenchReportHtml(R"({
    "format": "dplace.bench-results", "version": 1, "suite": "t",
    "description": "d", "command": "dplace bench --suite t",
    "started_utc": "2026-01-01T00:00:00Z", "wall_seconds": 1,
    "hardware_threads": 2, "seeds": [1], "tables": [],
    "scale": {"cluster": "k80x4", "rows": [
      {"model": "random:ops=1000", "ops": 1000, "edges": 2000,
       "build_seconds": 0.01, "simulate_seconds": 0.001,
       "simulate_repeats": 3, "rss_bytes": 1e8, "peak_rss_bytes": 1e8,
       "placers": [{"method": "m-etf", "placed": true, "seconds": 0.01}]},
      {"model": "random:ops=100000", "ops": 100000, "edges": 200000,
       "build_seconds": 1, "simulate_seconds": 0.1,
       "simulate_repeats": 3, "rss_bytes": 1e9, "peak_rss_bytes": 1e9,
       "placers": [{"method": "m-etf", "placed": true, "seconds": 2}]}]}})",
                                               "t.json");
  ASSERT_TRUE(html.ok()) << html.status().message();
  const Pixels p = Render("bench", *html);
  ASSERT_TRUE(p.error.empty()) << p.error;
  const int64_t total = int64_t{p.width} * p.height;
  EXPECT_GT(p.non_white, total / 200) << p.non_white << " of " << total;
  EXPECT_GT(p.coloured, 500);  // The plot's lines.
  ExpectReadableCharts(CheckDom("bench", *html));
}

}  // namespace
}  // namespace dplace
