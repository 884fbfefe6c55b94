// The papers' graph-partitioning baselines: Scotch's static mapper onto the
// real target architecture (`scotch`), and the same on the GPUs only
// (`mincut`), each followed by memory repair.
//
// Source graph: one vertex per unit (a colocation-hint group, see
// partition_graph.h), weighed by compute time; edges weighed by the bytes
// the units exchange. Target: a complete graph over the devices, vertices
// weighed by each device's speed on this graph, edges by the time a
// reference tensor takes between the two devices. Scotch computes target
// distances by a breadth-first walk, which on a complete graph is the direct
// edge, so the mapper sees every pair's own link cost. It then minimises
// sum(bytes x distance) while keeping each device's compute proportional to
// its speed.
#include <scotch.h>

#include <cmath>
#include <cstdint>

#include "dplace/placers/memory_repair.h"
#include "dplace/placers/partition_graph.h"
#include "dplace/placers/placer.h"

namespace dplace {
namespace {

static_assert(sizeof(SCOTCH_Num) == sizeof(int32_t),
              "weights are scaled for Debian's 32-bit libscotch");

// Sums of the integer weights handed to Scotch. It accumulates
// sum(edge weight x target distance) in SCOTCH_Num, so edge weights total
// 2^24 (both arcs of an edge counted) and distances at most kMaxDistance
// keep that below 2^31.
constexpr double kVertexWeightTotal = 1 << 24;
constexpr double kArcWeightTotal = 1 << 24;
constexpr int kMaxDistance = 64;
// Target distance of the cheapest link; sets the resolution of the others.
constexpr double kUnitDistance = 4;
// Target vertex weight of the fastest device.
constexpr double kFastestDeviceWeight = 1000;

struct ScotchSettings {
  // Map colocation-hint groups (an op with its gradients, a parameter with
  // its update) as one vertex, as the papers' frameworks keep them together.
  // Default: true.
  bool coarsen = true;
  // Load imbalance Scotch may leave on a device, as a fraction of its
  // speed-proportional share. Default: 0.05.
  double imbalance = 0.05;
  // Scotch's mapping strategy preset: default, quality, speed or balance.
  // Default: "default".
  std::string strategy = "default";
  // Simulations the memory repair may run. Default: 40.
  int repair_simulations = 40;
};

// Owns the Scotch objects of one mapping and frees them in reverse order.
class ScotchMapping {
 public:
  ScotchMapping() = default;
  ScotchMapping(const ScotchMapping&) = delete;
  ScotchMapping& operator=(const ScotchMapping&) = delete;
  ~ScotchMapping() {
    if (strat_ready_) SCOTCH_stratExit(&strat_);
    if (arch_strat_ready_) SCOTCH_stratExit(&arch_strat_);
    if (arch_ready_) SCOTCH_archExit(&arch_);
    if (bound_source_ready_) SCOTCH_graphExit(&bound_source_);
    if (bound_target_ready_) SCOTCH_graphExit(&bound_target_);
    if (source_ready_) SCOTCH_graphExit(&source_);
    if (target_ready_) SCOTCH_graphExit(&target_);
    if (context_ready_) SCOTCH_contextExit(&context_);
  }

