// The queued critical path of placements that keep colocation groups
// whole, and their total work in windows after the queued starts: exact
// where a gradient's sibling holds up its consumer, never above the
// brute-force optimum of thousands of small random problems.
#include "dplace/sim/queue_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dplace/graph/placement.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/sim/simulator.h"
#include "dplace/sim/work_bound.h"
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

double QueuedPath(const CostModel& cost) {
  return GroupQueuePathBound(cost, ColocationHintGroups(cost.graph()).group);
}

// The work bound's windows with the queued paths as the ops' earliest
// starts.
double QueuedWindows(const CostModel& cost) {
  return WorkBound(
      cost, GroupQueueHeads(cost, ColocationHintGroups(cost.graph()).group));
}

// A MatMul f and its two gradients a (dX) and b (dW) in one group "m": y
// (0.5 s) makes both ready, b also reads f's X, and c reads a's 2 GB (2 s
// a hop). Whatever the order of a and b in the queue, c on their GPU
// waits for both (4.5 s), and elsewhere for a hop (5.5 s); the critical
// path (3.5 s) sees neither.
Graph GradientsOfOneMatMul(int64_t dx_bytes) {
  Dag dag;
  const OpId f = dag.Op("f", 1, 0, "m");
  const OpId y = dag.Op("y", 0.5);
  const OpId a = dag.Op("a", 1, 0, "m");
  const OpId b = dag.Op("b", 1, 0, "m");
  const OpId c = dag.Op("c", 1);
  const int x = dag.Output(f, 1000);
  dag.Read(f, x, y);
  dag.Read(f, x, b);
  const int dy = dag.Output(y, 1000);
  dag.Read(y, dy, a);
  dag.Read(y, dy, b);
  dag.Edge(a, c, dx_bytes);
  return std::move(dag).Build();
}

TEST(GroupQueuePathBoundTest, AGradientsConsumerWaitsForItsSibling) {
  const Graph graph = GradientsOfOneMatMul(2 * kGB);
  const Cluster cluster = Gpus(2, 1e9);
  const CostModel cost(graph, cluster);
  EXPECT_NEAR(QueuedPath(cost), 4.5, 1e-6);
  EXPECT_NEAR(BruteForceOptimum(cost, /*whole_groups=*/true), 4.5, 1e-6);

  Simulator simulator(cost);
  EXPECT_NEAR(simulator.critical_path_bound(), 3.5, 1e-6);
  EXPECT_NEAR(simulator.queued_path_whole_groups_bound(), 4.5, 1e-6);
  const SimResult kept = *simulator.Simulate({0, 0, 0, 0, 0});
  EXPECT_NEAR(kept.step_time, 4.5, 1e-6);
  const StepLowerBound bound = ProblemLowerBound(kept.bounds);
  EXPECT_EQ(bound.binding, kQueuedPathBoundName);
  EXPECT_TRUE(ProvenOptimal(kept.step_time, bound));
  // b apart from its group: the bound is not this placement's, nor any
  // placement's (AnyPlacementLowerBound).
  const SimResult split = *simulator.Simulate({0, 0, 0, 1, 0});
  EXPECT_EQ(split.bounds.queued_path_whole_groups, 0);
  EXPECT_LT(split.step_time, 4.5);
  EXPECT_NEAR(AnyPlacementLowerBound(kept.bounds).seconds, 3.5, 1e-6);
}

TEST(GroupQueuePathBoundTest, ACheapHopBoundsTheWait) {
  // dX of 1 MB: c on the other GPU pays 1 ms instead of b's second.
  const Graph graph = GradientsOfOneMatMul(1'000'000);
  const Cluster cluster = Gpus(2, 1e9);
  const CostModel cost(graph, cluster);
  EXPECT_NEAR(QueuedPath(cost), 3.501, 1e-6);
  EXPECT_LE(QueuedPath(cost), BruteForceOptimum(cost, true) * (1 + 1e-9));
}

