#include "dplace/placers/baechi/baechi_common.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>

#include "dplace/util/format.h"

namespace dplace {
namespace baechi {

void ReadBaechiSettings(OptionReader* reader, BaechiSettings* settings) {
  reader->Bool("colocate", &settings->colocate);
  reader->Bool("use_cpu", &settings->use_cpu);
  reader->Double("memory_fraction", &settings->memory_fraction);
}

Status ValidateBaechiSettings(const std::string& method,
                              const BaechiSettings& settings) {
  if (!(settings.memory_fraction > 0 && settings.memory_fraction <= 1)) {
    return InvalidArgumentError("method " + method +
                                ": memory_fraction must be in (0, 1]");
  }
  return Status::Ok();
}

namespace {

uint8_t KindBits(const Cluster& cluster, DeviceId d) {
  return static_cast<uint8_t>(1u << static_cast<int>(cluster.device(d).kind));
}

// Devices of the kinds in `kinds`; GPUs only unless `use_cpu` or none fits.
std::vector<DeviceId> UnitDevices(const Cluster& cluster, uint8_t kinds,
                                  bool use_cpu) {
  std::vector<DeviceId> all, gpus;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    if ((kinds & KindBits(cluster, d)) == 0) continue;
    all.push_back(d);
    if (cluster.device(d).kind == DeviceKind::kGpu) gpus.push_back(d);
  }
  return use_cpu || gpus.empty() ? all : gpus;
}

}  // namespace

std::vector<int64_t> MemoryBudgets(const Cluster& cluster,
                                   const BaechiSettings& settings) {
  std::vector<int64_t> budgets(cluster.num_devices());
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    budgets[d] = static_cast<int64_t>(
        static_cast<double>(cluster.device(d).memory_bytes) *
        settings.memory_fraction);
  }
  return budgets;
}

