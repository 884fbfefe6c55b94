// Groupings, ColocRL's co-location heuristics, the coarsened group graph and
// the mapping of a group placement back to ops.
#include "dplace/grouping/grouping.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "dplace/grouping/op_adjacency.h"

namespace dplace {
namespace {

// Union-find over ops that only merges sets of equal allowed device kinds,
// so every set's ops share one allowed set.
class KindPreservingSets {
 public:
  explicit KindPreservingSets(const Graph& graph)
      : parent_(graph.num_ops()), allowed_(graph.num_ops()) {
    std::iota(parent_.begin(), parent_.end(), 0);
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      allowed_[op] = graph.allowed_devices(op);
    }
  }

  OpId Find(OpId op) {
    while (parent_[op] != op) {
      parent_[op] = parent_[parent_[op]];  // Path halving.
      op = parent_[op];
    }
    return op;
  }

  // Returns whether a and b are now in one set (false when their allowed
  // kinds differ).
  bool Union(OpId a, OpId b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return true;
    if (!(allowed_[a] == allowed_[b])) return false;
    // The smaller id becomes the root: deterministic and cheap enough,
    // since Find() halves paths.
    if (b < a) std::swap(a, b);
    parent_[b] = a;
    return true;
  }

  std::vector<int32_t> Labels() {
    std::vector<int32_t> labels(parent_.size());
    for (OpId op = 0; op < static_cast<OpId>(parent_.size()); ++op) {
      labels[op] = Find(op);
    }
    return labels;
  }

 private:
  std::vector<OpId> parent_;
  std::vector<DeviceKindSet> allowed_;
};

// Unions the ops that share a non-empty key of `key_of`.
void UnionByKey(const Graph& graph, KindPreservingSets& sets,
                const std::function<std::string(OpId)>& key_of) {
  std::unordered_map<std::string, OpId> first;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    std::string key = key_of(op);
    if (key.empty()) continue;
    // The allowed set is part of the key: a hint across kinds is honoured
    // per kind set rather than dropped.
    key.push_back('\0');
    key.push_back(static_cast<char>(graph.allowed_devices(op).bits()));
    auto [it, inserted] = first.emplace(std::move(key), op);
    if (!inserted) sets.Union(it->second, op);
  }
}

// The scope prefix that rule 3 groups by; empty when the rule does not
// apply to this scope.
std::string ScopeKey(const std::string& scope, const ColocationOptions& o) {
  if (!o.scope_marker.empty()) {
    size_t start = 0;
    while (start <= scope.size()) {
      size_t end = scope.find('/', start);
      if (end == std::string::npos) end = scope.size();
      if (std::string_view(scope)
              .substr(start, end - start)
              .rfind(o.scope_marker, 0) == 0) {
        return scope.substr(0, end);
      }
      start = end + 1;
    }
    return "";
  }
  if (o.scope_depth <= 0 || scope.empty()) return "";
  int components = 1;
  for (size_t i = 0; i < scope.size(); ++i) {
    if (scope[i] != '/') continue;
    if (components == o.scope_depth) return scope.substr(0, i);
    ++components;
  }
  return components >= o.scope_depth ? scope : "";
}

// Rule 2, to a fixed point. Each round finds, for every group, the one
// other group all its out-edges reach (if any), then merges all such pairs;
// a chain collapses in one round, and merges that make a fork's consumers
// one group let the fork join them in a later round.
// Rule 2, within the limits of `options`: no merge takes the groups below
// min_groups or a group past max_group_persistent_bytes.
void AbsorbSingleConsumers(const Graph& graph, const ColocationOptions& options,
                           KindPreservingSets& sets) {
  constexpr OpId kNone = -1, kMany = -2;
  const int64_t cap = options.max_group_persistent_bytes > 0
                          ? options.max_group_persistent_bytes
                          : std::numeric_limits<int64_t>::max();
  std::vector<int64_t> bytes(graph.num_ops(), 0);  // Per root.
  int64_t groups = 0;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    bytes[sets.Find(op)] += graph.persistent_bytes(op);
    groups += sets.Find(op) == op;
  }
  std::vector<OpId> consumer(graph.num_ops());
  std::vector<std::pair<OpId, OpId>> merges;
  while (true) {
    std::fill(consumer.begin(), consumer.end(), kNone);
    for (EdgeId e = 0; e < graph.num_edges(); ++e) {
      const OpId src = sets.Find(graph.edge_src(e));
      const OpId dst = sets.Find(graph.edge_dst(e));
      if (src == dst) continue;
      OpId& c = consumer[src];
      if (c == kNone) {
        c = dst;
      } else if (c != dst) {
        c = kMany;
      }
    }
    merges.clear();
    for (OpId g = 0; g < graph.num_ops(); ++g) {
      if (consumer[g] >= 0) merges.emplace_back(g, consumer[g]);
    }
    bool merged = false;
    for (auto [g, h] : merges) {
      const OpId a = sets.Find(g), b = sets.Find(h);
      if (a == b || groups <= options.min_groups || bytes[a] > cap - bytes[b] ||
          !sets.Union(a, b)) {
        continue;
      }
      bytes[sets.Find(a)] = bytes[a] + bytes[b];
      --groups;
      merged = true;
    }
    if (!merged) return;
  }
}

