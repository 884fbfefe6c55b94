#include "dplace/zoo/zoo.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dplace/sim/simulator.h"
#include "dplace/zoo/models.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

int CountPhase(const Graph& g, Phase phase) {
  int n = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) n += g.phase(op) == phase;
  return n;
}

TEST(ZooTest, EveryModelBuildsADeterministicTrainingGraph) {
  for (const ZooModel& m : ZooModels()) {
    SCOPED_TRACE(m.name);
    StatusOr<Graph> g = MakeZooModel(m.name);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_GT(CountPhase(*g, Phase::kForward), 100);
    EXPECT_GT(CountPhase(*g, Phase::kBackward),
              CountPhase(*g, Phase::kForward) / 2);
    EXPECT_GT(CountPhase(*g, Phase::kUpdate), 0);
    EXPECT_EQ(MakeZooModel(m.name)->hash(), g->hash());
    EXPECT_TRUE(MakeClusterPreset(m.paper_preset).ok()) << m.paper_preset;
    EXPECT_EQ(m.defaults.count("optimizer"), 1u);
  }
}

TEST(ZooTest, ParametersOverrideDefaultsAndBadOnesAreNamed) {
  StatusOr<Graph> two = MakeZooModel("nmt");
  StatusOr<Graph> four = MakeZooModel("nmt:layers=4,batch=32");
  ASSERT_TRUE(two.ok() && four.ok());
  EXPECT_GT(four->num_ops(), two->num_ops());

  StatusOr<Graph> unknown = MakeZooModel("transformer-xl");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("unknown zoo model \"transformer-xl\" (models: rnnlm"));
  StatusOr<Graph> key = MakeZooModel("nmt:depth=4");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(key.status().message(),
              HasSubstr("unknown parameter \"depth\" (parameters: batch"));
  StatusOr<Graph> value = MakeZooModel("nmt:layers=four");
  ASSERT_FALSE(value.ok());
  EXPECT_THAT(value.status().message(),
              HasSubstr("layers must be an integer, got \"four\""));
  StatusOr<Graph> optimizer = MakeZooModel("rnnlm:optimizer=adagrad");
  ASSERT_FALSE(optimizer.ok());
  EXPECT_THAT(optimizer.status().message(), HasSubstr("unknown optimizer"));
}

TEST(ZooTest, AdamAddsTwoSlotsPerParameter) {
  StatusOr<Graph> sgd = MakeZooModel("rnnlm:layers=1,steps=4");
  StatusOr<Graph> adam = MakeZooModel("rnnlm:layers=1,steps=4,optimizer=adam");
  ASSERT_TRUE(sgd.ok() && adam.ok());
  EXPECT_EQ(adam->total_persistent_bytes(), 3 * sgd->total_persistent_bytes());
}

TEST(ZooTest, NmtExpertPutsEachLayerOnItsGpuAndFits) {
  StatusOr<ZooSpec> spec = ParseZooSpec("nmt:layers=4");
  ASSERT_TRUE(spec.ok());
  StatusOr<Graph> g = MakeZooModel(*spec);
  ASSERT_TRUE(g.ok());
  const Cluster c = *MakeClusterPreset("k40x4");
  const Placement p = spec->model->expert(*g, c, spec->params);
  ASSERT_TRUE(ValidatePlacement(*g, c, p).ok());
  for (OpId op = 0; op < g->num_ops(); ++op) {
    const std::string& scope = g->scope(op);
    const std::string& device = c.device(p[op]).name;
    if (scope.rfind("decoder/lstm_2/", 0) == 0) EXPECT_EQ(device, "gpu:2");
    if (scope.rfind("encoder/lstm_0/", 0) == 0) EXPECT_EQ(device, "gpu:0");
    if (scope.rfind("softmax", 0) == 0) EXPECT_EQ(device, "gpu:3") << scope;
    if (scope.rfind("encoder/embedding", 0) == 0) EXPECT_EQ(device, "gpu:0");
    if (scope.rfind("input", 0) == 0) EXPECT_EQ(device, "cpu:0");
  }
  const CostModel cost(*g, c);
  Simulator sim(cost);
  StatusOr<SimResult> r = sim.Simulate(p);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->feasible) << DescribeInfeasibility(c, *r);
}

TEST(ZooTest, RnnlmFitsOneK40) {
  StatusOr<Graph> g = MakeZooModel("rnnlm");
  ASSERT_TRUE(g.ok());
  const Cluster c = *MakeClusterPreset("k40x4");
  Placement one(g->num_ops(), *c.FindDevice("gpu:0"));
  for (OpId op = 0; op < g->num_ops(); ++op) {
    if (!g->allowed_devices(op).Contains(DeviceKind::kGpu)) one[op] = 0;
  }
  const CostModel cost(*g, c);
  Simulator sim(cost);
  StatusOr<SimResult> r = sim.Simulate(one);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->feasible) << DescribeInfeasibility(c, *r);
}

TEST(ZooTest, LayersBeyondTheGpusShareThemInBlocks) {
  const Cluster c = *MakeClusterPreset("k80x2");
  const DeviceId g0 = *c.FindDevice("gpu:0"), g1 = *c.FindDevice("gpu:1");
  EXPECT_EQ(zoo_internal::LayerGpu(c, 0, 2), g0);
  EXPECT_EQ(zoo_internal::LayerGpu(c, 1, 2), g1);
  EXPECT_EQ(zoo_internal::LayerGpu(c, 1, 4), g0);
  EXPECT_EQ(zoo_internal::LayerGpu(c, 2, 4), g1);
  EXPECT_EQ(zoo_internal::LayerGpu(c, 0, 1), g0);
}

}  // namespace
}  // namespace dplace
