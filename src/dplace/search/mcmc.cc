#include "dplace/search/mcmc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include "dplace/io/file.h"
#include "dplace/io/json_parse.h"
#include "dplace/search/search_loop.h"
#include "dplace/search/start_placements.h"
#include "dplace/sim/simulator.h"
#include "dplace/sim/step_chain.h"
#include "dplace/sim/work_bound.h"

namespace dplace {
namespace {

using nlohmann::json;

constexpr const char* kCheckpointFormat = "dplace-mcmc-checkpoint";
constexpr int kCheckpointVersion = 1;
constexpr int64_t kDefaultBudgetSamples = 2000;
// Batches between two traces of the current placement's last chain, at
// least (chain moves).
constexpr int64_t kBatchesPerChain = 4;

// The search space: each colocation-hint group on one of the devices all
// its ops allow.
struct GroupSpace {
  HintGroups hints;
  int num_devices = 0;
  // allowed[g * num_devices + d]: group g may go to device d. A group whose
  // ops share no device kind may go anywhere; expanding moves the ops its
  // device forbids to their first allowed device.
  std::vector<uint8_t> allowed;
  std::vector<std::vector<DeviceId>> devices;  // Per group, allowed ones.
  std::vector<OpId> first_op;                  // Per group, lowest id.
  std::vector<int32_t> topological;  // Groups by topological first op.
  std::vector<int32_t> position;     // Per group: its index in topological.
  std::vector<int32_t> movable;      // Groups with two or more devices.
  // Per group: the groups its ops exchange tensors with, each once.
  std::vector<std::vector<int32_t>> neighbours;

  int num_groups() const { return hints.num_groups; }
  bool Allows(int32_t g, DeviceId d) const {
    return allowed[static_cast<size_t>(g) * num_devices + d] != 0;
  }
};

GroupSpace MakeGroupSpace(const Graph& graph, const Cluster& cluster) {
  GroupSpace s;
  s.hints = ColocationHintGroups(graph);
  s.num_devices = cluster.num_devices();
  const int n = s.hints.num_groups;
  std::vector<uint8_t> kinds(n, 0xff);
  s.first_op.assign(n, -1);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const int32_t g = s.hints.group[op];
    kinds[g] &= graph.allowed_devices(op).bits();
    if (s.first_op[g] < 0) s.first_op[g] = op;
  }
  s.allowed.assign(static_cast<size_t>(n) * s.num_devices, 0);
  s.devices.resize(n);
  for (int32_t g = 0; g < n; ++g) {
    for (DeviceId d = 0; d < s.num_devices; ++d) {
      if (kinds[g] & (1u << static_cast<int>(cluster.device(d).kind))) {
        s.devices[g].push_back(d);
      }
    }
    if (s.devices[g].empty()) {
      for (DeviceId d = 0; d < s.num_devices; ++d) s.devices[g].push_back(d);
    }
    for (DeviceId d : s.devices[g]) {
      s.allowed[static_cast<size_t>(g) * s.num_devices + d] = 1;
    }
    if (s.devices[g].size() > 1) s.movable.push_back(g);
  }
  std::vector<uint8_t> seen(n, 0);
  s.position.assign(n, 0);
  for (OpId op : graph.topological_order()) {
    const int32_t g = s.hints.group[op];
    if (!seen[g]) {
      seen[g] = 1;
      s.position[g] = static_cast<int32_t>(s.topological.size());
      s.topological.push_back(g);
    }
  }
  s.neighbours.resize(n);
  for (EdgeId e = 0; e < graph.num_edges(); ++e) {
    const int32_t a = s.hints.group[graph.edge_src(e)];
    const int32_t b = s.hints.group[graph.edge_dst(e)];
    if (a == b) continue;
    s.neighbours[a].push_back(b);
    s.neighbours[b].push_back(a);
  }
  for (std::vector<int32_t>& list : s.neighbours) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return s;
}

// The op placement of group devices: each op on its group's device, or on
// its first allowed device where that device's kind is not allowed.
Placement Expand(const GroupSpace& s, const Graph& graph,
                 const Cluster& cluster, const std::vector<DeviceId>& groups) {
  Placement placement(graph.num_ops());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const DeviceId d = groups[s.hints.group[op]];
    placement[op] = graph.allowed_devices(op).Contains(cluster.device(d).kind)
                        ? d
                        : AllowedDevices(graph, cluster, op)[0];
  }
  return placement;
}

