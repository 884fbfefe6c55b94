#include "dplace/io/placement_json.h"

#include "dplace/io/file.h"
#include "dplace/io/json_fields.h"

namespace dplace {
namespace {

using io_internal::DescribeJson;
using io_internal::FieldReader;
using io_internal::json;

constexpr char kFormat[] = "dplace.placement";

StatusOr<Placement> ParsePlacement(const json& root, const Graph& graph,
                                   const Cluster& cluster) {
  FieldReader f(root, "");
  io_internal::CheckFormat(f, kFormat);
  f.String("graph", "");  // Informational.
  const std::string hash = f.String("graph_hash");
  const std::string cluster_name = f.String("cluster");
  const json* devices = f.Object("placement", true);
  DPLACE_RETURN_IF_ERROR(f.Finish());
  if (hash != graph.hash()) {
    return InvalidArgumentError(
        "graph_hash: the placement was made for a graph with hash " + hash +
        ", but graph \"" + graph.name() + "\" has hash " + graph.hash());
  }
  if (cluster_name != cluster.name()) {
    return InvalidArgumentError(
        "cluster: the placement was made for cluster \"" + cluster_name +
        "\", not \"" + cluster.name() + "\"");
  }
  Placement placement(graph.num_ops(), -1);
  for (auto it = devices->begin(); it != devices->end(); ++it) {
    const std::string path = "placement[\"" + it.key() + "\"]";
    const std::optional<OpId> op = graph.FindOp(it.key());
    if (!op) {
      return InvalidArgumentError(path + ": no op of that name in graph \"" +
                                  graph.name() + "\"");
    }
    if (!it->is_string()) {
      return InvalidArgumentError(path + ": expected a device name, got " +
                                  DescribeJson(*it));
    }
    const std::optional<DeviceId> d =
        cluster.FindDevice(it->get<std::string>());
    if (!d) {
      return InvalidArgumentError(path + ": unknown device \"" +
                                  it->get<std::string>() + "\" in cluster \"" +
                                  cluster.name() + "\"");
    }
    placement[*op] = *d;
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (placement[op] < 0) {
      return InvalidArgumentError("placement: op \"" + graph.op_name(op) +
                                  "\" has no device");
    }
  }
  DPLACE_RETURN_IF_ERROR(
      ValidatePlacement(graph, cluster, placement).WithPrefix("placement"));
  return placement;
}

}  // namespace

StatusOr<Placement> ParsePlacementJson(const std::string& text,
                                       const std::string& source,
                                       const Graph& graph,
                                       const Cluster& cluster) {
  return io_internal::ParseDocument<Placement>(
      text, source,
      [&](const json& root) { return ParsePlacement(root, graph, cluster); });
}

StatusOr<Placement> ReadPlacementJson(const std::string& path,
                                      const Graph& graph,
                                      const Cluster& cluster) {
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParsePlacementJson(text, path, graph, cluster);
}

std::string PlacementToJson(const Graph& graph, const Cluster& cluster,
                            const Placement& placement) {
  json devices = json::object();
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    devices[graph.op_name(op)] = cluster.device(placement[op]).name;
  }
  json root = {{"format", kFormat},         {"version", 1},
               {"graph", graph.name()},     {"graph_hash", graph.hash()},
               {"cluster", cluster.name()}, {"placement", devices}};
  return root.dump(1) + "\n";
}

}  // namespace dplace
