// A lower bound on the step time of every placement from the work alone:
// each device's ops run on its compute slots one at a time, so the step
// lasts at least the busiest device's op time over its slots, whatever the
// dependencies.
//
// Spreading the work fractionally over the devices is a relaxation (a
// linear program); its Lagrangian dual gives a bound for any weights
// w_d >= 0 with sum_d w_d x slots_d = 1:
//
//   step >= sum over ops v of min over devices d of w_d x t(v, d).
//
// Equal weights give the total work over all slots; this searches the
// weights for the largest bound, so a slow CPU no longer counts as a
// device as fast as a GPU. The same holds in a window: the ops that cannot
// start before a (their longest path in, at fastest times) nor end later
// than b before the step's end (their longest path out) run between a and
// step - b, so step >= a + b + their work, for every such a and b.
#ifndef DPLACE_SIM_WORK_BOUND_H_
#define DPLACE_SIM_WORK_BOUND_H_

#include <vector>

#include "dplace/cost/cost_model.h"

namespace dplace {

// Seconds, at least the total work over all compute slots. Deterministic.
double WorkBound(const CostModel& cost);

// The same with later starts: heads[v], per op, a time before which op v
// starts in none of the placements the bound is for (GroupQueueHeads's,
// for those that keep the colocation groups whole); holds only for those
// placements.
double WorkBound(const CostModel& cost, const std::vector<double>& heads);

// An upper bound instead: no placement's step, fitting or not, is slower
// than every op on its slowest allowed device and every tensor over its
// slowest route, one after another (the simulator never idles while work
// is ready). The scale of a problem's step times, e.g. for what a search
// charges a placement that does not fit.
double SerialStepBound(const CostModel& cost);

}  // namespace dplace

#endif  // DPLACE_SIM_WORK_BOUND_H_
