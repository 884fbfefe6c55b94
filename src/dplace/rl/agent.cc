#include "dplace/rl/agent.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dplace/io/file.h"
#include "dplace/placers/placer_util.h"

namespace dplace {
namespace {

using nlohmann::json;

constexpr const char* kCheckpointFormat = "dplace-rl-checkpoint";
constexpr int kCheckpointVersion = 1;

std::vector<AgentEntry>& Registry() {
  static std::vector<AgentEntry>* registry = new std::vector<AgentEntry>();
  return *registry;
}

StatusOr<Grouping> MakeSearchGrouping(const PlacementProblem& problem,
                                      const SearchSettings& settings) {
  const Graph& graph = *problem.graph;
  if (settings.grouping == "colocation") {
    ColocationOptions options;
    options.scope_marker = settings.scope_marker;
    return ColocationGrouping(graph, options);
  }
  if (settings.grouping == "hints") {
    // Only the graph's hard co-location constraints.
    ColocationOptions options;
    options.absorb_single_consumer = false;
    return ColocationGrouping(graph, options);
  }
  if (settings.grouping == "ops") {
    std::vector<int32_t> labels(graph.num_ops());
    for (OpId op = 0; op < graph.num_ops(); ++op) labels[op] = op;
    return MakeGrouping(graph, labels);
  }
  if (settings.grouping == "metis") {
    MetisGroupingOptions options;
    options.num_groups = settings.num_groups;
    options.seed = problem.seed;
    options.cost_model = problem.cost;
    return MetisGrouping(graph, options);
  }
  FluidGroupingOptions options;
  options.num_groups = settings.num_groups;
  options.seed = problem.seed;
  return FluidGrouping(graph, options);
}

StatusOr<AgentSetup> MakeSetup(const PlacementProblem& problem,
                               const SearchSettings& settings,
                               const SearchBudget& budget) {
  AgentSetup setup;
  setup.problem = &problem;
  setup.budget = budget;
  StatusOr<Grouping> grouping = MakeSearchGrouping(problem, settings);
  if (!grouping.ok()) {
    return grouping.status().WithPrefix("grouping " + settings.grouping);
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

// Everything the loop owns, as a checkpoint holds it.
struct LoopState {
  int64_t samples = 0;
  int64_t updates = 0;
  double wall_seconds = 0;  // Of the runs before this one.
  double baseline = 0;
  bool baseline_set = false;
  std::mt19937_64 rng;
  bool has_best = false;
  std::vector<DeviceId> best_groups;
  double best_step_time = 0;
  bool best_feasible = false;
};

bool Better(bool feasible, double step_time, const LoopState& s) {
  if (!s.has_best) return true;
  if (feasible != s.best_feasible) return feasible;
  return step_time < s.best_step_time;
}

torch::Tensor StringTensor(const std::string& text) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(text.size())},
                                 torch::TensorOptions().dtype(torch::kUInt8));
  std::copy(text.begin(), text.end(), t.data_ptr<uint8_t>());
  return t;
}

std::string TensorString(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kUInt8).contiguous();
  const uint8_t* p = c.data_ptr<uint8_t>();
  return std::string(p, p + c.numel());
}

json CheckpointMeta(const Agent& agent, const AgentSetup& setup,
                    const LoopState& s) {
  std::ostringstream rng;
  rng << s.rng;
  return json{{"format", kCheckpointFormat},
              {"version", kCheckpointVersion},
              {"agent", agent.name()},
              {"graph_hash", setup.problem->graph->hash()},
              {"cluster", setup.problem->cluster->name()},
              {"num_groups", setup.groups.num_groups},
              {"num_devices", setup.num_devices},
              {"samples", s.samples},
              {"updates", s.updates},
              {"wall_seconds", s.wall_seconds},
              {"baseline", s.baseline},
              {"baseline_set", s.baseline_set},
              {"rng", rng.str()},
              {"has_best", s.has_best},
              {"best_groups", s.best_groups},
              {"best_step_time", s.best_step_time},
              {"best_feasible", s.best_feasible}};
}

