#include "dplace/cli/commands/place_output.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "dplace/cli/cli.h"
#include "dplace/graph/parameters.h"
#include "dplace/method/method.h"
#include "dplace/method/run.h"
#include "dplace/report/markdown.h"
#include "dplace/report/svg.h"
#include "dplace/report/what_next.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

using nlohmann::ordered_json;

// A finite number, or null (JSON has no infinity).
ordered_json NumberOrNull(double value) {
  return std::isfinite(value) ? ordered_json(value) : ordered_json(nullptr);
}

// The fastest feasible run, or null.
const MethodRun* BestRun(const std::vector<MethodRun>& runs) {
  const MethodRun* best = nullptr;
  for (const MethodRun& r : runs) {
    if (!r.placed || !r.sim.feasible) continue;
    if (!best || r.sim.step_time < best->sim.step_time) best = &r;
  }
  return best;
}

ordered_json DevicesJson(const CostModel& cost, const SimResult& sim) {
  const Cluster& cluster = cost.cluster();
  const Bottleneck b = FindBottleneck(cost, sim);
  ordered_json devices = ordered_json::array();
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const Device& dev = cluster.device(d);
    devices.push_back(
        {{"name", dev.name},
         {"ops", sim.device_op_count[d]},
         {"busy_seconds", sim.device_busy_seconds[d]},
         {"idle_share",
          sim.step_time > 0 ? b.idle_seconds[d] / sim.step_time : 0.0},
         {"peak_bytes", sim.device_peak_bytes[d]},
         {"capacity_bytes", dev.memory_bytes}});
  }
  return devices;
}

ordered_json TransfersJson(const Cluster& cluster, const SimResult& sim) {
  ordered_json links = ordered_json::array();
  int64_t total = 0;
  for (LinkId l = 0; l < cluster.num_links(); ++l) {
    if (sim.link_bytes[l] == 0) continue;
    total += sim.link_bytes[l];
    links.push_back({{"from", cluster.device(cluster.link(l).from).name},
                     {"to", cluster.device(cluster.link(l).to).name},
                     {"bytes", sim.link_bytes[l]}});
  }
  return {{"bytes", total}, {"links", links}};
}

// The larger of two bounds (both hold for every placement that fits).
StepLowerBound Larger(const StepLowerBound& a, const StepLowerBound& b) {
  return b.seconds > a.seconds ? b : a;
}

// The bound of a row: the problem's, or the one the method proved
// (LowerBounds::proven, in ProblemLowerBound of its step) when larger.
StepLowerBound RowBound(const MethodRun& r, const StepLowerBound& problem) {
  return r.placed ? Larger(problem, ProblemLowerBound(r.sim.bounds)) : problem;
}

ordered_json RunJson(const CostModel& cost, const MethodRun& r,
                     const StepLowerBound& problem_bound) {
  const StepLowerBound bound = RowBound(r, problem_bound);
  const bool fits = r.placed && r.sim.feasible;
  ordered_json row = {
      {"method", r.method},
      {"placed", r.placed},
      {"feasible", fits},
      {"step_time", r.placed ? NumberOrNull(r.sim.step_time) : nullptr},
      {"lower_bound",
       bound.seconds > 0 ? NumberOrNull(bound.seconds) : ordered_json(nullptr)},
      {"lower_bound_binding", bound.binding},
      {"gap", fits && bound.seconds > 0 && std::isfinite(bound.seconds)
                  ? ordered_json(r.sim.step_time / bound.seconds)
                  : ordered_json(nullptr)},
      {"wall_seconds", r.wall_seconds},
      {"samples", r.searched ? r.search.samples : 0}};
  if (!r.placed) {
    row["error"] = r.error;
    return row;
  }
  if (!fits) row["error"] = DescribeInfeasibility(cost.cluster(), r.sim);
  row["devices"] = DevicesJson(cost, r.sim);
  row["transfers"] = TransfersJson(cost.cluster(), r.sim);
  return row;
}

ordered_json TallyJson(const ParameterCounts::Tally& t) {
  return {{"tensors", t.tensors}, {"elements", t.elements}, {"bytes", t.bytes}};
}

// The placers that can spill to the CPU (Baechi's use_cpu=true).
constexpr const char* kSpillingPlacers[] = {"m-etf", "m-sct", "m-topo"};

