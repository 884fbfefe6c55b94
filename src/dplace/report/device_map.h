// The device map of a placement (docs/formats.md, "dplace.device-map"):
// what a user applies to the model the graph came from. Every module whose
// ops all run on one device maps to that device (the outermost such
// module; its descendants go with it); the ops of split modules outside any
// whole one, and the model's top-level ops, are listed one by one.
// `place --whole-modules DEPTH` makes every module at DEPTH whole, so the
// map is modules only down to that depth.
#ifndef DPLACE_REPORT_DEVICE_MAP_H_
#define DPLACE_REPORT_DEVICE_MAP_H_

#include <string>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/placement.h"

namespace dplace {

// The map as JSON: format, version, graph, hash, cluster, devices (the
// cluster's device names), modules (module path -> device, in model
// order) and ops (op name -> device, in op order).
// REQUIRES: placement.size() == graph.num_ops().
std::string DeviceMapJson(const Graph& graph, const Cluster& cluster,
                          const Placement& placement);

}  // namespace dplace

#endif  // DPLACE_REPORT_DEVICE_MAP_H_
