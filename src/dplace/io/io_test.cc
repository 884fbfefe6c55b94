// Tests of the file formats: cluster, placement and profile JSON (round
// trips and error messages) and the Chrome-trace export (graph JSON in
// graph_json_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph.h"
#include "dplace/io/chrome_trace.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/placement_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/small_graph.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_graphs::MakeSmallGraph;
using json = nlohmann::json;

// ------------------------------------------------------------- cluster JSON

TEST(ClusterJsonTest, EveryPresetRoundTrips) {
  const std::vector<std::string> names = ClusterPresetNames();
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    StatusOr<Cluster> preset = MakeClusterPreset(name);
    ASSERT_TRUE(preset.ok()) << preset.status().message();
    const Cluster& a = *preset;
    StatusOr<Cluster> parsed =
        ParseClusterJson(ClusterToJson(a), name + ".json");
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    const Cluster& b = *parsed;
    EXPECT_EQ(a.name(), b.name());
    ASSERT_EQ(a.num_devices(), b.num_devices());
    ASSERT_EQ(a.num_links(), b.num_links());
    for (DeviceId d = 0; d < a.num_devices(); ++d) {
      const Device& x = a.device(d);
      const Device& y = b.device(d);
      EXPECT_EQ(x.name, y.name);
      EXPECT_EQ(x.kind, y.kind);
      EXPECT_EQ(x.host, y.host);
      EXPECT_EQ(x.model, y.model);
      EXPECT_EQ(x.peak_flops, y.peak_flops);
      EXPECT_EQ(x.memory_bandwidth, y.memory_bandwidth);
      EXPECT_EQ(x.memory_bytes, y.memory_bytes);
      EXPECT_EQ(x.launch_overhead, y.launch_overhead);
      EXPECT_EQ(x.compute_slots, y.compute_slots);
      EXPECT_EQ(x.shared_host_slowdown, y.shared_host_slowdown);
    }
    for (DeviceId s = 0; s < a.num_devices(); ++s) {
      for (DeviceId t = 0; t < a.num_devices(); ++t) {
        const Route ra = a.route(s, t);
        const Route rb = b.route(s, t);
        ASSERT_EQ(ra.size(), rb.size())
            << a.device(s).name << " -> " << a.device(t).name;
        for (size_t i = 0; i < ra.size(); ++i) {
          const Link& la = a.link(ra[i]);
          const Link& lb = b.link(rb[i]);
          EXPECT_EQ(la.from, lb.from);
          EXPECT_EQ(la.to, lb.to);
          EXPECT_EQ(la.bandwidth, lb.bandwidth);
          EXPECT_EQ(la.latency, lb.latency);
          EXPECT_EQ(la.copier, lb.copier);
          EXPECT_EQ(la.hand_off, lb.hand_off);
        }
      }
    }
    // A fixed point, too.
    EXPECT_EQ(ClusterToJson(b), ClusterToJson(a));
  }
}

