// Evaluations spread over MPI ranks (Open MPI, started with mpirun), for
// when real measurements take seconds each and outgrow one machine.
//
//   StatusOr<std::unique_ptr<MpiContext>> mpi = MpiContext::Start(options);
//   if ((*mpi)->is_controller()) {
//     std::unique_ptr<Environment> env =
//         (*mpi)->NewEnvironment(graph, cluster);
//     context.environment = env.get();  // As with any Environment.
//     agent->Place(problem, context);
//   } else {
//     (*mpi)->RunWorker(local_env.get());  // Until the controller stops it.
//   }
//
// The world is split into `controllers` groups: world ranks 0..K-1 are the
// controllers, and every other rank r works for controller (r - K) mod K.
// A controller's Environment hands each placement of a batch to whichever
// of its workers is free (dynamic dispatch, so slow and fast workers mix),
// puts the measurements back in batch order (so a search is the same as in
// process, given the same seed), and re-issues a placement whose worker has
// not answered within the timeout to another free worker; a late answer is
// ignored. Workers evaluate with an Environment of their own (simulated or
// measured), built from the same model and cluster.
//
// Several controllers train one policy as the Hierarchical Planner does:
// each samples its own batches and keeps its own baseline, and before every
// optimizer step the policy gradients are averaged over the controllers
// with MPI_Allreduce (synchronous).
//
// A rank that dies stops the whole job (MPI's default error handler); the
// search then continues from its last checkpoint with --resume.
//
// Thread safety: one MpiContext per process, used by one thread.
#ifndef DPLACE_ENV_MPI_ENVIRONMENT_H_
#define DPLACE_ENV_MPI_ENVIRONMENT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "dplace/env/environment.h"

namespace dplace {

struct MpiOptions {
  // Controller ranks, each with its own workers and baseline. Default: 1.
  int controllers = 1;
  // Seconds a worker may take on one placement before it is issued to
  // another free worker; <= 0: never re-issued. Default: 60.
  double evaluation_timeout_seconds = 60;
  // Test hooks. A worker of world rank `slow_rank` sleeps `slow_seconds`
  // before every evaluation (a slow or, for long sleeps, hung worker).
  // Default: -1 (none), 0.
  int slow_rank = -1;
  double slow_seconds = 0;
  // A worker of world rank `exit_rank` exits without finalising MPI (a rank
  // that dies) when handed a request of id `exit_after` or later (ids count
  // a controller's evaluations from 0): counting the job's evaluations, not
  // the worker's share, puts the death at the same point of the search
  // however the load splits. Default: -1 (none), 0.
  int exit_rank = -1;
  int64_t exit_after = 0;
};

// What a controller's environment did, over the whole search.
struct MpiEvaluationStats {
  int64_t issued = 0;        // Placements sent to workers, re-issues too.
  int64_t reissued = 0;      // Sent again after a timeout.
  int64_t late_replies = 0;  // Answers that came after another's.
};

class MpiContext {
 public:
  // Initialises MPI and splits the world into controller groups. Errors:
  // controllers < 1, or fewer than two ranks per controller.
  static StatusOr<std::unique_ptr<MpiContext>> Start(const MpiOptions& options);
  // Finalises MPI.
  ~MpiContext();

  int world_rank() const;
  int world_size() const;
  bool is_controller() const;
  int controller() const;       // This rank's group, 0..controllers-1.
  int num_controllers() const;  // K.
  int num_workers() const;      // Workers of this rank's group.

  // REQUIRES: is_controller(); `graph`, `cluster` and the context outlive
  // the environment; one environment at a time.
  std::unique_ptr<Environment> NewEnvironment(const Graph& graph,
                                              const Cluster& cluster);
  // Evaluates the controller's placements with `local` until it sends
  // stop. REQUIRES: !is_controller(). Errors: a malformed message.
  Status RunWorker(Environment* local);
  // Tells this controller's workers to stop. REQUIRES: is_controller().
  // Also done by the destructor.
  void StopWorkers();
  MpiEvaluationStats stats() const;
  // Ends every rank of the job with `exit_code` (MPI_Abort): for an error
  // on a worker or a controller that others would wait on forever.
  [[noreturn]] void Abort(int exit_code);

  // Collective over the controllers: replaces `values` by their mean.
  // REQUIRES: is_controller(); every controller passes the same size.
  void AverageOverControllers(std::vector<float>* values);
  // Collective over the controllers: the controller with the best result
  // (feasible first, then the lowest step time; ties to the lowest index),
  // whose placement every controller receives in `placement`.
  int ShareBest(bool feasible, double step_time, Placement* placement);

 private:
  struct State;
  explicit MpiContext(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace dplace

#endif  // DPLACE_ENV_MPI_ENVIRONMENT_H_
