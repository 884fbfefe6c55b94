// The placement by module: rows in model order with their shares, the
// device map a user applies, and what next.
#include "dplace/report/module_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dplace/report/device_map.h"
#include "dplace/report/what_next.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

// A chain in = head(...) where the model's modules are named in reverse of
// their op ids, so op order is not model order: "z_last" runs last but its
// ops come first.
Graph Chain() {
  GraphBuilder b("chain");
  auto add = [&b](const std::string& name, const std::string& scope,
                  double flops) {
    OpSpec s;
    s.name = name;
    s.type = "MatMul";
    s.scope = scope;
    s.flops = flops;
    s.persistent_bytes = 1000;
    s.outputs.push_back({{256}, DataType::kFloat32, 0});
    return b.AddOp(s);
  };
  const OpId z = add("z", "z_last/fc", 4e9);
  const OpId a1 = add("a1", "a_first/a_first.0", 1e9);
  const OpId a2 = add("a2", "a_first/a_first.1", 1e9);
  const OpId m = add("m", "middle", 2e9);
  const OpId in = add("in", "", 0);
  b.AddEdge(in, 0, a1);
  b.AddEdge(a1, 0, a2);
  b.AddEdge(a2, 0, m);
  b.AddEdge(m, 0, z);
  return *std::move(b).Build();
}

TEST(ModuleTreeTest, RowsFollowTheModelAndSumTheirChildren) {
  const Graph g = Chain();
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const DeviceId gpu0 = cluster.DevicesOfKind(DeviceKind::kGpu)[0];
  const DeviceId gpu1 = cluster.DevicesOfKind(DeviceKind::kGpu)[1];
  // a_first.1 on the second GPU: a_first is split, its children whole.
  Placement p(g.num_ops(), gpu0);
  p[*g.FindOp("a2")] = gpu1;
  const CostModel cost(g, cluster);
  const std::vector<ModuleRow> rows =
      ModuleRows(g, p, &cost, 0, cluster.num_devices());
  std::vector<std::string> order;
  for (const ModuleRow& r : rows) order.push_back(r.path);
  EXPECT_THAT(order, ::testing::ElementsAre("(model)", "a_first", "a_first.0",
                                            "a_first.1", "middle", "z_last",
                                            "z_last.fc"));
  const ModuleRow& a = rows[1];
  EXPECT_EQ(a.ops, 2);
  EXPECT_EQ(a.device, -1);
  EXPECT_EQ(rows[2].parent, 1);
  EXPECT_EQ(rows[2].device, gpu0);
  EXPECT_DOUBLE_EQ(a.compute_seconds, cost.OpTime(*g.FindOp("a1"), gpu0) +
                                          cost.OpTime(*g.FindOp("a2"), gpu1));
  EXPECT_THAT(DescribeModuleDevices(cluster, a),
              AllOf(HasSubstr("gpu:0 50% time 50% memory"),
                    HasSubstr("gpu:1 50% time 50% memory")));
  // Cut at depth 1, a_first's ops count in it.
  const std::vector<ModuleRow> top = ModuleRows(g, p, &cost, 1, 3);
  EXPECT_EQ(top.size(), 4u);
  EXPECT_THAT(ModuleTable(cluster, top), HasSubstr("a_first"));
}

TEST(ModuleTreeTest, DeviceMapNamesWholeModulesAndSplitOps) {
  const Graph g = Chain();
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const DeviceId gpu0 = cluster.DevicesOfKind(DeviceKind::kGpu)[0];
  const DeviceId gpu1 = cluster.DevicesOfKind(DeviceKind::kGpu)[1];
  Placement p(g.num_ops(), gpu0);
  p[*g.FindOp("a2")] = gpu1;
  p[*g.FindOp("z")] = gpu1;
  const nlohmann::json map =
      nlohmann::json::parse(DeviceMapJson(g, cluster, p));
  EXPECT_EQ(map.at("format"), "dplace.device-map");
  EXPECT_EQ(map.at("hash"), g.hash());
  // The outermost whole modules; a_first is split, so its children.
  EXPECT_EQ(map.at("modules"), nlohmann::json({{"a_first.0", "gpu:0"},
                                               {"a_first.1", "gpu:1"},
                                               {"middle", "gpu:0"},
                                               {"z_last", "gpu:1"}}));
  // The model's own op is in no module.
  EXPECT_EQ(map.at("ops"), nlohmann::json({{"in", "gpu:0"}}));
}

