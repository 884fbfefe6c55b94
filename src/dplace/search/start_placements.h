// The classical placements a search starts from: mcmc's walk (option
// start) and a learned agent's warm start (option warm_start) both take a
// method that places once, "auto" for the best of the fast ones, or a
// placement file (a name ending in .json, docs/formats.md) to refine.
//
//   DPLACE_RETURN_IF_ERROR(CheckStartMethod("auto"));
//   StatusOr<std::vector<Placement>> starts = StartCandidates(problem, "auto");
//   ... evaluate them and start from the fastest ...
#ifndef DPLACE_SEARCH_START_PLACEMENTS_H_
#define DPLACE_SEARCH_START_PLACEMENTS_H_

#include <functional>
#include <string>
#include <vector>

#include "dplace/method/method.h"

namespace dplace {

// The methods "auto" tries: every registered method that places once, in
// listing order, but the MILP (which takes a time budget) and random; the
// expert only where the problem has one.
std::vector<std::string> AutoStartMethods(const PlacementProblem& problem);

// Whether `start` names a placement file: it ends in ".json".
bool IsPlacementFile(const std::string& start);

// OK when `start` is "auto", a placement file (read when the search
// starts) or a registered method that places once; otherwise the reason,
// to follow "start=START: " in an option's error.
Status CheckStartMethod(const std::string& start);

// The placements of `start`: the file's, the method's, or for "auto" those of
// the AutoStartMethods that can place `problem` (a placer that refuses, e.g.
// because nothing fits, is skipped). Errors: the file's (unreadable, for
// another graph or cluster, an op on a device it cannot run on) or the
// method's, prefixed "start"; for "auto", that none could place, with each
// one's reason. The placers whose traits say thread_safe run on helper
// threads (one fewer than the hardware's) beside the others; the result is
// the same, in AutoStartMethods' order. An exception a placer or
// `progress` throws stops the others and is rethrown here once the
// helpers are joined. `progress`, for a method or "auto": called one call
// at a time when a placer starts, and when one ends while others still
// run, with how many have started, the number of placers and the names of
// those running, the latest started first.
using PlacerProgress = std::function<void(
    int started, int num_placers, const std::vector<std::string>& running)>;
StatusOr<std::vector<Placement>> StartCandidates(
    const PlacementProblem& problem, const std::string& start,
    const PlacerProgress& progress = {});

// The progress stage while start placers run: "one-shot placer 3 of 14:
// m-sct", or with two side by side "one-shot placer 4 of 14: mincut and
// m-sct".
std::string StartPlacerStage(int started, int num_placers,
                             const std::vector<std::string>& running);

}  // namespace dplace

#endif  // DPLACE_SEARCH_START_PLACEMENTS_H_