StatusOr<PlacementUnits> MakePlacementUnits(const PlacementProblem& problem,
                                            const BaechiSettings& settings,
                                            bool whole_step_estimate) {
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem));
  const Graph& g = *problem.graph;
  const Cluster& c = *problem.cluster;
  PlacementUnits u;
  u.rank.resize(g.num_ops());
  for (size_t i = 0; i < g.topological_order().size(); ++i) {
    u.rank[g.topological_order()[i]] = static_cast<int32_t>(i);
  }

  // Hint groups, then a group whose ops share no device kind is dissolved.
  HintGroups hints;
  if (settings.colocate) {
    hints = ColocationHintGroups(g);
  } else {
    hints.num_groups = g.num_ops();
    hints.group.resize(g.num_ops());
    for (OpId op = 0; op < g.num_ops(); ++op) hints.group[op] = op;
  }
  std::vector<uint8_t> kinds(hints.num_groups, 0xff);
  for (OpId op = 0; op < g.num_ops(); ++op) {
    kinds[hints.group[op]] &= g.allowed_devices(op).bits();
  }
  u.unit.resize(g.num_ops());
  std::vector<int32_t> unit_of_group(hints.num_groups, -1);
  std::vector<uint8_t> unit_kinds;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const int32_t grp = hints.group[op];
    uint8_t op_kinds = kinds[grp];
    bool usable = false;
    for (DeviceId d = 0; d < c.num_devices(); ++d) {
      usable = usable || (op_kinds & KindBits(c, d)) != 0;
    }
    if (usable && unit_of_group[grp] >= 0) {
      u.unit[op] = unit_of_group[grp];
      continue;
    }
    if (!usable) op_kinds = g.allowed_devices(op).bits();
    u.unit[op] = u.num_units++;
    unit_kinds.push_back(op_kinds);
    if (usable) unit_of_group[grp] = u.unit[op];
  }

  u.offsets.assign(u.num_units + 1, 0);
  for (OpId op = 0; op < g.num_ops(); ++op) ++u.offsets[u.unit[op] + 1];
  for (int i = 0; i < u.num_units; ++i) u.offsets[i + 1] += u.offsets[i];
  u.ops.resize(g.num_ops());
  std::vector<int32_t> fill(u.offsets.begin(), u.offsets.end() - 1);
  u.first_rank.assign(u.num_units, std::numeric_limits<int32_t>::max());
  u.persistent_bytes.assign(u.num_units, 0);
  u.estimate_bytes.assign(u.num_units, 0);
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const int32_t k = u.unit[op];
    u.ops[fill[k]++] = op;
    u.first_rank[k] = std::min(u.first_rank[k], u.rank[op]);
    u.persistent_bytes[k] += g.persistent_bytes(op);
    u.estimate_bytes[k] += OpMemoryEstimate(g, op);
  }
  u.devices.resize(u.num_units);
  for (int k = 0; k < u.num_units; ++k) {
    u.devices[k] = UnitDevices(c, unit_kinds[k], settings.use_cpu);
  }

  // Plain answers when the graph cannot fit whatever the placement.
  const std::vector<int64_t> budget = MemoryBudgets(c, settings);
  int64_t need = 0, have = 0;
  std::vector<bool> used_device(c.num_devices(), false);
  for (int k = 0; k < u.num_units; ++k) {
    const int64_t unit_need =
        whole_step_estimate ? u.estimate_bytes[k] : u.persistent_bytes[k];
    need += unit_need;
    int64_t largest = 0;
    for (DeviceId d : u.devices[k]) {
      used_device[d] = true;
      largest = std::max(largest, budget[d]);
    }
    if (unit_need > largest) {
      return InfeasibleError(
          std::string(u.offsets[k + 1] - u.offsets[k] > 1
                          ? "the colocation group of op "
                          : "op ") +
          g.op_name(u.ops[u.offsets[k]]) + " needs " + FormatBytes(unit_need) +
          " but the largest device it may use holds " + FormatBytes(largest));
    }
  }
  for (DeviceId d = 0; d < c.num_devices(); ++d) {
    if (used_device[d]) have += budget[d];
  }
  if (need > have) {
    return InfeasibleError(
        "graph " + g.name() + " needs " + FormatBytes(need) +
        (whole_step_estimate ? " (every op's memory estimate)"
                             : " of persistent memory (weights, optimizer "
                               "slots)") +
        " but the devices it may use hold " + FormatBytes(have) + " in all");
  }
  return u;
}

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// One entry of a device's queues: ordered by time, then topological rank.
struct Entry {
  double time;
  int32_t rank;
  OpId op;
  bool operator>(const Entry& o) const {
    return std::tie(time, rank, op) > std::tie(o.time, o.rank, o.op);
  }
};
using EntryHeap =
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>;

struct Release {
  double time;
  int64_t bytes;
  bool operator>(const Release& o) const { return time > o.time; }
};

struct DeviceState {
  std::vector<double> slot_free;  // When each compute slot is next free.
  // Ready ops this device may run, keyed by a lower bound on the time their
  // inputs can be here. Keys only rise (devices and links only get busier),
  // so a stale key is fixed when it reaches the top.
  EntryHeap pending;
  // Ready ops whose inputs can be here by the time the device is free,
  // keyed by rank alone (time 0).
  EntryHeap available;
  std::vector<OpId> blocked;  // Waiting for memory to be released here.
  std::priority_queue<Release, std::vector<Release>, std::greater<Release>>
      releases;
  int64_t budget = 0;
  int64_t used = 0;
  int64_t peak = 0;
  OpId last_op = -1;
};

struct Candidate {
  double time = kNever;
  int32_t rank = 0;
  OpId op = -1;
  DeviceId device = -1;
  bool Before(const Candidate& o) const {
    return std::tie(time, rank, device) < std::tie(o.time, o.rank, o.device);
  }
};

