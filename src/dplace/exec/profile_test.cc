#include "dplace/exec/profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "dplace/io/cluster_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/zoo/model_builder.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

TEST(FitCopyLineTest, RecoversLatencyAndBandwidthOfALine) {
  const std::vector<int64_t> bytes = {4096, 65536, 1 << 20, 16 << 20};
  std::vector<double> seconds;
  for (int64_t b : bytes) seconds.push_back(20e-6 + b / 5e9);
  double latency = 0, bandwidth = 0;
  FitCopyLine(bytes, seconds, &latency, &bandwidth);
  EXPECT_NEAR(latency, 20e-6, 1e-10);
  EXPECT_NEAR(bandwidth, 5e9, 1e3);
}

TEST(FitCopyLineTest, ANegativeInterceptIsRefittedThroughTheOrigin) {
  // Small copies faster than the line through the large ones predicts.
  const std::vector<int64_t> bytes = {1000, 2000, 1000000};
  const std::vector<double> seconds = {1e-9, 2e-9, 1e-4};
  double latency = 1, bandwidth = 0;
  FitCopyLine(bytes, seconds, &latency, &bandwidth);
  EXPECT_EQ(latency, 0);
  EXPECT_GT(bandwidth, 0);
  // Every size takes the same time: no cost per byte to fit.
  FitCopyLine({1000, 2000}, {1e-5, 1e-5}, &latency, &bandwidth);
  EXPECT_GE(latency, 0);
  EXPECT_NEAR(bandwidth, 2000 / 1e-5, 1);
}

std::vector<ExecDevice> TwoCpuDevices() {
  std::vector<ExecDevice> devices(2);
  for (int i = 0; i < 2; ++i) {
    devices[i].name = "cpu:" + std::to_string(i);
    devices[i].index = i;
    devices[i].threads = 1;
    devices[i].memory_bytes = int64_t{1} << 30;
  }
  return devices;
}

TEST(MakeLocalClusterTest, DevicesAndLinksReadBackAsExecDevices) {
  const std::vector<ExecDevice> devices = TwoCpuDevices();
  std::vector<DeviceSpeed> speeds(2, DeviceSpeed{1e10, 5e9, 2e-6});
  CopyFit fit;
  fit.from = 0;
  fit.to = 1;
  fit.latency = 3e-5;
  fit.bandwidth = 4e9;
  fit.hand_off = 6e-6;
  StatusOr<Cluster> c = MakeLocalCluster("local", devices, speeds, {fit});
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->num_devices(), 2);
  EXPECT_EQ(c->device(1).name, "cpu:1");
  EXPECT_EQ(c->device(1).peak_flops, 1e10);
  EXPECT_EQ(c->device(0).memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(c->device(0).compute_slots, 1);
  // One fitted direction stands for both.
  ASSERT_EQ(c->num_links(), 2);
  EXPECT_EQ(c->link(1).bandwidth, 4e9);
  EXPECT_EQ(c->link(1).latency, 3e-5);
  EXPECT_EQ(c->link(1).hand_off, 6e-6);
  // The executor's consumer thread makes every copy.
  EXPECT_EQ(c->link(0).copier, Copier::kDestination);
  EXPECT_EQ(c->link(1).copier, Copier::kDestination);
  // Through JSON and back to the devices it was made of.
  StatusOr<Cluster> back = ParseClusterJson(ClusterToJson(*c), "local.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  StatusOr<std::vector<ExecDevice>> exec = ExecDevicesOfCluster(*back);
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  ASSERT_EQ(exec->size(), 2u);
  EXPECT_EQ((*exec)[1].name, "cpu:1");
  EXPECT_EQ((*exec)[1].index, 1);
  EXPECT_EQ((*exec)[1].memory_bytes, int64_t{1} << 30);

  EXPECT_THAT(MakeLocalCluster("local", devices, speeds, {}).status().message(),
              HasSubstr("no copy fit for cpu:0 -> cpu:1"));
  EXPECT_FALSE(MakeLocalCluster("local", devices, {speeds[0]}, {fit}).ok());
}

TEST(LocalDevicesTest, CpuDevicesShareThreadsAndMemory) {
  LocalClusterOptions options;
  options.cpu_devices = 2;
  options.use_gpus = false;
  const std::vector<ExecDevice> devices = LocalExecDevices(options);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].name, "cpu:0");
  EXPECT_EQ(devices[1].name, "cpu:1");
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(devices[0].threads, std::max(1, hardware / 2));
  const int64_t physical = PhysicalMemoryBytes();
  ASSERT_GT(physical, 0);
  EXPECT_NEAR(static_cast<double>(devices[1].memory_bytes), physical * 0.75 / 2,
              1.0);
}

