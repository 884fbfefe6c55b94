#include "dplace/exec/fidelity.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <unordered_map>

#include "dplace/report/markdown.h"
#include "dplace/report/svg.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/format.h"
#include "dplace/util/median.h"

namespace dplace {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Ranks from 1, tied values sharing the mean of their ranks.
std::vector<double> Ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) {
      ++j;
    }
    const double mean_rank = (static_cast<double>(i + j) / 2) + 1;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = mean_rank;
    i = j + 1;
  }
  return ranks;
}

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2) return kNaN;
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

std::string Percent(double fraction) {
  return std::isfinite(fraction) ? Format("%.1f%%", 100 * fraction) : "-";
}

std::string Correlation(double r) {
  return std::isfinite(r) ? Format("%.3f", r) : "undefined";
}

}  // namespace

double MeanAbsolutePercentageError(const std::vector<double>& predicted,
                                   const std::vector<double>& actual) {
  if (actual.empty()) return kNaN;
  double sum = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    sum += std::abs(predicted[i] - actual[i]) / actual[i];
  }
  return sum / actual.size();
}

double MaxAbsolutePercentageError(const std::vector<double>& predicted,
                                  const std::vector<double>& actual) {
  if (actual.empty()) return kNaN;
  double most = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    most = std::max(most, std::abs(predicted[i] - actual[i]) / actual[i]);
  }
  return most;
}

double SpearmanCorrelation(const std::vector<double>& x,
                           const std::vector<double>& y) {
  return Pearson(Ranks(x), Ranks(y));
}

double KendallTauB(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2) return kNaN;
  // Pairs: concordant minus discordant over the geometric mean of the pairs
  // untied in x and the pairs untied in y.
  double concordant = 0, discordant = 0, untied_x = 0, untied_y = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx != 0) ++untied_x;
      if (dy != 0) ++untied_y;
      if (dx * dy > 0) ++concordant;
      if (dx * dy < 0) ++discordant;
    }
  }
  if (untied_x == 0 || untied_y == 0) return kNaN;
  return (concordant - discordant) / std::sqrt(untied_x * untied_y);
}

StatusOr<FidelityStats> ComputeFidelityStats(
    const std::vector<double>& predicted, const std::vector<double>& actual) {
  if (predicted.size() != actual.size()) {
    return InvalidArgumentError(
        "fidelity: " + std::to_string(predicted.size()) + " predictions but " +
        std::to_string(actual.size()) + " measurements");
  }
  if (actual.empty()) {
    return InvalidArgumentError("fidelity: no measurements to compare");
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!(actual[i] > 0) || !std::isfinite(actual[i]) ||
        !std::isfinite(predicted[i])) {
      return InvalidArgumentError(
          "fidelity: pair " + std::to_string(i) +
          ": expected finite times and a measured time > 0, got " +
          Format("%g", predicted[i]) + " and " + Format("%g", actual[i]));
    }
  }
  FidelityStats stats;
  stats.count = static_cast<int>(actual.size());
  stats.mape = MeanAbsolutePercentageError(predicted, actual);
  stats.max_ape = MaxAbsolutePercentageError(predicted, actual);
  stats.spearman = SpearmanCorrelation(predicted, actual);
  stats.kendall = KendallTauB(predicted, actual);
  return stats;
}

