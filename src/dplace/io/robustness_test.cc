// Resource limits and hostile inputs (docs/robustness.md): files over the
// size bound, shapes whose byte counts overflow int64, numbers that would
// wrap, op names the graph format could misread, and a million-op graph.
// Each is refused with a message naming the file, op or field, or handled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/io/graph_json.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/large_clusters.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string WriteTemp(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + name;
  EXPECT_TRUE(WriteTextFile(path, contents).ok());
  return path;
}

OpSpec Op(const std::string& name, int num_outputs) {
  OpSpec op;
  op.name = name;
  op.type = "T";
  op.outputs.resize(num_outputs);
  return op;
}

std::string GraphText(const std::string& ops) {
  return R"({"format": "dplace.graph", "version": 1, "ops": [)" + ops + "]}";
}

TEST(FileLimitsTest, GraphOverTheBoundIsRefusedNamingFileAndBound) {
  const std::string path =
      WriteTemp("big_graph.json", GraphText(R"({"name": "a", "type": "T"})"));
  FileLimits limits;
  limits.max_file_bytes = 40;
  StatusOr<Graph> graph = ReadGraphJson(path, limits);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              AllOf(HasSubstr(path), HasSubstr("limit of 40 bytes")));
  limits.max_file_bytes = 1000;
  EXPECT_TRUE(ReadGraphJson(path, limits).ok());
}

TEST(FileLimitsTest, ClusterOverTheBoundIsRefusedNamingFileAndBound) {
  const std::string path =
      WriteTemp("big_cluster.json", ClusterToJson(*MakeClusterPreset("k80x2")));
  FileLimits limits;
  limits.max_file_bytes = 100;
  StatusOr<Cluster> cluster = LoadCluster(path, limits);
  ASSERT_FALSE(cluster.ok());
  EXPECT_THAT(cluster.status().message(),
              AllOf(HasSubstr(path), HasSubstr("limit of 100 bytes")));
  EXPECT_TRUE(LoadCluster(path).ok());  // The default bound is 1 GiB.
}

TEST(ShapeBytesTest, OverflowIsDetectedNotWrapped) {
  const int64_t big = int64_t{1} << 31;
  EXPECT_EQ(CheckedShapeBytes({big, big}, DataType::kInt8), big * big);
  EXPECT_EQ(CheckedShapeBytes({big, big}, DataType::kFloat32), std::nullopt);
  EXPECT_EQ(CheckedShapeBytes({big, big, big, 0}, DataType::kFloat32), 0);
  EXPECT_EQ(CheckedShapeBytes({3, -1}, DataType::kFloat32), std::nullopt);
  EXPECT_EQ(ShapeBytes({big, big}, DataType::kFloat32), INT64_MAX);
  EXPECT_EQ(ShapeBytes({}, DataType::kFloat64), 8);
}

TEST(ShapeBytesTest, GraphBuilderRefusesAnOverflowingShapeNamingTheOp) {
  GraphBuilder b("g");
  OpSpec op;
  op.name = "huge";
  op.type = "Fill";
  op.outputs = {{{int64_t{1} << 40, int64_t{1} << 40}}};
  b.AddOp(op);
  StatusOr<Graph> graph = std::move(b).Build();
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "op \"huge\" output 0: shape [1099511627776,1099511627776] "
            "float32 has more than 2^63-1 bytes");
}

TEST(ShapeBytesTest, GraphJsonRefusesAnOverflowingShapeNamingThePath) {
  StatusOr<Graph> graph =
      ParseGraphJson(GraphText(R"({"name": "a", "type": "T", "outputs":
                     [{"shape": [4294967296, 4294967296], "dtype": "int64"}]})"),
                     "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "g.json: ops[0].outputs[0].shape: [4294967296,4294967296] int64 "
            "has more than 2^63-1 bytes");
}

TEST(WrapAroundTest, IntegersAboveInt64AreRefused) {
  StatusOr<Graph> graph = ParseGraphJson(GraphText(R"({"name": "a", "type": "T",
                    "persistent_bytes": 18446744073709551615})"),
                                         "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("ops[0].persistent_bytes: expected an integer >= 0"));
}

