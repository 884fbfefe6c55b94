#include "dplace/graph/training.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dplace {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kBatch = 64, kIn = 1024, kHidden = 4096, kOut = 10;

OpSpec Tensor2(const std::string& name, const std::string& type, int64_t rows,
               int64_t cols, double flops = 0) {
  OpSpec s;
  s.name = name;
  s.type = type;
  s.flops = flops;
  s.outputs.push_back({{rows, cols}, DataType::kFloat32, 0});
  return s;
}

OpSpec Parameter(const std::string& name, int64_t rows, int64_t cols) {
  OpSpec s = Tensor2(name, "VariableV2", rows, cols);
  s.persistent_bytes = rows * cols * 4;
  return s;
}

// x -> MatMul(w1) -> BiasAdd(b1) -> Relu -> MatMul(w2) -> loss.
Graph Mlp() {
  GraphBuilder b("mlp");
  const OpId x = b.AddOp(Tensor2("x", "IteratorGetNext", kBatch, kIn));
  const OpId w1 = b.AddOp(Parameter("w1", kIn, kHidden));
  const OpId b1 = b.AddOp(Parameter("b1", 1, kHidden));
  const OpId w2 = b.AddOp(Parameter("w2", kHidden, kOut));
  const OpId mm1 = b.AddOp(
      Tensor2("mm1", "MatMul", kBatch, kHidden, 2.0 * kBatch * kIn * kHidden));
  const OpId bias =
      b.AddOp(Tensor2("bias", "BiasAdd", kBatch, kHidden, kBatch * kHidden));
  const OpId relu =
      b.AddOp(Tensor2("relu", "Relu", kBatch, kHidden, kBatch * kHidden));
  const OpId mm2 = b.AddOp(
      Tensor2("mm2", "MatMul", kBatch, kOut, 2.0 * kBatch * kHidden * kOut));
  const OpId loss = b.AddOp(Tensor2("loss", "SoftmaxLoss", kBatch, 1, 0));
  b.AddEdge(x, 0, mm1);
  b.AddEdge(w1, 0, mm1);
  b.AddEdge(mm1, 0, bias);
  b.AddEdge(b1, 0, bias);
  b.AddEdge(bias, 0, relu);
  b.AddEdge(relu, 0, mm2);
  b.AddEdge(w2, 0, mm2);
  b.AddEdge(mm2, 0, loss);
  return *std::move(b).Build();
}

int CountPhase(const Graph& g, Phase phase) {
  int n = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) n += g.phase(op) == phase;
  return n;
}

bool HasEdge(const Graph& g, const std::string& from, const std::string& to) {
  const OpId dst = *g.FindOp(to);
  for (EdgeId e : g.in_edges(dst)) {
    if (g.op_name(g.edge_src(e)) == from) return true;
  }
  return false;
}

TEST(TrainingTest, MlpGetsGradientsUpdatesAndKeepsActivationsAlive) {
  const Graph forward = Mlp();
  TrainingOptions options;
  options.optimizer = Optimizer::kAdam;
  StatusOr<Graph> g = ExpandForTraining(forward, options);
  ASSERT_TRUE(g.ok()) << g.status().message();
  // Seed, loss grad, 2 for mm2, relu, bias's BiasAddGrad (x passes through),
  // 1 for mm1 (x needs none): 7 backward ops; one update per parameter.
  EXPECT_EQ(CountPhase(*g, Phase::kForward), forward.num_ops());
  EXPECT_EQ(CountPhase(*g, Phase::kBackward), 7);
  EXPECT_EQ(CountPhase(*g, Phase::kUpdate), 3);
  EXPECT_EQ(g->op_type(*g->FindOp("gradients/relu_grad/0")), "ReluGrad");
  EXPECT_EQ(g->op_type(*g->FindOp("gradients/bias_grad/1")), "BiasAddGrad");
  EXPECT_FALSE(g->FindOp("gradients/bias_grad/0")) << "passes through";
  EXPECT_FALSE(g->FindOp("gradients/mm1_grad/0")) << "x needs no gradient";
  // dW1 = x^T . d(mm1) reads x; d(relu) = d(mm2) . w2^T reads w2; ReluGrad
  // reads relu's output: those tensors stay alive into the backward pass.
  EXPECT_TRUE(HasEdge(*g, "x", "gradients/mm1_grad/1"));
  EXPECT_TRUE(HasEdge(*g, "w2", "gradients/mm2_grad/0"));
  EXPECT_TRUE(HasEdge(*g, "relu", "gradients/relu_grad/0"));
  // Gradient tensors have the shape of what they differentiate.
  const OpId dw1 = *g->FindOp("gradients/mm1_grad/1");
  EXPECT_EQ(g->tensor(g->output(dw1, 0)).shape,
            (std::vector<int64_t>{kIn, kHidden}));
  // Adam: two slots of the parameter's size, colocated with it.
  const OpId update = *g->FindOp("w1/ApplyAdam");
  EXPECT_EQ(g->persistent_bytes(update), 2 * kIn * kHidden * 4);
  EXPECT_EQ(g->colocation_group(update), g->colocation_group(*g->FindOp("w1")));
  EXPECT_EQ(g->colocation_group(dw1), g->colocation_group(*g->FindOp("mm1")));
  EXPECT_EQ(g->phase(update), Phase::kUpdate);
}

