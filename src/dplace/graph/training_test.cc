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
  // Seed (Shape, Const, Fill), the loss's gradient, 2 for mm2, relu,
  // bias's BiasAddGrad (x passes through), 1 for mm1 (x needs none): 9
  // backward ops; one update per parameter.
  EXPECT_EQ(CountPhase(*g, Phase::kForward), forward.num_ops());
  EXPECT_EQ(CountPhase(*g, Phase::kBackward), 9);
  EXPECT_EQ(CountPhase(*g, Phase::kUpdate), 3);
  EXPECT_EQ(g->op_type(*g->FindOp("gradients/loss/Fill_0")), "Fill");
  EXPECT_EQ(g->op_type(*g->FindOp("gradients/relu_grad/ReluGrad")), "ReluGrad");
  EXPECT_EQ(g->op_type(*g->FindOp("gradients/bias_grad/BiasAddGrad")),
            "BiasAddGrad");
  EXPECT_FALSE(g->FindOp("gradients/mm1_grad/MatMul")) << "x needs none";
  // dW1 = x^T . d(mm1) reads x; d(relu) = d(mm2) . w2^T reads w2; ReluGrad
  // reads relu's output: those tensors stay alive into the backward pass.
  EXPECT_TRUE(HasEdge(*g, "x", "gradients/mm1_grad/MatMul_1"));
  EXPECT_TRUE(HasEdge(*g, "w2", "gradients/mm2_grad/MatMul"));
  EXPECT_TRUE(HasEdge(*g, "relu", "gradients/relu_grad/ReluGrad"));
  // Gradient tensors have the shape of what they differentiate.
  const OpId dw1 = *g->FindOp("gradients/mm1_grad/MatMul_1");
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
       {"gradients/y_grad/Shape", "gradients/y_grad/Shape_1",
        "gradients/y_grad/BroadcastGradientArgs", "gradients/y_grad/mul_1",
        "gradients/y_grad/Sum_1", "gradients/y_grad/Reshape_1"}) {
    EXPECT_TRUE(g->FindOp(name).has_value()) << name;
  }
  EXPECT_FALSE(g->FindOp("gradients/y_grad/mul")) << "x needs none";
  // dw = Sum(dy * x) reshaped to w's shape feeds the update; it reads x.
  EXPECT_TRUE(HasEdge(*g, "x", "gradients/y_grad/mul_1"));
  EXPECT_TRUE(
      HasEdge(*g, "gradients/y_grad/Reshape_1", "w/ApplyGradientDescent"));
  const OpId dw = *g->FindOp("gradients/y_grad/Reshape_1");
  EXPECT_EQ(g->tensor(g->output(dw, 0)).shape, (std::vector<int64_t>{1, 16}));
}

TEST(TrainingTest, OptimizersByName) {
  for (const char* name : {"sgd", "momentum", "rmsprop", "adam", "adamw"}) {
    ASSERT_TRUE(ParseOptimizer(name).has_value()) << name;
    EXPECT_EQ(OptimizerName(*ParseOptimizer(name)), name);
  }
  EXPECT_FALSE(ParseOptimizer("adagrad").has_value());
  EXPECT_EQ(OptimizerSlots(Optimizer::kMomentum), 1);
  EXPECT_EQ(OptimizerSlots(Optimizer::kAdam), 2);
  EXPECT_EQ(OptimizerSlots(Optimizer::kAdamWeightDecay), 2);
  // Expansion is deterministic.
  EXPECT_EQ(ExpandForTraining(Mlp())->hash(), ExpandForTraining(Mlp())->hash());
}

