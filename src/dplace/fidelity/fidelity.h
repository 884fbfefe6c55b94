// Fidelity of the simulator: how well simulated step times predict measured
// ones, over a set of placements of one graph on one (real) cluster.
//
//   FidelityOptions options;
//   options.samples = 30;
//   StatusOr<FidelityReport> report =
//       RunFidelity(problem, measured_env.get(), options);
//   // report->stats.spearman, report->stats.mape, ...
//
// The placements: every device alone, the classical placers that succeed,
// the topological order cut at 25, 50 and 75% between the first and the
// last device, then random placements (per co-location group and per op,
// alternating, seeded) until `samples`. Each is simulated with the problem's
// cost model and measured with the environment given (a MeasuredEnvironment for
// real execution; any Environment works, which keeps this testable).
#ifndef DPLACE_FIDELITY_FIDELITY_H_
#define DPLACE_FIDELITY_FIDELITY_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/fidelity/calibration.h"
#include "dplace/fidelity/fidelity_stats.h"
#include "dplace/method/method.h"
#include "dplace/util/median.h"  // RoundStatistic, OfRounds
#include "dplace/util/status.h"

namespace dplace {

struct FidelityOptions {
  // Placements in all; random ones fill up to it after the single-device
  // and placer ones (which are kept even past it). Default: 20.
  int samples = 20;
  // Seed of the random placements. Default: 1.
  uint64_t seed = 1;
  // Classical placers tried, in order; one that fails is skipped.
  // Default: m-topo, m-etf, m-sct, scotch, metis, expert.
  std::vector<std::string> placers = {"m-topo", "m-etf", "m-sct",
                                      "scotch", "metis", "expert"};
  // Passes over all placements, each measuring every placement once (the
  // first in order, the others each in its own shuffled order drawn from
  // `seed`, so that a slow or fast spell of the machine falls on different
  // placements in each); `statistic` makes a placement's measured time of
  // its timings in all passes, pooled (StepTimings: every timed step in
  // real execution, else each pass's time). With two or more, the even
  // passes (2, 4, ...) are also compared with the odd ones
  // (FidelityReport::retest). Default: 2.
  int rounds = 2;
  // Default: the mean of the fastest quarter.
  RoundStatistic statistic = RoundStatistic::kFastestQuarter;
  // Called before each measurement: (index, count, label), index counting
  // over all rounds. Default: none.
  std::function<void(int, int, const std::string&)> progress;
  // Another cost model of the problem's graph on a cluster with the same
  // devices (a calibrated cluster, another profile): every placement is
  // simulated with it too and compared with the same measurements
  // (FidelityReport::compared). Default: none.
  const CostModel* compare_cost = nullptr;
  // The profile problem.cost was made from, to calibrate the links in the
  // same rounds: CalibrateLinks' two placements (CalibrationPlacements for
  // `seed`) are measured in every round among the others, the link
  // latencies are fitted to them with `statistic` (FitLinkCalibration),
  // and every placement's `simulated` is then its time on the calibrated
  // cluster; its time on problem.cluster moves to
  // `uncalibrated_simulated`. The machine's links drift more than its op
  // times, so a fit over the same minutes as the placements tracks them
  // where the cluster's benchmark, made once, does not. Default: none.
  const ProfileTable* calibrate_links = nullptr;
};

// A placement to compare, with where it came from ("single cpu:0",
// "m-etf", "random per group #3").
struct LabeledPlacement {
  std::string label;
  Placement placement;
};

// The placements RunFidelity measures (deterministic for a seed).
std::vector<LabeledPlacement> FidelityPlacements(
    const PlacementProblem& problem, const FidelityOptions& options);

// A file name for a sample's placement: the label in lower case, each run
// of other characters than letters and digits made one '-', '%' spelt
// "pct", then ".json" ("random per group #3" -> "random-per-group-3.json",
// "single cpu:0" -> "single-cpu-0.json").
std::string PlacementFileName(const std::string& label);

// A placement whose co-location groups each land on one random device
// (among the devices every op of the group may run on), or, with
// `per_group` false, whose ops each land on a random allowed device.
Placement RandomPlacement(const Graph& graph, const Cluster& cluster,
                          bool per_group, uint64_t seed);

struct FidelitySample {
  std::string label;
  Placement placement;
  bool simulated_feasible = true;
  double simulated = 0;  // Seconds.
  // With FidelityOptions::compare_cost: its simulated time (seconds), NaN
  // where infeasible or without it.
  double compared_simulated = std::numeric_limits<double>::quiet_NaN();
  // With FidelityOptions::calibrate_links: the simulated time (seconds) on
  // problem.cluster, NaN where infeasible or without it.
  double uncalibrated_simulated = std::numeric_limits<double>::quiet_NaN();
  // The timings of all rounds, pooled, made one by the options'
  // statistic; infeasible (with the first round's reason) when any round
  // was.
  Measurement measured;
  std::vector<double> round_step_times;  // Seconds, one per feasible round.
  // The feasible rounds' timings (StepTimings), pooled, seconds.
  std::vector<double> step_times;
  // The devices' op time per step, summed over the devices: simulated
  // (SimResult::device_busy_seconds, the profile's op times) and measured
  // (Measurement::op_seconds, the rounds made one by the options'
  // statistic; NaN where the environment gives none). Their ratio is how
  // far the profile's op times hold in this placement, apart from the
  // waits and copies a step adds.
  double simulated_op_seconds = std::numeric_limits<double>::quiet_NaN();
  double measured_op_seconds = std::numeric_limits<double>::quiet_NaN();
  int devices_used = 0;  // Devices the placement puts ops on.
};

struct FidelityReport {
  std::vector<FidelitySample> samples;
  // Over the samples feasible both simulated and measured.
  FidelityStats stats;
  // The even rounds (2, 4, ...) as predictions of the odd ones (1, 3, ...),
  // each half's timings pooled and made one by the statistic, over the samples
  // feasible in all: how well the machine agrees with itself, about the
  // best a simulator can be expected to match there (against all the
  // rounds it may do a little better). count 0 with one round.
  FidelityStats retest;
  // The options' statistic, which `stats` and `retest` use.
  RoundStatistic statistic = RoundStatistic::kFastestQuarter;
  // Whether the environment timed steps (real execution), so that the
  // statistic was taken over steps rather than rounds.
  bool pooled_steps = false;
  // `stats` and `retest` under each other statistic, in kRoundStatistics'
  // order; empty with one round.
  struct OtherStatistic {
    RoundStatistic statistic;
    FidelityStats stats;
    FidelityStats retest;
  };
  std::vector<OtherStatistic> other_statistics;
  // Measured over simulated op time (FidelitySample::measured_op_seconds /
  // simulated_op_seconds), its mean over the samples that use the same
  // number of devices, fewest devices first; empty where no op times
  // were measured.
  struct OpTimeRatio {
    int devices = 0;
    int samples = 0;
    double mean_ratio = 0;
  };
  std::vector<OpTimeRatio> op_time_ratios;
  // `stats` with FidelityOptions::compare_cost's simulated times, over the
  // samples feasible in both simulations and measured. count 0 without it.
  FidelityStats compared;
  // With FidelityOptions::calibrate_links: the fit, and `stats` with the
  // uncalibrated simulated times. Empty and count 0 without it.
  std::optional<LinkCalibration> calibration;
  FidelityStats uncalibrated;
  double wall_seconds = 0;
};

// Simulates every placement of FidelityPlacements and measures each in
// options.rounds passes. Errors: rounds < 1, the environment's (another
// graph or cluster than the problem's, say), or fewer than two placements
// feasible on both sides.
// REQUIRES: `measured` evaluates problem.graph on problem.cluster.
StatusOr<FidelityReport> RunFidelity(const PlacementProblem& problem,
                                     Environment* measured,
                                     const FidelityOptions& options);

}  // namespace dplace

#endif  // DPLACE_FIDELITY_FIDELITY_H_
