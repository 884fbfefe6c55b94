// The METIS k-way grouper: EAGLE's METIS baseline (Lan et al., sec. III-B).
#include <metis.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dplace/grouping/grouping.h"
#include "dplace/grouping/op_adjacency.h"

namespace dplace {
namespace {

// Integer weights of one kind (vertex or edge) sum to at most this. METIS's
// idx_t is 32-bit here, and it adds weights (coarse vertices, part weights,
// cuts) and scales them by small factors internally, so the sums stay well
// below 2^31.
constexpr double kWeightBudget = double{1 << 26};

// Below this many ops per group METIS's initial partitioning bisects into
// empty sides (and prints about it); a simpler agglomeration takes over.
constexpr int kMinOpsPerGroup = 8;

// An op's vertex weight is capped at 1 / this of the average group weight.
constexpr double kMaxOpsShareOfGroup = 4;

// Scales non-negative values to integers >= 1 whose sum is at most
// kWeightBudget + count: 1 + floor(value / total * (budget - count)).
std::vector<idx_t> ScaleWeights(const std::vector<double>& values, double total,
                                size_t count) {
  std::vector<idx_t> out(values.size(), 1);
  if (total <= 0) return out;
  const double scale = std::max(0.0, kWeightBudget - count) / total;
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = 1 + static_cast<idx_t>(std::floor(values[i] * scale));
  }
  return out;
}

// METIS may leave parts empty (k close to n, heavy vertices). Each empty
// part takes the last op, in topological order, of the part with most ops.
void FillEmptyParts(const Graph& graph, int k, std::vector<idx_t>& part) {
  std::vector<std::vector<OpId>> members(k);
  for (OpId op : graph.topological_order()) members[part[op]].push_back(op);
  for (int p = 0; p < k; ++p) {
    if (!members[p].empty()) continue;
    int largest = 0;
    for (int q = 1; q < k; ++q) {
      if (members[q].size() > members[largest].size()) largest = q;
    }
    const OpId moved = members[largest].back();
    members[largest].pop_back();
    members[p].push_back(moved);
    part[moved] = p;
  }
}

// Kruskal's algorithm on the heaviest pairs first, stopped at k trees: ops
// joined by the most bytes merge first. Trees left over on a disconnected
// graph join the tree of op 0 until k remain.
std::vector<int32_t> AgglomerateHeaviestPairs(
    const grouping_internal::OpAdjacency& adj, int k) {
  const int n = adj.num_ops();
  std::vector<int32_t> parent(n);
  for (int v = 0; v < n; ++v) parent[v] = v;
  auto find = [&](int32_t v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  int trees = n;
  auto unite = [&](int32_t a, int32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    parent[std::max(a, b)] = std::min(a, b);
    --trees;
  };
  struct Pair {
    int64_t bytes;
    int32_t a, b;
  };
  std::vector<Pair> pairs;
  for (int32_t v = 0; v < n; ++v) {
    for (int32_t i = adj.offsets[v]; i < adj.offsets[v + 1]; ++i) {
      if (v < adj.neighbors[i])
        pairs.push_back({adj.bytes[i], v, adj.neighbors[i]});
    }
  }
  std::stable_sort(
      pairs.begin(), pairs.end(),
      [](const Pair& x, const Pair& y) { return x.bytes > y.bytes; });
  for (const Pair& p : pairs) {
    if (trees == k) break;
    unite(p.a, p.b);
  }
  for (int32_t v = 1; v < n && trees > k; ++v) unite(0, v);
  std::vector<int32_t> labels(n);
  for (int32_t v = 0; v < n; ++v) labels[v] = find(v);
  return labels;
}

}  // namespace

StatusOr<Grouping> MetisGrouping(const Graph& graph,
                                 const MetisGroupingOptions& options) {
  const int n = graph.num_ops();
  const int k = options.num_groups;
  if (k < 1 || k > n) {
    return InvalidArgumentError(
        "metis grouping: num_groups is " + std::to_string(k) +
        ", expected 1 .. the number of ops (" + std::to_string(n) + ")");
  }
  if (!(options.imbalance >= 0)) {
    return InvalidArgumentError("metis grouping: imbalance must be >= 0, got " +
                                std::to_string(options.imbalance));
  }
  if (k == 1) return MakeGrouping(graph, std::vector<int32_t>(n, 0));

  const grouping_internal::OpAdjacency adj =
      grouping_internal::MakeOpAdjacency(graph);
  if (n < kMinOpsPerGroup * k) {
    return MakeGrouping(graph, AgglomerateHeaviestPairs(adj, k));
  }
  std::vector<double> cost(n);
  double total_cost = 0;
  for (OpId op = 0; op < n; ++op) {
    cost[op] = options.cost_model != nullptr
                   ? options.cost_model->FastestOpTime(op)
                   : graph.flops(op);
    // An op no device may run has infinite time; weigh it as nothing.
    if (!std::isfinite(cost[op]) || cost[op] < 0) cost[op] = 0;
    total_cost += cost[op];
  }
  // No op weighs more than a fraction of a group's share. Otherwise the
  // recursive bisection of METIS's initial partitioning, which targets
  // exact part weights, leaves sides empty (and prints about it) once a few
  // ops outweigh a part: Inception-V3's big convolutions at k = 128 do.
  // A group holding one huge op is acceptable for a grouper; the placer
  // balances devices.
  const double cap = total_cost / (kMaxOpsShareOfGroup * k);
  total_cost = 0;
  for (double& c : cost) {
    c = std::min(c, cap);
    total_cost += c;
  }
  std::vector<double> bytes(adj.bytes.begin(), adj.bytes.end());
  double total_bytes = 0;
  for (double b : bytes) total_bytes += b;

  std::vector<idx_t> xadj(adj.offsets.begin(), adj.offsets.end());
  std::vector<idx_t> adjncy(adj.neighbors.begin(), adj.neighbors.end());
  std::vector<idx_t> vwgt = ScaleWeights(cost, total_cost, n);
  // Each pair appears from both ends, with equal values, so equal weights.
  std::vector<idx_t> adjwgt = ScaleWeights(bytes, total_bytes, bytes.size());

  idx_t options_array[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options_array);
  options_array[METIS_OPTION_NUMBERING] = 0;
  options_array[METIS_OPTION_SEED] =
      static_cast<idx_t>((options.seed ^ (options.seed >> 31)) & 0x7fffffff);
  options_array[METIS_OPTION_UFACTOR] =
      static_cast<idx_t>(std::lround(options.imbalance * 1000));

  idx_t nvtxs = n, ncon = 1, nparts = k, objval = 0;
  std::vector<idx_t> part(n, 0);
  const int rc = METIS_PartGraphKway(
      &nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(),
      /*vsize=*/nullptr, adjwgt.empty() ? nullptr : adjwgt.data(), &nparts,
      /*tpwgts=*/nullptr, /*ubvec=*/nullptr, options_array, &objval,
      part.data());
  if (rc != METIS_OK) {
    return InternalError("metis grouping: METIS_PartGraphKway failed (" +
                         std::string(rc == METIS_ERROR_MEMORY  ? "out of memory"
                                     : rc == METIS_ERROR_INPUT ? "bad input"
                                                               : "error") +
                         ") on graph " + graph.name());
  }
  FillEmptyParts(graph, k, part);
  return MakeGrouping(graph, std::vector<int32_t>(part.begin(), part.end()));
}

}  // namespace dplace
