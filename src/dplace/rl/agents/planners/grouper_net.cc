#include "dplace/rl/agents/planners/grouper_net.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace dplace {
namespace {

constexpr float kPadding = -1;
constexpr int kShapeWidth = kEmbeddedOutputs * kEmbeddedDims;

// Breadth-first index of every op, from the ops without producers in id
// order, along data and control edges.
std::vector<int64_t> BreadthFirstIndex(const Graph& graph) {
  const int n = graph.num_ops();
  std::vector<int64_t> index(n, -1);
  std::deque<OpId> queue;
  int64_t next = 0;
  for (OpId op = 0; op < n; ++op) {
    if (graph.in_edges(op).size() == 0) {
      index[op] = next++;
      queue.push_back(op);
    }
  }
  while (!queue.empty()) {
    const OpId op = queue.front();
    queue.pop_front();
    for (EdgeId e : graph.out_edges(op)) {
      const OpId dst = graph.edge_dst(e);
      if (index[dst] >= 0) continue;
      index[dst] = next++;
      queue.push_back(dst);
    }
  }
  for (OpId op = 0; op < n; ++op) {
    if (index[op] < 0) index[op] = next++;  // Unreachable (cycles only).
  }
  return index;
}

// Type index of every op type: the most frequent `max_types - 1` types
// first (ties by type id), every other type max_types - 1.
std::vector<int64_t> TypeVocabulary(const Graph& graph, int max_types,
                                    int64_t* vocabulary) {
  const std::vector<int> by_count = OpTypesByFrequency(graph);
  const int num_types = static_cast<int>(by_count.size());
  const int kept = std::min(num_types, std::max(1, max_types - 1));
  std::vector<int64_t> index(num_types, kept);
  for (int i = 0; i < kept; ++i) index[by_count[i]] = i;
  *vocabulary = kept + 1;
  return index;
}

}  // namespace

OpFeatures MakeOpFeatures(const Graph& graph, const Grouping& units,
                          const Cluster& cluster, int max_types) {
  const int n = graph.num_ops();
  const int u = units.num_groups;
  OpFeatures f;
  f.num_ops = n;
  f.num_units = u;
  const std::vector<int64_t> type_index =
      TypeVocabulary(graph, max_types, &f.vocabulary);
  const std::vector<int64_t> bfs = BreadthFirstIndex(graph);

  f.type_ids = torch::empty({n}, torch::kInt64);
  f.shapes = torch::full({n, kShapeWidth}, kPadding);
  f.adjacency = torch::full({n, 2 * kEmbeddedNeighbours}, kPadding);
  f.unit = torch::empty({n}, torch::kInt64);
  f.unit_ops = torch::zeros({u});
  f.unit_type_counts = torch::zeros({u, f.vocabulary});
  f.unit_shape_sums = torch::zeros({u, kShapeWidth});
  auto types = f.type_ids.accessor<int64_t, 1>();
  auto shapes = f.shapes.accessor<float, 2>();
  auto adjacency = f.adjacency.accessor<float, 2>();
  auto unit = f.unit.accessor<int64_t, 1>();
  auto unit_ops = f.unit_ops.accessor<float, 1>();
  auto unit_types = f.unit_type_counts.accessor<float, 2>();
  auto unit_shapes = f.unit_shape_sums.accessor<float, 2>();
  std::unordered_map<int64_t, float> unit_edges;
  for (OpId op = 0; op < n; ++op) {
    const int64_t g = units.group[op];
    types[op] = type_index[graph.op_type_id(op)];
    unit[op] = g;
    unit_ops[g] += 1;
    unit_types[g][types[op]] += 1;
    for (int o = 0; o < std::min(graph.num_outputs(op), kEmbeddedOutputs);
         ++o) {
      const std::vector<int64_t>& shape =
          graph.tensor(graph.output(op, o)).shape;
      for (int d = 0; d < std::min<int>(shape.size(), kEmbeddedDims); ++d) {
        const float v = static_cast<float>(
            std::log1p(static_cast<double>(std::max<int64_t>(shape[d], 0))));
        shapes[op][o * kEmbeddedDims + d] = v;
        unit_shapes[g][o * kEmbeddedDims + d] += v;
      }
    }
    int in = 0;
    for (EdgeId e : graph.in_edges(op)) {
      if (in == kEmbeddedNeighbours) break;
      adjacency[op][in++] = static_cast<float>(bfs[graph.edge_src(e)]) / n;
    }
    int out = 0;
    for (EdgeId e : graph.out_edges(op)) {
      const OpId dst = graph.edge_dst(e);
      unit_edges[g * u + units.group[dst]] += 1;
      if (out == kEmbeddedNeighbours) continue;
      adjacency[op][kEmbeddedNeighbours + out++] =
          static_cast<float>(bfs[dst]) / n;
    }
  }
  std::vector<std::pair<int64_t, float>> edges(unit_edges.begin(),
                                               unit_edges.end());
  std::sort(edges.begin(), edges.end());  // Deterministic order.
  std::vector<int64_t> src, dst;
  std::vector<float> count;
  for (const auto& [key, c] : edges) {
    src.push_back(key / u);
    dst.push_back(key % u);
    count.push_back(c);
  }
  f.edge_src = torch::tensor(src, torch::kInt64);
  f.edge_dst = torch::tensor(dst, torch::kInt64);
  f.edge_count = torch::tensor(count, torch::kFloat32);

  const int num_devices = cluster.num_devices();
  f.unit_forbids = torch::zeros({u, num_devices});
  auto forbids = f.unit_forbids.accessor<float, 2>();
  for (OpId op = 0; op < n; ++op) {
    const DeviceKindSet allowed = graph.allowed_devices(op);
    for (DeviceId d = 0; d < num_devices; ++d) {
      if (!allowed.Contains(cluster.device(d).kind)) {
        forbids[units.group[op]][d] = 1;
      }
    }
  }
  return f;
}

