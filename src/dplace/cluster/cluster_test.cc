#include "dplace/cluster/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

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

// Routes are shortest paths whether the cluster keeps its sources' trees
// (up to kRouteTreeDevices devices) or searches for each route (beyond):
// every route of a directed ring with random chords is a path of the least
// time for a 1 MiB tensor (Floyd-Warshall's; which of two paths of equal
// time in reals wins is up to rounding, so hops are not compared).
TEST(ClusterTest, RoutesAreShortestPathsWithOrWithoutKeptTrees) {
  for (int n : {Cluster::kRouteTreeDevices, Cluster::kRouteTreeDevices + 16}) {
    ClusterBuilder b("chords");
    auto name = [](int i) { return "gpu:" + std::to_string(i); };
    for (int i = 0; i < n; ++i) b.AddDevice(Gpu(name(i)));
    uint64_t state = 12345;
    auto next = [&] {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return state >> 33;
    };
    for (int i = 0; i < n; ++i) {
      b.AddLink(name(i), name((i + 1) % n), 1e9 * (1 + next() % 4), 1e-6,
                /*bidirectional=*/false);
      int chord = static_cast<int>(next() % n);
      if (chord == i) chord = (i + 2) % n;
      b.AddLink(name(i), name(chord), 1e9 * (1 + next() % 4),
                1e-6 * (next() % 3), /*bidirectional=*/false);
    }
    StatusOr<Cluster> c = std::move(b).Build();
    ASSERT_TRUE(c.ok()) << c.status().message();
    // Least time between every pair, by Floyd-Warshall.
    constexpr double kProbe = 1 << 20;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> best(n * n, inf);
    for (int i = 0; i < n; ++i) best[i * n + i] = 0;
    for (LinkId l = 0; l < c->num_links(); ++l) {
      const Link& k = c->link(l);
      best[k.from * n + k.to] =
          std::min(best[k.from * n + k.to],
                   k.hand_off + k.latency + kProbe / k.bandwidth);
    }
    for (int m = 0; m < n; ++m) {
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          best[i * n + j] =
              std::min(best[i * n + j], best[i * n + m] + best[m * n + j]);
        }
      }
    }
    for (DeviceId s = 0; s < n; ++s) {
      for (DeviceId t = 0; t < n; ++t) {
        const Route route = c->route(s, t);
        double time = 0;
        DeviceId at = s;
        for (LinkId l : route) {
          ASSERT_EQ(c->link(l).from, at);
          at = c->link(l).to;
          time += c->link(l).hand_off + c->link(l).latency +
                  kProbe / c->link(l).bandwidth;
        }
        ASSERT_EQ(at, t);
        EXPECT_NEAR(time, best[s * n + t], 1e-12) << s << " " << t;
      }
    }
  }
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
  const Route route = c->route(h0g0, h1g3);
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
