#include "dplace/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "dplace/report/module_tree.h"
#include "dplace/report/svg.h"
#include "dplace/util/format.h"
#include "dplace/util/median.h"

namespace dplace {
namespace {

using report::Bar;
using report::BarChartOptions;
using report::DeviceColour;
using report::Escape;
using report::FormatSeconds;
using report::NiceTicks;
using report::Number;
using report::PlotOptions;
using report::ReferenceLine;
using report::Series;
using report::SeriesColour;
using report::TimeUnit;
using report::TimeUnitFor;
using report::Title;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string PageStart(const std::string& title) {
  return "<!DOCTYPE html>\n"
         "<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
         "<meta charset=\"utf-8\"/>\n<title>" +
         Escape(title) +
         "</title>\n<style>\n"
         "body { font-family: sans-serif; margin: 24px; color: #222; "
         "max-width: 1160px; }\n"
         "h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; "
         "border-bottom: 1px solid #ddd; }\n"
         "h3 { font-size: 15px; }\n"
         "table { border-collapse: collapse; margin: 8px 0 16px 0; "
         "font-size: 13px; }\n"
         "td, th { border: 1px solid #ccc; padding: 3px 8px; "
         "white-space: nowrap; }\n"
         "td.n { text-align: right; font-variant-numeric: tabular-nums; }\n"
         "th { background: #f3f3f3; }\n"
         ".note { color: #555; font-size: 13px; }\n"
         "code { background: #f4f4f4; padding: 1px 3px; }\n"
         "svg { display: block; margin: 6px 0 12px 0; }\n"
         ".swatch { display: inline-block; width: 12px; height: 12px; "
         "margin: 0 4px 0 12px; vertical-align: middle; }\n"
         ".warnings { border: 1px solid #e6ab02; background: #fff8e1; "
         "padding: 4px 12px; font-size: 13px; }\n"
         // Module rows line up whatever their depth: the name indents
         // inside its fixed-width cell, after a fold marker of its own.
         ".modules { font-size: 12px; }\n"
         ".modules summary { list-style: none; cursor: pointer; }\n"
         ".modules summary::-webkit-details-marker { display: none; }\n"
         ".module-row, .module-head { display: inline-flex; "
         "align-items: center; }\n"
         ".module-head { font-weight: bold; }\n"
         ".module-head .name { padding-left: 14px; }\n"
         ".module-head .bar { display: inline-block; width: 158px; }\n"
         ".module-row .name, .module-head .name { display: inline-block; "
         "box-sizing: border-box; width: 300px; overflow: hidden; "
         "text-overflow: ellipsis; white-space: nowrap; }\n"
         ".module-row .name::before { display: inline-block; width: 14px; "
         "content: ''; }\n"
         "details[open] > summary .name::before { content: '\\25BE'; }\n"
         "details:not([open]) > summary .name::before { "
         "content: '\\25B8'; }\n"
         ".module-row .num, .module-head .num { display: inline-block; "
         "width: 104px; text-align: right; margin-right: 8px; "
         "font-variant-numeric: tabular-nums; }\n"
         ".module-row svg { display: inline; margin: 0 8px 0 0; }\n"
         "</style>\n</head>\n<body>\n";
}

const char* kPageEnd = "</body>\n</html>\n";

std::string Cell(const std::string& text, bool numeric = false) {
  return std::string(numeric ? "<td class=\"n\">" : "<td>") + Escape(text) +
         "</td>";
}

// Colour of each device: CPUs grey, GPUs by their index among GPUs.
std::vector<std::string> DeviceColours(const Cluster& cluster) {
  std::vector<std::string> colours;
  int gpu = 0;
  for (const Device& d : cluster.devices()) {
    const bool cpu = d.kind == DeviceKind::kCpu;
    colours.push_back(DeviceColour(cpu ? 0 : gpu++, cpu));
  }
  return colours;
}

std::string DeviceLegend(const Cluster& cluster,
                         const std::vector<std::string>& colours) {
  std::string out = "<p class=\"note\">Devices:";
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    out += "<span class=\"swatch\" style=\"background:" + colours[d] +
           "\"></span>" + Escape(cluster.device(d).name);
  }
  return out + "</p>\n";
}

// The op map: ops of each phase in id (topological) order, one cell per
// run of consecutive ops, coloured by the device most of them run on.
std::string OpMap(const Graph& graph, const Cluster& cluster,
                  const Placement& placement,
                  const std::vector<std::string>& colours) {
  std::vector<std::string> names;
  for (const Device& d : cluster.devices()) names.push_back(d.name);
  const int columns = 120, cell = 8, max_cells = 2400;
  std::string out;
  for (Phase phase : {Phase::kForward, Phase::kBackward, Phase::kUpdate}) {
    std::vector<OpId> ops;
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      if (graph.phase(op) == phase) ops.push_back(op);
    }
    if (ops.empty()) continue;
    const size_t per_cell = (ops.size() + max_cells - 1) / max_cells;
    const int cells = static_cast<int>((ops.size() + per_cell - 1) / per_cell);
    const int rows = (cells + columns - 1) / columns;
    const int width = columns * cell + 2, height = rows * cell + 20;
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
           std::to_string(width) + "\" height=\"" + std::to_string(height) +
           "\" class=\"opmap\"><text x=\"0\" y=\"12\" font-size=\"12\">" +
           Escape(std::string(PhaseName(phase))) +
           " ops: " + std::to_string(ops.size()) +
           (per_cell > 1 ? " (" + std::to_string(per_cell) + " per cell)"
                         : std::string("")) +
           "</text>";
    for (int c = 0; c < cells; ++c) {
      std::map<DeviceId, int> count;
      for (size_t i = c * per_cell;
           i < std::min(ops.size(), (c + 1) * per_cell); ++i) {
        ++count[placement[ops[i]]];
      }
      DeviceId best = count.begin()->first;
      for (const auto& [d, n] : count) {
        if (n > count[best]) best = d;
      }
      const size_t first = c * per_cell;
      const size_t last = std::min(ops.size(), (c + 1) * per_cell) - 1;
      out +=
          "<rect x=\"" + std::to_string(1 + (c % columns) * cell) + "\" y=\"" +
          std::to_string(18 + (c / columns) * cell) + "\" width=\"" +
          std::to_string(cell - 1) + "\" height=\"" + std::to_string(cell - 1) +
          "\" fill=\"" + colours[best] + "\">" +
          Title(first == last ? graph.op_name(ops[first]) + " on " + names[best]
                              : graph.op_name(ops[first]) + " .. " +
                                    graph.op_name(ops[last]) + ": mostly on " +
                                    names[best]) +
          "</rect>";
    }
    out += "</svg>\n";
  }
  return out;
}

