#include "dplace/rl/agent.h"

#include <dlfcn.h>
#include <torch/torch.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __SSE2__
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cmath>

#include "dplace/rl/checkpoint.h"
#include "dplace/rl/policy_agent.h"
#include "dplace/search/search_loop.h"
#include "dplace/search/start_placements.h"
#include "dplace/sim/work_bound.h"

namespace dplace {
namespace {

// Post's time for a placement that does not fit (Gao et al., 2018).
constexpr double kPaperFailingStepTime = 100;

// ColocRL's single-consumer rule merges a chain into one group: it stops
// at kGroupsPerDevice groups per device (or every op), and at groups of
// half the smallest GPU's memory (a group no device holds helps no one).
constexpr int kGroupsPerDevice = 8;
void LimitAbsorption(const PlacementProblem& problem,
                     ColocationOptions* options) {
  const Cluster& cluster = *problem.cluster;
  options->min_groups = std::min(problem.graph->num_ops(),
                                 kGroupsPerDevice * cluster.num_devices());
  for (DeviceId d : cluster.DevicesOfKind(DeviceKind::kGpu)) {
    const int64_t half = cluster.device(d).memory_bytes / 2;
    if (options->max_group_persistent_bytes == 0 ||
        half < options->max_group_persistent_bytes) {
      options->max_group_persistent_bytes = half;
    }
  }
}

StatusOr<Grouping> MakeSearchGrouping(const PlacementProblem& problem,
                                      const SearchSettings& settings) {
  const Graph& graph = *problem.graph;
  switch (settings.grouping) {
    case OpGrouping::kColocation: {
      ColocationOptions options;
      options.scope_marker = settings.scope_marker;
      if (problem.cluster != nullptr) LimitAbsorption(problem, &options);
      return ColocationGrouping(graph, options);
    }
    case OpGrouping::kHints: {
      // Only the graph's hard co-location constraints.
      ColocationOptions options;
      options.absorb_single_consumer = false;
      return ColocationGrouping(graph, options);
    }
    case OpGrouping::kOps: {
      std::vector<int32_t> labels(graph.num_ops());
      for (OpId op = 0; op < graph.num_ops(); ++op) labels[op] = op;
      return MakeGrouping(graph, labels);
    }
    case OpGrouping::kMetis: {
      MetisGroupingOptions options;
      options.num_groups = settings.num_groups;
      options.seed = problem.seed;
      options.cost_model = problem.cost;
      return MetisGrouping(graph, options);
    }
    case OpGrouping::kFluid: {
      FluidGroupingOptions options;
      options.num_groups = settings.num_groups;
      options.seed = problem.seed;
      return FluidGrouping(graph, options);
    }
  }
  return InternalError("unknown grouping");
}

StatusOr<AgentSetup> MakeSetup(const PlacementProblem& problem,
                               const SearchSettings& settings,
                               const SearchBudget& budget) {
  AgentSetup setup;
  setup.problem = &problem;
  setup.budget = budget;
  StatusOr<Grouping> grouping = MakeSearchGrouping(problem, settings);
  if (!grouping.ok()) {
    return grouping.status().WithPrefix("grouping " +
                                        OpGroupingName(settings.grouping));
  }
  setup.grouping = std::move(grouping).value();
  setup.groups = CoarsenGraph(*problem.graph, setup.grouping);
  const Cluster& cluster = *problem.cluster;
  const int num_devices = cluster.num_devices();
  setup.num_devices = num_devices;
  setup.allowed.assign(
      static_cast<size_t>(setup.groups.num_groups) * num_devices, 0);
  for (GroupId g = 0; g < setup.groups.num_groups; ++g) {
    const DeviceKindSet kinds = setup.groups.allowed_devices[g];
    int count = 0;
    for (DeviceId d = 0; d < num_devices; ++d) {
      const bool ok = kinds.Contains(cluster.device(d).kind);
      setup.allowed[static_cast<size_t>(g) * num_devices + d] = ok;
      count += ok;
    }
    // A group whose ops allow no common kind may go anywhere; expanding the
    // placement moves the ops its device forbids.
    if (count == 0) {
      std::fill_n(setup.allowed.begin() + static_cast<size_t>(g) * num_devices,
                  num_devices, 1);
    }
  }
  return setup;
}

// Sets LibTorch's and OpenBLAS's thread counts for its lifetime. OpenBLAS
// is found at run time: LibTorch may use another BLAS.
class ComputeThreads {
 public:
  explicit ComputeThreads(int threads) : threads_(threads) {
    if (threads_ <= 0) return;
    torch_threads_ = torch::get_num_threads();
    torch::set_num_threads(threads_);
    if (set_blas_threads_ != nullptr && get_blas_threads_ != nullptr) {
      blas_threads_ = get_blas_threads_();
      set_blas_threads_(threads_);
    }
  }
  ~ComputeThreads() {
    if (threads_ <= 0) return;
    torch::set_num_threads(torch_threads_);
    if (blas_threads_ > 0) set_blas_threads_(blas_threads_);
  }
  ComputeThreads(const ComputeThreads&) = delete;
  ComputeThreads& operator=(const ComputeThreads&) = delete;

