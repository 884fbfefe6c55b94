#include "dplace/cost/cost_model.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

namespace dplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

const double* FindProfiled(
    const std::unordered_map<std::string,
                             std::unordered_map<DeviceKind, double>>& table,
    const std::string& key, DeviceKind kind) {
  auto it = table.find(key);
  if (it == table.end()) return nullptr;
  auto jt = it->second.find(kind);
  return jt == it->second.end() ? nullptr : &jt->second;
}

// Whether `a` and `b` give every op the same time (CostModel's classes).
bool SameTimes(const Device& a, const Device& b) {
  return a.kind == b.kind && a.peak_flops == b.peak_flops &&
         a.memory_bandwidth == b.memory_bandwidth &&
         a.compute_slots == b.compute_slots &&
         a.launch_overhead == b.launch_overhead;
}

}  // namespace

CostModel::CostModel(const Graph& graph, const Cluster& cluster,
                     const ProfileTable& profile,
                     const RooflineOptions& options)
    : graph_(&graph), cluster_(&cluster) {
  const int num_types = static_cast<int>(graph.op_types().size());
  const std::unordered_set<std::string> dense(options.dense_op_types.begin(),
                                              options.dense_op_types.end());
  std::vector<bool> type_is_dense(num_types);
  for (int t = 0; t < num_types; ++t) {
    type_is_dense[t] = dense.count(graph.op_types()[t]) > 0;
  }
  std::vector<DeviceId> representative;  // Per class: its first device.
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    int32_t c = 0;
    while (c < num_classes_ &&
           !SameTimes(cluster.device(representative[c]), cluster.device(d))) {
      ++c;
    }
    if (c == num_classes_) {
      representative.push_back(d);
      ++num_classes_;
    }
    class_of_.push_back(c);
  }

  op_times_.resize(static_cast<size_t>(graph.num_ops()) * num_classes_);
  fastest_.assign(graph.num_ops(), kInfinity);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const bool is_dense = type_is_dense[graph.op_type_id(op)];
    for (int32_t c = 0; c < num_classes_; ++c) {
      const Device& dev = cluster.device(representative[c]);
      double time = kInfinity;
      if (graph.allowed_devices(op).Contains(dev.kind)) {
        const double* measured = nullptr;
        if (!profile.empty()) {
          measured = FindProfiled(profile.by_name, graph.op_name(op), dev.kind);
          if (!measured) {
            measured =
                FindProfiled(profile.by_type, graph.op_type(op), dev.kind);
          }
        }
        if (measured) {
          time = *measured;
        } else {
          const double slots = dev.compute_slots;
          const double compute_eff =
              is_dense ? options.dense_compute_efficiency[dev.kind]
                       : options.other_compute_efficiency[dev.kind];
          const double flop_rate = dev.peak_flops * compute_eff / slots;
          const double byte_rate = dev.memory_bandwidth *
                                   options.memory_efficiency[dev.kind] / slots;
          time = std::max(graph.flops(op) / flop_rate,
                          graph.bytes_accessed(op) / byte_rate) +
                 dev.launch_overhead;
        }
      }
      op_times_[static_cast<size_t>(op) * num_classes_ + c] = time;
      fastest_[op] = std::min(fastest_[op], time);
    }
  }
}

double CostModel::LinkTime(int64_t bytes, LinkId link) const {
  const Link& l = cluster_->link(link);
  return l.latency + static_cast<double>(bytes) / l.bandwidth;
}

double CostModel::TransferTime(int64_t bytes, DeviceId from,
                               DeviceId to) const {
  double time = 0;
  for (LinkId l : cluster_->route(from, to)) {
    time += cluster_->link(l).hand_off + LinkTime(bytes, l);
  }
  return time;
}

double CostModel::RouteLatency(DeviceId from, DeviceId to) const {
  double time = 0;
  for (LinkId l : cluster_->route(from, to)) {
    time += cluster_->link(l).hand_off + cluster_->link(l).latency;
  }
  return time;
}

}  // namespace dplace