TEST(ClusterJsonTest, DefaultsBidirectionalLinksAndFastestRoutes) {
  // a-b is slow; a-c-b is two fast hops, so a 1 MiB tensor goes through c.
  // d is reachable only from c's side: c -> d one way, d -> a one way.
  const std::string text = R"({
    "format": "dplace.cluster", "version": 1, "name": "tiny",
    "devices": [
      {"name": "a", "kind": "cpu", "peak_flops": 1e12,
       "memory_bandwidth": 1e11, "memory_bytes": 1000000000,
       "compute_slots": 4},
      {"name": "b", "kind": "gpu", "peak_flops": 1e13,
       "memory_bandwidth": 1e12, "memory_bytes": 1000000000,
       "host": "h2", "model": "Fancy", "launch_overhead": 5e-6},
      {"name": "c", "kind": "gpu", "peak_flops": 1e13,
       "memory_bandwidth": 1e12, "memory_bytes": 1000000000},
      {"name": "d", "kind": "gpu", "peak_flops": 1e13,
       "memory_bandwidth": 1e12, "memory_bytes": 1000000000}
    ],
    "links": [
      {"from": "a", "to": "b", "bandwidth": 1e6},
      {"from": "a", "to": "c", "bandwidth": 1e10, "latency": 1e-5},
      {"from": "c", "to": "b", "bandwidth": 1e10, "latency": 1e-5},
      {"from": "c", "to": "d", "bandwidth": 1e10, "bidirectional": false},
      {"from": "d", "to": "a", "bandwidth": 1e10, "bidirectional": false}
    ]})";
  StatusOr<Cluster> parsed = ParseClusterJson(text, "tiny.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const Cluster& c = *parsed;
  EXPECT_EQ(c.name(), "tiny");
  ASSERT_EQ(c.num_devices(), 4);
  EXPECT_EQ(c.num_links(), 2 + 2 + 2 + 1 + 1);
  const Device& a = c.device(0);
  EXPECT_EQ(a.kind, DeviceKind::kCpu);
  EXPECT_EQ(a.host, "host0");
  EXPECT_EQ(a.model, "");
  EXPECT_EQ(a.launch_overhead, 0);
  EXPECT_EQ(a.compute_slots, 4);
  const Device& b = c.device(1);
  EXPECT_EQ(b.host, "h2");
  EXPECT_EQ(b.model, "Fancy");
  EXPECT_EQ(b.launch_overhead, 5e-6);
  EXPECT_EQ(b.compute_slots, 1);

  auto hops = [&](const char* from, const char* to) {
    std::vector<std::string> names;
    for (LinkId l : c.route(*c.FindDevice(from), *c.FindDevice(to))) {
      names.push_back(c.device(c.link(l).to).name);
    }
    return names;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(hops("a", "b"), (V{"c", "b"}));
  EXPECT_EQ(hops("b", "a"), (V{"c", "a"}));
  EXPECT_EQ(hops("a", "c"), (V{"c"}));
  EXPECT_EQ(hops("a", "d"), (V{"c", "d"}));
  EXPECT_EQ(hops("d", "a"), (V{"a"}));
  EXPECT_EQ(hops("d", "b"), (V{"a", "c", "b"}));
  EXPECT_TRUE(hops("a", "a").empty());

  // The one-way links stay one-way through a round trip.
  StatusOr<Cluster> again = ParseClusterJson(ClusterToJson(c), "again.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->num_links(), c.num_links());
  EXPECT_EQ(hops("d", "b").size(), again->route(3, 1).size());
}

TEST(ClusterJsonTest, LoadClusterTakesPresetNamesAndJsonPaths) {
  StatusOr<Cluster> preset = LoadCluster("k80x4");
  ASSERT_TRUE(preset.ok()) << preset.status().message();
  EXPECT_EQ(preset->num_devices(), 5);
  StatusOr<Cluster> unknown = LoadCluster("k80x3");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(),
              AllOf(HasSubstr("\"k80x3\""), HasSubstr("k80x4")));
  StatusOr<Cluster> missing = LoadCluster("/nonexistent/dir/c.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(
      missing.status().message(),
      AllOf(StartsWith("/nonexistent/dir/c.json: "), HasSubstr("cannot open")));
}

constexpr char kTwoDevices[] = R"(
      {"name": "cpu:0", "kind": "cpu", "peak_flops": 1e12,
       "memory_bandwidth": 1e11, "memory_bytes": 1000000000},
      {"name": "gpu:0", "kind": "gpu", "peak_flops": 1e13,
       "memory_bandwidth": 1e12, "memory_bytes": 1000000000})";

std::string ClusterError(const std::string& links) {
  const std::string text =
      R"({"format": "dplace.cluster", "version": 1, "name": "c",
          "devices": [)" +
      std::string(kTwoDevices) + R"(], "links": [)" + links + "]}";
  StatusOr<Cluster> c = ParseClusterJson(text, "bad_cluster.json");
  EXPECT_FALSE(c.ok());
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return c.status().message();
}

TEST(ClusterJsonErrorTest, LinkToUnknownDevice) {
  const std::string message = ClusterError(R"(
      {"from": "cpu:0", "to": "gpu:0", "bandwidth": 1e10},
      {"from": "cpu:0", "to": "gpu:9", "bandwidth": 1e10})");
  EXPECT_THAT(message,
              AllOf(StartsWith("bad_cluster.json: "), HasSubstr("links[1].to"),
                    HasSubstr("unknown device \"gpu:9\"")));
}

TEST(ClusterJsonErrorTest, ZeroBandwidth) {
  const std::string message =
      ClusterError(R"({"from": "cpu:0", "to": "gpu:0", "bandwidth": 0})");
  EXPECT_THAT(message, AllOf(StartsWith("bad_cluster.json: "),
                             HasSubstr("links[0].bandwidth"),
                             HasSubstr("expected a number >= 1.0, got 0")));
}

