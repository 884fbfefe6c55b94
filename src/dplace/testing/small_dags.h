// Small DAGs of MatMul ops on idealised GPUs, with round times, for tests
// that compare a placer with the brute-force optimum (the Baechi placers',
// mcmc's).
#ifndef DPLACE_TESTING_SMALL_DAGS_H_
#define DPLACE_TESTING_SMALL_DAGS_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dplace/sim/simulator.h"
#include "dplace/testing/placer_test_util.h"

namespace dplace::testing_dags {

constexpr int64_t kGB = 1000 * 1000 * 1000;

// A device of these tests' clusters.
inline Device TestDevice(const std::string& name, DeviceKind kind,
                         double peak_flops, double memory_bandwidth,
                         int64_t memory_bytes) {
  Device d;
  d.name = name;
  d.kind = kind;
  d.peak_flops = peak_flops;
  d.memory_bandwidth = memory_bandwidth;
  d.memory_bytes = memory_bytes;
  return d;
}

// `num_gpus` GPUs (no CPU) doing 1e12 FLOP/s of MatMul at 70% efficiency,
// so an op of 0.7e12 FLOPs runs 1 s; links of `bandwidth` bytes/s with no
// latency and no launch overhead, so times are round; `copier` makes their
// copies.
inline Cluster Gpus(int num_gpus, double bandwidth = 1e9,
                    int64_t memory = 10 * kGB, Copier copier = Copier::kLink) {
  ClusterBuilder b("gpus");
  for (int i = 0; i < num_gpus; ++i) {
    const Device gpu = TestDevice("gpu:" + std::to_string(i), DeviceKind::kGpu,
                                  1e12, 1e15, memory);
    b.AddDevice(gpu);
    for (int j = 0; j < i; ++j) {
      b.AddLink("gpu:" + std::to_string(j), gpu.name, bandwidth, 1e-9,
                /*bidirectional=*/true, copier);
    }
  }
  return *std::move(b).Build();
}

// A CPU (one or two slots, slower) and one to three GPUs of `gpu_memory`
// bytes, linked through the CPU or all to all, copied by the links or by
// the destination.
inline Cluster SmallCluster(std::mt19937_64& rng, int64_t gpu_memory) {
  std::uniform_real_distribution<double> bandwidth(1e8, 1e10);
  std::uniform_real_distribution<double> latency(0, 1e-3);
  const int gpus = std::uniform_int_distribution<int>(1, 3)(rng);
  const bool star = rng() % 2;
  const Copier copier = rng() % 3 ? Copier::kLink : Copier::kDestination;
  ClusterBuilder b("small");
  Device cpu = TestDevice("cpu", DeviceKind::kCpu, 2e11, 1e11, 64 * kGB);
  cpu.compute_slots = std::uniform_int_distribution<int>(1, 2)(rng);
  b.AddDevice(cpu);
  for (int i = 0; i < gpus; ++i) {
    Device gpu = TestDevice("gpu" + std::to_string(i), DeviceKind::kGpu, 1e12,
                            1e12, gpu_memory);
    gpu.launch_overhead = latency(rng);
    b.AddDevice(gpu);
    b.AddLink("cpu", gpu.name, bandwidth(rng), latency(rng), true, copier);
    for (int j = 0; j < i && !star; ++j) {
      b.AddLink("gpu" + std::to_string(j), gpu.name, bandwidth(rng),
                latency(rng), true, copier);
    }
  }
  return *std::move(b).Build();
}

// Op(name, seconds of work), and Edge(a, b, bytes) for b reading a tensor
// of its own from a; Output and Read for a tensor several ops read.
class Dag {
 public:
  OpId Op(const std::string& name, double seconds, int64_t persistent_bytes = 0,
          const std::string& colocation_group = "") {
    OpSpec spec;
    spec.name = name;
    spec.type = "MatMul";
    spec.flops = seconds * 0.7e12;
    spec.persistent_bytes = persistent_bytes;
    spec.colocation_group = colocation_group;
    specs_.push_back(spec);
    return static_cast<OpId>(specs_.size()) - 1;
  }
  void Temporary(OpId op, int64_t bytes) { specs_[op].temporary_bytes = bytes; }
  void Edge(OpId a, OpId b, int64_t bytes) { Read(a, Output(a, bytes), b); }
  // A tensor of `bytes` from `a` for several ops to read (Read): its
  // output index.
  int Output(OpId a, int64_t bytes) {
    specs_[a].outputs.push_back({{1}, DataType::kFloat32, bytes});
    return static_cast<int>(specs_[a].outputs.size()) - 1;
  }
  void Read(OpId a, int output, OpId b) { edges_.push_back({a, output, b}); }
  Graph Build() && {
    GraphBuilder b("dag");
    for (OpSpec& spec : specs_) {
      if (spec.outputs.empty()) spec.outputs.push_back({{1}});
      b.AddOp(spec);
    }
    for (const auto& [src, output, dst] : edges_) b.AddEdge(src, output, dst);
    return *std::move(b).Build();
  }

