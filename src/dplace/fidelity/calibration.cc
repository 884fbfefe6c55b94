#include "dplace/fidelity/calibration.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "dplace/fidelity/fidelity.h"  // RandomPlacement
#include "dplace/sim/simulator.h"

namespace dplace {

uint64_t CalibrationPlacementSeed(uint64_t seed) {
  // RunFidelity draws seed * 1000003 + k for its k-th random placement;
  // this lies between seed's and seed + 1's draws.
  return seed * 1000003 + 1000002;
}

namespace {

// `cluster` rebuilt with `host`'s devices given `slowdown` (none when
// `host` is null) and every link's latency and hand-off times
// `link_scale`.
StatusOr<Cluster> Rebuilt(const Cluster& cluster, const std::string* host,
                          double slowdown, double link_scale) {
  ClusterBuilder builder(cluster.name());
  for (Device device : cluster.devices()) {
    if (host != nullptr && device.host == *host) {
      device.shared_host_slowdown = slowdown;
    }
    builder.AddDevice(std::move(device));
  }
  for (LinkId l = 0; l < cluster.num_links(); ++l) {
    const Link& link = cluster.link(l);
    builder.AddLink(cluster.device(link.from).name,
                    cluster.device(link.to).name, link.bandwidth,
                    link.latency * link_scale, /*bidirectional=*/false,
                    link.copier, link.hand_off * link_scale);
  }
  return std::move(builder).Build();
}

}  // namespace

StatusOr<Cluster> ScaleLinkLatencies(const Cluster& cluster, double scale) {
  if (!(scale >= 0) || !std::isfinite(scale)) {
    return InvalidArgumentError("latency scale must be >= 0, got " +
                                std::to_string(scale));
  }
  return Rebuilt(cluster, nullptr, 0, scale);
}

StatusOr<Cluster> WithSharedHostSlowdown(const Cluster& cluster,
                                         const std::string& host,
                                         double slowdown) {
  if (!(slowdown >= 0) || !std::isfinite(slowdown)) {
    return InvalidArgumentError("shared-host slowdown must be >= 0, got " +
                                std::to_string(slowdown));
  }
  return Rebuilt(cluster, &host, slowdown, 1.0);
}

namespace {

// Calibration placement i's placement, step times per round and timings
// per round (0: the reference, 1: the random one, 2: the split one).
Placement& PlacementOf(LinkCalibration& c, int i) {
  return i == 0 ? c.reference : i == 1 ? c.calibration : c.split;
}
std::vector<double>& RoundsOf(LinkCalibration& c, int i) {
  return i == 0   ? c.reference_rounds
         : i == 1 ? c.calibration_rounds
                  : c.split_rounds;
}
std::vector<std::vector<double>>& StepsOf(LinkCalibration& c, int i) {
  return i == 0   ? c.reference_steps
         : i == 1 ? c.calibration_steps
                  : c.split_steps;
}

// The step time of `placement` simulated on `cluster` with the profile's op
// times; an error when infeasible.
StatusOr<double> SimulateOn(const Graph& graph, const Cluster& cluster,
                            const ProfileTable& profile,
                            const Placement& placement,
                            const std::string& what) {
  const CostModel cost(graph, cluster, profile);
  Simulator simulator(cost);
  SimOptions options;
  options.compute_bounds = false;
  StatusOr<SimResult> result = simulator.Simulate(placement, options);
  if (!result.ok()) return result.status().WithPrefix(what);
  if (!result->feasible) {
    return InfeasibleError(what + " is infeasible in the simulator: " +
                           DescribeInfeasibility(cluster, *result));
  }
  return result->step_time;
}

// The largest link latency of `cluster`, seconds; 0 without links.
double MaxLinkLatency(const Cluster& cluster) {
  double max_latency = 0;
  for (LinkId l = 0; l < cluster.num_links(); ++l) {
    max_latency = std::max(max_latency, cluster.link(l).latency);
  }
  return max_latency;
}

Status NoLatencyToScale(const Cluster& cluster) {
  return InvalidArgumentError(
      "calibration: cluster " + cluster.name() +
      " has no link with a latency to scale (it needs two devices or more, "
      "and a latency above 0)");
}

// Fits c->latency_scale (with fitted_scale, half_scales, the simulated
// times and c->cluster) on `cluster`, given the calibration placement's
// measured ratio to the reference over all rounds (`target`) and over
// either half (`half_targets`, with `halves`).
Status FitLatencyScale(const Graph& graph, const Cluster& cluster,
                       const ProfileTable& profile,
                       const LinkCalibrationOptions& options, double target,
                       bool halves, const std::array<double, 2>& half_targets,
                       LinkCalibration* c) {
  const double max_latency = MaxLinkLatency(cluster);
  DPLACE_ASSIGN_OR_RETURN(
      c->reference_simulated,
      SimulateOn(graph, cluster, profile, c->reference,
                 "calibration: " + CalibrationPlacementName(0)));
  // The simulated ratio with every latency scaled by `scale`.
  auto ratio = [&](double scale, double* step_time) -> Status {
    DPLACE_ASSIGN_OR_RETURN(Cluster scaled, ScaleLinkLatencies(cluster, scale));
    DPLACE_ASSIGN_OR_RETURN(
        *step_time, SimulateOn(graph, scaled, profile, c->calibration,
                               "calibration: " + CalibrationPlacementName(1)));
    return Status::Ok();
  };
  DPLACE_RETURN_IF_ERROR(ratio(1.0, &c->calibration_simulated_before));
  const double max_scale = options.max_latency / max_latency;
  double at_zero = 0, at_max = 0;
  DPLACE_RETURN_IF_ERROR(ratio(0, &at_zero));
  DPLACE_RETURN_IF_ERROR(ratio(max_scale, &at_max));
  // The scale at which the simulated ratio reaches `wanted`: 0 when it
  // does at zero latency, NaN when not even at max_scale.
  auto fit = [&](double wanted, double* scale) -> Status {
    if (at_max / c->reference_simulated < wanted) {
      *scale = std::nan("");
      return Status::Ok();
    }
    double lo = 0, hi = max_scale;
    if (at_zero / c->reference_simulated >= wanted) hi = 0;
    // The simulated step time grows with the latency; 40 halvings leave
    // the scale exact to far below the measurements' noise.
    for (int i = 0; i < 40 && hi > 0; ++i) {
      const double mid = (lo + hi) / 2;
      double at_mid = 0;
      DPLACE_RETURN_IF_ERROR(ratio(mid, &at_mid));
      (at_mid / c->reference_simulated < wanted ? lo : hi) = mid;
    }
    *scale = hi;
    return Status::Ok();
  };
  DPLACE_RETURN_IF_ERROR(fit(target, &c->fitted_scale));
  if (std::isnan(c->fitted_scale)) {
    return InfeasibleError(
        "calibration: measured, the random per-op placement takes " +
        std::to_string(target) +
        "x the reference's step time; the simulator gives it less even "
        "with link latencies of " +
        std::to_string(options.max_latency * 1e6) + " us");
  }
  // The same fit on rounds 1, 3, ... and on rounds 2, 4, ...: how far
  // the noise of the measurements moves the scale.
  c->half_scales = {std::nan(""), std::nan("")};
  if (halves) {
    for (int h = 0; h < 2; ++h) {
      DPLACE_RETURN_IF_ERROR(fit(half_targets[h], &c->half_scales[h]));
    }
  }
  // Move from the benchmarked latencies (scale 1) only as far as the fit
  // to all rounds and the fits to either half agree: where the noise
  // leaves a link's cost undetermined (a model whose steps hardly depend
  // on it), the benchmark stands.
  double low = c->fitted_scale, high = c->fitted_scale;
  if (halves) {
    for (double half : c->half_scales) {
      low = std::min(low, std::isnan(half) ? max_scale : half);
      high = std::max(high, std::isnan(half) ? max_scale : half);
    }
  }
  c->latency_scale = low > 1 ? low : high < 1 ? high : 1.0;
  DPLACE_ASSIGN_OR_RETURN(c->cluster,
                          ScaleLinkLatencies(cluster, c->latency_scale));
  return ratio(c->latency_scale, &c->calibration_simulated_after);
}

}  // namespace

StatusOr<LinkCalibration> CalibrationPlacements(const PlacementProblem& problem,
                                                uint64_t seed) {
  const Graph& graph = *problem.graph;
  const Cluster& cluster = *problem.cluster;
  if (MaxLinkLatency(cluster) <= 0) return NoLatencyToScale(cluster);
  LinkCalibration c;
  c.reference.assign(graph.num_ops(), 0);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
      if (graph.allowed_devices(op).Contains(cluster.device(d).kind)) {
        c.reference[op] = d;
        break;
      }
    }
  }
  c.calibration = RandomPlacement(graph, cluster, /*per_group=*/false,
                                  CalibrationPlacementSeed(seed));
  // The split placement: the reference's topological order cut at 40%
  // (the samples of `dplace fidelity` cut at 25, 50 and 75%), the ops
  // after the cut on the next device of the reference device's host that
  // may run them. Few edges cross the cut, so its time over the
  // reference's is mostly what the two devices do to each other's ops.
  const DeviceId home = graph.num_ops() > 0 ? c.reference[0] : 0;
  DeviceId to = -1;
  for (DeviceId d = 0; d < cluster.num_devices() && to < 0; ++d) {
    if (d != home && cluster.device(d).host == cluster.device(home).host) {
      to = d;
    }
  }
  if (to >= 0) {
    const std::vector<OpId>& topo = graph.topological_order();
    Placement split = c.reference;
    bool moved = false;
    for (size_t i = topo.size() * 2 / 5; i < topo.size(); ++i) {
      if (split[topo[i]] == home &&
          graph.allowed_devices(topo[i]).Contains(cluster.device(to).kind)) {
        split[topo[i]] = to;
        moved = true;
      }
    }
    if (moved) c.split = std::move(split);
  }
  c.shared_host_slowdown = cluster.device(home).shared_host_slowdown;
  return c;
}

