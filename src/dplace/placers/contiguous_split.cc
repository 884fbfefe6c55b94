#include "dplace/placers/contiguous_split.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "dplace/graph/placement.h"
#include "dplace/placers/placer.h"
#include "dplace/sim/simulator.h"

namespace dplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Strongly connected components of a directed graph of `n` nodes given by
// adjacency lists (Tarjan's algorithm, iterative). component[v] in
// [0, count).
std::vector<int32_t> Components(const std::vector<std::vector<int32_t>>& out,
                                int* count) {
  const int n = static_cast<int>(out.size());
  std::vector<int32_t> index(n, -1), low(n, 0), component(n, -1);
  std::vector<int32_t> stack;
  std::vector<char> on_stack(n, 0);
  std::vector<std::pair<int32_t, size_t>> frames;  // Node, next arc.
  int next_index = 0;
  *count = 0;
  for (int root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    frames.push_back({root, 0});
    index[root] = low[root] = next_index++;
    stack.push_back(root);
    on_stack[root] = 1;
    while (!frames.empty()) {
      auto& [v, arc] = frames.back();
      if (arc < out[v].size()) {
        const int32_t w = out[v][arc++];
        if (index[w] < 0) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = 1;
          frames.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const int32_t done = v;
      frames.pop_back();
      if (!frames.empty()) {
        low[frames.back().first] =
            std::min(low[frames.back().first], low[done]);
      }
      if (low[done] == index[done]) {
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          component[w] = *count;
        } while (w != done);
        ++*count;
      }
    }
  }
  return component;
}

// What the dynamic program reads about a problem's units.
class SplitCosts {
 public:
  SplitCosts(const PlacementProblem& problem, const SplitUnits& units)
      : problem_(problem),
        units_(units),
        gpus_(problem.cluster->DevicesOfKind(DeviceKind::kGpu)),
        cpus_(problem.cluster->DevicesOfKind(DeviceKind::kCpu)) {
    const Graph& g = *problem.graph;
    const int u = units.num_units;
    memory_.assign(u + 1, 0);
    ops_of_unit_.resize(u);
    for (OpId op = 0; op < g.num_ops(); ++op) {
      const int32_t k = units.unit_of_op[op];
      ops_of_unit_[k].push_back(op);
      int64_t bytes = g.persistent_bytes(op);
      for (int i = 0; i < g.num_outputs(op); ++i) {
        bytes += g.tensor_bytes(g.output(op, i));
      }
      memory_[k + 1] += bytes;
    }
    for (int k = 0; k < u; ++k) memory_[k + 1] += memory_[k];
    for (DeviceId d : gpus_) time_.push_back(TimePrefix(d));
    if (!cpus_.empty()) cpu_time_ = TimePrefix(cpus_[0]);
    Tensors();
  }

  const std::vector<DeviceId>& gpus() const { return gpus_; }
  bool has_cpu() const { return !cpus_.empty(); }
  int num_units() const { return units_.num_units; }

  int64_t Memory(int i, int j) const { return memory_[j] - memory_[i]; }
  // Units [i, j) on GPU number `a` (or the CPU: a < 0).
  double Time(int a, int i, int j) const {
    const std::vector<double>& t = a < 0 ? cpu_time_ : time_[a];
    return t[j] - t[i];
  }
  int64_t Capacity(int a) const {
    return problem_.cluster->device(gpus_[a]).memory_bytes;
  }

  // Calls visit(i, transfers) for i = j-1 down to `first`, where transfers
  // is the estimate of moving what units [i, j) read from outside and what
  // they give to outside, on a GPU; stops early when visit returns false.
  void SweepTransfers(int j,
                      const std::function<bool(int, double)>& visit) const {
    double transfers = 0;
    touched_.clear();
    for (int i = j - 1; i >= 0; --i) {
      for (int32_t t : read_by_[i])
        Change(t, &transfers, [&] { ++inside_readers_[t]; });
      for (int32_t t : written_by_[i])
        Change(t, &transfers, [&] { producer_inside_[t] = 1; });
      if (!visit(i, transfers)) break;
    }
    for (int32_t t : touched_) {
      inside_readers_[t] = 0;
      producer_inside_[t] = 0;
    }
  }