std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// Writes to a temporary file first, so a search killed while writing
// leaves the previous checkpoint intact.
Status WriteCheckpoint(
    const std::string& path, const json& meta,
    const std::function<void(torch::serialize::OutputArchive*)>& save_agent) {
  const std::string tmp = path + ".tmp";
  try {
    torch::serialize::OutputArchive archive;
    archive.write("meta", StringTensor(meta.dump()));
    torch::serialize::OutputArchive agent_archive;
    save_agent(&agent_archive);
    archive.write("agent", agent_archive);
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    return InvalidArgumentError("checkpoint " + path +
                                ": cannot write: " + FirstLine(e.what()));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return InvalidArgumentError("checkpoint " + path + ": cannot write");
  }
  return Status::Ok();
}

Status CheckMeta(const std::string& path, const json& meta,
                 const json& expected) {
  for (const char* key : {"format", "version", "agent", "graph_hash", "cluster",
                          "num_groups", "num_devices"}) {
    if (!meta.contains(key)) {
      return InvalidArgumentError("checkpoint " + path + ": no field \"" + key +
                                  "\"; not a dplace checkpoint");
    }
    if (meta[key] != expected[key]) {
      return InvalidArgumentError(
          "checkpoint " + path + ": " + key + " is " + meta[key].dump() +
          ", but this search has " + expected[key].dump() +
          " (resume with the same method, model, cluster and options)");
    }
  }
  return Status::Ok();
}

// Loads the loop state and the agent's state from `path`.
Status LoadCheckpoint(
    const std::string& path, const json& expected,
    const std::function<void(torch::serialize::InputArchive*)>& load_agent,
    LoopState* s) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::Tensor meta_tensor;
    if (!archive.try_read("meta", meta_tensor)) {
      return InvalidArgumentError("checkpoint " + path +
                                  ": not a dplace checkpoint (no meta)");
    }
    const json meta = json::parse(TensorString(meta_tensor));
    DPLACE_RETURN_IF_ERROR(CheckMeta(path, meta, expected));
    s->samples = meta.at("samples").get<int64_t>();
    s->updates = meta.at("updates").get<int64_t>();
    s->wall_seconds = meta.at("wall_seconds").get<double>();
    s->baseline = meta.at("baseline").get<double>();
    s->baseline_set = meta.at("baseline_set").get<bool>();
    std::istringstream rng(meta.at("rng").get<std::string>());
    rng >> s->rng;
    if (rng.fail()) {
      return InvalidArgumentError("checkpoint " + path +
                                  ": rng: not a generator state");
    }
    s->has_best = meta.at("has_best").get<bool>();
    s->best_groups = meta.at("best_groups").get<std::vector<DeviceId>>();
    s->best_step_time = meta.at("best_step_time").get<double>();
    s->best_feasible = meta.at("best_feasible").get<bool>();
    if (s->has_best &&
        static_cast<int>(s->best_groups.size()) != expected["num_groups"]) {
      return InvalidArgumentError("checkpoint " + path +
                                  ": best_groups has the wrong size");
    }
    torch::serialize::InputArchive agent_archive;
    archive.read("agent", agent_archive);
    load_agent(&agent_archive);
  } catch (const std::exception& e) {
    // c10::Error, json errors: a truncated or foreign file.
    return InvalidArgumentError(
        "checkpoint " + path +
        ": cannot read a dplace checkpoint from it (corrupt or not a "
        "checkpoint): " +
        FirstLine(e.what()));
  }
  return Status::Ok();
}

json RecordJson(const SampleRecord& r) {
  json line{{"sample", r.index},
            {"wall_s", r.wall_seconds},
            {"step_time", r.step_time},
            {"feasible", r.feasible},
            {"reward", r.reward}};
  line["best_step_time"] =
      r.best_step_time > 0 ? json(r.best_step_time) : json(nullptr);
  return line;
}

