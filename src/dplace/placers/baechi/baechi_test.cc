// Baechi's placers: m-ETF finds known optima, m-SCT's favourite children
// help where they should, memory is respected, and too-large graphs get a
// plain error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "dplace/graph/random_graph.h"
#include "dplace/placers/placer.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/placer_test_util.h"
#include "dplace/testing/small_dags.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

using testing_dags::BruteForceOptimum;
using testing_dags::Dag;
using testing_dags::ForkJoin;
using testing_dags::Gpus;
using testing_dags::kGB;
using testing_dags::TwoHeavyChains;
using testing_dags::WideDiamond;
using Problem = PlacerTestProblem;

double StepTime(const Problem& p, const Placement& placement) {
  Simulator simulator(p.cost);
  const SimResult result = *simulator.Simulate(placement);
  EXPECT_TRUE(result.feasible);
  return result.step_time;
}

TEST(MEtfTest, FindsTheOptimumOfSmallDags) {
  struct Case {
    const char* name;
    Graph graph;
    int gpus;
  };
  Case cases[] = {{"fork-join", ForkJoin(), 2},
                  {"two heavy chains", TwoHeavyChains(), 2},
                  {"wide diamond", WideDiamond(), 3}};
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Problem p(std::move(c.graph), Gpus(c.gpus));
    const double optimum = BruteForceOptimum(p);
    EXPECT_NEAR(StepTime(p, Place("m-etf", p.problem)), optimum,
                1e-6 * optimum);
  }
}

// a's two children: c is light and first in topological order, b carries a
// heavy tensor and heads a chain. m-ETF starts c on a's GPU (earliest start,
// first in order), pushing the chain back; m-SCT keeps the GPU for b, a's
// favourite child, and c goes to the other GPU.
TEST(MSctTest, FavouriteChildBeatsEarliestTaskFirst) {
  Dag g;
  const OpId a = g.Op("a", 1);
  const OpId c = g.Op("c", 1);
  const OpId b = g.Op("b", 1);
  const OpId d = g.Op("d", 1);
  g.Edge(a, c, 1000);
  g.Edge(a, b, 4 * kGB);
  g.Edge(b, d, 1000);
  const Problem p(std::move(g).Build(), Gpus(2));
  const double etf = StepTime(p, Place("m-etf", p.problem));
  const double sct = StepTime(p, Place("m-sct", p.problem));
  EXPECT_LT(sct, etf - 0.5);
  EXPECT_NEAR(sct, BruteForceOptimum(p), 1e-6);
}

// a (1 s) feeds b (1 s, a small tensor) and c (1 s, 0.6 GB: 0.6 s to
// copy), b feeds d; x (1.5 s) keeps the other GPU busy. Once b follows a,
// c could start on x's GPU at 1.6 with a link copying beside x, but at
// 2.1 when that GPU copies after x: then a's GPU, free at 2, is better.
Graph CopyOrWait() {
  Dag g;
  const OpId a = g.Op("a", 1);
  g.Op("x", 1.5);
  const OpId b = g.Op("b", 1);
  const OpId c = g.Op("c", 1);
  const OpId d = g.Op("d", 0.1);
  g.Edge(a, b, 1000);
  g.Edge(a, c, 6 * kGB / 10);
  g.Edge(b, d, 1000);
  return std::move(g).Build();
}

TEST(MEtfTest, BooksACopyOnTheDestinationWhenTheDestinationMakesIt) {
  const OpId a = 0, x = 1, c = 3;
  const Problem by_link(CopyOrWait(), Gpus(2));
  const Problem by_destination(CopyOrWait(),
                               Gpus(2, 1e9, 10 * kGB, Copier::kDestination));
  const Placement beside = Place("m-etf", by_link.problem);
  const Placement after = Place("m-etf", by_destination.problem);
  ASSERT_FALSE(beside.empty());
  ASSERT_FALSE(after.empty());
  EXPECT_NE(beside[c], beside[a]) << "c crosses to x's GPU";
  EXPECT_NE(beside[x], beside[a]);
  EXPECT_EQ(after[c], after[a]) << "c stays with a";
  // Under the destination's copies, what the scheduler chose is faster.
  EXPECT_LT(StepTime(by_destination, after),
            StepTime(by_destination, beside) - 0.05);
}

