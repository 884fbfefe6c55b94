// The registry, options and the simplest placers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dplace/placers/placer.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/placer_test_util.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

// input (CPU only) -> layer_0/a -> layer_1/b -> layer_2/c -> layer_3/d; the
// gradient of b is colocated with b.
Graph ChainGraph() {
  GraphBuilder b("chain");
  OpSpec input;
  input.name = "input";
  input.type = "IteratorGetNext";
  input.scope = "input";
  input.outputs = {{{1024}}};
  input.allowed_devices = DeviceKindSet::Only(DeviceKind::kCpu);
  OpId prev = b.AddOp(input);
  for (int i = 0; i < 4; ++i) {
    OpSpec op;
    op.name = "layer_" + std::to_string(i) + "/op";
    op.type = "MatMul";
    op.scope = "layer_" + std::to_string(i);
    op.outputs = {{{1024}}};
    op.flops = 1e9;
    op.colocation_group = op.name;
    const OpId id = b.AddOp(op);
    b.AddEdge(prev, 0, id);
    prev = id;
  }
  OpSpec grad;
  grad.name = "layer_1/op_grad";
  grad.type = "MatMul";
  grad.phase = Phase::kBackward;
  grad.scope = "layer_1";
  grad.outputs = {{{1024}}};
  grad.colocation_group = "layer_1/op";
  const OpId g = b.AddOp(grad);
  b.AddEdge(prev, 0, g);
  return *std::move(b).Build();
}

struct Fixture {
  explicit Fixture(const char* preset = "k80x4")
      : graph(ChainGraph()),
        cluster(*MakeClusterPreset(preset)),
        cost(graph, cluster) {
    problem.graph = &graph;
    problem.cluster = &cluster;
    problem.cost = &cost;
  }
  Graph graph;
  Cluster cluster;
  CostModel cost;
  PlacementProblem problem;
};

TEST(PlacerRegistryTest, ListsTheBaselinesFirstAndNamesUnknownMethods) {
  std::vector<std::string> names;
  for (const MethodEntry* e : Methods()) names.push_back(e->name);
  ASSERT_GE(names.size(), 5u);
  EXPECT_EQ(names[0], "single-cpu");
  EXPECT_EQ(names[1], "single-gpu");
  EXPECT_EQ(names[2], "expert");
  StatusOr<std::unique_ptr<Method>> unknown = MakeMethod("m-etff");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("unknown method \"m-etff\" (methods: single-cpu"));
}

TEST(PlacerRegistryTest, OptionsAreCheckedByName) {
  EXPECT_FALSE(MethodOptions::Parse({"depth"}).ok());
  EXPECT_FALSE(MethodOptions::Parse({"depth=1", "depth=2"}).ok());
  StatusOr<std::unique_ptr<Method>> bad =
      MakeMethod("round-robin", *MethodOptions::Parse({"dept=1"}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("unknown option \"dept\" (options: depth)"));
  StatusOr<std::unique_ptr<Method>> malformed =
      MakeMethod("round-robin", *MethodOptions::Parse({"depth=two"}));
  ASSERT_FALSE(malformed.ok());
  EXPECT_THAT(malformed.status().message(), HasSubstr("expected an integer"));
  StatusOr<std::unique_ptr<Method>> none =
      MakeMethod("single-gpu", *MethodOptions::Parse({"depth=1"}));
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("it takes no options"));
}

TEST(SimplePlacersTest, SingleDevicesKeepCpuOnlyOpsOnTheCpu) {
  Fixture f;
  const DeviceId cpu = f.cluster.DevicesOfKind(DeviceKind::kCpu)[0];
  const DeviceId gpu = f.cluster.DevicesOfKind(DeviceKind::kGpu)[0];
  const Placement on_gpu = Place("single-gpu", f.problem);
  EXPECT_EQ(on_gpu[0], cpu);
  for (OpId op = 1; op < f.graph.num_ops(); ++op) EXPECT_EQ(on_gpu[op], gpu);
  for (DeviceId d : Place("single-cpu", f.problem)) EXPECT_EQ(d, cpu);
}

TEST(SimplePlacersTest, SingleGpuSaysWhenTheClusterHasNoGpu) {
  ClusterBuilder b("cpus");
  Device cpu;
  cpu.name = "cpu:0";
  cpu.kind = DeviceKind::kCpu;
  cpu.peak_flops = 1e11;
  cpu.memory_bandwidth = 1e10;
  cpu.memory_bytes = int64_t{1} << 34;
  b.AddDevice(cpu);
  Fixture f;
  const Cluster cpus = *std::move(b).Build();
  const CostModel cost(f.graph, cpus);
  f.problem.cluster = &cpus;
  f.problem.cost = &cost;
  StatusOr<Placement> p = TryPlace("single-gpu", f.problem);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInfeasible);
  EXPECT_THAT(p.status().message(), HasSubstr("cluster cpus has no gpu"));
}

TEST(SimplePlacersTest, ExpertNeedsAModelFamily) {
  Fixture f;
  StatusOr<Placement> p = TryPlace("expert", f.problem);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("no human-expert placement"));
}

TEST(SimplePlacersTest, RandomIsSeededAndKeepsColocationGroups) {
  Fixture f;
  f.problem.seed = 7;
  const Placement a = Place("random", f.problem);
  EXPECT_EQ(a, Place("random", f.problem));
  EXPECT_EQ(a[*f.graph.FindOp("layer_1/op")],
            a[*f.graph.FindOp("layer_1/op_grad")]);
  bool differs = false;
  for (uint64_t seed = 8; seed < 20 && !differs; ++seed) {
    f.problem.seed = seed;
    differs = Place("random", f.problem) != a;
  }
  EXPECT_TRUE(differs);
}

TEST(SimplePlacersTest, RoundRobinDealsLayersToGpusInTopologicalOrder) {
  Fixture f("k80x2");
  const std::vector<DeviceId> gpus = f.cluster.DevicesOfKind(DeviceKind::kGpu);
  const Placement p = Place("round-robin", f.problem, {"depth=1"});
  // Layers in order: input (CPU only), layer_0 .. layer_3.
  EXPECT_EQ(p[*f.graph.FindOp("layer_0/op")], gpus[1]);
  EXPECT_EQ(p[*f.graph.FindOp("layer_1/op")], gpus[0]);
  EXPECT_EQ(p[*f.graph.FindOp("layer_2/op")], gpus[1]);
  EXPECT_EQ(p[*f.graph.FindOp("layer_1/op_grad")], gpus[0]);
}

TEST(SimplePlacersTest, SingleGpuOnNmt4AtK80IsOutOfMemoryButExpertFits) {
  const ZooSpec spec = *ParseZooSpec("nmt:layers=4");
  const Graph graph = *MakeZooModel(spec);
  const Cluster cluster = *MakeClusterPreset("k80x4");
  const CostModel cost(graph, cluster);
  PlacementProblem problem;
  problem.graph = &graph;
  problem.cluster = &cluster;
  problem.cost = &cost;
  problem.expert = [&] {
    return spec.model->expert(graph, cluster, spec.params);
  };
  Simulator simulator(cost);
  const SimResult single = *simulator.Simulate(Place("single-gpu", problem));
  EXPECT_FALSE(single.feasible);
  EXPECT_THAT(DescribeInfeasibility(cluster, single),
              HasSubstr("out of memory"));
  EXPECT_TRUE(simulator.Simulate(Place("expert", problem))->feasible);
}

}  // namespace
}  // namespace dplace
