// The routes of a cluster's device pairs as the simulator's event loop
// (simulator.cc) reads them: each pair's links, summed latency and seconds
// per byte. Internal to the simulator.
#ifndef DPLACE_SIM_ROUTE_TABLE_H_
#define DPLACE_SIM_ROUTE_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dplace/cluster/cluster.h"

namespace dplace::sim_detail {

// A device pair's route, as the event loop reads it.
struct PairRoute {
  double latency = 0;           // Summed over the hops, hand-offs included.
  double seconds_per_byte = 0;  // Summed over the hops.
  int32_t begin = 0;  // Its links are RouteTable::link(begin .. begin + hops).
  int32_t hops = 0;
};

// The routes of device pairs. For clusters of up to kDenseDevices devices,
// every pair's, computed up front into a table; beyond, each pair's when
// first asked for, into a hash map: a cluster of thousands of devices costs
// memory for the pairs its placements use, never n^2 of them.
class RouteTable {
 public:
  static constexpr int kDenseDevices = 64;

  explicit RouteTable(const Cluster& c)
      : c_(c), n_(c.num_devices()), dense_(n_ <= kDenseDevices) {
    if (!dense_) return;
    dense_routes_.reserve(static_cast<size_t>(n_) * n_);
    for (DeviceId a = 0; a < n_; ++a) {
      for (DeviceId b = 0; b < n_; ++b) dense_routes_.push_back(Compute(a, b));
    }
  }

  // REQUIRES: from != to, or the route is not read beyond its latency.
  // The reference lasts until the next call.
  const PairRoute& Get(DeviceId from, DeviceId to) {
    const size_t pair = static_cast<size_t>(from) * n_ + to;
    if (dense_) return dense_routes_[pair];
    return Sparse(pair, from, to);
  }
  LinkId link(int32_t i) const { return links_[i]; }
  // For clusters of up to kDenseDevices devices: every pair's route, at
  // [from * num_devices + to], and their links, which never move; else
  // null.
  const PairRoute* dense_routes() const {
    return dense_ ? dense_routes_.data() : nullptr;
  }
  const LinkId* dense_links() const { return dense_ ? links_.data() : nullptr; }

 private:
  PairRoute Compute(DeviceId from, DeviceId to) {
    PairRoute r;
    r.begin = static_cast<int32_t>(links_.size());
    for (LinkId l : c_.route(from, to)) {
      const Link& link = c_.link(l);
      r.latency += link.hand_off + link.latency;
      r.seconds_per_byte += 1.0 / link.bandwidth;
      links_.push_back(l);
      ++r.hops;
    }
    return r;
  }

  __attribute__((noinline)) const PairRoute& Sparse(size_t pair, DeviceId from,
                                                    DeviceId to) {
    auto [it, inserted] =
        sparse_index_.try_emplace(pair, static_cast<int32_t>(sparse_.size()));
    if (inserted) sparse_.push_back(Compute(from, to));
    return sparse_[it->second];
  }

  const Cluster& c_;
  const int n_;
  const bool dense_;
  std::vector<PairRoute> dense_routes_;               // [from * n + to].
  std::unordered_map<size_t, int32_t> sparse_index_;  // Into sparse_.
  std::vector<PairRoute> sparse_;
  std::vector<LinkId> links_;  // Of every route computed, route by route.
};

}  // namespace dplace::sim_detail

#endif  // DPLACE_SIM_ROUTE_TABLE_H_
