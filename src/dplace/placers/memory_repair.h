// Memory repair: turns a placement that runs out of memory into one that
// fits, by moving whole colocation-hint groups (an op with its gradient ops,
// a parameter with its update) off the devices over capacity.
//
// The partitioning placers balance compute, not memory; this is the step
// that makes their placements usable, as Baechi and the papers' baselines
// needed too. The simulator has the last word: a move is planned with
// estimates, then the placement is simulated again.
#ifndef DPLACE_PLACERS_MEMORY_REPAIR_H_
#define DPLACE_PLACERS_MEMORY_REPAIR_H_

#include "dplace/placers/placer.h"

namespace dplace {

struct MemoryRepairSettings {
  // Simulations at most, the first (of the placement as given) included;
  // each costs about 20 ms on an 84k-op graph. Default: 40.
  int max_simulations = 40;
  // Fraction of every device's capacity the repair aims to leave free, so
  // that a placement does not fit by a hair only. Default: 0.02.
  double headroom = 0.02;
};

// Returns `placement` unchanged when the simulator finds it fits; otherwise
// moves groups off each device whose simulated peak exceeds its capacity, in
// order of least added communication (bytes the group would then exchange
// across devices, less those it stops exchanging) per byte of memory freed,
// each to the device it may run on that keeps the most of its traffic local
// and still has room, until the simulator finds the placement fits. A group
// is never moved back to a device it left, so the repair terminates.
//
// Errors: InvalidArgument for an invalid placement; Infeasible, naming a
// device, its peak and its capacity, when the graph's persistent memory
// exceeds the cluster's or no fitting placement was found within
// max_simulations.
StatusOr<Placement> RepairMemory(const PlacementProblem& problem,
                                 Placement placement,
                                 const MemoryRepairSettings& settings = {});

}  // namespace dplace

#endif  // DPLACE_PLACERS_MEMORY_REPAIR_H_