int CalibrationPlacementCount(const LinkCalibration& calibration) {
  return calibration.split.empty() ? 2 : 3;
}

std::string CalibrationPlacementName(int i) {
  return i == 0   ? "the reference placement (all on one device)"
         : i == 1 ? "the calibration placement (random per op)"
                  : "the split placement (cut at 40% of the ops)";
}

Status MeasureCalibrationPlacement(Environment* measured, int i,
                                   LinkCalibration* calibration) {
  StatusOr<std::vector<Measurement>> m =
      measured->Evaluate({PlacementOf(*calibration, i)});
  if (!m.ok()) return m.status().WithPrefix("calibration");
  if (!(*m)[0].feasible) {
    return InfeasibleError("calibration: " + CalibrationPlacementName(i) +
                           " is infeasible: " + (*m)[0].infeasible_reason);
  }
  RoundsOf(*calibration, i).push_back((*m)[0].step_time);
  StepsOf(*calibration, i).push_back(StepTimings((*m)[0]));
  return Status::Ok();
}

StatusOr<LinkCalibration> CalibrateLinks(
    const PlacementProblem& problem, const ProfileTable& profile,
    Environment* measured, const LinkCalibrationOptions& options) {
  if (options.rounds < 1) {
    return InvalidArgumentError("calibration: rounds must be >= 1, got " +
                                std::to_string(options.rounds));
  }
  DPLACE_ASSIGN_OR_RETURN(LinkCalibration c,
                          CalibrationPlacements(problem, options.seed));
  // Rotating order, so that no placement always follows another.
  const int count = CalibrationPlacementCount(c);
  for (int r = 0; r < options.rounds; ++r) {
    for (int k = 0; k < count; ++k) {
      if (options.progress) {
        options.progress(count * r + k, count * options.rounds);
      }
      DPLACE_RETURN_IF_ERROR(
          MeasureCalibrationPlacement(measured, (r + k) % count, &c));
    }
  }
  DPLACE_RETURN_IF_ERROR(FitLinkCalibration(problem, profile, options, &c));
  return c;
}

