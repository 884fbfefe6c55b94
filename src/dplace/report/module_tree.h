// A placement by module: the model's module tree (graph/modules.h) in
// model order, each module with its ops' compute time and memory and the
// share of each on every device, for `place --by-module`, the HTML report
// and the device map a user applies to the model.
//
//   const std::vector<ModuleRow> rows =
//       ModuleRows(graph, placement, &cost, /*max_depth=*/2);
//   PrintModuleRows(cluster, rows, std::cout);
#ifndef DPLACE_REPORT_MODULE_TREE_H_
#define DPLACE_REPORT_MODULE_TREE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/placement.h"

namespace dplace {

// The name of the row of the ops in no module (scope ""): the model's own
// top-level ops.
inline constexpr const char* kTopLevelModule = "(model)";

struct ModuleRow {
  std::string path;  // "layers.0.self_attn"; kTopLevelModule at the top.
  int depth = 1;     // 1: a module of the model itself.
  int parent = -1;   // Row index of the enclosing module; -1 at the top.
  // Totals over the module's ops and its descendants' (phases forward,
  // backward and update).
  int ops = 0;
  // Summed op time (CostModel::OpTime on the op's device).
  double compute_seconds = 0;
  // Summed OpMemoryEstimate: weights, optimizer slots, scratch and outputs
  // (over the step: not a peak, which depends on when each is freed).
  int64_t memory_bytes = 0;
  std::vector<double> device_seconds;  // Per device.
  std::vector<int64_t> device_bytes;   // Per device.
  std::vector<int> device_ops;         // Per device.
  // The device every op of the module runs on; -1 when it is split.
  DeviceId device = -1;
  // The module's first forward op in topological order (its place in the
  // model), among ops that read an input (not parameters or data).
  int first_position = 0;
};

// The module rows of `placement` down to `max_depth` (all depths when
// <= 0), each module before its children, siblings in model order (by
// first_position). An op deeper than max_depth counts in its ancestor at
// max_depth. `cost` gives op times; null: times are 0.
// REQUIRES: placement.size() == graph.num_ops().
std::vector<ModuleRow> ModuleRows(const Graph& graph,
                                  const Placement& placement,
                                  const CostModel* cost, int max_depth,
                                  int num_devices);

// "gpu:0" when the module is whole on one device, else the devices with
// their shares of the module's compute time and memory, largest first:
// "gpu:0 62% time 55% memory, gpu:1 38% time 45% memory".
std::string DescribeModuleDevices(const Cluster& cluster, const ModuleRow& row);

// The rows as an indented table (two spaces per depth): module, ops,
// compute time, memory and devices.
std::string ModuleTable(const Cluster& cluster,
                        const std::vector<ModuleRow>& rows);

}  // namespace dplace

#endif  // DPLACE_REPORT_MODULE_TREE_H_