  // Maps `source` onto the architecture built from `target`; parts[v] is a
  // target vertex, or -1 for a free vertex on input. The arrays must live
  // until Map() returns. One thread and a context-private random generator
  // seeded with `seed`, so the same inputs give the same mapping.
  Status Map(const std::vector<SCOTCH_Num>& source_offsets,
             const std::vector<SCOTCH_Num>& source_neighbors,
             const std::vector<SCOTCH_Num>& source_vertex_weights,
             const std::vector<SCOTCH_Num>& source_arc_weights,
             const std::vector<SCOTCH_Num>& target_offsets,
             const std::vector<SCOTCH_Num>& target_neighbors,
             const std::vector<SCOTCH_Num>& target_vertex_weights,
             const std::vector<SCOTCH_Num>& target_arc_weights,
             SCOTCH_Num strategy_flags, double imbalance, uint64_t seed,
             std::vector<SCOTCH_Num>* parts) {
    if (SCOTCH_contextInit(&context_) != 0) return Fail("contextInit");
    context_ready_ = true;
    if (SCOTCH_contextRandomClone(&context_) != 0) {
      return Fail("contextRandomClone");
    }
    SCOTCH_contextRandomSeed(
        &context_, static_cast<SCOTCH_Num>((seed ^ (seed >> 31)) & 0x7fffffff));
    if (SCOTCH_contextOptionSetNum(&context_, SCOTCH_OPTIONNUMDETERMINISTIC,
                                   1) != 0 ||
        SCOTCH_contextThreadSpawn(&context_, 1, nullptr) != 0) {
      return Fail("context options");
    }

    DPLACE_RETURN_IF_ERROR(Build(&source_, &source_ready_, source_offsets,
                                 source_neighbors, source_vertex_weights,
                                 source_arc_weights));
    DPLACE_RETURN_IF_ERROR(Build(&target_, &target_ready_, target_offsets,
                                 target_neighbors, target_vertex_weights,
                                 target_arc_weights));
    if (SCOTCH_contextBindGraph(&context_, &source_, &bound_source_) != 0) {
      return Fail("contextBindGraph");
    }
    bound_source_ready_ = true;
    if (SCOTCH_contextBindGraph(&context_, &target_, &bound_target_) != 0) {
      return Fail("contextBindGraph");
    }
    bound_target_ready_ = true;

    if (SCOTCH_stratInit(&arch_strat_) != 0) return Fail("stratInit");
    arch_strat_ready_ = true;
    if (SCOTCH_archInit(&arch_) != 0) return Fail("archInit");
    arch_ready_ = true;
    const SCOTCH_Num num_targets =
        static_cast<SCOTCH_Num>(target_offsets.size() - 1);
    if (SCOTCH_archBuild(&arch_, &bound_target_, 0, nullptr, &arch_strat_) !=
        0) {
      return Fail("archBuild");
    }
    if (SCOTCH_stratInit(&strat_) != 0) return Fail("stratInit");
    strat_ready_ = true;
    if (SCOTCH_stratGraphMapBuild(&strat_, strategy_flags, num_targets,
                                  imbalance) != 0) {
      return Fail("stratGraphMapBuild");
    }
    if (SCOTCH_graphMapFixed(&bound_source_, &arch_, &strat_, parts->data()) !=
        0) {
      return Fail("graphMapFixed");
    }
    return Status::Ok();
  }

 private:
  static Status Fail(const char* call) {
    return InternalError(std::string("SCOTCH_") + call + " failed");
  }

  static Status Build(SCOTCH_Graph* graph, bool* ready,
                      const std::vector<SCOTCH_Num>& offsets,
                      const std::vector<SCOTCH_Num>& neighbors,
                      const std::vector<SCOTCH_Num>& vertex_weights,
                      const std::vector<SCOTCH_Num>& arc_weights) {
    if (SCOTCH_graphInit(graph) != 0) return Fail("graphInit");
    *ready = true;
    const SCOTCH_Num num_vertices = static_cast<SCOTCH_Num>(offsets.size() - 1);
    if (SCOTCH_graphBuild(graph, 0, num_vertices, offsets.data(), nullptr,
                          vertex_weights.data(), nullptr,
                          static_cast<SCOTCH_Num>(neighbors.size()),
                          neighbors.data(), arc_weights.data()) != 0) {
      return Fail("graphBuild");
    }
    return Status::Ok();
  }

