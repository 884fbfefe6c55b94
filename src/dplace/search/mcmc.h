// mcmc: FlexFlow-style simulator-guided local search (Jia et al., SysML
// 2019). A Metropolis-Hastings walk over placements of colocation-hint
// groups, evaluated a batch at a time through the Environment, restarting
// from the best after a while without improvement. Registered as method
// "mcmc" (a search with a budget); RefinePlacement runs the same walk from
// a given placement, for `dplace place --refine`.
//
//   StatusOr<McmcSettings> settings = ReadMcmcSettings(MethodOptions());
//   PlaceContext context;  // environment and search.budget are required.
//   StatusOr<PlaceResult> refined =
//       RefinePlacement(problem, placement, *settings, context);
#ifndef DPLACE_SEARCH_MCMC_H_
#define DPLACE_SEARCH_MCMC_H_

#include <cstdint>
#include <string>

#include "dplace/method/method.h"

namespace dplace {

struct McmcSettings {
  // Inverse temperature: a proposal slower by a fraction x of the current
  // step time is accepted with probability exp(-beta * x). Default: 50.
  double beta = 50;
  // Proposals evaluated together, in one Environment::Evaluate. Default: 16.
  int batch = 16;
  // Proposals without a new best before the walk restarts from the best;
  // 0: never. Default: 0 (on long searches, restarts every 400 proposals
  // kept the walk next to its best: docs/placers.md).
  int64_t restart_after = 0;
  // The step time an infeasible (out-of-memory) placement costs, in
  // seconds; 0: twice the problem's serial bound (SerialStepBound: no
  // placement is slower), so that a placement that does not fit never
  // looks better than one that does, whatever the problem's time scale.
  // Default: 0.
  double failing_step_time = 0;
  // The method whose placement the walk starts from (one that places
  // once), or "auto": the best of AutoStartMethods (start_placements.h).
  // Default: "auto".
  std::string start = "auto";
  // Probabilities of the proposals: move one of the groups that held up
  // the current placement's last chain (chain moves: ChainDelayers,
  // sim/step_chain.h, each group drawn in proportion to the seconds it
  // held the chain up), move any group, swap two groups' devices, move a
  // boundary (a group next to another device's, and a run of its stretch
  // in topological order, to that device); the rest shift a contiguous run
  // of groups (in topological order) to a random device. Default: 0, 0.35,
  // 0.15 and 0.3 (chain moves off: docs/placers.md says why).
  double chain_probability = 0;
  double move_probability = 0.35;
  double swap_probability = 0.15;
  double boundary_probability = 0.3;
  // Longest run a shift or a boundary moves; 0: the number of groups over
  // the number of devices. Default: 0.
  int64_t max_shift = 0;
};

// Reads and checks the settings; errors begin "method mcmc: option KEY".
StatusOr<McmcSettings> ReadMcmcSettings(const MethodOptions& options);

// The walk from `start` (snapped to the groups: each group on the device of
// its first op, if allowed), within context.search's budget, through
// context.environment; settings.start is not used. The result is never
// worse than `start`. Errors as Method::Place's, without the method prefix.
StatusOr<PlaceResult> RefinePlacement(const PlacementProblem& problem,
                                      const Placement& start,
                                      const McmcSettings& settings,
                                      const PlaceContext& context);

}  // namespace dplace

#endif  // DPLACE_SEARCH_MCMC_H_