// A bar of a module's shares on each device (of its compute time or its
// memory), each part titled with the device, its share and its amount.
std::string ShareBar(const Cluster& cluster,
                     const std::vector<std::string>& colours,
                     const std::vector<double>& amounts, double total,
                     const std::string& what, std::string (*format)(double)) {
  const int width = 150, height = 12;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(width) + "\" height=\"" +
                    std::to_string(height) + "\" class=\"share\">";
  out += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(width) +
         "\" height=\"" + std::to_string(height) + "\" fill=\"#f1f1f1\"/>";
  double x = 0;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    if (amounts[d] <= 0 || total <= 0) continue;
    const double w = width * amounts[d] / total;
    out += "<rect x=\"" + Format("%.1f", x) + "\" y=\"0\" width=\"" +
           Format("%.1f", std::max(w, 0.5)) + "\" height=\"" +
           std::to_string(height) + "\" fill=\"" + colours[d] + "\">" +
           Title(cluster.device(d).name + ": " +
                 Format("%.0f%%", 100 * amounts[d] / total) + " of the " +
                 what + " (" + format(amounts[d]) + ")") +
           "</rect>";
    x += w;
  }
  return out + "</svg>";
}

std::string SecondsText(double seconds) { return FormatSeconds(seconds); }
std::string BytesText(double bytes) { return FormatBytesScaled(bytes); }

// One module's row: name, ops, compute time, memory, and its shares of
// time and memory on each device. data-position is its first forward op's
// place in topological order (model order).
std::string ModuleRowHtml(const Cluster& cluster,
                          const std::vector<std::string>& colours,
                          const ModuleRow& row) {
  std::vector<double> bytes(row.device_bytes.begin(), row.device_bytes.end());
  return "<span class=\"module-row\" data-path=\"" + Escape(row.path) +
         "\" data-depth=\"" + std::to_string(row.depth) +
         "\" data-position=\"" + std::to_string(row.first_position) +
         "\"><span class=\"name\" style=\"padding-left: " +
         std::to_string(16 * (row.depth - 1)) + "px\" title=\"" +
         Escape(row.path) + "\">" + Escape(row.path) +
         "</span><span class=\"num\">" + std::to_string(row.ops) +
         " ops</span><span class=\"num\">" +
         Escape(FormatSeconds(row.compute_seconds)) +
         "</span><span class=\"num\">" +
         Escape(FormatBytesScaled(static_cast<double>(row.memory_bytes))) +
         "</span>" +
         ShareBar(cluster, colours, row.device_seconds, row.compute_seconds,
                  "module's compute time", SecondsText) +
         ShareBar(cluster, colours, bytes,
                  static_cast<double>(row.memory_bytes), "module's memory",
                  BytesText) +
         "</span>";
}

