// The memory-aware path bound: never above the best simulated step of any
// placement that fits (brute force over thousands of small random problems
// under tight memory), equal to the critical path when memory does not
// bind, and exact where memory forces one known cut.
#include "dplace/sim/path_bound.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dplace/graph/random_graph.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/small_dags.h"

namespace dplace {
namespace {

using testing_dags::BruteForceOptimum;
using testing_dags::Dag;
using testing_dags::Gpus;
using testing_dags::kGB;
using testing_dags::SmallCluster;
using testing_dags::TestDevice;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Thousands of random problems whose GPUs hold a fraction of the weights:
// the bound never exceeds the brute-force optimum, and it is infinite only
// when nothing fits.
TEST(MemoryPathBoundTest, NeverAboveTheBruteForceOptimum) {
  std::mt19937_64 rng(20261128);
  int memory_bound_cases = 0, tight_cases = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    RandomGraphOptions o;
    o.num_ops = std::uniform_int_distribution<int>(2, 6)(rng);
    o.layer_width = std::uniform_int_distribution<int>(1, 3)(rng);
    o.max_reach = std::uniform_int_distribution<int>(1, 3)(rng);
    o.max_flops = 1e10;
    o.max_tensor_bytes = int64_t{1} << 28;
    o.max_persistent_bytes = kGB;
    o.max_temporary_bytes = int64_t{1} << 26;
    o.seed = rng();
    const Graph graph = MakeRandomLayeredGraph(o);
    const int64_t memory =
        std::uniform_int_distribution<int64_t>(kGB / 2, 3 * kGB)(rng);
    const Cluster cluster = SmallCluster(rng, memory);
    const CostModel cost(graph, cluster);
    const double bound = MemoryPathBound(cost);
    const double optimum = BruteForceOptimum(cost);
    ASSERT_LE(bound, optimum * (1 + 1e-9))
        << "trial " << trial << ": bound " << bound << " > optimum " << optimum;
    if (bound == kInfinity) {
      EXPECT_EQ(optimum, kInfinity) << trial;
    }
    Simulator simulator(cost);
    ASSERT_GE(bound, simulator.critical_path_bound() * (1 - 1e-12));
    if (bound > simulator.critical_path_bound() * (1 + 1e-9)) {
      ++memory_bound_cases;
    }
    if (optimum < kInfinity && bound >= optimum * (1 - 1e-9)) ++tight_cases;
  }
  // The bound is not the critical path in disguise: memory lifts it often,
  // and it is the optimum itself in many small cases.
  EXPECT_GT(memory_bound_cases, 300) << memory_bound_cases;
  EXPECT_GT(tight_cases, 300) << tight_cases;
  std::cout << memory_bound_cases << " cases above the critical path, "
            << tight_cases << " equal to the optimum\n";
}

// Thousands of random problems with colocation groups, some holding a
// zero-time op read through a tensor of no bytes (as Tarnawski et al.'s
// operator graphs pair an op with its output node): the bound of
// placements that keep groups whole never exceeds their brute-force
// optimum, never falls below the op-level bound, and rises above it where
// only a split group could carry a tensor between GPUs through the CPU.
TEST(MemoryPathBoundTest, WholeGroupsNeverAboveTheirBruteForceOptimum) {
  std::mt19937_64 rng(20261129);
  std::uniform_real_distribution<double> unit(0, 1);
  PathBoundOptions whole;
  whole.whole_groups = true;
  int lifted = 0, tight = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    Dag dag;
    const int n = std::uniform_int_distribution<int>(2, 6)(rng);
    std::vector<std::string> group(n);
    std::vector<OpId> ops;
    std::vector<std::pair<OpId, OpId>> inputs;
    for (int j = 0; j < n; ++j) {
      group[j] = "g" + std::to_string(j);
      if (j > 0) {
        const int k = std::uniform_int_distribution<int>(0, j - 1)(rng);
        inputs.push_back({k, j});
        if (unit(rng) < 0.4) group[j] = group[k];
        if (j > 1 && unit(rng) < 0.4) {
          const int k2 = std::uniform_int_distribution<int>(0, j - 1)(rng);
          if (k2 != k) inputs.push_back({k2, j});
        }
      }
      const double seconds = unit(rng) < 0.3 ? 0 : unit(rng);
      const auto bytes = static_cast<int64_t>(unit(rng) * 0.8 * kGB);
      ops.push_back(dag.Op("op" + std::to_string(j), seconds, bytes,
                           unit(rng) < 0.2 ? "" : group[j]));
    }
    for (const auto& [a, b] : inputs) {
      const int64_t bytes =
          unit(rng) < 0.3 ? 0 : static_cast<int64_t>(unit(rng) * (1 << 28)) + 1;
      dag.Edge(ops[a], ops[b], bytes);
    }
    const Graph graph = std::move(dag).Build();
    const int64_t memory =
        std::uniform_int_distribution<int64_t>(kGB / 2, 2 * kGB)(rng);
    const Cluster cluster = SmallCluster(rng, memory);
    const CostModel cost(graph, cluster);
    const double op_level = MemoryPathBound(cost);
    const double bound = MemoryPathBound(cost, whole);
    const double optimum = BruteForceOptimum(cost, /*whole_groups=*/true);
    ASSERT_LE(bound, optimum * (1 + 1e-9))
        << "trial " << trial << ": bound " << bound << " > optimum " << optimum;
    ASSERT_GE(bound, op_level * (1 - 1e-12)) << trial;
    Simulator simulator(cost);
    ASSERT_GE(simulator.memory_path_whole_groups_bound(),
              simulator.memory_path_bound() * (1 - 1e-12));
    if (bound > op_level * (1 + 1e-9)) ++lifted;
    if (optimum < kInfinity && bound >= optimum * (1 - 1e-9)) ++tight;
  }
  EXPECT_GT(lifted, 30) << lifted;
  EXPECT_GT(tight, 300) << tight;
  std::cout << lifted << " cases above the op-level bound, " << tight
            << " equal to the optimum\n";
}

