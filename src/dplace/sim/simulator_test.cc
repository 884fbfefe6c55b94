// Hand-computed cases. Devices run 1e9 FLOP/s with no launch overhead and
// all efficiencies 1, so an op of k GFLOPs takes k seconds; links move 1e9
// bytes/s after 1 ms latency, so 1e8 bytes take 0.101 s per hop.
#include "dplace/sim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dplace {
namespace {

using ::testing::HasSubstr;

constexpr double kGiga = 1e9;
constexpr double kLatency = 1e-3;
constexpr int64_t kTensor = 100'000'000;  // 0.1 s + latency on a link.
constexpr double kHop = kLatency + 0.1;

RooflineOptions Ideal() {
  RooflineOptions o;
  o.dense_compute_efficiency = {1, 1};
  o.other_compute_efficiency = {1, 1};
  o.memory_efficiency = {1, 1};
  return o;
}

Device TestDevice(const std::string& name, int slots = 1,
                  int64_t memory = int64_t{100} << 30) {
  Device d;
  d.name = name;
  d.kind = DeviceKind::kGpu;
  d.peak_flops = kGiga * slots;
  d.memory_bandwidth = 1e15;  // Never the bottleneck here.
  d.memory_bytes = memory;
  d.compute_slots = slots;
  return d;
}

// Devices d0..d{n-1}; `line` links only neighbours (d0-d1-d2), otherwise
// every pair is linked.
Cluster TestCluster(int n, bool line = false,
                    int64_t memory = int64_t{100} << 30,
                    Copier copier = Copier::kLink) {
  ClusterBuilder b("test");
  for (int i = 0; i < n; ++i)
    b.AddDevice(TestDevice("d" + std::to_string(i), 1, memory));
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (!line || j == i + 1) {
        b.AddLink("d" + std::to_string(i), "d" + std::to_string(j), kGiga,
                  kLatency, /*bidirectional=*/true, copier);
      }
    }
  }
  return *std::move(b).Build();
}

OpSpec Op(const std::string& name, double gflops, int64_t out_bytes = kTensor) {
  OpSpec s;
  s.name = name;
  s.type = "MatMul";
  s.flops = gflops * kGiga;
  s.outputs.push_back({{}, DataType::kFloat32, out_bytes});
  return s;
}

// The transfers of a run recorded with a timeline, in order.
std::vector<TimelineEvent> Transfers(const SimResult& r) {
  std::vector<TimelineEvent> transfers;
  for (const TimelineEvent& e : r.timeline) {
    if (e.kind == TimelineEvent::Kind::kTransfer) transfers.push_back(e);
  }
  return transfers;
}

