// The placers with a certificate and the peer's baselines: the MILP finds
// the brute-force optimum of small DAGs (or, where the simulator's queues
// cannot follow its schedule, a bound below it), its bound never exceeds it;
// Tarnawski et al.'s contiguous-split DP finds the best split of a chain
// under memory, their greedy fills GPUs in order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "dplace/graph/random_graph.h"
#include "dplace/placers/contiguous_split.h"
#include "dplace/placers/milp_placer.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/placer_test_util.h"
#include "dplace/testing/small_dags.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using testing_dags::BruteForceOptimum;
using testing_dags::Dag;
using testing_dags::Gpus;
using testing_dags::kGB;

double StepOf(const PlacerTestProblem& p, const Placement& placement) {
  const SimResult r = *Simulator(p.cost).Simulate(placement);
  return r.feasible ? r.step_time : std::numeric_limits<double>::infinity();
}

// The MILP solves the small DAGs of the other placers' tests, proven: its
// optimum is the brute-force optimum and its placement simulates to it.
TEST(MilpTest, FindsTheOptimumOfSmallDags) {
  struct Case {
    Graph (*make)();
    int gpus;
  } cases[] = {{testing_dags::ForkJoin, 2},
               {testing_dags::ForkJoin, 3},
               {testing_dags::TwoHeavyChains, 2},
               {testing_dags::TwoHeavyChains, 3},
               {testing_dags::WideDiamond, 3}};
  for (const Case& c : cases) {
    PlacerTestProblem p(c.make(), Gpus(c.gpus));
    const double optimum = BruteForceOptimum(p);
    StatusOr<MilpResult> r = SolveMilp(p.problem, {}, MilpOptions());
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->op_level);
    EXPECT_TRUE(r->proven_optimal);
    EXPECT_NEAR(r->objective, optimum, 1e-6) << c.gpus << " GPUs";
    EXPECT_LE(r->bound, optimum * (1 + 1e-9));
    EXPECT_NEAR(r->bound, optimum, 1e-5);
    EXPECT_NEAR(StepOf(p, r->placement), optimum, 1e-6) << c.gpus << " GPUs";
  }
}

// The program is a relaxation of the simulator: it schedules each device's
// queue in the best order, where the simulator runs ready ops first come,
// first served. On the wide diamond with two GPUs it finds a schedule of
// 3.51 s (d before c on GPU 1) that no placement reaches in the simulator
// (4 s at best): a bound, below the optimum, never above it.
TEST(MilpTest, SchedulesQueuesBetterThanTheSimulatorCan) {
  PlacerTestProblem p(testing_dags::WideDiamond(), Gpus(2));
  StatusOr<MilpResult> r = SolveMilp(p.problem, {}, MilpOptions());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->proven_optimal);
  EXPECT_NEAR(r->objective, 3.51, 1e-6);
  EXPECT_NEAR(BruteForceOptimum(p), 4.0, 1e-6);
}

// A chain whose ops cannot all share a GPU: the MILP pays the one cut the
// memory forces, and its bound proves the step optimal.
TEST(MilpTest, ProvesTheOptimumOfAChainUnderMemory) {
  Dag dag;
  OpId last = dag.Op("op0", 1, 4 * kGB / 10);
  for (int i = 1; i < 4; ++i) {
    const OpId op = dag.Op("op" + std::to_string(i), 1, 4 * kGB / 10);
    dag.Edge(last, op, kGB / 10);
    last = op;
  }
  PlacerTestProblem p(std::move(dag).Build(), Gpus(2, 1e9, kGB));
  StatusOr<MilpResult> r = SolveMilp(p.problem, {}, MilpOptions());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double optimum = BruteForceOptimum(p);
  EXPECT_NEAR(optimum, 4.1, 1e-6);  // Four 1 s ops and one 0.1 s transfer.
  EXPECT_NEAR(StepOf(p, r->placement), optimum, 1e-6);
  EXPECT_NEAR(r->bound, optimum, 1e-5);
}

// Over random small DAGs with tight memory, the MILP's bound never exceeds
// the brute-force optimum (it is a relaxation of the simulator).
TEST(MilpTest, BoundNeverAboveTheBruteForceOptimum) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    RandomGraphOptions o;
    o.num_ops = std::uniform_int_distribution<int>(2, 5)(rng);
    o.layer_width = 2;
    o.max_flops = 1e12;
    o.max_tensor_bytes = int64_t{1} << 29;
    o.max_persistent_bytes = kGB;
    o.cpu_only_probability = 0;
    o.seed = rng();
    PlacerTestProblem p(MakeRandomLayeredGraph(o), Gpus(3, 1e9, 2 * kGB));
    const double optimum = BruteForceOptimum(p);
    StatusOr<MilpResult> r = SolveMilp(p.problem, {}, MilpOptions());
    if (!r.ok()) {
      EXPECT_EQ(optimum, std::numeric_limits<double>::infinity());
      continue;
    }
    EXPECT_LE(r->bound, optimum * (1 + 1e-9)) << "trial " << trial;
    EXPECT_GE(StepOf(p, r->placement), optimum * (1 - 1e-9));
  }
}

