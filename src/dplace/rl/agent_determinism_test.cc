// Determinism of the learning agents (docs/robustness.md): every registered
// agent, searching with the same seed, gives the same best placement and
// the same log whether the simulated environment uses one thread or
// several. LibTorch-linked, so not part of the sanitizer build; the placers'
// and the environment's own determinism are in determinism_test.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "dplace/env/environment.h"
#include "dplace/graph/random_graph.h"
#include "dplace/method/method.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

std::vector<std::string> AgentNames() {
  std::vector<std::string> names;
  for (const MethodEntry* e : Methods()) {
    if (TraitsOf(*e).learns) names.push_back(e->name);
  }
  return names;
}

struct Problem {
  Problem()
      : graph(MakeRandomLayeredGraph([] {
          RandomGraphOptions o;
          o.num_ops = 60;
          o.seed = 11;
          return o;
        }())),
        cluster(*MakeClusterPreset("k80x2")),
        cost(graph, cluster) {}
  Graph graph;
  Cluster cluster;
  CostModel cost;
};

// Smaller networks for the agents whose paper sizes (256 groups decoded by
// LSTMs of 256-512 units) would take minutes here; determinism does not
// depend on the size.
MethodOptions TinyOptions(const std::string& agent_name, int workers) {
  std::vector<std::string> options = {"workers=" + std::to_string(workers)};
  for (const char* planner : {"hierarchical", "eagle", "eagle-ce", "simple"}) {
    if (agent_name == planner) {
      options.push_back("groups=16");
      options.push_back("hidden=32");
    }
  }
  return *MethodOptions::Parse(options);
}

StatusOr<PlaceResult> Search(const std::string& agent_name,
                             const Problem& problem, uint64_t seed,
                             int env_threads, int workers = 1) {
  DPLACE_ASSIGN_OR_RETURN(
      std::unique_ptr<Method> agent,
      MakeMethod(agent_name, TinyOptions(agent_name, workers)));
  PlacementProblem p;
  p.graph = &problem.graph;
  p.cluster = &problem.cluster;
  p.cost = &problem.cost;
  p.seed = seed;
  std::unique_ptr<Environment> env =
      NewSimulatedEnvironment(problem.cost, env_threads);
  PlaceContext context;
  context.environment = env.get();
  context.search.budget.samples = 48;
  return agent->Place(p, context);
}

class AgentDeterminismTest : public ::testing::TestWithParam<std::string> {};

void ExpectSameSearch(const StatusOr<PlaceResult>& one,
                      const StatusOr<PlaceResult>& four) {
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_TRUE(four.ok()) << four.status().message();
  EXPECT_EQ(one->placement, four->placement);
  EXPECT_EQ(one->search.best_step_time, four->search.best_step_time);
  ASSERT_EQ(one->search.history.size(), four->search.history.size());
  for (size_t i = 0; i < one->search.history.size(); ++i) {
    // Everything the log holds but the wall clock.
    const SampleRecord& a = one->search.history[i];
    const SampleRecord& b = four->search.history[i];
    EXPECT_EQ(a.index, b.index);
    EXPECT_EQ(a.step_time, b.step_time) << "sample " << i;
    EXPECT_EQ(a.feasible, b.feasible) << "sample " << i;
    EXPECT_EQ(a.reward, b.reward) << "sample " << i;
    EXPECT_EQ(a.best_step_time, b.best_step_time) << "sample " << i;
  }
}

TEST_P(AgentDeterminismTest, SameSeedSamePlacementAndLogAtAnyThreadCount) {
  const Problem problem;
  ExpectSameSearch(Search(GetParam(), problem, 5, 1),
                   Search(GetParam(), problem, 5, 4));
}

// Two workers sharing each batch's placements (the agents' option
// workers): the same placement and log on every run.
TEST_P(AgentDeterminismTest, SameSeedSamePlacementAndLogWithTwoWorkers) {
  const Problem problem;
  ExpectSameSearch(Search(GetParam(), problem, 5, 1, 2),
                   Search(GetParam(), problem, 5, 2, 2));
}

INSTANTIATE_TEST_SUITE_P(EveryRegisteredAgent, AgentDeterminismTest,
                         ::testing::ValuesIn(AgentNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace dplace