// A small forward graph built op by op: Add() returns the op's id.
class ForwardGraph {
 public:
  OpId Add(const std::string& name, const std::string& type,
           std::vector<int64_t> shape, const std::vector<OpId>& inputs = {},
           DataType dtype = DataType::kFloat32, double flops = 0) {
    OpSpec s;
    s.name = name;
    s.type = type;
    s.flops = flops;
    s.outputs.push_back({shape, dtype, 0});
    if (type == "VariableV2") s.persistent_bytes = ShapeBytes(shape, dtype);
    const OpId id = b_.AddOp(std::move(s));
    for (OpId in : inputs) b_.AddEdge(in, 0, id);
    return id;
  }
  Graph Build() { return *std::move(b_).Build(); }

 private:
  GraphBuilder b_{"forward"};
};

int CountType(const Graph& g, const std::string& type, Phase phase) {
  int n = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    n += g.op_type(op) == type && g.phase(op) == phase;
  }
  return n;
}

TEST(TrainingTest, GatingRunsTheWholeGradientFunctionBehindATuple) {
  // y = x * w: gated (Optimizer.minimize's GATE_OP), TF builds both inputs'
  // gradients, a NoOp after them and an Identity per gradient.
  ForwardGraph f;
  const OpId x = f.Add("x", "IteratorGetNext", {8, 16});
  const OpId w = f.Add("w", "VariableV2", {1, 16});
  f.Add("y", "Mul", {8, 16}, {x, w}, DataType::kFloat32, 128);
  const Graph forward = f.Build();
  TrainingOptions gated;
  gated.gate_gradients = true;
  StatusOr<Graph> g = ExpandForTraining(forward, gated);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->FindOp("gradients/y_grad/mul").has_value()) << "x's too";
  const OpId gate = *g->FindOp("gradients/y_grad/tuple/group_deps");
  EXPECT_EQ(g->op_type(gate), "NoOp");
  EXPECT_EQ(g->num_outputs(gate), 0);
  EXPECT_EQ(g->in_edges(gate).size(), 2u);  // Control edges from Reshape(s).
  EXPECT_TRUE(HasEdge(*g, "gradients/y_grad/tuple/control_dependency_1",
                      "w/ApplyGradientDescent"));
  EXPECT_TRUE(HasEdge(*g, "gradients/y_grad/tuple/group_deps",
                      "gradients/y_grad/tuple/control_dependency_1"));
  // Ungated, x's gradient is not built.
  StatusOr<Graph> plain = ExpandForTraining(forward);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->FindOp("gradients/y_grad/mul").has_value());
  EXPECT_EQ(CountType(*plain, "NoOp", Phase::kBackward), 0);
}

TEST(TrainingTest, MeanGradientTilesTheGradientBackAndDivides) {
  // loss = Mean(x * w, axis 1): TF's _MeanGrad computes the kept-dims shape
  // (DynamicStitch), reshapes the gradient, tiles it to x's shape and
  // divides by the reduced count.
  ForwardGraph f;
  const OpId x = f.Add("x", "IteratorGetNext", {8, 16});
  const OpId w = f.Add("w", "VariableV2", {16});
  const OpId y = f.Add("y", "Mul", {8, 16}, {x, w});
  const OpId axes = f.Add("axes", "Const", {1}, {}, DataType::kInt32);
  f.Add("mean", "Mean", {8}, {y, axes}, DataType::kFloat32, 128);
  StatusOr<Graph> g = ExpandForTraining(f.Build());
  ASSERT_TRUE(g.ok()) << g.status().message();
  for (const char* name : {"Shape", "Size", "DynamicStitch", "Maximum",
                           "floordiv", "Reshape", "Tile", "truediv"}) {
    EXPECT_TRUE(g->FindOp(std::string("gradients/mean_grad/") + name)) << name;
  }
  const OpId tile = *g->FindOp("gradients/mean_grad/Tile");
  EXPECT_EQ(g->tensor(g->output(tile, 0)).shape, (std::vector<int64_t>{8, 16}));
  EXPECT_DOUBLE_EQ(g->flops(tile), 8 * 16);
  EXPECT_FALSE(g->FindOp("gradients/axes/AddN_0")) << "axes are int";
}