 private:
  std::vector<OpSpec> specs_;
  std::vector<std::tuple<OpId, int, OpId>> edges_;
};

// The fastest feasible simulated step over every placement that puts each
// op on a device that can run it (with `whole_groups`, every one that also
// keeps each colocation group on one device); infinity when none fits.
inline double BruteForceOptimum(const CostModel& cost,
                                bool whole_groups = false) {
  const Graph& g = cost.graph();
  const int n = g.num_ops();
  const int d = cost.cluster().num_devices();
  const double infinity = std::numeric_limits<double>::infinity();
  Simulator simulator(cost);
  Placement placement(n, 0);
  double best = infinity;
  for (;;) {
    bool allowed = true;
    for (OpId a = 0; a < n && allowed; ++a) {
      allowed = cost.OpTime(a, placement[a]) < infinity;
      for (OpId b = 0; b < a && allowed && whole_groups; ++b) {
        allowed = g.colocation_group(a).empty() ||
                  g.colocation_group(a) != g.colocation_group(b) ||
                  placement[a] == placement[b];
      }
    }
    if (allowed) {
      const SimResult r = *simulator.Simulate(placement);
      if (r.feasible) best = std::min(best, r.step_time);
    }
    int i = 0;
    while (i < n && ++placement[i] == d) placement[i++] = 0;
    if (i == n) return best;
  }
}

inline double BruteForceOptimum(const PlacerTestProblem& p) {
  return BruteForceOptimum(p.cost);
}

// src -> four 1 s branches -> sink, tensors of 0.1 s: two per GPU.
inline Graph ForkJoin() {
  Dag g;
  const OpId src = g.Op("src", 0.5);
  const OpId sink = g.Op("sink", 0.5);
  for (int i = 0; i < 4; ++i) {
    const OpId branch = g.Op("branch_" + std::to_string(i), 1);
    g.Edge(src, branch, 100'000'000);
    g.Edge(branch, sink, 100'000'000);
  }
  return std::move(g).Build();
}

// Two chains of three ops joined at the end, with tensors so heavy (2 s)
// that splitting a chain never pays but running the chains apart does.
inline Graph TwoHeavyChains() {
  Dag g;
  OpId last[2];
  for (int c = 0; c < 2; ++c) {
    last[c] = g.Op("chain" + std::to_string(c) + "_0", 1);
    for (int i = 1; i < 3; ++i) {
      const OpId op =
          g.Op("chain" + std::to_string(c) + "_" + std::to_string(i), 1 + c);
      g.Edge(last[c], op, 2 * kGB);
      last[c] = op;
    }
  }
  const OpId join = g.Op("join", 0.5);
  g.Edge(last[0], join, 2 * kGB);
  g.Edge(last[1], join, 2 * kGB);
  return std::move(g).Build();
}

// An unbalanced diamond with a long tail on three GPUs: work splits three
// ways where the tensors are light.
inline Graph WideDiamond() {
  Dag g;
  const OpId a = g.Op("a", 0.2);
  const OpId b = g.Op("b", 2);
  const OpId c = g.Op("c", 1.5);
  const OpId d = g.Op("d", 1);
  const OpId e = g.Op("e", 1);
  const OpId f = g.Op("f", 0.5);
  const OpId h = g.Op("h", 0.3);
  for (auto [from, to] : {std::pair{a, b},
                          {a, c},
                          {a, d},
                          {d, e},
                          {b, f},
                          {c, h},
                          {e, h},
                          {f, h}}) {
    g.Edge(from, to, 10'000'000);
  }
  return std::move(g).Build();
}

}  // namespace dplace::testing_dags

#endif  // DPLACE_TESTING_SMALL_DAGS_H_
