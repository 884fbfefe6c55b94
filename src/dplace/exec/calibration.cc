#include "dplace/exec/calibration.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "dplace/sim/simulator.h"

namespace dplace {

uint64_t CalibrationPlacementSeed(uint64_t seed) {
  // RunFidelity draws seed * 1000003 + k for its k-th random placement;
  // this lies between seed's and seed + 1's draws.
  return seed * 1000003 + 1000002;
}

StatusOr<Cluster> ScaleLinkLatencies(const Cluster& cluster, double scale) {
  if (!(scale >= 0) || !std::isfinite(scale)) {
    return InvalidArgumentError("latency scale must be >= 0, got " +
                                std::to_string(scale));
  }
  ClusterBuilder builder(cluster.name());
  for (const Device& device : cluster.devices()) builder.AddDevice(device);
  for (LinkId l = 0; l < cluster.num_links(); ++l) {
    const Link& link = cluster.link(l);
    builder.AddLink(cluster.device(link.from).name,
                    cluster.device(link.to).name, link.bandwidth,
                    link.latency * scale, /*bidirectional=*/false, link.copier);
  }
  return std::move(builder).Build();
}

namespace {

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

}  // namespace

StatusOr<LinkCalibration> CalibrateLinks(
    const PlacementProblem& problem, const ProfileTable& profile,
    Environment* measured, const LinkCalibrationOptions& options) {
  if (options.rounds < 1) {
    return InvalidArgumentError("calibration: rounds must be >= 1, got " +
                                std::to_string(options.rounds));
  }
  const Graph& graph = *problem.graph;
  const Cluster& cluster = *problem.cluster;
  double max_latency = 0;
  for (LinkId l = 0; l < cluster.num_links(); ++l) {
    max_latency = std::max(max_latency, cluster.link(l).latency);
  }
  if (cluster.num_links() == 0 || max_latency <= 0) {
    return InvalidArgumentError(
        "calibration: cluster " + cluster.name() +
        " has no link with a latency to calibrate (it needs two devices "
        "or more)");
  }
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
                                  CalibrationPlacementSeed(options.seed));

  // Alternating order, so that neither placement always follows the other.
  const Placement* placements[2] = {&c.reference, &c.calibration};
  std::vector<double>* rounds[2] = {&c.reference_rounds, &c.calibration_rounds};
  const char* names[2] = {"the reference placement (all on one device)",
                          "the calibration placement (random per op)"};
  for (int r = 0; r < options.rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      const int i = (r + k) % 2;
      if (options.progress) options.progress(2 * r + k, 2 * options.rounds);
      StatusOr<std::vector<Measurement>> m =
          measured->Evaluate({*placements[i]});
      if (!m.ok()) return m.status().WithPrefix("calibration");
      if (!(*m)[0].feasible) {
        return InfeasibleError(std::string("calibration: ") + names[i] +
                               " is infeasible: " + (*m)[0].infeasible_reason);
      }
      rounds[i]->push_back((*m)[0].step_time);
    }
  }
  c.reference_measured = OfRounds(c.reference_rounds, options.statistic);
  c.calibration_measured = OfRounds(c.calibration_rounds, options.statistic);
  const double target = c.calibration_measured / c.reference_measured;

  StatusOr<double> reference =
      SimulateOn(graph, cluster, profile, c.reference,
                 std::string("calibration: ") + names[0]);
  if (!reference.ok()) return reference.status();
  c.reference_simulated = *reference;
  // The simulated ratio with every latency scaled by `scale`.
  auto ratio = [&](double scale, double* step_time) -> Status {
    StatusOr<Cluster> scaled = ScaleLinkLatencies(cluster, scale);
    if (!scaled.ok()) return scaled.status();
    StatusOr<double> t = SimulateOn(graph, *scaled, profile, c.calibration,
                                    std::string("calibration: ") + names[1]);
    if (!t.ok()) return t.status();
    *step_time = *t;
    return Status::Ok();
  };
  Status s = ratio(1.0, &c.calibration_simulated_before);
  if (!s.ok()) return s;
  double lo = 0, hi = options.max_latency / max_latency, at_lo = 0, at_hi = 0;
  if (s = ratio(lo, &at_lo); !s.ok()) return s;
  if (s = ratio(hi, &at_hi); !s.ok()) return s;
  if (at_hi / c.reference_simulated < target) {
    return InfeasibleError(
        "calibration: measured, the random per-op placement takes " +
        std::to_string(target) +
        "x the reference's step time; the simulator gives it less even "
        "with link latencies of " +
        std::to_string(options.max_latency * 1e6) + " us");
  }
  if (at_lo / c.reference_simulated >= target) {
    hi = 0;
  } else {
    // The simulated step time grows with the latency; 40 halvings leave
    // the scale exact to far below the measurements' noise.
    for (int i = 0; i < 40; ++i) {
      const double mid = (lo + hi) / 2;
      double at_mid = 0;
      if (s = ratio(mid, &at_mid); !s.ok()) return s;
      (at_mid / c.reference_simulated < target ? lo : hi) = mid;
    }
  }
  c.latency_scale = hi;
  StatusOr<Cluster> calibrated = ScaleLinkLatencies(cluster, c.latency_scale);
  if (!calibrated.ok()) return calibrated.status();
  c.cluster = std::move(calibrated).value();
  if (s = ratio(c.latency_scale, &c.calibration_simulated_after); !s.ok()) {
    return s;
  }
  return c;
}

}  // namespace dplace
