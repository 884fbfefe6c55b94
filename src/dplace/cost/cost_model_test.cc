#include "dplace/cost/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dplace {
namespace {

// One CPU (2 slots, 100 GFLOP/s, 10 GB/s) and one GPU (1 TFLOP/s, 100 GB/s,
// 5 us launch), linked at 10 GB/s with 10 us latency.
Cluster TwoDevices() {
  ClusterBuilder b("two");
  b.AddDevice({"cpu", DeviceKind::kCpu, "h", "", 1e11, 1e10, 1 << 30, 0, 2});
  b.AddDevice({"gpu", DeviceKind::kGpu, "h", "", 1e12, 1e11, 1 << 30, 5e-6, 1});
  b.AddLink("cpu", "gpu", 1e10, 1e-5);
  return *std::move(b).Build();
}

Graph Ops() {
  GraphBuilder b("ops");
  OpSpec matmul;  // Compute-bound: 1e10 FLOPs, 1e6 bytes.
  matmul.name = "matmul";
  matmul.type = "MatMul";
  matmul.flops = 1e10;
  matmul.bytes_accessed = 1'000'000;
  b.AddOp(matmul);
  OpSpec add;  // Memory-bound: 1e6 FLOPs, 1e9 bytes.
  add.name = "add";
  add.type = "Add";
  add.flops = 1e6;
  add.bytes_accessed = 1'000'000'000;
  b.AddOp(add);
  OpSpec lookup;
  lookup.name = "lookup";
  lookup.type = "Gather";
  lookup.allowed_devices = DeviceKindSet::Only(DeviceKind::kCpu);
  b.AddOp(lookup);
  return *std::move(b).Build();
}

TEST(CostModelTest, RooflineTakesTheSlowerOfComputeAndMemory) {
  const Graph g = Ops();
  const Cluster c = TwoDevices();
  RooflineOptions o;  // Defaults: dense 0.7 GPU / 0.5 CPU, memory 0.8 / 0.6.
  const CostModel cost(g, c, {}, o);
  // GPU: 1e10 / (1e12 * 0.7) + 5 us.
  EXPECT_DOUBLE_EQ(cost.OpTime(0, 1), 1e10 / 0.7e12 + 5e-6);
  // CPU slot: half the chip, 1e10 / (1e11 * 0.5 / 2).
  EXPECT_DOUBLE_EQ(cost.OpTime(0, 0), 1e10 / 2.5e10);
  // Memory-bound add on the GPU: 1e9 / (1e11 * 0.8) + 5 us.
  EXPECT_DOUBLE_EQ(cost.OpTime(1, 1), 1e9 / 0.8e11 + 5e-6);
  EXPECT_DOUBLE_EQ(cost.FastestOpTime(0), cost.OpTime(0, 1));
}

TEST(CostModelTest, DisallowedDeviceKindCostsInfinity) {
  const Graph g = Ops();
  const Cluster c = TwoDevices();
  const CostModel cost(g, c);
  EXPECT_TRUE(std::isinf(cost.OpTime(2, 1)));
  EXPECT_FALSE(std::isinf(cost.OpTime(2, 0)));
  EXPECT_EQ(cost.FastestOpTime(2), cost.OpTime(2, 0));
}

TEST(CostModelTest, ProfileOverridesRooflineByNameThenType) {
  const Graph g = Ops();
  const Cluster c = TwoDevices();
  ProfileTable p;
  p.by_type["MatMul"][DeviceKind::kGpu] = 0.5;
  p.by_type["Add"][DeviceKind::kGpu] = 0.25;
  p.by_name["add"][DeviceKind::kGpu] = 0.125;
  const CostModel cost(g, c, p);
  EXPECT_EQ(cost.OpTime(0, 1), 0.5);    // By type.
  EXPECT_EQ(cost.OpTime(1, 1), 0.125);  // By name wins.
  const CostModel roofline(g, c);
  EXPECT_EQ(cost.OpTime(0, 0), roofline.OpTime(0, 0)) << "no CPU entry";
}

TEST(CostModelTest, TransferTimeIsLatencyPlusBytesOverBandwidth) {
  const Graph g = Ops();
  const Cluster c = TwoDevices();
  const CostModel cost(g, c);
  EXPECT_DOUBLE_EQ(cost.TransferTime(1'000'000'000, 0, 1), 1e-5 + 0.1);
  EXPECT_EQ(cost.TransferTime(1'000'000'000, 1, 1), 0.0);
  EXPECT_DOUBLE_EQ(cost.RouteLatency(1, 0), 1e-5);
}

}  // namespace
}  // namespace dplace