class ListScheduler {
 public:
  // `excluded[unit * num_devices + d]`: the unit may not go to d (what
  // RunListScheduler learned from a pass that ran out of memory there).
  ListScheduler(const PlacementProblem& problem, const PlacementUnits& units,
                const BaechiSettings& settings,
                const std::vector<OpId>& favourite_child,
                const std::vector<bool>& excluded)
      : g_(*problem.graph),
        c_(*problem.cluster),
        cost_(*problem.cost),
        u_(units),
        favourite_(favourite_child),
        num_devices_(c_.num_devices()) {
    const std::vector<int64_t> budgets = MemoryBudgets(c_, settings);
    devices_.resize(num_devices_);
    for (DeviceId d = 0; d < num_devices_; ++d) {
      devices_[d].slot_free.assign(std::max(1, c_.device(d).compute_slots),
                                   0.0);
      devices_[d].budget = budgets[d];
    }
    unit_device_.assign(u_.num_units, -1);
    may_use_.assign(static_cast<size_t>(u_.num_units) * num_devices_, false);
    for (int k = 0; k < u_.num_units; ++k) {
      for (DeviceId d : u_.devices[k]) {
        const size_t i = static_cast<size_t>(k) * num_devices_ + d;
        may_use_[i] = !excluded[i];
      }
    }
    device_.assign(g_.num_ops(), -1);
    end_.assign(g_.num_ops(), 0.0);
    missing_inputs_.resize(g_.num_ops());
    for (OpId op = 0; op < g_.num_ops(); ++op) {
      missing_inputs_[op] = static_cast<int32_t>(g_.in_edges(op).size());
    }
    arrival_.assign(static_cast<size_t>(g_.num_tensors()) * num_devices_, -1.0);
    readers_left_.assign(g_.num_tensors(), 0);
    last_read_.assign(g_.num_tensors(), 0.0);
    for (EdgeId e = 0; e < g_.num_edges(); ++e) {
      if (!g_.is_control(e)) ++readers_left_[g_.edge_tensor(e)];
    }
    link_free_.assign(c_.num_links(), 0.0);
    link_trial_.assign(c_.num_links(), -1.0);
  }

  StatusOr<ListSchedule> Run() {
    for (OpId op : g_.topological_order()) {
      if (missing_inputs_[op] == 0) MakeReady(op);
    }
    int scheduled = 0;
    while (scheduled < g_.num_ops()) {
      Candidate best;
      for (DeviceId d = 0; d < num_devices_; ++d) {
        Candidate cand = favourite_.empty() ? EtfCandidate(d) : SctCandidate(d);
        if (cand.op >= 0 && cand.Before(best)) best = cand;
      }
      if (best.op < 0) {
        // Everything left waits for memory: let time pass to the next
        // release, or give up when nothing is left to release.
        double next = kNever;
        for (const DeviceState& s : devices_) {
          if (!s.releases.empty()) next = std::min(next, s.releases.top().time);
        }
        if (next == kNever) return NoDeviceFits();
        now_ = std::max(now_, next);
        ReleaseUntil(now_);
        continue;
      }
      Commit(best.op, best.device, best.time);
      ++scheduled;
    }
    ListSchedule out;
    out.placement = device_;
    out.makespan = makespan_;
    return out;
  }

  double DeviceFree(DeviceId d) const {
    const std::vector<double>& s = devices_[d].slot_free;
    return *std::min_element(s.begin(), s.end());
  }
  // The earliest an op could start on `d` now.
  double Earliest(DeviceId d) const { return std::max(DeviceFree(d), now_); }

  // Permanently unusable on `d`: done, not a device for it, its unit sits
  // elsewhere, or its unit's persistent bytes can never fit here (peaks
  // only grow).
  bool Stale(OpId op, DeviceId d) const {
    if (device_[op] >= 0) return true;
    const int32_t k = u_.unit[op];
    if (!may_use_[static_cast<size_t>(k) * num_devices_ + d]) return true;
    if (unit_device_[k] >= 0) return unit_device_[k] != d;
    const DeviceState& s = devices_[d];
    return s.peak + u_.persistent_bytes[k] > s.budget;
  }