// Each group on the device of its first op, or its first allowed device.
std::vector<DeviceId> Snap(const GroupSpace& s, const Placement& placement) {
  std::vector<DeviceId> groups(s.num_groups());
  for (int32_t g = 0; g < s.num_groups(); ++g) {
    const DeviceId d = placement[s.first_op[g]];
    groups[g] = s.Allows(g, d) ? d : s.devices[g][0];
  }
  return groups;
}

// The movable groups that held up a placement's last chain, with the
// seconds they held it up (ChainDelayers' ops' summed), as a running sum.
struct ChainGroups {
  std::vector<int32_t> groups;
  std::vector<double> cumulative;  // cumulative[i]: groups 0..i's seconds.

  // A group drawn with probability proportional to its seconds.
  // REQUIRES: not empty.
  int32_t Draw(std::mt19937_64* rng) const {
    const double at =
        std::uniform_real_distribution<double>(0, cumulative.back())(*rng);
    const size_t i =
        std::upper_bound(cumulative.begin(), cumulative.end(), at) -
        cumulative.begin();
    return groups[std::min(i, groups.size() - 1)];
  }
};

// Changes `groups` in place: moves one group (any, or one that held up the
// current placement's last chain), swaps two, or shifts a run.
class Proposer {
 public:
  Proposer(const GroupSpace& space, const McmcSettings& settings)
      : s_(space), settings_(settings) {
    const int64_t n = space.num_groups();
    max_shift_ = settings.max_shift > 0
                     ? std::min<int64_t>(settings.max_shift, n)
                     : std::max<int64_t>(1, n / std::max(1, space.num_devices));
  }

  // `delayers`: of the current placement; none: a chain move is a plain
  // move.
  void Propose(std::vector<DeviceId>* groups, std::mt19937_64* rng,
               const ChainGroups& delayers) const {
    if (s_.movable.empty()) return;  // One placement only: nothing to change.
    const double r = Uniform(rng);
    const double move =
        settings_.chain_probability + settings_.move_probability;
    const double swap = move + settings_.swap_probability;
    if (r < settings_.chain_probability && !delayers.groups.empty()) {
      MoveGroup(delayers.Draw(rng), groups, rng);
    } else if (r < move) {
      Move(groups, rng);
    } else if (r < swap) {
      if (!Swap(groups, rng)) Move(groups, rng);
    } else if (r < swap + settings_.boundary_probability) {
      if (!Boundary(groups, rng)) Shift(groups, rng);
    } else {
      Shift(groups, rng);
    }
  }

