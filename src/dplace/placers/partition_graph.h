// What the partitioning placers (scotch, mincut, metis) hand a partitioner:
// the training graph coarsened into units, as an undirected graph weighted by
// compute time and bytes, plus the cluster's device speeds and link costs.
//
// A unit is a colocation-hint group (an op with its gradient ops, a
// parameter with its update, as the papers' frameworks keep them) split by
// the device kinds its ops allow, so every op of a unit may run wherever the
// unit may.
#ifndef DPLACE_PLACERS_PARTITION_GRAPH_H_
#define DPLACE_PLACERS_PARTITION_GRAPH_H_

#include <cstdint>
#include <vector>

#include "dplace/method/method.h"

namespace dplace {

struct PartitionGraph {
  int num_units = 0;
  std::vector<int32_t> unit_of_op;      // unit_of_op[op] < num_units.
  std::vector<DeviceKindSet> allowed;   // Per unit: kinds all its ops allow.
  std::vector<double> compute_seconds;  // Per unit: summed fastest op time.
  // Undirected CSR: the neighbours of unit u are
  // neighbors[offsets[u] .. offsets[u + 1]), ascending, without u; bytes[i]
  // is what the pair exchanges in either direction, each tensor once per
  // consuming unit (0 when only control edges join them). Symmetric.
  std::vector<int32_t> offsets;
  std::vector<int32_t> neighbors;
  std::vector<int64_t> bytes;

  int num_arcs() const { return static_cast<int>(neighbors.size()); }
};

// The unit of every op: its colocation-hint group when `coarsen`, itself
// otherwise; either way split by allowed device kinds. Units are numbered in
// order of their first op.
std::vector<int32_t> PlacementUnits(const Graph& graph, bool coarsen,
                                    int* num_units);

// The units of PlacementUnits() with their weights and adjacency.
PartitionGraph BuildPartitionGraph(const Graph& graph, const CostModel& cost,
                                   bool coarsen);

// Positive integer weights for a 32-bit partitioner: `values` (>= 0) scaled
// by one factor so that they sum to about `total`, each rounded and raised
// to at least 1. The result sums to at most total + values.size(), so a
// total well below 2^31 / (largest multiplier the partitioner applies)
// cannot overflow.
std::vector<int32_t> ScaleToIntegers(const std::vector<double>& values,
                                     double total);

// Throughput of each device on this graph relative to the fastest (which
// gets 1): compute slots over the summed time of the ops every device kind
// of the cluster may run. Folds in the cost model's efficiencies and launch
// overheads, which peak FLOP/s alone would miss.
std::vector<double> RelativeDeviceSpeeds(const CostModel& cost);

// Seconds to move a reference tensor (1 MiB) between two devices, averaged
// over both directions; 0 on the diagonal. Row-major, num_devices^2.
std::vector<double> LinkCosts(const CostModel& cost);

// The op placement of a unit placement. A unit on a device its kinds forbid
// (a partitioner that cannot express the constraint) moves to the allowed
// device it exchanges the most bytes with, ties to the lowest id.
// REQUIRES: every unit allows some device of the cluster.
Placement ExpandUnitPlacement(const PartitionGraph& pg, const Cluster& cluster,
                              std::vector<DeviceId> unit_device);

}  // namespace dplace

#endif  // DPLACE_PLACERS_PARTITION_GRAPH_H_