 private:
  // Per device: prefix sums over units of their ops' times there (an op
  // that may not run there counts on its first allowed device).
  std::vector<double> TimePrefix(DeviceId d) const {
    const Graph& g = *problem_.graph;
    const Cluster& c = *problem_.cluster;
    std::vector<double> prefix(units_.num_units + 1, 0);
    for (int k = 0; k < units_.num_units; ++k) {
      double sum = 0;
      for (OpId op : ops_of_unit_[k]) {
        const DeviceId on = g.allowed_devices(op).Contains(c.device(d).kind)
                                ? d
                                : AllowedDevices(g, c, op)[0];
        sum += problem_.cost->OpTime(op, on);
      }
      prefix[k + 1] = prefix[k] + sum;
    }
    return prefix;
  }

  // The units that read each tensor from another unit, and the cheapest
  // transfers of it into and out of the first GPU.
  void Tensors() {
    const Graph& g = *problem_.graph;
    const int u = units_.num_units;
    read_by_.resize(u);
    written_by_.resize(u);
    const int nt = g.num_tensors();
    readers_.assign(nt, 0);
    in_cost_.assign(nt, 0);
    out_cost_.assign(nt, 0);
    inside_readers_.assign(nt, 0);
    producer_inside_.assign(nt, 0);
    std::vector<int32_t> last_reader(nt, -1);
    for (OpId op = 0; op < g.num_ops(); ++op) {
      const int32_t k = units_.unit_of_op[op];
      for (EdgeId e : g.in_edges(op)) {
        if (g.is_control(e)) continue;
        const TensorId t = g.edge_tensor(e);
        if (units_.unit_of_op[g.producer(t)] == k) continue;
        // Ops of a unit are visited in id order, not unit by unit: count
        // each (tensor, unit) pair once.
        if (std::find(read_by_[k].begin(), read_by_[k].end(), t) !=
            read_by_[k].end()) {
          continue;
        }
        read_by_[k].push_back(t);
        ++readers_[t];
      }
    }
    for (TensorId t = 0; t < nt; ++t) {
      if (readers_[t] == 0) continue;
      written_by_[units_.unit_of_op[g.producer(t)]].push_back(t);
    }
    if (gpus_.empty()) return;
    const DeviceId gpu = gpus_[0];
    const Cluster& c = *problem_.cluster;
    for (TensorId t = 0; t < nt; ++t) {
      if (readers_[t] == 0) continue;
      double in = kInfinity, out = kInfinity;
      for (DeviceId d = 0; d < c.num_devices(); ++d) {
        if (d == gpu) continue;
        in = std::min(in,
                      problem_.cost->TransferTime(g.tensor_bytes(t), d, gpu));
        out = std::min(out,
                       problem_.cost->TransferTime(g.tensor_bytes(t), gpu, d));
      }
      in_cost_[t] = in == kInfinity ? 0 : in;
      out_cost_[t] = out == kInfinity ? 0 : out;
    }
  }

  // The tensor's contribution to the transfers before and after `update`.
  template <typename F>
  void Change(int32_t t, double* transfers, F update) const {
    if (!inside_readers_[t] && !producer_inside_[t]) touched_.push_back(t);
    *transfers -= Contribution(t);
    update();
    *transfers += Contribution(t);
  }
  double Contribution(int32_t t) const {
    if (producer_inside_[t]) {
      return inside_readers_[t] < readers_[t] ? out_cost_[t] : 0;
    }
    return inside_readers_[t] > 0 ? in_cost_[t] : 0;
  }