Placement RandomPlacement(const Graph& graph, const Cluster& cluster,
                          bool per_group, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](DeviceKindSet allowed) -> DeviceId {
    std::vector<DeviceId> choices;
    for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
      if (allowed.Contains(cluster.device(d).kind)) choices.push_back(d);
    }
    if (choices.empty()) return -1;
    return choices[std::uniform_int_distribution<size_t>(
        0, choices.size() - 1)(rng)];
  };
  Placement placement(graph.num_ops(), 0);
  if (!per_group) {
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      placement[op] = pick(graph.allowed_devices(op));
    }
    return placement;
  }
  // A group may run where every one of its ops may; groups are drawn in
  // the order their first op appears, so the result depends on the seed
  // only.
  std::unordered_map<std::string, DeviceKindSet> group_allowed;
  std::vector<std::string> group_order;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const std::string& group = graph.colocation_group(op);
    if (group.empty()) continue;
    auto [it, inserted] =
        group_allowed.emplace(group, graph.allowed_devices(op));
    if (inserted) {
      group_order.push_back(group);
    } else {
      DeviceKindSet both;
      for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kGpu}) {
        if (it->second.Contains(kind) &&
            graph.allowed_devices(op).Contains(kind)) {
          both.Add(kind);
        }
      }
      it->second = both;
    }
  }
  std::unordered_map<std::string, DeviceId> group_device;
  for (const std::string& group : group_order) {
    group_device[group] = pick(group_allowed[group]);
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const std::string& group = graph.colocation_group(op);
    const DeviceId d = group.empty() ? -1 : group_device[group];
    placement[op] =
        d >= 0 && graph.allowed_devices(op).Contains(cluster.device(d).kind)
            ? d
            : pick(graph.allowed_devices(op));
  }
  return placement;
}

std::string PlacementFileName(const std::string& label) {
  std::string name;
  bool dash = false;
  for (const char c : label) {
    const std::string piece =
        c == '%' ? "pct"
        : std::isalnum(static_cast<unsigned char>(c))
            ? std::string(1, static_cast<char>(
                                 std::tolower(static_cast<unsigned char>(c))))
            : std::string();
    if (piece.empty()) {
      dash = !name.empty();
      continue;
    }
    if (dash) name += '-';
    dash = false;
    name += piece;
  }
  return (name.empty() ? "placement" : name) + ".json";
}

std::vector<LabeledPlacement> FidelityPlacements(
    const PlacementProblem& problem, const FidelityOptions& options) {
  const Graph& graph = *problem.graph;
  const Cluster& cluster = *problem.cluster;
  std::vector<LabeledPlacement> out;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    out.push_back({"single " + cluster.device(d).name,
                   SingleDevicePlacement(graph, cluster, d)});
  }
  for (const std::string& name : options.placers) {
    if (name == "expert" && !problem.expert) continue;
    StatusOr<std::unique_ptr<Method>> placer = MakeMethod(name);
    if (!placer.ok() || (*placer)->traits().searches) continue;
    StatusOr<PlaceResult> placed = (*placer)->Place(problem);
    if (!placed.ok()) continue;
    if (!ValidatePlacement(graph, cluster, placed->placement).ok()) continue;
    out.push_back({name, std::move(placed->placement)});
  }
  // Contiguous cuts of the topological order between the first and the
  // last device: from lopsided to balanced, few edges cut, so the step
  // times spread beyond what random placements give.
  if (cluster.num_devices() > 1) {
    const std::vector<OpId>& topo = graph.topological_order();
    for (int quarter = 1; quarter <= 3; ++quarter) {
      Placement placement = SingleDevicePlacement(graph, cluster, 0);
      const DeviceId last = cluster.num_devices() - 1;
      for (size_t i = topo.size() * quarter / 4; i < topo.size(); ++i) {
        if (graph.allowed_devices(topo[i]).Contains(
                cluster.device(last).kind)) {
          placement[topo[i]] = last;
        }
      }
      out.push_back({"cut at " + std::to_string(25 * quarter) + "% of the ops",
                     std::move(placement)});
    }
  }
  for (int k = 0; static_cast<int>(out.size()) < options.samples; ++k) {
    const bool per_group = k % 2 == 0;
    out.push_back(
        {std::string(per_group ? "random per group" : "random per op") + " #" +
             std::to_string(k / 2 + 1),
         RandomPlacement(graph, cluster, per_group,
                         options.seed * 1000003 + k)});
  }
  return out;
}