// Tarjan's strongly connected components, iteratively (group graphs can
// have long paths). component[v] numbers components in reverse topological
// order of the condensation, as Tarjan finds them.
std::vector<int32_t> StronglyConnectedComponents(
    int n, const std::vector<int32_t>& offsets,
    const std::vector<int32_t>& targets, int* num_components) {
  std::vector<int32_t> index(n, -1), low(n, 0), component(n, -1);
  std::vector<int32_t> stack, call_stack, next_edge(n, 0);
  std::vector<char> on_stack(n, 0);
  int32_t counter = 0, components = 0;
  for (int32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    call_stack.push_back(root);
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = 1;
    next_edge[root] = offsets[root];
    while (!call_stack.empty()) {
      const int32_t v = call_stack.back();
      if (next_edge[v] < offsets[v + 1]) {
        const int32_t w = targets[next_edge[v]++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = 1;
          next_edge[w] = offsets[w];
          call_stack.push_back(w);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      call_stack.pop_back();
      if (!call_stack.empty()) {
        const int32_t parent = call_stack.back();
        low[parent] = std::min(low[parent], low[v]);
      }
      if (low[v] == index[v]) {
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          component[w] = components;
        } while (w != v);
        ++components;
      }
    }
  }
  *num_components = components;
  return component;
}

// A topological order of the condensation of the group graph; among ready
// components the one holding the smallest group id goes first, and a
// component's groups follow in id order.
std::vector<GroupId> GroupOrder(int n, const std::vector<GroupEdge>& edges,
                                bool* acyclic) {
  std::vector<int32_t> offsets(n + 1, 0), targets;
  targets.reserve(edges.size());
  for (const GroupEdge& e : edges) ++offsets[e.src + 1];
  for (int g = 0; g < n; ++g) offsets[g + 1] += offsets[g];
  for (const GroupEdge& e : edges) targets.push_back(e.dst);  // Sorted.

  int num_components = 0;
  const std::vector<int32_t> component =
      StronglyConnectedComponents(n, offsets, targets, &num_components);
  *acyclic = num_components == n;

  std::vector<std::vector<GroupId>> members(num_components);
  for (GroupId g = 0; g < n; ++g) members[component[g]].push_back(g);
  std::vector<int32_t> in_degree(num_components, 0);
  std::vector<std::vector<int32_t>> successors(num_components);
  for (const GroupEdge& e : edges) {
    const int32_t a = component[e.src], b = component[e.dst];
    if (a == b) continue;
    successors[a].push_back(b);
    ++in_degree[b];
  }
  // Keyed by the component's smallest group id (its first member).
  using Entry = std::pair<GroupId, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (int32_t c = 0; c < num_components; ++c) {
    if (in_degree[c] == 0) ready.emplace(members[c].front(), c);
  }
  std::vector<GroupId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int32_t c = ready.top().second;
    ready.pop();
    order.insert(order.end(), members[c].begin(), members[c].end());
    for (int32_t d : successors[c]) {
      if (--in_degree[d] == 0) ready.emplace(members[d].front(), d);
    }
  }
  return order;
}

}  // namespace

Grouping MakeGrouping(const Graph& graph, const std::vector<int32_t>& labels) {
  Grouping out;
  out.group.assign(graph.num_ops(), -1);
  std::unordered_map<int32_t, GroupId> ids;
  for (OpId op : graph.topological_order()) {
    auto [it, inserted] = ids.emplace(labels[op], out.num_groups);
    if (inserted) ++out.num_groups;
    out.group[op] = it->second;
  }
  return out;
}

