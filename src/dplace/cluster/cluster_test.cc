#include "dplace/cluster/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dplace {
namespace {

using ::testing::HasSubstr;

Device Gpu(const std::string& name) {
  return {name, DeviceKind::kGpu, "h", "", 1e12, 1e11, 1 << 30, 0, 1};
}

TEST(ClusterTest, RoutePrefersTheFasterPathOverFewerHops) {
  // a -> c directly at 1 GB/s, or a -> b -> c at 100 GB/s per hop.
  ClusterBuilder b("routes");
  b.AddDevice(Gpu("a"));
  b.AddDevice(Gpu("b"));
  b.AddDevice(Gpu("c"));
  b.AddLink("a", "c", 1e9, 1e-5);
  b.AddLink("a", "b", 1e11, 1e-5);
  b.AddLink("b", "c", 1e11, 1e-5);
  StatusOr<Cluster> c = std::move(b).Build();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_links(), 6) << "three bidirectional links";
  ASSERT_EQ(c->route(0, 2).size(), 2u);
  EXPECT_EQ(c->link(c->route(0, 2)[0]).to, 1);
  EXPECT_EQ(c->link(c->route(0, 2)[1]).to, 2);
  EXPECT_TRUE(c->route(1, 1).empty());
}

TEST(ClusterTest, DirectedLinksGiveAsymmetricRoutes) {
  ClusterBuilder b("ring");
  for (const char* n : {"a", "b", "c"}) b.AddDevice(Gpu(n));
  b.AddLink("a", "b", 1e9, 0, false);
  b.AddLink("b", "c", 1e9, 0, false);
  b.AddLink("c", "a", 1e9, 0, false);
  StatusOr<Cluster> c = std::move(b).Build();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->route(0, 1).size(), 1u);
  EXPECT_EQ(c->route(1, 0).size(), 2u) << "b -> c -> a";
}

TEST(ClusterTest, RejectsUnreachableDevicesAndBadFigures) {
  {
    ClusterBuilder b("island");
    b.AddDevice(Gpu("a"));
    b.AddDevice(Gpu("b"));
    StatusOr<Cluster> c = std::move(b).Build();
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(),
                HasSubstr("no route from device \"a\" to \"b\""));
  }
  {
    ClusterBuilder b("bad");
    b.AddDevice(Gpu("a"));
    b.AddDevice(Gpu("b"));
    b.AddLink("a", "x", 1e9, 0);
    StatusOr<Cluster> c = std::move(b).Build();
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(), HasSubstr("unknown device \"x\""));
  }
  {
    ClusterBuilder b("bad");
    Device d = Gpu("a");
    d.memory_bytes = 0;
    b.AddDevice(d);
    StatusOr<Cluster> c = std::move(b).Build();
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(),
                HasSubstr("device \"a\": memory_bytes must be > 0"));
  }
}

TEST(ClusterTest, PapersPresetsHaveTheirDevices) {
  struct Expected {
    const char* name;
    int gpus;
    double gpu_flops;
    int64_t gpu_memory;
  };
  for (const Expected& e : {
           Expected{"k80x2", 2, 4.37e12, int64_t{11} << 30},
           Expected{"k80x4", 4, 4.37e12, int64_t{11} << 30},
           Expected{"k80x8", 8, 4.37e12, int64_t{11} << 30},
           Expected{"k40x2", 2, 4.29e12, 12'000'000'000},
           Expected{"k40x4", 4, 4.29e12, 12'000'000'000},
           Expected{"k40x8", 8, 4.29e12, 12'000'000'000},
           Expected{"p100x4", 4, 9.3e12, 16'000'000'000},
       }) {
    SCOPED_TRACE(e.name);
    StatusOr<Cluster> c = MakeClusterPreset(e.name);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->DevicesOfKind(DeviceKind::kCpu).size(), 1u);
    ASSERT_EQ(static_cast<int>(c->DevicesOfKind(DeviceKind::kGpu).size()),
              e.gpus);
    const Device& gpu = c->device(c->DevicesOfKind(DeviceKind::kGpu)[0]);
    EXPECT_EQ(gpu.peak_flops, e.gpu_flops);
    EXPECT_EQ(gpu.memory_bytes, e.gpu_memory);
    // PCIe 3.0: every GPU one hop from the CPU and from every other GPU.
    for (DeviceId a = 0; a < c->num_devices(); ++a) {
      for (DeviceId b = 0; b < c->num_devices(); ++b) {
        if (a != b) {
          EXPECT_EQ(c->route(a, b).size(), 1u);
        }
      }
    }
    EXPECT_EQ(c->link(0).bandwidth, 12e9);
  }
}

TEST(ClusterTest, MultiHostPresetRoutesAcrossRailsThroughNvlink) {
  StatusOr<Cluster> c = MakeClusterPreset("h100x8x2");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_devices(), 18);
  const DeviceId h0g0 = *c->FindDevice("h0/gpu:0");
  const DeviceId h1g0 = *c->FindDevice("h1/gpu:0");
  const DeviceId h1g3 = *c->FindDevice("h1/gpu:3");
  // Same rail: one InfiniBand hop.
  ASSERT_EQ(c->route(h0g0, h1g0).size(), 1u);
  EXPECT_EQ(c->link(c->route(h0g0, h1g0)[0]).bandwidth, 50e9);
  // Other rail: NVLink to the right GPU, then its rail (or the reverse).
  const Span<LinkId> route = c->route(h0g0, h1g3);
  ASSERT_EQ(route.size(), 2u);
  EXPECT_EQ(c->link(route[0]).bandwidth + c->link(route[1]).bandwidth,
            450e9 + 50e9);
}

TEST(ClusterTest, UnknownPresetListsTheKnownOnes) {
  StatusOr<Cluster> c = MakeClusterPreset("k90x4");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("unknown cluster preset \"k90x4\""));
  EXPECT_THAT(c.status().message(), HasSubstr("k80x4"));
}

}  // namespace
}  // namespace dplace
