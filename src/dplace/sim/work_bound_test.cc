// The work bound: at least the total work over all slots, never above the
// step of any placement (random problems, every placement simulated), and
// tighter than the total work where a slow device would share it.
#include "dplace/sim/work_bound.h"

#include <gtest/gtest.h>

#include <random>

#include "dplace/graph/random_graph.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/small_dags.h"

namespace dplace {
namespace {

using testing_dags::Dag;
using testing_dags::kGB;

// One GPU (1e12 FLOP/s) and a CPU of `cpu_slots` slots of 1e11 FLOP/s; at
// the cost model's efficiencies for MatMul (0.7 on GPUs, 0.5 on CPUs) a
// slot is 14x slower than the GPU.
Cluster GpuAndCpu(int cpu_slots) {
  ClusterBuilder b("gpu_and_cpu");
  Device cpu;
  cpu.name = "cpu";
  cpu.kind = DeviceKind::kCpu;
  cpu.peak_flops = 1e11 * cpu_slots;
  cpu.memory_bandwidth = 1e15;
  cpu.memory_bytes = 64 * kGB;
  cpu.compute_slots = cpu_slots;
  b.AddDevice(cpu);
  Device gpu = cpu;
  gpu.name = "gpu";
  gpu.kind = DeviceKind::kGpu;
  gpu.peak_flops = 1e12;
  gpu.compute_slots = 1;
  b.AddDevice(gpu);
  b.AddLink("cpu", "gpu", 1e10, 0, true);
  return *std::move(b).Build();
}

// Every step simulated over all placements is at least the bound, and the
// bound is at least the total work.
TEST(WorkBoundTest, BetweenTheTotalWorkAndEveryPlacementsStep) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    RandomGraphOptions o;
    o.num_ops = std::uniform_int_distribution<int>(2, 6)(rng);
    o.layer_width = 3;
    o.max_flops = 1e11;
    o.seed = rng();
    const Graph graph = MakeRandomLayeredGraph(o);
    const Cluster cluster =
        GpuAndCpu(std::uniform_int_distribution<int>(1, 4)(rng));
    const CostModel cost(graph, cluster);
    const double bound = WorkBound(cost);
    double total = 0;
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      total += cost.FastestOpTime(op);
    }
    EXPECT_GE(bound, total / cluster.total_compute_slots() * (1 - 1e-12));
    Simulator simulator(cost);
    Placement p(graph.num_ops(), 0);
    for (;;) {
      bool allowed = true;
      for (OpId op = 0; op < graph.num_ops(); ++op) {
        allowed = allowed && cost.OpTime(op, p[op]) < 1e300;
      }
      if (allowed) {
        ASSERT_GE(simulator.Simulate(p)->step_time, bound * (1 - 1e-9))
            << "trial " << trial;
      }
      int i = 0;
      while (i < graph.num_ops() && ++p[i] == 2) p[i++] = 0;
      if (i == graph.num_ops()) break;
    }
  }
}

// Ten independent 1 s ops (on the GPU) and a CPU of four slots, each 14x
// slower: the total work over five slots says 2 s, but four CPU slots do
// only 4/14 s of GPU work per second, so no split beats 10 / (1 + 4/14) =
// 7.78 s.
TEST(WorkBoundTest, ASlowDeviceCountsForWhatItDoes) {
  Dag dag;
  for (int i = 0; i < 10; ++i) dag.Op("op" + std::to_string(i), 1);
  const Graph graph = std::move(dag).Build();
  const Cluster cluster = GpuAndCpu(4);
  const CostModel cost(graph, cluster);
  EXPECT_NEAR(WorkBound(cost), 10 / (1 + 4.0 / 14), 1e-4);
}

}  // namespace
}  // namespace dplace