// Simulates `graph` on `cluster` with the ideal roofline.
SimResult SimulateIdeal(const Graph& graph, const Cluster& cluster,
                        const Placement& placement, bool timeline = false) {
  const CostModel cost(graph, cluster, {}, Ideal());
  Simulator sim(cost);
  SimOptions options;
  options.record_timeline = timeline;
  StatusOr<SimResult> r = sim.Simulate(placement, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *std::move(r) : SimResult{};
}

// a(1 s) -> b(2 s) -> c(3 s).
Graph Chain() {
  GraphBuilder b("chain");
  const OpId a = b.AddOp(Op("a", 1));
  const OpId bb = b.AddOp(Op("b", 2));
  const OpId c = b.AddOp(Op("c", 3));
  b.AddEdge(a, 0, bb);
  b.AddEdge(bb, 0, c);
  return *std::move(b).Build();
}

TEST(SimulatorTest, ChainOnOneDeviceTakesTheSumOfItsOps) {
  const Graph g = Chain();
  const SimResult r = SimulateIdeal(g, TestCluster(2), {0, 0, 0});
  EXPECT_DOUBLE_EQ(r.step_time, 6.0);
  EXPECT_TRUE(r.feasible);
  EXPECT_DOUBLE_EQ(r.device_busy_seconds[0], 6.0);
  EXPECT_DOUBLE_EQ(r.device_busy_seconds[1], 0.0);
  EXPECT_EQ(r.link_bytes[0] + r.link_bytes[1], 0);
}

TEST(SimulatorTest, ChainSplitOverTwoDevicesPaysTheTransfer) {
  const Graph g = Chain();
  const SimResult r = SimulateIdeal(g, TestCluster(2), {0, 1, 1});
  EXPECT_DOUBLE_EQ(r.step_time, 1 + kHop + 2 + 3);
  EXPECT_DOUBLE_EQ(r.device_busy_seconds[0], 1.0);
  EXPECT_DOUBLE_EQ(r.device_busy_seconds[1], 5.0);
  // The placed critical path is exact for a chain.
  EXPECT_DOUBLE_EQ(r.bounds.placed_critical_path, r.step_time);
}

TEST(SimulatorTest, BoundsOnlyWhenAskedTheProblemsTheSameEitherWay) {
  const Graph g = Chain();
  const Cluster c = TestCluster(2);
  const CostModel cost(g, c, {}, Ideal());
  Simulator sim(cost);
  SimOptions without;
  without.compute_bounds = false;
  const SimResult r = *sim.Simulate({0, 1, 1}, without);
  EXPECT_DOUBLE_EQ(r.step_time, 1 + kHop + 2 + 3);
  EXPECT_EQ(r.bounds.critical_path, 0);
  EXPECT_EQ(r.bounds.total_work, 0);
  EXPECT_EQ(r.bounds.memory_path, 0);
  EXPECT_EQ(r.bounds.placed_critical_path, 0);
  // Asked for after a run without them, and in a run, they agree.
  EXPECT_DOUBLE_EQ(sim.critical_path_bound(), 6.0);
  const SimResult with = *sim.Simulate({0, 1, 1});
  EXPECT_DOUBLE_EQ(with.bounds.critical_path, 6.0);
  EXPECT_DOUBLE_EQ(with.bounds.total_work, sim.total_work_bound());
  EXPECT_DOUBLE_EQ(with.bounds.memory_path, sim.memory_path_bound());
  EXPECT_DOUBLE_EQ(with.bounds.placed_critical_path, with.step_time);
}

TEST(SimulatorTest, ParallelBranchesOverlapOnTwoDevices) {
  GraphBuilder b("branches");
  b.AddOp(Op("x", 2));
  b.AddOp(Op("y", 2));
  const Graph g = *std::move(b).Build();
  EXPECT_DOUBLE_EQ(SimulateIdeal(g, TestCluster(2), {0, 1}).step_time, 2.0);
  EXPECT_DOUBLE_EQ(SimulateIdeal(g, TestCluster(2), {0, 0}).step_time, 4.0);
}

TEST(SimulatorTest, TensorUsedByThreeOpsOnAnotherDeviceIsSentOnce) {
  GraphBuilder b("fanout");
  const OpId a = b.AddOp(Op("a", 1));
  for (const char* name : {"b", "c", "d"}) {
    b.AddEdge(a, 0, b.AddOp(Op(name, 1)));
  }
  const Graph g = *std::move(b).Build();
  const Cluster c = TestCluster(2);
  const SimResult r = SimulateIdeal(g, c, {0, 1, 1, 1});
  EXPECT_DOUBLE_EQ(r.step_time, 1 + kHop + 3);
  const LinkId link = c.route(0, 1)[0];
  EXPECT_EQ(r.link_bytes[link], kTensor);
  // The received copy lives on d1 beside the three outputs made there (at
  // most two at once: the copy, the running op's output, and the previous
  // ones freed since nothing consumes them).
  EXPECT_EQ(r.device_peak_bytes[1], 2 * kTensor);
}

TEST(SimulatorTest, MultiHopRoutePaysEveryHop) {
  const Graph g = Chain();
  const Cluster c = TestCluster(3, /*line=*/true);
  ASSERT_EQ(c.route(0, 2).size(), 2u);
  const SimResult r = SimulateIdeal(g, c, {0, 2, 2});
  EXPECT_DOUBLE_EQ(r.step_time, 1 + 2 * kHop + 2 + 3);
  for (LinkId l : c.route(0, 2)) EXPECT_EQ(r.link_bytes[l], kTensor);
  // The intermediate device computes nothing.
  EXPECT_EQ(r.device_op_count[1], 0);
}

TEST(SimulatorTest, TransfersOnOneLinkAreSerialized) {
  // a makes two 1 GB outputs (1.001 s each on the link) for b and c on d1.
  GraphBuilder b("contention");
  OpSpec a = Op("a", 1, kGiga);
  a.outputs.push_back({{}, DataType::kFloat32, static_cast<int64_t>(kGiga)});
  const OpId ia = b.AddOp(a);
  b.AddEdge(ia, 0, b.AddOp(Op("b", 1)));
  b.AddEdge(ia, 1, b.AddOp(Op("c", 1)));
  const Graph g = *std::move(b).Build();
  const SimResult r = SimulateIdeal(g, TestCluster(2), {0, 1, 1});
  // b: arrives 2.001, runs to 3.001; c: arrives 3.002, runs to 4.002.
  EXPECT_DOUBLE_EQ(r.step_time, 1 + 2 * (1 + kLatency) + 1);
  EXPECT_DOUBLE_EQ(r.bounds.link_volume, 2 * (1 + kLatency));
}

// a(1 s) on d0 sends to b(1 s) on d1, where c(2 s) runs from the start.
TEST(SimulatorTest, ALinkCopiesBesideComputeTheDestinationCopiesAfterIt) {
  GraphBuilder b("copier");
  const OpId a = b.AddOp(Op("a", 1));
  b.AddEdge(a, 0, b.AddOp(Op("b", 1)));
  b.AddOp(Op("c", 2));
  const Graph g = *std::move(b).Build();
  const Placement p = {0, 1, 1};
  constexpr int64_t kMemory = int64_t{100} << 30;

  // The channel copies during c; b starts when c ends.
  const SimResult by_link = SimulateIdeal(g, TestCluster(2), p);
  EXPECT_DOUBLE_EQ(by_link.step_time, 3.0);

  // d1's own slot copies, after c: b starts at 2 + kHop.
  const Cluster c = TestCluster(2, false, kMemory, Copier::kDestination);
  const SimResult r = SimulateIdeal(g, c, p, /*timeline=*/true);
  EXPECT_DOUBLE_EQ(r.step_time, 3 + kHop);
  EXPECT_EQ(r.link_bytes[c.route(0, 1)[0]], kTensor);
  EXPECT_DOUBLE_EQ(r.device_busy_seconds[1], 3.0) << "ops only";
  // The copy loads d1 (exactly: d1 never idles) and no channel.
  EXPECT_DOUBLE_EQ(r.bounds.device_load, 3 + kHop);
  EXPECT_DOUBLE_EQ(r.bounds.link_volume, 0.0);
  const std::vector<TimelineEvent> transfers = Transfers(r);
  ASSERT_EQ(transfers.size(), 1u);
  EXPECT_DOUBLE_EQ(transfers[0].start, 2.0);
  EXPECT_DOUBLE_EQ(transfers[0].end, 2 + kHop);
}

// a(0.5 s) on d0 sends to b on d1, where y1, y2, y3 (1 s each) are ready
// from the start: the copy goes ahead of y2 and y3, as the executor's.
TEST(SimulatorTest, ADestinationCopyJumpsTheOpsWaitingThere) {
  GraphBuilder b("copy_first");
  const OpId a = b.AddOp(Op("a", 0.5));
  b.AddEdge(a, 0, b.AddOp(Op("b", 1)));
  for (const char* name : {"y1", "y2", "y3"}) b.AddOp(Op(name, 1));
  const Graph g = *std::move(b).Build();
  const Cluster c =
      TestCluster(2, false, int64_t{100} << 30, Copier::kDestination);
  const SimResult r = SimulateIdeal(g, c, {0, 1, 1, 1, 1}, /*timeline=*/true);
  const std::vector<TimelineEvent> transfers = Transfers(r);
  ASSERT_EQ(transfers.size(), 1u);
  EXPECT_DOUBLE_EQ(transfers[0].start, 1.0) << "after y1, before y2 and y3";
  // b itself joins the back, after y3.
  EXPECT_DOUBLE_EQ(r.step_time, 4 + kHop);
}

// a(0.5 s) on d0 sends to b on d1 over a link with a 2 s hand-off, while
// y1 and y2 (1 s each) run on d1: the hand-off holds no slot, so the copy
// starts when it ends (2.5 s), not behind more of d1's work, and the
// placed critical path counts it.
TEST(SimulatorTest, AHandOffDelaysTheCopyWithoutHoldingASlot) {
  GraphBuilder b("hand_off");
  const OpId a = b.AddOp(Op("a", 0.5));
  b.AddEdge(a, 0, b.AddOp(Op("b", 1)));
  const OpId c = b.AddOp(Op("c", 1));
  b.AddControlEdge(a, c);
  for (const char* name : {"y1", "y2"}) b.AddOp(Op(name, 1));
  const Graph g = *std::move(b).Build();
  ClusterBuilder cb("hand_off");
  for (const char* name : {"d0", "d1"}) cb.AddDevice(TestDevice(name, 1));
  cb.AddLink("d0", "d1", kGiga, kLatency, /*bidirectional=*/true,
             Copier::kDestination, /*hand_off=*/2.0);
  const Cluster cluster = *std::move(cb).Build();
  EXPECT_EQ(cluster.link(0).hand_off, 2.0);
  const SimResult r =
      SimulateIdeal(g, cluster, {0, 1, 1, 1, 1}, /*timeline=*/true);
  const std::vector<TimelineEvent> transfers = Transfers(r);
  ASSERT_EQ(transfers.size(), 1u);
  EXPECT_DOUBLE_EQ(transfers[0].start, 2.5);
  EXPECT_DOUBLE_EQ(transfers[0].end, 2.5 + kHop);
  // c's control edge arrives at 0.5 + 2 + latency, ahead of b; then b.
  EXPECT_DOUBLE_EQ(r.step_time, 2.5 + kHop + 2);
  EXPECT_DOUBLE_EQ(r.bounds.placed_critical_path, 0.5 + 2 + kHop + 1);

  // Only a link whose destination copies has a hand-off.
  ClusterBuilder bad("bad");
  for (const char* name : {"d0", "d1"}) bad.AddDevice(TestDevice(name, 1));
  bad.AddLink("d0", "d1", kGiga, kLatency, true, Copier::kLink, 1.0);
  EXPECT_THAT(std::move(bad).Build().status().message(),
              HasSubstr("hand_off is for links whose destination makes the "
                        "copies"));
}

TEST(SimulatorTest, DestinationCopiesOverTwoHopsWaitForTheMiddleDevice) {
  // The chain a -> b -> c with a on d0 and b, c on d2, routed through d1,
  // where x(3 s) runs from the start: the first hop waits for x.
  GraphBuilder b("two_hops");
  const OpId a = b.AddOp(Op("a", 1));
  const OpId bb = b.AddOp(Op("b", 2));
  b.AddEdge(a, 0, bb);
  b.AddEdge(bb, 0, b.AddOp(Op("c", 3)));
  b.AddOp(Op("x", 3));
  const Graph g = *std::move(b).Build();
  const Placement p = {0, 2, 2, 1};
  constexpr int64_t kMemory = int64_t{100} << 30;
  EXPECT_DOUBLE_EQ(SimulateIdeal(g, TestCluster(3, /*line=*/true), p).step_time,
                   1 + 2 * kHop + 2 + 3);
  const Cluster c =
      TestCluster(3, /*line=*/true, kMemory, Copier::kDestination);
  const SimResult r = SimulateIdeal(g, c, p);
  EXPECT_DOUBLE_EQ(r.step_time, 3 + 2 * kHop + 2 + 3);
  // d2 ran b, c and the second hop.
  EXPECT_DOUBLE_EQ(r.bounds.device_load, 5 + kHop);
}

TEST(SimulatorTest, ControlEdgeAcrossDevicesPaysLatencyOnly) {
  GraphBuilder b("control");
  const OpId a = b.AddOp(Op("a", 1));
  const OpId c = b.AddOp(Op("b", 1));
  b.AddControlEdge(a, c);
  const Graph g = *std::move(b).Build();
  const SimResult r = SimulateIdeal(g, TestCluster(2), {0, 1});
  EXPECT_DOUBLE_EQ(r.step_time, 1 + kLatency + 1);
  EXPECT_EQ(r.link_bytes[0] + r.link_bytes[1], 0);
}

TEST(SimulatorTest, ComputeSlotsRunOpsConcurrentlyAtTheirShareOfPeak) {
  ClusterBuilder cb("slots");
  cb.AddDevice(TestDevice("cpu", /*slots=*/2));
  const Cluster c = *std::move(cb).Build();
  GraphBuilder b("two");
  b.AddOp(Op("x", 1));
  b.AddOp(Op("y", 1));
  b.AddOp(Op("z", 1));
  const Graph g = *std::move(b).Build();
  // Each slot runs 1 GFLOP/s: x and y together, then z.
  const SimResult r = SimulateIdeal(g, c, {0, 0, 0});
  EXPECT_DOUBLE_EQ(r.step_time, 2.0);
  EXPECT_DOUBLE_EQ(r.bounds.device_load, 1.5);
}

TEST(SimulatorTest, MemoryPeakCountsLiveOutputsTemporariesAndWeights) {
  // a -> b -> c on one device; outputs of 100 bytes, b needs 50 bytes of
  // scratch, a holds 1000 bytes of weights. While b runs: weights, a's
  // output, b's output and scratch = 1250.
  GraphBuilder b("memory");
  OpSpec a = Op("a", 1, 100);
  a.persistent_bytes = 1000;
  OpSpec mid = Op("b", 1, 100);
  mid.temporary_bytes = 50;
  const OpId ia = b.AddOp(a);
  const OpId ib = b.AddOp(mid);
  const OpId ic = b.AddOp(Op("c", 1, 100));
  b.AddEdge(ia, 0, ib);
  b.AddEdge(ib, 0, ic);
  const Graph g = *std::move(b).Build();
  const SimResult r = SimulateIdeal(g, TestCluster(1), {0, 0, 0});
  EXPECT_EQ(r.device_peak_bytes[0], 1250);
}

TEST(SimulatorTest, OutOfMemoryNamesTheDeviceAndItsPeak) {
  GraphBuilder b("oom");
  OpSpec big = Op("big", 1);
  big.persistent_bytes = 3'000'000'000;
  b.AddOp(big);
  b.AddOp(Op("small", 1));
  const Graph g = *std::move(b).Build();
  const Cluster c = TestCluster(2, false, /*memory=*/2'000'000'000);
  const SimResult fits = SimulateIdeal(g, c, {1, 0});
  EXPECT_FALSE(fits.feasible) << "3 GB of weights on a 2 GB device";
  EXPECT_EQ(fits.oom_device, 1);
  EXPECT_EQ(fits.device_peak_bytes[1], 3'000'000'000 + kTensor);
  EXPECT_THAT(
      DescribeInfeasibility(c, fits),
      HasSubstr("out of memory on d1: peak 3.10 GB > capacity 2.00 GB"));
  // The step is still simulated to the end.
  EXPECT_DOUBLE_EQ(fits.step_time, 1.0);
}

TEST(SimulatorTest, LaunchOverheadIsAddedToEveryOp) {
  ClusterBuilder cb("overhead");
  Device d = TestDevice("d0");
  d.launch_overhead = 0.25;
  cb.AddDevice(d);
  const Cluster c = *std::move(cb).Build();
  const Graph g = Chain();
  EXPECT_DOUBLE_EQ(SimulateIdeal(g, c, {0, 0, 0}).step_time, 6 + 3 * 0.25);
}

TEST(SimulatorTest, ASharedHostSlowsItsDevicesOnceAPlacementUsesTwo) {
  // d0 and d1 share a host and run 1.5x as long beside each other; d2 is
  // on another host.
  ClusterBuilder cb("shared");
  for (const std::string name : {"d0", "d1", "d2"}) {
    Device d = TestDevice(name);
    d.host = name == "d2" ? "other" : "host0";
    d.shared_host_slowdown = 0.5;
    cb.AddDevice(d);
  }
  cb.AddLink("d0", "d1", kGiga, kLatency, /*bidirectional=*/true);
  cb.AddLink("d0", "d2", kGiga, kLatency, /*bidirectional=*/true);
  cb.AddLink("d1", "d2", kGiga, kLatency, /*bidirectional=*/true);
  const Cluster c = *std::move(cb).Build();
  const Graph g = Chain();
  // One device of the host: the ops as they are.
  EXPECT_DOUBLE_EQ(SimulateIdeal(g, c, {0, 0, 0}).step_time, 6.0);
  // Two: every op of both 1.5x.
  const SimResult both = SimulateIdeal(g, c, {0, 1, 1});
  EXPECT_DOUBLE_EQ(both.step_time, 1.5 * 1 + kHop + 1.5 * 5);
  EXPECT_DOUBLE_EQ(both.device_busy_seconds[1], 7.5);
  // A device of another host does not count.
  EXPECT_DOUBLE_EQ(SimulateIdeal(g, c, {0, 2, 2}).step_time, 6 + kHop);
}

TEST(SimulatorTest, TimelineHasEveryOpAndHopAndIsDeterministic) {
  const Graph g = Chain();
  const Cluster c = TestCluster(3, /*line=*/true);
  const SimResult r1 = SimulateIdeal(g, c, {0, 2, 0}, /*timeline=*/true);
  const SimResult r2 = SimulateIdeal(g, c, {0, 2, 0}, /*timeline=*/true);
  int compute = 0, transfer = 0;
  for (const TimelineEvent& e : r1.timeline) {
    (e.kind == TimelineEvent::Kind::kCompute ? compute : transfer)++;
    EXPECT_LE(e.end, r1.step_time);
  }
  EXPECT_EQ(compute, 3);
  EXPECT_EQ(transfer, 4);  // a to d2 and b back to d0, two hops each.
  ASSERT_EQ(r1.timeline.size(), r2.timeline.size());
  for (size_t i = 0; i < r1.timeline.size(); ++i) {
    EXPECT_EQ(r1.timeline[i].start, r2.timeline[i].start);
    EXPECT_EQ(r1.timeline[i].id, r2.timeline[i].id);
  }
}

TEST(SimulatorTest, RejectsPlacementOfCpuOnlyOpOnGpu) {
  GraphBuilder b("cpu_only");
  OpSpec s = Op("lookup", 1);
  s.allowed_devices = DeviceKindSet::Only(DeviceKind::kCpu);
  b.AddOp(s);
  const Graph g = *std::move(b).Build();
  const Cluster c = TestCluster(1);
  const CostModel cost(g, c);
  Simulator sim(cost);
  StatusOr<SimResult> r = sim.Simulate({0});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("op \"lookup\" may not run on gpu device \"d0\""));
  EXPECT_FALSE(sim.Simulate({}).ok()) << "wrong size";
  EXPECT_FALSE(sim.Simulate({7}).ok()) << "no such device";
}

}  // namespace
}  // namespace dplace
