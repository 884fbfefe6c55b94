// Self-contained HTML reports (inline SVG and CSS; no script, no network):
//
// - PlacementReportHtml, for `dplace place --report`: the model's warnings
//   first, then the placement by module (the module tree in model order,
//   collapsible, each module's share of compute time and memory on every
//   device), which device every op went to, each device's compute load and
//   peak memory against its capacity, the simulated timeline of one step (a
//   Gantt chart per device slot and link), and a search's learning curve.
// - BenchReportHtml, for `dplace report results.json`: a suite's tables,
//   the learning curves of every search on one plot per benchmark,
//   and the scale study's log-log plot of cost against graph size.
//
// The pages are well-formed XML (XHTML served as HTML), so a strict parser
// checks them. Large graphs are aggregated, not dropped: the Gantt merges
// intervals closer than a pixel, the op map draws at most a few thousand
// cells, so an 80k-op step stays within a few MB.
#ifndef DPLACE_REPORT_HTML_REPORT_H_
#define DPLACE_REPORT_HTML_REPORT_H_

#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/placement.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/status.h"

namespace dplace {

// One point of a learned placer's search (a SampleRecord's fields).
struct ReportSample {
  double step_time = 0;
  bool feasible = false;
  double best_step_time = 0;  // 0 while none feasible.
};

struct PlacementReportInput {
  const Graph* graph = nullptr;
  const Cluster* cluster = nullptr;
  const Placement* placement = nullptr;
  // Of `placement`, with its timeline recorded (SimOptions).
  const SimResult* sim = nullptr;
  // Op times for the module tree; null: the tree shows no times.
  const CostModel* cost = nullptr;
  // What the model's import warned of, shown at the top of the page.
  std::vector<std::string> warnings;
  std::string method;
  std::string command;         // How it was made, shown on the page.
  double wall_seconds = 0;     // Placing or searching.
  StepLowerBound lower_bound;  // The problem's (seconds 0: not shown).
  // A learned placer's samples, in order; empty for classical placers.
  std::vector<ReportSample> history;
  // Maximum Gantt rectangles per lane; intervals closer than
  // step_time / max_rects_per_lane are merged. Default: 1200.
  int max_rects_per_lane = 1200;
};

// REQUIRES: graph, cluster, placement and sim set and consistent.
std::string PlacementReportHtml(const PlacementReportInput& input);

// Renders a "dplace.bench-results" document (bench.h). Errors name `source`
// and what is missing or of the wrong type.
StatusOr<std::string> BenchReportHtml(const std::string& results_json,
                                      const std::string& source);

}  // namespace dplace

#endif  // DPLACE_REPORT_HTML_REPORT_H_