  const PlacementProblem& problem_;
  const SplitUnits& units_;
  const std::vector<DeviceId> gpus_, cpus_;
  std::vector<std::vector<OpId>> ops_of_unit_;
  std::vector<int64_t> memory_;
  std::vector<std::vector<double>> time_;  // Per GPU.
  std::vector<double> cpu_time_;
  std::vector<std::vector<int32_t>> read_by_, written_by_;
  std::vector<int32_t> readers_;  // Units other than the producer's.
  std::vector<double> in_cost_, out_cost_;
  // Sweep state, reset after each sweep.
  mutable std::vector<int32_t> inside_readers_;
  mutable std::vector<char> producer_inside_;
  mutable std::vector<int32_t> touched_;
};

// Each op on the device of its unit, or on its first allowed device.
Placement Expand(const PlacementProblem& problem, const SplitUnits& units,
                 const std::vector<DeviceId>& device_of_unit) {
  const Graph& g = *problem.graph;
  const Cluster& c = *problem.cluster;
  Placement placement(g.num_ops());
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const DeviceId d = device_of_unit[units.unit_of_op[op]];
    placement[op] = g.allowed_devices(op).Contains(c.device(d).kind)
                        ? d
                        : AllowedDevices(g, c, op)[0];
  }
  return placement;
}

// Every op on the CPU (no GPU to split over).
StatusOr<Placement> AllOnCpu(const PlacementProblem& problem) {
  const std::vector<DeviceId> cpus =
      problem.cluster->DevicesOfKind(DeviceKind::kCpu);
  if (cpus.empty()) return InfeasibleError("the cluster has no GPU and no CPU");
  return Expand(
      problem, SplitUnits{1, std::vector<int32_t>(problem.graph->num_ops(), 0)},
      {cpus[0]});
}

}  // namespace

SplitUnits MakeSplitUnits(const Graph& graph, int max_units, UnitOrder order) {
  const HintGroups hints = ColocationHintGroups(graph);
  const int n = hints.num_groups;
  std::vector<int32_t> position(graph.num_ops());
  for (size_t i = 0; i < graph.topological_order().size(); ++i) {
    position[graph.topological_order()[i]] = static_cast<int32_t>(i);
  }
  std::vector<std::vector<int32_t>> out(n);
  for (EdgeId e = 0; e < graph.num_edges(); ++e) {
    const OpId a = graph.edge_src(e), b = graph.edge_dst(e);
    if (graph.phase(a) != Phase::kForward ||
        graph.phase(b) != Phase::kForward || hints.group[a] == hints.group[b]) {
      continue;
    }
    out[hints.group[a]].push_back(hints.group[b]);
  }
  int count = 0;
  const std::vector<int32_t> component = Components(out, &count);
  // The condensed graph, ordered by Kahn's algorithm, earliest op first.
  std::vector<int32_t> key(count, std::numeric_limits<int32_t>::max());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    int32_t& k = key[component[hints.group[op]]];
    k = std::min(k, position[op]);
  }
  std::vector<std::vector<int32_t>> next(count);
  std::vector<int32_t> indegree(count, 0);
  for (int g = 0; g < n; ++g) {
    for (int32_t h : out[g]) {
      if (component[g] == component[h]) continue;
      next[component[g]].push_back(component[h]);
      ++indegree[component[h]];
    }
  }
  using Entry = std::pair<int32_t, int32_t>;  // Key, component.
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  std::vector<int32_t> stack;  // kDepthFirst: the latest enabled first.
  for (int c = count - 1; c >= 0; --c) {
    if (indegree[c] > 0) continue;
    if (order == UnitOrder::kEarliestFirst) {
      ready.push({key[c], c});
    } else {
      stack.push_back(c);
    }
  }
  std::vector<int32_t> rank(count, 0);
  int emitted = 0;
  while (!ready.empty() || !stack.empty()) {
    int32_t c;
    if (order == UnitOrder::kEarliestFirst) {
      c = ready.top().second;
      ready.pop();
    } else {
      c = stack.back();
      stack.pop_back();
    }
    rank[c] = emitted++;
    // Successors by key, so that the depth-first order visits the earliest
    // one next.
    std::sort(next[c].begin(), next[c].end(),
              [&](int32_t a, int32_t b) { return key[a] > key[b]; });
    for (int32_t d : next[c]) {
      if (--indegree[d] > 0) continue;
      if (order == UnitOrder::kEarliestFirst) {
        ready.push({key[d], d});
      } else {
        stack.push_back(d);
      }
    }
  }
  SplitUnits units;
  const int limit = std::max(1, max_units);
  units.num_units = std::min(count, limit);
  units.unit_of_op.resize(graph.num_ops());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const int64_t r = rank[component[hints.group[op]]];
    units.unit_of_op[op] = static_cast<int32_t>(r * units.num_units / count);
  }
  return units;
}

