// The one lower bound dplace reports for placing a graph on a cluster: no
// placement's simulated step beats it. `place`, `simulate`, the HTML
// report and bench's JSON all show this one, computed here, and say which
// bound binds. (A placement's own bounds, such as its most loaded device,
// are properties of that placement, not of the problem; simulate lists
// them apart.)
#ifndef DPLACE_SIM_LOWER_BOUND_H_
#define DPLACE_SIM_LOWER_BOUND_H_

#include <string>

#include "dplace/sim/simulator.h"

namespace dplace {

struct StepLowerBound {
  double seconds = 0;  // 0: none computed.
  // Which bound binds: "critical path" (the longest dependency chain with
  // every op on its fastest allowed device and free communication),
  // "total work" (the work over the compute slots, work_bound.h) or
  // "forced-transfer path" (the longest chain with the transfers that
  // memory and device kinds force, path_bound.h), the same for a placement
  // that keeps its colocation groups whole (kWholeGroupsBoundName), the
  // critical path of such placements with the queues their groups force
  // (kQueuedPathBoundName), their total work with those queues
  // (kQueuedWorkBoundName), or
  // "MILP bound" (the placing method's, LowerBounds::proven). Infinite
  // seconds: no placement fits.
  std::string binding;
};

// The binding name of a bound a placing method proved.
inline constexpr char kProvenBoundName[] = "MILP bound";
// The binding name of the forced-transfer path of placements that keep
// every colocation group on one device (LowerBounds::
// memory_path_whole_groups).
inline constexpr char kWholeGroupsBoundName[] =
    "forced-transfer path, groups whole";

// The binding name of the queued critical path of those placements
// (LowerBounds::queued_path_whole_groups).
inline constexpr char kQueuedPathBoundName[] =
    "queued critical path, groups whole";

// The binding name of the total work of those placements in windows, each
// op starting no earlier than its queued path
// (LowerBounds::queued_work_whole_groups).
inline constexpr char kQueuedWorkBoundName[] =
    "queued total work, groups whole";

// The largest of the critical path, the total work and the forced-transfer
// path of the problem the simulator was built for: no placement that fits
// in memory is faster.
StepLowerBound ProblemLowerBound(const Simulator& simulator);

// The same bound, from a simulated step's bounds, with the bound of
// placements that keep their colocation groups whole when the step's
// placement does, and the bound the placing method proved
// (LowerBounds::proven, "MILP bound"), when larger.
StepLowerBound ProblemLowerBound(const LowerBounds& bounds);

// The bound of every placement that fits, from a simulated step's bounds:
// ProblemLowerBound without the bound of placements that keep their
// colocation groups whole.
StepLowerBound AnyPlacementLowerBound(const LowerBounds& bounds);

// The largest of the bounds of placements that keep every colocation group
// whole (the forced-transfer path, the queued critical path and the queued
// total work), with its name; 0 seconds for a placement that does not.
StepLowerBound WholeGroupsLowerBound(const LowerBounds& bounds);

// The step time of a placement that fits is the bound (within 1e-9): no
// placement is faster.
bool ProvenOptimal(double step_time, const StepLowerBound& bound);
// The certified gap, "step time is 1.071x the lower bound", with
// ": optimal" when ProvenOptimal; empty without a bound.
std::string DescribeGap(double step_time, const StepLowerBound& bound);

// "0.071063 s (total work)", or "none: no placement fits in memory": how
// every command and report prints it.
std::string DescribeLowerBound(const StepLowerBound& bound);

}  // namespace dplace

#endif  // DPLACE_SIM_LOWER_BOUND_H_