TEST(ClusterJsonErrorTest, NoRouteBetweenDevices) {
  const std::string message = ClusterError(
      R"({"from": "cpu:0", "to": "gpu:0", "bandwidth": 1e10,
          "bidirectional": false})");
  EXPECT_THAT(message, AllOf(StartsWith("bad_cluster.json: "),
                             HasSubstr("no route from device \"gpu:0\" to "
                                       "\"cpu:0\"")));
}

TEST(ClusterJsonTest, CopierDefaultsToTheLinkAndRoundTrips) {
  const std::string text =
      R"({"format": "dplace.cluster", "version": 1, "name": "c",
          "devices": [)" +
      std::string(kTwoDevices) + R"(], "links": [
        {"from": "cpu:0", "to": "gpu:0", "bandwidth": 1e10,
         "bidirectional": false},
        {"from": "gpu:0", "to": "cpu:0", "bandwidth": 1e10,
         "bidirectional": false, "copier": "destination",
         "hand_off": 5e-6}]})";
  StatusOr<Cluster> c = ParseClusterJson(text, "copier.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->link(0).copier, Copier::kLink);
  EXPECT_EQ(c->link(1).copier, Copier::kDestination);
  EXPECT_EQ(c->link(0).hand_off, 0);
  EXPECT_EQ(c->link(1).hand_off, 5e-6);
  // Links differing only in their copier stay two links.
  const std::string written = ClusterToJson(*c);
  StatusOr<Cluster> again = ParseClusterJson(written, "again.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_EQ(again->num_links(), 2);
  EXPECT_EQ(again->link(0).copier, Copier::kLink);
  EXPECT_EQ(again->link(1).copier, Copier::kDestination);
  EXPECT_EQ(again->link(1).hand_off, 5e-6);
  EXPECT_EQ(ClusterToJson(*again), written);
}

TEST(ClusterJsonErrorTest, HandOffOnALinkThatCopiesItself) {
  EXPECT_THAT(ClusterError(R"({"from": "cpu:0", "to": "gpu:0",
                               "bandwidth": 1e10, "hand_off": 1e-6})"),
              AllOf(StartsWith("bad_cluster.json: "),
                    HasSubstr("hand_off is for links whose destination "
                              "makes the copies")));
  EXPECT_THAT(ClusterError(R"({"from": "cpu:0", "to": "gpu:0",
                               "bandwidth": 1e10, "copier": "destination",
                               "hand_off": -1})"),
              HasSubstr("links[0].hand_off"));
}

TEST(ClusterJsonTest, SharedHostSlowdownRoundTripsAndMustNotBeNegative) {
  auto cluster = [](const std::string& slowdown) {
    return R"({"format": "dplace.cluster", "version": 1, "name": "c",
               "devices": [{"name": "cpu:0", "kind": "cpu",
                            "peak_flops": 1e12, "memory_bandwidth": 1e11,
                            "memory_bytes": 1000000000,
                            "shared_host_slowdown": )" +
           slowdown + "}]}";
  };
  StatusOr<Cluster> c = ParseClusterJson(cluster("0.25"), "slow.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->device(0).shared_host_slowdown, 0.25);
  StatusOr<Cluster> again = ParseClusterJson(ClusterToJson(*c), "again.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->device(0).shared_host_slowdown, 0.25);
  // 0 is not written.
  EXPECT_EQ(ClusterToJson(*ParseClusterJson(cluster("0"), "zero.json"))
                .find("shared_host_slowdown"),
            std::string::npos);
  StatusOr<Cluster> bad = ParseClusterJson(cluster("-0.1"), "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              AllOf(StartsWith("bad.json: "),
                    HasSubstr("devices[0].shared_host_slowdown")));
}

TEST(ClusterJsonErrorTest, UnknownCopier) {
  const std::string message = ClusterError(
      R"({"from": "cpu:0", "to": "gpu:0", "bandwidth": 1e10,
          "copier": "dma"})");
  EXPECT_THAT(
      message,
      AllOf(StartsWith("bad_cluster.json: "), HasSubstr("links[0].copier"),
            HasSubstr("expected \"link\" or \"destination\", got "
                      "\"dma\"")));
}

TEST(ClusterJsonErrorTest, BadDeviceKindAndMissingField) {
  StatusOr<Cluster> c = ParseClusterJson(
      R"({"format": "dplace.cluster", "version": 1, "name": "c",
          "devices": [{"name": "x", "kind": "tpu", "peak_flops": 1,
                       "memory_bandwidth": 1, "memory_bytes": 1}]})",
      "kind.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              AllOf(StartsWith("kind.json: "), HasSubstr("devices[0].kind"),
                    HasSubstr("expected \"cpu\" or \"gpu\", got \"tpu\"")));
  c = ParseClusterJson(
      R"({"format": "dplace.cluster", "version": 1, "name": "c",
          "devices": [{"name": "x", "kind": "gpu", "peak_flops": 1,
                       "memory_bytes": 1}]})",
      "missing.json");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              AllOf(StartsWith("missing.json: "),
                    HasSubstr("devices[0].memory_bandwidth: missing")));
}