 private:
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  const SetThreads set_blas_threads_ = reinterpret_cast<SetThreads>(
      dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  const GetThreads get_blas_threads_ = reinterpret_cast<GetThreads>(
      dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  const int threads_;
  int torch_threads_ = 0;
  int blas_threads_ = 0;
};

// Every update allocates and frees the same large tensors (tens of MB);
// glibc hands blocks that large back to the system at once, so each one
// comes back as fresh pages to fault in (a fifth of the Hierarchical
// Planner's time). A search keeps them in the heap instead; glibc's
// default thresholds come back after it (as fixed values: glibc no longer
// raises them by itself once they are set).
class KeepFreedMemory {
 public:
  KeepFreedMemory() {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  }
  ~KeepFreedMemory() {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, kGlibcDefault);
    mallopt(M_TRIM_THRESHOLD, kGlibcDefault);
#endif
  }
  KeepFreedMemory(const KeepFreedMemory&) = delete;
  KeepFreedMemory& operator=(const KeepFreedMemory&) = delete;

 private:
  static constexpr int kGlibcDefault = 128 * 1024;
};

// Denormal floats cost the CPU many times a normal operation each. A
// policy taught towards certainty saturates its gates and softmaxes, and
// values and gradients fall into the denormal range: EAGLE warm-started on
// nmt@k40x2 (seed 1, learning_rate=0.001, warm_start_learning_rate=0.01)
// took 428 s for its warm start and then made 0.53 samples/s; with
// denormals flushed, 104 s and 2.09 samples/s. A search sets the SSE
// control bits flush-to-zero and denormals-are-zero (the threads it starts
// inherit them) and restores them after it.
class FlushDenormals {
 public:
  FlushDenormals() {
#ifdef __SSE2__
    _mm_setcsr(csr_ | kFlushToZero | kDenormalsAreZero);
#endif
  }
  ~FlushDenormals() {
#ifdef __SSE2__
    _mm_setcsr(csr_);
#endif
  }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
#ifdef __SSE2__
  static constexpr unsigned kFlushToZero = 0x8000;
  static constexpr unsigned kDenormalsAreZero = 0x0040;
  const unsigned csr_ = _mm_getcsr();
#endif
};

}  // namespace

Agent::~Agent() = default;

StatusOr<Grouping> SearchGrouping(const PlacementProblem& problem,
                                  const SearchSettings& settings) {
  return MakeSearchGrouping(problem, settings);
}

const std::vector<std::pair<std::string, OpGrouping>>& OpGroupingNames() {
  static const auto* names =
      new std::vector<std::pair<std::string, OpGrouping>>{
          {"colocation", OpGrouping::kColocation},
          {"hints", OpGrouping::kHints},
          {"ops", OpGrouping::kOps},
          {"metis", OpGrouping::kMetis},
          {"fluid", OpGrouping::kFluid}};
  return *names;
}

const std::string& OpGroupingName(OpGrouping grouping) {
  return EnumName(OpGroupingNames(), grouping);
}

void ReadSearchSettings(OptionReader* reader, SearchSettings* s) {
  reader->Double("failing_step_time", &s->failing_step_time);
  reader->Double("baseline_decay", &s->baseline_decay);
  reader->Bool("baseline_starts_failing", &s->baseline_starts_failing);
  reader->Int("feasible_only_after", &s->feasible_only_after);
  reader->Enum("grouping", OpGroupingNames(), &s->grouping);
  reader->Int("groups", &s->num_groups);
  reader->String("scope_marker", &s->scope_marker);
  reader->Int("threads", &s->threads);
  reader->Int("workers", &s->workers);
  reader->String("warm_start", &s->warm_start);
  reader->Double("warm_start_confidence", &s->warm_start_confidence);
  reader->Double("warm_start_learning_rate", &s->warm_start_learning_rate);
  reader->Int("imitate_best", &s->imitate_best);
}

Status ValidateSearchSettings(const std::string& method,
                              const SearchSettings& s) {
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError("method " + method + ": option " + what);
  };
  if (!(s.failing_step_time >= 0 && std::isfinite(s.failing_step_time))) {
    return bad(
        "failing_step_time must be >= 0 (0: 100 s or twice the serial "
        "bound)");
  }
  if (!(s.baseline_decay >= 0 && s.baseline_decay < 1)) {
    return bad("baseline_decay must be in [0, 1)");
  }
  if (s.num_groups < 1) return bad("groups must be >= 1");
  if (s.threads < 0) return bad("threads must be >= 0");
  if (s.workers < 1 || s.workers > 64) return bad("workers must be in [1, 64]");
  if (!s.warm_start.empty()) {
    const Status start = CheckStartMethod(s.warm_start);
    if (!start.ok()) {
      return bad("warm_start=" + s.warm_start + ": " + start.message());
    }
  }
  if (!(s.warm_start_confidence > 0 && s.warm_start_confidence < 1)) {
    return bad("warm_start_confidence must be in (0, 1)");
  }
  if (!(s.warm_start_learning_rate >= 0)) {
    return bad("warm_start_learning_rate must be >= 0 (0: the agent's own)");
  }
  if (s.imitate_best < 0) return bad("imitate_best must be >= 0");
  return Status::Ok();
}

Status Agent::InitPolicy(const PlacementProblem& problem,
                         const AgentSetup& setup) {
  try {
    torch::manual_seed(problem.seed);
    return DoInit(setup);
  } catch (const std::exception& e) {
    return InternalError("building the policy failed: " + FirstLine(e.what()));
  }
}

MethodTraits Agent::traits() const {
  MethodTraits traits;
  traits.searches = true;
  traits.learns = true;
  traits.can_resume = true;
  traits.default_budget_samples = PaperBudgetSamples();
  return traits;
}

StatusOr<CheckpointInfo> Agent::CheckCheckpoint(const PlacementProblem& problem,
                                                const std::string& bytes,
                                                const std::string& source) {
  const std::string method = "method " + name();
  if (!problem.graph || !problem.cluster || !problem.cost) {
    return InvalidArgumentError(method + ": incomplete problem");
  }
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem).WithPrefix(method));
  SearchBudget budget;
  budget.samples = 1;
  DPLACE_ASSIGN_OR_RETURN(AgentSetup setup,
                          MakeSetup(problem, settings_, budget));
  setup.resuming = true;
  SearchState loop;
  AgentSearchState s;
  DPLACE_RETURN_IF_ERROR(InitPolicy(problem, setup).WithPrefix(method));
  DPLACE_RETURN_IF_ERROR(LoadCheckpointBytes(
      bytes, source, CheckpointMeta(*this, setup, loop, s),
      [this](torch::serialize::InputArchive* a) { DoLoad(a); }, &loop, &s));
  CheckpointInfo info;
  info.samples = loop.samples;
  info.updates = loop.updates;
  info.has_best = loop.has_best;
  return info;
}

