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
  // every op on its fastest allowed device and free communication) or
  // "total work" (every op's fastest time over all compute slots).
  std::string binding;
};

// The larger of the critical path and the total work of the problem the
// simulator was built for.
StepLowerBound ProblemLowerBound(const Simulator& simulator);

// The same bound, from a simulated step's bounds.
StepLowerBound ProblemLowerBound(const LowerBounds& bounds);

// "0.071063 s (total work)": how every command and report prints it.
std::string DescribeLowerBound(const StepLowerBound& bound);

}  // namespace dplace

#endif  // DPLACE_SIM_LOWER_BOUND_H_
