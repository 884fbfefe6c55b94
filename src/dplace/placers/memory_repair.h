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

#include "dplace/method/method.h"

namespace dplace {

struct MemoryRepairSettings {
  // Simulations at most, the first (of the placement as given) included;
  // each costs about 20 ms on an 84k-op graph. Default: 40.
  int max_simulations = 40;
  // Fraction of every device's capacity the repair aims to leave free, so
  // that a placement does not fit by a hair only. Default: 0.02.
  double headroom = 0.02;
  // Kinds of device groups may move to (mincut keeps its groups on GPUs).
  // Default: all.
  DeviceKindSet destination_kinds = DeviceKindSet::All();
};

// Returns `placement` unchanged when the simulator finds it fits. Otherwise,
// round by round: for each device whose simulated peak exceeds its
// capacity, moves groups off it, cheapest first, until the memory they free
// (estimated, then corrected by how far earlier moves really lowered the
// peak) covers the excess. A move's cost is the time it adds: the bytes the
// group would then send across devices, less those it stops sending, at the
// route's speed, plus how much slower its ops run at the destination; per
// byte freed. Moving a group makes its neighbours' moves cheaper, so moved
// groups grow into contiguous regions. Each goes to the allowed device
// where it adds the least time and that has room for it and for copies of
// its inputs. A group never returns to a device it left. Then the simulator
// judges again, at most max_simulations times.
//
// Errors: InvalidArgument for an invalid placement; Infeasible, naming a
// device, its peak and its capacity, when the graph's persistent memory
// exceeds the cluster's or no fitting placement was found.
StatusOr<Placement> RepairMemory(const PlacementProblem& problem,
                                 Placement placement,
                                 const MemoryRepairSettings& settings = {});

}  // namespace dplace

#endif  // DPLACE_PLACERS_MEMORY_REPAIR_H_
