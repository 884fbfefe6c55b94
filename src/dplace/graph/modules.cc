#include "dplace/graph/modules.h"

#include <numeric>
#include <unordered_map>
#include <utility>

namespace dplace {
namespace {

// Union-find over op ids, for merging colocation groups.
class DisjointSets {
 public:
  explicit DisjointSets(int n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int a, int b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<int> parent_;
};

// Joins every op to the first op seen with the same key (skipping empty
// keys).
void JoinByKey(const Graph& graph, DisjointSets* sets,
               std::string (*key_of)(const Graph&, OpId, int), int depth) {
  std::unordered_map<std::string, OpId> first;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const std::string key = key_of(graph, op, depth);
    if (key.empty()) continue;
    auto [it, fresh] = first.emplace(key, op);
    if (!fresh) sets->Union(op, it->second);
  }
}

std::string ColocationKey(const Graph& graph, OpId op, int) {
  return graph.colocation_group(op);
}

std::string ModuleKey(const Graph& graph, OpId op, int depth) {
  return ScopeDepth(graph.scope(op)) >= depth
             ? ModulePath(graph.scope(op), depth)
             : std::string();
}

}  // namespace

std::vector<std::string> ModulePaths(const std::string& scope) {
  std::vector<std::string> paths;
  std::string path;
  size_t begin = 0;
  while (begin <= scope.size() && !scope.empty()) {
    size_t end = scope.find('/', begin);
    if (end == std::string::npos) end = scope.size();
    const std::string part = scope.substr(begin, end - begin);
    if (!part.empty()) {
      const bool spells_parent = !path.empty() && part.size() > path.size() &&
                                 part.compare(0, path.size(), path) == 0 &&
                                 part[path.size()] == '.';
      path = path.empty() || spells_parent ? part : path + "." + part;
      paths.push_back(path);
    }
    begin = end + 1;
  }
  return paths;
}

std::string ModulePath(const std::string& scope, int depth) {
  const std::vector<std::string> paths = ModulePaths(scope);
  if (paths.empty()) return "";
  if (depth <= 0 || depth > static_cast<int>(paths.size())) {
    return paths.back();
  }
  return paths[depth - 1];
}

int ScopeDepth(const std::string& scope) {
  return static_cast<int>(ModulePaths(scope).size());
}

StatusOr<Graph> ColocateModules(const Graph& graph, int depth) {
  DisjointSets sets(graph.num_ops());
  JoinByKey(graph, &sets, ColocationKey, depth);
  JoinByKey(graph, &sets, ModuleKey, depth);
  std::vector<int> members(graph.num_ops(), 0);
  for (OpId op = 0; op < graph.num_ops(); ++op) ++members[sets.Find(op)];
  GraphBuilder builder(graph.name());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    OpSpec spec = graph.SpecOf(op);
    // An op alone keeps its group (or none).
    const int root = sets.Find(op);
    if (members[root] > 1)
      spec.colocation_group = "module:" + graph.op_name(root);
    builder.AddOp(std::move(spec));
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    for (EdgeId e : graph.in_edges(op)) {
      const OpId src = graph.edge_src(e);
      if (graph.is_control(e)) {
        builder.AddControlEdge(src, op);
      } else {
        builder.AddEdge(src, graph.edge_tensor(e) - graph.output(src, 0), op);
      }
    }
  }
  return std::move(builder).Build();
}

int KeepGroupsWhole(const Graph& graph, const std::vector<DeviceKind>& kinds,
                    const std::vector<double>& weight,
                    std::vector<int32_t>* placement) {
  std::unordered_map<std::string, std::vector<OpId>> groups;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (!graph.colocation_group(op).empty()) {
      groups[graph.colocation_group(op)].push_back(op);
    }
  }
  const int devices = static_cast<int>(kinds.size());
  int moved = 0;
  for (const auto& entry : groups) {
    // A named reference: C++17 lambdas cannot capture structured bindings.
    const std::vector<OpId>& ops = entry.second;
    std::vector<double> on(devices, 0);
    bool split = false;
    for (OpId op : ops) {
      on[(*placement)[op]] += weight[op] + 1e-12;  // Ties: most ops.
      split = split || (*placement)[op] != (*placement)[ops[0]];
    }
    if (!split) continue;
    auto runs_all = [&](DeviceKind kind) {
      for (OpId op : ops) {
        if (!graph.allowed_devices(op).Contains(kind)) return false;
      }
      return true;
    };
    int best = -1;
    for (int d = 0; d < devices; ++d) {
      if (runs_all(kinds[d]) && (best < 0 || on[d] > on[best])) best = d;
    }
    if (best < 0) continue;  // No device runs every op of the group.
    for (OpId op : ops) {
      moved += (*placement)[op] != best;
      (*placement)[op] = best;
    }
  }
  return moved;
}

}  // namespace dplace