// A CPU (slow) and `num_gpus` GPUs of `gpu_memory` bytes, each linked to
// the CPU only, at `bandwidth` bytes/s: a tensor from GPU to GPU takes two
// hops.
Cluster Star(int num_gpus, int64_t gpu_memory, double bandwidth) {
  ClusterBuilder b("star");
  b.AddDevice(TestDevice("cpu", DeviceKind::kCpu, 1e10, 1e15, 64 * kGB));
  for (int i = 0; i < num_gpus; ++i) {
    const std::string name = "gpu:" + std::to_string(i);
    b.AddDevice(TestDevice(name, DeviceKind::kGpu, 1e12, 1e15, gpu_memory));
    b.AddLink("cpu", name, bandwidth, 1e-9, /*bidirectional=*/true);
  }
  return *std::move(b).Build();
}

// a -> p -> c on two GPUs of 1 GB linked through a (slow) CPU: a and c
// take 1 s and 0.3 and 0.6 GB, p, a's zero-time output node in a's
// colocation group, 0.5 GB; p reads nothing from a (0 bytes) and sends c
// 0.1 GB (0.1 s a hop), and cannot share a GPU with c. On the CPU, p
// carries the tensor in one hop: 2.1 s; kept with a, two: 2.2 s. Each
// bound is its placements' optimum, and a step carries the whole-groups
// bound only when its placement keeps p with a.
TEST(MemoryPathBoundTest, WholeGroupsPayTheHopsAGroupForces) {
  Dag dag;
  const OpId a = dag.Op("a", 1, 3 * kGB / 10, "a");
  const OpId p = dag.Op("p", 0, 5 * kGB / 10, "a");
  const OpId c = dag.Op("c", 1, 6 * kGB / 10);
  dag.Edge(a, p, 0);
  dag.Edge(p, c, kGB / 10);
  const Graph graph = std::move(dag).Build();
  const Cluster cluster = Star(2, kGB, 1e9);
  const CostModel cost(graph, cluster);
  PathBoundOptions whole;
  whole.whole_groups = true;
  EXPECT_NEAR(MemoryPathBound(cost), 2.1, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost, whole), 2.2, 1e-6);
  EXPECT_NEAR(BruteForceOptimum(cost), 2.1, 1e-6);
  EXPECT_NEAR(BruteForceOptimum(cost, /*whole_groups=*/true), 2.2, 1e-6);

  Simulator simulator(cost);
  const SimResult split = *simulator.Simulate({1, 0, 2});
  EXPECT_NEAR(split.step_time, 2.1, 1e-6);
  EXPECT_EQ(split.bounds.memory_path_whole_groups, 0);
  const SimResult kept = *simulator.Simulate({1, 1, 2});
  EXPECT_NEAR(kept.step_time, 2.2, 1e-6);
  EXPECT_NEAR(kept.bounds.memory_path_whole_groups, 2.2, 1e-6);
  EXPECT_TRUE(ProvenOptimal(kept.step_time, ProblemLowerBound(kept.bounds)));
  EXPECT_EQ(ProblemLowerBound(kept.bounds).binding, kWholeGroupsBoundName);
  EXPECT_EQ(ProblemLowerBound(split.bounds).binding, "forced-transfer path");
}