TEST(GroupQueuePathBoundTest, ASiblingReadyFirstStaysAheadOfTheConsumer) {
  // a reads y's tensor and u's, b y's alone: b joins the queue when y's
  // tensor arrives, a then or later, so c on their GPU still starts after
  // both (3.5 s), and elsewhere after a hop of a's 2 GB. Only y's path
  // bounds the arrival (a may wait for u after it), and the bound is the
  // optimum.
  Dag dag;
  const OpId y = dag.Op("y", 0.5);
  const OpId u = dag.Op("u", 0.2);
  const OpId a = dag.Op("a", 1, 0, "m");
  const OpId b = dag.Op("b", 1, 0, "m");
  const OpId c = dag.Op("c", 1);
  const int t = dag.Output(y, 1000);
  dag.Read(y, t, a);
  dag.Read(y, t, b);
  dag.Edge(u, a, 1000);
  dag.Edge(a, c, 2 * kGB);
  const Graph graph = std::move(dag).Build();
  const Cluster cluster = Gpus(2, 1e9);
  const CostModel cost(graph, cluster);
  EXPECT_NEAR(Simulator(cost).critical_path_bound(), 2.5, 1e-6);
  EXPECT_NEAR(QueuedPath(cost), 3.5, 1e-6);
  EXPECT_NEAR(BruteForceOptimum(cost, /*whole_groups=*/true), 3.5, 1e-6);
}

TEST(GroupQueuePathBoundTest, TwoSlotsRunTheSiblingsTogether) {
  // One CPU of two slots: a and b run side by side, c waits for a alone.
  ClusterBuilder b("cpu");
  // 1e12 FLOP/s a slot: the ops' times as on a GPU.
  Device cpu = TestDevice("cpu", DeviceKind::kCpu, 2e12, 1e15, 10 * kGB);
  cpu.compute_slots = 2;
  b.AddDevice(cpu);
  const Cluster cluster = *std::move(b).Build();
  const Graph graph = GradientsOfOneMatMul(2 * kGB);
  const CostModel cost(graph, cluster);
  const double path = Simulator(cost).critical_path_bound();
  EXPECT_GT(path, 0);
  EXPECT_NEAR(QueuedPath(cost), path, 1e-9);
  EXPECT_NEAR(BruteForceOptimum(cost, /*whole_groups=*/true), path, 1e-6);
}

TEST(GroupQueuePathBoundTest, IsTheCriticalPathWithoutGroups) {
  Dag dag;
  const OpId y = dag.Op("y", 0.5);
  const OpId a = dag.Op("a", 1);
  const OpId b = dag.Op("b", 2);
  const int t = dag.Output(y, 1000);
  dag.Read(y, t, a);
  dag.Read(y, t, b);
  const Graph graph = std::move(dag).Build();
  const Cluster cluster = Gpus(1);
  const CostModel cost(graph, cluster);
  EXPECT_NEAR(QueuedPath(cost), 2.5, 1e-9);
  EXPECT_NEAR(Simulator(cost).queued_path_whole_groups_bound(), 2.5, 1e-9);
}

