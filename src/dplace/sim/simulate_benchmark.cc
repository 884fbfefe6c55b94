// Times one full simulation of a training step: layered random DAGs of 10k,
// 50k and 100k ops on k80x4 (4 GPUs + CPU), single-threaded. Reports
// nanoseconds per op (target: <= 200 ns/op, i.e. <= 10 ms for 50k ops).
//
// Two placements: random (most edges cross devices: the worst case for
// transfers and link queues) and contiguous blocks of layers per GPU (what
// good placements look like).
//
// Incremental simulation (SimOptions::incremental): a walk of 200 random
// one-group moves (a colocation group to another allowed device, each
// placement one move from the last), simulated in full and incrementally.
// Counters: the median CPU milliseconds per move (median_ms) and the share of
// the step's events an incremental run took over from the last one
// (reused), and the share of moves that resumed from a snapshot (resumed;
// the others moved an op read at the start, a variable, and ran in full). On
// NMT-4 / k40x4 from the expert's placement, and on the 50k-op layered graph
// from the block placement.
//
// Problem bounds: a Simulator's placement-independent bounds, computed on
// first use, on gnmt / p100x4 (54k ops) and nmt / k40x2.
//
// Large clusters: one step of a 50k-op layered graph (ops allowed on GPUs)
// in contiguous blocks over every GPU of a ring of 1,024 or 4,096 GPUs, or of
// a two-level fat tree of 128 or 512 hosts of 8 GPUs (testing/
// large_clusters.h). Counters: setup_s, the seconds to build the cluster, the
// cost model and the simulator; first_ms, the first run's CPU time (it
// computes the routes it uses); per_op as above.
//
//   build/simulate_benchmark --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <memory>
#include <random>

#include "dplace/graph/placement.h"
#include "dplace/graph/random_graph.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/benchmark_problems.h"
#include "dplace/testing/large_clusters.h"