TEST(WhatNextTest, BottleneckNamesTheBusiestDeviceAndTransfers) {
  const Graph g = Chain();
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const DeviceId gpu1 = cluster.DevicesOfKind(DeviceKind::kGpu)[1];
  Placement p(g.num_ops(), cluster.DevicesOfKind(DeviceKind::kGpu)[0]);
  p[*g.FindOp("z")] = gpu1;
  const CostModel cost(g, cluster);
  const SimResult sim = *Simulator(cost).Simulate(p);
  const Bottleneck b = FindBottleneck(cost, sim);
  // gpu:0 runs 4 GFLOPs, gpu:1 the other 4 after waiting for them.
  EXPECT_EQ(b.largest_transfers.size(), 1u);
  EXPECT_EQ(b.largest_transfers[0].bytes, 1024);
  const std::vector<std::string> lines = DescribeBottleneck(cluster, sim, b);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("busiest device: gpu:"));
  EXPECT_THAT(lines[2], HasSubstr("gpu:0 -> gpu:1 1.02 kB"));
}

// x -> y, 1 GFLOP each, and z of `z_flops` beside them (none if 0).
Graph ChainBesideAnOp(double z_flops) {
  GraphBuilder b("beside");
  auto add = [&b](const std::string& name, double flops) {
    OpSpec s;
    s.name = name;
    s.type = "MatMul";
    s.flops = flops;
    s.outputs.push_back({{1 << 20}, DataType::kFloat32, 0});
    return b.AddOp(s);
  };
  const OpId x = add("x", 1e9);
  const OpId y = add("y", 1e9);
  if (z_flops > 0) add("z", z_flops);
  b.AddEdge(x, 0, y);
  return *std::move(b).Build();
}

StepChain ChainOf(const CostModel& cost, const Placement& p,
                  double* step_time) {
  SimOptions options;
  options.record_timeline = true;
  const SimResult sim = *Simulator(cost).Simulate(p, options);
  *step_time = sim.step_time;
  return TraceStepChain(cost, p, sim);
}

TEST(WhatNextTest, TheStepChainQueuesBehindAnOpOnItsDevice) {
  const Graph g = ChainBesideAnOp(2e9);
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const DeviceId gpu0 = cluster.DevicesOfKind(DeviceKind::kGpu)[0];
  const CostModel cost(g, cluster);
  // One GPU's FIFO runs z before y (or before x): the chain x -> y waits
  // z's time, whichever order, and the step is the three ops' sum.
  double step = 0;
  const StepChain chain = ChainOf(cost, Placement(g.num_ops(), gpu0), &step);
  const double tx = cost.OpTime(*g.FindOp("x"), gpu0);
  const double ty = cost.OpTime(*g.FindOp("y"), gpu0);
  const double tz = cost.OpTime(*g.FindOp("z"), gpu0);
  EXPECT_EQ(chain.ops, 2);
  EXPECT_NEAR(chain.compute_seconds, tx + ty, 1e-12);
  EXPECT_NEAR(chain.queued_seconds, tz, 1e-12);
  EXPECT_EQ(chain.queued_ops, 1);
  EXPECT_EQ(chain.transfer_seconds, 0);
  EXPECT_NEAR(step, tx + ty + tz, 1e-12);
  EXPECT_THAT(DescribeStepChain(chain),
              AllOf(HasSubstr("2 ops"), HasSubstr("queued behind other ops"),
                    HasSubstr("(1 ops), 0 s in transfers")));
}

TEST(WhatNextTest, TheStepChainWaitsForATransferAndAddsUpToTheStep) {
  const Graph g = ChainBesideAnOp(0);
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const DeviceId gpu0 = cluster.DevicesOfKind(DeviceKind::kGpu)[0];
  const DeviceId gpu1 = cluster.DevicesOfKind(DeviceKind::kGpu)[1];
  const CostModel cost(g, cluster);
  // y on the other GPU: the chain waits for x's 4 MiB on their route.
  Placement p(g.num_ops(), gpu0);
  p[*g.FindOp("y")] = gpu1;
  double step = 0;
  const StepChain chain = ChainOf(cost, p, &step);
  EXPECT_EQ(chain.ops, 2);
  EXPECT_NEAR(
      chain.compute_seconds,
      cost.OpTime(*g.FindOp("x"), gpu0) + cost.OpTime(*g.FindOp("y"), gpu1),
      1e-12);
  EXPECT_EQ(chain.queued_seconds, 0);
  EXPECT_NEAR(chain.transfer_seconds, cost.TransferTime(4 << 20, gpu0, gpu1),
              1e-12);
  EXPECT_GT(chain.transfer_seconds, 0);
  EXPECT_NEAR(chain.compute_seconds + chain.transfer_seconds, step, 1e-12);
}

