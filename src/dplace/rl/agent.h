// Learning placers ("agents"): methods (method.h) whose stochastic policy
// over group placements is trained on measurements from an Environment.
//
//   StatusOr<std::unique_ptr<Method>> agent =
//       MakeMethod("post", MethodOptions::Parse({"ce_every=60"}).value());
//   std::unique_ptr<Environment> env = NewSimulatedEnvironment(cost);
//   PlaceContext context;
//   context.environment = env.get();
//   context.search.budget.samples = 2400;
//   StatusOr<PlaceResult> result = (*agent)->Place(problem, context);
//
// Every agent runs the same search loop (Agent::DoPlace), as the papers do:
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
// from LibTorch's global generator (seeded by the search from problem.seed), so
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

#include "dplace/grouping/grouping.h"
#include "dplace/method/method.h"

namespace torch {
namespace serialize {
class OutputArchive;
class InputArchive;
}  // namespace serialize
}  // namespace torch

namespace dplace {

// What a checkpoint resumes from (Agent::CheckCheckpoint).
struct CheckpointInfo {
  int64_t samples = 0;  // Evaluated before the checkpoint.
  int64_t updates = 0;
  bool has_best = false;
};

// How a search merges ops into the groups its policy places.
enum class OpGrouping {
  kColocation,  // "colocation": ColocRL's co-location heuristics.
  kHints,  // "hints": only the graph's co-location hints (hard constraints).
  kOps,    // "ops": no grouping, one op per group.
  kMetis,  // "metis": METIS k-way into SearchSettings::num_groups.
  kFluid,  // "fluid": fluid communities into SearchSettings::num_groups.
};
// Each OpGrouping with its option text, in that order.
const std::vector<std::pair<std::string, OpGrouping>>& OpGroupingNames();
// The option text of `grouping` ("colocation", ...).
const std::string& OpGroupingName(OpGrouping grouping);

// Settings every agent shares: reward, baseline, warm-up, grouping.
struct SearchSettings {
  // Step time charged to an infeasible placement; its -sqrt is the failing
  // signal. 0: Post's OOM time, 100 s, or twice the problem's serial bound
  // (SerialStepBound: no placement is slower) where that is larger, so a
  // placement that does not fit never earns more than one that does.
  // Default: 0.
  double failing_step_time = 0;
  // Weight of the old value in the moving-average baseline. Default: 0.9.
  double baseline_decay = 0.9;
  // Start the baseline at the failing signal (ColocRL: more exploration)
  // instead of the first batch's mean reward. Default: false.
  bool baseline_starts_failing = false;
  // From this many samples on, infeasible samples no longer update the
  // policy or the baseline; negative: they always do (Post learns from its
  // OOM signal). Default: -1.
  int64_t feasible_only_after = -1;
  // How ops are merged into the groups the policy places (OpGrouping).
  // Default: colocation.
  OpGrouping grouping = OpGrouping::kColocation;
  int num_groups = 256;  // For metis and fluid. Default: 256.
  // Co-location rule 3: one group per scope prefix ending in a component
  // that starts with this marker (one group per LSTM cell in zoo RNNs, as
  // ColocRL grouped them); empty: off. Default: "step_".
  std::string scope_marker = "step_";
  // Threads of LibTorch and OpenBLAS while the search runs (the process's
  // settings come back after it); 0: leave them as they are. A policy's
  // steps multiply a few rows by a weight matrix, too little work to share:
  // a second thread costs more than it computes (docs/performance.md).
  // Default: 1.
  int threads = 1;
  // Threads that share the k placements of a batch, each with `threads`
  // LibTorch threads, where the policy splits them (ColocRL's and Mars's
  // policies: their sampling and the decoder's forward and backward passes
  // of their updates; the planners' seq2seq placer: the same). The
  // draws are one thread's; gradients agree to rounding. Two: a batch of
  // colocrl or mars then runs 1.57x faster on a 2-core machine
  // (docs/performance.md). Default: 2.
  int workers = 2;
  // Start from a classical placement: the placements of this method (one
  // that places once) or of "auto" (the best of expert, mincut, m-etf,
  // round-robin and single-gpu; start_placements.h) are evaluated as the
  // search's first samples, each group on the device most of its ops have;
  // the policy then learns the fastest by maximum likelihood, with an
  // optimizer of its own, until its mean probability per group of that
  // device reaches `warm_start_confidence` (or the search's budget ends:
  // EAGLE's can take minutes). The search explores around the
  // placement from its first batch, and its best is never slower than the
  // placement as snapped (which can be slower than the placer's own when
  // the placer splits the agent's groups).
  // Infeasible samples keep teaching throughout (feasible_only_after does
  // not apply): the warm-up rule is for a random start, where most samples
  // do not fit; from a placement that fits, dropping them lets the policy
  // drift out of memory with nothing to bring it back (docs/agents.md).
  // Empty: off, the policy starts from its random initialisation as in the
  // papers. The planners (hierarchical, simple, eagle), whose policy
  // chooses the groups, read the placement as an input of their grouper
  // and placer (DoWarmStart in planner_agents.cc). Default: "".
  std::string warm_start;
  double warm_start_confidence = 0.97;  // Default: 0.97.
  // The warm start's Adam. 0: the agent's own, 0.001 for colocrl and Mars,
  // the agent's learning rate for the planners (a faster warm start lets
  // EAGLE learn after it at a lower rate: docs/agents.md). Default: 0.
  double warm_start_learning_rate = 0;
  // The warm start's rate for an agent whose own is `agent_default`.
  double WarmStartRate(double agent_default) const {
    return warm_start_learning_rate > 0 ? warm_start_learning_rate
                                        : agent_default;
  }
  // Every this many samples, one step of maximum likelihood on the best
  // placement so far, with the agent's own optimizer: self-imitation (Oh
  // et al., ICML 2018) in its simplest form. It holds the policy at the best
  // it has seen, so that its samples stay around it (from a warm start,
  // REINFORCE and PPO otherwise wander off the start to worse placements;
  // docs/agents.md). 0: never, as the papers. Default: 0.
  int64_t imitate_best = 0;
};

// Reads the SearchSettings keys: failing_step_time, baseline_decay,
// baseline_starts_failing, feasible_only_after, grouping, groups,
// scope_marker, threads, workers, warm_start, warm_start_confidence,
// warm_start_learning_rate, imitate_best. A malformed value is the reader's
// error (Finish); values out of range are reported by ValidateSearchSettings.
void ReadSearchSettings(OptionReader* reader, SearchSettings* settings);
Status ValidateSearchSettings(const std::string& method,
                              const SearchSettings& settings);

// The grouping a search with `settings` places on `problem` (what
// AgentSetup::grouping holds); problem.cluster, when given, limits the
// co-location rule's merging (at least 8 groups per device, none over half
// a GPU's memory), problem.cost is read only by grouping=metis. For what
// an agent prepares outside a search.
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

class Agent : public Method {
 public:
  Agent(std::string name, SearchSettings settings)
      : Method(std::move(name)), settings_(std::move(settings)) {}
  ~Agent() override;