// The module tree in model order: a collapsible <details> per module with
// children (the top level open), a plain row per leaf. Deep trees of large
// graphs are cut to the depth that keeps at most kMaxRows rows.
std::string ModuleSection(const Graph& graph, const Cluster& cluster,
                          const Placement& placement, const CostModel* cost,
                          const std::vector<std::string>& colours) {
  constexpr size_t kMaxRows = 150;
  std::vector<ModuleRow> rows;
  int depth = 4;
  for (; depth > 1; --depth) {
    rows = ModuleRows(graph, placement, cost, depth, cluster.num_devices());
    if (rows.size() <= kMaxRows) break;
  }
  if (depth == 1) {
    rows = ModuleRows(graph, placement, cost, 1, cluster.num_devices());
  }
  // Even the top level too long: its first modules, in model order.
  const size_t cut = rows.size() > kMaxRows ? rows.size() - kMaxRows : 0;
  rows.resize(std::min(rows.size(), kMaxRows));
  std::vector<std::vector<size_t>> children(rows.size());
  std::vector<size_t> top;
  for (size_t r = 0; r < rows.size(); ++r) {
    (rows[r].parent < 0 ? top : children[rows[r].parent]).push_back(r);
  }
  std::function<std::string(size_t)> render = [&](size_t r) {
    const std::string line = ModuleRowHtml(cluster, colours, rows[r]);
    if (children[r].empty()) return "<div class=\"leaf\">" + line + "</div>";
    std::string out = std::string("<details") +
                      (rows[r].depth == 1 ? " open=\"open\"" : "") +
                      "><summary>" + line + "</summary>";
    for (size_t k : children[r]) out += render(k);
    return out + "</details>";
  };
  std::string out =
      "<p class=\"note\">Modules in model order (the order of their first "
      "forward op), down to depth " +
      std::to_string(depth) +
      "; each counts its own ops and its descendants' (forward, backward "
      "and update). Bytes held: its weights, optimizer slots, scratch and "
      "outputs, summed over the step (not a peak). The bars split the "
      "module's compute time (left) and bytes held (right) over the "
      "devices; hover for figures. Click a module to fold it.</p>\n"
      "<div class=\"modules\"><div class=\"leaf\"><span "
      "class=\"module-head\"><span class=\"name\">module</span><span "
      "class=\"num\">ops</span><span class=\"num\">compute</span><span "
      "class=\"num\">bytes held</span><span class=\"bar\">share of "
      "compute time</span><span class=\"bar\">share of bytes held</span></span>"
      "</div>";
  for (size_t r : top) out += render(r);
  out += "</div>\n";
  if (cut > 0) {
    out += "<p class=\"note\">" + std::to_string(cut) +
           " more modules not shown.</p>\n";
  }
  return out;
}

const char* PhaseColour(Phase phase) {
  switch (phase) {
    case Phase::kForward:
      return "#5e3c99";
    case Phase::kBackward:
      return "#b2abd2";
    case Phase::kUpdate:
      return "#e6ab02";
  }
  return "#888";
}

