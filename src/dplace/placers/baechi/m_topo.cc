// m-TOPO (Baechi): units in topological order fill the devices one after
// another, each device up to an even share of the graph's memory. Fast and
// memory-safe under its whole-step estimate (received copies included),
// blind to compute and communication.
#include <algorithm>

#include "dplace/placers/baechi/baechi_common.h"

namespace dplace {
namespace {

struct TopoSettings {
  // colocate, use_cpu, memory_fraction (see BaechiSettings).
  baechi::BaechiSettings common;
  // Cap each device at an even share of the graph's memory estimate (plus
  // the largest unit), so every device gets work; otherwise fill each
  // device to its budget before the next. Default: true.
  bool uniform = true;
};

// Memory each device holds for the whole step under m-TOPO's estimate: the
// units placed on it (OpMemoryEstimate) and the copies of tensors it
// receives from units on other devices.
class Charges {
 public:
  Charges(const Graph& graph, const baechi::PlacementUnits& units,
          int num_devices)
      : g_(graph),
        u_(units),
        num_devices_(num_devices),
        used_(num_devices, 0),
        unit_device_(units.num_units, -1),
        copied_(static_cast<size_t>(graph.num_tensors()) * num_devices, false),
        extra_(num_devices, 0) {}

  // Whether unit `k` fits on `d` with `d` filled at most to `limit` and
  // every other device to its budget; remembers the charges for Commit().
  bool Fit(int32_t k, DeviceId d, int64_t limit,
           const std::vector<int64_t>& budget) {
    std::fill(extra_.begin(), extra_.end(), 0);
    copies_.clear();
    extra_[d] = u_.estimate_bytes[k];
    for (int32_t i = u_.offsets[k]; i < u_.offsets[k + 1]; ++i) {
      const OpId op = u_.ops[i];
      for (EdgeId e : g_.in_edges(op)) {
        Copy(e, DeviceOf(g_.edge_src(e)), d);
      }
      for (EdgeId e : g_.out_edges(op)) {
        Copy(e, d, DeviceOf(g_.edge_dst(e)));
      }
    }
    for (DeviceId x = 0; x < num_devices_; ++x) {
      if (used_[x] + extra_[x] > (x == d ? limit : budget[x])) return false;
    }
    return true;
  }

  void Commit(int32_t k, DeviceId d) {
    unit_device_[k] = d;
    for (DeviceId x = 0; x < num_devices_; ++x) used_[x] += extra_[x];
    for (size_t i : copies_) copied_[i] = true;
  }

  const std::vector<DeviceId>& unit_device() const { return unit_device_; }

 private:
  DeviceId DeviceOf(OpId op) const { return unit_device_[u_.unit[op]]; }

  // Edge `e`'s tensor copied from `from` to `to`, when both are known,
  // differ and `to` has no copy yet.
  void Copy(EdgeId e, DeviceId from, DeviceId to) {
    if (g_.is_control(e) || from < 0 || to < 0 || from == to) return;
    const size_t i = static_cast<size_t>(g_.edge_tensor(e)) * num_devices_ + to;
    if (copied_[i] ||
        std::find(copies_.begin(), copies_.end(), i) != copies_.end()) {
      return;
    }
    copies_.push_back(i);
    extra_[to] += g_.tensor_bytes(g_.edge_tensor(e));
  }

  const Graph& g_;
  const baechi::PlacementUnits& u_;
  const int num_devices_;
  std::vector<int64_t> used_;
  std::vector<DeviceId> unit_device_;
  std::vector<bool> copied_;  // [tensor * num_devices + d].
  std::vector<int64_t> extra_;
  std::vector<size_t> copies_;
};

class TopoPlacer : public Placer {
 public:
  explicit TopoPlacer(TopoSettings settings)
      : Placer("m-topo"), settings_(settings) {}
  MethodTraits traits() const override { return ThreadSafePlacerTraits(); }

