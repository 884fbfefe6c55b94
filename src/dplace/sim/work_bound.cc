#include "dplace/sim/work_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dplace/sim/device_classes.h"

namespace dplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The dual bound for class shares theta (theta_c = w_c x slots of class c,
// summing to 1): the sum over ops of min over c of theta_c x t(v, c) / slots
// of c. `scaled` holds t(v, c) / slots of c, op-major.
double Dual(const std::vector<double>& scaled, const std::vector<double>& theta,
            int num_classes) {
  double sum = 0;
  for (size_t i = 0; i < scaled.size(); i += num_classes) {
    double best = kInfinity;
    for (int c = 0; c < num_classes; ++c) {
      const double t = scaled[i + c];
      if (t == kInfinity) continue;
      best = std::min(best, theta[c] * t);
    }
    if (best < kInfinity) sum += best;
  }
  return sum;
}

// The work of the ops that can neither start before a nor end later than
// b before the step's end must fit between a and step - b: step >= a + b +
// their work (the dual above, over those ops). a and b run over a grid of
// the critical path; an op counts for a threshold below its earliest start
// (its head: the longest path to it at fastest times) and its tail (the
// longest path after it). `later`, when given: per op, a time it starts no
// earlier than, which raises its head where larger.
double WindowedBound(const CostModel& cost, const std::vector<double>& scaled,
                     const std::vector<double>& theta, int num_classes,
                     const std::vector<double>* later) {
  const Graph& g = cost.graph();
  const int n = g.num_ops();
  std::vector<double> head(n, 0), tail(n, 0);
  double path = 0;
  for (OpId v : g.topological_order()) {
    for (EdgeId e : g.in_edges(v)) {
      const OpId u = g.edge_src(e);
      head[v] = std::max(head[v], head[u] + cost.FastestOpTime(u));
    }
    if (later != nullptr) head[v] = std::max(head[v], (*later)[v]);
    path = std::max(path, head[v] + cost.FastestOpTime(v));
  }
  const std::vector<OpId>& order = g.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (EdgeId e : g.out_edges(*it)) {
      const OpId w = g.edge_dst(e);
      tail[*it] = std::max(tail[*it], tail[w] + cost.FastestOpTime(w));
    }
  }
  if (!(path > 0)) return 0;
  constexpr int kGrid = 64;
  const double step = path / kGrid;
  // work[i][j]: the dual's work of ops with head >= i step, tail >= j step.
  std::vector<double> work((kGrid + 2) * (kGrid + 2), 0);
  std::vector<int64_t> ops((kGrid + 2) * (kGrid + 2), 0);  // How many.
  auto at = [&](int i, int j) -> double& { return work[i * (kGrid + 2) + j]; };
  auto count = [&](int i, int j) -> int64_t& {
    return ops[i * (kGrid + 2) + j];
  };
  for (OpId v = 0; v < n; ++v) {
    double w = kInfinity;
    for (int c = 0; c < num_classes; ++c) {
      const double t = scaled[static_cast<size_t>(v) * num_classes + c];
      if (t < kInfinity) w = std::min(w, theta[c] * t);
    }
    if (w == kInfinity) continue;
    const int i = std::min(kGrid, static_cast<int>(head[v] / step));
    const int j = std::min(kGrid, static_cast<int>(tail[v] / step));
    at(i, j) += w;
    ++count(i, j);
  }
  double best = 0;
  for (int i = kGrid; i >= 0; --i) {
    for (int j = kGrid; j >= 0; --j) {
      at(i, j) += at(i + 1, j) + at(i, j + 1) - at(i + 1, j + 1);
      count(i, j) += count(i + 1, j) + count(i, j + 1) - count(i + 1, j + 1);
      // Only a window some op must run in says anything.
      if (count(i, j) > 0) best = std::max(best, (i + j) * step + at(i, j));
    }
  }
  return best;
}

double Bound(const CostModel& cost, const std::vector<double>* later) {
  const DeviceClasses classes = ClassesOf(cost);
  const int num_classes = classes.num();
  const int n = cost.graph().num_ops();
  std::vector<double> slots(num_classes, 0);
  double total_slots = 0;
  for (int c = 0; c < num_classes; ++c) {
    for (DeviceId d : classes.members[c]) {
      slots[c] += cost.cluster().device(d).compute_slots;
    }
    total_slots += slots[c];
  }
  std::vector<double> scaled(static_cast<size_t>(n) * num_classes);
  for (OpId op = 0; op < n; ++op) {
    for (int c = 0; c < num_classes; ++c) {
      scaled[static_cast<size_t>(op) * num_classes + c] =
          cost.OpTime(op, classes.representative(c)) / slots[c];
    }
  }
  // Equal weights per slot (the total work), then coordinate ascent over
  // pairs of classes: the dual is concave along each pair's exchange, so a
  // ternary search finds its best split. Every theta gives a bound.
  std::vector<double> theta(num_classes);
  for (int c = 0; c < num_classes; ++c) theta[c] = slots[c] / total_slots;
  double best = Dual(scaled, theta, num_classes);
  const int rounds = num_classes > 2 ? 3 : 1;
  for (int round = 0; round < rounds; ++round) {
    for (int a = 0; a < num_classes; ++a) {
      for (int b = a + 1; b < num_classes; ++b) {
        const double pair = theta[a] + theta[b];
        if (pair <= 0) continue;
        auto value = [&](double share) {
          std::vector<double> t = theta;
          t[a] = share * pair;
          t[b] = (1 - share) * pair;
          return Dual(scaled, t, num_classes);
        };
        double lo = 0, hi = 1;
        for (int i = 0; i < 40; ++i) {
          const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
          if (value(m1) < value(m2)) {
            lo = m1;
          } else {
            hi = m2;
          }
        }
        const double share = (lo + hi) / 2;
        const double found = value(share);
        if (found > best) {
          best = found;
          theta[a] = share * pair;
          theta[b] = (1 - share) * pair;
        }
      }
    }
  }
  return std::max(best, WindowedBound(cost, scaled, theta, num_classes, later));
}

}  // namespace

double WorkBound(const CostModel& cost) { return Bound(cost, nullptr); }

double WorkBound(const CostModel& cost, const std::vector<double>& heads) {
  return Bound(cost, &heads);
}

double SerialStepBound(const CostModel& cost) {
  const Graph& g = cost.graph();
  const int nd = cost.cluster().num_devices();
  double total = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    double slowest = 0;
    for (DeviceId d = 0; d < nd; ++d) {
      const double t = cost.OpTime(op, d);
      const double slowdown = cost.cluster().device(d).shared_host_slowdown;
      if (t < kInfinity) slowest = std::max(slowest, t * (1 + slowdown));
    }
    total += slowest;
  }
  // Per device pair, the route's latency and seconds per byte, slowest.
  double latency = 0, per_byte = 0;
  for (DeviceId a = 0; a < nd; ++a) {
    for (DeviceId b = 0; b < nd; ++b) {
      if (a == b) continue;
      const double l = cost.RouteLatency(a, b);
      latency = std::max(latency, l);
      per_byte = std::max(per_byte, cost.TransferTime(1 << 20, a, b) - l);
    }
  }
  per_byte /= 1 << 20;
  for (EdgeId e = 0; e < g.num_edges(); ++e) {
    total += latency;
    if (!g.is_control(e)) total += per_byte * g.tensor_bytes(g.edge_tensor(e));
  }
  return total;
}

}  // namespace dplace
