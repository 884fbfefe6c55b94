// Contiguous splits, after Tarnawski et al., "Efficient Algorithms for
// Device Placement of DNN Graph Operators" (NeurIPS 2020): the graph's
// colocation classes in a topological order, cut into consecutive
// stretches, each on one device. Registered as methods "tarnawski-dp" (the
// best split by dynamic programming) and "tarnawski-greedy" (the paper's
// latency baseline: fill each GPU in turn).
//
// Units. Each colocation-hint group is a unit (an op with its gradient ops,
// a parameter with its update); units that reach each other through
// forward edges are merged (so that no stretch must come back), and the
// units are ordered topologically by their forward ops, ties by first op.
// Backward and update ops thus follow their forward op's stretch, as the
// paper's training splits do. Above `max_units` units, consecutive units
// are merged into equal runs.
//
// Estimates. A stretch on a GPU costs its ops' time there plus, for every
// tensor that enters or leaves it, the cheapest transfer into or out of
// that GPU (so a tensor between two GPUs through host memory costs two
// hops, as in the paper); a stretch on the CPU costs its ops' time. A
// stretch fits a GPU when its persistent bytes and its ops' outputs fit.
// The simulator has the last word: these are placers, not bounds.
#ifndef DPLACE_PLACERS_CONTIGUOUS_SPLIT_H_
#define DPLACE_PLACERS_CONTIGUOUS_SPLIT_H_

#include <cstdint>
#include <vector>

#include "dplace/method/method.h"

namespace dplace {

// The units of a contiguous split: unit_of_op[op] in [0, num_units), in
// the order stretches follow.
struct SplitUnits {
  int num_units = 0;
  std::vector<int32_t> unit_of_op;
};
// Which topological order of the units: the ready unit with the earliest
// op first (parallel branches interleave), or the one made ready last
// (depth first: a branch runs to its end before the next begins).
enum class UnitOrder { kEarliestFirst, kDepthFirst };
SplitUnits MakeSplitUnits(const Graph& graph, int max_units,
                          UnitOrder order = UnitOrder::kEarliestFirst);

enum class SplitObjective {
  // The sum of the stretches' estimates: one sample through the graph.
  kLatency,
  // The largest stretch's estimate: a pipeline's period (GPU stretches
  // only).
  kThroughput,
};

struct SplitOptions {
  SplitObjective objective = SplitObjective::kLatency;  // Default: latency.
  int max_units = 2000;                                 // Default: 2000.
};

// The split that minimises the objective's estimate, with each GPU holding
// at most one stretch (in cluster order) and the CPU any number (latency
// only). Errors: nothing fits (kInfeasible).
StatusOr<Placement> BestContiguousSplit(const PlacementProblem& problem,
                                        const SplitOptions& options);

// dplace's own variant of the DP: the latency of a split is estimated as the
// simulator times it (each op starts when its inputs have arrived and its
// device is free, transfers uncontended), not as the paper's calls (a
// stretch's inputs, compute and outputs in sequence). Each state keeps the
// partial schedule that finishes earliest, so the DP is a heuristic over
// schedules. Errors: nothing fits (kInfeasible).
StatusOr<Placement> ScheduledContiguousSplit(const PlacementProblem& problem,
                                             int max_units, UnitOrder order);

// The paper's greedy: units in order, each on the current GPU while it
// fits, else on the next GPU, else (no GPU left, or a unit larger than a
// GPU) on the CPU.
StatusOr<Placement> GreedyContiguousSplit(const PlacementProblem& problem,
                                          int max_units);

}  // namespace dplace

#endif  // DPLACE_PLACERS_CONTIGUOUS_SPLIT_H_
