#include "dplace/placers/partition_graph.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace dplace {

std::vector<int32_t> PlacementUnits(const Graph& graph, bool coarsen,
                                    int* num_units) {
  const HintGroups hints = coarsen ? ColocationHintGroups(graph) : HintGroups{};
  std::vector<int32_t> unit(graph.num_ops());
  std::unordered_map<int64_t, int32_t> ids;  // (base << 8 | kinds) -> unit.
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const int64_t base = coarsen ? hints.group[op] : op;
    const int64_t key = base << 8 | graph.allowed_devices(op).bits();
    unit[op] = ids.emplace(key, static_cast<int32_t>(ids.size())).first->second;
  }
  *num_units = static_cast<int>(ids.size());
  return unit;
}

PartitionGraph BuildPartitionGraph(const Graph& graph, const CostModel& cost,
                                   bool coarsen) {
  PartitionGraph pg;
  pg.unit_of_op = PlacementUnits(graph, coarsen, &pg.num_units);
  pg.allowed.resize(pg.num_units);
  pg.compute_seconds.assign(pg.num_units, 0.0);
  // Weights in one device's seconds, so that dividing by relative speeds
  // gives every device's load; a per-op minimum would mix devices.
  const std::vector<double> speed = RelativeDeviceSpeeds(cost);
  const DeviceId fastest = static_cast<DeviceId>(
      std::max_element(speed.begin(), speed.end()) - speed.begin());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const int32_t u = pg.unit_of_op[op];
    pg.allowed[u] = graph.allowed_devices(op);  // Equal over the unit.
    const double t = cost.OpTime(op, fastest);
    pg.compute_seconds[u] += std::isfinite(t) ? t : cost.FastestOpTime(op);
  }

  struct Arc {
    int32_t from, to;
    int64_t bytes;
  };
  std::vector<Arc> arcs;
  std::vector<std::pair<TensorId, int32_t>> sent;  // (tensor, consumer unit).
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const int32_t a = pg.unit_of_op[op];
    sent.clear();
    for (EdgeId e : graph.out_edges(op)) {
      const int32_t b = pg.unit_of_op[graph.edge_dst(e)];
      if (b != a) sent.push_back({graph.edge_tensor(e), b});
    }
    std::sort(sent.begin(), sent.end());
    sent.erase(std::unique(sent.begin(), sent.end()), sent.end());
    for (const auto& [tensor, b] : sent) {
      const int64_t bytes =
          tensor == kControlEdge ? 0 : graph.tensor_bytes(tensor);
      arcs.push_back({a, b, bytes});
      arcs.push_back({b, a, bytes});
    }
  }
  std::sort(arcs.begin(), arcs.end(), [](const Arc& x, const Arc& y) {
    return x.from != y.from ? x.from < y.from : x.to < y.to;
  });

  pg.offsets.assign(pg.num_units + 1, 0);
  for (size_t i = 0; i < arcs.size(); ++i) {
    if (i > 0 && arcs[i].from == arcs[i - 1].from &&
        arcs[i].to == arcs[i - 1].to) {
      pg.bytes.back() += arcs[i].bytes;
      continue;
    }
    pg.neighbors.push_back(arcs[i].to);
    pg.bytes.push_back(arcs[i].bytes);
    ++pg.offsets[arcs[i].from + 1];
  }
  for (int u = 0; u < pg.num_units; ++u) pg.offsets[u + 1] += pg.offsets[u];
  return pg;
}

std::vector<int32_t> ScaleToIntegers(const std::vector<double>& values,
                                     double total) {
  double sum = 0;
  for (double v : values) sum += v;
  const double scale = sum > 0 ? total / sum : 0;
  std::vector<int32_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = static_cast<int32_t>(
        std::max<double>(1, std::round(std::min(values[i] * scale, total))));
  }
  return out;
}

std::vector<double> RelativeDeviceSpeeds(const CostModel& cost) {
  const Graph& g = cost.graph();
  const Cluster& c = cost.cluster();
  DeviceKindSet kinds;
  for (const Device& d : c.devices()) kinds.Add(d.kind);
  std::vector<double> busy(c.num_devices(), 0.0);
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if ((g.allowed_devices(op).bits() & kinds.bits()) != kinds.bits()) {
      continue;
    }
    for (DeviceId d = 0; d < c.num_devices(); ++d)
      busy[d] += cost.OpTime(op, d);
  }
  std::vector<double> speed(c.num_devices(), 1.0);
  double fastest = 0;
  for (DeviceId d = 0; d < c.num_devices(); ++d) {
    // No op every kind may run: fall back to the devices' peak FLOP/s.
    speed[d] = busy[d] > 0 ? c.device(d).compute_slots / busy[d]
                           : c.device(d).peak_flops;
    fastest = std::max(fastest, speed[d]);
  }
  for (double& s : speed) s = fastest > 0 ? s / fastest : 1.0;
  return speed;
}

std::vector<double> LinkCosts(const CostModel& cost) {
  constexpr int64_t kReferenceBytes = int64_t{1} << 20;
  const int n = cost.cluster().num_devices();
  std::vector<double> out(static_cast<size_t>(n) * n, 0.0);
  for (DeviceId i = 0; i < n; ++i) {
    for (DeviceId j = 0; j < n; ++j) {
      if (i == j) continue;
      out[static_cast<size_t>(i) * n + j] =
          (cost.TransferTime(kReferenceBytes, i, j) +
           cost.TransferTime(kReferenceBytes, j, i)) /
          2;
    }
  }
  return out;
}

Placement ExpandUnitPlacement(const PartitionGraph& pg, const Cluster& cluster,
                              std::vector<DeviceId> unit_device) {
  std::vector<int64_t> bytes_to(cluster.num_devices());
  for (int u = 0; u < pg.num_units; ++u) {
    if (pg.allowed[u].Contains(cluster.device(unit_device[u]).kind)) continue;
    std::fill(bytes_to.begin(), bytes_to.end(), 0);
    for (int i = pg.offsets[u]; i < pg.offsets[u + 1]; ++i) {
      bytes_to[unit_device[pg.neighbors[i]]] += pg.bytes[i];
    }
    DeviceId best = -1;
    for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
      if (!pg.allowed[u].Contains(cluster.device(d).kind)) continue;
      if (best < 0 || bytes_to[d] > bytes_to[best]) best = d;
    }
    unit_device[u] = best;
  }
  Placement placement(pg.unit_of_op.size());
  for (size_t op = 0; op < placement.size(); ++op) {
    placement[op] = unit_device[pg.unit_of_op[op]];
  }
  return placement;
}

}  // namespace dplace