namespace dplace {
namespace {

using testing_problems::BenchmarkProblem;
using testing_problems::RandomBenchmarkProblem;
using testing_problems::ZooBenchmarkProblem;

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
  const BenchmarkProblem& problem =
      RandomBenchmarkProblem(static_cast<int>(state.range(0)));
  Simulator sim(*problem.cost);
  const Placement placement =
      random_placement ? MakeRandomPlacement(problem.graph, problem.cluster, 7)
                       : BlockPlacement(problem.graph, problem.cluster);
  SimOptions options;
  options.compute_bounds = bounds;
  // The placement-independent bounds, computed on first use: not timed.
  if (bounds) (void)sim.critical_path_bound();
  double step_time = 0;
  int64_t events = 0;
  for (auto _ : state) {
    StatusOr<SimResult> r = sim.Simulate(placement, options);
    step_time = r->step_time;
    events = r->events;
  }
  // Seconds of CPU per op: shown as e.g. "180n" (180 ns).
  state.counters["per_op"] = benchmark::Counter(
      problem.graph.num_ops(), benchmark::Counter::kIsIterationInvariantRate |
                                   benchmark::Counter::kInvert);
  state.counters["edges"] = problem.graph.num_edges();
  state.counters["step_s"] = step_time;
  state.counters["events"] = static_cast<double>(events);
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

// The placement-independent bounds of a zoo graph (critical path, total
// work, forced-transfer paths, queued path and work), which a Simulator
// computes on first use: what each Simulator that needs them pays once.
void BM_ProblemBounds(benchmark::State& state, const char* model,
                      const char* cluster) {
  const BenchmarkProblem& p = ZooBenchmarkProblem(model, cluster);
  double bound = 0;
  for (auto _ : state) {
    Simulator sim(*p.cost);
    bound = sim.queued_work_whole_groups_bound();
  }
  state.counters["ops"] = p.graph.num_ops();
  state.counters["bound_s"] = bound;
}
// A problem with a start placement and a walk of one-group moves.
struct Walk {
  const Graph* graph = nullptr;
  const Cluster* cluster = nullptr;
  std::vector<Placement> placements;  // [0] is the start.
};

std::vector<Placement> RandomWalk(const Graph& g, const Cluster& c,
                                  Placement start, int moves) {
  const HintGroups groups = ColocationHintGroups(g);
  std::vector<std::vector<OpId>> ops(groups.num_groups);
  for (OpId op = 0; op < g.num_ops(); ++op) ops[groups.group[op]].push_back(op);
  std::mt19937_64 rng(1);
  std::vector<Placement> walk{start};
  while (static_cast<int>(walk.size()) <= moves) {
    const std::vector<OpId>& group = ops[rng() % ops.size()];
    std::vector<DeviceId> allowed;
    for (DeviceId d = 0; d < c.num_devices(); ++d) {
      bool all = true;
      for (OpId op : group) {
        all = all && g.allowed_devices(op).Contains(c.device(d).kind);
      }
      if (all && d != start[group[0]]) allowed.push_back(d);
    }
    if (allowed.empty()) continue;
    const DeviceId to = allowed[rng() % allowed.size()];
    for (OpId op : group) start[op] = to;
    walk.push_back(start);
  }
  return walk;
}

const Walk& GetWalk(int which) {
  static std::map<int, std::unique_ptr<Walk>> cache;
  auto& w = cache[which];
  if (!w) {
    w = std::make_unique<Walk>();
    const BenchmarkProblem& p =
        which == 0 ? ZooBenchmarkProblem("nmt:layers=4", "k40x4")
                   : RandomBenchmarkProblem(50000);
    w->graph = &p.graph;
    w->cluster = &p.cluster;
    w->placements = RandomWalk(
        p.graph, p.cluster,
        which == 0 ? p.problem.expert() : BlockPlacement(p.graph, p.cluster),
        200);
  }
  return *w;
}

// CPU time of this thread: what one move costs, whatever else the machine
// runs.
double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void BM_OneGroupMoves(benchmark::State& state) {
  const Walk& walk = GetWalk(static_cast<int>(state.range(0)));
  const bool incremental = state.range(1) != 0;
  const CostModel cost(*walk.graph, *walk.cluster);
  Simulator sim(cost);
  SimOptions options;
  options.compute_bounds = false;
  options.incremental = incremental;
  std::vector<double> seconds;
  int64_t events = 0, reused = 0, resumed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    (void)sim.Simulate(walk.placements[0], options);
    state.ResumeTiming();
    for (size_t i = 1; i < walk.placements.size(); ++i) {
      const double start = ThreadCpuSeconds();
      const SimResult r = *sim.Simulate(walk.placements[i], options);
      seconds.push_back(ThreadCpuSeconds() - start);
      events += r.events;
      reused += r.reused_events;
      resumed += r.reused_events > 0;
    }
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2,
                   seconds.end());
  state.counters["median_ms"] = seconds[seconds.size() / 2] * 1e3;
  state.counters["reused"] = static_cast<double>(reused) / events;
  state.counters["resumed"] =
      static_cast<double>(resumed) / static_cast<double>(seconds.size());
  state.SetItemsProcessed(state.iterations() *
                          static_cast<int64_t>(walk.placements.size() - 1));
  state.SetLabel(walk.graph->name() + ", " +
                 std::to_string(walk.graph->num_ops()) + " ops");
}

// A large cluster with the 50k-op graph placed over it (kept between the
// benchmark's calls: building it is what setup_s measures).
struct LargeProblem {
  Cluster cluster;
  Graph graph;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> simulator;
  Placement placement;
  double setup_seconds = 0;
  double first_run_seconds = 0;
};

const LargeProblem& GetLargeProblem(bool fat_tree, int devices) {
  static std::map<std::pair<bool, int>, std::unique_ptr<LargeProblem>> cache;
  auto& p = cache[{fat_tree, devices}];
  if (!p) {
    const double start = ThreadCpuSeconds();
    StatusOr<Cluster> cluster = fat_tree
                                    ? testing_clusters::GpuFatTree(devices / 8)
                                    : testing_clusters::GpuRing(devices);
    p = std::make_unique<LargeProblem>(
        LargeProblem{*std::move(cluster),
                     testing_clusters::GpuGraph(50000),
                     nullptr,
                     nullptr,
                     {},
                     0,
                     0});
    p->cost = std::make_unique<CostModel>(p->graph, p->cluster);
    p->simulator = std::make_unique<Simulator>(*p->cost);
    (void)p->simulator->critical_path_bound();  // Computed on first use.
    p->placement = testing_clusters::BlockPlacement(p->graph, p->cluster);
    p->setup_seconds = ThreadCpuSeconds() - start;
    const double first = ThreadCpuSeconds();
    (void)p->simulator->Simulate(p->placement);
    p->first_run_seconds = ThreadCpuSeconds() - first;
  }
  return *p;
}

void BM_SimulateLargeCluster(benchmark::State& state) {
  const LargeProblem& p =
      GetLargeProblem(state.range(0) != 0, static_cast<int>(state.range(1)));
  double step_time = 0;
  int64_t events = 0;
  for (auto _ : state) {
    StatusOr<SimResult> r = p.simulator->Simulate(p.placement);
    step_time = r->step_time;
    events = r->events;
  }
  state.counters["per_op"] = benchmark::Counter(
      p.graph.num_ops(), benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
  state.counters["links"] = p.cluster.num_links();
  state.counters["setup_s"] = p.setup_seconds;
  state.counters["first_ms"] = p.first_run_seconds * 1e3;
  state.counters["step_s"] = step_time;
  state.counters["events"] = static_cast<double>(events);
}

BENCHMARK(BM_SimulateLargeCluster)
    ->ArgNames({"fat_tree", "devices"})
    ->Args({0, 1024})
    ->Args({0, 4096})
    ->Args({1, 1024})
    ->Args({1, 4096})
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_OneGroupMoves)
    ->ArgNames({"graph", "incremental"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond);

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
BENCHMARK_CAPTURE(BM_ProblemBounds, gnmt_p100x4, "gnmt", "p100x4")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProblemBounds, nmt_k40x2, "nmt", "k40x2")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dplace