StatusOr<Placement> BestContiguousSplit(const PlacementProblem& problem,
                                        const SplitOptions& options) {
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
  const SplitUnits units = MakeSplitUnits(*problem.graph, options.max_units);
  const SplitCosts costs(problem, units);
  const int k = static_cast<int>(costs.gpus().size());
  if (k == 0) return AllOnCpu(problem);
  const int u = costs.num_units();
  const bool latency = options.objective == SplitObjective::kLatency;
  const bool cpu = latency && costs.has_cpu();
  // best[j][a]: units [0, j) split with GPUs 0..a-1 used; from[j][a]: the
  // stretch's first unit, negative (-1 - i) for a CPU stretch.
  std::vector<std::vector<double>> best(u + 1,
                                        std::vector<double>(k + 1, kInfinity));
  std::vector<std::vector<int32_t>> from(u + 1, std::vector<int32_t>(k + 1, 0));
  best[0][0] = 0;
  int64_t largest = 0;
  for (int a = 0; a < k; ++a) largest = std::max(largest, costs.Capacity(a));
  for (int j = 1; j <= u; ++j) {
    costs.SweepTransfers(j, [&](int i, double transfers) {
      const int64_t memory = costs.Memory(i, j);
      if (memory > largest) return false;
      for (int a = 1; a <= k; ++a) {
        if (best[i][a - 1] == kInfinity || memory > costs.Capacity(a - 1)) {
          continue;
        }
        const double stretch = costs.Time(a - 1, i, j) + transfers;
        const double total = latency ? best[i][a - 1] + stretch
                                     : std::max(best[i][a - 1], stretch);
        if (total < best[j][a]) {
          best[j][a] = total;
          from[j][a] = i;
        }
      }
      return true;
    });
    if (!cpu) continue;
    for (int i = 0; i < j; ++i) {
      for (int a = 0; a <= k; ++a) {
        if (best[i][a] == kInfinity) continue;
        const double total = best[i][a] + costs.Time(-1, i, j);
        if (total < best[j][a]) {
          best[j][a] = total;
          from[j][a] = -1 - i;
        }
      }
    }
  }
  int a = 0;
  for (int b = 1; b <= k; ++b) {
    if (best[u][b] < best[u][a]) a = b;
  }
  if (best[u][a] == kInfinity) {
    return InfeasibleError(
        "no contiguous split fits the GPUs' memory" +
        std::string(latency ? ""
                            : " (the throughput objective uses GPUs only)"));
  }
  const DeviceId cpu_device =
      cpu ? problem.cluster->DevicesOfKind(DeviceKind::kCpu)[0] : 0;
  std::vector<DeviceId> device_of_unit(u, cpu_device);
  for (int j = u; j > 0;) {
    const int32_t f = from[j][a];
    const int i = f >= 0 ? f : -1 - f;
    const DeviceId d = f >= 0 ? costs.gpus()[a - 1] : cpu_device;
    for (int x = i; x < j; ++x) device_of_unit[x] = d;
    if (f >= 0) --a;
    j = i;
  }
  return Expand(problem, units, device_of_unit);
}

