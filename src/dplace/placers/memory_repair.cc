#include "dplace/placers/memory_repair.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "dplace/placers/partition_graph.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

// No placement fits when weights and optimizer slots alone exceed the
// cluster's memory; saying so at once spares max_simulations runs.
Status CheckPersistentMemory(const Graph& graph, const Cluster& cluster) {
  int64_t capacity = 0;
  for (const Device& d : cluster.devices()) capacity += d.memory_bytes;
  const int64_t persistent = graph.total_persistent_bytes();
  if (persistent <= capacity) return Status::Ok();
  return InfeasibleError(
      "graph " + graph.name() + " does not fit cluster " + cluster.name() +
      ": its weights and optimizer slots alone take " +
      FormatBytes(persistent) + ", all devices together hold " +
      FormatBytes(capacity));
}

// A tensor that crosses the boundary of a unit with ops on the overloaded
// device: produced by one unit, read by another; once per (tensor,
// consumer unit, consumer device), as it is sent.
struct Arc {
  TensorId tensor;
  int32_t producer, consumer;  // Units.
  DeviceId producer_device, consumer_device;
  int64_t bytes;
};

// The part of one unit that sits on the overloaded device.
struct Candidate {
  int32_t unit = 0;
  int64_t memory = 0;  // OpMemoryEstimate summed over its ops there.
  // Bytes of its outputs still read by other units there: they stay, as
  // received copies, when it moves.
  int64_t kept = 0;
  // Bytes it exchanges with other units, by the device of the other end.
  std::vector<int64_t> bytes_to;
  std::vector<int32_t> input_arcs;  // The arcs it reads.
  DeviceId device = -1;             // Where it is now.
  // Seconds its ops there would run on each device.
  std::vector<double> seconds_on;
  std::vector<int32_t> local_arcs;  // Arcs to candidates on the same device.
  bool moved = false;
  int version = 0;  // Bumped when its priority changes.
};

// Lower is better: moves that remove traffic first (by traffic removed),
// then added traffic per byte freed.
struct Priority {
  int tier;
  double value;
  int32_t candidate;
  int version;
  bool operator>(const Priority& o) const {
    if (tier != o.tier) return tier > o.tier;
    if (value != o.value) return value > o.value;
    return candidate > o.candidate;
  }
};

class MemoryRepairer {
 public:
  MemoryRepairer(const PlacementProblem& problem,
                 const MemoryRepairSettings& settings, Placement placement)
      : graph_(*problem.graph),
        cluster_(*problem.cluster),
        cost_(*problem.cost),
        settings_(settings),
        placement_(std::move(placement)),
        simulator_(*problem.cost),
        shrink_(cluster_.num_devices(), 1.0),
        moved_off_(cluster_.num_devices(), 0) {
    const int num_devices = cluster_.num_devices();
    seconds_per_byte_.assign(num_devices * num_devices, 0.0);
    for (DeviceId from = 0; from < num_devices; ++from) {
      for (DeviceId to = 0; to < num_devices; ++to) {
        for (LinkId l : cluster_.route(from, to)) {
          seconds_per_byte_[from * num_devices + to] +=
              1 / cluster_.link(l).bandwidth;
        }
      }
    }
    int num_units = 0;
    unit_ = PlacementUnits(graph_, /*coarsen=*/true, &num_units);
    estimate_.resize(graph_.num_ops());
    for (OpId op = 0; op < graph_.num_ops(); ++op) {
      estimate_[op] = OpMemoryEstimate(graph_, op);
    }
    unit_ops_begin_.assign(num_units + 1, 0);
    for (OpId op = 0; op < graph_.num_ops(); ++op) {
      ++unit_ops_begin_[unit_[op] + 1];
    }
    for (int u = 0; u < num_units; ++u) {
      unit_ops_begin_[u + 1] += unit_ops_begin_[u];
    }
    unit_ops_.resize(graph_.num_ops());
    std::vector<int32_t> fill(unit_ops_begin_.begin(),
                              unit_ops_begin_.end() - 1);
    for (OpId op = 0; op < graph_.num_ops(); ++op) {
      unit_ops_[fill[unit_[op]]++] = op;
    }
  }