// A Gantt chart of the step: a lane per device slot with work and per link
// with traffic; intervals closer than step/max_rects are merged and take
// the colour of the phase that ran longest in them.
std::string Gantt(const Graph& graph, const Cluster& cluster,
                  const SimResult& sim, const std::vector<std::string>& colours,
                  int max_rects) {
  struct Lane {
    std::string label;
    std::string colour;
    bool transfer = false;
    std::vector<const TimelineEvent*> events;
  };
  std::map<std::pair<int64_t, int>, Lane> lanes;  // (order key, lane).
  for (const TimelineEvent& e : sim.timeline) {
    const bool transfer = e.kind == TimelineEvent::Kind::kTransfer;
    const int64_t key = transfer ? 1'000'000 + e.lane : e.device;
    Lane& lane = lanes[{key, transfer ? 0 : e.lane}];
    if (lane.label.empty()) {
      if (transfer) {
        const Link& link = cluster.link(e.lane);
        lane.label = cluster.device(link.from).name + "->" +
                     cluster.device(link.to).name;
        lane.colour = "#999";
      } else {
        lane.label = cluster.device(e.device).name +
                     (cluster.device(e.device).compute_slots > 1
                          ? " #" + std::to_string(e.lane)
                          : std::string(""));
        lane.colour = colours[e.device];
      }
      lane.transfer = transfer;
    }
    lane.events.push_back(&e);
  }
  const double step = sim.step_time > 0 ? sim.step_time : 1;
  const int label = 150, width = 940, row = 16, top = 20;
  const int height = top + row * static_cast<int>(lanes.size()) + 48;
  auto px = [&](double t) { return label + t / step * width; };
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(label + width + 40) + "\" height=\"" +
                    std::to_string(height) + "\" class=\"chart gantt\">";
  out += "<g font-size=\"11\">";
  int i = 0;
  size_t rects = 0;
  const double merge = step / std::max(1, max_rects);
  for (auto& [key, lane] : lanes) {
    const int y = top + row * i++;
    out += "<rect x=\"2\" y=\"" + std::to_string(y + 2) +
           "\" width=\"10\" height=\"10\" fill=\"" + lane.colour + "\">" +
           Title(lane.label) + "</rect>";
    out += "<text x=\"16\" y=\"" + std::to_string(y + 11) + "\">" +
           Escape(lane.label) + "</text>";
    std::sort(lane.events.begin(), lane.events.end(),
              [](const TimelineEvent* a, const TimelineEvent* b) {
                return a->start < b->start;
              });
    size_t j = 0;
    while (j < lane.events.size()) {
      double start = lane.events[j]->start, end = lane.events[j]->end;
      double by_phase[3] = {0, 0, 0};
      const size_t first = j;
      for (; j < lane.events.size() && lane.events[j]->start - end < merge;
           ++j) {
        const TimelineEvent& e = *lane.events[j];
        end = std::max(end, e.end);
        if (!lane.transfer) {
          by_phase[static_cast<int>(graph.phase(e.id))] += e.end - e.start;
        }
      }
      const int major =
          static_cast<int>(std::max_element(by_phase, by_phase + 3) - by_phase);
      const char* fill =
          lane.transfer ? "#8c8c8c" : PhaseColour(static_cast<Phase>(major));
      const std::string what =
          j - first == 1
              ? (lane.transfer ? std::string("transfer")
                               : graph.op_name(lane.events[first]->id) + " (" +
                                     std::string(PhaseName(
                                         graph.phase(lane.events[first]->id))) +
                                     ")")
              : std::to_string(j - first) +
                    (lane.transfer
                         ? " transfers"
                         : " ops, mostly " + std::string(PhaseName(
                                                 static_cast<Phase>(major))));
      out +=
          "<rect x=\"" + Format("%.1f", px(start)) + "\" y=\"" +
          std::to_string(y + 1) + "\" width=\"" +
          Format("%.2f", std::max(0.5, px(end) - px(start))) + "\" height=\"" +
          std::to_string(row - 3) + "\" fill=\"" + fill + "\">" +
          Title(what + ", " + FormatSeconds(start) + "-" + FormatSeconds(end)) +
          "</rect>";
      ++rects;
    }
  }
  // Time axis.
  const int axis_y = top + row * static_cast<int>(lanes.size()) + 4;
  out += "<line x1=\"" + std::to_string(label) + "\" y1=\"" +
         std::to_string(axis_y) + "\" x2=\"" + std::to_string(label + width) +
         "\" y2=\"" + std::to_string(axis_y) + "\" stroke=\"#555\"/>";
  // Round ticks in the unit that suits the step, within it.
  const TimeUnit unit = TimeUnitFor(step);
  for (double t : NiceTicks(0, step * unit.per_second, 8)) {
    const double x = px(t / unit.per_second);
    out += "<line x1=\"" + Format("%.1f", x) + "\" y1=\"" +
           std::to_string(axis_y) + "\" x2=\"" + Format("%.1f", x) +
           "\" y2=\"" + std::to_string(axis_y + 4) + "\" stroke=\"#555\"/>";
    out += "<text x=\"" + Format("%.1f", x) + "\" y=\"" +
           std::to_string(axis_y + 16) + "\" text-anchor=\"middle\">" +
           Number(t, "%.4g") + "</text>";
  }
  out += "<text class=\"axis-label\" x=\"" + std::to_string(label + width / 2) +
         "\" y=\"" + std::to_string(axis_y + 34) +
         "\" text-anchor=\"middle\">time in the step (" + unit.name +
         ")</text>";
  // Legend: what the bars' colours mean (lanes carry the device colour).
  double lx = label;
  for (const auto& [name, colour] :
       std::vector<std::pair<const char*, const char*>>{
           {"forward ops", PhaseColour(Phase::kForward)},
           {"backward ops", PhaseColour(Phase::kBackward)},
           {"update ops", PhaseColour(Phase::kUpdate)},
           {"transfers", "#8c8c8c"}}) {
    out += "<rect x=\"" + Format("%.0f", lx) +
           "\" y=\"3\" width=\"10\" height=\"10\" fill=\"" + colour + "\"/>";
    out += "<text x=\"" + Format("%.0f", lx + 14) + "\" y=\"12\">" + name +
           "</text>";
    lx += 110;
  }
  out += "</g></svg>\n";
  out += "<p class=\"note\">" + std::to_string(sim.timeline.size()) +
         " intervals drawn as " + std::to_string(rects) +
         " bars (intervals less than " + Number(merge * 1e3, "%.2g") +
         " ms apart merged).</p>\n";
  return out;
}