StatusOr<Placement> GreedyContiguousSplit(const PlacementProblem& problem,
                                          int max_units) {
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
  const SplitUnits units = MakeSplitUnits(*problem.graph, max_units);
  const SplitCosts costs(problem, units);
  const int k = static_cast<int>(costs.gpus().size());
  if (k == 0) return AllOnCpu(problem);
  const std::vector<DeviceId> cpus =
      problem.cluster->DevicesOfKind(DeviceKind::kCpu);
  std::vector<DeviceId> device_of_unit(units.num_units);
  int gpu = 0;
  int64_t used = 0;
  for (int x = 0; x < units.num_units; ++x) {
    const int64_t memory = costs.Memory(x, x + 1);
    if (gpu < k && used + memory > costs.Capacity(gpu) && used > 0) {
      ++gpu;  // This GPU is full: the next one.
      used = 0;
    }
    if (gpu < k && memory <= costs.Capacity(gpu)) {
      device_of_unit[x] = costs.gpus()[gpu];
      used += memory;
    } else if (!cpus.empty()) {
      device_of_unit[x] = cpus[0];
    } else {
      return InfeasibleError("unit " + std::to_string(x) +
                             " fits on no GPU and the cluster has no CPU");
    }
  }
  return Expand(problem, units, device_of_unit);
}

namespace {

// The contiguous-split DP with dplace's timing: each op of a stretch starts
// when its inputs have arrived (the producer's finish plus the uncontended
// transfer between the two devices) and its device is free, stretches'
// ops in unit order. A state (prefix of j units, a GPUs used) keeps one
// partial schedule, the one whose ops so far finish earliest, with the
// finish and device of each op whose tensors later units read: a
// heuristic over the schedules, exact for each split it evaluates.
class ScheduledSplit {
 public:
  ScheduledSplit(const PlacementProblem& problem, const SplitUnits& units)
      : problem_(problem),
        g_(*problem.graph),
        units_(units),
        gpus_(problem.cluster->DevicesOfKind(DeviceKind::kGpu)),
        cpus_(problem.cluster->DevicesOfKind(DeviceKind::kCpu)) {
    const int u = units.num_units;
    std::vector<std::vector<OpId>> ops(u);  // Per unit, topological order.
    memory_.assign(u + 1, 0);
    last_reader_.assign(g_.num_ops(), -1);
    for (OpId op : g_.topological_order()) {
      const int32_t k = units.unit_of_op[op];
      ops[k].push_back(op);
      int64_t bytes = g_.persistent_bytes(op);
      for (int i = 0; i < g_.num_outputs(op); ++i) {
        bytes += g_.tensor_bytes(g_.output(op, i));
      }
      memory_[k + 1] += bytes;
      for (EdgeId e : g_.out_edges(op)) {
        last_reader_[op] =
            std::max(last_reader_[op], units.unit_of_op[g_.edge_dst(e)]);
      }
    }
    for (int k = 0; k < u; ++k) memory_[k + 1] += memory_[k];
    finish_.assign(g_.num_ops(), 0);
    device_.assign(g_.num_ops(), 0);
    // What Extend reads of each op, flattened in the order it visits them.
    const Cluster& cluster = *problem.cluster;
    for (int k = 0; k < u; ++k) {
      for (OpId op : ops[k]) {
        Visit v{op, -1, -1, static_cast<int32_t>(inputs_.size()), 0};
        for (DeviceKind kind : {DeviceKind::kGpu, DeviceKind::kCpu}) {
          if (!g_.allowed_devices(op).Contains(kind)) {
            (kind == DeviceKind::kGpu ? v.off_gpu : v.off_cpu) =
                AllowedDevices(g_, cluster, op)[0];
          }
        }
        for (EdgeId e : g_.in_edges(op)) {
          const OpId p = g_.edge_src(e);
          inputs_.push_back({p, units.unit_of_op[p],
                             g_.is_control(e)
                                 ? int64_t{-1}
                                 : g_.tensor_bytes(g_.edge_tensor(e))});
        }
        v.inputs_end = static_cast<int32_t>(inputs_.size());
        visits_.push_back(v);
      }
      visits_end_.push_back(static_cast<int32_t>(visits_.size()));
    }
  }

