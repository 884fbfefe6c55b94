// Learning placers ("agents"): stochastic policies over group placements,
// trained on measurements from an Environment, registered by name.
//
//   StatusOr<std::unique_ptr<Agent>> agent =
//       MakeAgent("post", PlacerOptions::Parse({"ce_every=60"}).value());
//   std::unique_ptr<Environment> env = NewSimulatedEnvironment(cost);
//   SearchOptions options;
//   options.budget.samples = 2400;
//   StatusOr<SearchResult> result =
//       (*agent)->Search(problem, env.get(), options);
//
// Every agent runs the same search loop (Agent::Search), as the papers do:
//   - ops are merged into groups (ColocRL's co-location heuristics by
//     default, see grouping.h) and the policy places groups;
//   - each batch of placements is sampled as one batch and evaluated through
//     the Environment;
//   - reward R = -sqrt(step time); an infeasible placement (out of memory)
//     is charged a failing step time (Post: 100 s), so its reward is the
//     failing signal;
//   - the advantage is R minus an exponential-moving-average baseline; after
//     a warm-up only feasible samples update the policy and the baseline;
//   - the best placement is kept (the fastest feasible one; while none is
//     feasible, the fastest infeasible one);
//   - one JSONL line per sample goes to the log, a progress callback is
//     called after every batch, a checkpoint is written every N updates, and
//     a search resumed from a checkpoint continues exactly where it was
//     (only the batch in flight when it stopped is lost).
//
// The agent decides what an update is (Post: PPO every K samples, the
// cross-entropy solution every N; ColocRL: REINFORCE every batch).
//
// Thread safety: an Agent is used by one thread. Policies are initialised
// from LibTorch's global generator (seeded by Search from problem.seed), so
// run one search at a time per process when results must be reproducible.
#ifndef DPLACE_RL_AGENT_H_
#define DPLACE_RL_AGENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dplace/env/environment.h"
#include "dplace/grouping/grouping.h"
#include "dplace/placers/placer.h"

namespace torch {
namespace serialize {
class OutputArchive;
class InputArchive;
}  // namespace serialize
}  // namespace torch

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
  // What the agent reports about the batch (Agent::BatchStats).
  std::vector<std::pair<std::string, double>> agent_stats;
};

// Replaces a flattened gradient by its mean over cooperating searches.
using GradientAveraging = std::function<void(std::vector<float>* gradient)>;

struct SearchOptions {
  SearchBudget budget;
  // JSONL log, one SampleRecord per line; on resume, lines past the
  // checkpoint are dropped and new ones appended. Default: none.
  std::string log_path;
  // Written every `checkpoint_every` updates and when the search ends.
  // Default: none.
  std::string checkpoint_path;
  int checkpoint_every = 10;  // Updates. Default: 10.
  // A checkpoint of the same agent, problem and settings to continue from.
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
};

// What a checkpoint resumes from (Agent::CheckCheckpoint).
struct CheckpointInfo {
  int64_t samples = 0;  // Evaluated before the checkpoint.
  int64_t updates = 0;
  bool has_best = false;
};

struct SearchResult {
  Placement best;              // Op placement of the best sample.
  double best_step_time = 0;   // Its measured step time.
  bool best_feasible = false;  // False when no sample was feasible.
  int num_groups = 0;
  int64_t samples = 0;  // Evaluated over the whole search.
  int64_t updates = 0;
  double wall_seconds = 0;               // Over the whole search.
  std::vector<SampleRecord> history;     // This run's samples, in order.
  int64_t first_sample_of_this_run = 0;  // > 0 when resumed.
};

// Settings every agent shares: reward, baseline, warm-up, grouping.
struct SearchSettings {
  // Step time charged to an infeasible placement; its -sqrt is the failing
  // signal. Default: 100 (Post's OOM time).
  double failing_step_time = 100;
  // Weight of the old value in the moving-average baseline. Default: 0.9.
  double baseline_decay = 0.9;
  // Start the baseline at the failing signal (ColocRL: more exploration)
  // instead of the first batch's mean reward. Default: false.
  bool baseline_starts_failing = false;
  // From this many samples on, infeasible samples no longer update the
  // policy or the baseline; negative: they always do (Post learns from its
  // OOM signal). Default: -1.
  int64_t feasible_only_after = -1;
  // How ops are merged into the groups the policy places: "colocation"
  // (ColocRL's heuristics), "hints" (only the graph's co-location hints,
  // the hard constraints), "ops" (no grouping), "metis" or "fluid" (k-way
  // groupers with `num_groups`). Default: "colocation".
  std::string grouping = "colocation";
  int num_groups = 256;  // For metis and fluid. Default: 256.
  // Co-location rule 3: one group per scope prefix ending in a component
  // that starts with this marker (one group per LSTM cell in zoo RNNs, as
  // ColocRL grouped them); empty: off. Default: "step_".
  std::string scope_marker = "step_";
};

// Reads the SearchSettings keys: failing_step_time, baseline_decay,
// baseline_starts_failing, feasible_only_after, grouping, groups,
// scope_marker. Invalid values are reported by ValidateSearchSettings.
void ReadSearchSettings(OptionReader* reader, SearchSettings* settings);
Status ValidateSearchSettings(const std::string& method,
                              const SearchSettings& settings);

// The grouping a search with `settings` places on `problem` (what
// AgentSetup::grouping holds); problem.cluster is not read, problem.cost
// only by grouping=metis. For what an agent prepares outside a search.
StatusOr<Grouping> SearchGrouping(const PlacementProblem& problem,
                                  const SearchSettings& settings);