  const SearchSettings& settings() const { return settings_; }

  // Learns, resumes, and searches its paper's budget (PaperBudgetSamples)
  // when given none.
  MethodTraits traits() const override;

  // The search budget of the agent's paper, for callers that give none.
  virtual int64_t PaperBudgetSamples() const { return 2400; }

  // Numbers about the batch DoSample just drew, e.g. {"groups_used", 17}
  // for an agent that groups ops itself; written into the log line of each
  // of its samples and reported in SearchProgress. Default: none.
  virtual std::vector<std::pair<std::string, double>> BatchStats() const {
    return {};
  }

  // Reads the checkpoint `bytes` (a file's contents; `source` names it in
  // errors) and checks it as a search does with a resume_path, without
  // searching: the meta against this agent and `problem`, the loop state,
  // and the agent's policy, optimizer and buffers (shapes, types, finite
  // values, ranges). Builds the agent's policy from problem.seed first, as
  // a search does. Every error, a corrupt archive included, is a Status.
  StatusOr<CheckpointInfo> CheckCheckpoint(const PlacementProblem& problem,
                                           const std::string& bytes,
                                           const std::string& source);

 protected:
  // Runs (or, with context.search.resume_path, continues) a search on
  // `problem`, whose placements context.environment evaluates. Errors: no
  // environment or budget, a cluster of fewer than two devices, an
  // environment of another graph or cluster, ops no device may run, a
  // missing, corrupt or mismatched checkpoint, an unwritable log or
  // checkpoint.
  StatusOr<PlaceResult> DoPlace(const PlacementProblem& problem,
                                const PlaceContext& context) override;

  // Builds the policy (and optimizer) for `setup`; LibTorch's generator is
  // already seeded. Called once per search, before any other hook.
  virtual Status DoInit(const AgentSetup& setup) = 0;
  // Placements per batch (the k of one update).
  virtual int BatchSize() const = 0;
  // Samples `k` group placements as one batch, drawing from `rng` only.
  virtual std::vector<std::vector<DeviceId>> DoSample(int k,
                                                      std::mt19937_64* rng) = 0;
  // Learns from an evaluated batch; returns how many updates it made
  // (0 when it only buffered the batch).
  virtual int DoUpdate(const EvaluatedBatch& batch) = 0;
  // Option warm_start: the policy learns the placement `group_devices`
  // (one device per group of the search's grouping) until it samples it
  // with about `confidence` per group, with an optimizer of its own (the
  // agent's keeps no trace of it), or until `budget_left` returns false (the
  // search's budget is spent). Returns the steps taken.
  virtual StatusOr<int> DoWarmStart(
      const std::vector<DeviceId>& group_devices, double confidence,
      const std::function<bool()>& budget_left) = 0;
  // Option imitate_best: one gradient step of maximum likelihood of
  // `group_devices` (the best placement so far) with the agent's optimizer
  // and gradient clipping, counted as an update.
  virtual Status DoImitate(const std::vector<DeviceId>& group_devices) = 0;
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
  friend class AgentSearch;  // The search of DoPlace (agent.cc).

  // DoInit under the problem's torch seed, LibTorch's exceptions as errors.
  Status InitPolicy(const PlacementProblem& problem, const AgentSetup& setup);

  SearchSettings settings_;
  GradientAveraging average_gradients_;  // Of the running search.
};

// The registered method `name` when it is an Agent (for what only agents
// offer, such as CheckCheckpoint); errors as MakeMethod's, or that the
// method is not a learned agent.
StatusOr<std::unique_ptr<Agent>> MakeAgent(std::string_view name,
                                           const MethodOptions& options = {});

}  // namespace dplace

#endif  // DPLACE_RL_AGENT_H_