  StatusOr<Placement> Run() {
    SimOptions options;
    options.compute_bounds = false;
    std::vector<int64_t> first_peak;
    int moves = 0;
    for (int simulations = 1;; ++simulations) {
      DPLACE_ASSIGN_OR_RETURN(SimResult result,
                              simulator_.Simulate(placement_, options));
      if (result.feasible) return std::move(placement_);
      if (first_peak.empty()) first_peak = result.device_peak_bytes;
      LearnShrink(first_peak, result.device_peak_bytes);
      const int planned = simulations < settings_.max_simulations
                              ? PlanMoves(result.device_peak_bytes)
                              : 0;
      if (planned == 0) {
        return InfeasibleError("no memory-feasible placement found: " +
                               DescribeInfeasibility(cluster_, result) +
                               " after moving " + std::to_string(moves) +
                               " colocation groups in " +
                               std::to_string(simulations) + " simulations");
      }
      moves += planned;
    }
  }

 private:
  int64_t Capacity(DeviceId d) const { return cluster_.device(d).memory_bytes; }

  // How much a device's peak fell per estimated byte moved off it, over
  // all rounds. The estimate counts outputs as if they lived the whole
  // step and misses what the peak's moment holds, so it overstates what a
  // move frees.
  void LearnShrink(const std::vector<int64_t>& first_peak,
                   const std::vector<int64_t>& peak) {
    for (DeviceId d = 0; d < cluster_.num_devices(); ++d) {
      if (moved_off_[d] == 0) continue;
      const double ratio =
          static_cast<double>(first_peak[d] - peak[d]) / moved_off_[d];
      shrink_[d] = std::clamp(ratio, 0.25, 1.0);
    }
  }

  // Plans the moves of one round; returns how many units moved.
  int PlanMoves(const std::vector<int64_t>& peak) {
    std::vector<double> room(cluster_.num_devices());
    for (DeviceId d = 0; d < cluster_.num_devices(); ++d) {
      room[d] = Capacity(d) * (1 - settings_.headroom) - peak[d];
    }
    int moves = 0;
    arrived_.clear();
    for (DeviceId d = 0; d < cluster_.num_devices(); ++d) {
      if (peak[d] > Capacity(d)) {
        from_ = d;
        moves += Unload(d, -room[d] / shrink_[d], &room);
      }
    }
    return moves;
  }

  // Moves units off `from` until the estimated bytes freed reach `need`,
  // cheapest first. A move makes its neighbours' moves cheaper, so moved
  // units grow into contiguous regions that keep their traffic local.
  int Unload(DeviceId from, double need, std::vector<double>* room) {
    std::vector<Candidate>& candidates = candidates_;
    std::unordered_map<int32_t, int32_t>& candidate_of_unit =
        candidate_of_unit_;
    std::vector<Arc>& arcs = arcs_;
    candidates.clear();
    candidate_of_unit.clear();
    arcs.clear();
    Collect(from, &candidates, &candidate_of_unit, &arcs);

    std::priority_queue<Priority, std::vector<Priority>, std::greater<>> queue;
    std::vector<int64_t> received(cluster_.num_devices(), 0);  // This round.
    auto push = [&](int32_t c) {
      const Candidate& cand = candidates[c];
      const DeviceId to = Destination(cand, from, *room, received);
      if (to < 0) return;
      const double added = AddedSeconds(cand, from, to);
      const int64_t freed = cand.memory - cand.kept;
      if (freed <= 0) return;  // Moving it would only add traffic.
      if (added <= 0) {
        queue.push({0, added, c, cand.version});
      } else {
        queue.push({1, added / freed, c, cand.version});
      }
    };
    for (int32_t c = 0; c < static_cast<int32_t>(candidates.size()); ++c) {
      push(c);
    }
    // Readers on `from` of each tensor there: a local output stays while
    // one is left, and so does a copy received from another device.
    std::unordered_map<TensorId, int32_t> readers_left;
    for (const Arc& a : arcs) {
      if (a.consumer_device == from) ++readers_left[a.tensor];
    }

    double freed = 0;
    int moves = 0;
    while (!queue.empty() && freed < need) {
      const Priority top = queue.top();
      queue.pop();
      Candidate& cand = candidates[top.candidate];
      if (cand.moved || top.version != cand.version) continue;
      const DeviceId to = Destination(cand, from, *room, received);
      if (to < 0) continue;
      for (int i = unit_ops_begin_[cand.unit];
           i < unit_ops_begin_[cand.unit + 1]; ++i) {
        if (placement_[unit_ops_[i]] == from) placement_[unit_ops_[i]] = to;
      }
      cand.moved = true;
      left_.insert({cand.unit, from});
      (*room)[to] -= Footprint(cand, to);
      for (int32_t i : cand.input_arcs) {
        if (ProducerDevice(arcs[i]) != to)
          arrived_.insert({arcs[i].tensor, to});
      }
      cand.device = to;
      received[to] += cand.memory;
      int64_t frees = std::max<int64_t>(0, cand.memory - cand.kept);
      for (int32_t i : cand.input_arcs) {
        if (arcs[i].producer_device != from &&
            --readers_left[arcs[i].tensor] == 0) {
          frees += arcs[i].bytes;  // The last reader of a received copy.
        }
      }
      freed += frees;
      moved_off_[from] += frees;
      ++moves;
      for (int32_t i : cand.local_arcs) {
        const Arc& a = arcs[i];
        const bool produced = a.producer == cand.unit;
        const int32_t other =
            candidate_of_unit.at(produced ? a.consumer : a.producer);
        Candidate& o = candidates[other];
        if (o.moved) continue;
        o.bytes_to[from] -= a.bytes;
        o.bytes_to[to] += a.bytes;
        if (!produced && --readers_left[a.tensor] == 0) o.kept -= a.bytes;
        ++o.version;
        push(other);
      }
    }
    return moves;
  }

