// Small learning problems whose optimum is known (found by enumerating
// every op placement), shared by the agents' learning tests.
#ifndef DPLACE_RL_AGENT_TEST_PROBLEMS_H_
#define DPLACE_RL_AGENT_TEST_PROBLEMS_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "dplace/rl/agent.h"
#include "dplace/sim/simulator.h"

namespace dplace {
namespace testing_problems {

constexpr int64_t kGB = 1000 * 1000 * 1000;

// A graph on k80x2 (cpu:0, gpu:0, gpu:1) with its cost model, and the best
// feasible step time over every op placement.
struct Problem {
  std::unique_ptr<Graph> graph;
  Cluster cluster = *MakeClusterPreset("k80x2");
  std::unique_ptr<CostModel> cost;
  double optimum = 0;

  PlacementProblem Get(uint64_t seed = 1) const {
    PlacementProblem p;
    p.graph = graph.get();
    p.cluster = &cluster;
    p.cost = cost.get();
    p.seed = seed;
    return p;
  }
};

struct ChainOp {
  double flops;
  int64_t output_bytes;
  int64_t persistent_bytes;
};

// Chains of MatMuls; ops of one chain feed each other.
// With `enumerate` false the optimum is left 0 (for graphs too large to
// enumerate).
inline Problem MakeProblem(const std::string& name,
                           const std::vector<std::vector<ChainOp>>& chains,
                           bool enumerate = true) {
  GraphBuilder b(name);
  for (size_t c = 0; c < chains.size(); ++c) {
    OpId previous = -1;
    for (size_t i = 0; i < chains[c].size(); ++i) {
      OpSpec spec;
      spec.name = "chain" + std::to_string(c) + "/op" + std::to_string(i);
      spec.type = "MatMul";
      spec.flops = chains[c][i].flops;
      spec.bytes_accessed = 1;
      spec.persistent_bytes = chains[c][i].persistent_bytes;
      spec.outputs = {
          TensorInfo{{chains[c][i].output_bytes / 4}, DataType::kFloat32, 0}};
      const OpId op = b.AddOp(spec);
      if (previous >= 0) b.AddEdge(previous, 0, op);
      previous = op;
    }
  }
  Problem p;
  p.graph = std::make_unique<Graph>(*std::move(b).Build());
  p.cost = std::make_unique<CostModel>(*p.graph, p.cluster);
  if (!enumerate) return p;
  Simulator sim(*p.cost);
  const int n = p.graph->num_ops(), d = p.cluster.num_devices();
  p.optimum = std::numeric_limits<double>::infinity();
  Placement placement(n, 0);
  for (int64_t code = 0; code < static_cast<int64_t>(std::pow(d, n)); ++code) {
    int64_t rest = code;
    for (int op = 0; op < n; ++op, rest /= d) placement[op] = rest % d;
    const SimResult r = *sim.Simulate(placement);
    if (r.feasible) p.optimum = std::min(p.optimum, r.step_time);
  }
  return p;
}

// Two heavy independent chains: one per GPU halves the step (and a chain
// cut in two pays an 83 ms transfer).
inline Problem TwoChains() {
  const ChainOp op{1e12, kGB, 0};
  return MakeProblem("two_chains", {{op, op, op}, {op, op, op}});
}

// One chain with 2 GB tensors: a transfer costs more than an op, so one GPU
// wins.
inline Problem HeavyTensorChain() {
  const ChainOp op{3e11, 2 * kGB, 0};
  return MakeProblem("heavy_tensors", {{op, op, op, op}});
}

// Four layers of 4 GB weights: one 11.8 GB GPU holds two, so only a split
// over both GPUs fits (the 26 GB CPU holds all, but is 20x slower).
inline Problem OnlySplitFits() {
  const ChainOp op{3e11, kGB, 4 * kGB};
  return MakeProblem("only_split_fits", {{op, op, op, op}});
}

inline StatusOr<SearchResult> RunSearch(const Problem& problem,
                                        const std::string& agent_name,
                                        std::vector<std::string> options,
                                        const SearchOptions& search,
                                        uint64_t seed = 1) {
  StatusOr<PlacerOptions> parsed = PlacerOptions::Parse(options);
  if (!parsed.ok()) return parsed.status();
  StatusOr<std::unique_ptr<Agent>> agent = MakeAgent(agent_name, *parsed);
  if (!agent.ok()) return agent.status();
  auto env = NewSimulatedEnvironment(*problem.cost, 1);
  return (*agent)->Search(problem.Get(seed), env.get(), search);
}

}  // namespace testing_problems
}  // namespace dplace

#endif  // DPLACE_RL_AGENT_TEST_PROBLEMS_H_