// A chain of six 1 s ops of 0.3 GB on GPUs of 1 GB, heavier tensors late:
// the best split puts three ops on each of two GPUs (cut where the tensor
// is light); the greedy fills the first GPU as far as it goes.
TEST(ContiguousSplitTest, TheDpCutsWhereTheTensorIsLight) {
  Dag dag;
  const int64_t tensors[] = {kGB / 100, kGB / 100, kGB / 1000, kGB / 10,
                             kGB / 10};
  OpId last = dag.Op("op0", 1, 3 * kGB / 10);
  for (int i = 1; i < 6; ++i) {
    const OpId op = dag.Op("op" + std::to_string(i), 1, 3 * kGB / 10);
    dag.Edge(last, op, tensors[i - 1]);
    last = op;
  }
  PlacerTestProblem p(std::move(dag).Build(), Gpus(3, 1e9, kGB));
  StatusOr<Placement> dp = BestContiguousSplit(p.problem, SplitOptions());
  ASSERT_TRUE(dp.ok()) << dp.status().message();
  EXPECT_NEAR(StepOf(p, *dp), BruteForceOptimum(p), 1e-6);
  EXPECT_EQ((*dp)[2], (*dp)[0]);  // Cut after op2: the 1 MB tensor.
  EXPECT_NE((*dp)[3], (*dp)[2]);
  StatusOr<Placement> greedy = GreedyContiguousSplit(p.problem, 100);
  ASSERT_TRUE(greedy.ok());
  EXPECT_EQ((*greedy)[0], (*greedy)[2]);  // Three 0.3 GB ops fill 1 GB.
  EXPECT_NE((*greedy)[3], (*greedy)[2]);
  StatusOr<Placement> scheduled =
      ScheduledContiguousSplit(p.problem, 100, UnitOrder::kDepthFirst);
  ASSERT_TRUE(scheduled.ok());
  EXPECT_NEAR(StepOf(p, *scheduled), BruteForceOptimum(p), 1e-6);
}

// The throughput objective balances the stretches: eight equal ops on two
// GPUs split four and four.
TEST(ContiguousSplitTest, ThroughputBalancesTheStretches) {
  Dag dag;
  OpId last = dag.Op("op0", 1);
  for (int i = 1; i < 8; ++i) {
    const OpId op = dag.Op("op" + std::to_string(i), 1);
    dag.Edge(last, op, 1000);
    last = op;
  }
  PlacerTestProblem p(std::move(dag).Build(), Gpus(2));
  SplitOptions options;
  options.objective = SplitObjective::kThroughput;
  StatusOr<Placement> dp = BestContiguousSplit(p.problem, options);
  ASSERT_TRUE(dp.ok()) << dp.status().message();
  int on_first = 0;
  for (DeviceId d : *dp) on_first += d == (*dp)[0];
  EXPECT_EQ(on_first, 4);
}

// Units follow the forward ops: a training graph's gradient ops share
// their forward op's unit, and the units are a topological order of the
// forward graph.
TEST(ContiguousSplitTest, BackwardOpsFollowTheirForwardUnit) {
  PlacerTestProblem p(*MakeZooModel("rnnlm:layers=2,batch=16"), Gpus(2));
  const Graph& g = p.graph;
  const SplitUnits units = MakeSplitUnits(g, 100000);
  for (EdgeId e = 0; e < g.num_edges(); ++e) {
    const OpId a = g.edge_src(e), b = g.edge_dst(e);
    if (g.phase(a) == Phase::kForward && g.phase(b) == Phase::kForward) {
      EXPECT_LE(units.unit_of_op[a], units.unit_of_op[b]);
    }
  }
  for (OpId op = 0; op < g.num_ops(); ++op) {
    for (OpId other = 0; other < g.num_ops(); ++other) {
      if (!g.colocation_group(op).empty() &&
          g.colocation_group(op) == g.colocation_group(other)) {
        EXPECT_EQ(units.unit_of_op[op], units.unit_of_op[other]);
      }
    }
  }
}

}  // namespace
}  // namespace dplace
