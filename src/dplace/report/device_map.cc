#include "dplace/report/device_map.h"

#include <nlohmann/json.hpp>
#include <unordered_set>
#include <vector>

#include "dplace/graph/modules.h"
#include "dplace/report/module_tree.h"

namespace dplace {

std::string DeviceMapJson(const Graph& graph, const Cluster& cluster,
                          const Placement& placement) {
  const std::vector<ModuleRow> rows =
      ModuleRows(graph, placement, /*cost=*/nullptr, /*max_depth=*/0,
                 cluster.num_devices());
  nlohmann::ordered_json modules = nlohmann::ordered_json::object();
  std::unordered_set<std::string> whole;
  std::vector<bool> covered(rows.size(), false);
  for (size_t r = 0; r < rows.size(); ++r) {
    const ModuleRow& row = rows[r];
    if (row.parent >= 0 && covered[row.parent]) {
      covered[r] = true;
      continue;
    }
    if (row.device < 0 || row.path == kTopLevelModule) continue;
    covered[r] = true;
    whole.insert(row.path);
    modules[row.path] = cluster.device(row.device).name;
  }
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    bool in_whole = false;
    for (const std::string& path : ModulePaths(graph.scope(op))) {
      in_whole = in_whole || whole.count(path) > 0;
    }
    if (!in_whole) ops[graph.op_name(op)] = cluster.device(placement[op]).name;
  }
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const Device& d : cluster.devices()) devices.push_back(d.name);
  nlohmann::ordered_json map = {{"format", "dplace.device-map"},
                                {"version", 1},
                                {"graph", graph.name()},
                                {"hash", graph.hash()},
                                {"cluster", cluster.name()},
                                {"devices", devices},
                                {"modules", modules},
                                {"ops", ops}};
  return map.dump(1) + "\n";
}

}  // namespace dplace
