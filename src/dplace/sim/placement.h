// A placement: the device of every op.
#ifndef DPLACE_SIM_PLACEMENT_H_
#define DPLACE_SIM_PLACEMENT_H_

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

}  // namespace dplace

#endif  // DPLACE_SIM_PLACEMENT_H_