  // Each unit's device; empty when no split fits.
  std::vector<DeviceId> Solve() {
    const int u = units_.num_units;
    const int k = static_cast<int>(gpus_.size());
    states_.assign(static_cast<size_t>(u + 1) * (k + 1), State());
    State& first = At(0, 0);
    first.valid = true;
    for (int j = 0; j < u; ++j) {
      for (int a = 0; a <= k; ++a) {
        if (!At(j, a).valid) continue;
        if (a < k) Extend(j, a, gpus_[a], a + 1);
        if (!cpus_.empty()) Extend(j, a, cpus_[0], a);
      }
    }
    int best = -1;
    for (int a = 0; a <= k; ++a) {
      if (At(u, a).valid && (best < 0 || At(u, a).time < At(u, best).time)) {
        best = a;
      }
    }
    if (best < 0) return {};
    std::vector<DeviceId> device(u);
    for (int j = u, a = best; j > 0;) {
      const State& s = At(j, a);
      for (int x = s.from; x < j; ++x) device[x] = s.device;
      j = s.from;
      a = s.from_gpus;
    }
    return device;
  }

 private:
  struct Frontier {
    OpId op;
    double finish;
    DeviceId device;
  };
  // An op as Extend visits it: the device it runs on in a GPU's or the
  // CPU's stretch where it may not run there (-1: the stretch's), and its
  // inputs, inputs_[inputs_begin, inputs_end).
  struct Visit {
    OpId op;
    DeviceId off_gpu, off_cpu;
    int32_t inputs_begin, inputs_end;
  };
  struct Input {
    OpId op;
    int32_t unit;
    int64_t bytes;  // -1: a control edge.
  };
  struct State {
    bool valid = false;
    double time = 0;             // The latest finish so far.
    double cpu_free = 0;         // When the CPU's last op finishes.
    std::vector<Frontier> open;  // Ops later units read.
    int from = 0, from_gpus = 0;
    DeviceId device = 0;  // Of the stretch that ends here.
  };
  State& At(int j, int a) {
    return states_[static_cast<size_t>(j) * (gpus_.size() + 1) + a];
  }

  // Stretches [j, x) on `device` for every x the device's memory allows,
  // each offered to state (x, to_gpus).
  void Extend(int j, int a, DeviceId device, int to_gpus) {
    const State& from = At(j, a);
    for (const Frontier& f : from.open) {
      finish_[f.op] = f.finish;
      device_[f.op] = f.device;
    }
    const bool cpu = problem_.cluster->device(device).kind == DeviceKind::kCpu;
    const int64_t capacity = problem_.cluster->device(device).memory_bytes;
    double free = cpu ? from.cpu_free : 0;
    double time = from.time;
    const int u = units_.num_units;
    const int limit = cpu ? std::min(u, j + kMaxCpuStretch) : u;
    stretch_open_.clear();
    const CostModel& cost = *problem_.cost;
    for (int x = j; x < limit; ++x) {
      if (!cpu && memory_[x + 1] - memory_[j] > capacity) break;
      for (int32_t i = x == 0 ? 0 : visits_end_[x - 1]; i < visits_end_[x];
           ++i) {
        const Visit& v = visits_[i];
        const OpId op = v.op;
        const DeviceId off = cpu ? v.off_cpu : v.off_gpu;
        const DeviceId d = off >= 0 ? off : device;
        double ready = 0;
        for (int32_t k = v.inputs_begin; k < v.inputs_end; ++k) {
          const Input& in = inputs_[k];
          if (in.unit > x) continue;  // Read from later: unknown.
          double arrival = finish_[in.op];
          if (device_[in.op] != d) {
            arrival += in.bytes < 0
                           ? cost.RouteLatency(device_[in.op], d)
                           : cost.TransferTime(in.bytes, device_[in.op], d);
          }
          ready = std::max(ready, arrival);
        }
        const double start = d == device ? std::max(ready, free) : ready;
        finish_[op] = start + cost.OpTime(op, d);
        device_[op] = d;
        if (d == device) free = finish_[op];
        time = std::max(time, finish_[op]);
        if (last_reader_[op] > x) stretch_open_.push_back(op);
      }
      Offer(j, a, x + 1, to_gpus, device, time, cpu ? free : from.cpu_free);
    }
  }

