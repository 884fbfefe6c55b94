// Properties over random DAGs, clusters and placements: the simulated step
// is never faster than any lower bound nor slower than running everything
// one after another; peak memory is at least the persistent bytes; results
// are deterministic; memory accounting returns to the weights at the end
// (Simulate() checks that and fails otherwise). An incremental run equals a
// full one, field for field, over thousands of random moves.
#include <gtest/gtest.h>

#include <random>

#include "dplace/graph/random_graph.h"
#include "dplace/sim/simulator.h"
#include "dplace/sim/work_bound.h"

namespace dplace {
namespace {

// A random cluster of 1 CPU and 1-4 GPUs: random speeds, slots and memory;
// GPUs linked in a line or a star through the CPU or all to all, so routes
// of one and several hops both occur.
Cluster RandomCluster(std::mt19937_64& rng, double cpu_slowdown = 0) {
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
             std::uniform_int_distribution<int>(1, 3)(rng),
             cpu_slowdown};
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

// A layered random DAG of `min_ops` to `max_ops` ops, of random width,
// reach and sizes.
Graph RandomDag(std::mt19937_64& rng, int min_ops, int max_ops) {
  RandomGraphOptions o;
  o.num_ops = std::uniform_int_distribution<int>(min_ops, max_ops)(rng);
  o.layer_width = std::uniform_int_distribution<int>(1, 8)(rng);
  o.max_reach = std::uniform_int_distribution<int>(1, 4)(rng);
  o.max_flops = 1e10;
  o.max_tensor_bytes = int64_t{1} << 26;
  o.max_persistent_bytes = int64_t{1} << 27;
  o.seed = rng();
  return MakeRandomLayeredGraph(o);
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
    const Graph g = RandomDag(rng, 1, 80);
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
    EXPECT_LE(t, SerialStepBound(cost) * (1 + 1e-9));

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

void ExpectSameResult(const SimResult& full, const SimResult& inc) {
  EXPECT_EQ(inc.step_time, full.step_time);
  EXPECT_EQ(inc.feasible, full.feasible);
  EXPECT_EQ(inc.oom_device, full.oom_device);
  EXPECT_EQ(inc.device_peak_bytes, full.device_peak_bytes);
  EXPECT_EQ(inc.device_busy_seconds, full.device_busy_seconds);
  EXPECT_EQ(inc.device_op_count, full.device_op_count);
  EXPECT_EQ(inc.link_bytes, full.link_bytes);
  EXPECT_EQ(inc.events, full.events);
  EXPECT_EQ(inc.bounds.device_load, full.bounds.device_load);
  EXPECT_EQ(inc.bounds.link_volume, full.bounds.link_volume);
  EXPECT_EQ(inc.bounds.placed_critical_path, full.bounds.placed_critical_path);
}

// A walk of random moves, as a local search makes them: each move puts one
// op, or a few, on another allowed device; some are undone (a rejected
// proposal). Every placement is simulated incrementally by one simulator
// and from scratch by another; the results are equal field for field. One
// run in four is without the bounds, so that runs with them resume from
// snapshots a run without them took.
TEST(SimulatorPropertyTest, IncrementalRunsEqualFullRunsOnRandomMoves) {
  std::mt19937_64 rng(20261126);
  constexpr int kCases = 400, kMovesPerCase = 25;
  int moves = 0, resumed = 0, infeasible = 0;
  int64_t events = 0, reused = 0;
  for (int i = 0; i < kCases; ++i) {
    const Graph g = RandomDag(rng, 2, 120);
    // One case in four slows the CPU when a GPU of its host is also used.
    const Cluster c = RandomCluster(rng, i % 4 == 0 ? 0.5 : 0.0);
    const CostModel cost(g, c);
    Simulator inc(cost), full(cost);
    Placement p = MakeRandomPlacement(g, c, rng());
    SimOptions incremental;
    incremental.incremental = true;
    SCOPED_TRACE("case " + std::to_string(i) + ": " + g.name());
    ASSERT_TRUE(inc.Simulate(p, incremental).ok());
    for (int m = 0; m < kMovesPerCase; ++m) {
      const Placement before = p;
      const int count = rng() % 4 == 0 ? 3 : 1;
      for (int k = 0; k < count; ++k) {
        const OpId op =
            std::uniform_int_distribution<OpId>(0, g.num_ops() - 1)(rng);
        std::vector<DeviceId> allowed;
        for (DeviceId d = 0; d < c.num_devices(); ++d) {
          if (g.allowed_devices(op).Contains(c.device(d).kind)) {
            allowed.push_back(d);
          }
        }
        p[op] = allowed[rng() % allowed.size()];
      }
      SimOptions options;
      options.compute_bounds = rng() % 4 != 0;
      incremental.compute_bounds = options.compute_bounds;
      StatusOr<SimResult> a = full.Simulate(p, options);
      StatusOr<SimResult> b = inc.Simulate(p, incremental);
      ASSERT_TRUE(a.ok() && b.ok());
      SCOPED_TRACE("move " + std::to_string(m));
      ExpectSameResult(*a, *b);
      ++moves;
      resumed += b->reused_events > 0;
      infeasible += !b->feasible;
      events += b->events;
      reused += b->reused_events;
      if (rng() % 3 == 0) p = before;  // Rejected: the next move starts here.
    }
  }
  EXPECT_EQ(moves, 10000);
  // The incremental path is taken, and the cases cover infeasible steps.
  EXPECT_GT(resumed, moves / 2);
  EXPECT_GT(reused, events / 10);
  EXPECT_GT(infeasible, 0);
}

}  // namespace
}  // namespace dplace
