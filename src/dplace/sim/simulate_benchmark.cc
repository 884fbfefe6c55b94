// Times one full simulation of a training step: layered random DAGs of 10k,
// 50k and 100k ops on k80x4 (4 GPUs + CPU), single-threaded. Reports
// nanoseconds per op (target: <= 200 ns/op, i.e. <= 10 ms for 50k ops).
//
// Two placements: random (most edges cross devices: the worst case for
// transfers and link queues) and contiguous blocks of layers per GPU (what
// good placements look like).
//
//   build/simulate_benchmark --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "dplace/graph/random_graph.h"
#include "dplace/sim/simulator.h"

namespace dplace {
namespace {

struct Problem {
  Graph graph;
  Cluster cluster;
};

const Problem& GetProblem(int num_ops) {
  static std::map<int, std::unique_ptr<Problem>> cache;
  auto& p = cache[num_ops];
  if (!p) {
    RandomGraphOptions o;
    o.num_ops = num_ops;
    o.layer_width = 50;
    o.max_reach = 2;
    o.max_inputs = 3;
    o.max_persistent_bytes = 1 << 20;
    o.seed = 42;
    p = std::make_unique<Problem>(
        Problem{MakeRandomLayeredGraph(o), *MakeClusterPreset("k80x4")});
  }
  return *p;
}

Placement BlockPlacement(const Graph& g, const Cluster& c) {
  const std::vector<DeviceId> gpus = c.DevicesOfKind(DeviceKind::kGpu);
  const DeviceId cpu = c.DevicesOfKind(DeviceKind::kCpu)[0];
  Placement p(g.num_ops());
  for (OpId op = 0; op < g.num_ops(); ++op) {
    p[op] = g.allowed_devices(op).Contains(DeviceKind::kGpu)
                ? gpus[static_cast<size_t>(op) * gpus.size() / g.num_ops()]
                : cpu;
  }
  return p;
}

void Run(benchmark::State& state, bool random_placement, bool bounds) {
  const Problem& problem = GetProblem(static_cast<int>(state.range(0)));
  const CostModel cost(problem.graph, problem.cluster);
  Simulator sim(cost);
  const Placement placement =
      random_placement ? MakeRandomPlacement(problem.graph, problem.cluster, 7)
                       : BlockPlacement(problem.graph, problem.cluster);
  SimOptions options;
  options.compute_bounds = bounds;
  double step_time = 0;
  for (auto _ : state) {
    StatusOr<SimResult> r = sim.Simulate(placement, options);
    step_time = r->step_time;
  }
  // Seconds of CPU per op: shown as e.g. "180n" (180 ns).
  state.counters["per_op"] = benchmark::Counter(
      problem.graph.num_ops(), benchmark::Counter::kIsIterationInvariantRate |
                                   benchmark::Counter::kInvert);
  state.counters["edges"] = problem.graph.num_edges();
  state.counters["step_s"] = step_time;
}

void BM_SimulateRandomPlacement(benchmark::State& state) {
  Run(state, true, true);
}
void BM_SimulateBlockPlacement(benchmark::State& state) {
  Run(state, false, true);
}
void BM_SimulateRandomPlacementNoBounds(benchmark::State& state) {
  Run(state, true, false);
}

BENCHMARK(BM_SimulateRandomPlacement)
    ->Arg(10000)
    ->Arg(50000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateBlockPlacement)
    ->Arg(10000)
    ->Arg(50000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateRandomPlacementNoBounds)
    ->Arg(10000)
    ->Arg(50000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dplace