StatusOr<FidelityReport> RunFidelity(const PlacementProblem& problem,
                                     Environment* measured,
                                     const FidelityOptions& options) {
  if (options.rounds < 1) {
    return InvalidArgumentError("fidelity: rounds must be >= 1, got " +
                                std::to_string(options.rounds));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<LabeledPlacement> placements =
      FidelityPlacements(problem, options);
  const int n = static_cast<int>(placements.size());
  Simulator simulator(*problem.cost);
  SimOptions sim_options;
  sim_options.compute_bounds = false;
  std::unique_ptr<Simulator> compare_simulator;
  if (options.compare_cost != nullptr) {
    compare_simulator = std::make_unique<Simulator>(*options.compare_cost);
  }
  FidelityReport report;
  report.samples.resize(n);
  for (int i = 0; i < n; ++i) {
    StatusOr<SimResult> sim =
        simulator.Simulate(placements[i].placement, sim_options);
    if (!sim.ok()) return sim.status().WithPrefix(placements[i].label);
    FidelitySample& sample = report.samples[i];
    if (compare_simulator != nullptr) {
      StatusOr<SimResult> other =
          compare_simulator->Simulate(placements[i].placement, sim_options);
      if (!other.ok()) {
        return other.status().WithPrefix(placements[i].label +
                                         " (compared cost model)");
      }
      if (other->feasible) sample.compared_simulated = other->step_time;
    }
    sample.label = placements[i].label;
    sample.placement = std::move(placements[i].placement);
    sample.simulated_feasible = sim->feasible;
    sample.simulated = sim->step_time;
    sample.simulated_op_seconds = 0;
    for (int d = 0; d < static_cast<int>(sim->device_op_count.size()); ++d) {
      sample.simulated_op_seconds += sim->device_busy_seconds[d];
      sample.devices_used += sim->device_op_count[d] > 0;
    }
  }
  // With calibrate_links, items n, n + 1 (and n + 2) of every round are
  // the calibration's reference, calibration (and split) placements.
  std::optional<LinkCalibration> calibration;
  if (options.calibrate_links != nullptr) {
    DPLACE_ASSIGN_OR_RETURN(calibration,
                            CalibrationPlacements(problem, options.seed));
  }
  const int items =
      calibration ? n + CalibrationPlacementCount(*calibration) : n;
  // rounds[r][i]: round r's measurement of sample i.
  std::vector<std::vector<Measurement>> rounds(options.rounds,
                                               std::vector<Measurement>(n));
  // Each round in its own order, so that a slow or fast spell of the
  // machine falls on different placements in different rounds.
  std::vector<int> order(items);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 order_rng(options.seed);
  for (int r = 0; r < options.rounds; ++r) {
    if (r > 0) std::shuffle(order.begin(), order.end(), order_rng);
    for (int k = 0; k < items; ++k) {
      const int i = order[k];
      if (i >= n) {
        if (options.progress) {
          options.progress(r * items + k, options.rounds * items,
                           "calibration: " + CalibrationPlacementName(i - n));
        }
        DPLACE_RETURN_IF_ERROR(
            MeasureCalibrationPlacement(measured, i - n, &*calibration));
        continue;
      }
      FidelitySample& sample = report.samples[i];
      if (options.progress) {
        options.progress(r * items + k, options.rounds * items, sample.label);
      }
      StatusOr<std::vector<Measurement>> m =
          measured->Evaluate({sample.placement});
      if (!m.ok()) return m.status().WithPrefix(sample.label);
      rounds[r][i] = std::move((*m)[0]);
    }
  }
  if (calibration) {
    // Every placement simulated again, on the calibrated cluster.
    LinkCalibrationOptions fit_options;
    fit_options.statistic = options.statistic;
    DPLACE_RETURN_IF_ERROR(FitLinkCalibration(problem, *options.calibrate_links,
                                              fit_options, &*calibration));
    const CostModel calibrated(*problem.graph, calibration->cluster,
                               calibration->profile);
    Simulator calibrated_simulator(calibrated);
    for (FidelitySample& sample : report.samples) {
      if (sample.simulated_feasible) {
        sample.uncalibrated_simulated = sample.simulated;
      }
      StatusOr<SimResult> sim =
          calibrated_simulator.Simulate(sample.placement, sim_options);
      if (!sim.ok()) {
        return sim.status().WithPrefix(sample.label + " (calibrated links)");
      }
      sample.simulated_feasible = sim->feasible;
      sample.simulated = sim->step_time;
    }
    report.calibration = std::move(calibration);
  }
  for (int i = 0; i < n; ++i) {
    FidelitySample& sample = report.samples[i];
    sample.measured = rounds[0][i];
    std::vector<double> round_op_seconds;
    double wall = 0;
    for (int r = 0; r < options.rounds; ++r) {
      const Measurement& m = rounds[r][i];
      wall += m.wall_seconds;
      if (!m.feasible) {
        if (sample.measured.feasible) sample.measured = m;
        continue;
      }
      sample.round_step_times.push_back(m.step_time);
      const std::vector<double> timings = StepTimings(m);
      sample.step_times.insert(sample.step_times.end(), timings.begin(),
                               timings.end());
      report.pooled_steps = report.pooled_steps || !m.step_times.empty();
      if (!m.op_seconds.empty()) {
        round_op_seconds.push_back(
            std::accumulate(m.op_seconds.begin(), m.op_seconds.end(), 0.0));
      }
      for (size_t d = 0; d < m.peak_memory_bytes.size() &&
                         d < sample.measured.peak_memory_bytes.size();
           ++d) {
        sample.measured.peak_memory_bytes[d] = std::max(
            sample.measured.peak_memory_bytes[d], m.peak_memory_bytes[d]);
      }
    }
    sample.measured.wall_seconds = wall;
    if (sample.measured.feasible) {
      sample.measured.step_time =
          OfRounds(sample.step_times, options.statistic);
      if (round_op_seconds.size() == sample.round_step_times.size()) {
        sample.measured_op_seconds =
            OfRounds(std::move(round_op_seconds), options.statistic);
      }
    }
  }
  std::map<int, FidelityReport::OpTimeRatio> ratios;  // By devices used.
  for (const FidelitySample& sample : report.samples) {
    if (!(sample.simulated_op_seconds > 0) ||
        !std::isfinite(sample.measured_op_seconds)) {
      continue;
    }
    FidelityReport::OpTimeRatio& r = ratios[sample.devices_used];
    r.devices = sample.devices_used;
    r.mean_ratio += sample.measured_op_seconds / sample.simulated_op_seconds;
    ++r.samples;
  }
  for (auto& [devices, ratio] : ratios) {
    ratio.mean_ratio /= ratio.samples;  // The sum so far.
    report.op_time_ratios.push_back(ratio);
  }
  // Sample i's timings in every other round from index r0 (rounds 1,
  // 3, ... for 0; 2, 4, ... for 1), pooled and made one by `statistic`;
  // NaN when there are none or one of the rounds was infeasible.
  auto half = [&](int i, int r0, RoundStatistic statistic) {
    std::vector<double> times;
    for (int r = r0; r < options.rounds; r += 2) {
      if (!rounds[r][i].feasible) return kNaN;
      const std::vector<double> timings = StepTimings(rounds[r][i]);
      times.insert(times.end(), timings.begin(), timings.end());
    }
    return OfRounds(std::move(times), statistic);
  };
  // The samples' simulated against measured times, and the even rounds
  // against the odd ones, with every placement's rounds made one by
  // `statistic`.
  auto assess = [&](RoundStatistic statistic, FidelityStats* stats,
                    FidelityStats* retest) -> Status {
    std::vector<double> predicted, actual, odd_rounds, even_rounds;
    for (int i = 0; i < n; ++i) {
      const FidelitySample& sample = report.samples[i];
      if (sample.simulated_feasible && sample.measured.feasible) {
        predicted.push_back(sample.simulated);
        actual.push_back(OfRounds(sample.step_times, statistic));
      }
      const double odd = half(i, 0, statistic), even = half(i, 1, statistic);
      if (std::isfinite(odd) && std::isfinite(even)) {
        odd_rounds.push_back(odd);
        even_rounds.push_back(even);
      }
    }
    if (actual.size() < 2) {
      return InfeasibleError(
          "fidelity: " + std::to_string(actual.size()) + " of " +
          std::to_string(report.samples.size()) +
          " placements were feasible both simulated and measured; at least "
          "2 are needed");
    }
    DPLACE_ASSIGN_OR_RETURN(*stats, ComputeFidelityStats(predicted, actual));
    if (odd_rounds.size() >= 2) {
      DPLACE_ASSIGN_OR_RETURN(*retest,
                              ComputeFidelityStats(even_rounds, odd_rounds));
    }
    return Status::Ok();
  };
  report.statistic = options.statistic;
  DPLACE_RETURN_IF_ERROR(
      assess(options.statistic, &report.stats, &report.retest));
  for (RoundStatistic other : kRoundStatistics) {
    if (other == options.statistic || options.rounds < 2) continue;
    FidelityReport::OtherStatistic o{other, {}, {}};
    DPLACE_RETURN_IF_ERROR(assess(other, &o.stats, &o.retest));
    report.other_statistics.push_back(o);
  }
  // `stats` of another simulated time of the samples (NaN where there is
  // none) against their measured times; count 0 with fewer than two.
  auto against_measured = [&](double FidelitySample::*simulated,
                              FidelityStats* stats) -> Status {
    std::vector<double> predicted, actual;
    for (const FidelitySample& sample : report.samples) {
      if (std::isfinite(sample.*simulated) && sample.measured.feasible) {
        predicted.push_back(sample.*simulated);
        actual.push_back(sample.measured.step_time);
      }
    }
    if (predicted.size() < 2) return Status::Ok();
    DPLACE_ASSIGN_OR_RETURN(*stats, ComputeFidelityStats(predicted, actual));
    return Status::Ok();
  };
  DPLACE_RETURN_IF_ERROR(against_measured(
      &FidelitySample::uncalibrated_simulated, &report.uncalibrated));
  DPLACE_RETURN_IF_ERROR(
      against_measured(&FidelitySample::compared_simulated, &report.compared));
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return report;
}

std::string FidelityTableMarkdown(const FidelityReport& report) {
  bool rounds = false, op_times = false;
  for (const FidelitySample& s : report.samples) {
    rounds = rounds || s.round_step_times.size() > 1;
    op_times = op_times || std::isfinite(s.measured_op_seconds);
  }
  const std::string measured =
      "measured (s" +
      (rounds ? ", " + std::string(RoundStatisticPhrase(report.statistic,
                                                        report.pooled_steps))
              : std::string()) +
      ")";
  MarkdownTable table({{"placement"},
                       {"simulated (s)", Align::kRight},
                       {measured, Align::kRight},
                       {"error", Align::kRight}});
  if (op_times) {
    table.AddColumn({"op time, measured / simulated", Align::kRight});
  }
  if (rounds) table.AddColumn({"rounds (s)", Align::kRight});
  for (const FidelitySample& s : report.samples) {
    const bool both = s.simulated_feasible && s.measured.feasible;
    std::vector<std::string> cells = {
        s.label,
        s.simulated_feasible ? Format("%.4f", s.simulated) : "infeasible",
        s.measured.feasible ? Format("%.4f", s.measured.step_time)
                            : "infeasible: " + s.measured.infeasible_reason,
        both ? Format("%+.1f%%", 100 * (s.simulated - s.measured.step_time) /
                                     s.measured.step_time)
             : "-"};
    if (op_times) {
      const double ratio = s.measured_op_seconds / s.simulated_op_seconds;
      cells.push_back(std::isfinite(ratio) ? Format("x%.2f", ratio) : "-");
    }
    if (rounds) {
      std::string times;
      for (double t : s.round_step_times) {
        times += (times.empty() ? "" : " / ") + Format("%.4f", t);
      }
      cells.push_back(times.empty() ? std::string("-") : times);
    }
    table.AddRow(std::move(cells));
  }
  return table.ToString();
}

std::string FidelitySummary(const FidelityStats& stats) {
  return "MAPE " + Percent(stats.mape) + ", max error " +
         Percent(stats.max_ape) + ", Spearman " + Correlation(stats.spearman) +
         ", Kendall " + Correlation(stats.kendall) +
         " (n = " + std::to_string(stats.count) + ")";
}

std::string RetestSummary(const FidelityReport& report) {
  if (report.retest.count == 0) return "";
  return "re-measured (even rounds against odd rounds): " +
         FidelitySummary(report.retest);
}

std::string OtherStatisticSummary(const FidelityReport& report,
                                  const FidelityReport::OtherStatistic& other) {
  std::string line =
      "with " +
      std::string(RoundStatisticPhrase(other.statistic, report.pooled_steps)) +
      " instead of " +
      std::string(RoundStatisticPhrase(report.statistic, report.pooled_steps)) +
      ": " + FidelitySummary(other.stats);
  if (other.retest.count > 0) {
    line += "; re-measured Spearman " + Correlation(other.retest.spearman);
  }
  return line;
}

std::string ComparedSummary(const FidelityReport& report,
                            const std::string& what) {
  if (report.compared.count == 0) return "";
  return "simulated with " + what +
         " instead: " + FidelitySummary(report.compared);
}

std::string OpTimeSummary(const FidelityReport& report) {
  std::string line;
  for (const FidelityReport::OpTimeRatio& r : report.op_time_ratios) {
    line += (line.empty() ? "op time, measured over simulated: " : ", ") +
            Format("x%.2f", r.mean_ratio) + " on " + std::to_string(r.devices) +
            (r.devices == 1 ? " device (" : " devices (") +
            std::to_string(r.samples) +
            (r.samples == 1 ? " placement)" : " placements)");
  }
  return line;
}

std::string CalibrationSummary(const FidelityReport& report) {
  if (!report.calibration) return "";
  const LinkCalibration& c = *report.calibration;
  auto scale = [](double x) {
    return std::isfinite(x) ? Format("x%.2f", x) : std::string("out of reach");
  };
  std::string line = "links calibrated in the same rounds: every latency " +
                     scale(c.latency_scale) + " (fit to all rounds " +
                     scale(c.fitted_scale);
  if (c.reference_rounds.size() >= 2) {
    line += ", to rounds 1, 3, ... " + scale(c.half_scales[0]) +
            ", to rounds 2, 4, ... " + scale(c.half_scales[1]);
  }
  line += ")";
  if (c.op_time_scale != 1) {
    line += "; op times " + Format("x%.3f", c.op_time_scale) +
            " (the reference at its measured time)";
  }
  if (!c.split.empty()) {
    line += "; ops " + Format("x%.3f", 1 + c.shared_host_slowdown) +
            " on a device where the placement also uses another of its "
            "host's (the split placement)";
  }
  return line;
}

std::string UncalibratedSummary(const FidelityReport& report) {
  if (report.uncalibrated.count == 0) return "";
  return "simulated with the cluster's own link latencies instead: " +
         FidelitySummary(report.uncalibrated);
}

std::string FidelityScatterSvg(const FidelityReport& report,
                               const std::string& title) {
  report::Series points("placements", report::SeriesColour(0));
  points.line = false;
  points.points = true;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const FidelitySample& s : report.samples) {
    if (!s.simulated_feasible || !s.measured.feasible) continue;
    points.x.push_back(s.measured.step_time);
    points.y.push_back(s.simulated);
    lo = std::min({lo, s.measured.step_time, s.simulated});
    hi = std::max({hi, s.measured.step_time, s.simulated});
  }
  report::Series diagonal("simulated = measured", "#888");
  diagonal.dashed = true;
  diagonal.width = 1;
  if (hi > 0) {
    diagonal.x = {lo, hi};
    diagonal.y = {lo, hi};
  }
  report::PlotOptions options;
  options.title = title;
  options.x_label = "measured step time (s)";
  options.y_label = "simulated step time (s)";
  options.log_x = options.log_y = true;
  options.y_min_zero = false;
  options.height = 480;
  options.width = 640;
  return report::Plot({diagonal, points}, {}, options);
}

}  // namespace dplace