// The search's samples and best-so-far line, in the time unit that suits
// them. Out-of-memory samples are crosses, at 4x the best when one fit
// (clipped there), at their step times when none did.
std::string LearningCurvePlot(const std::vector<ReportSample>& history,
                              double lower_bound) {
  double final_best = 0, largest = 0;
  for (const ReportSample& s : history) {
    if (s.best_step_time > 0) final_best = s.best_step_time;
    largest = std::max(largest, s.step_time);
  }
  const double clip = final_best > 0 ? 4 * final_best : 0;
  const TimeUnit unit = TimeUnitFor(clip > 0 ? clip : largest);
  Series sampled{"sampled (fits)", "#3182bd"};
  sampled.line = false;
  sampled.points = true;
  Series oom{"sampled (out of memory)", "#222222"};
  oom.line = false;
  oom.points = true;
  oom.crosses = true;
  Series best{"best that fits so far", "#e6550d"};
  best.width = 2.5;
  for (size_t i = 0; i < history.size(); ++i) {
    const ReportSample& s = history[i];
    const double x = static_cast<double>(i + 1);
    if (s.feasible) {
      sampled.x.push_back(x);
      sampled.y.push_back(s.step_time * unit.per_second);
    } else {
      oom.x.push_back(x);
      oom.y.push_back((clip > 0 ? clip : s.step_time) * unit.per_second);
    }
    best.x.push_back(x);
    best.y.push_back(s.best_step_time > 0 ? s.best_step_time * unit.per_second
                                          : kNaN);
  }
  PlotOptions o;
  o.title = final_best > 0 ? "Learning curve"
                           : "Learning curve: no feasible placement found";
  o.x_label = "samples (placements evaluated)";
  o.y_label = std::string("step time (") + unit.name + ")";
  o.y_max = clip * unit.per_second;
  std::vector<ReferenceLine> refs;
  if (lower_bound > 0 && std::isfinite(lower_bound)) {
    refs.push_back({"lower bound " + FormatSeconds(lower_bound),
                    lower_bound * unit.per_second, "#444", true});
  }
  std::vector<Series> series = {sampled, oom};
  if (final_best > 0) series.push_back(best);
  return report::Plot(series, refs, o);
}

// What the learning curve shows, in words.
std::string LearningCurveNote(const std::vector<ReportSample>& history) {
  int feasible = 0;
  for (const ReportSample& s : history) feasible += s.feasible;
  if (feasible == 0) {
    return "No feasible placement: every one of the " +
           std::to_string(history.size()) +
           " sampled placements ran out of memory (black crosses, at their "
           "simulated step times).";
  }
  return "Each dot is one sampled placement's simulated step time; black "
         "crosses ran out of memory (drawn at 4x the best, where the axis "
         "is clipped); the orange line is the best placement that fits so "
         "far.";
}

}  // namespace

