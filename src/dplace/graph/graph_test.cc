#include "dplace/graph/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dplace/graph/random_graph.h"

namespace dplace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

OpSpec Op(const std::string& name, int outputs = 1) {
  OpSpec s;
  s.name = name;
  s.type = "Add";
  for (int i = 0; i < outputs; ++i) {
    s.outputs.push_back({{2, 3}, DataType::kFloat32, 0});
  }
  return s;
}

TEST(GraphTest, BuildsCsrAdjacencyAndTensors) {
  GraphBuilder b("g");
  const OpId a = b.AddOp(Op("a", 2));
  const OpId c = b.AddOp(Op("c"));
  const OpId d = b.AddOp(Op("d"));
  b.AddEdge(a, 1, c);
  b.AddEdge(a, 0, d);
  b.AddControlEdge(c, d);
  StatusOr<Graph> g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->num_ops(), 3);
  EXPECT_EQ(g->num_edges(), 3);
  EXPECT_EQ(g->num_tensors(), 4);
  EXPECT_EQ(g->num_outputs(a), 2);
  EXPECT_EQ(g->tensor_bytes(g->output(a, 1)), 24) << "2x3 float32 from shape";
  EXPECT_EQ(g->producer(g->output(c, 0)), c);
  ASSERT_EQ(g->in_edges(d).size(), 2u);
  EXPECT_EQ(g->edge_src(g->in_edges(d)[0]), a);
  EXPECT_TRUE(g->is_control(g->in_edges(d)[1]));
  EXPECT_EQ(g->edge_tensor(g->out_edges(a)[0]), g->output(a, 1));
  EXPECT_THAT(g->topological_order(), ElementsAre(a, c, d));
  EXPECT_EQ(g->FindOp("c"), c);
  EXPECT_FALSE(g->FindOp("nope").has_value());
}

// A graph rebuilt from every op's SpecOf and its edges is the same graph:
// the same hash (every field of every op, tensor and edge).
TEST(GraphTest, SpecOfRebuildsTheSameGraph) {
  RandomGraphOptions o;
  o.num_ops = 200;
  o.seed = 11;
  const Graph graph = MakeRandomLayeredGraph(o);
  GraphBuilder builder(graph.name());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    builder.AddOp(graph.SpecOf(op));
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    for (EdgeId e : graph.in_edges(op)) {
      if (graph.is_control(e)) {
        builder.AddControlEdge(graph.edge_src(e), op);
      } else {
        builder.AddEdge(
            graph.edge_src(e),
            graph.edge_tensor(e) - graph.output(graph.edge_src(e), 0), op);
      }
    }
  }
  const Graph copy = *std::move(builder).Build();
  EXPECT_EQ(copy.num_ops(), graph.num_ops());
  EXPECT_EQ(copy.num_edges(), graph.num_edges());
  EXPECT_EQ(copy.hash(), graph.hash());
}

TEST(GraphTest, CycleErrorNamesTheOpsOnTheCycle) {
  GraphBuilder b("cyclic");
  const OpId in = b.AddOp(Op("input"));
  const OpId x = b.AddOp(Op("x"));
  const OpId y = b.AddOp(Op("y"));
  const OpId z = b.AddOp(Op("z"));
  b.AddEdge(in, 0, x);
  b.AddEdge(x, 0, y);
  b.AddEdge(y, 0, z);
  b.AddControlEdge(z, x);
  StatusOr<Graph> g = std::move(b).Build();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(),
              HasSubstr("cycle: \"x\" -> \"y\" -> \"z\" -> \"x\""));
}

TEST(GraphTest, SelfLoopIsACycle) {
  GraphBuilder b("self");
  const OpId a = b.AddOp(Op("a"));
  b.AddEdge(a, 0, a);
  StatusOr<Graph> g = std::move(b).Build();
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("cycle: \"a\" -> \"a\""));
}

TEST(GraphTest, RejectsDuplicateNames) {
  GraphBuilder b("dup");
  b.AddOp(Op("a"));
  b.AddOp(Op("a"));
  StatusOr<Graph> g = std::move(b).Build();
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("duplicate op name \"a\""));
}

TEST(GraphTest, RejectsNegativeSizes) {
  {
    GraphBuilder b("neg");
    OpSpec s = Op("a");
    s.outputs[0].bytes = -4;
    b.AddOp(s);
    StatusOr<Graph> g = std::move(b).Build();
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(),
                HasSubstr("op \"a\" output 0: negative bytes"));
  }
  {
    GraphBuilder b("neg");
    OpSpec s = Op("w");
    s.persistent_bytes = -1;
    b.AddOp(s);
    StatusOr<Graph> g = std::move(b).Build();
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("op \"w\": byte counts"));
  }
}

TEST(GraphTest, RejectsDanglingEdges) {
  {
    GraphBuilder b("dangling");
    const OpId a = b.AddOp(Op("a"));
    b.AddEdge(a, 0, 5);
    StatusOr<Graph> g = std::move(b).Build();
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("does not exist"));
  }
  {
    GraphBuilder b("bad_output");
    const OpId a = b.AddOp(Op("a"));
    const OpId c = b.AddOp(Op("c"));
    b.AddEdge(a, 3, c);
    StatusOr<Graph> g = std::move(b).Build();
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(),
                HasSubstr("uses output 3 but the op has 1 outputs"));
  }
}

TEST(GraphTest, HashIsStableAndSensitiveToWhatSimulationUses) {
  auto make = [](int64_t bytes, const std::string& second) {
    GraphBuilder b("h");
    OpSpec a = Op("a");
    a.outputs[0].bytes = bytes;
    const OpId ia = b.AddOp(a);
    b.AddEdge(ia, 0, b.AddOp(Op(second)));
    return *std::move(b).Build();
  };
  const Graph g = make(100, "b");
  EXPECT_EQ(g.hash(), make(100, "b").hash());
  EXPECT_EQ(g.hash().size(), 16u);
  EXPECT_NE(g.hash(), make(101, "b").hash());
  EXPECT_NE(g.hash(), make(100, "c").hash());
}

TEST(GraphTest, RandomLayeredGraphsAreValidAndReproducible) {
  RandomGraphOptions o;
  o.num_ops = 500;
  o.seed = 7;
  const Graph g1 = MakeRandomLayeredGraph(o);
  const Graph g2 = MakeRandomLayeredGraph(o);
  EXPECT_EQ(g1.num_ops(), 500);
  EXPECT_EQ(g1.hash(), g2.hash());
  o.seed = 8;
  EXPECT_NE(MakeRandomLayeredGraph(o).hash(), g1.hash());
  // Every op outside the first layer has an input.
  for (OpId op = o.layer_width; op < g1.num_ops(); ++op) {
    EXPECT_FALSE(g1.in_edges(op).empty());
  }
}

}  // namespace
}  // namespace dplace
