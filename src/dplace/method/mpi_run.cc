#include "dplace/method/mpi_run.h"

#include <utility>
#include <vector>

#include "dplace/env/environment.h"
#include "dplace/sim/simulator.h"

namespace dplace {

StatusOr<std::unique_ptr<MpiMethodRun>> MpiMethodRun::Start(
    const MpiRunOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<MpiContext> started,
                          MpiContext::Start(options.mpi));
  return std::unique_ptr<MpiMethodRun>(
      new MpiMethodRun(std::move(started), options.worker_environment));
}

MpiMethodRun::MpiMethodRun(std::unique_ptr<MpiContext> context,
                           WorkerEnvironmentFactory worker_environment)
    : context_(std::move(context)),
      worker_environment_(std::move(worker_environment)) {}

MpiMethodRun::~MpiMethodRun() = default;

MpiRole MpiMethodRun::role() const {
  if (!context_->is_controller()) return MpiRole::kWorker;
  return context_->controller() == 0 ? MpiRole::kPrintingController
                                     : MpiRole::kSilentController;
}

bool MpiMethodRun::ErrorStrandsOtherRanks() const {
  return !context_->is_controller() || context_->num_controllers() > 1;
}

void MpiMethodRun::Abort(int exit_code) { context_->Abort(exit_code); }

StatusOr<MpiRunResult> MpiMethodRun::Run(const std::string& method,
                                         const MethodOptions& options,
                                         const PlacementProblem& problem,
                                         MethodRunOptions run_options) {
  MpiContext& context = *context_;
  MpiRunResult result;
  result.role = role();
  result.world_size = context.world_size();
  result.num_controllers = context.num_controllers();
  result.num_workers = context.num_workers();
  if (!context.is_controller()) {
    DPLACE_RETURN_IF_ERROR(RunWorker(problem));
    return result;
  }
  std::unique_ptr<Environment> env =
      context.NewEnvironment(*problem.graph, *problem.cluster);
  run_options.context.environment = env.get();
  SearchOptions& search = run_options.context.search;
  search.sampling_stream = static_cast<uint64_t>(context.controller());
  if (context.num_controllers() > 1) {
    search.average_gradients = [&context](std::vector<float>* gradient) {
      context.AverageOverControllers(gradient);
    };
  }
  DPLACE_ASSIGN_OR_RETURN(result.run,
                          RunMethod(method, options, problem, run_options));
  if (result.run.placed) {
    DPLACE_RETURN_IF_ERROR(
        ShareBest(problem, run_options.record_timeline, &result));
  }
  return result;
}

Status MpiMethodRun::RunWorker(const PlacementProblem& problem) {
  // Each worker evaluates alone: one simulator thread unless the caller
  // gave another environment.
  DPLACE_ASSIGN_OR_RETURN(
      std::unique_ptr<Environment> local,
      worker_environment_
          ? worker_environment_(problem)
          : StatusOr<std::unique_ptr<Environment>>(
                NewSimulatedEnvironment(*problem.cost, /*num_threads=*/1)));
  return context_->RunWorker(local.get());
}

Status MpiMethodRun::ShareBest(const PlacementProblem& problem,
                               bool record_timeline, MpiRunResult* result) {
  MpiContext& context = *context_;
  MethodRun* run = &result->run;
  context.StopWorkers();
  const int best = context.ShareBest(
      run->search.best_feasible, run->search.best_step_time, &run->placement);
  if (best != context.controller()) {
    SimOptions sim_options;
    sim_options.record_timeline = record_timeline;
    DPLACE_ASSIGN_OR_RETURN(
        run->sim,
        Simulator(*problem.cost).Simulate(run->placement, sim_options));
  }
  result->best_controller = best;
  result->stats = context.stats();
  return Status::Ok();
}

}  // namespace dplace
