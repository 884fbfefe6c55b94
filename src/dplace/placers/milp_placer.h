// An exact placer with a bound: a mixed-integer linear program of the
// placement, solved by COIN-OR CBC within a time limit from a given start,
// returning its best placement and CBC's dual bound. Registered as method
// "milp".
//
// The program (docs/placers.md gives it in full): a binary x[u][d] puts unit
// u on device d; u starts at S[u]; the step T is at least every unit's
// finish, every device's work over its slots, and every input's arrival,
// S[b] >= S[a] + time of a + the cheapest transfer between the classes of
// devices a and b sit on (x's of both ends, and for two devices of one
// class a variable that is 1 when they differ); each device holds at most
// its memory of persistent bytes; identical devices are ordered by first
// use. Queues and link contention are left out, so the program is a
// relaxation of the simulator: its optimum, and CBC's bound below it, are
// below every placement's simulated step. With every op a unit of its own
// (graphs of at most max_units ops) the bound holds for the op-level
// problem; above that, units are the contiguous-split units
// (contiguous_split.h) and the bound is only the coarse problem's.
#ifndef DPLACE_PLACERS_MILP_PLACER_H_
#define DPLACE_PLACERS_MILP_PLACER_H_

#include "dplace/method/method.h"

namespace dplace {

struct MilpOptions {
  // CBC's time limit, wall clock. Default: 20.
  double seconds = 20;
  // Units of the program: every op when the graph has at most this many,
  // otherwise this many contiguous-split units. Default: 200.
  int max_units = 200;
};

struct MilpResult {
  Placement placement;   // CBC's best: the start when it found none better.
  double objective = 0;  // The program's value of `placement`.
  // CBC's dual bound: no solution of the program is below it.
  double bound = 0;
  // Every op was a unit: the bound holds for every placement's step.
  bool op_level = false;
  bool proven_optimal = false;  // Of the program, within CBC's tolerance.
  int units = 0;
};

// Solves the program from `start` (a placement of the problem, given to
// CBC as its first solution; empty: none). Errors: a problem no device can
// hold, CBC failing.
StatusOr<MilpResult> SolveMilp(const PlacementProblem& problem,
                               const Placement& start,
                               const MilpOptions& options);

}  // namespace dplace

#endif  // DPLACE_PLACERS_MILP_PLACER_H_
