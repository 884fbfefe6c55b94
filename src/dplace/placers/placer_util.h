// Small pieces every placer needs: allowed devices,
// colocation-hint groups, layers from scope paths.
#ifndef DPLACE_PLACERS_PLACER_UTIL_H_
#define DPLACE_PLACERS_PLACER_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/method/method.h"

namespace dplace {

// Devices of `cluster` that op `op` may run on, in device order.
std::vector<DeviceId> AllowedDevices(const Graph& graph, const Cluster& cluster,
                                     OpId op);

// Checks that every op may run on some device of the cluster and, when
// `need_gpu`, that the cluster has a GPU; errors name the op or the cluster.
Status CheckPlaceable(const PlacementProblem& problem, bool need_gpu = false);

// What every search (a method whose traits search) checks before it
// starts: a complete problem, an environment of the same graph and
// cluster, a budget, a cluster of two devices or more, a checkpoint
// interval >= 1, and CheckPlaceable.
Status CheckSearchRequest(const PlacementProblem& problem,
                          const Environment* environment,
                          const SearchOptions& options);

// Ops grouped by their colocation hint (the training expansion puts each
// forward op with its gradient ops, and each parameter with its update).
// group[op] in [0, num_groups); ops without a hint get a group of their own.
// Groups are numbered in order of their first op.
struct HintGroups {
  int num_groups = 0;
  std::vector<int32_t> group;
};
HintGroups ColocationHintGroups(const Graph& graph);

// The layer of every op from its scope path: the scope cut to `depth`
// components ("encoder/layer_2/lstm" at depth 2 is "encoder/layer_2"). With
// depth 0 the depth is chosen as the smallest that yields at least
// `min_layers` distinct layers (or the deepest). Layers are numbered in
// topological order of their first op; returns the per-op layer index.
std::vector<int32_t> ScopeLayers(const Graph& graph, int depth, int min_layers,
                                 int* num_layers);

}  // namespace dplace

#endif  // DPLACE_PLACERS_PLACER_UTIL_H_