std::string PlacementReportHtml(const PlacementReportInput& in) {
  const Graph& graph = *in.graph;
  const Cluster& cluster = *in.cluster;
  const SimResult& sim = *in.sim;
  const std::vector<std::string> colours = DeviceColours(cluster);
  std::string html = PageStart("dplace: " + graph.name() + " on " +
                               cluster.name() + " by " + in.method);
  html += "<h1>" + Escape(graph.name()) + " on " + Escape(cluster.name()) +
          ", placed by " + Escape(in.method) + "</h1>\n";
  if (!in.warnings.empty()) {
    html +=
        "<div class=\"warnings\"><p><strong>Warnings: the graph may not "
        "be the model's training step.</strong></p><ul>";
    for (const std::string& w : in.warnings) {
      html += "<li>" + Escape(w) + "</li>";
    }
    html += "</ul></div>\n";
  }
  if (!in.command.empty()) {
    html += "<p class=\"note\">Made by <code>" + Escape(in.command) +
            "</code>. Every figure is dplace's simulation of one training "
            "step.</p>\n";
  }
  html += "<table>";
  html += "<tr><th>graph</th>" +
          Cell(graph.name() + ", " + std::to_string(graph.num_ops()) +
               " ops, hash " + graph.hash()) +
          "</tr>";
  html += "<tr><th>cluster</th>" +
          Cell(cluster.name() + ", " + std::to_string(cluster.num_devices()) +
               " devices") +
          "</tr>";
  html += "<tr><th>step time</th>" +
          Cell(Format("%.6f s", sim.step_time) +
               (sim.feasible
                    ? ", feasible"
                    : ", infeasible: " + DescribeInfeasibility(cluster, sim))) +
          "</tr>";
  if (in.lower_bound.seconds > 0) {
    html += "<tr><th>lower bound</th>" +
            Cell(DescribeLowerBound(in.lower_bound) + "; step time is " +
                 Format("%.3f", sim.step_time / in.lower_bound.seconds) +
                 "x the bound") +
            "</tr>";
  }
  html += "<tr><th>" +
          std::string(in.history.empty() ? "time to place" : "search") +
          "</th>" +
          Cell(Format("%.3f s", in.wall_seconds) +
               (in.history.empty()
                    ? std::string("")
                    : ", " + std::to_string(in.history.size()) + " samples")) +
          "</tr></table>\n";

  html += "<h2>Placement</h2>\n" + DeviceLegend(cluster, colours);
  html += "<h3>By module</h3>\n" +
          ModuleSection(graph, cluster, *in.placement, in.cost, colours);
  html += "<h3>Ops in topological order</h3>\n" +
          OpMap(graph, cluster, *in.placement, colours);

  html += "<h2>Devices</h2>\n";
  std::vector<Bar> load, memory;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const Device& dev = cluster.device(d);
    const double share =
        sim.step_time > 0
            ? sim.device_busy_seconds[d] / dev.compute_slots / sim.step_time
            : 0;
    load.push_back({dev.name, 100 * share, 0, colours[d],
                    Format("%.1f%%", 100 * share) + " (" +
                        FormatSeconds(sim.device_busy_seconds[d]) + ", " +
                        std::to_string(sim.device_op_count[d]) + " ops)"});
    memory.push_back({dev.name, static_cast<double>(sim.device_peak_bytes[d]),
                      static_cast<double>(dev.memory_bytes), colours[d],
                      FormatBytesScaled(sim.device_peak_bytes[d]) + " / " +
                          FormatBytesScaled(dev.memory_bytes)});
  }
  BarChartOptions load_options;
  load_options.title = "Compute load: busy time over the step (per slot)";
  load_options.axis_label = "busy (% of the step)";
  load_options.max = 100;
  html += report::BarChart(load, load_options);
  BarChartOptions memory_options;
  memory_options.title =
      "Peak memory against capacity (black line; red: out of memory)";
  memory_options.axis_label = "peak memory (bytes; capacity marked)";
  html += report::BarChart(memory, memory_options);

  html += "<h2>Timeline of one step</h2>\n";
  if (sim.timeline.empty()) {
    html += "<p class=\"note\">No timeline was recorded.</p>\n";
  } else {
    html += Gantt(graph, cluster, sim, colours, in.max_rects_per_lane);
  }
  if (!in.history.empty()) {
    html += "<h2>Search</h2>\n" +
            LearningCurvePlot(in.history, in.lower_bound.seconds) +
            "<p class=\"note\">" + Escape(LearningCurveNote(in.history)) +
            "</p>\n";
  }
  return html + kPageEnd;
}