  // The candidates on `from` and the arcs that touch them.
  void Collect(DeviceId from, std::vector<Candidate>* candidates,
               std::unordered_map<int32_t, int32_t>* candidate_of_unit,
               std::vector<Arc>* arcs) const {
    const int num_devices = cluster_.num_devices();
    for (OpId op = 0; op < graph_.num_ops(); ++op) {
      if (placement_[op] != from) continue;
      const int32_t u = unit_[op];
      auto [it, inserted] = candidate_of_unit->emplace(
          u, static_cast<int32_t>(candidates->size()));
      if (inserted) {
        candidates->emplace_back();
        candidates->back().unit = u;
        candidates->back().bytes_to.assign(num_devices, 0);
        candidates->back().device = from;
        candidates->back().seconds_on.assign(num_devices, 0.0);
      }
      Candidate& c = (*candidates)[it->second];
      c.memory += estimate_[op];
      for (DeviceId to = 0; to < num_devices; ++to) {
        c.seconds_on[to] += cost_.OpTime(op, to);
      }
      for (EdgeId e : graph_.out_edges(op)) {
        const OpId dst = graph_.edge_dst(e);
        if (graph_.is_control(e) ||
            (unit_[dst] == u && placement_[dst] == from)) {
          continue;
        }
        const TensorId t = graph_.edge_tensor(e);
        arcs->push_back(
            {t, u, unit_[dst], from, placement_[dst], graph_.tensor_bytes(t)});
      }
      for (EdgeId e : graph_.in_edges(op)) {
        const OpId src = graph_.edge_src(e);
        // A producer on `from` lists the arc among its out edges.
        if (graph_.is_control(e) || placement_[src] == from) continue;
        const TensorId t = graph_.edge_tensor(e);
        arcs->push_back(
            {t, unit_[src], u, placement_[src], from, graph_.tensor_bytes(t)});
      }
    }
    auto key = [](const Arc& a) {
      return std::make_tuple(a.tensor, a.consumer, a.consumer_device);
    };
    std::sort(arcs->begin(), arcs->end(),
              [&](const Arc& a, const Arc& b) { return key(a) < key(b); });
    arcs->erase(std::unique(arcs->begin(), arcs->end(),
                            [&](const Arc& a, const Arc& b) {
                              return key(a) == key(b);
                            }),
                arcs->end());

    std::unordered_map<TensorId, bool> counted;  // Kept once per tensor.
    for (int32_t i = 0; i < static_cast<int32_t>(arcs->size()); ++i) {
      const Arc& a = (*arcs)[i];
      if (a.producer_device == from && a.consumer_device == from) {
        Candidate& p = (*candidates)[candidate_of_unit->at(a.producer)];
        Candidate& c = (*candidates)[candidate_of_unit->at(a.consumer)];
        p.bytes_to[from] += a.bytes;
        c.bytes_to[from] += a.bytes;
        c.input_arcs.push_back(i);
        p.local_arcs.push_back(i);
        c.local_arcs.push_back(i);
        if (counted.emplace(a.tensor, true).second) p.kept += a.bytes;
      } else if (a.producer_device == from) {
        (*candidates)[candidate_of_unit->at(a.producer)]
            .bytes_to[a.consumer_device] += a.bytes;
      } else {
        Candidate& c = (*candidates)[candidate_of_unit->at(a.consumer)];
        c.bytes_to[a.producer_device] += a.bytes;
        c.input_arcs.push_back(i);
      }
    }
  }