 private:
  static double Uniform(std::mt19937_64* rng) {
    return std::uniform_real_distribution<double>(0, 1)(*rng);
  }
  static size_t Index(size_t n, std::mt19937_64* rng) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(*rng);
  }

  // One movable group to another of its devices.
  void Move(std::vector<DeviceId>* groups, std::mt19937_64* rng) const {
    MoveGroup(s_.movable[Index(s_.movable.size(), rng)], groups, rng);
  }

  // Movable group g to another of its devices.
  void MoveGroup(int32_t g, std::vector<DeviceId>* groups,
                 std::mt19937_64* rng) const {
    const std::vector<DeviceId>& devices = s_.devices[g];
    size_t i = Index(devices.size() - 1, rng);
    if (devices[i] == (*groups)[g]) i = devices.size() - 1;
    (*groups)[g] = devices[i];
  }

  // Two groups on different devices, each allowed on the other's; false
  // when a few tries find none.
  bool Swap(std::vector<DeviceId>* groups, std::mt19937_64* rng) const {
    for (int tries = 0; tries < 8; ++tries) {
      const int32_t a = s_.movable[Index(s_.movable.size(), rng)];
      const int32_t b = s_.movable[Index(s_.movable.size(), rng)];
      const DeviceId da = (*groups)[a], db = (*groups)[b];
      if (da != db && s_.Allows(a, db) && s_.Allows(b, da)) {
        std::swap((*groups)[a], (*groups)[b]);
        return true;
      }
    }
    return false;
  }

  // A run of groups, consecutive in topological order, to one device (the
  // groups that allow it). Run lengths are log-uniform in [1, max_shift_]:
  // mostly short runs, now and then a layer's worth.
  void Shift(std::vector<DeviceId>* groups, std::mt19937_64* rng) const {
    const size_t n = s_.topological.size();
    const size_t first = Index(n, rng);
    const double log_max = std::log(static_cast<double>(max_shift_) + 1);
    const size_t length = std::clamp<size_t>(
        static_cast<size_t>(std::exp(Uniform(rng) * log_max)), 1, max_shift_);
    const DeviceId d = static_cast<DeviceId>(Index(s_.num_devices, rng));
    for (size_t i = first; i < std::min(n, first + length); ++i) {
      const int32_t g = s_.topological[i];
      if (s_.Allows(g, d)) (*groups)[g] = d;
    }
  }

  // A boundary between two devices moves: a group with a neighbour on
  // another device, and the groups before it (its neighbour comes later)
  // or after it (earlier) in topological order that share its device, a
  // log-uniform run of them, go to the neighbour's device. A contiguous
  // split's stretch grows or shrinks by a run at its end. False when a few
  // tries find no group with such a neighbour.
  bool Boundary(std::vector<DeviceId>* groups, std::mt19937_64* rng) const {
    for (int tries = 0; tries < 8; ++tries) {
      const int32_t g = s_.movable[Index(s_.movable.size(), rng)];
      const std::vector<int32_t>& near = s_.neighbours[g];
      if (near.empty()) continue;
      const int32_t h = near[Index(near.size(), rng)];
      const DeviceId from = (*groups)[g], to = (*groups)[h];
      if (from == to || !s_.Allows(g, to)) continue;
      const double log_max = std::log(static_cast<double>(max_shift_) + 1);
      const int64_t length = std::clamp<int64_t>(
          static_cast<int64_t>(std::exp(Uniform(rng) * log_max)), 1,
          max_shift_);
      const int64_t step = s_.position[h] > s_.position[g] ? -1 : 1;
      const int64_t n = static_cast<int64_t>(s_.topological.size());
      for (int64_t i = s_.position[g], moved = 0;
           i >= 0 && i < n && moved < length; i += step) {
        const int32_t x = s_.topological[i];
        if ((*groups)[x] != from) break;  // The stretch ends here.
        if (s_.Allows(x, to)) (*groups)[x] = to;
        ++moved;
      }
      return true;
    }
    return false;
  }

  const GroupSpace& s_;
  const McmcSettings& settings_;
  int64_t max_shift_ = 1;
};

// What a checkpoint holds beside the loop's SearchState.
struct WalkState {
  int64_t restarts = 0;
  // Proposals since the walk last found a better group placement.
  int64_t since_improvement = 0;
  std::vector<DeviceId> current;  // Group devices; cost as below.
  double current_cost = 0;
  std::vector<DeviceId> anchor;  // The best group placement: restarts here.
  double anchor_cost = 0;
  // The best placement evaluated (the start as given included).
  Placement best;
  // Chain moves: the group placement whose last chain they draw from
  // (empty: none yet), the batch that traced it, and whether it is still
  // the current one.
  std::vector<DeviceId> chain_of;
  int64_t chain_batch = -kBatchesPerChain;
  bool chain_current = false;
};

// A search's placements: the start's candidates (a progress hook hears
// which placers run), then the walk.
using StartPlacements =
    std::function<StatusOr<std::vector<Placement>>(const PlacerProgress&)>;

// One walk: the loop (search_loop.h) with mcmc's proposals.
class Walk : public SearchLoop {
 public:
  Walk(const PlacementProblem& problem, const McmcSettings& settings,
       std::string start_name, StartPlacements start,
       const PlaceContext& context)
      : SearchLoop(problem, context),
        settings_(settings),
        start_name_(std::move(start_name)),
        start_(std::move(start)),
        failing_step_time_(settings.failing_step_time > 0
                               ? settings.failing_step_time
                               : 2 * SerialStepBound(*problem.cost)) {}