// A graph whose activations scale with a batch of 32: 20 ops of 1 GB
// outputs each, all alive at once, and 1 GB of weights.
Graph Wide() {
  GraphBuilder b("wide");
  OpSpec in;
  in.name = "in";
  in.type = "VariableV2";
  in.persistent_bytes = 1'000'000'000;
  in.outputs.push_back({{0}, DataType::kFloat32, 0});
  const OpId source = b.AddOp(in);
  OpSpec sink;
  sink.name = "sink";
  sink.type = "AddN";
  sink.outputs.push_back({{0}, DataType::kFloat32, 0});
  std::vector<OpId> mids;
  for (int i = 0; i < 20; ++i) {
    OpSpec s;
    s.name = "x" + std::to_string(i);
    s.type = "MatMul";
    s.flops = 1e9;
    s.outputs.push_back({{250'000'000}, DataType::kFloat32, 0});
    mids.push_back(b.AddOp(s));
    b.AddEdge(source, 0, mids.back());
  }
  const OpId out = b.AddOp(sink);
  for (OpId m : mids) b.AddEdge(m, 0, out);
  return *std::move(b).Build();
}

// A CPU of `cpu_gb` and two GPUs of `gpu_gb` each.
Cluster SmallCluster(double cpu_gb, double gpu_gb) {
  ClusterBuilder b("small");
  Device cpu;
  cpu.name = "cpu:0";
  cpu.kind = DeviceKind::kCpu;
  cpu.peak_flops = 1e11;
  cpu.memory_bandwidth = 5e10;
  cpu.memory_bytes = static_cast<int64_t>(cpu_gb * 1e9);
  b.AddDevice(cpu);
  for (int i = 0; i < 2; ++i) {
    Device gpu = cpu;
    gpu.name = "gpu:" + std::to_string(i);
    gpu.kind = DeviceKind::kGpu;
    gpu.peak_flops = 1e13;
    gpu.memory_bytes = static_cast<int64_t>(gpu_gb * 1e9);
    b.AddDevice(gpu);
    b.AddLink("cpu:0", gpu.name, 1e10, 1e-5);
  }
  b.AddLink("gpu:0", "gpu:1", 1e10, 1e-5);
  return *std::move(b).Build();
}

TEST(WhatNextTest, FixesToFitAreComputedFromTheModel) {
  const Graph g = Wide();  // 1 GB of weights and 20 GB of activations.
  // Two 8 GB GPUs and a 64 GB CPU: the CPU can take the rest; at batch 32
  // the activations scale to fill 80% of 16 GB at batch 18 (1 + 20 * 18 /
  // 32 = 12.25 <= 12.8 < 1 + 20 * 19 / 32); and a preset whose GPUs hold
  // all 21 GB in 80% of their memory.
  const Cluster cluster = SmallCluster(64, 8);
  const CostModel cost(g, cluster);
  const std::vector<FitFix> fixes = FixesToFit(cost, /*batch=*/32);
  ASSERT_EQ(fixes.size(), 3u);
  EXPECT_THAT(fixes[0].change, HasSubstr("use_cpu=true"));
  EXPECT_THAT(fixes[0].reason, HasSubstr("peaks at 21.00 GB"));
  EXPECT_EQ(fixes[1].change, "--batch 18");
  EXPECT_THAT(fixes[2].change, HasSubstr("--cluster "));
  const Cluster preset = *MakeClusterPreset(fixes[2].change.substr(10));
  int64_t gpus = 0;
  for (const Device& d : preset.devices()) {
    if (d.kind == DeviceKind::kGpu) gpus += d.memory_bytes;
  }
  EXPECT_GE(kFitShare * static_cast<double>(gpus), 21e9);
  // A CPU too small to take the rest: no spilling suggested.
  const Cluster small_cpu = SmallCluster(4, 8);
  const CostModel no_room(g, small_cpu);
  for (const FitFix& f : FixesToFit(no_room, 32)) {
    EXPECT_THAT(f.change, ::testing::Not(HasSubstr("use_cpu")));
  }
  // Without a known batch, no batch is suggested.
  for (const FitFix& f : FixesToFit(cost, 0)) {
    EXPECT_THAT(f.change, ::testing::Not(HasSubstr("--batch")));
  }
}

}  // namespace
}  // namespace dplace