TEST(TrainingTest, StateUpdatesAreNoLossAndStopGradientCutsTheGradient) {
  // Batch norm's moving mean: mean = Mean(x * w); the moving average
  // AssignSub(moving, (moving - StopGradient(mean)) * decay) is a sink but
  // no loss, so moving is not trained and nothing is seeded there.
  ForwardGraph f;
  const OpId x = f.Add("x", "IteratorGetNext", {8, 16});
  const OpId w = f.Add("w", "VariableV2", {16});
  const OpId y = f.Add("y", "Mul", {8, 16}, {x, w});
  const OpId axes = f.Add("axes", "Const", {1}, {}, DataType::kInt32);
  const OpId mean = f.Add("mean", "Mean", {16}, {y, axes});
  const OpId moving = f.Add("moving", "VariableV2", {16});
  const OpId read = f.Add("moving/read", "Identity", {16}, {moving});
  const OpId stopped = f.Add("stop", "StopGradient", {16}, {mean});
  const OpId delta = f.Add("delta", "Sub", {16}, {read, stopped});
  f.Add("update", "AssignSub", {16}, {moving, delta});
  f.Add("loss", "Sum", {}, {mean, axes});
  StatusOr<Graph> g = ExpandForTraining(f.Build());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->FindOp("w/ApplyGradientDescent").has_value());
  EXPECT_FALSE(g->FindOp("moving/ApplyGradientDescent").has_value());
  EXPECT_FALSE(g->FindOp("gradients/update/Fill_0").has_value());
  EXPECT_FALSE(g->FindOp("gradients/delta_grad/Shape").has_value());
  EXPECT_EQ(CountPhase(*g, Phase::kUpdate), 1);
}

TEST(TrainingTest, EmbeddingGradientIsSparseAndDeduplicated) {
  // A gathered table gets TF's IndexedSlices: one row per id (the
  // gradient reshaped) and the ids; the optimizer sums repeated ids first.
  ForwardGraph f;
  const OpId table = f.Add("table", "VariableV2", {1000, 32});
  const OpId read = f.Add("table/read", "Identity", {1000, 32}, {table});
  const OpId ids =
      f.Add("ids", "IteratorGetNext", {4, 5}, {}, DataType::kInt32);
  const OpId axis = f.Add("axis", "Const", {}, {}, DataType::kInt32);
  const OpId rows = f.Add("lookup", "GatherV2", {4, 5, 32}, {read, ids, axis});
  const OpId axes = f.Add("axes", "Const", {3}, {}, DataType::kInt32);
  f.Add("loss", "Sum", {}, {rows, axes});
  TrainingOptions adam;
  adam.optimizer = Optimizer::kAdam;
  StatusOr<Graph> g = ExpandForTraining(f.Build(), adam);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const OpId values = *g->FindOp("gradients/lookup_grad/Reshape");
  EXPECT_EQ(g->tensor(g->output(values, 0)).shape,
            (std::vector<int64_t>{20, 32}));
  const OpId update = *g->FindOp("table/SparseApplyAdam");
  EXPECT_TRUE(HasEdge(*g, "table/UnsortedSegmentSum", "table/SparseApplyAdam"));
  EXPECT_TRUE(HasEdge(*g, "table/Unique", "table/SparseApplyAdam"));
  EXPECT_TRUE(HasEdge(*g, "table/read", "table/SparseApplyAdam"))
      << "the update reads the variable through its read";
  EXPECT_EQ(g->persistent_bytes(update), 2 * 1000 * 32 * 4);
  // Sparse Adam rescales the slots densely.
  EXPECT_EQ(g->temporary_bytes(update), 2 * 1000 * 32 * 4);
}