// On resume, keeps the log's lines of samples before the checkpoint (a
// killed search may have logged samples it never learned from).
Status TruncateLog(const std::string& path, int64_t samples) {
  std::ifstream in(path);
  if (!in) return Status::Ok();  // No log yet: start one.
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("sample") ||
        !j["sample"].is_number_integer()) {
      return InvalidArgumentError(
          "log " + path +
          ": a line that is not a sample record: " + line.substr(0, 80));
    }
    if (j["sample"].get<int64_t>() < samples) kept += line + "\n";
  }
  in.close();
  return WriteTextFile(path, kept);
}

}  // namespace

Agent::~Agent() = default;

StatusOr<Grouping> SearchGrouping(const PlacementProblem& problem,
                                  const SearchSettings& settings) {
  return MakeSearchGrouping(problem, settings);
}

void ReadSearchSettings(OptionReader* reader, SearchSettings* s) {
  reader->Double("failing_step_time", &s->failing_step_time);
  reader->Double("baseline_decay", &s->baseline_decay);
  reader->Bool("baseline_starts_failing", &s->baseline_starts_failing);
  reader->Int("feasible_only_after", &s->feasible_only_after);
  reader->String("grouping", &s->grouping);
  reader->Int("groups", &s->num_groups);
  reader->String("scope_marker", &s->scope_marker);
}

Status ValidateSearchSettings(const std::string& method,
                              const SearchSettings& s) {
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError("method " + method + ": option " + what);
  };
  if (!(s.failing_step_time > 0)) {
    return bad("failing_step_time must be > 0");
  }
  if (!(s.baseline_decay >= 0 && s.baseline_decay < 1)) {
    return bad("baseline_decay must be in [0, 1)");
  }
  if (s.grouping != "colocation" && s.grouping != "hints" &&
      s.grouping != "ops" && s.grouping != "metis" && s.grouping != "fluid") {
    return bad("grouping=" + s.grouping +
               ": expected colocation, hints, ops, metis or fluid");
  }
  if (s.num_groups < 1) return bad("groups must be >= 1");
  return Status::Ok();
}

