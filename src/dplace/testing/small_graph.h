// A small training-like graph for the file-format tests (io/): it uses
// every op attribute.
#ifndef DPLACE_TESTING_SMALL_GRAPH_H_
#define DPLACE_TESTING_SMALL_GRAPH_H_

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "dplace/graph/graph.h"

namespace dplace::testing_graphs {

// A small training-like graph that uses every op attribute: several outputs
// with non-default dtypes, a control edge, all three phases, scopes,
// colocation groups and restricted device kinds. Edges are added in the
// order of their consumers, which is the order a graph JSON file lists them.
inline Graph MakeSmallGraph() {
  GraphBuilder b("small");
  OpSpec input;
  input.name = "input";
  input.type = "IteratorGetNext";
  input.scope = "data";
  input.bytes_accessed = 4096 + 256;
  input.outputs = {{{32, 32}, DataType::kFloat32, 0},
                   {{32}, DataType::kInt64, 0}};
  input.allowed_devices = DeviceKindSet::Only(DeviceKind::kCpu);
  const OpId in = b.AddOp(input);

  OpSpec weights;
  weights.name = "dense/weights";
  weights.type = "VariableV2";
  weights.scope = "dense";
  weights.persistent_bytes = 3 * 32 * 10 * 4;
  weights.colocation_group = "dense/weights";
  weights.outputs = {{{32, 10}, DataType::kFloat32, 0}};
  const OpId w = b.AddOp(weights);

  OpSpec matmul;
  matmul.name = "dense/matmul";
  matmul.type = "MatMul";
  matmul.scope = "dense";
  matmul.flops = 2.0 * 32 * 32 * 10 + 0.5;  // Not a whole number.
  matmul.bytes_accessed = 4096 + 1280 + 640;
  matmul.temporary_bytes = 1 << 20;
  matmul.outputs = {{{32, 10}, DataType::kFloat16, 0}};
  matmul.allowed_devices = DeviceKindSet::Only(DeviceKind::kGpu);
  const OpId mm = b.AddOp(matmul);
  b.AddEdge(in, 0, mm);
  b.AddEdge(w, 0, mm);

  OpSpec loss;
  loss.name = "loss";
  loss.type = "SparseSoftmaxCrossEntropyWithLogits";
  loss.scope = "loss";
  loss.flops = 1600;
  // Bytes given explicitly, different from what the shape implies.
  loss.outputs = {{{}, DataType::kFloat32, 4},
                  {{32, 10}, DataType::kBFloat16, 0}};
  const OpId lo = b.AddOp(loss);
  b.AddEdge(mm, 0, lo);
  b.AddEdge(in, 1, lo);

  OpSpec grad;
  grad.name = "gradients/dense/matmul_grad";
  grad.type = "MatMul";
  grad.phase = Phase::kBackward;
  grad.scope = "dense";
  grad.flops = 20480;
  grad.outputs = {{{32, 10}, DataType::kFloat32, 0}};
  const OpId gr = b.AddOp(grad);
  b.AddEdge(in, 0, gr);
  b.AddEdge(lo, 1, gr);

  OpSpec apply;
  apply.name = "dense/weights/apply";
  apply.type = "ApplyAdam";
  apply.phase = Phase::kUpdate;
  apply.scope = "dense";
  apply.flops = 3200;
  apply.colocation_group = "dense/weights";
  apply.outputs = {{{32, 10}, DataType::kFloat32, 0}};
  const OpId ap = b.AddOp(apply);
  b.AddEdge(gr, 0, ap);
  b.AddControlEdge(lo, ap);

  StatusOr<Graph> g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

}  // namespace dplace::testing_graphs

#endif  // DPLACE_TESTING_SMALL_GRAPH_H_