// Ten 3 GB weights in a chain on GPUs of 10 GB: no GPU holds them all.
Graph HeavyWeightsChain(int ops) {
  Dag g;
  OpId prev = -1;
  for (int i = 0; i < ops; ++i) {
    const OpId op = g.Op("layer_" + std::to_string(i), 0.1, 3 * kGB);
    if (prev >= 0) g.Edge(prev, op, 1000);
    prev = op;
  }
  return std::move(g).Build();
}

TEST(BaechiTest, SpreadsWhatOneDeviceCannotHold) {
  const Problem p(HeavyWeightsChain(10), Gpus(4));
  for (const char* method : {"m-topo", "m-etf", "m-sct"}) {
    SCOPED_TRACE(method);
    const Placement placement = Place(method, p.problem);
    Simulator simulator(p.cost);
    const SimResult result = *simulator.Simulate(placement);
    EXPECT_TRUE(result.feasible) << DescribeInfeasibility(p.cluster, result);
    EXPECT_GE(std::set<DeviceId>(placement.begin(), placement.end()).size(),
              4u);
  }
}

TEST(BaechiTest, SaysPlainlyWhenTheGraphExceedsTotalMemory) {
  const Problem p(HeavyWeightsChain(14), Gpus(4));  // 42 GB > 40 GB.
  for (const char* method : {"m-topo", "m-etf", "m-sct"}) {
    SCOPED_TRACE(method);
    StatusOr<Placement> placement = TryPlace(method, p.problem);
    ASSERT_FALSE(placement.ok());
    EXPECT_EQ(placement.status().code(), StatusCode::kInfeasible);
    EXPECT_THAT(placement.status().message(),
                HasSubstr("graph dag needs 42.00 GB"));
    EXPECT_THAT(placement.status().message(), HasSubstr("hold 40.00 GB"));
  }
}

TEST(BaechiTest, OutputsThatOutgrowADeviceAreOutOfMemory) {
  Dag g;
  const OpId a = g.Op("a", 1);
  const OpId b = g.Op("b", 1);
  g.Edge(a, b, 11 * kGB);
  const Problem p(std::move(g).Build(), Gpus(2));
  for (const char* method : {"m-etf", "m-sct"}) {
    StatusOr<Placement> placement = TryPlace(method, p.problem);
    ASSERT_FALSE(placement.ok()) << method;
    EXPECT_EQ(placement.status().code(), StatusCode::kInfeasible);
    EXPECT_THAT(placement.status().message(),
                HasSubstr("out of memory: op a needs 11.00 GB"));
  }
}

