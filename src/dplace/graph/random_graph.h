// Random layered DAGs and random placements, for property tests and
// benchmarks. Deterministic for a given seed.
#ifndef DPLACE_GRAPH_RANDOM_GRAPH_H_
#define DPLACE_GRAPH_RANDOM_GRAPH_H_

#include <cstdint>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"

namespace dplace {

struct RandomGraphOptions {
  int num_ops = 100;  // Default: 100.
  // Ops per layer; an op's inputs come from the previous `max_reach` layers.
  // Default: 10 and 3.
  int layer_width = 10;
  int max_reach = 3;
  int max_inputs = 3;  // Default: 3 (at least 1 outside layer 0).
  double control_edge_probability = 0.05;  // Default: 0.05.
  double max_flops = 1e9;                  // Uniform in [0, max]. Default: 1e9.
  int64_t max_tensor_bytes = 1 << 24;      // Default: 16 MiB.
  int64_t max_persistent_bytes = 1 << 24;  // Default: 16 MiB.
  int64_t max_temporary_bytes = 1 << 20;   // Default: 1 MiB.
  double cpu_only_probability = 0.02;      // Default: 0.02.
  uint64_t seed = 1;
};

// Ops of layer k read outputs of layers k-max_reach .. k-1; each op has 1 or
// 2 outputs. Always valid (acyclic, ids in range).
Graph MakeRandomLayeredGraph(const RandomGraphOptions& options);

// Each op on a uniformly random device among those its kind allows.
// REQUIRES: the cluster has a device of every kind the graph needs.
std::vector<DeviceId> MakeRandomPlacement(const Graph& graph,
                                          const Cluster& cluster,
                                          uint64_t seed);

}  // namespace dplace

#endif  // DPLACE_GRAPH_RANDOM_GRAPH_H_
