// Small learning problems whose optimum is known (found by enumerating
// every op placement), shared by the agents' learning tests.
#ifndef DPLACE_TESTING_AGENT_TEST_PROBLEMS_H_
#define DPLACE_TESTING_AGENT_TEST_PROBLEMS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
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

inline StatusOr<PlaceResult> RunSearch(const Problem& problem,
                                       const std::string& agent_name,
                                       std::vector<std::string> options,
                                       const SearchOptions& search,
                                       uint64_t seed = 1) {
  DPLACE_ASSIGN_OR_RETURN(MethodOptions parsed, MethodOptions::Parse(options));
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> agent,
                          MakeMethod(agent_name, parsed));
  auto env = NewSimulatedEnvironment(*problem.cost, 1);
  PlaceContext context;
  context.environment = env.get();
  context.search = search;
  return agent->Place(problem.Get(seed), context);
}

// Runs `samples` samples of `agent` on `problem`; then the same search
// writing `checkpoint_path` every `checkpoint_every` updates, killed once
// it reaches `kill_at` samples; then a search resumed from that checkpoint,
// which must end exactly where the uninterrupted one did: same samples,
// updates, best placement and step time of every sample.
inline void ExpectKilledSearchResumesToTheSameEnd(
    const Problem& problem, const std::string& agent,
    const std::vector<std::string>& options, int64_t samples, int64_t kill_at,
    const std::string& checkpoint_path, int checkpoint_every) {
  SCOPED_TRACE(agent + " " + ::testing::PrintToString(options));
  SearchOptions full;
  full.budget.samples = samples;
  StatusOr<PlaceResult> a = RunSearch(problem, agent, options, full);
  ASSERT_TRUE(a.ok()) << a.status().message();

  SearchOptions killed = full;
  killed.checkpoint_path = checkpoint_path;
  killed.checkpoint_every = checkpoint_every;
  killed.progress = [kill_at](const SearchProgress& p) {
    if (p.samples >= kill_at) throw std::runtime_error("killed");
  };
  EXPECT_THROW((void)RunSearch(problem, agent, options, killed),
               std::runtime_error);
  SearchOptions resumed = full;
  resumed.resume_path = checkpoint_path;
  StatusOr<PlaceResult> b = RunSearch(problem, agent, options, resumed);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_GT(b->search.first_sample_of_this_run, 0);
  EXPECT_EQ(b->search.samples, a->search.samples);
  EXPECT_EQ(b->search.updates, a->search.updates);
  EXPECT_EQ(b->placement, a->placement);
  const size_t offset = b->search.first_sample_of_this_run;
  ASSERT_EQ(a->search.history.size(), offset + b->search.history.size());
  for (size_t i = 0; i < b->search.history.size(); ++i) {
    EXPECT_EQ(a->search.history[offset + i].step_time,
              b->search.history[i].step_time)
        << "sample " << offset + i;
  }
}

}  // namespace testing_problems
}  // namespace dplace

#endif  // DPLACE_TESTING_AGENT_TEST_PROBLEMS_H_