// `a` feeds four 0.1 s ops p0..p3 over a slow link (a copy takes 1 s), so
// the greedy pass runs them all on a's GPU, where their outputs (1.5 GB
// each) wait for `sum`. `c`, colocated with `a` as a gradient op is, runs
// after them and needs 4 GB of scratch there: with the four p's, a 7 GB
// GPU cannot hold it. Two p's on the other GPU make room.
Graph StrandedColocationGroup() {
  Dag g;
  const OpId a = g.Op("a", 1, 0, "group_a");
  const OpId sum = g.Op("sum", 0.1);
  for (int i = 0; i < 4; ++i) {
    const OpId p = g.Op("p" + std::to_string(i), 0.1);
    g.Edge(a, p, 100'000'000);
    g.Edge(p, sum, 1'500'000'000);
  }
  const OpId wait = g.Op("wait", 0.5);  // c's other input, after the p's.
  g.Edge(a, wait, 1000);
  const OpId c = g.Op("c", 0.1, 0, "group_a");
  g.Temporary(c, 4 * kGB);
  g.Edge(wait, c, 1000);
  g.Edge(c, sum, 1000);
  return std::move(g).Build();
}

TEST(BaechiTest, GreedyFillingDoesNotStrandAColocationGroup) {
  const Problem p(StrandedColocationGroup(),
                  Gpus(2, /*bandwidth=*/1e8, /*memory=*/7 * kGB));
  for (const char* method : {"m-etf", "m-sct"}) {
    SCOPED_TRACE(method);
    const Placement placement = Place(method, p.problem);
    Simulator simulator(p.cost);
    const SimResult result = *simulator.Simulate(placement);
    EXPECT_TRUE(result.feasible) << DescribeInfeasibility(p.cluster, result);
    EXPECT_EQ(placement[*p.graph.FindOp("a")], placement[*p.graph.FindOp("c")]);
  }
}

struct Zoo {
  explicit Zoo(const char* spec, const char* preset)
      : p(*MakeZooModel(spec), *MakeClusterPreset(preset)) {}
  Problem p;
};

// NMT-2 on two K80s: the expert fits; the greedy pass alone ran gpu:0 out
// of memory with the softmax's partial weight gradients.
TEST(BaechiTest, NmtFitsTwoK80sWhereTheExpertDoes) {
  const Zoo zoo("nmt:layers=2", "k80x2");
  const ZooSpec spec = *ParseZooSpec("nmt:layers=2");
  Simulator simulator(zoo.p.cost);
  const Placement expert =
      spec.model->expert(zoo.p.graph, zoo.p.cluster, spec.params);
  ASSERT_TRUE(simulator.Simulate(expert)->feasible);
  for (const char* method : {"m-etf", "m-sct"}) {
    SCOPED_TRACE(method);
    const Placement placement = Place(method, zoo.p.problem);
    const SimResult result = *simulator.Simulate(placement);
    EXPECT_TRUE(result.feasible)
        << DescribeInfeasibility(zoo.p.cluster, result);
  }
}

TEST(BaechiTest, ZooModelPlacementsAreValidFeasibleAndKeepColocation) {
  const Zoo zoo("inception_v3:batch=8", "k40x4");
  const Graph& g = zoo.p.graph;
  const DeviceId cpu = zoo.p.cluster.DevicesOfKind(DeviceKind::kCpu)[0];
  for (const char* method : {"m-topo", "m-etf", "m-sct"}) {
    SCOPED_TRACE(method);
    const Placement placement = Place(method, zoo.p.problem);
    Simulator simulator(zoo.p.cost);
    const SimResult result = *simulator.Simulate(placement);
    EXPECT_TRUE(result.feasible)
        << DescribeInfeasibility(zoo.p.cluster, result);
    std::map<std::string, DeviceId> group_device;
    for (OpId op = 0; op < g.num_ops(); ++op) {
      if (!g.allowed_devices(op).Contains(DeviceKind::kGpu)) {
        EXPECT_EQ(placement[op], cpu) << g.op_name(op);
        continue;
      }
      EXPECT_NE(placement[op], cpu) << g.op_name(op);  // Baechi: GPUs only.
      if (g.colocation_group(op).empty()) continue;
      auto [it, inserted] =
          group_device.emplace(g.colocation_group(op), placement[op]);
      EXPECT_EQ(it->second, placement[op]) << g.op_name(op);
    }
  }
}

TEST(BaechiTest, MTopoFillsGpusInTopologicalOrder) {
  const Problem p(HeavyWeightsChain(8), Gpus(4));
  // Uniform: 24 GB over 4 GPUs is a share of 6 GB plus the largest layer,
  // just short of three layers (their outputs tip it over): two per GPU.
  EXPECT_EQ(Place("m-topo", p.problem), (Placement{0, 0, 1, 1, 2, 2, 3, 3}));
  // Otherwise each 10 GB GPU is filled before the next: three per GPU.
  EXPECT_EQ(Place("m-topo", p.problem, {"uniform=false"}),
            (Placement{0, 0, 0, 1, 1, 1, 2, 2}));
}

TEST(BaechiTest, SameInputSamePlacement) {
  RandomGraphOptions options;
  options.num_ops = 600;
  options.seed = 11;
  const Problem p(MakeRandomLayeredGraph(options), *MakeClusterPreset("k80x4"));
  for (const char* method : {"m-topo", "m-etf", "m-sct"}) {
    SCOPED_TRACE(method);
    const Placement first = Place(method, p.problem);
    EXPECT_EQ(first, Place(method, p.problem));
    Simulator simulator(p.cost);
    EXPECT_TRUE(simulator.Simulate(first)->feasible);
  }
}

TEST(BaechiTest, SettingsAreChecked) {
  const Problem p(ForkJoin(), Gpus(2));
  StatusOr<Placement> bad = TryPlace("m-sct", p.problem, {"threshold=2"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("threshold must be in (0, 1]"));
  bad = TryPlace("m-etf", p.problem, {"lp_max_ops=5"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown option"));
  bad = TryPlace("m-topo", p.problem, {"memory_fraction=0"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("memory_fraction"));
  // Windows of the LP give a valid placement too.
  Place("m-sct", p.problem, {"lp_max_ops=2"});
}

}  // namespace
}  // namespace dplace
