// The Tarnawski et al. inputs: every latency graph of data/tarnawski2020
// reads with the file's node, edge and memory totals, times in seconds and
// transfers as tensor bytes; the human-expert splits read as placements;
// bad files are refused with the path of the bad field.
#include "dplace/io/tarnawski_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dplace/io/file.h"

namespace dplace {
namespace {

const std::string kData =
    std::string(DPLACE_SOURCE_DIR) + "/data/tarnawski2020/";

class LatencyGraphTest : public ::testing::TestWithParam<const char*> {};

TEST_P(LatencyGraphTest, RoundTripsTheFilesTotals) {
  const std::string path = kData + "latency-inputs/" + GetParam();
  StatusOr<TarnawskiProblem> p = ReadTarnawskiJson(path);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const nlohmann::json file = nlohmann::json::parse(*ReadTextFile(path));
  double size = 0, cpu = 0;
  for (const auto& node : file["nodes"]) {
    size += node.value("size", 0.0);
    cpu += node["cpuLatency"].get<double>();
  }
  EXPECT_EQ(p->graph.num_ops(), static_cast<int>(file["nodes"].size()));
  EXPECT_EQ(p->graph.num_edges(), static_cast<int>(file["edges"].size()));
  // Sizes are whole bytes in dplace: at most half a byte off per node.
  EXPECT_NEAR(static_cast<double>(p->graph.total_persistent_bytes()), size,
              0.5 * p->graph.num_ops());
  EXPECT_DOUBLE_EQ(p->total_size_bytes, size);
  const Cluster& c = p->cluster;
  EXPECT_EQ(static_cast<int>(c.DevicesOfKind(DeviceKind::kGpu).size()),
            file["maxFPGAs"].get<int>());
  EXPECT_EQ(c.device(c.DevicesOfKind(DeviceKind::kCpu)[0]).compute_slots,
            file["maxCPUs"].get<int>());
  const double memory = file["maxSizePerFPGA"].get<double>();
  const int64_t gpu_memory =
      c.device(c.DevicesOfKind(DeviceKind::kGpu)[0]).memory_bytes;
  // The accelerators' memory plus room for the tensors that carry the
  // transfer times (at most a few MB).
  EXPECT_GE(gpu_memory, memory);
  EXPECT_LE(gpu_memory, memory + 2e7);
  // Every op's CPU time, in seconds.
  double profiled = 0;
  for (const auto& [name, times] : p->profile.by_name) {
    profiled += times.at(DeviceKind::kCpu);
  }
  EXPECT_NEAR(profiled, cpu * 1e-3, 1e-9 * cpu);
  // An edge's cost in ms is its tensor's bytes in us: one hop of cost.
  const CostModel cost(p->graph, c, p->profile);
  const auto& edge = file["edges"][0];
  OpId src = -1;
  for (size_t i = 0; i < p->node_ids.size(); ++i) {
    if (p->node_ids[i] == edge["sourceId"].get<int64_t>()) src = i;
  }
  ASSERT_GE(src, 0);
  EXPECT_NEAR(cost.TransferTime(p->graph.tensor_bytes(p->graph.output(src, 0)),
                                c.DevicesOfKind(DeviceKind::kCpu)[0],
                                c.DevicesOfKind(DeviceKind::kGpu)[0]),
              edge["cost"].get<double>() * 1e-3, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    EveryLatencyGraph, LatencyGraphTest,
    ::testing::Values("OperatorGraphs/bert_l-3_inference.json",
                      "OperatorGraphs/bert_l-6_inference.json",
                      "OperatorGraphs/bert_l-12_inference.json",
                      "OperatorGraphs/resnet50_inference.json",
                      "LayerGraphs/bert24_inference.json",
                      "LayerGraphs/gnmt_inference.json",
                      "LayerGraphs/inceptionv3_inference.json",
                      "LayerGraphs/resnet50_inference.json"));

// A throughput graph's accelerator-to-accelerator tensor goes through the
// host: two hops of its cost.
TEST(TarnawskiJsonTest, AcceleratorsTalkThroughTheHost) {
  StatusOr<TarnawskiProblem> p = ReadTarnawskiJson(
      kData + "throughput-inputs/LayerGraphs/bert24_training.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const std::vector<DeviceId> gpus = p->cluster.DevicesOfKind(DeviceKind::kGpu);
  const CostModel cost(p->graph, p->cluster, p->profile);
  EXPECT_EQ(p->cluster.route(gpus[0], gpus[1]).size(), 2u);
  EXPECT_NEAR(cost.TransferTime(1000, gpus[0], gpus[1]), 2e-3, 1e-12);
  EXPECT_GT(p->graph.num_ops(), 0);
  int backward = 0;
  for (OpId op = 0; op < p->graph.num_ops(); ++op) {
    backward += p->graph.phase(op) == Phase::kBackward;
  }
  EXPECT_EQ(backward, 32);
}

// The expert's six-accelerator split of BERT-24 places every node of the
// throughput input on six accelerators; the latency input has five, so
// the split does not fit there.
TEST(TarnawskiJsonTest, ReadsTheHumanExpertsSplit) {
  StatusOr<TarnawskiProblem> p = ReadTarnawskiJson(
      kData + "throughput-inputs/LayerGraphs/bert24_inference.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const std::string expert =
      kData + "human-experts/bert24_inference_expert.json";
  StatusOr<Placement> placement = ReadTarnawskiSplit(expert, *p);
  ASSERT_TRUE(placement.ok()) << placement.status().message();
  std::set<DeviceId> used(placement->begin(), placement->end());
  EXPECT_EQ(used.size(), 6u);
  StatusOr<TarnawskiProblem> latency = ReadTarnawskiJson(
      kData + "latency-inputs/LayerGraphs/bert24_inference.json");
  ASSERT_TRUE(latency.ok());
  StatusOr<Placement> too_many = ReadTarnawskiSplit(expert, *latency);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find(
                "fpgas: 6 accelerators, the problem has 5"),
            std::string::npos)
      << too_many.status().message();
}

// Bad input names the file, the field and what was expected.
TEST(TarnawskiJsonTest, RefusesBadFilesWithThePath) {
  const std::string head =
      R"({"maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": 1, )";
  const std::string node_a =
      R"({"id": 0, "supportedOnFpga": true, "cpuLatency": 1, "fpgaLatency": 0.1, "isBackwardNode": false})";
  const std::string node_b =
      R"({"id": 1, "supportedOnFpga": true, "cpuLatency": 1, "fpgaLatency": 0.1, "isBackwardNode": false})";
  struct Case {
    std::string text, expected;
  } cases[] = {
      {head + R"("nodes": [)" + node_a + "," + node_a + R"(], "edges": []})",
       "f.json: nodes[1].id: 0 is used by an earlier node"},
      {head + R"("nodes": [)" + node_a +
           R"(], "edges": [{"sourceId": 0, "destId": 7, "cost": 1}]})",
       "f.json: edges[0]: no node has id 7"},
      {head + R"("nodes": [)" + node_a + "," + node_b +
           R"(], "edges": [{"sourceId": 0, "destId": 1, "cost": 1}, {"sourceId": 0, "destId": 1, "cost": 2}]})",
       "f.json: edges[1].cost: 2.000000 differs from an earlier edge out of "
       "node 0"},
      {head +
           R"("nodes": [{"id": 0, "cpuLatency": -1, "fpgaLatency": 1}], "edges": []})",
       "f.json: nodes[0].cpuLatency: expected a number >= 0"},
      {head +
           R"("nodes": [{"id": 0, "cpuLatency": 1, "fpgaLatency": 1, "colour": 3}], "edges": []})",
       "f.json: nodes[0].colour: unknown field"},
      {R"({"maxFPGAs": 2, "nodes": [], "edges": []})",
       "f.json: maxSizePerFPGA"},
  };
  for (const Case& c : cases) {
    StatusOr<TarnawskiProblem> p = ParseTarnawskiJson(c.text, "f.json", "f");
    ASSERT_FALSE(p.ok()) << c.expected;
    EXPECT_EQ(p.status().message().rfind(c.expected, 0), 0u)
        << p.status().message();
  }
  EXPECT_TRUE(LooksLikeTarnawskiJson(head + R"("nodes": [], "edges": []})"));
  EXPECT_FALSE(LooksLikeTarnawskiJson(R"({"format": "dplace.graph"})"));
}

}  // namespace
}  // namespace dplace
