#include "dplace/graph/placement.h"

#include <string>
#include <unordered_map>

namespace dplace {

Status ValidatePlacement(const Graph& graph, const Cluster& cluster,
                         const Placement& placement) {
  if (static_cast<int>(placement.size()) != graph.num_ops()) {
    return InvalidArgumentError("placement has " +
                                std::to_string(placement.size()) +
                                " devices but the graph has " +
                                std::to_string(graph.num_ops()) + " ops");
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const DeviceId d = placement[op];
    if (d < 0 || d >= cluster.num_devices()) {
      return InvalidArgumentError("op \"" + graph.op_name(op) +
                                  "\" is placed on device " +
                                  std::to_string(d) + ", which does not exist");
    }
    const Device& device = cluster.device(d);
    if (!graph.allowed_devices(op).Contains(device.kind)) {
      return InvalidArgumentError("op \"" + graph.op_name(op) +
                                  "\" may not run on " +
                                  std::string(DeviceKindName(device.kind)) +
                                  " device \"" + device.name + "\"");
    }
  }
  return Status::Ok();
}

Placement SingleDevicePlacement(const Graph& graph, const Cluster& cluster,
                                DeviceId device) {
  Placement placement(graph.num_ops(), device);
  const DeviceKind kind = cluster.device(device).kind;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (graph.allowed_devices(op).Contains(kind)) continue;
    for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
      if (graph.allowed_devices(op).Contains(cluster.device(d).kind)) {
        placement[op] = d;
        break;
      }
    }
  }
  return placement;
}

std::vector<DeviceId> AllowedDevices(const Graph& graph, const Cluster& cluster,
                                     OpId op) {
  std::vector<DeviceId> out;
  const DeviceKindSet allowed = graph.allowed_devices(op);
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    if (allowed.Contains(cluster.device(d).kind)) out.push_back(d);
  }
  return out;
}

HintGroups ColocationHintGroups(const Graph& graph) {
  HintGroups out;
  out.group.resize(graph.num_ops());
  std::unordered_map<std::string, int32_t> ids;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const std::string& hint = graph.colocation_group(op);
    if (hint.empty()) {
      out.group[op] = out.num_groups++;
      continue;
    }
    auto [it, inserted] = ids.emplace(hint, out.num_groups);
    if (inserted) ++out.num_groups;
    out.group[op] = it->second;
  }
  return out;
}

}  // namespace dplace
