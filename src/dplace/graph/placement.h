// A placement: the device of every op; the devices an op may take and the
// ops its colocation hint keeps together.
#ifndef DPLACE_GRAPH_PLACEMENT_H_
#define DPLACE_GRAPH_PLACEMENT_H_

#include <cstdint>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"
#include "dplace/util/status.h"

namespace dplace {

// placement[op] is the device op `op` runs on.
using Placement = std::vector<DeviceId>;

// OK when the placement has one valid device per op and every op sits on a
// device kind it may run on; otherwise names the first offending op.
Status ValidatePlacement(const Graph& graph, const Cluster& cluster,
                         const Placement& placement);

// Every op on `device`, except ops that may not run on its kind (input
// pipelines, say), which go to the first device of a kind they allow.
// REQUIRES: every op may run on some device of the cluster.
Placement SingleDevicePlacement(const Graph& graph, const Cluster& cluster,
                                DeviceId device);

// Devices of `cluster` that op `op` may run on, in device order.
std::vector<DeviceId> AllowedDevices(const Graph& graph, const Cluster& cluster,
                                     OpId op);

// Ops grouped by their colocation hint (the training expansion puts each
// forward op with its gradient ops, and each parameter with its update).
// group[op] in [0, num_groups); ops without a hint get a group of their own.
// Groups are numbered in order of their first op.
struct HintGroups {
  int num_groups = 0;
  std::vector<int32_t> group;
};
HintGroups ColocationHintGroups(const Graph& graph);

}  // namespace dplace

#endif  // DPLACE_GRAPH_PLACEMENT_H_