// Small random problems on a CPU and one to three GPUs (SmallCluster),
// half of them built around a MatMul and its gradients as above, with ops,
// shared tensors and group members drawn at random around them.
TEST(GroupQueuePathBoundTest, NeverAboveTheBruteForceOptimum) {
  std::mt19937_64 rng(20261130);
  std::uniform_real_distribution<double> unit(0, 1);
  int lifted = 0, tight = 0, solved = 0, windowed = 0;
  for (int trial = 0; trial < 2500; ++trial) {
    Dag dag;
    const bool gradients = trial % 2 == 0;
    const int n = std::uniform_int_distribution<int>(gradients ? 4 : 3, 6)(rng);
    std::vector<OpId> ops;
    std::vector<std::vector<int>> outputs(n);  // Shared outputs per op.
    const auto seconds = [&] { return unit(rng) < 0.2 ? 0 : unit(rng); };
    const auto bytes = [&] {
      return unit(rng) < 0.2 ? 0
                             : static_cast<int64_t>(unit(rng) * (1 << 28)) + 1;
    };
    for (int j = 0; j < n; ++j) {
      std::string group = "g" + std::to_string(j);
      if (gradients && (j == 0 || j == 2 || j == 3)) group = "m";
      if (j > 0 && unit(rng) < 0.3) {
        group = "g" + std::to_string(
                          std::uniform_int_distribution<int>(0, j - 1)(rng));
      }
      ops.push_back(dag.Op("op" + std::to_string(j), seconds(),
                           static_cast<int64_t>(unit(rng) * 0.6 * kGB),
                           unit(rng) < 0.1 ? "" : group));
      outputs[j].push_back(dag.Output(ops[j], bytes()));
    }
    // Reading op j's shared tensor, or one of its own.
    const auto read = [&](int from, int to) {
      if (unit(rng) < 0.7) {
        dag.Read(ops[from], outputs[from][0], ops[to]);
      } else {
        dag.Edge(ops[from], ops[to], bytes());
      }
    };
    if (gradients) {  // f=0 -> y=1 -> {a=2, b=3}, f -> b.
      read(0, 1);
      dag.Read(ops[1], outputs[1][0], ops[2]);
      dag.Read(ops[1], outputs[1][0], ops[3]);
      dag.Read(ops[0], outputs[0][0], ops[3]);
    }
    for (int j = 1; j < n; ++j) {
      if (gradients && j <= 3) continue;
      const int inputs = std::uniform_int_distribution<int>(1, 2)(rng);
      for (int i = 0; i < inputs; ++i) {
        read(std::uniform_int_distribution<int>(0, j - 1)(rng), j);
      }
    }
    const Graph graph = std::move(dag).Build();
    const int64_t memory =
        std::uniform_int_distribution<int64_t>(kGB / 2, 2 * kGB)(rng);
    const Cluster cluster = SmallCluster(rng, memory);
    const CostModel cost(graph, cluster);
    const double bound = QueuedPath(cost);
    const double optimum = BruteForceOptimum(cost, /*whole_groups=*/true);
    ASSERT_LE(bound, optimum * (1 + 1e-9))
        << "trial " << trial << ": bound " << bound << " > optimum " << optimum;
    const double windows = QueuedWindows(cost);
    ASSERT_LE(windows, optimum * (1 + 1e-9))
        << "trial " << trial << ": windows " << windows << " > optimum "
        << optimum;
    const double path = Simulator(cost).critical_path_bound();
    ASSERT_GE(bound, path * (1 - 1e-12)) << trial;
    if (optimum == kInfinity) continue;
    ++solved;
    if (bound > path * (1 + 1e-9)) ++lifted;
    if (std::max(bound, windows) >= optimum * (1 - 1e-9)) ++tight;
    if (windows > std::max(bound, WorkBound(cost)) * (1 + 1e-9)) ++windowed;
  }
  EXPECT_GT(lifted, 100) << lifted;
  EXPECT_GT(tight, 200) << tight;
  EXPECT_GT(windowed, 0) << windowed;
  std::cout << solved << " problems that fit, " << lifted
            << " above the critical path, " << windowed
            << " with the work in windows above both it and the total work, "
            << tight << " equal to the optimum\n";
}