TEST(TrainingTest, TrainingFlopsAreAboutThreeTimesForward) {
  const Graph forward = Mlp();
  StatusOr<Graph> g = ExpandForTraining(forward);
  ASSERT_TRUE(g.ok());
  // Matmul-dominated: backward costs 2x forward, minus the input gradient of
  // the first layer, which nobody needs.
  const double ratio = g->total_flops() / forward.total_flops();
  EXPECT_GT(ratio, 2.0);
  EXPECT_LT(ratio, 3.15);
}

TEST(TrainingTest, SharedParameterSumsItsGradients) {
  GraphBuilder b("shared");
  const OpId x = b.AddOp(Tensor2("x", "IteratorGetNext", 8, 16));
  const OpId w = b.AddOp(Parameter("w", 16, 16));
  const OpId h1 = b.AddOp(Tensor2("h1", "MatMul", 8, 16, 4096));
  const OpId h2 = b.AddOp(Tensor2("h2", "MatMul", 8, 16, 4096));
  b.AddEdge(x, 0, h1);
  b.AddEdge(w, 0, h1);
  b.AddEdge(h1, 0, h2);
  b.AddEdge(w, 0, h2);
  const Graph forward = *std::move(b).Build();
  StatusOr<Graph> g = ExpandForTraining(forward);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::optional<OpId> sum = g->FindOp("gradients/w/AddN_0");
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(g->in_edges(*sum).size(), 2u);
  EXPECT_TRUE(HasEdge(*g, "gradients/w/AddN_0", "w/ApplyGradientDescent"));
  EXPECT_EQ(CountPhase(*g, Phase::kUpdate), 1);
  EXPECT_EQ(g->persistent_bytes(*g->FindOp("w/ApplyGradientDescent")), 0)
      << "sgd has no slots";
}

TEST(TrainingTest, RejectsGraphsThatAreNotForwardOrHaveNoParameter) {
  StatusOr<Graph> once = ExpandForTraining(Mlp());
  ASSERT_TRUE(once.ok());
  StatusOr<Graph> twice = ExpandForTraining(*once);
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("already has backward op"));

  GraphBuilder b("no_params");
  b.AddOp(Tensor2("x", "IteratorGetNext", 1, 1));
  const Graph forward = *std::move(b).Build();
  StatusOr<Graph> g = ExpandForTraining(forward);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("no parameter"));
}

TEST(TrainingTest, BroadcastingProductFollowsTensorFlowsGradient) {
  // y = x * w with w broadcast over the batch: TF builds Shape(x), Shape(w),
  // BroadcastGradientArgs, then per input Mul, Sum and Reshape.
  GraphBuilder b("scale");
  const OpId x = b.AddOp(Tensor2("x", "IteratorGetNext", 8, 16));
  const OpId w = b.AddOp(Parameter("w", 1, 16));
  const OpId y = b.AddOp(Tensor2("y", "Mul", 8, 16, 128));
  b.AddEdge(x, 0, y);
  b.AddEdge(w, 0, y);
  const Graph forward = *std::move(b).Build();
  StatusOr<Graph> g = ExpandForTraining(forward);
  ASSERT_TRUE(g.ok()) << g.status().message();
  for (const char* name :
       {"gradients/y_grad/Shape_0", "gradients/y_grad/Shape_1",
        "gradients/y_grad/BroadcastGradientArgs", "gradients/y_grad/mul_1",
        "gradients/y_grad/Sum_1", "gradients/y_grad/Reshape_1"}) {
    EXPECT_TRUE(g->FindOp(name).has_value()) << name;
  }
  EXPECT_FALSE(g->FindOp("gradients/y_grad/mul_0")) << "x needs none";
  // dw = Sum(dy * x) reshaped to w's shape feeds the update; it reads x.
  EXPECT_TRUE(HasEdge(*g, "x", "gradients/y_grad/mul_1"));
  EXPECT_TRUE(
      HasEdge(*g, "gradients/y_grad/Reshape_1", "w/ApplyGradientDescent"));
  const OpId dw = *g->FindOp("gradients/y_grad/Reshape_1");
  EXPECT_EQ(g->tensor(g->output(dw, 0)).shape, (std::vector<int64_t>{1, 16}));
}

TEST(TrainingTest, OptimizersByName) {
  for (const char* name : {"sgd", "momentum", "rmsprop", "adam"}) {
    ASSERT_TRUE(ParseOptimizer(name).has_value()) << name;
    EXPECT_EQ(OptimizerName(*ParseOptimizer(name)), name);
  }
  EXPECT_FALSE(ParseOptimizer("adagrad").has_value());
  EXPECT_EQ(OptimizerSlots(Optimizer::kMomentum), 1);
  EXPECT_EQ(OptimizerSlots(Optimizer::kAdam), 2);
  // Expansion is deterministic.
  EXPECT_EQ(ExpandForTraining(Mlp())->hash(), ExpandForTraining(Mlp())->hash());
}

}  // namespace
}  // namespace dplace
