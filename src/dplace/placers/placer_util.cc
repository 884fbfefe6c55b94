#include "dplace/placers/placer_util.h"

#include <algorithm>
#include <unordered_map>

namespace dplace {

std::vector<DeviceId> AllowedDevices(const Graph& graph, const Cluster& cluster,
                                     OpId op) {
  std::vector<DeviceId> out;
  const DeviceKindSet allowed = graph.allowed_devices(op);
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    if (allowed.Contains(cluster.device(d).kind)) out.push_back(d);
  }
  return out;
}

Status CheckPlaceable(const PlacementProblem& problem, bool need_gpu) {
  const Graph& g = *problem.graph;
  const Cluster& c = *problem.cluster;
  if (need_gpu && c.DevicesOfKind(DeviceKind::kGpu).empty()) {
    return InfeasibleError("cluster " + c.name() + " has no GPU");
  }
  DeviceKindSet kinds;
  for (const Device& d : c.devices()) kinds.Add(d.kind);
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if ((g.allowed_devices(op).bits() & kinds.bits()) == 0) {
      return InfeasibleError("op " + g.op_name(op) +
                             " may run on no device of cluster " + c.name());
    }
  }
  return Status::Ok();
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

namespace {

std::string CutScope(const std::string& scope, int depth) {
  size_t pos = 0;
  for (int i = 0; i < depth; ++i) {
    pos = scope.find('/', pos);
    if (pos == std::string::npos) return scope;
    if (i + 1 < depth) ++pos;
  }
  return scope.substr(0, pos);
}

int MaxScopeDepth(const Graph& graph) {
  int deepest = 1;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const std::string& s = graph.scope(op);
    deepest = std::max<int>(
        deepest, 1 + static_cast<int>(std::count(s.begin(), s.end(), '/')));
  }
  return deepest;
}

std::vector<int32_t> LayersAtDepth(const Graph& graph, int depth,
                                   int* num_layers) {
  std::vector<int32_t> layer(graph.num_ops());
  std::unordered_map<std::string, int32_t> ids;
  for (OpId op : graph.topological_order()) {
    auto [it, inserted] = ids.emplace(CutScope(graph.scope(op), depth),
                                      static_cast<int32_t>(ids.size()));
    layer[op] = it->second;
  }
  *num_layers = static_cast<int>(ids.size());
  return layer;
}

}  // namespace

std::vector<int32_t> ScopeLayers(const Graph& graph, int depth, int min_layers,
                                 int* num_layers) {
  if (depth > 0) return LayersAtDepth(graph, depth, num_layers);
  const int deepest = MaxScopeDepth(graph);
  for (int d = 1; d < deepest; ++d) {
    std::vector<int32_t> layer = LayersAtDepth(graph, d, num_layers);
    if (*num_layers >= min_layers) return layer;
  }
  return LayersAtDepth(graph, deepest, num_layers);
}

Status CheckSearchRequest(const PlacementProblem& problem,
                          const Environment* environment,
                          const SearchOptions& options) {
  if (!problem.graph || !problem.cluster || !problem.cost || !environment) {
    return InvalidArgumentError("incomplete problem");
  }
  const SearchBudget& budget = options.budget;
  if (budget.samples < 0 || budget.seconds < 0 ||
      (budget.samples == 0 && budget.seconds == 0)) {
    return InvalidArgumentError(
        "the search needs a budget: samples > 0 or seconds > 0");
  }
  const Cluster& cluster = *problem.cluster;
  if (cluster.num_devices() < 2) {
    return InvalidArgumentError(
        "a search needs a cluster of at least two devices; cluster " +
        cluster.name() + " has " + std::to_string(cluster.num_devices()));
  }
  if (environment->graph().hash() != problem.graph->hash() ||
      environment->cluster().name() != cluster.name()) {
    return InvalidArgumentError(
        "the environment evaluates another graph or cluster than the "
        "problem's");
  }
  if (options.checkpoint_every < 1) {
    return InvalidArgumentError("checkpoint_every must be >= 1");
  }
  return CheckPlaceable(problem);
}

}  // namespace dplace
