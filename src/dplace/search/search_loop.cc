#include "dplace/search/search_loop.h"

#include <algorithm>
#include <cmath>

namespace dplace {

Status CheckSearchRequest(const PlacementProblem& problem,
                          const Environment* environment,
                          const SearchOptions& options) {
  if (!problem.graph || !problem.cluster || !problem.cost || !environment) {
    return InvalidArgumentError("incomplete problem");
  }
  const SearchBudget& budget = options.budget;
  if (budget.samples < 0 || budget.seconds < 0 ||
      (budget.samples == 0 && budget.seconds == 0)) {
    return InvalidArgumentError(
        "the search needs a budget: samples > 0 or seconds > 0");
  }
  const Cluster& cluster = *problem.cluster;
  if (cluster.num_devices() < 2) {
    return InvalidArgumentError(
        "a search needs a cluster of at least two devices; cluster " +
        cluster.name() + " has " + std::to_string(cluster.num_devices()));
  }
  if (environment->graph().hash() != problem.graph->hash() ||
      environment->cluster().name() != cluster.name()) {
    return InvalidArgumentError(
        "the environment evaluates another graph or cluster than the "
        "problem's");
  }
  if (options.checkpoint_every < 1) {
    return InvalidArgumentError("checkpoint_every must be >= 1");
  }
  if (!(options.checkpoint_min_seconds >= 0)) {
    return InvalidArgumentError("checkpoint_min_seconds must be >= 0");
  }
  return CheckPlaceable(problem);
}

SearchLoop::SearchLoop(const PlacementProblem& problem,
                       const PlaceContext& context)
    : problem_(problem),
      environment_(context.environment),
      options_(context.search),
      clock_(options_.clock ? options_.clock : SteadyClock()) {}

StatusOr<PlaceResult> SearchLoop::Run() {
  DPLACE_RETURN_IF_ERROR(Start());
  while (BudgetLeft()) {
    DPLACE_RETURN_IF_ERROR(RunBatch());
    // After the batch, so that a stopped search has a placement.
    if (options_.stop_requested && options_.stop_requested()) {
      trace_.stopped = BudgetLeft();
      break;
    }
  }
  return Finish();
}

Status SearchLoop::Start() {
  DPLACE_RETURN_IF_ERROR(CheckSearchRequest(problem_, environment_, options_));
  // Cooperating controllers (SearchOptions::sampling_stream) sample apart.
  state_.rng.seed(problem_.seed ^
                  (options_.sampling_stream * 0x9E3779B97F4A7C15ull));
  DPLACE_ASSIGN_OR_RETURN(const int num_groups, DoStart());
  if (resuming()) DPLACE_RETURN_IF_ERROR(DoResume(options_.resume_path));
  if (!options_.log_path.empty()) {
    // A resumed search keeps the log's lines up to its checkpoint.
    DPLACE_RETURN_IF_ERROR(
        log_.Open(options_.log_path, resuming() ? state_.samples : -1));
  }
  trace_.num_groups = num_groups;
  trace_.first_sample_of_this_run = state_.samples;
  updates_at_checkpoint_ = state_.updates;
  start_ = clock_();
  wall_at_checkpoint_ = Wall();
  DPLACE_RETURN_IF_ERROR(DoBegin(resuming()));
  return log_.Flush();
}

Status SearchLoop::RunBatch() {
  int64_t k = BatchSize();
  if (options_.budget.samples > 0) {
    k = std::min<int64_t>(k, options_.budget.samples - state_.samples);
  }
  batch_feasible_sum_ = 0;
  batch_feasible_ = 0;
  DPLACE_ASSIGN_OR_RETURN(const BatchReport report, DoBatch(k));
  DPLACE_RETURN_IF_ERROR(log_.Flush());
  state_.updates += report.updates;
  DPLACE_RETURN_IF_ERROR(CheckpointWhenDue());
  ReportProgress(report);
  return Status::Ok();
}

StatusOr<PlaceResult> SearchLoop::Finish() {
  state_.wall_seconds = Wall();
  DPLACE_RETURN_IF_ERROR(Save());
  if (!state_.has_best) {
    return InternalError("the search evaluated no placement");
  }
  PlaceResult result;
  DPLACE_ASSIGN_OR_RETURN(result.placement, BestPlacement());
  result.search = std::move(trace_);
  result.search.samples = state_.samples;
  result.search.updates = state_.updates;
  result.search.wall_seconds = state_.wall_seconds;
  result.search.best_step_time = state_.best_step_time;
  result.search.best_feasible = state_.best_feasible;
  return result;
}

StatusOr<bool> SearchLoop::Record(
    const Measurement& m, double failing_step_time,
    const std::vector<std::pair<std::string, double>>& extra) {
  SearchState& s = state_;
  const bool best = !s.has_best || (m.feasible != s.best_feasible
                                        ? m.feasible
                                        : m.step_time < s.best_step_time);
  if (best) {
    s.has_best = true;
    s.best_step_time = m.step_time;
    s.best_feasible = m.feasible;
  }
  SampleRecord r;
  r.index = s.samples++;
  r.wall_seconds = Wall();
  r.step_time = m.step_time;
  r.feasible = m.feasible;
  r.reward = -std::sqrt(m.feasible ? m.step_time : failing_step_time);
  r.best_step_time = s.best_feasible ? s.best_step_time : 0;
  if (log_.is_open()) DPLACE_RETURN_IF_ERROR(log_.Append(r, extra));
  trace_.history.push_back(r);
  if (m.feasible) {
    batch_feasible_sum_ += m.step_time;
    ++batch_feasible_;
  }
  return best;
}

bool SearchLoop::BudgetLeft() const {
  const SearchBudget& budget = options_.budget;
  return !(budget.samples > 0 && state_.samples >= budget.samples) &&
         !(budget.seconds > 0 && Wall() >= budget.seconds);
}

double SearchLoop::Wall() const {
  return state_.wall_seconds + (clock_() - start_);
}

Status SearchLoop::Save() {
  if (options_.checkpoint_path.empty()) return Status::Ok();
  return DoSave(options_.checkpoint_path);
}

Status SearchLoop::CheckpointWhenDue() {
  if (state_.updates - updates_at_checkpoint_ < options_.checkpoint_every) {
    return Status::Ok();
  }
  const double wall = Wall();
  if (wall - wall_at_checkpoint_ < options_.checkpoint_min_seconds) {
    return Status::Ok();
  }
  updates_at_checkpoint_ = state_.updates;
  wall_at_checkpoint_ = wall;
  // The checkpoint holds the wall time so far; the run's own goes on.
  const double saved_wall = state_.wall_seconds;
  state_.wall_seconds = wall;
  Status saved = Save();
  state_.wall_seconds = saved_wall;
  return saved;
}

SearchProgress SearchLoop::ProgressNow() const {
  SearchProgress p;
  p.samples = state_.samples;
  p.updates = state_.updates;
  p.wall_seconds = Wall();
  p.budget = options_.budget;
  return p;
}

PlacerProgress SearchLoop::ReportStartPlacers() const {
  return [this](int started, int num_placers,
                const std::vector<std::string>& running) {
    if (!options_.progress) return;
    SearchProgress p = ProgressNow();
    p.stage = StartPlacerStage(started, num_placers, running);
    options_.progress(p);
  };
}

void SearchLoop::ReportProgress(const BatchReport& report) const {
  if (!options_.progress) return;
  SearchProgress p = ProgressNow();
  p.batch_mean_step_time =
      batch_feasible_ ? batch_feasible_sum_ / batch_feasible_ : 0;
  p.best_step_time = state_.best_feasible ? state_.best_step_time : 0;
  p.agent_stats = report.stats;
  options_.progress(p);
}

}  // namespace dplace
