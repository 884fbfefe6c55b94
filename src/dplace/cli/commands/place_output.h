// What `dplace place` shows of its results beyond the step: the placement
// by module (--by-module), what next (the bottleneck, or the changes that
// would make the model fit), the machine-readable results (--json, the
// "dplace.place" document of docs/formats.md, checked against
// docs/place.schema.json by the tests), and --method all's table.
#ifndef DPLACE_CLI_COMMANDS_PLACE_OUTPUT_H_
#define DPLACE_CLI_COMMANDS_PLACE_OUTPUT_H_

#include <ostream>
#include <string>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/method/run.h"
#include "dplace/model/load_model.h"
#include "dplace/sim/lower_bound.h"

namespace dplace {

// The lines of "what next" after `run` (on cost's graph and cluster): for a
// placement that fits, its bottleneck and the gap to `bound`; for one that
// does not (or no placement), the changes that would make it fit.
std::vector<std::string> WhatNextLines(const CostModel& cost,
                                       const LoadedModel& model,
                                       const MethodRun* run,
                                       const StepLowerBound& bound);

// The "dplace.place" document of `runs` (one method, or --method all's
// rows) on cost's graph and cluster.
std::string PlaceJson(const CostModel& cost, const LoadedModel& model,
                      const std::vector<MethodRun>& runs,
                      const StepLowerBound& bound);

// dplace place --method all: every registered classical placer on one
// problem, and mcmc and auto with a small budget, as a markdown table (the
// best feasible step time marked, each row's gap to the bound) with what
// next, or with --json the "dplace.place" document. Returns the exit code.
int PlaceAll(const PlacementProblem& problem, const LoadedModel& model,
             bool json, const std::string& header, std::ostream& out,
             std::ostream& err);

}  // namespace dplace

#endif  // DPLACE_CLI_COMMANDS_PLACE_OUTPUT_H_