StatusOr<SearchResult> Agent::Search(const PlacementProblem& problem,
                                     Environment* environment,
                                     const SearchOptions& options) {
  const std::string method = "method " + name_;
  if (!problem.graph || !problem.cluster || !problem.cost || !environment) {
    return InvalidArgumentError(method + ": incomplete problem");
  }
  if (options.budget.samples < 0 || options.budget.seconds < 0 ||
      (options.budget.samples == 0 && options.budget.seconds == 0)) {
    return InvalidArgumentError(
        method + ": the search needs a budget: samples > 0 or seconds > 0");
  }
  const Cluster& cluster = *problem.cluster;
  if (cluster.num_devices() < 2) {
    return InvalidArgumentError(
        method +
        ": a learned placer needs a cluster of at least two devices; " +
        "cluster " + cluster.name() + " has " +
        std::to_string(cluster.num_devices()));
  }
  if (environment->graph().hash() != problem.graph->hash() ||
      environment->cluster().name() != cluster.name()) {
    return InvalidArgumentError(method +
                                ": the environment evaluates another graph or "
                                "cluster than the problem's");
  }
  if (options.checkpoint_every < 1) {
    return InvalidArgumentError(method + ": checkpoint_every must be >= 1");
  }
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem).WithPrefix(method));
  DPLACE_ASSIGN_OR_RETURN(AgentSetup setup,
                          MakeSetup(problem, settings_, options.budget));

  LoopState s;
  s.rng.seed(problem.seed);
  try {
    torch::manual_seed(problem.seed);
    DPLACE_RETURN_IF_ERROR(DoInit(setup).WithPrefix(method));
  } catch (const std::exception& e) {
    return InternalError(
        method + ": building the policy failed: " + FirstLine(e.what()));
  }
  const json expected = CheckpointMeta(*this, setup, s);
  if (!options.resume_path.empty()) {
    DPLACE_RETURN_IF_ERROR(LoadCheckpoint(
        options.resume_path, expected,
        [this](torch::serialize::InputArchive* a) { DoLoad(a); }, &s));
  }
  std::ofstream log;
  if (!options.log_path.empty()) {
    if (!options.resume_path.empty()) {
      DPLACE_RETURN_IF_ERROR(TruncateLog(options.log_path, s.samples));
    }
    log.open(options.log_path,
             options.resume_path.empty() ? std::ios::trunc : std::ios::app);
    if (!log) {
      return InvalidArgumentError("log " + options.log_path +
                                  ": cannot open for writing");
    }
  }
  auto save = [&]() -> Status {
    if (options.checkpoint_path.empty()) return Status::Ok();
    return WriteCheckpoint(
        options.checkpoint_path, CheckpointMeta(*this, setup, s),
        [this](torch::serialize::OutputArchive* a) { DoSave(a); });
  };

  SearchResult result;
  result.num_groups = setup.groups.num_groups;
  result.first_sample_of_this_run = s.samples;
  const double failing_reward = -std::sqrt(settings_.failing_step_time);
  const auto start = std::chrono::steady_clock::now();
  auto wall = [&] {
    return s.wall_seconds + std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count();
  };
  if (settings_.baseline_starts_failing && !s.baseline_set) {
    s.baseline = failing_reward;
    s.baseline_set = true;
  }
  int64_t updates_at_checkpoint = s.updates;
  const SearchBudget& budget = options.budget;
  while (!(budget.samples > 0 && s.samples >= budget.samples) &&
         !(budget.seconds > 0 && wall() >= budget.seconds)) {
    int k = BatchSize();
    if (budget.samples > 0) {
      k = static_cast<int>(std::min<int64_t>(k, budget.samples - s.samples));
    }
    EvaluatedBatch batch;
    batch.first_index = s.samples;
    try {
      batch.group_devices = DoSample(k, &s.rng);
    } catch (const std::exception& e) {
      return InternalError(method +
                           ": sampling failed: " + FirstLine(e.what()));
    }
    const std::vector<std::pair<std::string, double>> stats = BatchStats();
    std::vector<Placement> placements;
    for (const std::vector<DeviceId>& groups : batch.group_devices) {
      DPLACE_ASSIGN_OR_RETURN(Placement p,
                              ExpandGroupPlacement(*problem.graph, cluster,
                                                   setup.grouping, groups));
      placements.push_back(std::move(p));
    }
    DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> measured,
                            environment->Evaluate(placements));

    const bool drop_infeasible = settings_.feasible_only_after >= 0 &&
                                 s.samples >= settings_.feasible_only_after;
    double batch_sum = 0;
    int batch_feasible = 0, batch_used = 0;
    double used_reward_sum = 0;
    for (int i = 0; i < k; ++i) {
      const Measurement& m = measured[i];
      const double charged =
          m.feasible ? m.step_time : settings_.failing_step_time;
      const double reward =
          m.feasible ? -std::sqrt(m.step_time) : failing_reward;
      batch.step_times.push_back(charged);
      batch.feasible.push_back(m.feasible);
      batch.rewards.push_back(reward);
      batch.use.push_back(m.feasible || !drop_infeasible);
      if (batch.use.back()) {
        ++batch_used;
        used_reward_sum += reward;
      }
      if (m.feasible) {
        batch_sum += m.step_time;
        ++batch_feasible;
      }
      if (Better(m.feasible, m.step_time, s)) {
        s.has_best = true;
        s.best_groups = batch.group_devices[i];
        s.best_step_time = m.step_time;
        s.best_feasible = m.feasible;
      }
      SampleRecord r;
      r.index = s.samples + i;
      r.wall_seconds = wall();
      r.step_time = m.step_time;
      r.feasible = m.feasible;
      r.reward = reward;
      r.best_step_time = s.best_feasible ? s.best_step_time : 0;
      if (log.is_open()) {
        json line = RecordJson(r);
        for (const auto& [key, value] : stats) line[key] = value;
        log << line.dump() << "\n";
      }
      result.history.push_back(r);
    }
    if (log.is_open()) {
      log.flush();
      if (!log) {
        return InvalidArgumentError("log " + options.log_path +
                                    ": write failed");
      }
    }
    // The baseline before this batch gives the advantages; then every used
    // sample moves it.
    if (!s.baseline_set && batch_used > 0) {
      s.baseline = used_reward_sum / batch_used;
      s.baseline_set = true;
    }
    for (int i = 0; i < k; ++i) {
      batch.advantages.push_back(batch.rewards[i] - s.baseline);
    }
    for (int i = 0; i < k; ++i) {
      if (!batch.use[i]) continue;
      s.baseline = settings_.baseline_decay * s.baseline +
                   (1 - settings_.baseline_decay) * batch.rewards[i];
    }
    s.samples += k;
    try {
      s.updates += DoUpdate(batch);
    } catch (const std::exception& e) {
      return InternalError(
          method + ": the policy update failed: " + FirstLine(e.what()));
    }
    if (s.updates - updates_at_checkpoint >= options.checkpoint_every) {
      updates_at_checkpoint = s.updates;
      const double saved_wall = s.wall_seconds;
      s.wall_seconds = wall();
      Status saved = save();
      s.wall_seconds = saved_wall;
      DPLACE_RETURN_IF_ERROR(saved);
    }
    if (options.progress) {
      SearchProgress p;
      p.samples = s.samples;
      p.updates = s.updates;
      p.wall_seconds = wall();
      p.budget = budget;
      p.batch_mean_step_time = batch_feasible ? batch_sum / batch_feasible : 0;
      p.best_step_time = s.best_feasible ? s.best_step_time : 0;
      p.agent_stats = stats;
      options.progress(p);
    }
  }
  s.wall_seconds = wall();
  DPLACE_RETURN_IF_ERROR(save());

  result.samples = s.samples;
  result.updates = s.updates;
  result.wall_seconds = s.wall_seconds;
  if (!s.has_best) {
    return InternalError(method + ": the search evaluated no placement");
  }
  DPLACE_ASSIGN_OR_RETURN(
      result.best, ExpandGroupPlacement(*problem.graph, cluster, setup.grouping,
                                        s.best_groups));
  result.best_step_time = s.best_step_time;
  result.best_feasible = s.best_feasible;
  return result;
}

bool RegisterAgent(AgentEntry entry) {
  Registry().push_back(std::move(entry));
  return true;
}

std::vector<const AgentEntry*> Agents() {
  std::vector<const AgentEntry*> out;
  for (const AgentEntry& e : Registry()) out.push_back(&e);
  std::sort(out.begin(), out.end(),
            [](const AgentEntry* a, const AgentEntry* b) {
              return a->rank != b->rank ? a->rank < b->rank : a->name < b->name;
            });
  return out;
}

const AgentEntry* FindAgent(std::string_view name) {
  for (const AgentEntry& e : Registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

StatusOr<std::unique_ptr<Agent>> MakeAgent(std::string_view name,
                                           const PlacerOptions& options) {
  const AgentEntry* entry = FindAgent(name);
  if (!entry) {
    std::string known;
    for (const AgentEntry* e : Agents()) {
      known += (known.empty() ? "" : ", ") + e->name;
    }
    return NotFoundError("unknown agent \"" + std::string(name) +
                         "\" (agents: " + known + ")");
  }
  return entry->make(options);
}

}  // namespace dplace
