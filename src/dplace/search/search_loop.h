// The loop every search runs (a learned agent's, mcmc's walk): a method
// with a budget that evaluates placements through an Environment. The loop
// owns what all searches share: the request's checks, the budget and the
// clock, the samples and the best so far, the JSONL log, the trace,
// checkpoint timing, progress and the result. A search derives from it and
// supplies how it starts, what a batch is and how it saves itself:
//
//   class Walk : public SearchLoop {
//    public:
//     Walk(const PlacementProblem& p, const PlaceContext& c)
//         : SearchLoop(p, c) {}
//    protected:
//     StatusOr<int> DoStart() override;             // Groups to place.
//     Status DoResume(const std::string& path) override;
//     Status DoBegin(bool resumed) override;        // First samples.
//     int64_t BatchSize() const override;
//     StatusOr<BatchReport> DoBatch(int64_t k) override;  // Record()s k.
//     Status DoSave(const std::string& path) const override;
//     StatusOr<Placement> BestPlacement() const override;
//   };
//   StatusOr<PlaceResult> result = Walk(problem, context).Run();
//
// Thread safety: a SearchLoop is used by one thread.
#ifndef DPLACE_SEARCH_SEARCH_LOOP_H_
#define DPLACE_SEARCH_SEARCH_LOOP_H_

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dplace/env/environment.h"
#include "dplace/method/method.h"
#include "dplace/search/search_log.h"
#include "dplace/search/start_placements.h"

namespace dplace {

// What every search checks before it starts: a complete problem, an
// environment of the same graph and cluster, a budget, a cluster of two
// devices or more, a checkpoint interval >= 1, and CheckPlaceable.
Status CheckSearchRequest(const PlacementProblem& problem,
                          const Environment* environment,
                          const SearchOptions& options);

// The loop's part of a search's state, which its checkpoint holds.
struct SearchState {
  int64_t samples = 0;  // Evaluated over the whole search.
  // The search's steps: an agent's policy updates, mcmc's batches.
  int64_t updates = 0;
  double wall_seconds = 0;  // Of the runs before this one.
  // The search's randomness: seeded from the problem's seed and the
  // sampling stream (SearchOptions::sampling_stream).
  std::mt19937_64 rng;
  // The best sample so far: the fastest feasible one; while none is
  // feasible, the fastest infeasible one. The search keeps its placement.
  bool has_best = false;
  double best_step_time = 0;
  bool best_feasible = false;
};

// What a batch reports besides its samples, for SearchProgress.
struct BatchReport {
  int64_t updates = 0;  // Steps the batch made (SearchState::updates).
  std::vector<std::pair<std::string, double>> stats;
};

class SearchLoop {
 public:
  // `problem` and `context` must outlive the loop.
  SearchLoop(const PlacementProblem& problem, const PlaceContext& context);
  virtual ~SearchLoop() = default;
  SearchLoop(const SearchLoop&) = delete;
  SearchLoop& operator=(const SearchLoop&) = delete;

  // Checks the request, starts (or resumes), runs batches while the budget
  // lasts and no stop is requested (SearchOptions::stop_requested, asked
  // after each batch), saves the last checkpoint and returns the best
  // placement with the trace. Errors: CheckSearchRequest's, the hooks', a
  // log or checkpoint that cannot be written, no sample evaluated.
  StatusOr<PlaceResult> Run();

 protected:
  // The hooks, in the order Run calls them.
  //
  // Builds what the search needs (groups, policy, proposals); returns the
  // number of groups its placements assign (SearchTrace::num_groups).
  virtual StatusOr<int> DoStart() = 0;
  // Loads the checkpoint at `path` into state() and the search's own
  // state; called only when resuming.
  virtual Status DoResume(const std::string& path) = 0;
  // With the log open and the clock started, before the first batch: a
  // fresh search evaluates where it starts from (a start placement, a warm
  // start), through Record. Default: nothing.
  virtual Status DoBegin(bool resumed) { return Status::Ok(); }
  // Placements the next batch would evaluate; Run cuts it to the samples
  // the budget has left.
  virtual int64_t BatchSize() const = 0;
  // Samples `k` placements, evaluates them, Records each in order and
  // learns from them. The log is flushed after it.
  virtual StatusOr<BatchReport> DoBatch(int64_t k) = 0;
  // Writes a checkpoint of state() and the search's own state to `path`,
  // so that a search killed while writing leaves the previous one whole.
  virtual Status DoSave(const std::string& path) const = 0;
  // The best sample's placement. Called once, at the end, when
  // state().has_best.
  virtual StatusOr<Placement> BestPlacement() const = 0;

  // For the hooks.
  //
  // Records sample number state().samples (and counts it): updates the
  // best so far, writes its log line (with `extra` fields after the
  // record's) and its trace record. Its reward is -sqrt of its step time,
  // or of `failing_step_time` when it does not fit. Returns whether it is
  // the new best, whose placement the search keeps.
  StatusOr<bool> Record(
      const Measurement& m, double failing_step_time,
      const std::vector<std::pair<std::string, double>>& extra = {});
  // Whether the budget has samples and seconds left.
  bool BudgetLeft() const;
  // Seconds of search, the runs before a resume included.
  double Wall() const;
  // For StartCandidates, before the first sample: tells the progress
  // callback, when there is one, which start placers run
  // (SearchProgress::stage, StartPlacerStage).
  PlacerProgress ReportStartPlacers() const;

  const PlacementProblem& problem() const { return problem_; }
  Environment* environment() const { return environment_; }
  const SearchOptions& options() const { return options_; }
  bool resuming() const { return !options_.resume_path.empty(); }
  SearchState& state() { return state_; }
  const SearchState& state() const { return state_; }

 private:
  Status Start();
  Status RunBatch();
  StatusOr<PlaceResult> Finish();
  Status Save();
  Status CheckpointWhenDue();
  // The progress fields every report has: samples, updates, wall, budget.
  SearchProgress ProgressNow() const;
  void ReportProgress(const BatchReport& report) const;

  const PlacementProblem& problem_;
  Environment* const environment_;
  const SearchOptions& options_;
  const Clock clock_;
  SearchState state_;
  SearchLog log_;
  SearchTrace trace_;
  double start_ = 0;  // clock_() when this run began.
  int64_t updates_at_checkpoint_ = 0;
  double wall_at_checkpoint_ = 0;  // Wall() of the last checkpoint.
  // The feasible samples of the batch in flight, for its mean step time.
  double batch_feasible_sum_ = 0;
  int batch_feasible_ = 0;
};

}  // namespace dplace

#endif  // DPLACE_SEARCH_SEARCH_LOOP_H_
