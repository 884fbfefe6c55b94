#include "dplace/report/module_tree.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_map>
#include <utility>

#include "dplace/graph/modules.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

// Rows in the order they were first met, with their children, before
// sorting.
struct Tree {
  std::vector<ModuleRow> rows;
  std::vector<std::vector<int>> children;
  std::vector<int> top;
  std::unordered_map<std::string, int> index;

  int RowOf(const std::string& path, int depth, int parent, int devices) {
    auto [it, fresh] = index.emplace(path, static_cast<int>(rows.size()));
    if (!fresh) return it->second;
    ModuleRow row;
    row.path = path;
    row.depth = depth;
    row.parent = parent;
    row.device_seconds.assign(devices, 0);
    row.device_bytes.assign(devices, 0);
    row.device_ops.assign(devices, 0);
    row.first_position = std::numeric_limits<int>::max();
    rows.push_back(std::move(row));
    children.emplace_back();
    (parent < 0 ? top : children[parent]).push_back(it->second);
    return it->second;
  }
};

// The paths of the rows `op` counts in, outermost first.
std::vector<std::string> RowPaths(const Graph& graph, OpId op, int max_depth) {
  std::vector<std::string> paths = ModulePaths(graph.scope(op));
  if (max_depth > 0 && static_cast<int>(paths.size()) > max_depth) {
    paths.resize(max_depth);
  }
  if (paths.empty()) paths.push_back(kTopLevelModule);
  return paths;
}

}  // namespace

std::vector<ModuleRow> ModuleRows(const Graph& graph,
                                  const Placement& placement,
                                  const CostModel* cost, int max_depth,
                                  int num_devices) {
  std::vector<int> position(graph.num_ops());
  const std::vector<OpId>& order = graph.topological_order();
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = static_cast<int>(i);
  }
  Tree tree;
  std::vector<int> fallback;  // First position over every op, per row.
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const DeviceId d = placement[op];
    const double seconds = cost ? cost->OpTime(op, d) : 0;
    const int64_t bytes = OpMemoryEstimate(graph, op);
    const bool places_module =
        graph.phase(op) == Phase::kForward && graph.in_edges(op).size() > 0;
    int parent = -1;
    int depth = 0;
    for (const std::string& path : RowPaths(graph, op, max_depth)) {
      const int r = tree.RowOf(path, ++depth, parent, num_devices);
      fallback.resize(tree.rows.size(), std::numeric_limits<int>::max());
      ModuleRow& row = tree.rows[r];
      ++row.ops;
      row.compute_seconds += seconds;
      row.memory_bytes += bytes;
      row.device_seconds[d] += seconds;
      row.device_bytes[d] += bytes;
      ++row.device_ops[d];
      if (places_module) {
        row.first_position = std::min(row.first_position, position[op]);
      }
      fallback[r] = std::min(fallback[r], position[op]);
      parent = r;
    }
  }
  for (size_t r = 0; r < tree.rows.size(); ++r) {
    ModuleRow& row = tree.rows[r];
    if (row.first_position == std::numeric_limits<int>::max()) {
      row.first_position = fallback[r];
    }
    int devices_used = 0;
    for (DeviceId d = 0; d < num_devices; ++d) {
      if (row.device_ops[d] > 0) {
        ++devices_used;
        row.device = d;
      }
    }
    if (devices_used != 1) row.device = -1;
  }
  auto by_position = [&tree](int a, int b) {
    return tree.rows[a].first_position < tree.rows[b].first_position;
  };
  std::vector<ModuleRow> sorted;
  std::function<void(int, int)> emit = [&](int r, int parent) {
    const int at = static_cast<int>(sorted.size());
    sorted.push_back(tree.rows[r]);
    sorted.back().parent = parent;
    std::vector<int>& kids = tree.children[r];
    std::stable_sort(kids.begin(), kids.end(), by_position);
    for (int k : kids) emit(k, at);
  };
  std::stable_sort(tree.top.begin(), tree.top.end(), by_position);
  for (int r : tree.top) emit(r, -1);
  return sorted;
}

std::string DescribeModuleDevices(const Cluster& cluster,
                                  const ModuleRow& row) {
  if (row.device >= 0) return cluster.device(row.device).name;
  std::vector<DeviceId> used;
  for (DeviceId d = 0; d < static_cast<DeviceId>(row.device_ops.size()); ++d) {
    if (row.device_ops[d] > 0) used.push_back(d);
  }
  std::stable_sort(used.begin(), used.end(), [&row](DeviceId a, DeviceId b) {
    return row.device_seconds[a] > row.device_seconds[b];
  });
  std::string text;
  for (DeviceId d : used) {
    const double time = row.compute_seconds > 0
                            ? row.device_seconds[d] / row.compute_seconds
                            : 0;
    const double memory =
        row.memory_bytes > 0
            ? static_cast<double>(row.device_bytes[d]) / row.memory_bytes
            : 0;
    text += (text.empty() ? "" : ", ") + cluster.device(d).name + " " +
            Format("%.0f%%", 100 * time) + " time " +
            Format("%.0f%%", 100 * memory) + " memory";
  }
  return text;
}

std::string ModuleTable(const Cluster& cluster,
                        const std::vector<ModuleRow>& rows) {
  std::vector<std::vector<std::string>> cells = {
      {"module", "ops", "compute (ms)", "weights+outputs",
       "device (share of time, "
       "memory)"}};
  for (const ModuleRow& row : rows) {
    cells.push_back({std::string(2 * (row.depth - 1), ' ') + row.path,
                     std::to_string(row.ops),
                     Format("%.3f", 1e3 * row.compute_seconds),
                     FormatBytesScaled(static_cast<double>(row.memory_bytes)),
                     DescribeModuleDevices(cluster, row)});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      width[c] = std::max(width[c], line[c].size());
    }
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      const bool numeric = c >= 1 && c <= 3;
      const size_t pad = width[c] - line[c].size();
      if (c > 0) text += "  ";
      if (numeric) text += std::string(pad, ' ');
      text += line[c];
      if (!numeric && c + 1 < line.size()) text += std::string(pad, ' ');
    }
    out += text + "\n";
  }
  return out;
}

}  // namespace dplace