namespace {

torch::Tensor RowScaled(const torch::Tensor& m) {
  return m / (std::get<0>(m.max(1, /*keepdim=*/true)) + 1);
}

}  // namespace

PlacerInput MakeGroupEmbeddings(const OpFeatures& f, const torch::Tensor& group,
                                int num_groups) {
  torch::NoGradGuard no_grad;
  const int64_t k = num_groups;
  const torch::Tensor types =
      torch::zeros({k, f.vocabulary}).index_add_(0, group, f.unit_type_counts);
  const torch::Tensor shapes = torch::zeros({k, f.unit_shape_sums.size(1)})
                                   .index_add_(0, group, f.unit_shape_sums);
  torch::Tensor dag = torch::zeros({k * k});
  if (f.edge_src.numel() > 0) {
    dag.index_add_(0,
                   group.index_select(0, f.edge_src) * k +
                       group.index_select(0, f.edge_dst),
                   f.edge_count);
  }
  dag = dag.view({k, k});
  PlacerInput in;
  in.features = torch::cat({RowScaled(types), RowScaled(shapes)}, 1);
  in.adjacency = torch::cat({RowScaled(dag), RowScaled(dag.t())}, 1);
  const torch::Tensor ops = torch::zeros({k}).index_add_(0, group, f.unit_ops);
  in.active = (ops > 0).to(torch::kFloat32);
  torch::Tensor forbids = torch::zeros({k, f.unit_forbids.size(1)})
                              .index_add_(0, group, f.unit_forbids) > 0;
  // A group no device suits as a whole may go anywhere; expanding the
  // placement moves the ops its device forbids.
  forbids = forbids & ~forbids.all(1, /*keepdim=*/true);
  in.mask_bias = forbids.to(torch::kFloat32) * -1e9f;
  return in;
}

torch::Tensor GroupMeans(const OpFeatures& f, const torch::Tensor& group,
                         int num_groups, const torch::Tensor& per_op) {
  const torch::Tensor op_group = group.index_select(0, f.unit);
  const torch::Tensor sums =
      torch::zeros({num_groups, per_op.size(1)}).index_add(0, op_group, per_op);
  const torch::Tensor counts =
      torch::zeros({num_groups}).index_add_(0, group, f.unit_ops);
  return sums / counts.clamp_min(1).unsqueeze(1);
}

GrouperNetImpl::GrouperNetImpl(int64_t vocabulary,
                               const GrouperConfig& config) {
  type_embedding_ =
      register_module("type_embedding",
                      torch::nn::Embedding(vocabulary, config.type_embedding));
  layers_ = torch::nn::Sequential();
  int64_t width = config.type_embedding + kShapeWidth +
                  2 * kEmbeddedNeighbours + config.unit_inputs;
  for (int i = 0; i < config.layers; ++i) {
    layers_->push_back(torch::nn::Linear(width, config.hidden));
    layers_->push_back(torch::nn::ReLU());
    width = config.hidden;
  }
  register_module("layers", layers_);
  output_ = register_module("output", torch::nn::Linear(width, config.outputs));
}

torch::Tensor GrouperNetImpl::Hidden(const OpFeatures& f,
                                     const torch::Tensor& unit_inputs) {
  std::vector<torch::Tensor> parts = {type_embedding_(f.type_ids), f.shapes,
                                      f.adjacency};
  if (unit_inputs.defined()) {
    parts.push_back(unit_inputs.index_select(0, f.unit));
  }
  return layers_->forward(torch::cat(parts, 1));
}

torch::Tensor GrouperNetImpl::UnitLogits(const OpFeatures& f,
                                         const torch::Tensor& hidden) {
  // The output layer is affine, so the mean of its outputs over a unit's
  // ops is its output for their mean hidden state: U rows, not N.
  torch::Tensor unit_hidden =
      torch::zeros({f.num_units, hidden.size(1)}).index_add(0, f.unit, hidden);
  if (f.num_units != f.num_ops) {
    unit_hidden = unit_hidden / f.unit_ops.unsqueeze(1);
  }
  return output_(unit_hidden);
}

}  // namespace dplace