 protected:
  StatusOr<int> DoStart() override {
    space_ = MakeGroupSpace(*problem().graph, *problem().cluster);
    proposer_.emplace(space_, settings_);
    if (settings_.chain_probability > 0 && !space_.movable.empty()) {
      guide_ = std::make_unique<Simulator>(*problem().cost);
    }
    return space_.num_groups();
  }

  Status DoResume(const std::string& path) override {
    DPLACE_RETURN_IF_ERROR(LoadCheckpoint(path));
    if (guide_ != nullptr && !s_.chain_of.empty()) return FindDelayers();
    return Status::Ok();
  }

  Status DoBegin(bool resumed) override {
    if (resumed) return Status::Ok();
    DPLACE_ASSIGN_OR_RETURN(std::vector<Placement> candidates,
                            start_(ReportStartPlacers()));
    return EvaluateStart(std::move(candidates));
  }

  int64_t BatchSize() const override { return settings_.batch; }

  // Proposes a batch from the current placement, evaluates it, and moves to
  // the best proposal that passes the Metropolis test (in order, one
  // uniform draw each); then restarts from the best when due.
  StatusOr<BatchReport> DoBatch(int64_t k) override {
    // The chain of a placement a few batches old is mostly the current
    // one's: tracing it costs a few samples' time, so not every batch.
    if (guide_ != nullptr && !s_.chain_current &&
        state().updates >= s_.chain_batch + kBatchesPerChain) {
      s_.chain_of = s_.current;
      s_.chain_batch = state().updates;
      s_.chain_current = true;
      DPLACE_RETURN_IF_ERROR(FindDelayers());
    }
    std::vector<std::vector<DeviceId>> proposals(k, s_.current);
    std::vector<Placement> placements;
    for (std::vector<DeviceId>& p : proposals) {
      proposer_->Propose(&p, &state().rng, delayers_);
      placements.push_back(
          Expand(space_, *problem().graph, *problem().cluster, p));
    }
    DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> measured,
                            environment()->Evaluate(placements));
    int64_t chosen = -1;
    double chosen_cost = 0;
    bool improved = false;
    for (int64_t i = 0; i < k; ++i) {
      DPLACE_RETURN_IF_ERROR(Record(placements[i], measured[i]));
      const double cost = Cost(measured[i]);
      const double u =
          std::uniform_real_distribution<double>(0, 1)(state().rng);
      const bool accepted =
          cost <= s_.current_cost ||
          u < std::exp(-settings_.beta * (cost - s_.current_cost) /
                       std::max(s_.current_cost, 1e-12));
      if (accepted && (chosen < 0 || cost < chosen_cost)) {
        chosen = i;
        chosen_cost = cost;
      }
      if (cost < s_.anchor_cost) {
        s_.anchor = proposals[i];
        s_.anchor_cost = cost;
        improved = true;
      }
    }
    if (chosen >= 0) {
      s_.current = std::move(proposals[chosen]);
      s_.current_cost = chosen_cost;
      s_.chain_current = false;
    }
    s_.since_improvement = improved ? 0 : s_.since_improvement + k;
    if (settings_.restart_after > 0 &&
        s_.since_improvement >= settings_.restart_after) {
      s_.current = s_.anchor;
      s_.current_cost = s_.anchor_cost;
      s_.since_improvement = 0;
      ++s_.restarts;
      s_.chain_current = false;
    }
    BatchReport report;
    report.updates = 1;  // mcmc counts batches.
    report.stats = {{"moved", chosen >= 0 ? 1.0 : 0.0},
                    {"current_step_time", s_.current_cost},
                    {"restarts", static_cast<double>(s_.restarts)}};
    return report;
  }

  StatusOr<Placement> BestPlacement() const override { return s_.best; }

 private:
  // The movable groups that held up s_.chain_of's last chain, from a
  // simulation of it with its timeline.
  Status FindDelayers() {
    const Placement placement =
        Expand(space_, *problem().graph, *problem().cluster, s_.chain_of);
    SimOptions options;
    options.record_timeline = true;
    options.compute_bounds = false;
    DPLACE_ASSIGN_OR_RETURN(SimResult sim,
                            guide_->Simulate(placement, options));
    std::vector<double> seconds(space_.num_groups(), 0);
    for (const Delayer& d : ChainDelayers(*problem().cost, placement, sim)) {
      seconds[space_.hints.group[d.op]] += d.seconds;
    }
    delayers_ = ChainGroups();
    double sum = 0;
    for (int32_t g : space_.movable) {
      if (seconds[g] > 0) {
        sum += seconds[g];
        delayers_.groups.push_back(g);
        delayers_.cumulative.push_back(sum);
      }
    }
    return Status::Ok();
  }

  // What the walk minimises: the step time, or the failing step time when
  // the placement does not fit.
  double Cost(const Measurement& m) const {
    return m.feasible ? m.step_time : failing_step_time_;
  }

  // The loop's record of a sample, the best placement kept.
  Status Record(const Placement& placement, const Measurement& m) {
    DPLACE_ASSIGN_OR_RETURN(const bool best,
                            SearchLoop::Record(m, failing_step_time_));
    if (best) s_.best = placement;
    return Status::Ok();
  }

  // Evaluates the start's candidates as given and starts the walk from the
  // best, snapped to the groups (evaluated too when snapping changed it).
  Status EvaluateStart(std::vector<Placement> candidates) {
    for (const Placement& p : candidates) {
      DPLACE_RETURN_IF_ERROR(
          ValidatePlacement(*problem().graph, *problem().cluster, p)
              .WithPrefix("start " + start_name_));
    }
    DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> measured,
                            environment()->Evaluate(candidates));
    size_t best = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      DPLACE_RETURN_IF_ERROR(Record(candidates[i], measured[i]));
      if (Cost(measured[i]) < Cost(measured[best])) best = i;
    }
    s_.current = Snap(space_, candidates[best]);
    s_.current_cost = Cost(measured[best]);
    Placement snapped =
        Expand(space_, *problem().graph, *problem().cluster, s_.current);
    if (snapped != candidates[best]) {
      DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> m,
                              environment()->Evaluate({snapped}));
      DPLACE_RETURN_IF_ERROR(Record(snapped, m[0]));
      s_.current_cost = Cost(m[0]);
    }
    s_.anchor = s_.current;
    s_.anchor_cost = s_.current_cost;
    return Status::Ok();
  }

  // What must match for a checkpoint to continue this search.
  json Meta() const {
    return json{{"format", kCheckpointFormat},
                {"version", kCheckpointVersion},
                {"graph_hash", problem().graph->hash()},
                {"cluster", problem().cluster->name()},
                {"num_groups", space_.num_groups()},
                {"seed", problem().seed},
                {"start", start_name_},
                {"beta", settings_.beta},
                {"batch", settings_.batch},
                {"restart_after", settings_.restart_after},
                {"failing_step_time", settings_.failing_step_time},
                {"chain_probability", settings_.chain_probability},
                {"move_probability", settings_.move_probability},
                {"swap_probability", settings_.swap_probability},
                {"boundary_probability", settings_.boundary_probability},
                {"max_shift", settings_.max_shift}};
  }

  // Written whole or not at all, with a checksum (WriteChecksummedFile),
  // so a search killed while writing leaves the previous checkpoint whole.
  Status DoSave(const std::string& path) const override {
    const SearchState& loop = state();
    std::ostringstream rng;
    rng << loop.rng;
    json j{{"meta", Meta()},
           {"samples", loop.samples},
           {"batches", loop.updates},
           {"restarts", s_.restarts},
           {"wall_seconds", loop.wall_seconds},
           {"rng", rng.str()},
           {"since_improvement", s_.since_improvement},
           {"current", s_.current},
           {"current_cost", s_.current_cost},
           {"anchor", s_.anchor},
           {"anchor_cost", s_.anchor_cost},
           {"has_best", loop.has_best},
           {"best", s_.best},
           {"best_step_time", loop.best_step_time},
           {"best_feasible", loop.best_feasible},
           {"chain_of", s_.chain_of},
           {"chain_batch", s_.chain_batch},
           {"chain_current", s_.chain_current}};
    return WriteChecksummedFile(path, j.dump() + "\n").WithPrefix("checkpoint");
  }

  Status LoadCheckpoint(const std::string& path) {
    StatusOr<std::string> text = ReadChecksummedFile(path);
    if (!text.ok()) return text.status().WithPrefix("checkpoint");
    auto bad = [&](const std::string& what) {
      return InvalidArgumentError("checkpoint " + path + ": " + what);
    };
    StatusOr<json> parsed = ParseJson(*text, "not an mcmc checkpoint");
    if (!parsed.ok()) return parsed.status().WithPrefix("checkpoint " + path);
    const json& j = *parsed;
    if (!j.is_object() || !j.contains("meta") || !j["meta"].is_object() ||
        j["meta"].value("format", "") != kCheckpointFormat) {
      return bad("not an mcmc checkpoint");
    }
    const json expected = Meta();
    for (const auto& [key, value] : expected.items()) {
      if (!j["meta"].contains(key) || j["meta"][key] != value) {
        return bad("made for another search: " + key + " is " +
                   (j["meta"].contains(key) ? j["meta"][key].dump()
                                            : std::string("missing")) +
                   ", this search has " + value.dump());
      }
    }
    SearchState& loop = state();
    try {
      loop.samples = j.at("samples").get<int64_t>();
      loop.updates = j.at("batches").get<int64_t>();
      s_.restarts = j.at("restarts").get<int64_t>();
      loop.wall_seconds = j.at("wall_seconds").get<double>();
      s_.since_improvement = j.at("since_improvement").get<int64_t>();
      s_.current = j.at("current").get<std::vector<DeviceId>>();
      s_.current_cost = j.at("current_cost").get<double>();
      s_.anchor = j.at("anchor").get<std::vector<DeviceId>>();
      s_.anchor_cost = j.at("anchor_cost").get<double>();
      loop.has_best = j.at("has_best").get<bool>();
      s_.best = j.at("best").get<Placement>();
      loop.best_step_time = j.at("best_step_time").get<double>();
      loop.best_feasible = j.at("best_feasible").get<bool>();
      s_.chain_of = j.at("chain_of").get<std::vector<DeviceId>>();
      s_.chain_batch = j.at("chain_batch").get<int64_t>();
      s_.chain_current = j.at("chain_current").get<bool>();
      std::istringstream rng(j.at("rng").get<std::string>());
      rng >> loop.rng;
      if (rng.fail()) return bad("rng: not a generator state");
    } catch (const json::exception& e) {
      return bad(std::string("malformed: ") + e.what());
    }
    return CheckLoadedState(path);
  }

  // The loaded walk is one of this problem's: sizes and devices in range.
  Status CheckLoadedState(const std::string& path) const {
    auto in_range = [&](const std::vector<DeviceId>& groups) {
      if (static_cast<int>(groups.size()) != space_.num_groups()) return false;
      for (size_t g = 0; g < groups.size(); ++g) {
        if (groups[g] < 0 || groups[g] >= space_.num_devices ||
            !space_.Allows(static_cast<int32_t>(g), groups[g])) {
          return false;
        }
      }
      return true;
    };
    const SearchState& loop = state();
    if (!loop.has_best || loop.samples < 1 || loop.updates < 0 ||
        !in_range(s_.current) || !in_range(s_.anchor) ||
        (!s_.chain_of.empty() && !in_range(s_.chain_of)) ||
        !(s_.current_cost > 0) || !(s_.anchor_cost > 0)) {
      return InvalidArgumentError("checkpoint " + path +
                                  ": the walk's state is not one of this "
                                  "problem's");
    }
    Status valid =
        ValidatePlacement(*problem().graph, *problem().cluster, s_.best);
    return valid.WithPrefix("checkpoint " + path + ": best");
  }

  const McmcSettings& settings_;
  const std::string start_name_;
  const StartPlacements start_;
  // What a placement that does not fit costs: settings_.failing_step_time,
  // or twice the serial bound (no placement is slower).
  const double failing_step_time_;
  GroupSpace space_;
  std::optional<Proposer> proposer_;
  WalkState s_;
  // Chain moves' guide (settings_.chain_probability > 0): a simulator of
  // the problem's cost model, whatever environment measures the samples.
  std::unique_ptr<Simulator> guide_;
  ChainGroups delayers_;  // FindDelayers' groups.
};