TEST(WrapAroundTest, OutputIndexAboveIntIsNotAnIndex) {
  StatusOr<Graph> graph =
      ParseGraphJson(GraphText(R"({"name": "a", "type": "T", "outputs": [{}]},
                   {"name": "b", "type": "T", "inputs": ["a:4294967296"]})"),
                     "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "g.json: ops[1].inputs[0]: unknown op \"a:4294967296\"");
}

TEST(WrapAroundTest, NegativeOutputIndexIsAnErrorNotAControlEdge) {
  GraphBuilder b("g");
  const OpId a = b.AddOp(Op("a", 1));
  const OpId c = b.AddOp(Op("c", 0));
  b.AddEdge(a, -1, c);
  StatusOr<Graph> graph = std::move(b).Build();
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("uses output -1"));
}

TEST(WrapAroundTest, ComputeSlotsAreBounded) {
  std::string text = ClusterToJson(*MakeClusterPreset("k80x2"));
  const std::string slots = "\"compute_slots\": 2";
  ASSERT_NE(text.find(slots), std::string::npos);
  text.replace(text.find(slots), slots.size(), "\"compute_slots\": 5000000000");
  StatusOr<Cluster> cluster = ParseClusterJson(text, "c.json");
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(cluster.status().message(),
            "c.json: devices[0].compute_slots: expected at most 4096, got "
            "5000000000");
}

// Found by graph_json_fuzzer: nlohmann throws out_of_range, not
// parse_error, for a number too large for a double; it escaped ParseJson
// and terminated dplace.
TEST(FuzzFindingsTest, NumberTooLargeForADoubleIsMalformedJson) {
  StatusOr<Graph> graph = ParseGraphJson(
      GraphText(R"({"name": "a", "type": "T", "flops": 1e3084})"), "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              AllOf(HasSubstr("g.json: malformed JSON"),
                    HasSubstr("number overflow parsing '1e3084'")));
}

