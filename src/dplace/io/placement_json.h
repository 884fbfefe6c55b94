// The placement JSON format (docs/formats.md): op name -> device name, with
// the graph's hash and the cluster's name, so a placement is never silently
// applied to another graph or cluster.
#ifndef DPLACE_IO_PLACEMENT_JSON_H_
#define DPLACE_IO_PLACEMENT_JSON_H_

#include <string>

#include "dplace/graph/placement.h"

namespace dplace {

// Checks the embedded graph hash and cluster name against `graph` and
// `cluster`, that every op has exactly one known device, and that each op
// may run there.
StatusOr<Placement> ParsePlacementJson(const std::string& text,
                                       const std::string& source,
                                       const Graph& graph,
                                       const Cluster& cluster);
StatusOr<Placement> ReadPlacementJson(const std::string& path,
                                      const Graph& graph,
                                      const Cluster& cluster);

std::string PlacementToJson(const Graph& graph, const Cluster& cluster,
                            const Placement& placement);

}  // namespace dplace

#endif  // DPLACE_IO_PLACEMENT_JSON_H_
