// Determinism (docs/robustness.md): every registered placer gives the same
// placement for the same seed, and the simulated environment measures a
// batch identically whatever its thread count.
//
// The learning agents have their own test (env/agent_determinism_test.cc):
// they link LibTorch, which this test (part of the sanitizer build) does
// not. Both take their methods from the registries, so a placer or agent
// registered later is covered without editing either.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "dplace/env/environment.h"
#include "dplace/graph/random_graph.h"
#include "dplace/placers/placer.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

std::vector<std::string> PlacerNames() {
  std::vector<std::string> names;
  for (const MethodEntry* e : Methods()) {
    if (!TraitsOf(*e).searches) names.push_back(e->name);
  }
  return names;
}

// A small layered graph (a few CPU-only ops) on four GPUs and a CPU: big
// enough that placers make real choices. `max_persistent_bytes` per op.
struct Problem {
  explicit Problem(int64_t max_persistent_bytes = 1 << 24)
      : graph(MakeRandomLayeredGraph([&] {
          RandomGraphOptions o;
          o.num_ops = 80;
          o.max_persistent_bytes = max_persistent_bytes;
          o.seed = 7;
          return o;
        }())),
        cluster(*MakeClusterPreset("k80x4")),
        cost(graph, cluster) {}

  PlacementProblem For(uint64_t seed) const {
    PlacementProblem p;
    p.graph = &graph;
    p.cluster = &cluster;
    p.cost = &cost;
    p.seed = seed;
    // The expert of a graph without a model family: round robin by layer
    // of ten ops over the GPUs (any fixed placement will do).
    p.expert = [this] {
      Placement placement = SingleDevicePlacement(graph, cluster, 1);
      for (OpId op = 0; op < graph.num_ops(); ++op) {
        if (graph.allowed_devices(op).Contains(DeviceKind::kGpu)) {
          placement[op] = 1 + (op / 10) % 4;
        }
      }
      return placement;
    };
    return p;
  }

  Graph graph;
  Cluster cluster;
  CostModel cost;
};

StatusOr<Placement> PlaceWith(const std::string& method,
                              const PlacementProblem& problem) {
  // A fresh placer each time: state carried between calls would show here.
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> placer, MakeMethod(method));
  DPLACE_ASSIGN_OR_RETURN(PlaceResult placed, placer->Place(problem));
  return std::move(placed.placement);
}

class PlacerDeterminismTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PlacerDeterminismTest, SameSeedGivesTheSamePlacement) {
  const Problem problem;
  for (uint64_t seed : {1, 42}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    StatusOr<Placement> first = PlaceWith(GetParam(), problem.For(seed));
    ASSERT_TRUE(first.ok()) << first.status().message();
    StatusOr<Placement> second = PlaceWith(GetParam(), problem.For(seed));
    ASSERT_TRUE(second.ok()) << second.status().message();
    EXPECT_EQ(*first, *second);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryRegisteredPlacer, PlacerDeterminismTest,
                         ::testing::ValuesIn(PlacerNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           }
                           return name;
                         });

TEST(PlacerDeterminismTest, TheRandomPlacerDependsOnTheSeed) {
  const Problem problem;
  StatusOr<Placement> a = PlaceWith("random", problem.For(1));
  StatusOr<Placement> b = PlaceWith("random", problem.For(2));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
}

TEST(EnvironmentDeterminismTest, ThreadCountDoesNotChangeMeasurements) {
  // Up to 1 GiB of weights per op: some placements do not fit, so
  // infeasible measurements and their reasons are compared too.
  const Problem problem(int64_t{1} << 30);
  std::vector<Placement> batch;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    batch.push_back(MakeRandomPlacement(problem.graph, problem.cluster, seed));
  }
  batch.push_back(SingleDevicePlacement(problem.graph, problem.cluster, 1));
  std::vector<std::vector<Measurement>> by_threads;
  for (int threads : {1, 2, 5}) {
    std::unique_ptr<Environment> env =
        NewSimulatedEnvironment(problem.cost, threads);
    StatusOr<std::vector<Measurement>> measured = env->Evaluate(batch);
    ASSERT_TRUE(measured.ok()) << measured.status().message();
    ASSERT_EQ(measured->size(), batch.size());
    by_threads.push_back(*std::move(measured));
  }
  int feasible = 0;
  for (const Measurement& m : by_threads[0]) feasible += m.feasible;
  EXPECT_GT(feasible, 0);
  EXPECT_LT(feasible, static_cast<int>(batch.size()));
  for (size_t t = 1; t < by_threads.size(); ++t) {
    for (size_t i = 0; i < batch.size(); ++i) {
      const Measurement& a = by_threads[0][i];
      const Measurement& b = by_threads[t][i];
      EXPECT_EQ(a.step_time, b.step_time) << "placement " << i;
      EXPECT_EQ(a.feasible, b.feasible) << "placement " << i;
      EXPECT_EQ(a.infeasible_reason, b.infeasible_reason);
      EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
    }
  }
}

}  // namespace
}  // namespace dplace