Status ValidateGrouping(const Graph& graph, const Grouping& grouping) {
  if (static_cast<int>(grouping.group.size()) != graph.num_ops()) {
    return InvalidArgumentError("grouping: has " +
                                std::to_string(grouping.group.size()) +
                                " entries, expected one per op (" +
                                std::to_string(graph.num_ops()) + ")");
  }
  if (grouping.num_groups < 0) {
    return InvalidArgumentError("grouping: negative num_groups");
  }
  std::vector<int32_t> size(grouping.num_groups, 0);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const GroupId g = grouping.group[op];
    if (g < 0 || g >= grouping.num_groups) {
      return InvalidArgumentError("grouping: op " + graph.op_name(op) +
                                  " is in group " + std::to_string(g) +
                                  ", expected [0, " +
                                  std::to_string(grouping.num_groups) + ")");
    }
    ++size[g];
  }
  for (GroupId g = 0; g < grouping.num_groups; ++g) {
    if (size[g] == 0) {
      return InvalidArgumentError("grouping: group " + std::to_string(g) +
                                  " is empty");
    }
  }
  return Status::Ok();
}

std::vector<std::vector<OpId>> GroupMembers(const Graph& graph,
                                            const Grouping& grouping) {
  std::vector<std::vector<OpId>> members(grouping.num_groups);
  for (OpId op : graph.topological_order()) {
    members[grouping.group[op]].push_back(op);
  }
  return members;
}

namespace {

// Calls fn(dst_group, tensor) once per distinct (tensor, consumer group) of
// the data outputs of `op` that leave op's group, and fn(dst_group, -1) for
// each control edge that leaves it.
template <typename Fn>
void ForEachOutgoing(const Graph& graph, const Grouping& grouping, OpId op,
                     std::vector<std::pair<TensorId, GroupId>>& scratch,
                     Fn fn) {
  const GroupId own = grouping.group[op];
  scratch.clear();
  for (EdgeId e : graph.out_edges(op)) {
    const GroupId g = grouping.group[graph.edge_dst(e)];
    if (g == own) continue;
    scratch.emplace_back(graph.edge_tensor(e), g);
  }
  std::sort(scratch.begin(), scratch.end());
  scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
  for (auto [tensor, g] : scratch) fn(g, tensor);
}

}  // namespace

int64_t CutBytes(const Graph& graph, const Grouping& grouping) {
  int64_t total = 0;
  std::vector<std::pair<TensorId, GroupId>> scratch;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    ForEachOutgoing(graph, grouping, op, scratch,
                    [&](GroupId, TensorId tensor) {
                      if (tensor != kControlEdge) {
                        total += graph.tensor_bytes(tensor);
                      }
                    });
  }
  return total;
}

Grouping ColocationGrouping(const Graph& graph,
                            const ColocationOptions& options) {
  KindPreservingSets sets(graph);
  if (options.use_colocation_hints) {
    UnionByKey(graph, sets,
               [&](OpId op) { return graph.colocation_group(op); });
  }
  if (!options.scope_marker.empty() || options.scope_depth > 0) {
    UnionByKey(graph, sets,
               [&](OpId op) { return ScopeKey(graph.scope(op), options); });
  }
  if (options.absorb_single_consumer) {
    AbsorbSingleConsumers(graph, options, sets);
  }
  return MakeGrouping(graph, sets.Labels());
}

GroupGraph CoarsenGraph(const Graph& graph, const Grouping& grouping) {
  const int n = grouping.num_groups;
  GroupGraph out;
  out.num_groups = n;
  out.flops.assign(n, 0);
  out.bytes_accessed.assign(n, 0);
  out.persistent_bytes.assign(n, 0);
  out.output_bytes.assign(n, 0);
  out.num_ops.assign(n, 0);
  out.memory_estimate.assign(n, 0);
  out.allowed_devices.assign(n, DeviceKindSet::All());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const GroupId g = grouping.group[op];
    int64_t outputs = 0;
    for (int i = 0; i < graph.num_outputs(op); ++i) {
      outputs += graph.tensor_bytes(graph.output(op, i));
    }
    out.flops[g] += graph.flops(op);
    out.bytes_accessed[g] += graph.bytes_accessed(op);
    out.persistent_bytes[g] += graph.persistent_bytes(op);
    out.output_bytes[g] += outputs;
    ++out.num_ops[g];
    out.memory_estimate[g] += OpMemoryEstimate(graph, op);
    const DeviceKindSet allowed = graph.allowed_devices(op);
    DeviceKindSet both;
    for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kGpu}) {
      if (allowed.Contains(kind) && out.allowed_devices[g].Contains(kind)) {
        both.Add(kind);
      }
    }
    out.allowed_devices[g] = both;
  }

  std::vector<GroupEdge> raw;
  std::vector<std::pair<TensorId, GroupId>> scratch;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const GroupId src = grouping.group[op];
    ForEachOutgoing(
        graph, grouping, op, scratch, [&](GroupId dst, TensorId tensor) {
          raw.push_back(
              {src, dst,
               tensor == kControlEdge ? 0 : graph.tensor_bytes(tensor)});
        });
  }
  std::sort(raw.begin(), raw.end(), [](const GroupEdge& a, const GroupEdge& b) {
    return std::tie(a.src, a.dst) < std::tie(b.src, b.dst);
  });
  for (const GroupEdge& e : raw) {
    if (!out.edges.empty() && out.edges.back().src == e.src &&
        out.edges.back().dst == e.dst) {
      out.edges.back().bytes += e.bytes;
    } else {
      out.edges.push_back(e);
    }
  }
  out.order = GroupOrder(n, out.edges, &out.acyclic);
  return out;
}