// A residual block w -> a -> b -> v with w -> v, on three GPUs of 1 GB,
// each linked to the CPU only (GPU to GPU: two hops of 0.1 s per 10 MB):
// w holds 0.5 GB, a 0.25, b 0.3 and v 0.55, so w shares a GPU with a
// alone, and v with none of the others but b. The best placement cuts
// inside the block ({w, a} | {b} | {v}): w's tensor to v (0.4 s a hop)
// leaves w's GPU at 1 s, so a's tensor to b, ready at 1.1 s, waits behind
// it on that GPU's link to the CPU: b starts at 1.6 s, v at 2.8 s, the
// step ends at 3.8 s. The bound sees the queue and is exact; without it,
// a's tensor arrives at 1.3 s and it says 3.3 s. On two GPUs the same
// block takes 3.9 s (b shares v's GPU and its link); the bound, which does
// not count GPUs, stays 3.8 s.
TEST(MemoryPathBoundTest, ACutInsideABlockWaitsForTheSkipTensor) {
  Dag dag;
  const OpId w = dag.Op("w", 1, 50 * kGB / 100);
  const OpId a = dag.Op("a", 0.1, 25 * kGB / 100);
  const OpId b = dag.Op("b", 1, 30 * kGB / 100);
  const OpId v = dag.Op("v", 1, 55 * kGB / 100);
  dag.Edge(w, a, 50'000'000);
  dag.Edge(a, b, 10'000'000);
  dag.Edge(b, v, 10'000'000);
  dag.Edge(w, v, 40'000'000);
  const Graph graph = std::move(dag).Build();
  PathBoundOptions no_queues;
  no_queues.link_queues = false;
  const Cluster three = Star(3, kGB, 1e8);
  const CostModel cost(graph, three);
  EXPECT_NEAR(BruteForceOptimum(cost), 3.8, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost), 3.8, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost, no_queues), 3.3, 1e-6);
  Simulator simulator(cost);
  EXPECT_NEAR(simulator.Simulate({1, 1, 2, 3})->step_time, 3.8, 1e-6);

  const Cluster two = Star(2, kGB, 1e8);
  const CostModel on_two(graph, two);
  EXPECT_NEAR(BruteForceOptimum(on_two), 3.9, 1e-6);
  EXPECT_NEAR(MemoryPathBound(on_two), 3.8, 1e-6);
}

// The bound against the brute-force optimum (never above it) and the
// bound with one of its rules off, `without` (never below it): counts the
// cases the rule lifts and those where the bound is the optimum.
struct Problem {
  Graph graph;
  Cluster cluster;
};

struct Tally {
  PathBoundOptions without_rule;
  const char* rule;  // For Print: "without link queues".
  int lifted = 0, tight = 0;
  void Check(const CostModel& cost) {
    const double bound = MemoryPathBound(cost);
    const double optimum = BruteForceOptimum(cost);
    ASSERT_LE(bound, optimum * (1 + 1e-9))
        << "bound " << bound << " > optimum " << optimum;
    const double without = MemoryPathBound(cost, without_rule);
    ASSERT_GE(bound, without * (1 - 1e-12));
    if (bound > without * (1 + 1e-9)) ++lifted;
    if (optimum < kInfinity && bound >= optimum * (1 - 1e-9)) ++tight;
  }
  void Print() const {
    std::cout << lifted << " cases above the bound " << rule << ", " << tight
              << " equal to the optimum\n";
  }
  // Checks `trials` problems from `draw`, then expects more than these
  // many cases lifted and tight and prints the counts.
  void CheckDrawn(int trials, const std::function<Problem()>& draw,
                  int some_lifted, int some_tight) {
    for (int trial = 0; trial < trials; ++trial) {
      const Problem p = draw();
      const CostModel cost(p.graph, p.cluster);
      SCOPED_TRACE("trial " + std::to_string(trial));
      ASSERT_NO_FATAL_FAILURE(Check(cost));
    }
    EXPECT_GT(lifted, some_lifted) << lifted;
    EXPECT_GT(tight, some_tight) << tight;
    Print();
  }
};

Tally WithoutLinkQueues() {
  Tally tally{{}, "without link queues"};
  tally.without_rule.link_queues = false;
  return tally;
}