// FixesToFit's spill to the CPU is an estimate of memory alone: a greedy
// placer may still strand an op. Each spilling placer is run with
// use_cpu=true (they place in well under a second); the fix names those
// whose placement fits, or is dropped, with a line that says so, when none
// does.
std::vector<std::string> CheckCpuSpill(const CostModel& cost,
                                       std::vector<FitFix>* fixes) {
  std::vector<std::string> notes;
  for (auto fix = fixes->begin(); fix != fixes->end();) {
    if (fix->change.find("use_cpu=true") == std::string::npos) {
      ++fix;
      continue;
    }
    PlacementProblem problem;
    problem.graph = &cost.graph();
    problem.cluster = &cost.cluster();
    problem.cost = &cost;
    std::vector<std::string> fit;
    for (const char* placer : kSpillingPlacers) {
      StatusOr<MethodOptions> options = MethodOptions::Parse({"use_cpu=true"});
      if (!options.ok()) continue;
      StatusOr<MethodRun> run = RunMethod(placer, *options, problem, {});
      if (run.ok() && run->placed && run->sim.feasible) fit.push_back(placer);
    }
    if (fit.empty()) {
      notes.push_back(
          "spilling to the CPU does not do it: m-etf, m-sct and m-topo with "
          "use_cpu=true were tried, and each strands an op that fits on no "
          "device");
      fix = fixes->erase(fix);
      continue;
    }
    std::string others;
    for (size_t i = 1; i < fit.size(); ++i) {
      others += (others.empty() ? " (or " : ", ") + fit[i];
    }
    fix->change = "--method " + fit[0] + " --option use_cpu=true" +
                  (others.empty() ? "" : others + ")");
    fix->reason += "; placed so, it fits (tried)";
    ++fix;
  }
  return notes;
}

// The searches --method all runs, and their budget: small enough for a
// table, enough for mcmc to improve on its start.
bool IsAllSearch(const std::string& name) {
  return name == "mcmc" || name == "auto";
}
constexpr int64_t kAllSearchSamples = 2000;
constexpr double kAllSearchSeconds = 10;

// The note of a row of PlaceAll's table: why the placement does not fit,
// and what the search ran.
std::string PlaceAllNote(const Cluster& cluster, const MethodRun& r) {
  std::string note =
      r.sim.feasible ? "" : DescribeInfeasibility(cluster, r.sim);
  if (r.searched) {
    note += "searched " + std::to_string(r.search.samples) +
            " samples (budget: " + std::to_string(kAllSearchSamples) +
            " samples or " + Format("%g", kAllSearchSeconds) + " s)";
  }
  return note;
}

// The fastest feasible step time of `results`, or of method `only`; 0 when
// none fits.
double BestStepTime(const std::vector<MethodRun>& results,
                    const std::string& only = "") {
  double best = 0;
  for (const MethodRun& r : results) {
    if (!r.placed || !r.sim.feasible) continue;
    if (!only.empty() && r.method != only) continue;
    if (best == 0 || r.sim.step_time < best) best = r.sim.step_time;
  }
  return best;
}

// PlaceAll's table: a row per method, the best feasible step time marked.
std::string PlaceAllTable(const Cluster& cluster,
                          const std::vector<MethodRun>& results,
                          double lower_bound) {
  const double best = BestStepTime(results);
  const double single_gpu = BestStepTime(results, "single-gpu");
  MarkdownTable table({{"method"},
                       {"step time (s)", Align::kRight},
                       {"vs single-gpu", Align::kRight},
                       {"vs lower bound", Align::kRight},
                       {"max peak memory", Align::kRight},
                       {"time to place (s)", Align::kRight},
                       {"note"}});
  for (const MethodRun& r : results) {
    const std::string wall = Format("%.3f", r.wall_seconds);
    if (!r.placed) {
      table.AddRow({r.method, "-", "-", "-", "-", wall, r.error});
      continue;
    }
    const SimResult& sim = r.sim;
    int64_t peak = 0;
    for (int64_t p : sim.device_peak_bytes) peak = std::max(peak, p);
    const bool fits = sim.feasible;
    table.AddRow({r.method,
                  (fits ? Format("%.4f", sim.step_time) : "OOM") +
                      (fits && sim.step_time == best ? " (best)" : ""),
                  fits && single_gpu > 0
                      ? Format("%.2fx", single_gpu / sim.step_time)
                      : "-",
                  fits ? Format("%.2fx", sim.step_time / lower_bound) : "-",
                  FormatBytesScaled(peak), wall, PlaceAllNote(cluster, r)});
  }
  return table.ToString();
}