// Found by onnx_import_fuzzer: ONNX strings are bytes, and a name that is
// not UTF-8 made GraphToJson throw. Graphs now refuse such names.
TEST(FuzzFindingsTest, NamesThatAreNotUtf8AreRefused) {
  for (const std::string bad :
       {"a\x98", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80"}) {
    GraphBuilder b("g");
    OpSpec op = Op("ok", 0);
    op.scope = "layer/" + bad;
    b.AddOp(op);
    StatusOr<Graph> graph = std::move(b).Build();
    ASSERT_FALSE(graph.ok());
    EXPECT_THAT(graph.status().message(),
                HasSubstr("op 0: scope is not valid UTF-8 (byte 0x"));
  }
  GraphBuilder b("g");
  b.AddOp(Op("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0));
  EXPECT_TRUE(std::move(b).Build().ok());
}

// Op names that look like "op:index" or a control input survive a write and
// a read, or are refused when the format cannot express them.
TEST(GraphJsonNamesTest, NamesEndingInAnIndexRoundTrip) {
  GraphBuilder b("g");
  const OpId x = b.AddOp(Op("x", 2));
  const OpId x1 = b.AddOp(Op("x:1", 1));
  const OpId y = b.AddOp(Op("y", 0));
  b.AddEdge(x, 1, y);
  b.AddEdge(x1, 0, y);
  b.AddEdge(x, 0, y);
  StatusOr<Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const std::string text = GraphToJson(*graph);
  EXPECT_THAT(text, HasSubstr("\"x:1:0\""));
  StatusOr<Graph> again = ParseGraphJson(text, "g.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->hash(), graph->hash());
}

TEST(GraphJsonNamesTest, NameStartingWithCaretIsRefused) {
  StatusOr<Graph> graph =
      ParseGraphJson(GraphText(R"({"name": "^a", "type": "T"})"), "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("g.json: ops[0].name: an op name may not start with"));
}

// Sums of sizes (docs/robustness.md): a graph whose bytes or FLOPs sum past
// the bounds is refused at load, naming the file, op and field and what is
// allowed, so no memory sum wraps and no placement of it looks feasible.
TEST(SizeSumTest, BytesSummingPastTheBoundAreRefusedNamingOpAndField) {
  // The issue's graph: three ops of 5e18 persistent bytes each wrapped the
  // memory sum to a negative peak and were reported as fitting one GPU.
  StatusOr<Graph> graph = ParseGraphJson(GraphText(R"(
      {"name": "a", "type": "V", "persistent_bytes": 5000000000000000000},
      {"name": "b", "type": "V", "persistent_bytes": 5000000000000000000},
      {"name": "c", "type": "V", "persistent_bytes": 5000000000000000000})"),
                                         "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "g.json: op \"a\": persistent_bytes: the graph's persistent, "
            "temporary and output bytes, summed over its ops, pass 2^60 (1 "
            "EiB) here; dplace accepts at most 2^60");
  // Each op within the bound, their sum past it: the op that crosses it.
  graph = ParseGraphJson(GraphText(R"(
      {"name": "a", "type": "V", "persistent_bytes": 400000000000000000},
      {"name": "b", "type": "V", "temporary_bytes": 400000000000000000},
      {"name": "c", "type": "V", "outputs": [{}, {"bytes": 400000000000000000}]})"),
                         "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              AllOf(HasSubstr("g.json: op \"c\": outputs[1].bytes: "),
                    HasSubstr("at most 2^60")));
  graph = ParseGraphJson(GraphText(R"(
      {"name": "a", "type": "V", "bytes_accessed": 900000000000000000},
      {"name": "b", "type": "V", "bytes_accessed": 900000000000000000})"),
                         "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("g.json: op \"b\": bytes_accessed: "));
}

TEST(SizeSumTest, GraphWithinTheBoundOnOneGpuIsOutOfMemoryNotFeasible) {
  GraphBuilder b("g");
  for (const char* name : {"a", "b", "c"}) {
    OpSpec op = Op(name, 1);
    op.persistent_bytes = kMaxGraphBytes / 4;
    b.AddOp(op);
  }
  StatusOr<Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const CostModel cost(*graph, cluster);
  Simulator simulator(cost);
  StatusOr<SimResult> r =
      simulator.Simulate(SingleDevicePlacement(*graph, cluster, 1));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->feasible);
  EXPECT_EQ(r->device_peak_bytes[1], 3 * (kMaxGraphBytes / 4));
}

TEST(SizeSumTest, FlopsSummingPastTheBoundAreRefused) {
  // The issue's 1e308 printed a 63-digit step time and a garbled table.
  StatusOr<Graph> graph = ParseGraphJson(
      GraphText(R"({"name": "a", "type": "MatMul", "flops": 1e308})"),
      "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "g.json: op \"a\": flops: the graph's FLOPs, summed over its ops, "
            "pass 1e30 here; dplace accepts at most 1e30");
  graph = ParseGraphJson(GraphText(R"(
      {"name": "a", "type": "MatMul", "flops": 6e29},
      {"name": "b", "type": "MatMul", "flops": 6e29})"),
                         "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("op \"b\": flops: "));
  GraphBuilder b("g");
  OpSpec op = Op("inf", 0);
  op.flops = std::numeric_limits<double>::infinity();
  b.AddOp(op);
  EXPECT_FALSE(std::move(b).Build().ok());
}

// A tensor sent from the start of a chain of devices to every other one
// crosses the first link once per destination: 19 x 2^59 bytes pass
// INT64_MAX, and the link's sum saturates instead of wrapping negative.
TEST(SizeSumTest, BytesOverALinkSaturate) {
  constexpr int kDevices = 20;
  ClusterBuilder cb("chain");
  for (int d = 0; d < kDevices; ++d) {
    Device dev;
    dev.name = "gpu:" + std::to_string(d);
    dev.peak_flops = 1e12;
    dev.memory_bandwidth = 1e11;
    dev.memory_bytes = int64_t{1} << 55;
    cb.AddDevice(dev);
    if (d > 0) {
      cb.AddLink("gpu:" + std::to_string(d - 1), dev.name, 1e10, 1e-5);
    }
  }
  const Cluster cluster = *std::move(cb).Build();
  GraphBuilder b("fan-out");
  OpSpec source = Op("source", 1);
  source.outputs[0].bytes = int64_t{1} << 59;
  const OpId s = b.AddOp(source);
  Placement placement = {0};
  for (int d = 1; d < kDevices; ++d) {
    b.AddEdge(s, 0, b.AddOp(Op("use" + std::to_string(d), 0)));
    placement.push_back(d);
  }
  StatusOr<Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const CostModel cost(*graph, cluster);
  Simulator simulator(cost);
  StatusOr<SimResult> r = simulator.Simulate(placement);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const LinkId first = cluster.route(0, 1)[0];
  EXPECT_EQ(r->link_bytes[first], INT64_MAX);
  for (int64_t bytes : r->link_bytes) EXPECT_GE(bytes, 0);
}