  SCOTCH_Context context_;
  SCOTCH_Graph source_, target_, bound_source_, bound_target_;
  SCOTCH_Arch arch_;
  SCOTCH_Strat arch_strat_, strat_;
  bool context_ready_ = false, source_ready_ = false, target_ready_ = false,
       bound_source_ready_ = false, bound_target_ready_ = false,
       arch_ready_ = false, arch_strat_ready_ = false, strat_ready_ = false;
};

SCOTCH_Num StrategyFlags(const std::string& name) {
  if (name == "quality") return SCOTCH_STRATQUALITY;
  if (name == "speed") return SCOTCH_STRATSPEED;
  if (name == "balance") return SCOTCH_STRATBALANCE;
  return SCOTCH_STRATDEFAULT;
}

class ScotchPlacer : public Placer {
 public:
  ScotchPlacer(std::string name, ScotchSettings settings, bool gpus_only)
      : Placer(std::move(name)),
        settings_(std::move(settings)),
        gpus_only_(gpus_only) {}

  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem, gpus_only_));
    const Cluster& cluster = *problem.cluster;
    const PartitionGraph pg =
        BuildPartitionGraph(*problem.graph, *problem.cost, settings_.coarsen);

    std::vector<DeviceId> targets;
    for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
      if (!gpus_only_ || cluster.device(d).kind == DeviceKind::kGpu) {
        targets.push_back(d);
      }
    }
    // Units no target may run (input pipelines under mincut) stay out of
    // the source graph, on the first device they allow; units only one
    // target may run are fixed to it (input pipelines on the CPU).
    std::vector<DeviceId> unit_device(pg.num_units, -1);
    std::vector<int32_t> vertex_of_unit(pg.num_units, -1);
    std::vector<int32_t> unit_of_vertex;
    std::vector<SCOTCH_Num> parts;
    for (int u = 0; u < pg.num_units; ++u) {
      std::vector<SCOTCH_Num> allowed;
      for (size_t t = 0; t < targets.size(); ++t) {
        if (pg.allowed[u].Contains(cluster.device(targets[t]).kind)) {
          allowed.push_back(static_cast<SCOTCH_Num>(t));
        }
      }
      if (allowed.empty()) {
        for (DeviceId d = 0; d < cluster.num_devices() && unit_device[u] < 0;
             ++d) {
          if (pg.allowed[u].Contains(cluster.device(d).kind))
            unit_device[u] = d;
        }
        continue;
      }
      vertex_of_unit[u] = static_cast<int32_t>(unit_of_vertex.size());
      unit_of_vertex.push_back(u);
      parts.push_back(allowed.size() == 1 ? allowed[0] : -1);
    }

    if (targets.size() == 1) {
      for (SCOTCH_Num& p : parts) p = 0;
    } else if (!unit_of_vertex.empty()) {
      DPLACE_RETURN_IF_ERROR(MapUnits(problem, pg, targets, vertex_of_unit,
                                      unit_of_vertex, &parts));
    }
    for (size_t v = 0; v < unit_of_vertex.size(); ++v) {
      unit_device[unit_of_vertex[v]] = targets[parts[v]];
    }
    MemoryRepairSettings repair;
    repair.max_simulations = settings_.repair_simulations;
    if (gpus_only_) {
      repair.destination_kinds = DeviceKindSet::Only(DeviceKind::kGpu);
    }
    return RepairMemory(
        problem, ExpandUnitPlacement(pg, cluster, std::move(unit_device)),
        repair);
  }

 private:
  Status MapUnits(const PlacementProblem& problem, const PartitionGraph& pg,
                  const std::vector<DeviceId>& targets,
                  const std::vector<int32_t>& vertex_of_unit,
                  const std::vector<int32_t>& unit_of_vertex,
                  std::vector<SCOTCH_Num>* parts) const {
    // Source graph: the units in the source, edges among them.
    std::vector<SCOTCH_Num> offsets = {0}, neighbors;
    std::vector<double> compute, arc_bytes;
    for (int32_t u : unit_of_vertex) {
      compute.push_back(pg.compute_seconds[u]);
      for (int i = pg.offsets[u]; i < pg.offsets[u + 1]; ++i) {
        const int32_t v = vertex_of_unit[pg.neighbors[i]];
        if (v < 0) continue;
        neighbors.push_back(v);
        arc_bytes.push_back(static_cast<double>(pg.bytes[i]));
      }
      offsets.push_back(static_cast<SCOTCH_Num>(neighbors.size()));
    }

    // Target graph: complete, devices weighed by speed, links by cost.
    const std::vector<double> speed = RelativeDeviceSpeeds(*problem.cost);
    const std::vector<double> link = LinkCosts(*problem.cost);
    const int n = problem.cluster->num_devices();
    double cheapest = 0;
    for (DeviceId a : targets) {
      for (DeviceId b : targets) {
        const double c = link[static_cast<size_t>(a) * n + b];
        if (a != b && (cheapest == 0 || c < cheapest)) cheapest = c;
      }
    }
    std::vector<SCOTCH_Num> target_offsets = {0}, target_neighbors,
                            target_weights, target_distances;
    for (size_t a = 0; a < targets.size(); ++a) {
      target_weights.push_back(static_cast<SCOTCH_Num>(
          std::max(1.0, std::round(kFastestDeviceWeight * speed[targets[a]]))));
      for (size_t b = 0; b < targets.size(); ++b) {
        if (a == b) continue;
        const double c = link[static_cast<size_t>(targets[a]) * n + targets[b]];
        target_neighbors.push_back(static_cast<SCOTCH_Num>(b));
        target_distances.push_back(static_cast<SCOTCH_Num>(
            std::clamp(std::round(kUnitDistance * c / cheapest), 1.0,
                       static_cast<double>(kMaxDistance))));
      }
      target_offsets.push_back(
          static_cast<SCOTCH_Num>(target_neighbors.size()));
    }

    ScotchMapping mapping;
    return mapping.Map(offsets, neighbors,
                       ScaleToIntegers(compute, kVertexWeightTotal),
                       ScaleToIntegers(arc_bytes, kArcWeightTotal),
                       target_offsets, target_neighbors, target_weights,
                       target_distances, StrategyFlags(settings_.strategy),
                       settings_.imbalance, problem.seed, parts);
  }

  ScotchSettings settings_;
  bool gpus_only_;
};