// ----------------------------------------------------------- placement JSON

// The small graph on k80x2: data on the CPU, the rest split over two GPUs,
// so tensors cross devices.
Placement SmallPlacement(const Graph& g, const Cluster& c) {
  Placement p(g.num_ops(), *c.FindDevice("gpu:0"));
  p[*g.FindOp("input")] = *c.FindDevice("cpu:0");
  p[*g.FindOp("gradients/dense/matmul_grad")] = *c.FindDevice("gpu:1");
  p[*g.FindOp("dense/weights/apply")] = *c.FindDevice("gpu:1");
  return p;
}

class PlacementJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<Cluster> c = MakeClusterPreset("k80x2");
    ASSERT_TRUE(c.ok()) << c.status().message();
    cluster_ = std::move(c).value();
    placement_ = SmallPlacement(graph_, cluster_);
    text_ = PlacementToJson(graph_, cluster_, placement_);
  }

  // The placement document with `edit` applied.
  template <typename Edit>
  std::string Error(Edit edit) {
    json root = json::parse(text_);
    edit(root);
    StatusOr<Placement> p =
        ParsePlacementJson(root.dump(), "bad.placement.json", graph_, cluster_);
    EXPECT_FALSE(p.ok());
    if (p.ok()) return "";
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    return p.status().message();
  }

  const Graph graph_ = MakeSmallGraph();
  Cluster cluster_;
  Placement placement_;
  std::string text_;
};

TEST_F(PlacementJsonTest, RoundTrip) {
  const json root = json::parse(text_);
  EXPECT_EQ(root["format"], "dplace.placement");
  EXPECT_EQ(root["version"], 1);
  EXPECT_EQ(root["graph"], "small");
  EXPECT_EQ(root["graph_hash"], graph_.hash());
  EXPECT_EQ(root["cluster"], "k80x2");
  EXPECT_EQ(root["placement"]["input"], "cpu:0");
  EXPECT_EQ(root["placement"]["dense/weights/apply"], "gpu:1");
  StatusOr<Placement> parsed =
      ParsePlacementJson(text_, "p.json", graph_, cluster_);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, placement_);
}

// An op placed twice: the second device would win silently.
TEST_F(PlacementJsonTest, AnOpPlacedTwiceIsRefused) {
  const std::string key = "\"dense/matmul\": ";
  std::string text = text_;
  const size_t at = text.find(key);
  ASSERT_NE(at, std::string::npos);
  text.insert(at, key + "\"cpu:0\", ");
  StatusOr<Placement> p =
      ParsePlacementJson(text, "twice.placement.json", graph_, cluster_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "twice.placement.json: placement: the key \"dense/matmul\" "
            "appears twice (each key may appear once in an object)");
}

// A key named twice inside an object whose own key is long: the path cuts
// that key at 80 bytes, here inside a two-byte character, which is written
// as U+FFFD (a fuzz finding: the cut once threw from the JSON writer and
// ended the process).
TEST_F(PlacementJsonTest, APathCutInsideACharacterIsStillAMessage) {
  const std::string outer = std::string(79, 'a') + "\xc3\xa9/";
  StatusOr<Placement> p =
      ParsePlacementJson("{\"" + outer + "\": {\"x\": 1, \"x\": 2}}",
                         "cut.json", graph_, cluster_);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(),
              AllOf(HasSubstr("\xef\xbf\xbd"),  // U+FFFD in UTF-8.
                    HasSubstr("the key \"x\" appears twice")));
}