TEST(SizeSumTest, ClusterFiguresOutOfRangeAreRefused) {
  const std::string preset = ClusterToJson(*MakeClusterPreset("k80x2"));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = preset;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return ParseClusterJson(text, "c.json");
  };
  StatusOr<Cluster> c = with("\"memory_bytes\": 26000000000",
                             "\"memory_bytes\": 9000000000000000000");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              AllOf(HasSubstr("c.json: device \"cpu:0\": memory_bytes: "),
                    HasSubstr("at most 2^60")));
  c = with("\"latency\": 1e-05", "\"latency\": 1e300");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("latency must be at most 1e+06 s, got 1e+300"));
}

TEST(SizeSumTest, FormatNeverCutsANumberShort) {
  EXPECT_EQ(Format("%.1f", 1e70).size(), 73u);
}

// Caps this process's data (heap and private mappings) at its current size
// plus `bytes`: an allocation past it fails, and std::bad_alloc ends the
// process. For a death test's child. Under AddressSanitizer, whose shadow
// memory counts as data, it caps nothing (the test still runs its body).
void LimitDataGrowth(int64_t bytes) {
#if !defined(__SANITIZE_ADDRESS__)
  std::ifstream status("/proc/self/status");
  std::string line;
  int64_t data_kb = -1;
  while (std::getline(status, line)) {
    if (line.rfind("VmData:", 0) == 0) data_kb = std::stoll(line.substr(7));
  }
  if (data_kb < 0) return;
  rlimit limit;
  limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(data_kb * 1024 + bytes);
  setrlimit(RLIMIT_DATA, &limit);
#else
  (void)bytes;
#endif
}

// A graph file like scripts/make-large-graph.py writes: op i reads ops i-1
// and i-2.
std::string ChainGraphText(int num_ops) {
  std::string text = R"({"format": "dplace.graph", "version": 1, "ops": [)";
  for (int i = 0; i < num_ops; ++i) {
    if (i > 0) text += ",";
    text += R"({"name":"o)" + std::to_string(i) +
            R"(","type":"Add","outputs":[{"bytes":256}],"inputs":[)";
    for (int j : {i - 1, i - 2}) {
      if (j < 0) continue;
      if (j < i - 1) text += ",";
      text += "\"o" + std::to_string(j) + "\"";
    }
    text += "]}";
  }
  return text + "]}";
}