  // When every input of `op` can be on `d`, given the links' state: each
  // missing tensor crosses its route hop by hop behind what the links
  // already carry, and on a link its destination copies (Copier::
  // kDestination) also behind that device's work, whose free slot the
  // booked copies then hold. With `commit` the transfers are booked;
  // `*copy_bytes` gets the bytes of the new copies on `d`.
  double InputsReady(OpId op, DeviceId d, bool commit, int64_t* copy_bytes) {
    double ready = 0;
    int64_t copies = 0;
    trial_tensors_.clear();
    for (EdgeId e : g_.in_edges(op)) {
      const OpId src = g_.edge_src(e);
      const DeviceId from = device_[src];
      if (from == d) {
        ready = std::max(ready, end_[src]);
        continue;
      }
      if (g_.is_control(e)) {
        ready = std::max(ready, end_[src] + cost_.RouteLatency(from, d));
        continue;
      }
      const TensorId t = g_.edge_tensor(e);
      double& arrival = arrival_[static_cast<size_t>(t) * num_devices_ + d];
      if (arrival >= 0) {
        ready = std::max(ready, arrival);
        continue;
      }
      auto seen = std::find_if(
          trial_tensors_.begin(), trial_tensors_.end(),
          [t](const std::pair<TensorId, double>& p) { return p.first == t; });
      if (seen != trial_tensors_.end()) {
        ready = std::max(ready, seen->second);
        continue;
      }
      const int64_t bytes = g_.tensor_bytes(t);
      double at = end_[src];
      for (LinkId l : c_.route(from, d)) {
        double busy = link_trial_[l] >= 0 ? link_trial_[l] : link_free_[l];
        if (c_.link(l).copier == Copier::kDestination) {
          busy = std::max(busy, DeviceFree(c_.link(l).to));
        }
        at =
            std::max(at + c_.link(l).hand_off, busy) + cost_.LinkTime(bytes, l);
        if (link_trial_[l] < 0) trial_links_.push_back(l);
        link_trial_[l] = at;
      }
      trial_tensors_.push_back({t, at});
      copies += bytes;
      ready = std::max(ready, at);
    }
    for (LinkId l : trial_links_) {
      if (commit) {
        link_free_[l] = link_trial_[l];
        if (c_.link(l).copier == Copier::kDestination) {
          std::vector<double>& slots = devices_[c_.link(l).to].slot_free;
          double& slot = *std::min_element(slots.begin(), slots.end());
          slot = std::max(slot, link_trial_[l]);
        }
      }
      link_trial_[l] = -1;
    }
    trial_links_.clear();
    if (commit) {
      for (const auto& [t, at] : trial_tensors_) {
        arrival_[static_cast<size_t>(t) * num_devices_ + d] = at;
      }
    }
    if (copy_bytes != nullptr) *copy_bytes = copies;
    return ready;
  }

  int64_t OutputBytes(OpId op) const {
    int64_t bytes = 0;
    for (int i = 0; i < g_.num_outputs(op); ++i) {
      bytes += g_.tensor_bytes(g_.output(op, i));
    }
    return bytes;
  }

  // Whether `op` with its new input copies (and its unit's persistent bytes
  // when the unit is not placed yet) fits on `d` now.
  bool Fits(OpId op, DeviceId d, int64_t copy_bytes) const {
    const DeviceState& s = devices_[d];
    const int32_t k = u_.unit[op];
    const int64_t persistent = unit_device_[k] < 0 ? u_.persistent_bytes[k] : 0;
    const int64_t need =
        persistent + OutputBytes(op) + g_.temporary_bytes(op) + copy_bytes;
    return s.used + need <= s.budget && s.peak + persistent <= s.budget;
  }