TEST_F(PlacementJsonTest, GraphNameIsInformational) {
  json root = json::parse(text_);
  root.erase("graph");
  StatusOr<Placement> parsed =
      ParsePlacementJson(root.dump(), "p.json", graph_, cluster_);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, placement_);
}

TEST_F(PlacementJsonTest, UnknownDevice) {
  const std::string message =
      Error([](json& r) { r["placement"]["dense/matmul"] = "gpu:7"; });
  EXPECT_THAT(message, AllOf(StartsWith("bad.placement.json: "),
                             HasSubstr("placement[\"dense/matmul\"]"),
                             HasSubstr("unknown device \"gpu:7\""),
                             HasSubstr("\"k80x2\"")));
}

TEST_F(PlacementJsonTest, UnknownOp) {
  const std::string message =
      Error([](json& r) { r["placement"]["ghost"] = "gpu:0"; });
  EXPECT_THAT(message, AllOf(StartsWith("bad.placement.json: "),
                             HasSubstr("placement[\"ghost\"]"),
                             HasSubstr("no op of that name")));
}

TEST_F(PlacementJsonTest, GraphHashMismatch) {
  const std::string message =
      Error([](json& r) { r["graph_hash"] = "0123456789abcdef"; });
  EXPECT_THAT(message,
              AllOf(StartsWith("bad.placement.json: "), HasSubstr("graph_hash"),
                    HasSubstr("0123456789abcdef"), HasSubstr(graph_.hash())));
}

TEST_F(PlacementJsonTest, MissingOp) {
  const std::string message =
      Error([](json& r) { r["placement"].erase("loss"); });
  EXPECT_THAT(message,
              AllOf(StartsWith("bad.placement.json: "), HasSubstr("placement"),
                    HasSubstr("op \"loss\" has no device")));
}

TEST_F(PlacementJsonTest, AnotherCluster) {
  const std::string message = Error([](json& r) { r["cluster"] = "k80x4"; });
  EXPECT_THAT(message,
              AllOf(StartsWith("bad.placement.json: "), HasSubstr("cluster"),
                    HasSubstr("\"k80x4\""), HasSubstr("\"k80x2\"")));
}

TEST_F(PlacementJsonTest, CpuOnlyOpOnAGpu) {
  const std::string message =
      Error([](json& r) { r["placement"]["input"] = "gpu:1"; });
  EXPECT_THAT(message, AllOf(StartsWith("bad.placement.json: "),
                             HasSubstr("placement"), HasSubstr("\"input\""),
                             HasSubstr("may not run on gpu device \"gpu:1\"")));
}

TEST_F(PlacementJsonTest, DeviceThatIsNotAString) {
  const std::string message =
      Error([](json& r) { r["placement"]["loss"] = 1; });
  EXPECT_THAT(message, AllOf(HasSubstr("placement[\"loss\"]"),
                             HasSubstr("expected a device name, got 1")));
}

TEST_F(PlacementJsonTest, WrongFormat) {
  const std::string message =
      Error([](json& r) { r["format"] = "dplace.graph"; });
  EXPECT_THAT(message,
              AllOf(StartsWith("bad.placement.json: "), HasSubstr("format"),
                    HasSubstr("expected \"dplace.placement\", got "
                              "\"dplace.graph\"")));
}

TEST_F(PlacementJsonTest, MissingFormatSaysWhichOneIsExpected) {
  const std::string message = Error([](json& r) { r.erase("format"); });
  EXPECT_THAT(message, AllOf(StartsWith("bad.placement.json: "),
                             HasSubstr("format: missing or empty, expected "
                                       "\"dplace.placement\"")));
}

// ------------------------------------------------------------- profile JSON