  StatusOr<Placement> PlaceOps(const PlacementProblem& problem) override {
    DPLACE_ASSIGN_OR_RETURN(
        const baechi::PlacementUnits u,
        baechi::MakePlacementUnits(problem, settings_.common,
                                   /*whole_step_estimate=*/true));
    const Cluster& c = *problem.cluster;
    const std::vector<int64_t> budget =
        baechi::MemoryBudgets(c, settings_.common);

    // The devices to fill in turn: those most units may use.
    std::vector<int> users(c.num_devices(), 0);
    for (const std::vector<DeviceId>& ds : u.devices) {
      for (DeviceId d : ds) ++users[d];
    }
    const int most = *std::max_element(users.begin(), users.end());
    std::vector<DeviceId> fill;
    for (DeviceId d = 0; d < c.num_devices(); ++d) {
      if (users[d] == most) fill.push_back(d);
    }
    std::vector<int64_t> cap = budget;
    if (settings_.uniform) {
      int64_t total = 0, largest = 0;
      for (int k = 0; k < u.num_units; ++k) {
        total += u.estimate_bytes[k];
        largest = std::max(largest, u.estimate_bytes[k]);
      }
      const int64_t share = total / static_cast<int64_t>(fill.size()) + largest;
      for (DeviceId d : fill) cap[d] = std::min(cap[d], share);
    }

    std::vector<int32_t> order(u.num_units);
    for (int k = 0; k < u.num_units; ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return u.first_rank[a] < u.first_rank[b];
    });
    Charges charges(*problem.graph, u, c.num_devices());
    size_t current = 0;
    for (int32_t k : order) {
      const std::vector<DeviceId>& allowed = u.devices[k];
      DeviceId chosen = -1;
      if (std::find(allowed.begin(), allowed.end(), fill[current]) !=
          allowed.end()) {
        while (current < fill.size() &&
               !charges.Fit(k, fill[current], cap[fill[current]], budget)) {
          ++current;
        }
        if (current < fill.size()) {
          chosen = fill[current];
        } else {
          current = fill.size() - 1;
        }
      }
      // Units off the filled devices (CPU-only ops), and what the shares
      // could not hold: the first allowed device with room.
      for (size_t i = 0; chosen < 0 && i < allowed.size(); ++i) {
        if (charges.Fit(k, allowed[i], budget[allowed[i]], budget)) {
          chosen = allowed[i];
        }
      }
      if (chosen < 0) {
        return InfeasibleError(
            "out of memory: op " + problem.graph->op_name(u.ops[u.offsets[k]]) +
            (u.offsets[k + 1] - u.offsets[k] > 1 ? " and its colocation group"
                                                 : "") +
            " fit on none of its devices after the ops before it in "
            "topological order (m-topo holds every output for the whole "
            "step; m-etf and m-sct free them; use_cpu=true lets it spill "
            "to the CPU)");
      }
      charges.Fit(k, chosen, budget[chosen], budget);  // Recomputes them.
      charges.Commit(k, chosen);
    }
    const std::vector<DeviceId>& unit_device = charges.unit_device();
    Placement placement(problem.graph->num_ops());
    for (OpId op = 0; op < problem.graph->num_ops(); ++op) {
      placement[op] = unit_device[u.unit[op]];
    }
    return placement;
  }

 private:
  TopoSettings settings_;
};

StatusOr<std::unique_ptr<Method>> MakeTopo(const MethodOptions& options) {
  TopoSettings settings;
  OptionReader reader("m-topo", options);
  baechi::ReadBaechiSettings(&reader, &settings.common);
  reader.Bool("uniform", &settings.uniform);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  DPLACE_RETURN_IF_ERROR(
      baechi::ValidateBaechiSettings("m-topo", settings.common));
  return std::unique_ptr<Method>(new TopoPlacer(settings));
}

REGISTER_METHOD("m-topo", 30,
                "Baechi's topological placement: ops in topological order "
                "fill the GPUs in turn, each to an even share of memory; "
                "options uniform, colocate, use_cpu, memory_fraction",
                MakeTopo);

}  // namespace
}  // namespace dplace
