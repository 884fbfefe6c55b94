#include "dplace/fidelity/fidelity.h"

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

#include "dplace/sim/simulator.h"
#include "dplace/util/median.h"

namespace dplace {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One fidelity run, step by step: Simulate every placement, Measure them
// in rounds (with the link calibration's placements among them), Calibrate
// and simulate again, Pool each placement's rounds into its measured time,
// then Assess: the statistics, under each round statistic, and against
// the other simulated times.
class FidelityRun {
 public:
  FidelityRun(const PlacementProblem& problem, Environment* measured,
              const FidelityOptions& options)
      : problem_(problem), measured_(measured), options_(options) {
    sim_options_.compute_bounds = false;
  }

  StatusOr<FidelityReport> Run() {
    const auto start = std::chrono::steady_clock::now();
    DPLACE_RETURN_IF_ERROR(Simulate());
    DPLACE_RETURN_IF_ERROR(Measure());
    DPLACE_RETURN_IF_ERROR(Calibrate());
    Pool();
    DPLACE_RETURN_IF_ERROR(Assess());
    report_.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return std::move(report_);
  }

 private:
  // Every placement simulated with the problem's cost model (and the
  // compared one): its simulated time, op time and devices used.
  Status Simulate() {
    std::vector<LabeledPlacement> placements =
        FidelityPlacements(problem_, options_);
    n_ = static_cast<int>(placements.size());
    Simulator simulator(*problem_.cost);
    std::unique_ptr<Simulator> compare_simulator;
    if (options_.compare_cost != nullptr) {
      compare_simulator = std::make_unique<Simulator>(*options_.compare_cost);
    }
    report_.samples.resize(n_);
    for (int i = 0; i < n_; ++i) {
      StatusOr<SimResult> sim =
          simulator.Simulate(placements[i].placement, sim_options_);
      if (!sim.ok()) return sim.status().WithPrefix(placements[i].label);
      FidelitySample& sample = report_.samples[i];
      if (compare_simulator != nullptr) {
        StatusOr<SimResult> other =
            compare_simulator->Simulate(placements[i].placement, sim_options_);
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
    return Status::Ok();
  }

  // Every placement measured once per round, each round (but the first)
  // in its own shuffled order, so that a slow or fast spell of the machine
  // falls on different placements in different rounds. With
  // calibrate_links, items n_, n_ + 1 (and n_ + 2) of every round are the
  // calibration's reference, calibration (and split) placements.
  Status Measure() {
    if (options_.calibrate_links != nullptr) {
      DPLACE_ASSIGN_OR_RETURN(calibration_,
                              CalibrationPlacements(problem_, options_.seed));
    }
    const int items =
        calibration_ ? n_ + CalibrationPlacementCount(*calibration_) : n_;
    rounds_.assign(options_.rounds, std::vector<Measurement>(n_));
    std::vector<int> order(items);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 order_rng(options_.seed);
    for (int r = 0; r < options_.rounds; ++r) {
      if (r > 0) std::shuffle(order.begin(), order.end(), order_rng);
      for (int k = 0; k < items; ++k) {
        DPLACE_RETURN_IF_ERROR(
            MeasureItem(r, order[k], r * items + k, options_.rounds * items));
      }
    }
    return Status::Ok();
  }

  // Round r's measurement of item i, the index-th of `count`.
  Status MeasureItem(int r, int i, int index, int count) {
    if (i >= n_) {
      if (options_.progress) {
        options_.progress(index, count,
                          "calibration: " + CalibrationPlacementName(i - n_));
      }
      return MeasureCalibrationPlacement(measured_, i - n_, &*calibration_);
    }
    FidelitySample& sample = report_.samples[i];
    if (options_.progress) options_.progress(index, count, sample.label);
    StatusOr<std::vector<Measurement>> m =
        measured_->Evaluate({sample.placement});
    if (!m.ok()) return m.status().WithPrefix(sample.label);
    rounds_[r][i] = std::move((*m)[0]);
    return Status::Ok();
  }

  // With calibrate_links: the links fitted to the rounds, and every
  // placement simulated again on the calibrated cluster.
  Status Calibrate() {
    if (!calibration_) return Status::Ok();
    LinkCalibrationOptions fit_options;
    fit_options.statistic = options_.statistic;
    DPLACE_RETURN_IF_ERROR(FitLinkCalibration(
        problem_, *options_.calibrate_links, fit_options, &*calibration_));
    const CostModel calibrated(*problem_.graph, calibration_->cluster,
                               calibration_->profile);
    Simulator calibrated_simulator(calibrated);
    for (FidelitySample& sample : report_.samples) {
      if (sample.simulated_feasible) {
        sample.uncalibrated_simulated = sample.simulated;
      }
      StatusOr<SimResult> sim =
          calibrated_simulator.Simulate(sample.placement, sim_options_);
      if (!sim.ok()) {
        return sim.status().WithPrefix(sample.label + " (calibrated links)");
      }
      sample.simulated_feasible = sim->feasible;
      sample.simulated = sim->step_time;
    }
    report_.calibration = std::move(calibration_);
    return Status::Ok();
  }

  // Each placement's rounds made one measurement, and the op time ratios.
  void Pool() {
    for (int i = 0; i < n_; ++i) PoolSample(i);
    std::map<int, FidelityReport::OpTimeRatio> ratios;  // By devices used.
    for (const FidelitySample& sample : report_.samples) {
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
      report_.op_time_ratios.push_back(ratio);
    }
  }

  // Sample i's timings of all rounds, pooled and made one by the options'
  // statistic; infeasible (with the first round's reason) when any round
  // was; peak memory the largest of the rounds'.
  void PoolSample(int i) {
    FidelitySample& sample = report_.samples[i];
    sample.measured = rounds_[0][i];
    std::vector<double> round_op_seconds;
    double wall = 0;
    for (int r = 0; r < options_.rounds; ++r) {
      const Measurement& m = rounds_[r][i];
      wall += m.wall_seconds;
      if (!m.feasible) {
        if (sample.measured.feasible) sample.measured = m;
        continue;
      }
      sample.round_step_times.push_back(m.step_time);
      const std::vector<double> timings = StepTimings(m);
      sample.step_times.insert(sample.step_times.end(), timings.begin(),
                               timings.end());
      report_.pooled_steps = report_.pooled_steps || !m.step_times.empty();
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
          OfRounds(sample.step_times, options_.statistic);
      if (round_op_seconds.size() == sample.round_step_times.size()) {
        sample.measured_op_seconds =
            OfRounds(std::move(round_op_seconds), options_.statistic);
      }
    }
  }

  // The statistics under the options' statistic and every other one, and
  // of the uncalibrated and compared simulated times.
  Status Assess() {
    report_.statistic = options_.statistic;
    DPLACE_RETURN_IF_ERROR(
        AssessWith(options_.statistic, &report_.stats, &report_.retest));
    for (RoundStatistic other : kRoundStatistics) {
      if (other == options_.statistic || options_.rounds < 2) continue;
      FidelityReport::OtherStatistic o{other, {}, {}};
      DPLACE_RETURN_IF_ERROR(AssessWith(other, &o.stats, &o.retest));
      report_.other_statistics.push_back(o);
    }
    DPLACE_RETURN_IF_ERROR(AgainstMeasured(
        &FidelitySample::uncalibrated_simulated, &report_.uncalibrated));
    return AgainstMeasured(&FidelitySample::compared_simulated,
                           &report_.compared);
  }

  // Sample i's timings in every other round from index r0 (rounds 1,
  // 3, ... for 0; 2, 4, ... for 1), pooled and made one by `statistic`;
  // NaN when there are none or one of the rounds was infeasible.
  double Half(int i, int r0, RoundStatistic statistic) const {
    std::vector<double> times;
    for (int r = r0; r < options_.rounds; r += 2) {
      if (!rounds_[r][i].feasible) return kNaN;
      const std::vector<double> timings = StepTimings(rounds_[r][i]);
      times.insert(times.end(), timings.begin(), timings.end());
    }
    return OfRounds(std::move(times), statistic);
  }

  // The samples' simulated against measured times, and the even rounds
  // against the odd ones, with every placement's rounds made one by
  // `statistic`.
  Status AssessWith(RoundStatistic statistic, FidelityStats* stats,
                    FidelityStats* retest) const {
    std::vector<double> predicted, actual, odd_rounds, even_rounds;
    for (int i = 0; i < n_; ++i) {
      const FidelitySample& sample = report_.samples[i];
      if (sample.simulated_feasible && sample.measured.feasible) {
        predicted.push_back(sample.simulated);
        actual.push_back(OfRounds(sample.step_times, statistic));
      }
      const double odd = Half(i, 0, statistic), even = Half(i, 1, statistic);
      if (std::isfinite(odd) && std::isfinite(even)) {
        odd_rounds.push_back(odd);
        even_rounds.push_back(even);
      }
    }
    if (actual.size() < 2) {
      return InfeasibleError(
          "fidelity: " + std::to_string(actual.size()) + " of " +
          std::to_string(report_.samples.size()) +
          " placements were feasible both simulated and measured; at least "
          "2 are needed");
    }
    DPLACE_ASSIGN_OR_RETURN(*stats, ComputeFidelityStats(predicted, actual));
    if (odd_rounds.size() >= 2) {
      DPLACE_ASSIGN_OR_RETURN(*retest,
                              ComputeFidelityStats(even_rounds, odd_rounds));
    }
    return Status::Ok();
  }

  // `stats` of another simulated time of the samples (NaN where there is
  // none) against their measured times; count 0 with fewer than two.
  Status AgainstMeasured(double FidelitySample::*simulated,
                         FidelityStats* stats) const {
    std::vector<double> predicted, actual;
    for (const FidelitySample& sample : report_.samples) {
      if (std::isfinite(sample.*simulated) && sample.measured.feasible) {
        predicted.push_back(sample.*simulated);
        actual.push_back(sample.measured.step_time);
      }
    }
    if (predicted.size() < 2) return Status::Ok();
    DPLACE_ASSIGN_OR_RETURN(*stats, ComputeFidelityStats(predicted, actual));
    return Status::Ok();
  }

  const PlacementProblem& problem_;
  Environment* const measured_;
  const FidelityOptions& options_;
  SimOptions sim_options_;
  int n_ = 0;  // Placements compared.
  FidelityReport report_;
  std::optional<LinkCalibration> calibration_;
  // rounds_[r][i]: round r's measurement of sample i.
  std::vector<std::vector<Measurement>> rounds_;
};

}  // namespace

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
  return FidelityRun(problem, measured, options).Run();
}

}  // namespace dplace
