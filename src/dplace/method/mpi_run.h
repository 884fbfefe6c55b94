// A learned placer's search spread over MPI ranks, as `dplace place --env
// mpi` runs it under mpirun: the controller ranks search, each through an
// environment that hands its placements to its own workers; every other
// rank is a worker that evaluates them (see mpi_environment.h for how the
// world is split and placements dispatched). Built only with MPI.
//
//   StatusOr<std::unique_ptr<MpiMethodRun>> ranks = MpiMethodRun::Start({});
//   StatusOr<MpiRunResult> result =
//       (*ranks)->Run("post", options, problem, run_options);
//   if (!result.ok()) {
//     report(result.status());
//     if ((*ranks)->ErrorStrandsOtherRanks()) (*ranks)->Abort(2);
//   } else if (result->role == MpiRole::kPrintingController) {
//     report(result->run);
//   }
//
// Thread safety: one MpiMethodRun per process, used by one thread.
#ifndef DPLACE_METHOD_MPI_RUN_H_
#define DPLACE_METHOD_MPI_RUN_H_

#include <functional>
#include <memory>
#include <string>

#include "dplace/env/mpi_environment.h"
#include "dplace/method/run.h"
#include "dplace/util/status.h"

namespace dplace {

// What a rank does in the search.
enum class MpiRole {
  kWorker,              // Evaluates its controller's placements.
  kSilentController,    // Searches; controller 0 reports the shared result.
  kPrintingController,  // Controller 0: searches and reports the result.
};

// Makes the environment a worker evaluates `problem`'s placements with.
using WorkerEnvironmentFactory =
    std::function<StatusOr<std::unique_ptr<Environment>>(
        const PlacementProblem& problem)>;

struct MpiRunOptions {
  // Controllers, evaluation timeout and test hooks. Default: MpiOptions{}.
  MpiOptions mpi;
  // What each worker evaluates with, alone (the CLI's --env mpi:measured
  // gives one that measures on this host's devices). Default: empty, a
  // simulated environment of one thread.
  WorkerEnvironmentFactory worker_environment;
};

// What one rank did.
struct MpiRunResult {
  MpiRole role = MpiRole::kWorker;
  // Controllers: the method's run. When placed, its placement is the best
  // of all controllers' (feasible first, then the fastest; ties to the
  // lowest controller), and `sim` is that placement's. Workers: empty.
  MethodRun run;
  // Controllers, when placed: the controller whose placement won.
  int best_controller = -1;
  // Controllers, when placed: what this controller's environment did.
  MpiEvaluationStats stats;
  int world_size = 0;
  int num_controllers = 0;
  int num_workers = 0;  // Of this rank's controller.
};

class MpiMethodRun {
 public:
  // Initialises MPI and splits the world. Errors: those of
  // MpiContext::Start (controllers < 1, fewer than two ranks each).
  static StatusOr<std::unique_ptr<MpiMethodRun>> Start(
      const MpiRunOptions& options);
  // Stops this controller's workers and finalises MPI.
  ~MpiMethodRun();

  MpiRole role() const;

  // A controller runs `method` (a learned placer) on `problem` through its
  // workers: `run_options` as given, but for its environment, its sampling
  // stream (the controller's index) and, with several controllers, the
  // averaging of gradients over them; then it shares the best placement
  // with the other controllers and simulates it when it came from another
  // (recording the timeline when `run_options.record_timeline`).
  // A worker evaluates its controller's placements until stopped;
  // `method`, `options` and `run_options` are not used.
  // REQUIRES: the same `problem` on every rank; called once.
  // Errors: those of RunMethod, a worker's environment that cannot be made
  // (e.g. devices this host lacks), a malformed message.
  StatusOr<MpiRunResult> Run(const std::string& method,
                             const MethodOptions& options,
                             const PlacementProblem& problem,
                             MethodRunOptions run_options);

  // True when an error on this rank leaves other ranks waiting for it
  // forever: a worker's, or a controller's when there are several. Then
  // the caller reports it and calls Abort.
  bool ErrorStrandsOtherRanks() const;
  // Ends every rank of the job with `exit_code` (MPI_Abort).
  [[noreturn]] void Abort(int exit_code);

 private:
  MpiMethodRun(std::unique_ptr<MpiContext> context,
               WorkerEnvironmentFactory worker_environment);
  // Worker: evaluates with an environment of its own until stopped.
  Status RunWorker(const PlacementProblem& problem);
  // Controller: after the search, the best placement over the controllers.
  Status ShareBest(const PlacementProblem& problem, bool record_timeline,
                   MpiRunResult* result);

  std::unique_ptr<MpiContext> context_;
  WorkerEnvironmentFactory worker_environment_;
};

}  // namespace dplace

#endif  // DPLACE_METHOD_MPI_RUN_H_
