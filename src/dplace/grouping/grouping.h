// Grouping: ops merged into groups that a learned placer places as one.
//
// The learned placers (ColocRL, Hierarchical Planner, Post, EAGLE, Mars)
// place groups, not ops, to keep their action space small. This header is
// the whole contract of the concept:
//
//   - Grouping: the group of every op, groups numbered 0..num_groups-1, all
//     non-empty, numbered in topological order of their first op (so two
//     groupings that put the same ops together compare equal).
//   - Groupers: ColocRL's co-location heuristics (ColocationGrouping), a
//     METIS k-way grouper and an asynchronous fluid-communities grouper
//     (EAGLE's heuristic baselines), each deterministic for a given seed.
//   - CoarsenGraph: the group graph a placer's policy sees (summed costs,
//     memory, allowed device kinds, bytes between groups, a group order).
//   - ExpandGroupPlacement: a device per group back to a device per op.
//
// Every function here only reads its inputs and keeps no state, so it is
// safe to call from several threads on one Graph.
#ifndef DPLACE_GROUPING_GROUPING_H_
#define DPLACE_GROUPING_GROUPING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/placement.h"
#include "dplace/util/status.h"

namespace dplace {

using GroupId = int32_t;

struct Grouping {
  int num_groups = 0;
  std::vector<GroupId> group;  // group[op] in [0, num_groups).

  bool operator==(const Grouping& other) const {
    return num_groups == other.num_groups && group == other.group;
  }
  bool operator!=(const Grouping& other) const { return !(*this == other); }
};

// The canonical Grouping of arbitrary per-op labels (any int32 values; equal
// labels mean the same group): groups renumbered 0.. in the order their
// first op appears in graph.topological_order().
// REQUIRES: labels.size() == graph.num_ops().
Grouping MakeGrouping(const Graph& graph, const std::vector<int32_t>& labels);

// OK when `grouping` has one group per op, ids in [0, num_groups), and
// every group non-empty; otherwise says what is wrong.
Status ValidateGrouping(const Graph& graph, const Grouping& grouping);

// The members of every group, each list in topological order.
std::vector<std::vector<OpId>> GroupMembers(const Graph& graph,
                                            const Grouping& grouping);

// Bytes that cross groups: each tensor counts once for every group other
// than its producer's that consumes it (the simulator sends a tensor once
// per destination device; the same rule per group).
int64_t CutBytes(const Graph& graph, const Grouping& grouping);

// ---------------------------------------------------------------------------
// ColocRL's co-location heuristics (Mirhoseini et al., ICML 2017, sec. 3.3).
//
// Rules apply in this order: (1) colocation hints, (3) scope rule, then (2)
// single-consumer absorption to a fixed point, which treats the groups so
// far as ops, as ColocRL does.
//
// Device kinds: ops are only ever merged with ops that allow exactly the
// same device kinds, so every group's ops share one allowed set. A CPU-only
// input op thus keeps a group of its own instead of dragging its consumer
// (and, through absorption, much of the model) onto the CPU. A hint that
// names ops of different allowed kinds is honoured per allowed set.
struct ColocationOptions {
  // Rule 1: ops with the same Graph::colocation_group() hint share a group.
  // The training expansion gives each forward op and its gradient ops one
  // hint, and each parameter and its update op one. Default: true.
  bool use_colocation_hints = true;

  // Rule 2: a group whose outputs (data or control edges) all go to one
  // other group joins that group; repeated until nothing merges.
  // Default: true.
  bool absorb_single_consumer = true;
  // Rule 2 stops at this many groups (on a chain it would merge all into
  // one); 0: no limit. Default: 0.
  int min_groups = 0;
  // Rule 2 makes no group of more persistent bytes than this (a group no
  // device holds is of no use to a placer); 0: no limit. Default: 0.
  int64_t max_group_persistent_bytes = 0;