// A random block: w, two or three branches of one or two ops joined by v,
// perhaps an op after v and a weight read by v, on a star of two GPUs or
// a small cluster whose GPUs hold kGB / 2 to 3 kGB / 2.
struct BlockShape {
  double zero_time = 0;    // Chance that w, v or `after` takes no time.
  double branch_time = 1;  // A branch op's time against theirs.
  double largest_tensor = 1e8;
  double three_branches = 0.7;
  bool small_v = false;  // v a quarter of a random size (else + kGB/4).
  double after = 1;      // Chance of `after`; 1: always, kGB/4 larger.
  double weight = 0;     // Chance of a weight read by v.
  double two_ops = 0.3;  // Chance that a branch has two ops (up to 5 ops).
};
Problem RandomBlock(std::mt19937_64& rng, const BlockShape& shape) {
  std::uniform_real_distribution<double> unit(0, 1);
  Dag dag;
  auto seconds = [&] {
    if (shape.zero_time == 0) return unit(rng);
    return unit(rng) < shape.zero_time ? 0 : unit(rng);
  };
  auto bytes = [&] { return static_cast<int64_t>(unit(rng) * 0.7 * kGB); };
  auto tensor = [&] {
    return static_cast<int64_t>(unit(rng) * shape.largest_tensor) + 1;
  };
  const OpId w = dag.Op("w", seconds(), bytes() + kGB / 4);
  const OpId v =
      dag.Op("v", seconds(), shape.small_v ? bytes() / 4 : bytes() + kGB / 4);
  const int branches = unit(rng) < shape.three_branches ? 3 : 2;
  int ops = 2;
  for (int b = 0; b < branches; ++b) {
    OpId last = w;
    const int length = ops < 5 && unit(rng) < shape.two_ops ? 2 : 1;
    for (int k = 0; k < length; ++k, ++ops) {
      const OpId op = dag.Op("b" + std::to_string(ops),
                             seconds() * shape.branch_time, bytes() / 4);
      dag.Edge(last, op, tensor());
      last = op;
    }
    dag.Edge(last, v, tensor());
  }
  if (shape.after == 1) {
    const OpId after = dag.Op("after", seconds(), bytes() + kGB / 4);
    dag.Edge(v, after, tensor());
  } else if (ops < 6 && unit(rng) < shape.after) {
    const OpId after = dag.Op("after", seconds(), bytes());
    dag.Edge(v, after, tensor());
    ++ops;
  }
  if (shape.weight > 0 && ops < 6 && unit(rng) < shape.weight) {
    const OpId weight = dag.Op("weight", 0, bytes() / 2);
    dag.Edge(weight, v, tensor());
  }
  Graph graph = std::move(dag).Build();
  const int64_t memory =
      std::uniform_int_distribution<int64_t>(kGB / 2, 3 * kGB / 2)(rng);
  Cluster cluster = unit(rng) < 0.6 ? Star(2, memory, 1e8 + unit(rng) * 1e9)
                                    : SmallCluster(rng, memory);
  return {std::move(graph), std::move(cluster)};
}

// Thousands of random chains of residual blocks (an op reading the one
// before it and, often, one two or three back), some ops with a weight of
// their own (a source read by that op only), on small clusters under
// tight memory: the bound with link queues never exceeds the brute-force
// optimum, and it rises above the bound without them where a skip tensor
// holds a link.
TEST(MemoryPathBoundTest, WithLinkQueuesNeverAboveTheBruteForceOptimum) {
  std::mt19937_64 rng(20261129);
  std::uniform_real_distribution<double> unit(0, 1);
  Tally tally = WithoutLinkQueues();
  auto draw = [&] {
    Dag dag;
    const int chain = std::uniform_int_distribution<int>(3, 5)(rng);
    std::vector<OpId> ops;
    int weights = 0;
    for (int j = 0; j < chain; ++j) {
      const double seconds = unit(rng) < 0.2 ? 0 : unit(rng);
      const auto bytes = static_cast<int64_t>(unit(rng) * 0.7 * kGB);
      ops.push_back(dag.Op("op" + std::to_string(j), seconds, bytes));
      auto tensor = [&] { return static_cast<int64_t>(unit(rng) * 1e8) + 1; };
      if (j > 0) dag.Edge(ops[j - 1], ops[j], tensor());
      if (j > 1 && unit(rng) < 0.6) {
        const int back = std::uniform_int_distribution<int>(2, 3)(rng);
        if (j - back >= 0) dag.Edge(ops[j - back], ops[j], tensor());
      }
      if (chain + weights < 6 && unit(rng) < 0.25) {
        const OpId weight = dag.Op("w" + std::to_string(j), 0,
                                   static_cast<int64_t>(unit(rng) * 0.3 * kGB));
        dag.Edge(weight, ops[j], tensor());
        ++weights;
      }
    }
    Graph graph = std::move(dag).Build();
    const int64_t memory =
        std::uniform_int_distribution<int64_t>(kGB / 2, 2 * kGB)(rng);
    const Cluster cluster =
        unit(rng) < 0.5 ? Star(std::uniform_int_distribution<int>(2, 3)(rng),
                               memory, 1e8 + unit(rng) * 1e9)
                        : SmallCluster(rng, memory);
    return Problem{std::move(graph), cluster};
  };
  tally.CheckDrawn(2000, draw, 20, 300);
}