// An agent's search: the loop (search_loop.h) with the agent's groups,
// policy, baseline and checkpoints.
class AgentSearch : public SearchLoop {
 public:
  AgentSearch(Agent* agent, const PlacementProblem& problem,
              const PlaceContext& context)
      : SearchLoop(problem, context),
        agent_(*agent),
        settings_(agent->settings_),
        failing_step_time_(settings_.failing_step_time > 0
                               ? settings_.failing_step_time
                               : std::max(kPaperFailingStepTime,
                                          2 * SerialStepBound(*problem.cost))),
        failing_reward_(-std::sqrt(failing_step_time_)),
        feasible_only_after_(
            settings_.warm_start.empty() ? settings_.feasible_only_after : -1) {
  }

 protected:
  // Builds the groups and the policy.
  StatusOr<int> DoStart() override {
    DPLACE_ASSIGN_OR_RETURN(setup_,
                            MakeSetup(problem(), settings_, options().budget));
    setup_.resuming = resuming();
    agent_.average_gradients_ = options().average_gradients;
    DPLACE_RETURN_IF_ERROR(agent_.InitPolicy(problem(), setup_));
    return setup_.groups.num_groups;
  }

  Status DoResume(const std::string& path) override {
    return LoadCheckpoint(
        path, CheckpointMeta(agent_, setup_, state(), s_),
        [this](torch::serialize::InputArchive* a) { agent_.DoLoad(a); },
        &state(), &s_);
  }