  void Offer(int j, int a, int x, int to_gpus, DeviceId device, double time,
             double cpu_free) {
    State& to = At(x, to_gpus);
    if (to.valid && to.time <= time) return;
    const State& from = At(j, a);  // Not `to`: x > j.
    // Written in place: the vector keeps its capacity from offer to offer.
    std::vector<Frontier>& open = to.open;
    open.clear();
    for (const Frontier& f : from.open) {
      if (last_reader_[f.op] >= x) open.push_back(f);
    }
    // The stretch's ops read from x on; those read before x never are
    // again (x only grows within an Extend), so they leave the list.
    size_t kept = 0;
    for (OpId op : stretch_open_) {
      if (last_reader_[op] < x) continue;
      stretch_open_[kept++] = op;
      open.push_back({op, finish_[op], device_[op]});
    }
    stretch_open_.resize(kept);
    to.valid = true;
    to.time = time;
    to.cpu_free = cpu_free;
    to.from = j;
    to.from_gpus = a;
    to.device = device;
  }

  // A CPU stretch runs at most this many units (a GPU's, as many as fit).
  static constexpr int kMaxCpuStretch = 512;

  const PlacementProblem& problem_;
  const Graph& g_;
  const SplitUnits& units_;
  const std::vector<DeviceId> gpus_, cpus_;
  std::vector<int64_t> memory_;       // Prefix sums over units.
  std::vector<int32_t> last_reader_;  // Per op: last unit reading it.
  std::vector<Visit> visits_;         // Per op, in unit order.
  std::vector<int32_t> visits_end_;   // Per unit: its ops' end in visits_.
  std::vector<Input> inputs_;
  std::vector<State> states_;
  std::vector<double> finish_;  // Scratch: per op, while extending.
  std::vector<DeviceId> device_;
  // Scratch: the ops of the stretch being extended that a unit at or after
  // the last offered one reads, in unit order.
  std::vector<OpId> stretch_open_;
};

}  // namespace

StatusOr<Placement> ScheduledContiguousSplit(const PlacementProblem& problem,
                                             int max_units, UnitOrder order) {
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
  const SplitUnits units = MakeSplitUnits(*problem.graph, max_units, order);
  if (problem.cluster->DevicesOfKind(DeviceKind::kGpu).empty()) {
    return AllOnCpu(problem);
  }
  const std::vector<DeviceId> device = ScheduledSplit(problem, units).Solve();
  if (device.empty()) {
    return InfeasibleError("no contiguous split fits the GPUs' memory");
  }
  return Expand(problem, units, device);
}

namespace {

class SplitDpPlacer : public Placer {
 public:
  explicit SplitDpPlacer(SplitOptions options)
      : Placer("tarnawski-dp"), options_(options) {}
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }
  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    return BestContiguousSplit(problem, options_);
  }

 private:
  SplitOptions options_;
};

class SplitGreedyPlacer : public Placer {
 public:
  explicit SplitGreedyPlacer(int max_units)
      : Placer("tarnawski-greedy"), max_units_(max_units) {}
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }
  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    return GreedyContiguousSplit(problem, max_units_);
  }

 private:
  int max_units_;
};