TEST(TrainingTest, SparseGradientOfAnActivationTurnsDense) {
  // Gathering rows of h = x . w: h's gradient arrives as IndexedSlices and
  // the MatMul's gradient reads it dense (UnsortedSegmentSum to h's shape).
  ForwardGraph f;
  const OpId x = f.Add("x", "IteratorGetNext", {10, 8});
  const OpId w = f.Add("w", "VariableV2", {8, 4});
  const OpId h = f.Add("h", "MatMul", {10, 4}, {x, w});
  const OpId ids = f.Add("ids", "IteratorGetNext", {3}, {}, DataType::kInt32);
  const OpId axis = f.Add("axis", "Const", {}, {}, DataType::kInt32);
  const OpId rows = f.Add("rows", "GatherV2", {3, 4}, {h, ids, axis});
  const OpId axes = f.Add("axes", "Const", {2}, {}, DataType::kInt32);
  f.Add("loss", "Sum", {}, {rows, axes});
  StatusOr<Graph> g = ExpandForTraining(f.Build());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const OpId dense = *g->FindOp("gradients/h_grad/UnsortedSegmentSum");
  EXPECT_EQ(g->tensor(g->output(dense, 0)).shape,
            (std::vector<int64_t>{10, 4}));
  EXPECT_TRUE(HasEdge(*g, "gradients/h_grad/UnsortedSegmentSum",
                      "gradients/h_grad/MatMul_1"));
}

TEST(TrainingTest, ClippingHoldsEveryGradientUntilTheGlobalNorm) {
  TrainingOptions clipped;
  clipped.clip_by_global_norm = true;
  StatusOr<Graph> g = ExpandForTraining(Mlp(), clipped);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountType(*g, "L2Loss", Phase::kBackward), 3);
  EXPECT_EQ(
      g->op_type(*g->FindOp("clip_by_global_norm/global_norm/global_norm")),
      "Sqrt");
  // Each update reads its gradient scaled by the global factor.
  for (const char* w : {"w1", "b1", "w2"}) {
    const OpId update = *g->FindOp(std::string(w) + "/ApplyGradientDescent");
    bool clipped_input = false;
    for (EdgeId e : g->in_edges(update)) {
      const std::string& src = g->op_name(g->edge_src(e));
      clipped_input =
          clipped_input ||
          src.rfind("clip_by_global_norm/clip_by_global_norm/", 0) == 0;
    }
    EXPECT_TRUE(clipped_input) << w;
  }
}

TEST(TrainingTest, AdamWeightDecayIsBuiltOpByOp) {
  // BERT's AdamWeightDecayOptimizer: the moments, the update and three
  // assignments per variable; no decay for biases and LayerNorm.
  ForwardGraph f;
  const OpId x = f.Add("x", "IteratorGetNext", {8, 16});
  const OpId w = f.Add("dense/kernel", "VariableV2", {16, 4});
  const OpId b = f.Add("dense/bias", "VariableV2", {4});
  const OpId y = f.Add("y", "MatMul", {8, 4}, {x, w});
  f.Add("z", "BiasAdd", {8, 4}, {y, b});
  TrainingOptions adamw;
  adamw.optimizer = Optimizer::kAdamWeightDecay;
  StatusOr<Graph> g = ExpandForTraining(f.Build(), adamw);
  ASSERT_TRUE(g.ok()) << g.status().message();
  for (const char* name : {"m_mul", "m_add", "v_add", "Sqrt", "truediv", "mul",
                           "sub", "Assign", "Assign_1", "Assign_2"}) {
    EXPECT_TRUE(g->FindOp(std::string("dense/kernel/adam_") + name)) << name;
  }
  EXPECT_FALSE(g->FindOp("dense/bias/adam_mul")) << "no decay for biases";
  EXPECT_EQ(g->persistent_bytes(*g->FindOp("dense/kernel/adam_m_mul")),
            2 * 16 * 4 * 4);
  EXPECT_EQ(g->total_persistent_bytes(), 3 * (16 * 4 + 4) * 4);
}

}  // namespace
}  // namespace dplace