// The block of the two one-link tests: w, then branches a, b and c (0.1
// GB each), each reading a tensor of its own from w (100 MB) and sending
// v one of 50 MB. Ops in that order (w is op 0, v op 1), seconds on a
// GPU.
struct OpFigures {
  double seconds;
  int64_t bytes;
};
Graph ThreeBranches(OpFigures w_op, OpFigures v_op, double branch_seconds) {
  Dag dag;
  const OpId w = dag.Op("w", w_op.seconds, w_op.bytes);
  const OpId v = dag.Op("v", v_op.seconds, v_op.bytes);
  for (const char* name : {"a", "b", "c"}) {
    const OpId branch = dag.Op(name, branch_seconds, kGB / 10);
    dag.Edge(w, branch, 100'000'000);
    dag.Edge(branch, v, 50'000'000);
  }
  return std::move(dag).Build();
}

// w, then three branches a, b, c of one op each, joined by v, on two GPUs
// of 2 GB behind a CPU at 1e8 bytes/s: w (1 s, 1.2 GB) and v (1 s, 1.0
// GB) cannot share a GPU. w sends each branch 100 MB (1 s a hop), each
// branch sends v 50 MB (0.5 s). Wherever the branches run, the tensors
// that leave w's GPU on the way to v (w's three, or the branches' three,
// or a mix) cross its one link to the CPU one after another, at least 1.5
// s after w finishes, and then one more hop into v's GPU, at least 0.5 s:
// v starts at 3 s, against 2.1 s for a path paying one branch's two hops.
// The optimum, 4.1 s, also waits for the branch tensors queued on the
// CPU's link into v's GPU.
TEST(MemoryPathBoundTest, BranchesLeavingADeviceQueueOnItsOneLink) {
  const Graph graph = ThreeBranches({1, 12 * kGB / 10}, {1, kGB}, 0.1);
  PathBoundOptions no_queues;
  no_queues.link_queues = false;
  const Cluster cluster = Star(2, 2 * kGB, 1e8);
  const CostModel cost(graph, cluster);
  const double optimum = BruteForceOptimum(cost);
  EXPECT_NEAR(optimum, 4.1, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost, no_queues), 3.1, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost), 4.0, 1e-6);
}

// The mirror: w must run on the CPU (3 GB, more than a GPU holds; 1.4 s
// there) and v wants a GPU (50 ms there, 7 s on the CPU). Each branch
// (1 ms on a GPU, 0.14 s on the CPU) reads a tensor of its own from w (1 s
// a hop) and sends v one of 0.5 s. Every way into v's GPU crosses its one
// link from the CPU, one tensor after another from w's finish on: the
// three branch tensors (1.5 s) or w's (1 s each). The optimum, 3.09 s,
// runs the branches on the CPU (one slot: they end at 1.54, 1.68 and
// 1.82 s) and queues their tensors on that link (v starts at 3.04 s). The
// bound sees the queue, 2.95 s (it does not count that the first tensor
// leaves only after its branch ran); without it, 2.09 s (each tensor
// arrives 0.5 s after its branch).
TEST(MemoryPathBoundTest, BranchesEnteringADeviceQueueOnItsOneLink) {
  const Graph graph = ThreeBranches({0.01, 3 * kGB}, {0.05, kGB / 2}, 0.001);
  PathBoundOptions no_queues;
  no_queues.link_queues = false;
  const Cluster cluster = Star(2, 2 * kGB, 1e8);
  const CostModel cost(graph, cluster);
  EXPECT_NEAR(BruteForceOptimum(cost), 3.09, 1e-6);
  EXPECT_NEAR(Simulator(cost).Simulate({0, 1, 0, 0, 0})->step_time, 3.09, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost, no_queues), 2.09, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost), 2.95, 1e-6);
}