  Status DoBegin(bool resumed) override {
    if (settings_.baseline_starts_failing && !s_.baseline_set) {
      s_.baseline = failing_reward_;
      s_.baseline_set = true;
    }
    if (settings_.warm_start.empty() || resumed) return Status::Ok();
    return WarmStart();
  }

  int64_t BatchSize() const override { return agent_.BatchSize(); }

  // Samples one batch, evaluates it, records it and learns from it.
  StatusOr<BatchReport> DoBatch(int64_t k) override {
    EvaluatedBatch batch;
    batch.first_index = state().samples;
    try {
      batch.group_devices = agent_.DoSample(static_cast<int>(k), &state().rng);
    } catch (const std::exception& e) {
      return InternalError("sampling failed: " + FirstLine(e.what()));
    }
    BatchReport report;
    report.stats = agent_.BatchStats();
    DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> measured,
                            Evaluate(batch.group_devices));
    DPLACE_RETURN_IF_ERROR(RecordBatch(measured, report.stats, &batch));
    MoveBaseline(&batch);
    if (LastBatchWithoutCheckpoint()) return report;
    try {
      report.updates += agent_.DoUpdate(batch);
      const int64_t every = settings_.imitate_best;
      if (every > 0 && state().has_best &&
          state().samples / every > batch.first_index / every) {
        DPLACE_RETURN_IF_ERROR(agent_.DoImitate(s_.best_groups));
        ++report.updates;
      }
    } catch (const std::exception& e) {
      return InternalError("the policy update failed: " + FirstLine(e.what()));
    }
    return report;
  }

  Status DoSave(const std::string& path) const override {
    return WriteCheckpoint(
        path, CheckpointMeta(agent_, setup_, state(), s_),
        [this](torch::serialize::OutputArchive* a) { agent_.DoSave(a); });
  }

  StatusOr<Placement> BestPlacement() const override {
    return ExpandGroupPlacement(*problem().graph, *problem().cluster,
                                setup_.grouping, s_.best_groups);
  }

 private:
  // The sample budget is spent and no checkpoint will hold the policy: an
  // update now would change nothing anyone reads.
  bool LastBatchWithoutCheckpoint() const {
    return options().budget.samples > 0 &&
           state().samples >= options().budget.samples &&
           options().checkpoint_path.empty();
  }

  StatusOr<std::vector<Measurement>> Evaluate(
      const std::vector<std::vector<DeviceId>>& group_devices) {
    std::vector<Placement> placements;
    for (const std::vector<DeviceId>& groups : group_devices) {
      DPLACE_ASSIGN_OR_RETURN(
          Placement p,
          ExpandGroupPlacement(*problem().graph, *problem().cluster,
                               setup_.grouping, groups));
      placements.push_back(std::move(p));
    }
    return environment()->Evaluate(placements);
  }

  // Records each sample (the best's groups kept) and the batch's rewards
  // and use.
  Status RecordBatch(const std::vector<Measurement>& measured,
                     const std::vector<std::pair<std::string, double>>& stats,
                     EvaluatedBatch* batch) {
    const bool drop_infeasible =
        feasible_only_after_ >= 0 && state().samples >= feasible_only_after_;
    for (size_t i = 0; i < batch->group_devices.size(); ++i) {
      const Measurement& m = measured[i];
      batch->step_times.push_back(m.feasible ? m.step_time
                                             : failing_step_time_);
      batch->feasible.push_back(m.feasible);
      batch->rewards.push_back(m.feasible ? -std::sqrt(m.step_time)
                                          : failing_reward_);
      batch->use.push_back(m.feasible || !drop_infeasible);
      DPLACE_ASSIGN_OR_RETURN(const bool best,
                              Record(m, failing_step_time_, stats));
      if (best) s_.best_groups = batch->group_devices[i];
    }
    return Status::Ok();
  }

  // Option warm_start: evaluates the start's placements (snapped to the
  // groups) as the first samples and has the agent learn the fastest. The
  // baseline is left alone: it estimates the mean reward of the policy's
  // samples, and the start is their mode (at the start's reward, nearly
  // every sample has a negative advantage and the policy unlearns it).
  Status WarmStart() {
    StatusOr<std::vector<Placement>> starts =
        StartCandidates(problem(), settings_.warm_start, ReportStartPlacers());
    if (!starts.ok()) {
      return starts.status().WithPrefix("option warm_start=" +
                                        settings_.warm_start);
    }
    EvaluatedBatch batch;
    batch.first_index = state().samples;
    for (const Placement& p : *starts) {
      batch.group_devices.push_back(SnapToGroups(p));
    }
    DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> measured,
                            Evaluate(batch.group_devices));
    // A fresh search: RecordBatch made the fastest start the best so far.
    DPLACE_RETURN_IF_ERROR(RecordBatch(measured, {}, &batch));
    try {
      return agent_
          .DoWarmStart(s_.best_groups, settings_.warm_start_confidence,
                       [this] { return BudgetLeft(); })
          .status();
    } catch (const std::exception& e) {
      return InternalError("the warm start failed: " + FirstLine(e.what()));
    }
  }

  // Each group on the device most of its ops have in `placement` among
  // those the group allows (ties: the lower id).
  std::vector<DeviceId> SnapToGroups(const Placement& placement) const {
    const int num_devices = setup_.num_devices;
    const int num_groups = setup_.groups.num_groups;
    std::vector<int64_t> count(static_cast<size_t>(num_groups) * num_devices);
    for (size_t op = 0; op < placement.size(); ++op) {
      const size_t g = static_cast<size_t>(setup_.grouping.group[op]);
      ++count[g * num_devices + placement[op]];
    }
    std::vector<DeviceId> groups(num_groups, 0);
    for (int g = 0; g < num_groups; ++g) {
      int64_t most = -1;
      for (DeviceId d = 0; d < num_devices; ++d) {
        const size_t i = static_cast<size_t>(g) * num_devices + d;
        if (setup_.allowed[i] && count[i] > most) {
          most = count[i];
          groups[g] = d;
        }
      }
    }
    return groups;
  }

  // The baseline before this batch gives the advantages; then every used
  // sample moves it.
  void MoveBaseline(EvaluatedBatch* batch) {
    const size_t k = batch->rewards.size();
    int used = 0;
    double used_reward_sum = 0;
    for (size_t i = 0; i < k; ++i) {
      if (!batch->use[i]) continue;
      ++used;
      used_reward_sum += batch->rewards[i];
    }
    if (!s_.baseline_set && used > 0) {
      s_.baseline = used_reward_sum / used;
      s_.baseline_set = true;
    }
    for (size_t i = 0; i < k; ++i) {
      batch->advantages.push_back(batch->rewards[i] - s_.baseline);
    }
    for (size_t i = 0; i < k; ++i) {
      if (!batch->use[i]) continue;
      s_.baseline = settings_.baseline_decay * s_.baseline +
                    (1 - settings_.baseline_decay) * batch->rewards[i];
    }
  }

  Agent& agent_;
  const SearchSettings& settings_;
  // What a placement that does not fit costs (SearchSettings), and its
  // reward.
  const double failing_step_time_;
  const double failing_reward_;
  // settings_.feasible_only_after, or -1 (never) with a warm start: from a
  // placement that fits, infeasible samples keep teaching (SearchSettings).
  const int64_t feasible_only_after_;
  AgentSetup setup_;
  AgentSearchState s_;
};

StatusOr<std::unique_ptr<Agent>> MakeAgent(std::string_view name,
                                           const MethodOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> method,
                          MakeMethod(name, options));
  Agent* agent = dynamic_cast<Agent*>(method.get());
  if (agent == nullptr) {
    return InvalidArgumentError("method " + std::string(name) +
                                " is not a learned agent");
  }
  method.release();
  return std::unique_ptr<Agent>(agent);
}

StatusOr<PlaceResult> Agent::DoPlace(const PlacementProblem& problem,
                                     const PlaceContext& context) {
  const ComputeThreads threads(settings_.threads);
  const KeepFreedMemory keep_memory;
  const FlushDenormals flush_denormals;
  return AgentSearch(this, problem, context).Run();
}

}  // namespace dplace