// split-dp: ScheduledContiguousSplit over both unit orders, the faster in
// the simulator.
class ScheduledSplitPlacer : public Placer {
 public:
  explicit ScheduledSplitPlacer(int max_units)
      : Placer("split-dp"), max_units_(max_units) {}
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }
  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    Simulator simulator(*problem.cost);
    SimOptions step_only;  // The step time is all it compares.
    step_only.compute_bounds = false;
    Placement best;
    double best_time = 0;
    bool best_feasible = false;
    Status why = Status::Ok();
    for (UnitOrder order :
         {UnitOrder::kEarliestFirst, UnitOrder::kDepthFirst}) {
      StatusOr<Placement> p =
          ScheduledContiguousSplit(problem, max_units_, order);
      if (!p.ok()) {
        why = p.status();
        continue;
      }
      DPLACE_ASSIGN_OR_RETURN(SimResult r, simulator.Simulate(*p, step_only));
      if (best.empty() || (r.feasible && !best_feasible) ||
          (r.feasible == best_feasible && r.step_time < best_time)) {
        best = *std::move(p);
        best_time = r.step_time;
        best_feasible = r.feasible;
      }
    }
    if (best.empty()) return why;
    return best;
  }

 private:
  int max_units_;
};

StatusOr<std::unique_ptr<Method>> MakeScheduledSplit(
    const MethodOptions& options) {
  int max_units = SplitOptions().max_units;
  OptionReader reader("split-dp", options);
  reader.Int("max_units", &max_units);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  if (max_units < 1) {
    return InvalidArgumentError(
        "method split-dp: option max_units must be >= 1");
  }
  return std::unique_ptr<Method>(new ScheduledSplitPlacer(max_units));
}

StatusOr<std::unique_ptr<Method>> MakeSplitDp(const MethodOptions& options) {
  SplitOptions s;
  OptionReader reader("tarnawski-dp", options);
  reader.Enum("objective",
              std::vector<std::pair<std::string, SplitObjective>>{
                  {"latency", SplitObjective::kLatency},
                  {"throughput", SplitObjective::kThroughput}},
              &s.objective);
  reader.Int("max_units", &s.max_units);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  if (s.max_units < 1) {
    return InvalidArgumentError(
        "method tarnawski-dp: option max_units must be >= 1");
  }
  return std::unique_ptr<Method>(new SplitDpPlacer(s));
}

StatusOr<std::unique_ptr<Method>> MakeSplitGreedy(
    const MethodOptions& options) {
  int max_units = SplitOptions().max_units;
  OptionReader reader("tarnawski-greedy", options);
  reader.Int("max_units", &max_units);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  if (max_units < 1) {
    return InvalidArgumentError(
        "method tarnawski-greedy: option max_units must be >= 1");
  }
  return std::unique_ptr<Method>(new SplitGreedyPlacer(max_units));
}

}  // namespace

REGISTER_METHOD("tarnawski-dp", 33,
                "Tarnawski et al. (NeurIPS 2020): the best contiguous split "
                "of the colocation classes' topological order into one "
                "stretch per GPU and CPU stretches, by dynamic programming "
                "under memory; options objective=latency|throughput, "
                "max_units",
                MakeSplitDp);
REGISTER_METHOD("split-dp", 35,
                "dplace's contiguous-split DP: Tarnawski et al.'s dynamic "
                "program with each split timed as the simulator runs it (ops "
                "start when their inputs arrive), over two topological "
                "orders; option max_units",
                MakeScheduledSplit);
REGISTER_METHOD("tarnawski-greedy", 34,
                "Tarnawski et al.'s latency greedy: the colocation classes in "
                "topological order fill each GPU in turn while memory lasts, "
                "the rest on the CPU; option max_units",
                MakeSplitGreedy);

}  // namespace dplace
