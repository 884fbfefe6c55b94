#include "dplace/graph/random_graph.h"

#include <algorithm>
#include <random>

namespace dplace {

Graph MakeRandomLayeredGraph(const RandomGraphOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto uniform_int = [&](int64_t hi) {  // In [0, hi].
    return std::uniform_int_distribution<int64_t>(0, hi)(rng);
  };
  GraphBuilder b("random_" + std::to_string(o.num_ops) + "_seed_" +
                 std::to_string(o.seed));
  std::vector<int> num_outputs_of;
  for (OpId op = 0; op < o.num_ops; ++op) {
    OpSpec s;
    s.name = "op_" + std::to_string(op);
    s.type = unit(rng) < 0.3 ? "MatMul" : "Add";
    s.scope = "layer_" + std::to_string(op / o.layer_width);
    s.flops = unit(rng) * o.max_flops;
    s.persistent_bytes =
        unit(rng) < 0.3 ? uniform_int(o.max_persistent_bytes) : 0;
    s.temporary_bytes = uniform_int(o.max_temporary_bytes);
    const int num_outputs = unit(rng) < 0.2 ? 2 : 1;
    for (int i = 0; i < num_outputs; ++i) {
      TensorInfo t;
      t.bytes = uniform_int(o.max_tensor_bytes);
      s.outputs.push_back(t);
      s.bytes_accessed += t.bytes;
    }
    if (unit(rng) < o.cpu_only_probability) {
      s.allowed_devices = DeviceKindSet::Only(DeviceKind::kCpu);
    }
    num_outputs_of.push_back(num_outputs);
    const OpId id = b.AddOp(std::move(s));
    const int layer = id / o.layer_width;
    if (layer == 0) continue;
    const OpId first = std::max(0, layer - o.max_reach) * o.layer_width;
    const OpId last = layer * o.layer_width - 1;  // Previous layer's end.
    const int inputs = 1 + static_cast<int>(uniform_int(o.max_inputs - 1));
    for (int k = 0; k < inputs; ++k) {
      const OpId src = first + static_cast<OpId>(uniform_int(last - first));
      if (unit(rng) < o.control_edge_probability) {
        b.AddControlEdge(src, id);
      } else {
        b.AddEdge(src, static_cast<int>(uniform_int(num_outputs_of[src] - 1)),
                  id);
      }
    }
  }
  return *std::move(b).Build();
}

std::vector<DeviceId> MakeRandomPlacement(const Graph& graph,
                                          const Cluster& cluster,
                                          uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<DeviceId> by_kind[2] = {cluster.DevicesOfKind(DeviceKind::kCpu),
                                      cluster.DevicesOfKind(DeviceKind::kGpu)};
  std::vector<DeviceId> placement(graph.num_ops());
  std::vector<DeviceId> choices;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    choices.clear();
    for (int k = 0; k < 2; ++k) {
      if (graph.allowed_devices(op).Contains(static_cast<DeviceKind>(k))) {
        choices.insert(choices.end(), by_kind[k].begin(), by_kind[k].end());
      }
    }
    placement[op] = choices[std::uniform_int_distribution<size_t>(
        0, choices.size() - 1)(rng)];
  }
  return placement;
}

}  // namespace dplace