  void MakeReady(OpId op) {
    double lower = 0;
    for (EdgeId e : g_.in_edges(op))
      lower = std::max(lower, end_[g_.edge_src(e)]);
    const Entry entry{lower, u_.rank[op], op};
    const int32_t k = u_.unit[op];
    if (unit_device_[k] >= 0) {
      devices_[unit_device_[k]].pending.push(entry);
      return;
    }
    for (DeviceId d : u_.devices[k]) {
      if (may_use_[static_cast<size_t>(k) * num_devices_ + d]) {
        devices_[d].pending.push(entry);
      }
    }
  }

  // The ready op m-ETF would start next on `d`, with its start time.
  Candidate EtfCandidate(DeviceId d) {
    DeviceState& s = devices_[d];
    const double free = Earliest(d);
    for (;;) {
      while (!s.pending.empty() && s.pending.top().time <= free) {
        Entry e = s.pending.top();
        s.pending.pop();
        if (Stale(e.op, d)) continue;
        e.time = InputsReady(e.op, d, false, nullptr);
        if (e.time <= free) {
          s.available.push({0, e.rank, e.op});
        } else {
          s.pending.push(e);
        }
      }
      EntryHeap& queue = s.available.empty() ? s.pending : s.available;
      if (queue.empty()) return {};
      Entry e = queue.top();
      if (Stale(e.op, d)) {
        queue.pop();
        continue;
      }
      int64_t copies = 0;
      const double ready = InputsReady(e.op, d, false, &copies);
      const double key = &queue == &s.available ? free : e.time;
      if (ready > key) {  // The inputs got later: requeue by the new time.
        queue.pop();
        s.pending.push({ready, e.rank, e.op});
        continue;
      }
      if (!Fits(e.op, d, copies)) {
        queue.pop();
        s.blocked.push_back(e.op);
        continue;
      }
      return {std::max(ready, free), e.rank, e.op, d};
    }
  }

  // When `op` could start on `d` now; kNever where it may not go.
  double StartOn(OpId op, DeviceId d) {
    if (Stale(op, d)) return kNever;
    return std::max(InputsReady(op, d, false, nullptr), Earliest(d));
  }

  // The devices `op` may still go to.
  const std::vector<DeviceId>& DevicesOf(OpId op) {
    const int32_t k = u_.unit[op];
    if (unit_device_[k] < 0) return u_.devices[k];
    pinned_.assign(1, unit_device_[k]);
    return pinned_;
  }

  // The time by which `op` could start on every device it may use.
  double UrgentTime(OpId op) {
    double latest = 0;
    for (DeviceId d : DevicesOf(op)) {
      const double t = StartOn(op, d);
      if (t != kNever) latest = std::max(latest, t);
    }
    return latest;
  }

  // m-SCT: the device keeps itself for its last op's favourite child when
  // the child is ready and starts here no later than anywhere else, unless
  // the op m-ETF would pick becomes urgent first.
  Candidate SctCandidate(DeviceId d) {
    const Candidate etf = EtfCandidate(d);
    const OpId last = devices_[d].last_op;
    const OpId child = last >= 0 ? favourite_[last] : -1;
    if (child < 0 || device_[child] >= 0 || missing_inputs_[child] > 0 ||
        Stale(child, d)) {
      return etf;
    }
    int64_t copies = 0;
    const double here =
        std::max(InputsReady(child, d, false, &copies), Earliest(d));
    for (DeviceId other : DevicesOf(child)) {
      if (other != d && StartOn(child, other) < here) return etf;
    }
    if (!Fits(child, d, copies)) return etf;
    if (etf.op >= 0 && etf.op != child) {
      const double urgent = std::max(etf.time, UrgentTime(etf.op));
      if (urgent <= here) return {urgent, etf.rank, etf.op, d};
    }
    return {here, u_.rank[child], child, d};
  }

  // Releases every booked release due by `time`; devices that freed memory
  // look at their blocked ops again.
  void ReleaseUntil(double time) {
    for (DeviceId d = 0; d < num_devices_; ++d) {
      DeviceState& s = devices_[d];
      bool freed = false;
      while (!s.releases.empty() && s.releases.top().time <= time) {
        s.used -= s.releases.top().bytes;
        s.releases.pop();
        freed = true;
      }
      if (!freed || s.blocked.empty()) continue;
      for (OpId op : s.blocked) s.pending.push({0, u_.rank[op], op});
      s.blocked.clear();
    }
  }