StatusOr<PlaceResult> RunWalk(const PlacementProblem& problem,
                              const McmcSettings& settings,
                              const std::string& start_name,
                              const StartPlacements& start,
                              const PlaceContext& context) {
  return Walk(problem, settings, start_name, start, context).Run();
}

class McmcMethod : public Method {
 public:
  explicit McmcMethod(McmcSettings settings)
      : Method("mcmc"), settings_(std::move(settings)) {}

  MethodTraits traits() const override {
    MethodTraits traits;
    traits.searches = true;
    traits.can_resume = true;
    traits.default_budget_samples = kDefaultBudgetSamples;
    return traits;
  }

 protected:
  StatusOr<PlaceResult> DoPlace(const PlacementProblem& problem,
                                const PlaceContext& context) override {
    return RunWalk(
        problem, settings_, settings_.start,
        [&](const PlacerProgress& progress) {
          return StartCandidates(problem, settings_.start, progress);
        },
        context);
  }

 private:
  McmcSettings settings_;
};

StatusOr<std::unique_ptr<Method>> MakeMcmc(const MethodOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(McmcSettings settings, ReadMcmcSettings(options));
  return std::unique_ptr<Method>(new McmcMethod(std::move(settings)));
}

}  // namespace

StatusOr<McmcSettings> ReadMcmcSettings(const MethodOptions& options) {
  McmcSettings s;
  OptionReader reader("mcmc", options);
  reader.Double("beta", &s.beta);
  reader.Int("batch", &s.batch);
  reader.Int("restart_after", &s.restart_after);
  reader.Double("failing_step_time", &s.failing_step_time);
  reader.String("start", &s.start);
  reader.Double("chain_probability", &s.chain_probability);
  reader.Double("move_probability", &s.move_probability);
  reader.Double("swap_probability", &s.swap_probability);
  reader.Double("boundary_probability", &s.boundary_probability);
  reader.Int("max_shift", &s.max_shift);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  auto bad = [](const std::string& what) {
    return InvalidArgumentError("method mcmc: option " + what);
  };
  if (!(s.beta >= 0 && std::isfinite(s.beta))) return bad("beta must be >= 0");
  if (s.batch < 1) return bad("batch must be >= 1");
  if (s.restart_after < 0) {
    return bad("restart_after must be >= 0 (0: never restart)");
  }
  if (!(s.failing_step_time >= 0 && std::isfinite(s.failing_step_time))) {
    return bad("failing_step_time must be >= 0 (0: twice the serial bound)");
  }
  if (!(s.chain_probability >= 0 && s.move_probability >= 0 &&
        s.swap_probability >= 0 && s.boundary_probability >= 0 &&
        s.chain_probability + s.move_probability + s.swap_probability +
                s.boundary_probability <=
            1)) {
    return bad(
        "chain_probability, move_probability, swap_probability and "
        "boundary_probability must be >= 0 and sum to at most 1");
  }
  if (s.max_shift < 0) return bad("max_shift must be >= 0");
  const Status start = CheckStartMethod(s.start);
  if (!start.ok()) return bad("start=" + s.start + ": " + start.message());
  return s;
}

StatusOr<PlaceResult> RefinePlacement(const PlacementProblem& problem,
                                      const Placement& start,
                                      const McmcSettings& settings,
                                      const PlaceContext& context) {
  return RunWalk(
      problem, settings, "placement",
      [&](const PlacerProgress&) -> StatusOr<std::vector<Placement>> {
        return std::vector<Placement>{start};
      },
      context);
}

REGISTER_METHOD("mcmc", 50,
                "FlexFlow-style Metropolis-Hastings local search over "
                "colocation groups through the simulator, from the best "
                "classical placement; options beta, batch, restart_after, "
                "start",
                MakeMcmc);

}  // namespace dplace
