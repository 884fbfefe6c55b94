// The step's last chain and the ops that held it up, on a MatMul's two
// gradients: the consumer of one waits behind the other on their GPU, or
// for a hop off it.
#include "dplace/sim/step_chain.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "dplace/sim/simulator.h"
#include "dplace/testing/small_dags.h"

namespace dplace {
namespace {

using testing_dags::Dag;
using testing_dags::Gpus;
using testing_dags::kGB;

// f (1 s) -> y (0.5 s) -> a, b (1 s each, ready together); a -> c (1 s)
// with 2 GB, 2 s over the link. The ops' ids, in the order they are made:
enum : OpId { kF, kY, kA, kB, kC };

Graph Gradients() {
  Dag dag;
  const OpId f = dag.Op("f", 1);
  const OpId y = dag.Op("y", 0.5);
  const OpId a = dag.Op("a", 1);
  const OpId b = dag.Op("b", 1);
  const OpId c = dag.Op("c", 1);
  EXPECT_EQ(std::vector<OpId>({f, y, a, b, c}),
            std::vector<OpId>({kF, kY, kA, kB, kC}));
  dag.Edge(f, y, 1000);
  const int dy = dag.Output(y, 1000);
  dag.Read(y, dy, a);
  dag.Read(y, dy, b);
  dag.Edge(a, c, 2 * kGB);
  return std::move(dag).Build();
}

SimResult Simulate(const CostModel& cost, const Placement& placement) {
  Simulator simulator(cost);
  SimOptions options;
  options.record_timeline = true;
  return *simulator.Simulate(placement, options);
}

std::map<OpId, double> Seconds(const std::vector<Delayer>& delayers) {
  std::map<OpId, double> seconds;
  for (const Delayer& d : delayers) {
    EXPECT_EQ(seconds.count(d.op), 0u) << "op " << d.op << " twice";
    seconds[d.op] = d.seconds;
  }
  return seconds;
}

TEST(StepChainTest, AConsumerQueuedBehindASibling) {
  const Graph graph = Gradients();
  const Cluster cluster = Gpus(2);
  const CostModel cost(graph, cluster);
  const Placement placement(5, 0);
  const SimResult sim = Simulate(cost, placement);
  // f 0-1, y 1-1.5, a 1.5-2.5, b 2.5-3.5 (in the queue before c), c 3.5-4.5.
  ASSERT_NEAR(sim.step_time, 4.5, 1e-6);
  const std::vector<ChainLink> chain = LastChain(cost, placement, sim);
  ASSERT_EQ(chain.size(), 4u);
  EXPECT_EQ(chain[0].op, kC);
  EXPECT_EQ(chain[0].waited_for, kA);
  EXPECT_NEAR(chain[0].ready, 2.5, 1e-6);
  EXPECT_NEAR(chain[0].start, 3.5, 1e-6);
  EXPECT_EQ(chain[1].op, kA);
  EXPECT_EQ(chain[2].op, kY);
  EXPECT_EQ(chain[3].op, kF);
  EXPECT_EQ(chain[3].waited_for, -1);

  // c waited 1 s, behind b the whole second; nothing else waited.
  const std::map<OpId, double> seconds =
      Seconds(ChainDelayers(cost, placement, sim));
  EXPECT_EQ(seconds.size(), 2u);
  EXPECT_NEAR(seconds.at(kC), 1, 1e-6);
  EXPECT_NEAR(seconds.at(kB), 1, 1e-6);
}

TEST(StepChainTest, AConsumerWaitingForAHop) {
  const Graph graph = Gradients();
  const Cluster cluster = Gpus(2);
  const CostModel cost(graph, cluster);
  const Placement placement = {0, 0, 0, 0, 1};
  const SimResult sim = Simulate(cost, placement);
  // c on the other GPU: a's 2 GB arrive at 4.5, c runs 4.5-5.5.
  ASSERT_NEAR(sim.step_time, 5.5, 1e-6);
  const std::vector<ChainLink> chain = LastChain(cost, placement, sim);
  ASSERT_FALSE(chain.empty());
  EXPECT_NEAR(chain[0].ready, 4.5, 1e-6);
  EXPECT_NEAR(chain[0].start, 4.5, 1e-6);

  // The hop's 2 s, charged to both ends of it; b ran meanwhile, but on
  // a GPU nothing of the chain waited for.
  const std::map<OpId, double> seconds =
      Seconds(ChainDelayers(cost, placement, sim));
  EXPECT_EQ(seconds.size(), 2u);
  EXPECT_NEAR(seconds.at(kC), 2, 1e-6);
  EXPECT_NEAR(seconds.at(kA), 2, 1e-6);
}

}  // namespace
}  // namespace dplace