TEST(ProfileGraphTest, TimesEveryOpAndFeedsTheCostModel) {
  ModelBuilder b("profiled");
  const Tensor a = b.Const("a", {256, 256});
  b.Unary("Relu", b.MatMul(a, b.Const("w", {256, 256})));
  const Graph g = *std::move(b).Build();
  StatusOr<std::unique_ptr<Executor>> exec =
      Executor::Create(g, TwoCpuDevices());
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  StatusOr<ProfileTable> table = ProfileGraph(g, **exec, {});
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(static_cast<int>(table->by_name.size()), g.num_ops());
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const auto& times = table->by_name.at(g.op_name(op));
    EXPECT_EQ(times.count(DeviceKind::kGpu), 0u);
    EXPECT_GE(times.at(DeviceKind::kCpu), 0);
  }
  // A 256^3 product does more work than a 256^2 Relu.
  const OpId matmul = *g.FindOp("MatMul");
  const OpId relu = *g.FindOp("Relu");
  EXPECT_GT(table->by_name.at("MatMul").at(DeviceKind::kCpu),
            table->by_name.at("Relu").at(DeviceKind::kCpu));
  // The written profile is what the cost model uses.
  StatusOr<ProfileTable> back = ParseProfileJson(ProfileToJson(*table), "p");
  ASSERT_TRUE(back.ok());
  std::vector<DeviceSpeed> speeds(2, DeviceSpeed{1e10, 5e9, 2e-6});
  CopyFit fit;
  fit.from = 0;
  fit.to = 1;
  fit.latency = 1e-5;
  fit.bandwidth = 1e9;
  const Cluster c = *MakeLocalCluster("local", TwoCpuDevices(), speeds, {fit});
  const CostModel cost(g, c, *back);
  EXPECT_EQ(cost.OpTime(matmul, 1),
            table->by_name.at("MatMul").at(DeviceKind::kCpu));
  EXPECT_EQ(cost.OpTime(relu, 0),
            table->by_name.at("Relu").at(DeviceKind::kCpu));
}

TEST(BenchmarkCopiesTest, FitsEveryPairWithPositiveFigures) {
  ModelBuilder b("copies");
  b.Const("a", {4});
  const Graph g = *std::move(b).Build();
  StatusOr<std::unique_ptr<Executor>> exec =
      Executor::Create(g, TwoCpuDevices());
  ASSERT_TRUE(exec.ok()) << exec.status().message();
  CopyBenchmarkOptions options;
  options.bytes = {4096, 1 << 20, 4 << 20};
  options.repeats = 3;
  StatusOr<std::vector<CopyFit>> fits = BenchmarkCopies(**exec, options);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  ASSERT_EQ(fits->size(), 1u);
  EXPECT_EQ((*fits)[0].from_name, "cpu:0");
  EXPECT_EQ((*fits)[0].to_name, "cpu:1");
  EXPECT_EQ((*fits)[0].seconds.size(), 3u);
  EXPECT_GE((*fits)[0].latency, 0);
  EXPECT_GT((*fits)[0].bandwidth, 0);
  // Copying 4 MiB takes its consumer longer than 4 KiB.
  EXPECT_GT((*fits)[0].seconds[2], 2 * (*fits)[0].seconds[0]);
  // The hand-off chain timed a lone edge (handing a value to another
  // thread is not free) and left the copy's part of it to the latency.
  EXPECT_GT((*fits)[0].edge_seconds, 0);
  EXPECT_LT((*fits)[0].edge_seconds, 1e-3);
  EXPECT_GE((*fits)[0].hand_off, 0);
  EXPECT_LE((*fits)[0].hand_off, (*fits)[0].edge_seconds);
  EXPECT_THAT(TimeHandOff(TwoCpuDevices(), 0, 1, 1, 3).status().message(),
              HasSubstr("ops >= 2"));
  options.both_directions = true;
  fits = BenchmarkCopies(**exec, options);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->size(), 2u);
  options.bytes.clear();
  EXPECT_FALSE(BenchmarkCopies(**exec, options).ok());
}

TEST(DetectLocalClusterTest, DescribesTheCpuDevicesOfThisMachine) {
  LocalClusterOptions options;
  options.cpu_devices = 2;
  options.use_gpus = false;
  options.matmul_size = 256;
  options.add_elements = 1 << 20;
  options.steps = 1;
  options.copies.bytes = {4096, 1 << 20};
  options.copies.repeats = 2;
  StatusOr<Cluster> c = DetectLocalCluster(options);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->num_devices(), 2);
  for (const Device& d : c->devices()) {
    EXPECT_EQ(d.kind, DeviceKind::kCpu);
    EXPECT_GT(d.peak_flops, 0);
    EXPECT_GT(d.memory_bandwidth, 0);
    EXPECT_GT(d.memory_bytes, 0);
  }
  EXPECT_EQ(c->num_links(), 2);
  EXPECT_TRUE(ExecDevicesOfCluster(*c).ok());
  options.cpu_devices = 0;
  EXPECT_THAT(DetectLocalCluster(options).status().message(),
              HasSubstr("at least one CPU device"));
}

}  // namespace
}  // namespace dplace