  // The device the producer of `a` is on now.
  DeviceId ProducerDevice(const Arc& a) const {
    auto it = candidate_of_unit_.find(a.producer);
    return it == candidate_of_unit_.end() || a.producer_device != from_
               ? a.producer_device
               : candidates_[it->second].device;
  }

  // What `c` would hold on `to`, conservatively: its ops' estimates plus a
  // copy of every input it would receive there that has not arrived yet
  // this round (received copies live until their last reader, often a
  // gradient op, finishes).
  double Footprint(const Candidate& c, DeviceId to) const {
    int64_t bytes = c.memory;
    for (int32_t i : c.input_arcs) {
      const Arc& a = arcs_[i];
      if (ProducerDevice(a) != to && !arrived_.count({a.tensor, to})) {
        bytes += a.bytes;
      }
    }
    return static_cast<double>(bytes);
  }

  // What moving `c` from `from` to `to` adds to the step, roughly: the
  // bytes it would then send across devices (less those it stops sending)
  // at the route's speed, plus how much slower its ops run there.
  double AddedSeconds(const Candidate& c, DeviceId from, DeviceId to) const {
    const int64_t added_bytes = c.bytes_to[from] - c.bytes_to[to];
    return added_bytes * seconds_per_byte_[from * cluster_.num_devices() + to] +
           c.seconds_on[to] - c.seconds_on[from];
  }

  // The allowed device with room for `c` (not one it left before) where it
  // adds the least time; ties to the device that `received` the most this
  // round, so that groups moved together stay together, then to the most
  // room. -1 when none.
  DeviceId Destination(const Candidate& c, DeviceId from,
                       const std::vector<double>& room,
                       const std::vector<int64_t>& received) const {
    const DeviceKindSet allowed =
        graph_.allowed_devices(unit_ops_[unit_ops_begin_[c.unit]]);
    DeviceId best = -1;
    double best_added = 0;
    for (DeviceId to = 0; to < cluster_.num_devices(); ++to) {
      const DeviceKind kind = cluster_.device(to).kind;
      if (to == from || !allowed.Contains(kind) ||
          !settings_.destination_kinds.Contains(kind) ||
          room[to] < Footprint(c, to) || left_.count({c.unit, to})) {
        continue;
      }
      const double added = AddedSeconds(c, from, to);
      if (best < 0 || added < best_added ||
          (added == best_added &&
           std::make_pair(received[to], room[to]) >
               std::make_pair(received[best], room[best]))) {
        best = to;
        best_added = added;
      }
    }
    return best;
  }

  const Graph& graph_;
  const Cluster& cluster_;
  const CostModel& cost_;
  MemoryRepairSettings settings_;
  Placement placement_;
  Simulator simulator_;
  std::vector<int32_t> unit_;                       // Per op.
  std::vector<int64_t> estimate_;                   // Per op.
  std::vector<int32_t> unit_ops_begin_, unit_ops_;  // CSR: ops of each unit.
  std::vector<double> seconds_per_byte_;  // Per device pair: over the route.
  std::vector<double> shrink_;            // Per device: see LearnShrink().
  std::vector<int64_t> moved_off_;        // Per device: estimated bytes freed.
  std::set<std::pair<int32_t, DeviceId>> left_;  // (unit, device it left).
  // The round being planned: the device unloaded, its units and their arcs,
  // and the tensors sent to each device so far.
  DeviceId from_ = -1;
  std::vector<Candidate> candidates_;
  std::unordered_map<int32_t, int32_t> candidate_of_unit_;
  std::vector<Arc> arcs_;
  std::set<std::pair<TensorId, DeviceId>> arrived_;
};

}  // namespace

StatusOr<Placement> RepairMemory(const PlacementProblem& problem,
                                 Placement placement,
                                 const MemoryRepairSettings& settings) {
  DPLACE_RETURN_IF_ERROR(
      ValidatePlacement(*problem.graph, *problem.cluster, placement));
  DPLACE_RETURN_IF_ERROR(
      CheckPersistentMemory(*problem.graph, *problem.cluster));
  if (settings.max_simulations < 1) {
    return InvalidArgumentError("memory repair: max_simulations must be >= 1");
  }
  if (!(settings.headroom >= 0 && settings.headroom < 1)) {
    return InvalidArgumentError("memory repair: headroom must be in [0, 1)");
  }
  return MemoryRepairer(problem, settings, std::move(placement)).Run();
}

}  // namespace dplace