// The run's step chain, from its timeline, recorded again when the run
// did not keep one.
StepChain StepChainOf(const CostModel& cost, const MethodRun& run) {
  if (!run.sim.timeline.empty()) {
    return TraceStepChain(cost, run.placement, run.sim);
  }
  SimOptions options;
  options.record_timeline = true;
  options.compute_bounds = false;
  StatusOr<SimResult> sim = Simulator(cost).Simulate(run.placement, options);
  return sim.ok() ? TraceStepChain(cost, run.placement, *sim) : StepChain{};
}

// What a search's last fifth (of its wall time) did, to say whether a
// longer one would help: "" when `run` is no search or its trace does not
// end at the run's placement (refined since, or measured on devices).
std::string SearchTail(const MethodRun& run) {
  const std::vector<SampleRecord>& history = run.search.history;
  if (!run.searched || history.size() < 2) return "";
  const double best = history.back().best_step_time;
  if (!(best > 0) || std::abs(best - run.sim.step_time) > 1e-9 * best) {
    return "";
  }
  // The run's time: from its start (a resumed one's first sample), so that
  // a search that evaluates its start placers first counts their time.
  const double begin = run.search.first_sample_of_this_run > 0
                           ? history.front().wall_seconds
                           : 0.0;
  const double end = history.back().wall_seconds;
  if (!(end > begin)) return "";
  const double cut = end - (end - begin) / 5;
  double before = 0;  // The best at the cut; 0 while none fitted.
  int64_t tail_samples = 0;
  for (const SampleRecord& s : history) {
    if (s.wall_seconds <= cut) {
      before = s.best_step_time;
    } else {
      ++tail_samples;
    }
  }
  const std::string tail = report::FormatSeconds(end - cut) + ", " +
                           FormatCount(tail_samples) + " samples";
  // The share the best fell by in the last fifth; all of it when the first
  // placement that fits came there.
  const double fell = before > 0 ? (before - best) / before : 1;
  const std::string by = Format("%.2g%%", 100 * fell);
  // Below a thousandth a fifth, doubling the budget gains well under 1%.
  if (fell < 1e-3) {
    return (fell > 0 ? "; the search's best fell only " + by +
                           " in its last fifth (" + tail + ")"
                     : "; the search's last fifth (" + tail +
                           ") found nothing faster") +
           ": a longer one is unlikely to close much of it";
  }
  const std::string gain =
      before > 0 ? "its best fell " + by + " in its last fifth (" + tail + ")"
                 : "its first placement that fits came in its last fifth (" +
                       tail + ")";
  return "; the search was still improving, " + gain +
         ": a longer one may close more of it (twice the budget, or "
         "--refine " +
         Format("%.0f", std::max(1.0, std::round(run.search.wall_seconds))) +
         " from this placement)";
}

}  // namespace

std::vector<std::string> WhatNextLines(const CostModel& cost,
                                       const LoadedModel& model,
                                       const MethodRun* run,
                                       const StepLowerBound& bound) {
  std::vector<std::string> lines;
  if (run && run->placed && run->sim.feasible) {
    lines = DescribeBottleneck(cost.cluster(), run->sim,
                               FindBottleneck(cost, run->sim));
    lines.push_back(DescribeStepChain(StepChainOf(cost, *run)));
    if (bound.seconds > 0 && std::isfinite(bound.seconds)) {
      const double gap = run->sim.step_time / bound.seconds;
      std::string line = "gap: " + Format("%.2fx", gap) + " the lower bound (" +
                         bound.binding + ")";
      if (ProvenOptimal(run->sim.step_time, bound)) {
        line += ": optimal, no placement is faster";
      } else if (gap > 1.1) {
        const std::string tail = SearchTail(*run);
        line += !tail.empty()
                    ? tail
                    : "; a search may close part of it: --method auto "
                      "--budget-seconds 60, or --refine 60 from this "
                      "placement";
      } else {
        line += "; within 10% of what any placement can reach";
      }
      lines.push_back(line);
    }
    return lines;
  }
  std::vector<FitFix> fixes = FixesToFit(cost, model.batch);
  lines = CheckCpuSpill(cost, &fixes);
  if (fixes.empty()) {
    lines.push_back(lines.empty()
                        ? "no change found that would make it fit: the "
                          "largest op alone or the weights exceed what the "
                          "devices hold"
                        : "no other change found that would make it fit");
  }
  for (const FitFix& fix : fixes) {
    lines.push_back("to fit: " + fix.change + ": " + fix.reason);
  }
  return lines;
}