// Chains of MatMuls with their gradients (a forward and a backward pass
// of 3 to 12 layers, each MatMul's group holding it and its two
// gradients), with random ops around them: every simulated step of a
// placement that keeps the groups whole, on random small clusters, is at
// least the bound, which its result carries.
TEST(GroupQueuePathBoundTest, NoStepOfWholeGroupsBeatsItOnLargerGraphs) {
  std::mt19937_64 rng(20261201);
  std::uniform_real_distribution<double> unit(0, 1);
  int lifted = 0, windowed = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Dag dag;
    std::vector<OpId> ops;
    std::vector<int> shared;  // Each op's tensor that several ops read.
    const auto add = [&](const std::string& name, const std::string& group) {
      ops.push_back(dag.Op(name, unit(rng) < 0.1 ? 0 : unit(rng),
                           static_cast<int64_t>(unit(rng) * 0.2 * kGB), group));
      shared.push_back(dag.Output(
          ops.back(), static_cast<int64_t>(unit(rng) * (1 << 28)) + 1));
      return static_cast<int>(ops.size()) - 1;
    };
    const auto read = [&](int from, int to) {
      dag.Read(ops[from], shared[from], ops[to]);
    };
    const int layers = std::uniform_int_distribution<int>(3, 12)(rng);
    std::vector<int> forward;
    int x = add("input", "");
    for (int i = 0; i < layers; ++i) {
      forward.push_back(add("f" + std::to_string(i), "m" + std::to_string(i)));
      read(x, forward.back());
      x = forward.back();
    }
    int dy = add("loss", "");
    read(x, dy);
    for (int i = layers - 1; i >= 0; --i) {
      const std::string group = "m" + std::to_string(i);
      const int a = add("dx" + std::to_string(i), group);
      const int b = add("dw" + std::to_string(i), group);
      read(dy, a);
      read(dy, b);
      read(i == 0 ? 0 : forward[i - 1], b);
      dy = a;
    }
    const int extra = std::uniform_int_distribution<int>(0, 8)(rng);
    for (int j = 0; j < extra; ++j) {
      const int n = static_cast<int>(ops.size());
      const int from = std::uniform_int_distribution<int>(0, n - 1)(rng);
      const std::string group =
          unit(rng) < 0.5
              ? "m" + std::to_string(std::uniform_int_distribution<int>(
                          0, layers - 1)(rng))
              : "";
      read(from, add("x" + std::to_string(j), group));
    }
    const Graph graph = std::move(dag).Build();
    const Cluster cluster = SmallCluster(rng, 4 * kGB);
    const CostModel cost(graph, cluster);
    Simulator simulator(cost);
    const double path = simulator.queued_path_whole_groups_bound();
    ASSERT_NEAR(path, QueuedPath(cost), 1e-12 * path);
    const double work = simulator.queued_work_whole_groups_bound();
    ASSERT_NEAR(work, std::max(QueuedWindows(cost), WorkBound(cost)),
                1e-12 * work);
    const double bound = std::max(path, work);
    if (path > simulator.critical_path_bound() * (1 + 1e-9)) ++lifted;
    if (work > std::max(path, simulator.total_work_bound()) * (1 + 1e-9)) {
      ++windowed;
    }
    const HintGroups groups = ColocationHintGroups(graph);
    for (int k = 0; k < 10; ++k) {
      std::vector<DeviceId> device(groups.num_groups);
      for (DeviceId& d : device) {
        d = std::uniform_int_distribution<DeviceId>(
            0, cluster.num_devices() - 1)(rng);
      }
      Placement placement(graph.num_ops());
      for (OpId op = 0; op < graph.num_ops(); ++op) {
        placement[op] = device[groups.group[op]];
      }
      const SimResult r = *simulator.Simulate(placement);
      ASSERT_GE(r.step_time, bound * (1 - 1e-9))
          << "trial " << trial << ", placement " << k;
      ASSERT_EQ(r.bounds.queued_path_whole_groups, path);
      ASSERT_EQ(r.bounds.queued_work_whole_groups, work);
      if (work > std::max({path, simulator.total_work_bound(),
                           r.bounds.memory_path_whole_groups}) *
                     (1 + 1e-9)) {
        ASSERT_EQ(WholeGroupsLowerBound(r.bounds).binding,
                  kQueuedWorkBoundName);
      }
    }
  }
  EXPECT_GT(lifted, 200) << lifted;
  EXPECT_GT(windowed, 0) << windowed;
  std::cout << lifted << " of 400 above the critical path, " << windowed
            << " with the work in windows above both it and the total "
               "work\n";
}

}  // namespace
}  // namespace dplace
