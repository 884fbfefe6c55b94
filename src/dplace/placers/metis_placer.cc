// The METIS baseline: a k-way partition of the unit graph (see
// partition_graph.h) into one part per device, part sizes proportional to
// device speed, then CPU-only ops back on the CPU and memory repair.
//
// Unlike Scotch's mapper, METIS knows nothing of links: it minimises the
// bytes cut, each crossing equally dear, and cannot pin a vertex to a part,
// so ops that may run only on some devices are moved there afterwards.
#include <metis.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dplace/placers/memory_repair.h"
#include "dplace/placers/partition_graph.h"
#include "dplace/placers/placer.h"

namespace dplace {
namespace {

static_assert(sizeof(idx_t) == sizeof(int32_t),
              "weights are scaled for Debian's 32-bit METIS");

// Sums of the integer weights handed to METIS, whose cut and part weights
// are idx_t: 2^24 leaves a factor 128 of room below 2^31.
constexpr double kVertexWeightTotal = 1 << 24;
constexpr double kArcWeightTotal = 1 << 24;

struct MetisSettings {
  // Partition colocation-hint groups (an op with its gradients, a parameter
  // with its update) as one vertex. Default: true.
  bool coarsen = true;
  // Load imbalance allowed per part, as a fraction of its target weight
  // (METIS's ufactor / 1000). Default: 0.03 (METIS's k-way default).
  double imbalance = 0.03;
  // Simulations the memory repair may run. Default: 40.
  int repair_simulations = 40;
};

class MetisPlacer : public Placer {
 public:
  explicit MetisPlacer(MetisSettings settings)
      : Placer("metis"), settings_(settings) {}

  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
    const Cluster& cluster = *problem.cluster;
    const PartitionGraph pg =
        BuildPartitionGraph(*problem.graph, *problem.cost, settings_.coarsen);
    std::vector<DeviceId> unit_device(pg.num_units, 0);
    if (cluster.num_devices() > 1 && pg.num_units > 0) {
      DPLACE_RETURN_IF_ERROR(Partition(problem, pg, &unit_device));
    }
    MemoryRepairSettings repair;
    repair.max_simulations = settings_.repair_simulations;
    return RepairMemory(
        problem, ExpandUnitPlacement(pg, cluster, std::move(unit_device)),
        repair);
  }

 private:
  Status Partition(const PlacementProblem& problem, const PartitionGraph& pg,
                   std::vector<DeviceId>* unit_device) const {
    std::vector<idx_t> offsets(pg.offsets.begin(), pg.offsets.end());
    std::vector<idx_t> neighbors(pg.neighbors.begin(), pg.neighbors.end());
    if (neighbors.empty()) neighbors.push_back(0);  // METIS wants a pointer.
    std::vector<idx_t> vertex_weights =
        ScaleToIntegers(pg.compute_seconds, kVertexWeightTotal);
    std::vector<idx_t> arc_weights = ScaleToIntegers(
        std::vector<double>(pg.bytes.begin(), pg.bytes.end()), kArcWeightTotal);
    if (arc_weights.empty()) arc_weights.push_back(1);

    // Part d is device d; its share of the weight is its share of speed.
    // METIS wants the shares to sum to 1 in real_t, so the last takes the
    // rest.
    const std::vector<double> speed = RelativeDeviceSpeeds(*problem.cost);
    double total_speed = 0;
    for (double s : speed) total_speed += s;
    std::vector<real_t> shares(speed.size());
    real_t assigned = 0;
    for (size_t d = 0; d + 1 < speed.size(); ++d) {
      shares[d] = static_cast<real_t>(speed[d] / total_speed);
      assigned += shares[d];
    }
    shares.back() = 1 - assigned;

    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(problem.seed & 0x7fffffff);
    options[METIS_OPTION_UFACTOR] = static_cast<idx_t>(
        std::max(1.0, std::round(settings_.imbalance * 1000)));
    options[METIS_OPTION_NUMBERING] = 0;
    idx_t num_vertices = pg.num_units;
    idx_t num_constraints = 1;
    idx_t num_parts = static_cast<idx_t>(speed.size());
    idx_t cut = 0;
    std::vector<idx_t> parts(pg.num_units);
    const int rc = METIS_PartGraphKway(
        &num_vertices, &num_constraints, offsets.data(), neighbors.data(),
        vertex_weights.data(), /*vsize=*/nullptr, arc_weights.data(),
        &num_parts, shares.data(), /*ubvec=*/nullptr, options, &cut,
        parts.data());
    if (rc != METIS_OK) {
      return InternalError("METIS_PartGraphKway failed with code " +
                           std::to_string(rc));
    }
    unit_device->assign(parts.begin(), parts.end());
    return Status::Ok();
  }

  MetisSettings settings_;
};

StatusOr<std::unique_ptr<Method>> MakeMetis(const MethodOptions& options) {
  MetisSettings settings;
  OptionReader reader("metis", options);
  reader.Bool("coarsen", &settings.coarsen);
  reader.Double("imbalance", &settings.imbalance);
  reader.Int("repair_simulations", &settings.repair_simulations);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  if (!(settings.imbalance > 0 && settings.imbalance <= 1)) {
    return InvalidArgumentError("method metis: imbalance must be in (0, 1]");
  }
  if (settings.repair_simulations < 1) {
    return InvalidArgumentError(
        "method metis: repair_simulations must be >= 1");
  }
  return std::unique_ptr<Method>(new MetisPlacer(settings));
}

REGISTER_METHOD("metis", 22,
                "METIS k-way partition, parts proportional to device speed, "
                "then memory repair; options coarsen, imbalance, "
                "repair_simulations",
                MakeMetis);

}  // namespace
}  // namespace dplace