  // Rule 3, one group per scope prefix (e.g. one per LSTM cell). An op's
  // scope key is its scope cut after the first component that starts with
  // `scope_marker` ("lstm_0/step_4/mul" -> "lstm_0/step_4" for "step_"), or,
  // when the marker is empty, cut to `scope_depth` components. Ops with
  // equal keys share a group; ops whose scope lacks the marker, or has fewer
  // than scope_depth components, get no key. Zoo RNN scopes look like
  // "lstm_2/step_4" (RNNLM) and "encoder/lstm_1/step_7" (NMT), so the marker
  // "step_" gives one group per LSTM cell, attention step and softmax step
  // in both; Inception-V3's "mixed_5b/branch_1/conv_1" makes "branch_" give
  // one group per Inception branch, ColocRL's rule for it. Default: "" and
  // 0 (off).
  std::string scope_marker;
  int scope_depth = 0;
};

// Never fails: every graph has a co-location grouping.
Grouping ColocationGrouping(const Graph& graph,
                            const ColocationOptions& options = {});

// ---------------------------------------------------------------------------
// k-way groupers on the undirected op graph (EAGLE, Lan et al., sec. III-B).
// Edges join ops that share a data or control edge; a pair's weight is the
// bytes of the tensors between them (each tensor once per consumer op).

struct MetisGroupingOptions {
  int num_groups = 256;  // k. Default: 256 (EAGLE's and the HP's k).
  uint64_t seed = 1;     // METIS_OPTION_SEED. Default: 1.
  // Allowed imbalance of group weights: the heaviest group may weigh
  // (1 + imbalance) x the average. Default: 0.03 (METIS's k-way default).
  double imbalance = 0.03;
  // Vertex weight of an op: its FastestOpTime() under this model when set;
  // otherwise its FLOPs. Not owned; must outlive the call. Default: none.
  const CostModel* cost_model = nullptr;
};

// Exactly num_groups non-empty groups by METIS_PartGraphKway, which
// minimises the bytes cut under the balance constraint. Weights are scaled
// to integers whose sums fit METIS's 32-bit idx_t; every op weighs at least
// 1 and every edge at least 1 (control edges carry no bytes but still tie
// ops). No op weighs more than a quarter of the average group: heavier ops
// make METIS's initial bisections come out empty. Empty parts METIS may
// still leave are filled with one op each from the largest parts. With
// fewer than 8 ops per group METIS fails that way whatever the weights, so
// there the ops joined by the most bytes are merged first (Kruskal's
// algorithm stopped at num_groups trees), without balance.
// Errors: num_groups < 1 or > num_ops, imbalance < 0, or METIS failing.
StatusOr<Grouping> MetisGrouping(const Graph& graph,
                                 const MetisGroupingOptions& options);

struct FluidGroupingOptions {
  int num_groups = 256;      // k. Default: 256.
  uint64_t seed = 1;         // Default: 1.
  int max_iterations = 100;  // Passes over all ops. Default: 100 (networkx).
};

// Exactly num_groups non-empty groups by the asynchronous fluid-communities
// algorithm (Parés et al., 2017), unweighted as networkx's asyn_fluidc that
// EAGLE ran: k fluids start at k random ops; in passes over the ops in
// random order, each op joins the community of greatest summed density
// (1 / community size) among itself and its neighbours, keeping its own on
// ties; it stops after a pass without change or max_iterations passes.
// Then each community keeps its largest connected piece and the other
// pieces are flooded from their neighbours, so on a connected graph every
// group is connected. A disconnected graph is first made connected by
// virtual edges chaining its components (each component's lowest op to the
// next component's), so groups may then span components.
// Errors: num_groups < 1 or > num_ops, max_iterations < 1.
StatusOr<Grouping> FluidGrouping(const Graph& graph,
                                 const FluidGroupingOptions& options);

// ---------------------------------------------------------------------------
// The coarsened group graph.

struct GroupEdge {
  GroupId src = 0;
  GroupId dst = 0;
  // Tensor bytes from src to dst, each tensor once per consumer group. 0 for
  // a pair joined only by control edges.
  int64_t bytes = 0;
};

struct GroupGraph {
  int num_groups = 0;
  // Per group: sums over its ops, and its op count.
  std::vector<double> flops;
  std::vector<int64_t> bytes_accessed;
  std::vector<int64_t> persistent_bytes;
  std::vector<int64_t> output_bytes;
  std::vector<int32_t> num_ops;
  // Persistent + temporary + output bytes of its ops, as if every output
  // lived the whole step: what a placer reserves so that the simulator,
  // which frees outputs earlier, finds the placement fits.
  std::vector<int64_t> memory_estimate;
  // The device kinds every op of the group allows (intersection). Empty
  // when none suits all its ops (possible for METIS and fluid groups, never
  // for co-location groups); ExpandGroupPlacement then moves the ops a
  // chosen device forbids.
  std::vector<DeviceKindSet> allowed_devices;
  // Edges between distinct groups, sorted by (src, dst), no duplicates.
  std::vector<GroupEdge> edges;
  // The order a sequence policy reads groups in: a topological order of the
  // group graph's strongly connected components, ties and the groups of one
  // component by id. Merging creates cycles (a forward op's group reaches
  // its gradient's group through the backward pass, and back), and no
  // topological order of groups exists then; this is the nearest to one.
  std::vector<GroupId> order;
  // Whether the group graph has no cycle (then `order` is topological).
  bool acyclic = true;
};

// REQUIRES: ValidateGrouping(graph, grouping) is OK.
GroupGraph CoarsenGraph(const Graph& graph, const Grouping& grouping);

// The op placement of a group placement: every op on its group's device,
// except ops whose kind that device is not, which go to the first device of
// the cluster of a kind they allow. Errors: group_devices of the wrong
// size or naming a device the cluster lacks, a grouping that does not
// validate, or an op no device of the cluster may run.
StatusOr<Placement> ExpandGroupPlacement(
    const Graph& graph, const Cluster& cluster, const Grouping& grouping,
    const std::vector<DeviceId>& group_devices);

}  // namespace dplace

#endif  // DPLACE_GROUPING_GROUPING_H_
