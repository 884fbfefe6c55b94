#include "dplace/sim/device_classes.h"

#include <algorithm>
#include <limits>

namespace dplace {
namespace {

bool Alike(const CostModel& cost, DeviceId a, DeviceId b) {
  const Device& da = cost.cluster().device(a);
  const Device& db = cost.cluster().device(b);
  if (da.kind != db.kind || da.memory_bytes != db.memory_bytes ||
      da.compute_slots != db.compute_slots) {
    return false;
  }
  for (OpId op = 0; op < cost.graph().num_ops(); ++op) {
    if (cost.OpTime(op, a) != cost.OpTime(op, b)) return false;
  }
  return true;
}

}  // namespace

DeviceClasses ClassesOf(const CostModel& cost) {
  DeviceClasses classes;
  for (DeviceId d = 0; d < cost.cluster().num_devices(); ++d) {
    int found = -1;
    for (int c = 0; c < classes.num() && found < 0; ++c) {
      if (Alike(cost, classes.representative(c), d)) found = c;
    }
    if (found >= 0) {
      classes.members[found].push_back(d);
    } else {
      classes.members.push_back({d});
    }
  }
  return classes;
}

ClassTransfers::ClassTransfers(const CostModel& cost,
                               const DeviceClasses& classes)
    : cost_(cost),
      num_classes_(classes.num()),
      routes_(static_cast<size_t>(num_classes_) * num_classes_) {
  constexpr int64_t kProbe = int64_t{1} << 20;
  for (int a = 0; a < num_classes_; ++a) {
    for (int b = 0; b < num_classes_; ++b) {
      std::vector<Route> all;
      for (DeviceId from : classes.members[a]) {
        for (DeviceId to : classes.members[b]) {
          if (from == to) continue;
          const double latency = cost.RouteLatency(from, to);
          const double per_byte =
              (cost.TransferTime(kProbe, from, to) - latency) / kProbe;
          all.push_back({latency, per_byte, from, to});
        }
      }
      std::sort(all.begin(), all.end(), [](const Route& x, const Route& y) {
        return x.latency != y.latency ? x.latency < y.latency
                                      : x.per_byte < y.per_byte;
      });
      // A route no cheaper per byte than one of lower latency is never the
      // cheapest.
      std::vector<Route>& kept =
          routes_[static_cast<size_t>(a) * num_classes_ + b];
      for (const Route& r : all) {
        if (kept.empty() || r.per_byte < kept.back().per_byte)
          kept.push_back(r);
      }
    }
  }
}

double ClassTransfers::Seconds(int from, int to, bool control,
                               int64_t bytes) const {
  double best = std::numeric_limits<double>::infinity();
  for (const Route& r :
       routes_[static_cast<size_t>(from) * num_classes_ + to]) {
    // The cost model's own sums, so that no bound exceeds the simulator by
    // rounding.
    best = std::min(best, control ? cost_.RouteLatency(r.from, r.to)
                                  : cost_.TransferTime(bytes, r.from, r.to));
  }
  return best;
}

}  // namespace dplace
