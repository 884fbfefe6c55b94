#include "dplace/method/run.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "dplace/env/environment.h"

namespace dplace {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

StatusOr<MethodRun> RunMethod(const std::string& method,
                              const MethodOptions& options,
                              const PlacementProblem& problem,
                              const MethodRunOptions& run_options) {
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> made,
                          MakeMethod(method, options));
  return RunMethod(made.get(), problem, run_options);
}

StatusOr<MethodRun> RunMethod(Method* method, const PlacementProblem& problem,
                              const MethodRunOptions& run_options) {
  MethodRun run;
  run.method = method->name();
  run.searched = method->traits().searches;
  PlaceContext context = run_options.context;
  std::unique_ptr<Environment> simulated;
  if (run.searched) {
    SearchBudget& budget = context.search.budget;
    if (budget.samples <= 0 && budget.seconds <= 0) {
      budget.samples = method->traits().default_budget_samples;
    }
    if (context.environment == nullptr) {
      simulated = NewSimulatedEnvironment(*problem.cost,
                                          run_options.environment_threads);
      context.environment = simulated.get();
    }
  }
  const auto start = std::chrono::steady_clock::now();
  StatusOr<PlaceResult> placed = method->Place(problem, context);
  run.wall_seconds = SecondsSince(start);
  if (!placed.ok()) {
    // A search that could not run is an error; a placer that could not
    // place is a result (tables show why).
    if (run.searched) return placed.status();
    run.error = placed.status().message();
    run.error_code = placed.status().code();
    return run;
  }
  run.placement = std::move(placed->placement);
  run.search = std::move(placed->search);
  if (run.searched) run.wall_seconds = run.search.wall_seconds;
  Simulator simulator(*problem.cost);
  SimOptions sim_options;
  sim_options.record_timeline = run_options.record_timeline;
  StatusOr<SimResult> sim = simulator.Simulate(run.placement, sim_options);
  if (!sim.ok()) return sim.status().WithPrefix("method " + run.method);
  run.placed = true;
  run.sim = std::move(sim).value();
  run.sim.bounds.proven = placed->lower_bound;
  run.note = std::move(placed->note);
  return run;
}

}  // namespace dplace