StatusOr<Placement> ExpandGroupPlacement(
    const Graph& graph, const Cluster& cluster, const Grouping& grouping,
    const std::vector<DeviceId>& group_devices) {
  DPLACE_RETURN_IF_ERROR(ValidateGrouping(graph, grouping));
  if (static_cast<int>(group_devices.size()) != grouping.num_groups) {
    return InvalidArgumentError("group placement: has " +
                                std::to_string(group_devices.size()) +
                                " devices, expected one per group (" +
                                std::to_string(grouping.num_groups) + ")");
  }
  for (GroupId g = 0; g < grouping.num_groups; ++g) {
    const DeviceId d = group_devices[g];
    if (d < 0 || d >= cluster.num_devices()) {
      return InvalidArgumentError(
          "group placement: group " + std::to_string(g) + " is on device " +
          std::to_string(d) + ", but cluster " + cluster.name() + " has " +
          std::to_string(cluster.num_devices()) + " devices");
    }
  }
  // The first device of each allowed set (index: DeviceKindSet bits).
  constexpr int kSets = 4;
  DeviceId first_allowed[kSets];
  std::fill(first_allowed, first_allowed + kSets, -1);
  for (DeviceId d = cluster.num_devices() - 1; d >= 0; --d) {
    for (int bits = 0; bits < kSets; ++bits) {
      if (bits & (1 << static_cast<int>(cluster.device(d).kind))) {
        first_allowed[bits] = d;
      }
    }
  }
  Placement placement(graph.num_ops());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const DeviceId d = group_devices[grouping.group[op]];
    const DeviceKindSet allowed = graph.allowed_devices(op);
    if (allowed.Contains(cluster.device(d).kind)) {
      placement[op] = d;
      continue;
    }
    placement[op] = first_allowed[allowed.bits()];
    if (placement[op] < 0) {
      return InfeasibleError("op " + graph.op_name(op) +
                             " may run on no device of cluster " +
                             cluster.name());
    }
  }
  return placement;
}

namespace grouping_internal {

OpAdjacency MakeOpAdjacency(const Graph& graph) {
  const int n = graph.num_ops();
  // (op, neighbour, bytes) from both ends of every edge, data edges counted
  // once per (tensor, consumer op).
  struct Entry {
    OpId op, neighbor;
    int64_t bytes;
  };
  std::vector<Entry> entries;
  entries.reserve(2 * static_cast<size_t>(graph.num_edges()));
  std::vector<TensorId> seen;
  for (OpId dst = 0; dst < n; ++dst) {
    seen.clear();
    for (EdgeId e : graph.in_edges(dst)) {
      const OpId src = graph.edge_src(e);
      if (src == dst) continue;
      const TensorId t = graph.edge_tensor(e);
      if (t != kControlEdge) {
        if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
        seen.push_back(t);
      }
      const int64_t bytes = t == kControlEdge ? 0 : graph.tensor_bytes(t);
      entries.push_back({src, dst, bytes});
      entries.push_back({dst, src, bytes});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.op, a.neighbor) < std::tie(b.op, b.neighbor);
  });
  OpAdjacency adj;
  adj.offsets.assign(n + 1, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (i > 0 && entries[i - 1].op == e.op &&
        entries[i - 1].neighbor == e.neighbor) {
      adj.bytes.back() += e.bytes;  // Another tensor between the same pair.
      continue;
    }
    adj.neighbors.push_back(e.neighbor);
    adj.bytes.push_back(e.bytes);
    ++adj.offsets[e.op + 1];
  }
  for (int v = 0; v < n; ++v) adj.offsets[v + 1] += adj.offsets[v];
  return adj;
}

}  // namespace grouping_internal
}  // namespace dplace
