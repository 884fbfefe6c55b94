#include "dplace/env/environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dplace/graph/random_graph.h"
#include "dplace/sim/simulator.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

TEST(SimulatedEnvironmentTest, BatchMatchesDirectSimulationOnAnyThreadCount) {
  RandomGraphOptions o;
  o.num_ops = 400;
  o.max_persistent_bytes = int64_t{1} << 28;  // Some placements OOM.
  const Graph g = MakeRandomLayeredGraph(o);
  const Cluster c = *MakeClusterPreset("k80x4");
  const CostModel cost(g, c);
  std::vector<Placement> batch;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    batch.push_back(MakeRandomPlacement(g, c, seed));
  }
  Simulator sim(cost);
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE(threads);
    auto env = NewSimulatedEnvironment(cost, threads);
    StatusOr<std::vector<Measurement>> m = env->Evaluate(batch);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->size(), batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const SimResult r = *sim.Simulate(batch[i]);
      EXPECT_EQ((*m)[i].step_time, r.step_time);
      EXPECT_EQ((*m)[i].feasible, r.feasible);
      EXPECT_EQ((*m)[i].peak_memory_bytes, r.device_peak_bytes);
      EXPECT_EQ((*m)[i].infeasible_reason.empty(), r.feasible);
      EXPECT_GE((*m)[i].wall_seconds, 0);
    }
    // The pool is reusable.
    EXPECT_TRUE(env->Evaluate(batch).ok());
  }
}

TEST(SimulatedEnvironmentTest, RejectsAnInvalidPlacementByIndex) {
  RandomGraphOptions o;
  o.num_ops = 20;
  const Graph g = MakeRandomLayeredGraph(o);
  const Cluster c = *MakeClusterPreset("k80x2");
  const CostModel cost(g, c);
  auto env = NewSimulatedEnvironment(cost, 2);
  std::vector<Placement> batch = {MakeRandomPlacement(g, c, 1),
                                  Placement(g.num_ops(), 9)};
  StatusOr<std::vector<Measurement>> m = env->Evaluate(batch);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("placement 1: op \"op_0\""));
  EXPECT_TRUE(env->Evaluate({}).ok());
}

}  // namespace
}  // namespace dplace
