// What a search (a method with a budget: a learned agent, a local search)
// is given and gives back: its budget and hooks, the progress it reports,
// one record per evaluated placement, and its trace. No LibTorch here: the
// CLI, the suites and MPI see searches only through these types.
#ifndef DPLACE_METHOD_SEARCH_H_
#define DPLACE_METHOD_SEARCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dplace {

// When a search stops: after `samples` evaluated placements or `seconds` of
// wall time, whichever comes first; a zero field is no limit, and at least
// one must be positive. A resumed search counts what it resumed from.
struct SearchBudget {
  int64_t samples = 0;
  double seconds = 0;
};

// One evaluated placement, as logged (a JSONL line per sample).
struct SampleRecord {
  int64_t index = 0;        // 0-based over the whole search.
  double wall_seconds = 0;  // Since the search began (resumes included).
  double step_time = 0;     // Measured, also when infeasible.
  bool feasible = false;
  double reward = 0;          // -sqrt(step time), or the failing signal.
  double best_step_time = 0;  // Best feasible so far; 0 while none.
};

// Reported after every batch.
struct SearchProgress {
  int64_t samples = 0;
  int64_t updates = 0;
  double wall_seconds = 0;
  SearchBudget budget;
  double batch_mean_step_time = 0;  // Feasible samples of the last batch.
  double best_step_time = 0;        // 0 while no feasible sample.
  // What the method reports about the batch (Agent::BatchStats).
  std::vector<std::pair<std::string, double>> agent_stats;
  // Empty while the search samples. Before it, a search that starts from
  // placers (auto, mcmc) reports what it runs instead, e.g. "one-shot
  // placer 5 of 13: m-sct", with no samples and the wall seconds since it
  // began.
  std::string stage;
};

// Replaces a flattened gradient by its mean over cooperating searches.
using GradientAveraging = std::function<void(std::vector<float>* gradient)>;

// Seconds since some fixed point, for a search's budget and its log; tests
// pass a fake one so that they never sleep.
using Clock = std::function<double()>;
// The process's steady clock.
Clock SteadyClock();

struct SearchOptions {
  SearchBudget budget;
  // JSONL log, one SampleRecord per line; on resume, lines past the
  // checkpoint are dropped and new ones appended. Default: none.
  std::string log_path;
  // Written every `checkpoint_every` updates and when the search ends.
  // Default: none.
  std::string checkpoint_path;
  int checkpoint_every = 10;  // Updates. Default: 10.
  // A checkpoint that is due waits until this many wall seconds have passed
  // since the previous one (or the start), then goes with the next batch;
  // the end's is always written. mcmc makes an update every batch of 16
  // samples, thousands a second: a checkpoint (write, fsync, rename) that
  // often took a third of its time. Default: 0, every `checkpoint_every`.
  double checkpoint_min_seconds = 0;
  // A checkpoint of the same method, problem and settings to continue from.
  // Default: none (a fresh search).
  std::string resume_path;
  // Called after every batch, from the searching thread. Default: none.
  std::function<void(const SearchProgress&)> progress;
  // Multi-controller training (see mpi_environment.h): called before every
  // gradient step with the policy's gradients, flattened, to replace them
  // by their mean over the controllers. Every controller must make the
  // same steps, so give them a sample budget. Default: none.
  GradientAveraging average_gradients;
  // Mixed into the seed of placement sampling only, so controllers that
  // share one policy sample different placements; 0 samples as a search
  // without it. Default: 0.
  uint64_t sampling_stream = 0;
  // What the budget's seconds and the log's wall times are read from.
  // Default: empty, the steady clock.
  Clock clock;
  // Asked after every batch: true stops the search there, with the budget
  // left (SIGINT, SIGTERM: util/stop_signals.h). The search ends
  // as at the end of its budget: the log flushed, the last checkpoint
  // written, the best placement so far returned, SearchTrace::stopped
  // set; resuming it ends where an uninterrupted search does. Called from
  // the searching thread. Default: none (the budget decides).
  std::function<bool()> stop_requested;
};

// What a search did, beside the placement it chose (PlaceResult).
struct SearchTrace {
  double best_step_time = 0;   // The chosen placement's measured step time.
  bool best_feasible = false;  // False when no sample was feasible.
  int num_groups = 0;
  int64_t samples = 0;  // Evaluated over the whole search.
  int64_t updates = 0;
  double wall_seconds = 0;               // Over the whole search.
  std::vector<SampleRecord> history;     // This run's samples, in order.
  int64_t first_sample_of_this_run = 0;  // > 0 when resumed.
  // Stopped by SearchOptions::stop_requested with budget left.
  bool stopped = false;
};

}  // namespace dplace

#endif  // DPLACE_METHOD_SEARCH_H_