// What an agent's policy is built for.
struct AgentSetup {
  const PlacementProblem* problem = nullptr;
  Grouping grouping;
  GroupGraph groups;
  int num_devices = 0;
  // allowed[g * num_devices + d]: group g may go to device d. Every group
  // allows at least one device.
  std::vector<uint8_t> allowed;
  SearchBudget budget;
  // The policy's weights will be loaded from a checkpoint: work that only
  // sets their starting values (Mars's pre-training) can be skipped.
  bool resuming = false;
};

// A batch after evaluation, as an agent learns from it.
struct EvaluatedBatch {
  int64_t first_index = 0;  // Sample index of the first placement.
  // Device of every group, one vector per placement.
  std::vector<std::vector<DeviceId>> group_devices;
  std::vector<double> step_times;  // The failing step time when infeasible.
  std::vector<bool> feasible;
  std::vector<double> rewards;
  std::vector<double> advantages;  // Reward minus the baseline before it.
  std::vector<bool> use;           // False for samples the warm-up rule drops.
};

class Agent {
 public:
  explicit Agent(std::string name, SearchSettings settings)
      : name_(std::move(name)), settings_(std::move(settings)) {}
  virtual ~Agent();

  const std::string& name() const { return name_; }
  const SearchSettings& settings() const { return settings_; }

  // The search budget of the agent's paper, for callers that give none.
  virtual int64_t PaperBudgetSamples() const { return 2400; }

  // Numbers about the batch DoSample just drew, e.g. {"groups_used", 17}
  // for an agent that groups ops itself; written into the log line of each
  // of its samples and reported in SearchProgress. Default: none.
  virtual std::vector<std::pair<std::string, double>> BatchStats() const {
    return {};
  }

  // Runs (or, with options.resume_path, continues) a search on `problem`,
  // whose placements `environment` evaluates. Errors: no budget, a cluster
  // of fewer than two devices, an environment of another graph or cluster,
  // ops no device may run, a missing, corrupt or mismatched checkpoint, an
  // unwritable log or checkpoint.
  StatusOr<SearchResult> Search(const PlacementProblem& problem,
                                Environment* environment,
                                const SearchOptions& options);

  // Reads the checkpoint `bytes` (a file's contents; `source` names it in
  // errors) and checks it as Search does with options.resume_path, without
  // searching: the meta against this agent and `problem`, the loop state,
  // and the agent's policy, optimizer and buffers (shapes, types, finite
  // values, ranges). Builds the agent's policy from problem.seed first, as
  // Search does. Every error, a corrupt archive included, is a Status.
  StatusOr<CheckpointInfo> CheckCheckpoint(const PlacementProblem& problem,
                                           const std::string& bytes,
                                           const std::string& source);

 protected:
  // Builds the policy (and optimizer) for `setup`; LibTorch's generator is
  // already seeded. Called once per Search, before any other hook.
  virtual Status DoInit(const AgentSetup& setup) = 0;
  // Placements per batch (the k of one update).
  virtual int BatchSize() const = 0;
  // Samples `k` group placements as one batch, drawing from `rng` only.
  virtual std::vector<std::vector<DeviceId>> DoSample(int k,
                                                      std::mt19937_64* rng) = 0;
  // Learns from an evaluated batch; returns how many updates it made
  // (0 when it only buffered the batch).
  virtual int DoUpdate(const EvaluatedBatch& batch) = 0;
  // The agent's state (policy, optimizer, buffers) in or out of a
  // checkpoint.
  virtual void DoSave(torch::serialize::OutputArchive* archive) const = 0;
  virtual void DoLoad(torch::serialize::InputArchive* archive) = 0;

  // The search's SearchOptions::average_gradients, for the agent's gradient
  // steps (GradientStep in agent_parts.h); empty when there is none.
  const GradientAveraging& gradient_averaging() const {
    return average_gradients_;
  }

 private:
  // DoInit under the problem's torch seed, LibTorch's exceptions as errors
  // prefixed by "method <name>".
  Status InitPolicy(const PlacementProblem& problem, const AgentSetup& setup);

  std::string name_;
  SearchSettings settings_;
  GradientAveraging average_gradients_;  // Of the running search.
};

using AgentFactory =
    std::function<StatusOr<std::unique_ptr<Agent>>(const PlacerOptions&)>;

struct AgentEntry {
  std::string name;         // "post"
  int rank = 0;             // Listing order.
  std::string description;  // One line for `dplace place --list`.
  AgentFactory make;
};

// Every registered agent, ordered by rank then name.
std::vector<const AgentEntry*> Agents();
const AgentEntry* FindAgent(std::string_view name);
// Unknown names are errors listing the known agents.
StatusOr<std::unique_ptr<Agent>> MakeAgent(std::string_view name,
                                           const PlacerOptions& options = {});

// Registration at static-initialisation time; use REGISTER_AGENT.
bool RegisterAgent(AgentEntry entry);

// REGISTER_AGENT("post", 100, "one line", factory): factory is an
// AgentFactory. The object file must be linked whole (see CMakeLists.txt).
#define REGISTER_AGENT(name, rank, description, factory)                \
  static const bool DPLACE_PLACER_CONCAT(agent_registered_, __LINE__) = \
      ::dplace::RegisterAgent({name, rank, description, factory})

}  // namespace dplace

#endif  // DPLACE_RL_AGENT_H_
