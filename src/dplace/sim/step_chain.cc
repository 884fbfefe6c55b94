#include "dplace/sim/step_chain.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>

namespace dplace {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

std::vector<ChainLink> LastChain(const CostModel& cost,
                                 const Placement& placement,
                                 const SimResult& sim) {
  const Graph& graph = cost.graph();
  const Cluster& cluster = cost.cluster();
  const int n = graph.num_ops();
  // Each op's first start and its end.
  std::vector<double> start(n, kNever), end(n, kNever);
  // When each tensor first reached each device it reached: the end of its
  // first hop into it, where it is cached for every consumer there. (A
  // map: a table of every tensor on every device of a 1,024-GPU cluster
  // would not fit.)
  const auto key = [&cluster](TensorId tensor, DeviceId d) {
    return static_cast<int64_t>(tensor) * cluster.num_devices() + d;
  };
  std::unordered_map<int64_t, double> arrival;
  for (const TimelineEvent& e : sim.timeline) {
    if (e.kind == TimelineEvent::Kind::kCompute) {
      start[e.id] = std::min(start[e.id], e.start);
      end[e.id] = e.end;
    } else {
      const auto [it, added] =
          arrival.emplace(key(e.id, cluster.link(e.lane).to), e.end);
      if (!added) it->second = std::min(it->second, e.end);
    }
  }
  std::vector<ChainLink> chain;
  OpId op = -1;
  for (OpId v = 0; v < n; ++v) {
    if (end[v] < kNever && (op < 0 || end[v] > end[op])) op = v;
  }
  while (op >= 0) {
    ChainLink link;
    link.op = op;
    link.start = start[op];
    link.end = end[op];
    for (EdgeId e : graph.in_edges(op)) {
      const OpId src = graph.edge_src(e);
      if (end[src] == kNever) continue;
      double at = end[src];
      if (placement[src] != placement[op]) {
        if (graph.is_control(e)) {
          at += cost.RouteLatency(placement[src], placement[op]);
        } else {
          const auto it =
              arrival.find(key(graph.edge_tensor(e), placement[op]));
          at = it == arrival.end() ? kNever : it->second;
        }
      }
      at = std::min(at, link.start);
      if (link.waited_for < 0 || at > link.ready) {
        link.waited_for = src;
        link.ready = at;
      }
    }
    chain.push_back(link);
    op = link.waited_for;
  }
  return chain;
}

std::vector<Delayer> ChainDelayers(const CostModel& cost,
                                   const Placement& placement,
                                   const SimResult& sim) {
  const std::vector<ChainLink> chain = LastChain(cost, placement, sim);
  // Each device's compute intervals by start, and the longest of them.
  const int num_devices = cost.cluster().num_devices();
  std::vector<std::vector<TimelineEvent>> runs(num_devices);
  std::vector<double> longest(num_devices, 0);
  for (const TimelineEvent& e : sim.timeline) {
    if (e.kind != TimelineEvent::Kind::kCompute) continue;
    runs[e.device].push_back(e);
    longest[e.device] = std::max(longest[e.device], e.end - e.start);
  }
  for (std::vector<TimelineEvent>& r : runs) {
    std::sort(r.begin(), r.end(),
              [](const TimelineEvent& a, const TimelineEvent& b) {
                return a.start < b.start;
              });
  }
  std::vector<int32_t> index(cost.graph().num_ops(), -1);
  std::vector<Delayer> delayers;
  const auto add = [&](OpId op, double seconds) {
    if (!(seconds > 0)) return;
    if (index[op] < 0) {
      index[op] = static_cast<int32_t>(delayers.size());
      delayers.push_back({op, 0});
    }
    delayers[index[op]].seconds += seconds;
  };
  for (size_t i = 0; i < chain.size(); ++i) {
    const ChainLink& link = chain[i];
    if (link.waited_for >= 0) {
      // The next link is the input it waited for.
      const double transfer = link.ready - chain[i + 1].end;
      add(link.op, transfer);
      add(link.waited_for, transfer);
    }
    const double queued = link.start - link.ready;
    if (!(queued > 0)) continue;
    add(link.op, queued);
    // The ops on its device that overlap [ready, start): those that
    // started before `start`, back to the longest run before `ready`.
    const DeviceId d = placement[link.op];
    const std::vector<TimelineEvent>& r = runs[d];
    auto it = std::lower_bound(
        r.begin(), r.end(), link.start,
        [](const TimelineEvent& e, double at) { return e.start < at; });
    while (it != r.begin()) {
      --it;
      if (it->start < link.ready - longest[d]) break;
      if (it->id != link.op) {
        add(it->id,
            std::min(it->end, link.start) - std::max(it->start, link.ready));
      }
    }
  }
  return delayers;
}

}  // namespace dplace