MethodFactory MakeScotchFactory(const char* name, bool gpus_only) {
  return [name, gpus_only](const MethodOptions& options)
             -> StatusOr<std::unique_ptr<Method>> {
    ScotchSettings settings;
    OptionReader reader(name, options);
    reader.Bool("coarsen", &settings.coarsen);
    reader.Double("imbalance", &settings.imbalance);
    reader.String("strategy", &settings.strategy);
    reader.Int("repair_simulations", &settings.repair_simulations);
    DPLACE_RETURN_IF_ERROR(reader.Finish());
    const std::string method = std::string("method ") + name + ": ";
    if (!(settings.imbalance >= 0 && settings.imbalance <= 1)) {
      return InvalidArgumentError(method + "imbalance must be in [0, 1]");
    }
    if (settings.strategy != "default" && settings.strategy != "quality" &&
        settings.strategy != "speed" && settings.strategy != "balance") {
      return InvalidArgumentError(
          method + "strategy must be default, quality, speed or balance");
    }
    if (settings.repair_simulations < 1) {
      return InvalidArgumentError(method + "repair_simulations must be >= 1");
    }
    return std::unique_ptr<Method>(new ScotchPlacer(name, settings, gpus_only));
  };
}

REGISTER_METHOD("scotch", 20,
                "Scotch static mapping onto the cluster (device speeds, link "
                "costs), then memory repair; options coarsen, imbalance, "
                "strategy, repair_simulations",
                MakeScotchFactory("scotch", /*gpus_only=*/false));
REGISTER_METHOD("mincut", 21,
                "Scotch static mapping onto the GPUs only (CPU-only ops on "
                "the CPU), then memory repair; options as scotch",
                MakeScotchFactory("mincut", /*gpus_only=*/true));

}  // namespace
}  // namespace dplace