  void Allocate(DeviceId d, int64_t bytes) {
    DeviceState& s = devices_[d];
    s.used += bytes;
    s.peak = std::max(s.peak, s.used);
  }

  // A tensor's producer copy and received copies go when its last reader
  // finished.
  void ReleaseTensor(TensorId t, double time) {
    const int64_t bytes = g_.tensor_bytes(t);
    devices_[device_[g_.producer(t)]].releases.push({time, bytes});
    for (DeviceId d = 0; d < num_devices_; ++d) {
      if (arrival_[static_cast<size_t>(t) * num_devices_ + d] >= 0) {
        devices_[d].releases.push({time, bytes});
      }
    }
  }

  void Commit(OpId op, DeviceId d, double not_before) {
    DeviceState& s = devices_[d];
    const int32_t k = u_.unit[op];
    if (unit_device_[k] < 0) {
      unit_device_[k] = d;
      Allocate(d, u_.persistent_bytes[k]);
    }
    int64_t copies = 0;
    const double ready = InputsReady(op, d, true, &copies);
    auto slot = std::min_element(s.slot_free.begin(), s.slot_free.end());
    const double start = std::max({ready, *slot, now_, not_before});
    const double end = start + cost_.OpTime(op, d);
    *slot = end;
    now_ = start;
    device_[op] = d;
    end_[op] = end;
    makespan_ = std::max(makespan_, end);
    s.last_op = op;

    Allocate(d, OutputBytes(op) + g_.temporary_bytes(op) + copies);
    s.releases.push({end, g_.temporary_bytes(op)});
    for (int i = 0; i < g_.num_outputs(op); ++i) {
      const TensorId t = g_.output(op, i);
      last_read_[t] = end;
      if (readers_left_[t] == 0) ReleaseTensor(t, end);
    }
    for (EdgeId e : g_.in_edges(op)) {
      if (g_.is_control(e)) continue;
      const TensorId t = g_.edge_tensor(e);
      last_read_[t] = std::max(last_read_[t], end);
      if (--readers_left_[t] == 0) ReleaseTensor(t, last_read_[t]);
    }
    for (EdgeId e : g_.out_edges(op)) {
      const OpId dst = g_.edge_dst(e);
      if (--missing_inputs_[dst] == 0) MakeReady(dst);
    }
    ReleaseUntil(now_);
  }

  // After Run ran out of memory: the device where the first op left
  // waiting must run (its unit is there), or -1 when it could go elsewhere.
  DeviceId stuck_device() const { return stuck_device_; }

  // The units placed on `d` with the bytes of their outputs that were
  // still waiting for readers when Run stopped, largest first.
  std::vector<std::pair<int64_t, int32_t>> HeldByUnit(DeviceId d) const {
    std::vector<int64_t> held(u_.num_units, 0);
    for (OpId op = 0; op < g_.num_ops(); ++op) {
      if (device_[op] != d) continue;
      for (int i = 0; i < g_.num_outputs(op); ++i) {
        const TensorId t = g_.output(op, i);
        if (readers_left_[t] > 0) held[u_.unit[op]] += g_.tensor_bytes(t);
      }
    }
    std::vector<std::pair<int64_t, int32_t>> out;
    for (int32_t k = 0; k < u_.num_units; ++k) {
      if (held[k] > 0) out.push_back({held[k], k});
    }
    std::sort(out.begin(), out.end(), std::greater<>());
    return out;
  }