Status FitLinkCalibration(const PlacementProblem& problem,
                          const ProfileTable& given_profile,
                          const LinkCalibrationOptions& options,
                          LinkCalibration* calibration) {
  LinkCalibration& c = *calibration;
  const Graph& graph = *problem.graph;
  const Cluster& base = *problem.cluster;
  const int num_rounds = static_cast<int>(c.reference_steps.size());
  if (num_rounds < 1 ||
      c.calibration_steps.size() != c.reference_steps.size() ||
      (!c.split.empty() && c.split_steps.size() != c.reference_steps.size())) {
    return InvalidArgumentError(
        "calibration: expected as many rounds of every placement, at least "
        "one");
  }
  const double max_latency = MaxLinkLatency(base);
  if (max_latency <= 0) return NoLatencyToScale(base);
  // Placement i's timings in every other round from r0 (or every round
  // for step 1), pooled and made one by the statistic.
  auto pooled = [&](int i, int r0, int step) {
    std::vector<double> times;
    for (int r = r0; r < num_rounds; r += step) {
      const std::vector<double>& round = StepsOf(c, i)[r];
      times.insert(times.end(), round.begin(), round.end());
    }
    return OfRounds(std::move(times), options.statistic);
  };
  c.reference_measured = pooled(0, 0, 1);
  c.calibration_measured = pooled(1, 0, 1);
  // The profile's drift first: every op time scaled alike so that the
  // reference (one device, no links) simulates at its measured time.
  c.profile = given_profile;
  c.op_time_scale = 1;
  if (!given_profile.empty()) {
    DPLACE_ASSIGN_OR_RETURN(
        double unscaled,
        SimulateOn(graph, base, given_profile, c.reference,
                   "calibration: " + CalibrationPlacementName(0)));
    c.op_time_scale = c.reference_measured / unscaled;
    for (auto* table : {&c.profile.by_name, &c.profile.by_type}) {
      for (auto& [name, times] : *table) {
        for (auto& [kind, seconds] : times) seconds *= c.op_time_scale;
      }
    }
  }
  const ProfileTable& profile = c.profile;
  const double target = c.calibration_measured / c.reference_measured;
  const bool halves = num_rounds >= 2;
  std::array<double, 2> half_targets = {std::nan(""), std::nan("")};
  if (halves) {
    for (int h = 0; h < 2; ++h) {
      half_targets[h] = pooled(1, h, 2) / pooled(0, h, 2);
    }
  }
  const std::string& host =
      base.device(c.reference.empty() ? 0 : c.reference[0]).host;
  auto fit_links = [&]() -> Status {
    DPLACE_ASSIGN_OR_RETURN(
        Cluster slowed,
        WithSharedHostSlowdown(base, host, c.shared_host_slowdown));
    return FitLatencyScale(graph, slowed, profile, options, target, halves,
                           half_targets, &c);
  };
  if (c.split.empty()) return fit_links();
  // The slowdown and the links together: for a slowdown, the links fitted
  // to the random placement with it in place, and then the split
  // placement's simulated ratio to the reference, which the slowdown
  // raises (its few cut edges cost little); bisection finds the slowdown
  // (0 to 4) at which that ratio equals the measured one. Where the links
  // cannot be fitted (the random placement measured slower than any
  // latency simulates it), the slowdown is too small.
  c.split_measured = pooled(2, 0, 1);
  const double wanted = c.split_measured / c.reference_measured;
  const std::string what = "calibration: " + CalibrationPlacementName(2);
  // 1: the split placement's ratio reaches `wanted` at `slowdown`; 0: not;
  // an error otherwise.
  auto reaches = [&](double slowdown) -> StatusOr<bool> {
    c.shared_host_slowdown = slowdown;
    Status fitted = fit_links();
    if (fitted.code() == StatusCode::kInfeasible) return false;
    if (!fitted.ok()) return fitted;
    DPLACE_ASSIGN_OR_RETURN(
        double split, SimulateOn(graph, c.cluster, profile, c.split, what));
    return split / c.reference_simulated >= wanted;
  };
  double lo = 0, hi = 4;
  DPLACE_ASSIGN_OR_RETURN(bool at_zero, reaches(0));
  if (!at_zero) {
    for (int i = 0; i < 30; ++i) {
      const double mid = (lo + hi) / 2;
      DPLACE_ASSIGN_OR_RETURN(bool r, reaches(mid));
      (r ? hi : lo) = mid;
    }
  } else {
    hi = 0;
  }
  c.shared_host_slowdown = hi;
  return fit_links();
}

}  // namespace dplace