// Thousands of random blocks (w, two or three branches of one or two ops,
// a join v, sometimes an op after v; some ops with a weight of their own)
// on small clusters under tight memory: the bound, whose regions count the
// tensors that leave w's device on its one link, never exceeds the
// brute-force optimum.
TEST(MemoryPathBoundTest, BranchyBlocksNeverAboveTheBruteForceOptimum) {
  std::mt19937_64 rng(20261130);
  // w and v often too large to share a GPU, the branches short.
  BlockShape shape;
  shape.zero_time = 0.2;
  shape.branch_time = 0.2;
  shape.after = 0.4;
  shape.weight = 0.3;
  Tally tally = WithoutLinkQueues();
  tally.CheckDrawn(
      2000, [&] { return RandomBlock(rng, shape); }, 20, 100);
}

// w and v, which want a GPU (the CPU is 140 times slower), and two or
// three branches of two cheap ops each between them, the second op often
// too large for the GPU beside w and v, on a star of one or two GPUs: a
// branch then starts on w's GPU and leaves it for its second op, whose
// result comes back to v. Thousands of them: the bound that makes those
// tensors share w's one link never exceeds the brute-force optimum, never
// falls below the one that does not, and lifts it in many cases.
TEST(MemoryPathBoundTest, ExcursionsNeverAboveTheBruteForceOptimum) {
  std::mt19937_64 rng(20261202);
  std::uniform_real_distribution<double> unit(0, 1);
  Tally tally{{}, "without excursions"};
  tally.without_rule.excursions = false;
  auto draw = [&] {
    const int gpus = unit(rng) < 0.5 ? 1 : 2;
    const int branches = gpus == 1 && unit(rng) < 0.5 ? 3 : 2;
    const int64_t memory = kGB;
    Dag dag;
    const OpId w = dag.Op("w", 0.5 + unit(rng) / 2,
                          static_cast<int64_t>(unit(rng) * 0.4 * kGB));
    const OpId v = dag.Op("v", 0.5 + unit(rng) / 2,
                          static_cast<int64_t>(unit(rng) * 0.2 * kGB));
    for (int k = 0; k < branches; ++k) {
      const OpId first = dag.Op("a" + std::to_string(k), unit(rng) / 100,
                                static_cast<int64_t>(unit(rng) * 0.1 * kGB));
      const OpId second = dag.Op("b" + std::to_string(k), unit(rng) / 1000,
                                 static_cast<int64_t>(unit(rng) * 0.8 * kGB));
      dag.Edge(w, first, static_cast<int64_t>((1 + 2 * unit(rng)) * 1e8));
      dag.Edge(first, second, static_cast<int64_t>(unit(rng) * 1e8) + 1);
      dag.Edge(second, v, static_cast<int64_t>(unit(rng) * 2e7) + 1);
    }
    Graph graph = std::move(dag).Build();
    const Cluster cluster = Star(gpus, memory, 1e8);
    return Problem{std::move(graph), cluster};
  };
  tally.CheckDrawn(2000, draw, 40, 20);
}

// w, then three branches a, b, c of 1 s each, joined by v, then a
// zero-time op `after`, on one GPU of 1.5 GB beside a CPU 100 times
// slower: w (1 GB), the branches (0.11 GB each) and v (0.05 GB) fit the
// GPU, `after` (1.4 GB) only the CPU. The branches share w's GPU and run
// one after another: the optimum is 5 s and a tensor of 1 MB (1 ms a hop)
// from v to `after`. A bound that lets them run at once says 3 s.
TEST(MemoryPathBoundTest, BranchesOnOneGpuRunOneAfterAnother) {
  Dag dag;
  const OpId w = dag.Op("w", 1, kGB);
  const OpId v = dag.Op("v", 1, 5 * kGB / 100);
  for (const char* name : {"a", "b", "c"}) {
    const OpId branch = dag.Op(name, 1, 11 * kGB / 100);
    dag.Edge(w, branch, 1'000'000);
    dag.Edge(branch, v, 1'000'000);
  }
  const OpId after = dag.Op("after", 0, 14 * kGB / 10);
  dag.Edge(v, after, 1'000'000);
  const Graph graph = std::move(dag).Build();
  const Cluster cluster = Star(1, 15 * kGB / 10, 1e9);
  const CostModel cost(graph, cluster);
  PathBoundOptions parallel;
  parallel.serial_devices = false;
  EXPECT_NEAR(BruteForceOptimum(cost), 5.001, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost, parallel), 3.001, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost), 5.001, 1e-6);
}