TEST(ProfileJsonTest, ParsesTimesAndOverridesTheRoofline) {
  StatusOr<ProfileTable> table = ParseProfileJson(
      R"({"format": "dplace.profile", "version": 1,
          "by_type": {"MatMul": {"gpu": 2e-3, "cpu": 5e-2}},
          "by_name": {"dense/matmul": {"gpu": 1e-3}}})",
      "p.json");
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(table->by_type.at("MatMul").at(DeviceKind::kGpu), 2e-3);
  EXPECT_EQ(table->by_type.at("MatMul").at(DeviceKind::kCpu), 5e-2);
  EXPECT_EQ(table->by_name.at("dense/matmul").size(), 1u);

  const Graph g = MakeSmallGraph();
  StatusOr<Cluster> c = MakeClusterPreset("k80x2");
  ASSERT_TRUE(c.ok());
  const CostModel cost(g, *c, *table);
  const DeviceId gpu = *c->FindDevice("gpu:0");
  const DeviceId cpu = *c->FindDevice("cpu:0");
  // A name entry wins over a type entry; times include launch overhead, so
  // they are used as given.
  EXPECT_EQ(cost.OpTime(*g.FindOp("dense/matmul"), gpu), 1e-3);
  EXPECT_EQ(cost.OpTime(*g.FindOp("gradients/dense/matmul_grad"), gpu), 2e-3);
  EXPECT_EQ(cost.OpTime(*g.FindOp("gradients/dense/matmul_grad"), cpu), 5e-2);
}

TEST(ProfileJsonTest, NegativeTime) {
  StatusOr<ProfileTable> table = ParseProfileJson(
      R"({"format": "dplace.profile", "version": 1,
          "by_type": {"MatMul": {"gpu": -1e-3}}})",
      "bad_profile.json");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(),
              AllOf(StartsWith("bad_profile.json: "),
                    HasSubstr("by_type[\"MatMul\"].gpu"),
                    HasSubstr("expected a number >= 0.0, got -0.001")));
}

TEST(ProfileJsonTest, UnknownDeviceKind) {
  StatusOr<ProfileTable> table = ParseProfileJson(
      R"({"format": "dplace.profile", "version": 1,
          "by_name": {"a": {"tpu": 1e-3}}})",
      "bad_profile.json");
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), AllOf(StartsWith("bad_profile.json: "),
                                              HasSubstr("by_name[\"a\"].tpu"),
                                              HasSubstr("unknown field")));
}

TEST(ProfileJsonTest, WriterRoundTrips) {
  ProfileTable table;
  table.by_type["MatMul"][DeviceKind::kGpu] = 2.0 / 3 * 1e-3;
  table.by_type["MatMul"][DeviceKind::kCpu] = 0.1;
  table.by_name["layer_0/matmul"][DeviceKind::kCpu] = 1e-7 / 3;
  table.by_name["a \"quoted\" name"][DeviceKind::kGpu] = 0;
  const std::string text = ProfileToJson(table);
  EXPECT_THAT(text, HasSubstr("\"format\": \"dplace.profile\""));
  StatusOr<ProfileTable> back = ParseProfileJson(text, "p.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->by_type, table.by_type);
  EXPECT_EQ(back->by_name, table.by_name);
  // An empty table is a valid profile too.
  StatusOr<ProfileTable> empty = ParseProfileJson(ProfileToJson({}), "e.json");
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->empty());
}

// ------------------------------------------------------------- Chrome trace

