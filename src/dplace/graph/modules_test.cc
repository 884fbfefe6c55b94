// Module paths from scopes, and the colocation that keeps modules whole.
#include "dplace/graph/modules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace dplace {
namespace {

using ::testing::ElementsAre;

TEST(ModulesTest, ModulePathsAreThoseOfPyTorch) {
  // The exporter spells a container's child with its parent's name.
  EXPECT_EQ(ModulePath("features/features.0"), "features.0");
  EXPECT_THAT(ModulePaths("layer1/layer1.0/conv1"),
              ElementsAre("layer1", "layer1.0", "layer1.0.conv1"));
  // A ModuleList has no scope of its own: "layers.0" is the first part.
  EXPECT_EQ(ModulePath("layers.0/self_attn"), "layers.0.self_attn");
  EXPECT_EQ(ModulePath("layer1/layer1.0/conv1", 2), "layer1.0");
  EXPECT_EQ(ModulePath("encoder/layer_2/lstm", 2), "encoder.layer_2");
  // A part that merely starts like its parent is a child all the same.
  EXPECT_EQ(ModulePath("layer1/layer10"), "layer1.layer10");
  EXPECT_EQ(ModulePath(""), "");
  EXPECT_EQ(ScopeDepth("a/a.0/b"), 3);
  EXPECT_EQ(ScopeDepth(""), 0);
}

// Two blocks of two ops, a top-level op, and a parameter colocated with
// an op of the other block (as a tied weight's update is).
Graph TwoBlocks() {
  GraphBuilder b("blocks");
  auto add = [&b](const std::string& name, const std::string& scope,
                  const std::string& group) {
    OpSpec s;
    s.name = name;
    s.type = "MatMul";
    s.scope = scope;
    s.colocation_group = group;
    s.outputs.push_back({{4}, DataType::kFloat32, 0});
    return b.AddOp(s);
  };
  const OpId in = add("in", "", "");
  const OpId a1 = add("a1", "blocks.0/fc", "");
  const OpId a2 = add("a2", "blocks.0/act", "");
  const OpId b1 = add("b1", "blocks.1/fc", "");
  const OpId b2 = add("b2", "blocks.1/act", "w");
  const OpId w = add("w", "head", "w");
  b.AddEdge(in, 0, a1);
  b.AddEdge(a1, 0, a2);
  b.AddEdge(a2, 0, b1);
  b.AddEdge(b1, 0, b2);
  b.AddEdge(w, 0, b2);
  return *std::move(b).Build();
}

TEST(ModulesTest, ColocateModulesKeepsEachModuleWhole) {
  const Graph g = TwoBlocks();
  StatusOr<Graph> colocated = ColocateModules(g, 1);
  ASSERT_TRUE(colocated.ok()) << colocated.status().message();
  const Graph& c = *colocated;
  ASSERT_EQ(c.num_ops(), g.num_ops());
  auto group = [&c](const char* name) {
    return c.colocation_group(*c.FindOp(name));
  };
  EXPECT_EQ(group("a1"), group("a2"));
  EXPECT_NE(group("a1"), group("b1"));
  // blocks.1 and head join through the group b2 and w already shared.
  EXPECT_EQ(group("b1"), group("w"));
  EXPECT_TRUE(group("in").empty());
  // Names, edges and costs are the graph's.
  EXPECT_EQ(c.num_edges(), g.num_edges());
  EXPECT_EQ(c.op_name(3), g.op_name(3));
  // At depth 2 the blocks' parts are apart again: one op each, in no
  // group.
  StatusOr<Graph> deeper = ColocateModules(g, 2);
  ASSERT_TRUE(deeper.ok());
  EXPECT_TRUE(deeper->colocation_group(*deeper->FindOp("a1")).empty());
  EXPECT_TRUE(deeper->colocation_group(*deeper->FindOp("a2")).empty());
}

TEST(ModulesTest, KeepGroupsWholeMovesSplitGroupsToTheirHeaviestDevice) {
  const Graph g = *ColocateModules(TwoBlocks(), 1);
  // Devices: 0 a CPU, 1 and 2 GPUs. blocks.0 split 1:1 with more time on
  // device 2; blocks.1 with w whole on device 1.
  std::vector<int32_t> placement = {0, 1, 2, 1, 1, 1};
  const std::vector<double> weight = {1, 1, 3, 1, 1, 1};
  const std::vector<DeviceKind> kinds = {DeviceKind::kCpu, DeviceKind::kGpu,
                                         DeviceKind::kGpu};
  EXPECT_EQ(KeepGroupsWhole(g, kinds, weight, &placement), 1);
  EXPECT_THAT(placement, ElementsAre(0, 2, 2, 1, 1, 1));
  // Whole already: nothing moves.
  EXPECT_EQ(KeepGroupsWhole(g, kinds, weight, &placement), 0);
}

}  // namespace
}  // namespace dplace
