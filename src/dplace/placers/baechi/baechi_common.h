// What Baechi's memory-aware placers m-TOPO, m-ETF and m-SCT share (Jeon et
// al., "Baechi: Fast Device Placement of Machine Learning Graphs", SoCC
// 2020): placement units (colocation groups placed as one), settings, and a
// list scheduler with communication costs and per-device memory budgets.
//
// Memory, as Baechi models it while it schedules: an op's persistent bytes
// (weights, optimizer slots) are held for the whole step from the moment its
// unit is placed; its outputs from its start until the last consumer of each
// output finished; a copy received from another device likewise; its
// temporary bytes while it runs. An op is placed on a device only when all
// that fits under the device's budget at its start. m-TOPO, which has no
// schedule, reserves the conservative OpMemoryEstimate for the whole step.
#ifndef DPLACE_PLACERS_BAECHI_BAECHI_COMMON_H_
#define DPLACE_PLACERS_BAECHI_BAECHI_COMMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/placers/placer.h"

namespace dplace {
namespace baechi {

// Settings all three placers read.
struct BaechiSettings {
  // Place each colocation group (an op with its gradients, a parameter with
  // its update) as one unit, as Baechi does with TensorFlow's colocation
  // groups. Default: true.
  bool colocate = true;
  // Let ops that a GPU can run go to a CPU too. Baechi places on GPUs only;
  // ops only a CPU may run go to a CPU either way. Default: false.
  bool use_cpu = false;
  // Fraction of each device's memory the placer may fill under its own
  // estimate, headroom for what the estimate misses. Default: 1.0.
  double memory_fraction = 1.0;
};

// Reads the shared settings; call before OptionReader::Finish().
void ReadBaechiSettings(OptionReader* reader, BaechiSettings* settings);
// Errors name `method` and the bad setting.
Status ValidateBaechiSettings(const std::string& method,
                              const BaechiSettings& settings);

// Ops grouped into the units a Baechi placer puts on one device.
struct PlacementUnits {
  int num_units = 0;
  std::vector<int32_t> unit;        // unit[op] in [0, num_units).
  std::vector<int32_t> offsets;     // Members of unit u: ops[offsets[u] ..
  std::vector<OpId> ops;            // offsets[u + 1]), in op id order.
  std::vector<int32_t> first_rank;  // Topological rank of a unit's first op.
  // Devices a unit may go to: of the kinds all its members allow, GPUs
  // only unless use_cpu (or the unit may not run on a GPU).
  std::vector<std::vector<DeviceId>> devices;
  std::vector<int64_t> persistent_bytes;  // Summed over the members.
  std::vector<int64_t> estimate_bytes;    // Summed OpMemoryEstimate.
  std::vector<int32_t> rank;  // rank[op]: position in topological order.
};

// Colocation-hint groups (or single ops without `colocate`); a group whose
// ops allow no common device kind is split into its ops. Errors when an op
// may run on no device of the cluster, or when the graph cannot fit: its
// persistent bytes (and, with `whole_step_estimate`, every op's
// OpMemoryEstimate) exceed the devices' memory, or a unit exceeds every
// device it may go to.
StatusOr<PlacementUnits> MakePlacementUnits(const PlacementProblem& problem,
                                            const BaechiSettings& settings,
                                            bool whole_step_estimate);

// Each device's memory budget: capacity times memory_fraction.
std::vector<int64_t> MemoryBudgets(const Cluster& cluster,
                                   const BaechiSettings& settings);

struct ListSchedule {
  Placement placement;
  double makespan = 0;  // Of the placer's own schedule, in seconds.
};

// Memory-constrained list scheduling over the devices, with op times from
// CostModel::OpTime, transfers that occupy each link of their route in turn
// (one copy per destination device), and compute slots per device.
//
// With `favourite_child` empty this is m-ETF: repeatedly start the ready op
// (all predecessors scheduled) on the device where it can start earliest,
// ties to the earlier op in topological order. With favourite_child[op] the
// child SCT wants on op's device (-1: none), it is m-SCT: a device whose
// last op's favourite child is ready, and can start there no later than
// anywhere else, keeps itself for that child unless another op became
// urgent (can start on every device it may use) by then.
//
// Errors (InfeasibleError) when some op fits on none of its devices.
StatusOr<ListSchedule> RunListScheduler(
    const PlacementProblem& problem, const PlacementUnits& units,
    const BaechiSettings& settings, const std::vector<OpId>& favourite_child);

}  // namespace baechi
}  // namespace dplace

#endif  // DPLACE_PLACERS_BAECHI_BAECHI_COMMON_H_