// w, then a branch that forks and joins again (a, then b and c of 1 s
// each, then d) beside a one-op branch e, joined by v, then a zero-time
// op `after`, on one GPU of 1.5 GB beside a CPU 140 times slower: all but
// `after` (1.4 GB, the CPU's) share the GPU, one after another, and the
// optimum is 4.301 s. At d, b's and c's busy times both count a: they add
// up less a's (2.1 s), not the larger (1.1 s), and the bound is the
// optimum; counting the larger, it says 3.301 s.
TEST(MemoryPathBoundTest, AForkInsideABranchAddsItsOpsOnce) {
  Dag dag;
  const OpId w = dag.Op("w", 1, kGB);
  const OpId a = dag.Op("a", 0.1, kGB / 100);
  const OpId b = dag.Op("b", 1, kGB / 100);
  const OpId c = dag.Op("c", 1, kGB / 100);
  const OpId d = dag.Op("d", 0.1, kGB / 100);
  const OpId e = dag.Op("e", 0.1, kGB / 100);
  const OpId v = dag.Op("v", 1, 5 * kGB / 100);
  const OpId after = dag.Op("after", 0, 14 * kGB / 10);
  for (auto [from, to] : {std::pair{w, a},
                          {a, b},
                          {a, c},
                          {b, d},
                          {c, d},
                          {d, v},
                          {w, e},
                          {e, v},
                          {v, after}}) {
    dag.Edge(from, to, 1'000'000);
  }
  const Graph graph = std::move(dag).Build();
  const Cluster cluster = Star(1, 15 * kGB / 10, 1e9);
  const CostModel cost(graph, cluster);
  EXPECT_NEAR(BruteForceOptimum(cost), 4.301, 1e-6);
  EXPECT_NEAR(MemoryPathBound(cost), 4.301, 1e-6);
}

// Thousands of random blocks like the one above: w, a branch that forks
// after its first op into one or two ops and joins again (or a chain of
// them), a second branch of one or two ops, v, sometimes an op after v,
// on a star of one or two GPUs under tight memory: the bound, which adds
// the busy times and bytes of branches that share ops less the shared
// ops', never exceeds the brute-force optimum.
TEST(MemoryPathBoundTest, ForksInsideBranchesNeverAboveTheBruteForceOptimum) {
  std::mt19937_64 rng(20261203);
  std::uniform_real_distribution<double> unit(0, 1);
  Tally tally{{}, "of parallel branches"};
  tally.without_rule.serial_devices = false;
  auto draw = [&] {
    auto bytes = [&] { return static_cast<int64_t>(unit(rng) * 0.5 * kGB); };
    auto tensor = [&] {
      return static_cast<int64_t>(unit(rng) * unit(rng) * 1e8) + 1;
    };
    Dag dag;
    const OpId w = dag.Op("w", unit(rng), bytes() + kGB / 4);
    const OpId v = dag.Op("v", unit(rng), bytes() / 4);
    const OpId a = dag.Op("a", unit(rng) / 2, bytes() / 4);
    const OpId d = dag.Op("d", unit(rng) / 2, bytes() / 4);
    dag.Edge(w, a, tensor());
    const int inner = unit(rng) < 0.8 ? 2 : 1;
    for (int k = 0; k < inner; ++k) {
      const OpId x = dag.Op("x" + std::to_string(k), unit(rng), bytes() / 4);
      dag.Edge(a, x, tensor());
      dag.Edge(x, d, tensor());
    }
    dag.Edge(d, v, tensor());
    OpId last = w;
    const int second = unit(rng) < 0.3 ? 2 : 1;
    for (int k = 0; k < second; ++k) {
      const OpId y = dag.Op("y" + std::to_string(k), unit(rng), bytes() / 4);
      dag.Edge(last, y, tensor());
      last = y;
    }
    dag.Edge(last, v, tensor());
    const int ops = 4 + inner + second;
    if (ops < 8 && unit(rng) < 0.5) {
      const OpId after = dag.Op("after", unit(rng), bytes() + kGB / 4);
      dag.Edge(v, after, tensor());
    }
    Graph graph = std::move(dag).Build();
    const int64_t memory =
        std::uniform_int_distribution<int64_t>(kGB / 2, 3 * kGB / 2)(rng);
    const int gpus = graph.num_ops() <= 7 && unit(rng) < 0.3 ? 2 : 1;
    const Cluster cluster = Star(gpus, memory, 1e8 + unit(rng) * 1e9);
    return Problem{std::move(graph), cluster};
  };
  tally.CheckDrawn(2000, draw, 40, 100);
}

