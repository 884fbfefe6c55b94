// The papers' simplest baselines: one device, the human expert, random and
// round-robin placements.
#include <algorithm>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "dplace/placers/placer.h"

namespace dplace {
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

// The layer of every op from its scope path: the scope cut to `depth`
// components ("encoder/layer_2/lstm" at depth 2 is "encoder/layer_2"). With
// depth 0 the depth is chosen as the smallest that yields at least
// `min_layers` distinct layers (or the deepest). Layers are numbered in
// topological order of their first op; returns the per-op layer index.
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

// Every op on the first device of `kind`; ops that may not run there go to
// the first device of a kind they allow.
StatusOr<Placement> OnFirstDeviceOf(const PlacementProblem& problem,
                                    DeviceKind kind) {
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
  const std::vector<DeviceId> devices = problem.cluster->DevicesOfKind(kind);
  if (devices.empty()) {
    return InfeasibleError("cluster " + problem.cluster->name() + " has no " +
                           std::string(DeviceKindName(kind)));
  }
  return SingleDevicePlacement(*problem.graph, *problem.cluster, devices[0]);
}

class SingleCpuPlacer : public Placer {
 public:
  using Placer::Placer;
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }
  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    return OnFirstDeviceOf(problem, DeviceKind::kCpu);
  }
};

class SingleGpuPlacer : public Placer {
 public:
  using Placer::Placer;
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }
  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    return OnFirstDeviceOf(problem, DeviceKind::kGpu);
  }
};

class ExpertPlacer : public Placer {
 public:
  using Placer::Placer;
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }
  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    if (!problem.expert) {
      return InvalidArgumentError(
          "graph " + problem.graph->name() +
          " has no human-expert placement (only zoo models have one; use "
          "--model zoo:NAME)");
    }
    DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
    return problem.expert();
  }
};

// Each colocation-hint group (an op with its gradient ops, a parameter with
// its update) on a uniformly random device among those its ops allow.
class RandomPlacer : public Placer {
 public:
  using Placer::Placer;
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }
  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
    const Graph& g = *problem.graph;
    const Cluster& c = *problem.cluster;
    const HintGroups groups = ColocationHintGroups(g);
    // Kinds every op of a group allows.
    std::vector<uint8_t> allowed(groups.num_groups, 0xff);
    for (OpId op = 0; op < g.num_ops(); ++op) {
      allowed[groups.group[op]] &= g.allowed_devices(op).bits();
    }
    std::mt19937_64 rng(problem.seed);
    std::vector<DeviceId> group_device(groups.num_groups);
    for (int grp = 0; grp < groups.num_groups; ++grp) {
      std::vector<DeviceId> candidates;
      for (DeviceId d = 0; d < c.num_devices(); ++d) {
        if (allowed[grp] & (1u << static_cast<int>(c.device(d).kind))) {
          candidates.push_back(d);
        }
      }
      group_device[grp] =
          candidates.empty()
              ? -1  // Ops disagree on kinds: each picks for itself below.
              : candidates[std::uniform_int_distribution<size_t>(
                    0, candidates.size() - 1)(rng)];
    }
    Placement placement(g.num_ops());
    for (OpId op = 0; op < g.num_ops(); ++op) {
      DeviceId d = group_device[groups.group[op]];
      if (d < 0) {
        const std::vector<DeviceId> own = AllowedDevices(g, c, op);
        d = own[std::uniform_int_distribution<size_t>(0, own.size() - 1)(rng)];
      }
      placement[op] = d;
    }
    return placement;
  }
};

// Layers (scope paths cut to a depth) dealt to the GPUs in turn, in
// topological order; ops a GPU may not run go to the CPU.
struct RoundRobinSettings {
  // Scope components that name a layer; 0 picks the smallest depth giving
  // at least two layers per GPU. Default: 0.
  int depth = 0;
};

class RoundRobinPlacer : public Placer {
 public:
  explicit RoundRobinPlacer(RoundRobinSettings settings)
      : Placer("round-robin"), settings_(settings) {}
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }

  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem, /*need_gpu=*/true));
    const Graph& g = *problem.graph;
    const Cluster& c = *problem.cluster;
    const std::vector<DeviceId> gpus = c.DevicesOfKind(DeviceKind::kGpu);
    int num_layers = 0;
    const std::vector<int32_t> layer = ScopeLayers(
        g, settings_.depth, 2 * static_cast<int>(gpus.size()), &num_layers);
    Placement placement(g.num_ops());
    for (OpId op = 0; op < g.num_ops(); ++op) {
      const DeviceId gpu = gpus[layer[op] % gpus.size()];
      placement[op] = g.allowed_devices(op).Contains(DeviceKind::kGpu)
                          ? gpu
                          : AllowedDevices(g, c, op)[0];
    }
    return placement;
  }

 private:
  RoundRobinSettings settings_;
};

StatusOr<std::unique_ptr<Method>> MakeRoundRobin(const MethodOptions& options) {
  RoundRobinSettings settings;
  OptionReader reader("round-robin", options);
  reader.Int("depth", &settings.depth);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  if (settings.depth < 0) {
    return InvalidArgumentError("method round-robin: depth must be >= 0");
  }
  return std::unique_ptr<Method>(new RoundRobinPlacer(settings));
}

REGISTER_METHOD("single-cpu", 0, "every op on the first CPU",
                NoOptions<SingleCpuPlacer>("single-cpu"));
REGISTER_METHOD("single-gpu", 1,
                "every op on the first GPU; ops a GPU may not run on the CPU",
                NoOptions<SingleGpuPlacer>("single-gpu"));
REGISTER_METHOD("expert", 2,
                "the model family's human-expert placement (zoo models: CNNs "
                "on one GPU, RNNs one LSTM layer per GPU)",
                NoOptions<ExpertPlacer>("expert"));
REGISTER_METHOD("random", 3,
                "each colocation group on a uniformly random allowed device "
                "(seeded)",
                NoOptions<RandomPlacer>("random"));
REGISTER_METHOD("round-robin", 4,
                "layers (scope paths) dealt to the GPUs in turn; option "
                "depth=N",
                MakeRoundRobin);

}  // namespace
}  // namespace dplace