TEST(ChromeTraceTest, EventsMatchTheTimeline) {
  const Graph g = MakeSmallGraph();
  StatusOr<Cluster> c = MakeClusterPreset("k80x2");
  ASSERT_TRUE(c.ok());
  const Placement placement = SmallPlacement(g, *c);
  const CostModel cost(g, *c);
  Simulator simulator(cost);
  SimOptions options;
  options.record_timeline = true;
  StatusOr<SimResult> result = simulator.Simulate(placement, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_FALSE(result->timeline.empty());

  const json trace = json::parse(ChromeTraceJson(g, *c, *result));
  ASSERT_TRUE(trace.contains("traceEvents"));
  const json& events = trace["traceEvents"];
  ASSERT_TRUE(events.is_array());

  std::vector<const json*> complete;
  std::set<std::string> process_names;
  std::set<std::pair<int, int>> named_threads;
  for (const json& e : events) {
    if (e["ph"] == "X") complete.push_back(&e);
    if (e["ph"] == "M" && e["name"] == "process_name") {
      process_names.insert(e["args"]["name"].get<std::string>());
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      named_threads.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    }
  }
  // One process per device, named after it.
  EXPECT_EQ(process_names.size(), static_cast<size_t>(c->num_devices()));
  for (const Device& d : c->devices()) {
    EXPECT_EQ(process_names.count(d.name + " (" + d.model + ")"), 1u) << d.name;
  }

  // "X" events are the timeline, in order.
  ASSERT_EQ(complete.size(), result->timeline.size());
  std::vector<int> op_events(g.num_ops(), 0);
  int transfers = 0;
  for (size_t i = 0; i < complete.size(); ++i) {
    const json& e = *complete[i];
    const TimelineEvent& t = result->timeline[i];
    SCOPED_TRACE("event " + std::to_string(i));
    EXPECT_NEAR(e["ts"].get<double>(), t.start * 1e6,
                1e-9 * (1 + t.start * 1e6));
    EXPECT_NEAR(e["dur"].get<double>(), (t.end - t.start) * 1e6,
                1e-9 * (1 + t.end * 1e6));
    EXPECT_GE(e["dur"].get<double>(), 0);
    if (t.kind == TimelineEvent::Kind::kCompute) {
      ++op_events[t.id];
      EXPECT_EQ(e["name"], g.op_name(t.id));
      EXPECT_EQ(e["pid"], placement[t.id]);
      EXPECT_EQ(e["cat"], std::string(PhaseName(g.phase(t.id))));
      EXPECT_EQ(e["args"]["type"], g.op_type(t.id));
      const int tid = e["tid"].get<int>();
      EXPECT_GE(tid, 0);
      EXPECT_LT(tid, c->device(placement[t.id]).compute_slots);
      EXPECT_EQ(named_threads.count({placement[t.id], tid}), 1u);
    } else {
      ++transfers;
      const Link& link = c->link(t.lane);
      const OpId producer = g.producer(t.id);
      EXPECT_EQ(e["cat"], "transfer");
      EXPECT_EQ(e["pid"], link.from);
      EXPECT_EQ(e["tid"], 1000 + t.lane);
      EXPECT_EQ(e["name"], g.op_name(producer) + ":" +
                               std::to_string(t.id - g.output(producer, 0)));
      EXPECT_EQ(e["args"]["bytes"], g.tensor_bytes(t.id));
      EXPECT_EQ(named_threads.count({link.from, 1000 + t.lane}), 1u);
    }
  }
  for (OpId op = 0; op < g.num_ops(); ++op) {
    EXPECT_EQ(op_events[op], 1) << g.op_name(op);
  }

  // Every cross-device data edge moves its tensor: input -> matmul crosses
  // cpu:0 -> gpu:0, loss:1 -> grad crosses gpu:0 -> gpu:1.
  std::set<std::string> moved;
  for (const json* e : complete) {
    if ((*e)["cat"] == "transfer")
      moved.insert((*e)["name"].get<std::string>());
  }
  EXPECT_GT(transfers, 0);
  EXPECT_EQ(moved.count("input:0"), 1u);
  EXPECT_EQ(moved.count("input:1"), 1u);
  EXPECT_EQ(moved.count("loss:1"), 1u);
  EXPECT_EQ(moved.count("dense/weights:0"), 0u);  // Same device as matmul.

  // The last event ends at the step time.
  double last_end = 0;
  for (const json* e : complete) {
    last_end = std::max(last_end,
                        ((*e)["ts"].get<double>() + (*e)["dur"].get<double>()));
  }
  EXPECT_NEAR(last_end, result->step_time * 1e6, 1e-6);
}

TEST(ChromeTraceTest, OneDevicePlacementHasNoTransfers) {
  const Graph g = MakeSmallGraph();
  StatusOr<Cluster> c = MakeClusterPreset("k80x2");
  ASSERT_TRUE(c.ok());
  // The same graph with every op allowed everywhere, all on cpu:0.
  json root = json::parse(GraphToJson(g));
  for (json& op : root["ops"]) op.erase("devices");
  StatusOr<Graph> cpu_graph = ParseGraphJson(root.dump(), "cpu.json");
  ASSERT_TRUE(cpu_graph.ok()) << cpu_graph.status().message();
  const Placement placement(cpu_graph->num_ops(), *c->FindDevice("cpu:0"));
  const CostModel cost(*cpu_graph, *c);
  Simulator simulator(cost);
  SimOptions options;
  options.record_timeline = true;
  StatusOr<SimResult> result = simulator.Simulate(placement, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  const json trace = json::parse(ChromeTraceJson(*cpu_graph, *c, *result));
  int compute = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_NE(e["cat"], "transfer");
    EXPECT_EQ(e["pid"], 0);
    ++compute;
  }
  EXPECT_EQ(compute, cpu_graph->num_ops());
}

}  // namespace
}  // namespace dplace