 private:
  Status NoDeviceFits() {
    for (OpId op : g_.topological_order()) {
      if (device_[op] >= 0 || missing_inputs_[op] > 0) continue;
      const int32_t k = u_.unit[op];
      stuck_device_ = unit_device_[k];
      std::string where;
      for (DeviceId d : u_.devices[k]) {
        const DeviceState& s = devices_[d];
        if (unit_device_[k] >= 0 && unit_device_[k] != d) continue;
        where += (where.empty() ? "" : ", ") + c_.device(d).name + " " +
                 FormatBytes(s.budget - s.used) + " free";
      }
      return InfeasibleError(
          "out of memory: op " + g_.op_name(op) + " needs " +
          FormatBytes(OutputBytes(op) + g_.temporary_bytes(op)) +
          (unit_device_[k] < 0
               ? " plus " + FormatBytes(u_.persistent_bytes[k]) +
                     " for its colocation group"
               : "") +
          " and fits on none of its devices (" + where + ")");
    }
    return InfeasibleError("out of memory");
  }

  const Graph& g_;
  const Cluster& c_;
  const CostModel& cost_;
  const PlacementUnits& u_;
  const std::vector<OpId>& favourite_;
  const int num_devices_;
  DeviceId stuck_device_ = -1;

  std::vector<DeviceState> devices_;
  std::vector<DeviceId> unit_device_;
  std::vector<bool> may_use_;  // [unit * num_devices + d].
  Placement device_;
  std::vector<double> end_;
  std::vector<int32_t> missing_inputs_;
  std::vector<double> arrival_;  // [tensor * num_devices + d]; -1: no copy.
  std::vector<int32_t> readers_left_;
  std::vector<double> last_read_;
  std::vector<double> link_free_;
  double now_ = 0;  // Start of the latest scheduled op; never decreases.
  double makespan_ = 0;

  // Scratch of InputsReady: links and tensors of one trial.
  std::vector<double> link_trial_;  // -1: untouched.
  std::vector<LinkId> trial_links_;
  std::vector<std::pair<TensorId, double>> trial_tensors_;
  std::vector<DeviceId> pinned_;
};

}  // namespace

StatusOr<ListSchedule> RunListScheduler(
    const PlacementProblem& problem, const PlacementUnits& units,
    const BaechiSettings& settings, const std::vector<OpId>& favourite_child) {
  // The greedy pass can fill a device with outputs that wait long for
  // their readers (NMT's 50 partial softmax weight gradients of 164 MB
  // each wait for the AddN of all of them), until an op that must run
  // there (its colocation group is there) fits nowhere. Then it retries
  // without that device for the groups that held the most there, an
  // eighth of its memory at a time, while each keeps another device.
  constexpr int kMaxPasses = 16;
  const int num_devices = problem.cluster->num_devices();
  const std::vector<int64_t> budgets =
      MemoryBudgets(*problem.cluster, settings);
  std::vector<bool> excluded(static_cast<size_t>(units.num_units) * num_devices,
                             false);
  std::vector<int> options(units.num_units);
  for (int32_t k = 0; k < units.num_units; ++k) {
    options[k] = static_cast<int>(units.devices[k].size());
  }
  Status greedy_failure;
  int moved = 0;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    ListScheduler scheduler(problem, units, settings, favourite_child,
                            excluded);
    StatusOr<ListSchedule> schedule = scheduler.Run();
    if (schedule.ok() || schedule.status().code() != StatusCode::kInfeasible) {
      return schedule;
    }
    if (greedy_failure.ok()) greedy_failure = schedule.status();
    const DeviceId d = scheduler.stuck_device();
    if (d < 0) break;
    int64_t freed = 0;
    for (const auto& [bytes, k] : scheduler.HeldByUnit(d)) {
      if (freed >= budgets[d] / 8) break;
      if (options[k] < 2) continue;
      excluded[static_cast<size_t>(k) * num_devices + d] = true;
      --options[k];
      freed += bytes;
      ++moved;
    }
    if (freed == 0) break;
  }
  if (moved == 0) return greedy_failure;
  return Status(greedy_failure.code(),
                greedy_failure.message() + " (also after moving " +
                    std::to_string(moved) +
                    " colocation groups off the devices they filled)");
}

}  // namespace baechi
}  // namespace dplace