std::string PlaceJson(const CostModel& cost, const LoadedModel& model,
                      const std::vector<MethodRun>& runs,
                      const StepLowerBound& bound) {
  const Graph& graph = cost.graph();
  const Cluster& cluster = cost.cluster();
  const ParameterCounts params = CountParameters(graph);
  ordered_json devices = ordered_json::array();
  for (const Device& d : cluster.devices()) {
    devices.push_back({{"name", d.name},
                       {"kind", std::string(DeviceKindName(d.kind))},
                       {"memory_bytes", d.memory_bytes}});
  }
  ordered_json rows = ordered_json::array();
  StepLowerBound largest = bound;  // A bound any method proved holds for all.
  for (const MethodRun& r : runs) {
    rows.push_back(RunJson(cost, r, bound));
    largest = Larger(largest, RowBound(r, bound));
  }
  const MethodRun* best = BestRun(runs);
  const MethodRun* focus =
      best ? best : (runs.size() == 1 ? &runs[0] : nullptr);
  ordered_json doc = {
      {"format", "dplace.place"},
      {"version", 1},
      {"graph",
       {{"name", graph.name()},
        {"hash", graph.hash()},
        {"ops", graph.num_ops()},
        {"batch", model.batch},
        {"optimizer", model.optimizer},
        {"parameters",
         {{"trained", TallyJson(params.trained)},
          {"untrained", TallyJson(params.untrained)}}},
        {"warnings", model.warnings}}},
      {"cluster", {{"name", cluster.name()}, {"devices", devices}}},
      {"lower_bound", largest.seconds > 0 ? NumberOrNull(largest.seconds)
                                          : ordered_json(nullptr)},
      {"lower_bound_binding", largest.binding},
      {"methods", rows},
      {"best", best ? ordered_json(best->method) : ordered_json(nullptr)},
      {"what_next", WhatNextLines(cost, model, focus, largest)}};
  return doc.dump(1) + "\n";
}

// Every registered classical placer on one problem, and mcmc with a small
// budget, as a markdown table; the best feasible step time is marked.
int PlaceAll(const PlacementProblem& problem, const LoadedModel& model,
             bool json, const std::string& header, std::ostream& out,
             std::ostream& err) {
  std::vector<MethodRun> results;
  for (const MethodEntry* e : Methods()) {
    const bool search = IsAllSearch(e->name);
    StatusOr<std::unique_ptr<Method>> method = MakeMethod(e->name);
    if (method.ok() && (*method)->traits().searches && !search) continue;
    err << "dplace: placing with " << e->name << " ...\n";
    MethodRunOptions run_options;
    if (search) {
      run_options.context.search.budget.samples = kAllSearchSamples;
      run_options.context.search.budget.seconds = kAllSearchSeconds;
    }
    StatusOr<MethodRun> run =
        method.ok() ? RunMethod(method->get(), problem, run_options)
                    : StatusOr<MethodRun>(method.status());
    if (!run.ok()) {
      MethodRun failed;
      failed.method = e->name;
      failed.error = run.status().message();
      results.push_back(std::move(failed));
    } else {
      results.push_back(std::move(run).value());
    }
  }
  // The largest bound: the problem's, or one a method proved (the MILP's).
  StepLowerBound lower_bound = ProblemLowerBound(Simulator(*problem.cost));
  for (const MethodRun& r : results) {
    if (r.placed && r.sim.bounds.proven > lower_bound.seconds) {
      lower_bound = ProblemLowerBound(r.sim.bounds);
    }
  }
  if (json) {
    out << PlaceJson(*problem.cost, model, results, lower_bound);
    return BestStepTime(results) > 0 ? kExitOk : kExitInfeasible;
  }
  out << header << PlaceAllTable(*problem.cluster, results, lower_bound.seconds)
      << "lower bound: " << DescribeLowerBound(lower_bound)
      << "; no placement that fits in memory beats the largest of the "
         "critical path, the total work, the forced-transfer path and a "
         "proven bound\n";
  // What next: the best placement's bottleneck, or what would make the
  // model fit.
  const double best = BestStepTime(results);
  const MethodRun* best_run = nullptr;
  for (const MethodRun& r : results) {
    if (best > 0 && r.placed && r.sim.feasible && r.sim.step_time == best) {
      best_run = &r;
    }
  }
  out << "what next"
      << (best_run ? " (the best, " + best_run->method + ")" : std::string())
      << ":\n";
  for (const std::string& line :
       WhatNextLines(*problem.cost, model, best_run, lower_bound)) {
    out << "  " << line << "\n";
  }
  return best > 0 ? kExitOk : kExitInfeasible;
}

}  // namespace dplace
