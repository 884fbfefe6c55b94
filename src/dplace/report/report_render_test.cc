// A real browser renders the reports: headless Chromium (Debian package
// `chromium`) screenshots a placement report and a bench report, and the
// PNGs (decoded with libpng) must show the page's charts, not a blank or
// error page.
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
#include <string>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/random_graph.h"
#include "dplace/io/file.h"
#include "dplace/report/html_report.h"

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
    dir_ = ::testing::TempDir() + "dplace_render_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
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
}

}  // namespace
}  // namespace dplace
