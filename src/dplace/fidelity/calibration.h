// Link calibration: fits the cost the simulator charges per cross-device
// transfer to real runs of the graph.
//
//   LinkCalibrationOptions options;
//   StatusOr<LinkCalibration> c =
//       CalibrateLinks(problem, profile, measured_env.get(), options);
//   // c->cluster: problem.cluster with every link latency times
//   // c->latency_scale.
//
// The copy benchmark behind `dplace cluster detect` times copies and
// hand-offs one at a time, between otherwise idle devices; inside a
// training step a cross-device edge can cost more (both devices busy, the
// tensor cold in the consumer's cache). Calibration measures three
// placements of the graph itself in rotating rounds: everything on the
// first device (the reference), a random per-op placement (the one with
// the most cross-device edges, so the one most sensitive to their cost),
// and the reference's topological order cut at 40% between its device and
// another of its host (the split placement). The split placement's ratio
// to the reference gives the host's shared_host_slowdown: what using a
// second device of the machine costs every op (few edges cross the cut). It
// first scales the profile's op times alike so that the reference
// simulates at its measured time (the machine drifts between the profile
// and the rounds). For a slowdown, every link's latency is then scaled by
// one factor, found by bisection, so that the simulated ratio of the
// random placement's step time to the reference's equals the measured
// ratio; the same fit to either half of the rounds bounds what noise does
// to it, and the scale moves from 1 (the benchmark's latencies) only as
// far as all three fits agree. An outer bisection moves the slowdown until
// the split placement's simulated ratio equals its measured one. Ratios
// cancel what the machine's drift does to all placements alike.
//
// The random placement's seed is distinct from every seed `dplace
// fidelity` uses for the same --seed, so a calibrated cluster is validated
// on placements it was not fitted to.
#ifndef DPLACE_FIDELITY_CALIBRATION_H_
#define DPLACE_FIDELITY_CALIBRATION_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/method/method.h"
#include "dplace/util/median.h"  // RoundStatistic
#include "dplace/util/status.h"

namespace dplace {

struct LinkCalibrationOptions {
  // Rounds, each measuring every placement once (in rotating order).
  // Default: 12.
  int rounds = 12;
  // What a placement's timings, all rounds pooled, make its time.
  // Default: the mean of the fastest quarter.
  RoundStatistic statistic = RoundStatistic::kFastestQuarter;
  // Seed of the random per-op placement. Default: 1.
  uint64_t seed = 1;
  // The largest latency a link may be given, seconds. Default: 1 ms.
  double max_latency = 1e-3;
  // Called before each measurement: (index, total).
  std::function<void(int, int)> progress;
};

struct LinkCalibration {
  Placement reference;    // Every op on the first device it may run on.
  Placement calibration;  // Random per op.
  // The reference's topological order cut at 40%, the ops after the cut
  // on another device of the reference device's host; empty when there
  // is none.
  Placement split;
  std::vector<double> reference_rounds;    // Measured, seconds.
  std::vector<double> calibration_rounds;  // Measured, seconds.
  // Per round, its timings (StepTimings: every timed step in real
  // execution, else the round's time), seconds.
  std::vector<std::vector<double>> reference_steps;
  std::vector<std::vector<double>> calibration_steps;
  std::vector<double> split_rounds;  // Measured, seconds; empty without.
  std::vector<std::vector<double>> split_steps;
  // The timings of all rounds, pooled, made one by the statistic.
  double reference_measured = 0;
  double calibration_measured = 0;  // Likewise.
  double split_measured = 0;        // Likewise; 0 without.
  // What every device of the reference device's host has as its
  // shared_host_slowdown in `cluster`: the one (0 to 4) at which the split
  // placement's simulated ratio to the reference, the links fitted with
  // it in place, equals the measured one; without a split placement, the
  // cluster's own.
  double shared_host_slowdown = 0;
  // The profile's op times are multiplied by this so that the reference
  // simulates at its measured time: the machine drifts between the
  // profile and the rounds. 1 for a roofline cost model (no profile).
  double op_time_scale = 1;
  ProfileTable profile;            // The profile given, op times scaled.
  double reference_simulated = 0;  // With `profile`.
  // With `profile` on the problem's cluster, its host's slowdown fitted.
  double calibration_simulated_before = 0;
  double calibration_simulated_after = 0;  // With `cluster`.
  // The scale at which the simulated ratio equals the measured one; 0
  // when even zero latency simulates the calibration placement slower,
  // relative to the reference, than measured (the copies' bytes alone
  // cost more than measured).
  double fitted_scale = 1;
  // The same fit on rounds 1, 3, ... and on rounds 2, 4, ... alone (NaN with
  // one round, or where a half's ratio is out of reach): how much the
  // measurements' noise moves the scale.
  std::array<double, 2> half_scales = {0, 0};
  // What every link latency was multiplied by: the point nearest 1 of
  // the range fitted_scale and half_scales span (a half out of reach
  // counting as the largest scale), so 1 when that range holds 1; with one
  // round, fitted_scale.
  double latency_scale = 1;
  // problem.cluster, its host's slowdown fitted and latencies scaled.
  Cluster cluster;
};

// The seed of the random per-op placement for `seed`.
uint64_t CalibrationPlacementSeed(uint64_t seed);

// Errors: rounds < 1, a cluster without links, either placement infeasible
// (measured or simulated), or a measured ratio the simulator does not reach
// even at options.max_latency.
// REQUIRES: `measured` evaluates problem.graph on problem.cluster;
// problem.cost was made from `profile`.
StatusOr<LinkCalibration> CalibrateLinks(const PlacementProblem& problem,
                                         const ProfileTable& profile,
                                         Environment* measured,
                                         const LinkCalibrationOptions& options);

// CalibrateLinks in parts, for measuring its placements among others
// (`dplace fidelity --calibrate-links`). CalibrationPlacements: the
// reference, calibration and split placements, rounds empty; errors: a
// cluster without a link latency to scale. CalibrationPlacementCount: 3,
// or 2 without a split placement. CalibrationPlacementName: how progress
// and errors name them (i = 0: the reference, 1: the calibration
// placement, 2: the split one). MeasureCalibrationPlacement: measures
// placement i once and adds its step time and timings to its rounds;
// errors: the environment's, an infeasible measurement.
// FitLinkCalibration: given every placement's rounds (as many of each),
// everything else, with options.statistic (over
// each half's pooled timings) and options.max_latency; errors as
// CalibrateLinks'.
StatusOr<LinkCalibration> CalibrationPlacements(const PlacementProblem& problem,
                                                uint64_t seed);
int CalibrationPlacementCount(const LinkCalibration& calibration);
std::string CalibrationPlacementName(int i);
Status MeasureCalibrationPlacement(Environment* measured, int i,
                                   LinkCalibration* calibration);
Status FitLinkCalibration(const PlacementProblem& problem,
                          const ProfileTable& profile,
                          const LinkCalibrationOptions& options,
                          LinkCalibration* calibration);

// `cluster` with every link's latency and hand-off multiplied by `scale`
// (>= 0): what a cross-device edge costs beyond its bytes.
StatusOr<Cluster> ScaleLinkLatencies(const Cluster& cluster, double scale);

// `cluster` with shared_host_slowdown `slowdown` (>= 0) on every device of
// `host`.
StatusOr<Cluster> WithSharedHostSlowdown(const Cluster& cluster,
                                         const std::string& host,
                                         double slowdown);

}  // namespace dplace

#endif  // DPLACE_FIDELITY_CALIBRATION_H_
