// One method on one problem: what `dplace place`, `dplace place --method
// all` and `dplace bench` all do. A classical placer places once; a search
// (a learned agent) evaluates placements through an environment, the
// simulated one unless the caller gives another. Either way the chosen
// placement is simulated and returned with how long it took.
//
//   StatusOr<LoadedModel> model = LoadModel("zoo:nmt:layers=4");  // model/
//   ... build a PlacementProblem of model->graph (ProblemOf) ...
//   StatusOr<MethodRun> run = RunMethod("m-etf", {}, problem, {});
//   if (run.ok() && run->placed) use(run->sim.step_time);
#ifndef DPLACE_METHOD_RUN_H_
#define DPLACE_METHOD_RUN_H_

#include <string>

#include "dplace/method/method.h"
#include "dplace/sim/simulator.h"

namespace dplace {

struct MethodRunOptions {
  // What the method is given. A search with no budget (both fields zero)
  // gets its method's default budget; with no environment, it evaluates
  // through a simulated one made here.
  PlaceContext context;
  // Threads of that simulated environment; <= 0: one per hardware thread.
  // Default: 0.
  int environment_threads = 0;
  // Record the simulated timeline of the chosen placement (for traces and
  // reports). Default: false.
  bool record_timeline = false;
};

struct MethodRun {
  std::string method;
  bool searched = false;  // Its traits().searches: `search` is its trace.
  // False when a method that places once refused (e.g. nothing fits);
  // `error` and `error_code` say why. A search always places.
  bool placed = false;
  std::string error;
  StatusCode error_code = StatusCode::kOk;
  Placement placement;
  // Of `placement`, when placed; its bounds.proven is the bound the method
  // proved (PlaceResult::lower_bound).
  SimResult sim;
  std::string note;         // PlaceResult::note.
  double wall_seconds = 0;  // Placing, or the whole search.
  SearchTrace search;       // A search's trace; empty otherwise.
};

// Makes `method` with `options`, places `problem` (its seed included) and
// simulates the placement. Errors: an unknown method (the message lists the
// known ones), bad options, a search that could not run; a method that
// places once and cannot place is a MethodRun with placed == false instead.
StatusOr<MethodRun> RunMethod(const std::string& method,
                              const MethodOptions& options,
                              const PlacementProblem& problem,
                              const MethodRunOptions& run_options);
// As above, with a method the caller made (and asked for its traits).
StatusOr<MethodRun> RunMethod(Method* method, const PlacementProblem& problem,
                              const MethodRunOptions& run_options);

}  // namespace dplace

#endif  // DPLACE_METHOD_RUN_H_
