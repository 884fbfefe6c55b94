// Properties over random DAGs, clusters and placements: the simulated step
// is never faster than any lower bound nor slower than running everything
// one after another; peak memory is at least the persistent bytes; results
// are deterministic; memory accounting returns to the weights at the end
// (Simulate() checks that and fails otherwise).
#include <gtest/gtest.h>

#include <random>

#include "dplace/graph/random_graph.h"
#include "dplace/sim/simulator.h"

namespace dplace {
namespace {

// A random cluster of 1 CPU and 1-4 GPUs: random speeds, slots and memory;
// GPUs linked in a line or a star through the CPU or all to all, so routes
// of one and several hops both occur.
Cluster RandomCluster(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> speed(1e11, 1e13);
  std::uniform_real_distribution<double> bandwidth(1e9, 1e11);
  std::uniform_real_distribution<double> latency(0, 2e-5);
  const int gpus = std::uniform_int_distribution<int>(1, 4)(rng);
  const int topology = std::uniform_int_distribution<int>(0, 2)(rng);
  // Copies made by channels, or by the destination's compute slots.
  const Copier copier = rng() % 2 ? Copier::kLink : Copier::kDestination;
  ClusterBuilder b("random");
  Device cpu{"cpu",
             DeviceKind::kCpu,
             "h",
             "",
             speed(rng) / 10,
             5e10,
             int64_t{1} << 36,
             latency(rng),
             std::uniform_int_distribution<int>(1, 3)(rng)};
  b.AddDevice(cpu);
  for (int i = 0; i < gpus; ++i) {
    const std::string name = "gpu" + std::to_string(i);
    b.AddDevice({name, DeviceKind::kGpu, "h", "", speed(rng), 5e11,
                 int64_t{1} << 30, latency(rng), 1});
    if (topology == 0) {  // Star through the CPU.
      b.AddLink("cpu", name, bandwidth(rng), latency(rng), true, copier);
    } else if (topology == 1) {  // Line cpu - gpu0 - gpu1 - ...
      b.AddLink(i == 0 ? "cpu" : "gpu" + std::to_string(i - 1), name,
                bandwidth(rng), latency(rng), true, copier);
    } else {  // All to all, one direction at a time.
      b.AddLink("cpu", name, bandwidth(rng), latency(rng), true, copier);
      for (int j = 0; j < i; ++j) {
        b.AddLink("gpu" + std::to_string(j), name, bandwidth(rng), latency(rng),
                  /*bidirectional=*/false, copier);
        b.AddLink(name, "gpu" + std::to_string(j), bandwidth(rng), latency(rng),
                  /*bidirectional=*/false, copier);
      }
    }
  }
  return *std::move(b).Build();
}

// Running every op and every transfer one after another can only be slower:
// the simulator never idles while work is ready.
double SerialTime(const CostModel& cost, const Placement& p) {
  const Graph& g = cost.graph();
  double total = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) total += cost.OpTime(op, p[op]);
  for (EdgeId e = 0; e < g.num_edges(); ++e) {
    const DeviceId from = p[g.edge_src(e)], to = p[g.edge_dst(e)];
    total += g.is_control(e) ? cost.RouteLatency(from, to)
                             : cost.TransferTime(
                                   g.tensor_bytes(g.edge_tensor(e)), from, to);
  }
  return total;
}

TEST(SimulatorPropertyTest, BoundsHoldOnThousandsOfRandomCases) {
  std::mt19937_64 rng(20261122);
  constexpr int kCases = 1200;
  int infeasible = 0, multi_hop = 0;
  for (int i = 0; i < kCases; ++i) {
    RandomGraphOptions o;
    o.num_ops = std::uniform_int_distribution<int>(1, 80)(rng);
    o.layer_width = std::uniform_int_distribution<int>(1, 8)(rng);
    o.max_reach = std::uniform_int_distribution<int>(1, 4)(rng);
    o.max_flops = 1e10;
    o.max_tensor_bytes = int64_t{1} << 26;
    o.max_persistent_bytes = int64_t{1} << 27;
    o.seed = rng();
    const Graph g = MakeRandomLayeredGraph(o);
    const Cluster c = RandomCluster(rng);
    const CostModel cost(g, c);
    Simulator sim(cost);
    const Placement p = MakeRandomPlacement(g, c, rng());
    SCOPED_TRACE("case " + std::to_string(i) + ": " + g.name());

    StatusOr<SimResult> r = sim.Simulate(p);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const double t = r->step_time;
    const double slack = 1e-9 * t;
    const LowerBounds& b = r->bounds;
    EXPECT_GE(t + slack, b.critical_path);
    EXPECT_GE(t + slack, b.total_work);
    EXPECT_GE(t + slack, b.device_load);
    EXPECT_GE(t + slack, b.link_volume);
    EXPECT_GE(t + slack, b.placed_critical_path);
    EXPECT_LE(t, SerialTime(cost, p) * (1 + 1e-9));

    std::vector<int64_t> persistent(c.num_devices(), 0);
    for (OpId op = 0; op < g.num_ops(); ++op) {
      persistent[p[op]] += g.persistent_bytes(op);
    }
    for (DeviceId d = 0; d < c.num_devices(); ++d) {
      EXPECT_GE(r->device_peak_bytes[d], persistent[d]);
      if (r->device_peak_bytes[d] > c.device(d).memory_bytes) {
        EXPECT_FALSE(r->feasible);
      }
    }
    infeasible += !r->feasible;
    for (OpId op = 0; op < g.num_ops(); ++op) {
      for (EdgeId e : g.out_edges(op)) {
        multi_hop += c.route(p[op], p[g.edge_dst(e)]).size() > 1;
      }
    }

    StatusOr<SimResult> again = sim.Simulate(p);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->step_time, t) << "not deterministic";
    EXPECT_EQ(again->device_peak_bytes, r->device_peak_bytes);
  }
  // The cases exercise what they claim to.
  EXPECT_GT(infeasible, 0);
  EXPECT_LT(infeasible, kCases);
  EXPECT_GT(multi_hop, 0);
}

}  // namespace
}  // namespace dplace