// Graph files are read op by op: 200,000 ops (19 MB of JSON) fit in 100 MB.
// Read as one JSON tree they took about 1,700 bytes per op (340 MB).
TEST(LargeGraphTest, GraphFileIsReadInBoundedMemory) {
  constexpr int kOps = 200000;
  const std::string path = WriteTemp("chain.json", ChainGraphText(kOps));
  EXPECT_EXIT(
      {
        LimitDataGrowth(100 << 20);
        StatusOr<Graph> graph = ReadGraphJson(path);
        if (!graph.ok()) std::cerr << graph.status().message() << "\n";
        std::exit(graph.ok() && graph->num_ops() == kOps &&
                          graph->num_edges() == 2 * kOps - 3
                      ? 0
                      : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(LargeGraphTest, OpsAndEdgesPastTheLimitsAreRefusedNamingThem) {
  const std::string path = WriteTemp("chain3.json", ChainGraphText(3));
  FileLimits limits;
  limits.max_graph_ops = 2;
  StatusOr<Graph> graph = ReadGraphJson(path, limits);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            path +
                ": ops: more than 2 ops, the most a graph file may hold "
                "(FileLimits::max_graph_ops)");
  limits = FileLimits();
  limits.max_graph_edges = 2;
  graph = ReadGraphJson(path, limits);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            path +
                ": ops[2].inputs[1]: more than 2 edges in all, the most a "
                "graph file may hold (FileLimits::max_graph_edges)");
  limits.max_graph_edges = 3;
  EXPECT_TRUE(ReadGraphJson(path, limits).ok());
}

// Inputs naming ops further down the file are resolved as a reader of the
// whole file does: "x:1" is output 1 of "x" when there is an op "x".
TEST(LargeGraphTest, InputsNamingLaterOpsKeepTheirOrder) {
  StatusOr<Graph> graph = ParseGraphJson(GraphText(R"(
      {"name": "y", "type": "T", "inputs": ["x:1", "x:1:0", "^x", "z"]},
      {"name": "x:1", "type": "T", "outputs": [{}]},
      {"name": "z", "type": "T", "outputs": [{}]},
      {"name": "x", "type": "T", "outputs": [{}, {}]})"),
                                         "g.json");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const Graph& g = *graph;
  const Span<EdgeId> in = g.in_edges(0);
  ASSERT_EQ(in.size(), 4u);
  EXPECT_EQ(g.edge_tensor(in[0]), g.output(3, 1));
  EXPECT_EQ(g.edge_tensor(in[1]), g.output(1, 0));
  EXPECT_TRUE(g.is_control(in[2]));
  EXPECT_EQ(g.edge_src(in[2]), 3);
  EXPECT_EQ(g.edge_tensor(in[3]), g.output(2, 0));
  StatusOr<Graph> again = ParseGraphJson(GraphToJson(g), "g.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->hash(), g.hash());
}

TEST(LargeGraphTest, ErrorsComeInTheOrderOfTheFile) {
  // A bad field of a later op comes before an unknown input of an earlier
  // one (fields are read first, inputs once all ops are known), and an
  // unknown input before a later input that is not a string.
  StatusOr<Graph> graph = ParseGraphJson(GraphText(R"(
      {"name": "a", "type": "T", "inputs": ["nowhere"]},
      {"name": "b", "type": "T", "flops": -1})"),
                                         "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("ops[1].flops"));
  graph = ParseGraphJson(GraphText(R"(
      {"name": "a", "type": "T", "inputs": ["nowhere"]},
      {"name": "b", "type": "T", "inputs": [7]})"),
                         "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "g.json: ops[0].inputs[0]: unknown op \"nowhere\"");
  graph = ParseGraphJson(GraphText(R"(
      {"name": "a", "type": "T", "inputs": [7]},
      {"name": "b", "type": "T", "inputs": ["nowhere"]})"),
                         "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("g.json: ops[0].inputs[0]: expected a string"));
  // The top-level fields come first, wherever they are in the file.
  graph = ParseGraphJson(
      R"({"ops": [{"name": "a", "type": ""}], "format": "dplace.graph",
          "version": 2})",
      "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "g.json: version: this dplace reads version 1, got 2");
}

TEST(LargeGraphTest, RepeatedKeysAreRefused) {
  StatusOr<Graph> graph = ParseGraphJson(
      GraphText(R"({"name": "a", "type": "T", "type": "U"})"), "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "g.json: ops[0]: the key \"type\" appears twice (each key may "
            "appear once in an object)");
  graph = ParseGraphJson(
      R"({"format": "dplace.graph", "version": 1, "ops": [], "ops": []})",
      "g.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message(),
            "g.json: top level: the key \"ops\" appears twice (each key "
            "may appear once in an object)");
}

// Clusters of 1,024 GPUs load and simulate a step of a 20,000-op graph
// placed over all of them in 150 MB. Routes used to be computed for every
// pair up front (a ring of 1,024 GPUs: 3.2 GB) and op times for every
// device (20,000 ops x 1,024 devices: 164 MB); now routes are computed per
// source when first used and op times per class of device.
TEST(LargeClusterTest, RingOf1024GpusLoadsAndSimulatesInBoundedMemory) {
  // Loaded from its JSON, as a user's cluster file is.
  const std::string text = ClusterToJson(*testing_clusters::GpuRing(1024));
  const Graph graph = testing_clusters::GpuGraph(20000);
  EXPECT_EXIT(
      {
        LimitDataGrowth(150 << 20);
        StatusOr<Cluster> cluster = ParseClusterJson(text, "ring.json");
        if (!cluster.ok()) std::exit(2);
        const CostModel cost(graph, *cluster);
        Simulator simulator(cost);
        StatusOr<SimResult> r = simulator.Simulate(
            testing_clusters::BlockPlacement(graph, *cluster));
        std::exit(r.ok() && r->feasible && r->device_op_count[1023] > 0 ? 0
                                                                        : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(LargeClusterTest, FatTreeOf128HostsSimulatesInBoundedMemory) {
  const Graph graph = testing_clusters::GpuGraph(20000);
  EXPECT_EXIT(
      {
        LimitDataGrowth(150 << 20);
        StatusOr<Cluster> cluster = testing_clusters::GpuFatTree(128);
        if (!cluster.ok() || cluster->num_devices() != 1024) std::exit(2);
        const CostModel cost(graph, *cluster);
        Simulator simulator(cost);
        StatusOr<SimResult> r = simulator.Simulate(
            testing_clusters::BlockPlacement(graph, *cluster));
        std::exit(r.ok() && r->feasible ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Routes beyond the simulator's table of every pair (more than 64 devices)
// are computed when first used: a tensor from gpu:0 to gpu:3 of a ring of
// 100 crosses three links, each paying its latency and bytes in full.
TEST(LargeClusterTest, RoutesOfALargeClusterArePaidHopByHop) {
  const Cluster cluster = *testing_clusters::GpuRing(100);
  GraphBuilder b("pair");
  OpSpec a = Op("a", 1);
  a.outputs[0].bytes = 400000000;  // 1 ms a hop at 400 GB/s.
  const OpId src = b.AddOp(a);
  b.AddEdge(src, 0, b.AddOp(Op("b", 0)));
  const Graph graph = *std::move(b).Build();
  const CostModel cost(graph, cluster);
  Simulator simulator(cost);
  StatusOr<SimResult> r = simulator.Simulate({0, 3});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double hop = 3e-6 + 400000000 / 400e9;
  EXPECT_NEAR(r->step_time, cost.OpTime(0, 0) + 3 * hop + cost.OpTime(1, 3),
              1e-12);
  for (int link = 0; link < 3; ++link) {
    EXPECT_EQ(r->link_bytes[cluster.route(0, 3)[link]], 400000000);
  }
  EXPECT_EQ(cluster.route(0, 3).size(), 3u);
  EXPECT_EQ(cluster.route(3, 0).size(), 3u);
  EXPECT_EQ(cluster.route(0, 60).size(), 40u);  // The other way round.
  // Again, from the routes the first run computed.
  StatusOr<SimResult> again = simulator.Simulate({0, 3});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->step_time, r->step_time);
}

// A million-op chain builds, hashes, costs and simulates: nothing in the
// core is quadratic or recursive in the number of ops.
TEST(MillionOpGraphTest, BuildsAndSimulates) {
  constexpr int kOps = 1000000;
  GraphBuilder b("chain");
  for (int i = 0; i < kOps; ++i) {
    OpSpec op;
    op.name = "op" + std::to_string(i);
    op.type = "Relu";
    op.flops = 1e3;
    op.outputs = {{{256}}};
    const OpId id = b.AddOp(std::move(op));
    if (i > 0) b.AddEdge(id - 1, 0, id);
  }
  StatusOr<Graph> graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_EQ(graph->num_ops(), kOps);
  EXPECT_EQ(graph->topological_order().back(), kOps - 1);
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const CostModel cost(*graph, cluster);
  Simulator simulator(cost);
  StatusOr<SimResult> result =
      simulator.Simulate(SingleDevicePlacement(*graph, cluster, 1));
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_TRUE(result->feasible);
  EXPECT_EQ(result->device_op_count[1], kOps);
  EXPECT_GE(result->step_time, result->bounds.critical_path * (1 - 1e-9));
}

}  // namespace
}  // namespace dplace