// Thousands of random blocks as above, their branches as long as w and v,
// their tensors cheap, and an op after v that often needs a GPU of its
// own, so that branches kept on w's device often wait for each other: the bound
// that adds their times never exceeds the brute-force optimum, never falls
// below the one that does not, and lifts it in many cases.
TEST(MemoryPathBoundTest, SerialDevicesNeverAboveTheBruteForceOptimum) {
  std::mt19937_64 rng(20261201);
  // w and v often share a GPU, `after` rarely does.
  BlockShape shape;
  shape.largest_tensor = 2e7;
  shape.three_branches = 0.6;
  shape.small_v = true;
  Tally tally{{}, "of parallel branches"};
  tally.without_rule.serial_devices = false;
  tally.CheckDrawn(
      2000, [&] { return RandomBlock(rng, shape); }, 40, 300);
}

// With memory to spare, the bound is the critical path: every op on its
// fastest device, transfers free.
TEST(MemoryPathBoundTest, IsTheCriticalPathWhenMemoryDoesNotBind) {
  for (const Graph& graph :
       {testing_dags::ForkJoin(), testing_dags::TwoHeavyChains(),
        testing_dags::WideDiamond()}) {
    const Cluster cluster = Gpus(3);
    const CostModel cost(graph, cluster);
    Simulator simulator(cost);
    EXPECT_DOUBLE_EQ(MemoryPathBound(cost), simulator.critical_path_bound());
  }
}

// a -> b -> c, 1 s each, 0.6 GB of weights each, on GPUs of 1 GB: no two
// ops share a GPU, so both tensors (0.1 s each) move, whatever the
// placement: 3.2 s, where the critical path says 3 s.
TEST(MemoryPathBoundTest, PaysTheTransfersMemoryForces) {
  Dag dag;
  const OpId a = dag.Op("a", 1, 6 * kGB / 10);
  const OpId b = dag.Op("b", 1, 6 * kGB / 10);
  const OpId c = dag.Op("c", 1, 6 * kGB / 10);
  dag.Edge(a, b, kGB / 10);
  dag.Edge(b, c, kGB / 10);
  const Graph graph = std::move(dag).Build();
  const Cluster cluster = Gpus(3, /*bandwidth=*/1e9, /*memory=*/kGB);
  const CostModel cost(graph, cluster);
  EXPECT_NEAR(MemoryPathBound(cost), 3.2, 1e-6);
  EXPECT_NEAR(BruteForceOptimum(cost), 3.2, 1e-6);
  Simulator simulator(cost);
  EXPECT_NEAR(simulator.critical_path_bound(), 3.0, 1e-9);
}

// Two GPUs for three ops of which no two fit together: nothing fits, and
// the bound says so only when one op alone is too large.
TEST(MemoryPathBoundTest, InfiniteOnlyWhenAnOpFitsNowhere) {
  Dag dag;
  const OpId a = dag.Op("a", 1, 2 * kGB);
  const OpId b = dag.Op("b", 1, kGB / 2);
  dag.Edge(a, b, 1000);
  const Graph graph = std::move(dag).Build();
  const Cluster cluster = Gpus(2, 1e9, kGB);
  const CostModel cost(graph, cluster);
  EXPECT_EQ(MemoryPathBound(cost), kInfinity);
  EXPECT_EQ(BruteForceOptimum(cost), kInfinity);
}

// Rounding the step functions down to few steps keeps a bound, never
// above the exact one.
TEST(MemoryPathBoundTest, FewerStepsGiveALowerBound) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    RandomGraphOptions o;
    o.num_ops = 300;
    o.layer_width = 4;
    o.max_persistent_bytes = int64_t{1} << 28;
    o.max_tensor_bytes = int64_t{1} << 26;
    o.seed = rng();
    const Graph graph = MakeRandomLayeredGraph(o);
    const Cluster cluster = SmallCluster(rng, 2 * kGB);
    const CostModel cost(graph, cluster);
    PathBoundOptions coarse;
    coarse.max_steps = 2;
    PathBoundOptions fine;
    fine.max_steps = 1000;
    EXPECT_LE(MemoryPathBound(cost, coarse),
              MemoryPathBound(cost, fine) * (1 + 1e-12));
  }
}

}  // namespace
}  // namespace dplace
