// Clusters of thousands of GPUs, for the scale tests and benchmarks
// (docs/performance.md, "Large clusters"): a ring, and a two-level fat tree
// of hosts of 8 GPUs, and a placement of a graph over all their GPUs.
#ifndef DPLACE_TESTING_LARGE_CLUSTERS_H_
#define DPLACE_TESTING_LARGE_CLUSTERS_H_

#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/random_graph.h"

namespace dplace::testing_clusters {

// An H100 SXM5 as the h100x8 preset has it.
inline Device H100(const std::string& name, const std::string& host) {
  return {name,  DeviceKind::kGpu, host,        "H100 SXM5 80GB",
          67e12, 3350e9,           80000000000, 4e-6,
          1};
}

// `num_gpus` GPUs in a ring, each linked both ways to the next (400 GB/s,
// 3 us): routes of up to num_gpus / 2 hops.
inline StatusOr<Cluster> GpuRing(int num_gpus) {
  ClusterBuilder b("ring" + std::to_string(num_gpus));
  for (int i = 0; i < num_gpus; ++i) {
    b.AddDevice(H100("gpu:" + std::to_string(i), "host" + std::to_string(i)));
  }
  for (int i = 0; i < num_gpus; ++i) {
    b.AddLink("gpu:" + std::to_string(i),
              "gpu:" + std::to_string((i + 1) % num_gpus), 400e9, 3e-6);
  }
  return std::move(b).Build();
}

// A two-level fat tree of `num_hosts` hosts of 8 GPUs, rail-optimised as
// DGX clusters are (and the h100x8x2 preset): inside a host every GPU pair
// is linked (NVSwitch, 450 GB/s, 3 us); GPU i of every host is linked to
// GPU i of every other (rail i's switch, 50 GB/s, 5 us). Any two GPUs are at
// most two hops apart; the links grow with the square of the hosts.
inline StatusOr<Cluster> GpuFatTree(int num_hosts) {
  constexpr int kGpus = 8;
  ClusterBuilder b("fattree" + std::to_string(num_hosts) + "x8");
  auto name = [](int host, int gpu) {
    return "h" + std::to_string(host) + "/gpu:" + std::to_string(gpu);
  };
  for (int h = 0; h < num_hosts; ++h) {
    for (int i = 0; i < kGpus; ++i) {
      b.AddDevice(H100(name(h, i), "host" + std::to_string(h)));
      for (int j = 0; j < i; ++j)
        b.AddLink(name(h, j), name(h, i), 450e9, 3e-6);
      for (int g = 0; g < h; ++g) b.AddLink(name(g, i), name(h, i), 50e9, 5e-6);
    }
  }
  return std::move(b).Build();
}

// A layered random graph of `num_ops` ops (50 wide, inputs from the 2
// layers before, like simulate_benchmark's) whose ops all may run on GPUs.
inline Graph GpuGraph(int num_ops) {
  RandomGraphOptions o;
  o.num_ops = num_ops;
  o.layer_width = 50;
  o.max_reach = 2;
  o.max_inputs = 3;
  o.max_persistent_bytes = 1 << 20;
  o.cpu_only_probability = 0;
  o.seed = 42;
  return MakeRandomLayeredGraph(o);
}

// Contiguous ranges of op ids on consecutive devices: every device gets ops,
// and most transfers go to the next device.
inline std::vector<DeviceId> BlockPlacement(const Graph& g, const Cluster& c) {
  std::vector<DeviceId> p(g.num_ops());
  for (OpId op = 0; op < g.num_ops(); ++op) {
    p[op] = static_cast<DeviceId>(static_cast<int64_t>(op) * c.num_devices() /
                                  g.num_ops());
  }
  return p;
}

}  // namespace dplace::testing_clusters

#endif  // DPLACE_TESTING_LARGE_CLUSTERS_H_