namespace {

using nlohmann::json;

double NumberOr(const json& j, const char* key, double fallback = kNaN) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string StepCell(const json& method) {
  const json& t = method.at("step_time");
  if (t.at("count").get<int>() == 0) {
    for (const json& r : method.at("runs")) {
      if (r.at("placed").get<bool>()) return "OOM";
    }
    return "-";
  }
  std::string cell = Format("%.4f", t.at("median").get<double>());
  if (method.at("runs").size() > 1) {
    cell += " (" + Format("%.4f", t.at("min").get<double>()) + "–" +
            Format("%.4f", t.at("max").get<double>()) + ")";
  }
  return cell;
}

// A method's column: its label (one method may run with several settings
// in a table), or its name in files from before labels.
std::string MethodLabel(const json& method) {
  return method.contains("label") ? method.at("label").get<std::string>()
                                  : method.at("method").get<std::string>();
}

std::string PaperTableHtml(const json& table) {
  std::vector<std::string> methods;
  for (const json& b : table.at("benchmarks")) {
    for (const json& m : b.at("methods")) {
      const std::string name = MethodLabel(m);
      if (std::find(methods.begin(), methods.end(), name) == methods.end()) {
        methods.push_back(name);
      }
    }
  }
  std::string out = "<table><tr><th>benchmark</th><th>GPUs</th>";
  for (const std::string& m : methods) out += "<th>" + Escape(m) + "</th>";
  out += "<th>lower bound</th></tr>\n";
  for (const json& b : table.at("benchmarks")) {
    out += "<tr>" + Cell(b.at("name").get<std::string>()) +
           Cell(std::to_string(b.at("gpus").get<int>()), true);
    const std::string best = b.at("best_baseline").is_string()
                                 ? b.at("best_baseline").get<std::string>()
                                 : "";
    for (const std::string& name : methods) {
      const json* m = nullptr;
      for (const json& x : b.at("methods")) {
        if (MethodLabel(x) == name) m = &x;
      }
      std::string cell = m ? StepCell(*m) : "";
      // A no-break space keeps the mark with its number.
      if (m && name == best) cell += "\u00a0*";
      out += Cell(cell, true);
    }
    out += Cell(Format("%.4f", b.at("lower_bound").get<double>()), true) +
           "</tr>\n";
  }
  return out +
         "</table>\n<p class=\"note\">Step time (s) of the best "
         "placement: median over seeds (min–max); * marks the best "
         "classical baseline.</p>\n";
}

// Whether a method of a results file searched (its runs carry samples and
// curves); files written before "searched" say "learned".
bool Searched(const json& method) {
  return method.value("searched", method.at("learned").get<bool>());
}

// Median samples the runs of a method that searched.
std::string SamplesRun(const json& method) {
  std::vector<double> samples;
  for (const json& r : method.at("runs")) {
    samples.push_back(r.value("samples", 0.0));
  }
  if (samples.empty()) return "-";
  return Format("%.0f", Median(std::move(samples)));
}

std::string DetailTableHtml(const json& b) {
  std::string out =
      "<table><tr><th>method</th><th>runs</th><th>step time (s)</th><th>"
      "reduction vs best baseline</th><th>vs lower bound</th><th>samples to "
      "best</th>"
      "<th>wall time to best (s)</th><th>wall time (s)</th></tr>\n";
  for (const json& m : b.at("methods")) {
    const bool searched = Searched(m);
    const double reduction = NumberOr(m, "reduction_vs_best_baseline");
    const double vs_bound = NumberOr(m, "vs_lower_bound");
    std::string samples = "-", seconds = "-";
    if (searched && m.at("samples_to_best").at("count").get<int>() > 0) {
      samples =
          Format("%.0f", m.at("samples_to_best").at("median").get<double>()) +
          " / " + SamplesRun(m);
      seconds =
          Number(m.at("seconds_to_best").at("median").get<double>(), "%.3g");
    }
    const json& wall = m.at("wall_seconds");
    out +=
        "<tr>" + Cell(MethodLabel(m)) +
        Cell(std::to_string(m.at("runs").size()), true) +
        Cell(StepCell(m), true) +
        Cell(!std::isfinite(reduction)    ? "-"
             : std::abs(reduction) < 5e-4 ? "0.0%"
                                          : Format("%+.1f%%", 100 * reduction),
             true) +
        Cell(std::isfinite(vs_bound) ? Format("%.2fx", vs_bound) : "-", true) +
        Cell(samples, true) + Cell(seconds, true) +
        // Three significant digits: a one-shot placer's milliseconds are
        // not 0.000.
        Cell(wall.at("count").get<int>()
                 ? Number(wall.at("median").get<double>(), "%.3g")
                 : "-",
             true) +
        "</tr>\n";
  }
  return out + "</table>\n";
}

// Best-so-far curves of every search (learned agents, mcmc) and seed on
// one plot.
std::string BenchmarkCurves(const json& b) {
  std::vector<Series> series;
  int colour = 0;
  for (const json& m : b.at("methods")) {
    if (!Searched(m)) continue;
    bool first = true;
    for (const json& r : m.at("runs")) {
      if (!r.contains("curve")) continue;
      const json& c = r.at("curve");
      Series s{MethodLabel(m), SeriesColour(colour)};
      s.in_legend = first;
      first = false;
      for (size_t i = 0; i < c.at("samples").size(); ++i) {
        s.x.push_back(c.at("samples")[i].get<double>());
        const json& y = c.at("best_step_time")[i];
        s.y.push_back(y.is_number() ? y.get<double>() : kNaN);
      }
      series.push_back(std::move(s));
    }
    ++colour;
  }
  if (series.empty()) return "";
  std::vector<ReferenceLine> refs;
  if (b.at("best_baseline").is_string()) {
    refs.push_back(
        {"best baseline (" + b.at("best_baseline").get<std::string>() + ") " +
             Format("%.4g s", b.at("best_baseline_step_time").get<double>()),
         b.at("best_baseline_step_time").get<double>(), "#333", false});
  }
  const double bound = b.at("lower_bound").get<double>();
  refs.push_back(
      {"lower bound " + Format("%.4g s", bound), bound, "#777", true});
  PlotOptions o;
  o.title = "Best step time so far, every search and seed";
  o.x_label = "samples (placements evaluated)";
  o.y_label = "best step time (s)";
  o.y_min_zero = true;
  return report::Plot(series, refs, o);
}

std::string ScaleSection(const json& scale) {
  const json& rows = scale.at("rows");
  std::vector<Series> series;
  Series sim{"simulate one step", SeriesColour(0)};
  sim.points = true;
  sim.width = 2.5;
  std::map<std::string, size_t> index;
  for (const json& row : rows) {
    const double ops = row.at("ops").get<double>();
    sim.x.push_back(ops);
    sim.y.push_back(row.at("simulate_seconds").get<double>());
    for (const json& p : row.at("placers")) {
      const std::string name = p.at("method").get<std::string>();
      if (!index.count(name)) {
        index[name] = series.size();
        Series s{name, SeriesColour(static_cast<int>(series.size()) + 1)};
        s.points = true;
        series.push_back(s);
      }
      Series& s = series[index[name]];
      s.x.push_back(ops);
      s.y.push_back(p.at("placed").get<bool>() ? p.at("seconds").get<double>()
                                               : kNaN);
    }
  }
  series.insert(series.begin(), sim);
  PlotOptions o;
  o.title = "Cost against graph size (log-log)";
  o.x_label = "graph size (ops)";
  o.y_label = "wall time (s)";
  o.log_x = o.log_y = true;
  o.height = 420;
  std::string out = "<h2>Scale</h2>\n<p class=\"note\">On " +
                    Escape(scale.at("cluster").get<std::string>()) +
                    ": simulating one step of a round-robin placement "
                    "(median of repeats) and each placer's wall time.</p>\n" +
                    report::Plot(series, {}, o);
  std::vector<std::string> methods;
  for (const json& row : rows) {
    for (const json& p : row.at("placers")) {
      const std::string name = p.at("method").get<std::string>();
      if (std::find(methods.begin(), methods.end(), name) == methods.end()) {
        methods.push_back(name);
      }
    }
  }
  out += "<table><tr><th>model</th><th>ops</th><th>simulate (ms)</th>";
  for (const std::string& m : methods) out += "<th>" + Escape(m) + " (s)</th>";
  out += "<th>RSS</th><th>peak RSS</th></tr>\n";
  for (const json& row : rows) {
    out += "<tr>" + Cell(row.at("model").get<std::string>()) +
           Cell(std::to_string(row.at("ops").get<int64_t>()), true) +
           Cell(Format("%.2f", 1e3 * row.at("simulate_seconds").get<double>()),
                true);
    for (const std::string& m : methods) {
      std::string cell = "-";
      for (const json& p : row.at("placers")) {
        if (p.at("method").get<std::string>() != m) continue;
        cell = Number(p.at("seconds").get<double>(), "%.3g") +
               (p.at("placed").get<bool>() ? "" : " (refused)");
      }
      out += Cell(cell, true);
    }
    out +=
        Cell(FormatBytesScaled(row.at("rss_bytes").get<double>()), true) +
        Cell(FormatBytesScaled(row.at("peak_rss_bytes").get<double>()), true) +
        "</tr>\n";
  }
  return out + "</table>\n";
}

std::string RenderBench(const json& doc) {
  if (doc.at("format").get<std::string>() != "dplace.bench-results") {
    throw std::runtime_error("format: expected \"dplace.bench-results\"");
  }
  const std::string suite = doc.at("suite").get<std::string>();
  std::string html = PageStart("dplace bench: " + suite);
  html += "<h1>dplace bench: suite " + Escape(suite) + "</h1>\n";
  html += "<p class=\"note\">" + Escape(doc.value("description", "")) +
          "</p>\n<p class=\"note\">Made by <code>" +
          Escape(doc.at("command").get<std::string>()) + "</code>, started " +
          Escape(doc.at("started_utc").get<std::string>()) + ", " +
          Format("%.0f s", doc.at("wall_seconds").get<double>()) + " on " +
          std::to_string(doc.at("hardware_threads").get<int>()) +
          " hardware threads.</p>\n";
  for (const json& table : doc.at("tables")) {
    html += "<h2>" + Escape(table.at("title").get<std::string>()) + "</h2>\n";
    if (!table.value("source", "").empty()) {
      html +=
          "<p class=\"note\">" + Escape(table.value("source", "")) + "</p>\n";
    }
    html += PaperTableHtml(table);
    for (const json& b : table.at("benchmarks")) {
      html += "<h3>" + Escape(b.at("name").get<std::string>()) + "</h3>\n" +
              "<p class=\"note\"><code>" +
              Escape(b.at("model").get<std::string>()) + "</code> on <code>" +
              Escape(b.at("cluster").get<std::string>()) + "</code>, " +
              std::to_string(b.at("graph").at("ops").get<int>()) +
              " ops.</p>\n" + DetailTableHtml(b) + BenchmarkCurves(b);
    }
  }
  if (doc.contains("scale")) html += ScaleSection(doc.at("scale"));
  return html + kPageEnd;
}

}  // namespace

StatusOr<std::string> BenchReportHtml(const std::string& results_json,
                                      const std::string& source) {
  try {
    return RenderBench(json::parse(results_json));
  } catch (const std::exception& e) {
    std::string what = e.what();
    const size_t pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    return InvalidArgumentError(
        source + ": not a dplace.bench-results document: " + what);
  }
}

}  // namespace dplace
