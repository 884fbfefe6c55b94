// Graph JSON: round trips keep every attribute and the hash; errors name
// the source, the field and what was expected.
#include "dplace/io/graph_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/testing/small_graph.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_graphs::MakeSmallGraph;
using json = nlohmann::json;

void ExpectSameGraph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.name(), b.name());
  ASSERT_EQ(a.num_ops(), b.num_ops());
  ASSERT_EQ(a.num_edges(), b.num_edges());
  ASSERT_EQ(a.num_tensors(), b.num_tensors());
  for (OpId op = 0; op < a.num_ops(); ++op) {
    SCOPED_TRACE("op " + a.op_name(op));
    EXPECT_EQ(a.op_name(op), b.op_name(op));
    EXPECT_EQ(a.op_type(op), b.op_type(op));
    EXPECT_EQ(a.phase(op), b.phase(op));
    EXPECT_EQ(a.scope(op), b.scope(op));
    EXPECT_EQ(a.flops(op), b.flops(op));
    EXPECT_EQ(a.bytes_accessed(op), b.bytes_accessed(op));
    EXPECT_EQ(a.persistent_bytes(op), b.persistent_bytes(op));
    EXPECT_EQ(a.temporary_bytes(op), b.temporary_bytes(op));
    EXPECT_EQ(a.colocation_group(op), b.colocation_group(op));
    EXPECT_EQ(a.allowed_devices(op).bits(), b.allowed_devices(op).bits());
    ASSERT_EQ(a.num_outputs(op), b.num_outputs(op));
  }
  for (TensorId t = 0; t < a.num_tensors(); ++t) {
    SCOPED_TRACE("tensor " + std::to_string(t));
    EXPECT_EQ(a.tensor(t).shape, b.tensor(t).shape);
    EXPECT_EQ(a.tensor(t).dtype, b.tensor(t).dtype);
    EXPECT_EQ(a.tensor(t).bytes, b.tensor(t).bytes);
    EXPECT_EQ(a.producer(t), b.producer(t));
  }
  for (EdgeId e = 0; e < a.num_edges(); ++e) {
    SCOPED_TRACE("edge " + std::to_string(e));
    EXPECT_EQ(a.edge_src(e), b.edge_src(e));
    EXPECT_EQ(a.edge_dst(e), b.edge_dst(e));
    EXPECT_EQ(a.edge_tensor(e), b.edge_tensor(e));
    EXPECT_EQ(a.is_control(e), b.is_control(e));
  }
}

// ---------------------------------------------------------------- graph JSON

TEST(GraphJsonTest, RoundTripKeepsHashAndEveryAttribute) {
  const Graph g = MakeSmallGraph();
  const std::string text = GraphToJson(g);
  StatusOr<Graph> parsed = ParseGraphJson(text, "small.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ExpectSameGraph(g, *parsed);
  // Writing the parsed graph again gives the same text: a fixed point.
  EXPECT_EQ(GraphToJson(*parsed), text);
}

TEST(GraphJsonTest, HashSurvivesRoundTripWhateverOrderEdgesWereAdded) {
  // Edges added producer-first; graph JSON lists them consumer by consumer.
  GraphBuilder b("order");
  OpSpec spec;
  spec.type = "Add";
  spec.outputs.push_back({{4}, DataType::kFloat32, 0});
  for (const char* name : {"a", "b", "c"}) {
    spec.name = name;
    b.AddOp(spec);
  }
  b.AddEdge(0, 0, 2);
  b.AddEdge(0, 0, 1);
  b.AddEdge(1, 0, 2);
  const Graph g = *std::move(b).Build();
  StatusOr<Graph> back = ParseGraphJson(GraphToJson(g), "order.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->hash(), g.hash());
}

TEST(GraphJsonTest, RoundTripWritesTheDocumentedFields) {
  const Graph g = MakeSmallGraph();
  const json root = json::parse(GraphToJson(g));
  EXPECT_EQ(root["format"], "dplace.graph");
  EXPECT_EQ(root["version"], 1);
  EXPECT_EQ(root["name"], "small");
  ASSERT_EQ(root["ops"].size(), 6u);
  const json& input = root["ops"][0];
  EXPECT_EQ(input["devices"], json::array({"cpu"}));
  EXPECT_EQ(input["outputs"][1]["dtype"], "int64");
  EXPECT_EQ(input["outputs"][1]["bytes"], 32 * 8);
  const json& loss = root["ops"][3];
  EXPECT_EQ(loss["inputs"], json::array({"dense/matmul", "input:1"}));
  const json& apply = root["ops"][5];
  EXPECT_EQ(apply["phase"], "update");
  EXPECT_EQ(apply["inputs"],
            json::array({"gradients/dense/matmul_grad", "^loss"}));
  // Defaults are left out.
  EXPECT_FALSE(root["ops"][1].contains("phase"));
  EXPECT_FALSE(root["ops"][1].contains("devices"));
  EXPECT_FALSE(root["ops"][1].contains("flops"));
}

TEST(GraphJsonTest, ParsesInputsSyntaxDefaultsAndDerivedBytes) {
  const std::string text = R"({
    "format": "dplace.graph", "version": 1,
    "ops": [
      {"name": "a", "type": "Split",
       "outputs": [{"shape": [2, 3], "dtype": "float16"},
                   {"shape": [5]},
                   {"shape": [4], "bytes": 100},
                   {}]},
      {"name": "b", "type": "Add", "inputs": ["a", "a:1", "^a"]},
      {"name": "c", "type": "Identity", "inputs": ["a:2"],
       "devices": ["gpu"]}
    ]})";
  StatusOr<Graph> g = ParseGraphJson(text, "syntax.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->name(), "");
  const OpId a = *g->FindOp("a");
  const OpId b = *g->FindOp("b");
  const OpId c = *g->FindOp("c");
  ASSERT_EQ(g->num_outputs(a), 4);
  EXPECT_EQ(g->tensor_bytes(g->output(a, 0)), 2 * 3 * 2);  // float16.
  EXPECT_EQ(g->tensor_bytes(g->output(a, 1)), 5 * 4);      // float32.
  EXPECT_EQ(g->tensor_bytes(g->output(a, 2)), 100);        // Given wins.
  EXPECT_EQ(g->tensor_bytes(g->output(a, 3)), 0);          // No shape.
  EXPECT_EQ(g->tensor(g->output(a, 1)).dtype, DataType::kFloat32);

  // Defaults of an op.
  EXPECT_EQ(g->phase(b), Phase::kForward);
  EXPECT_EQ(g->scope(b), "");
  EXPECT_EQ(g->flops(b), 0);
  EXPECT_EQ(g->colocation_group(b), "");
  EXPECT_TRUE(g->allowed_devices(b) == DeviceKindSet::All());
  EXPECT_TRUE(g->allowed_devices(c) == DeviceKindSet::Only(DeviceKind::kGpu));

  ASSERT_EQ(g->in_edges(b).size(), 3u);
  const EdgeId e0 = g->in_edges(b)[0];
  const EdgeId e1 = g->in_edges(b)[1];
  const EdgeId e2 = g->in_edges(b)[2];
  EXPECT_EQ(g->edge_tensor(e0), g->output(a, 0));
  EXPECT_EQ(g->edge_tensor(e1), g->output(a, 1));
  EXPECT_TRUE(g->is_control(e2));
  EXPECT_EQ(g->edge_src(e2), a);
  ASSERT_EQ(g->in_edges(c).size(), 1u);
  EXPECT_EQ(g->edge_tensor(g->in_edges(c)[0]), g->output(a, 2));
}

TEST(GraphJsonTest, AcceptsWholeNumbersWrittenWithExponents) {
  StatusOr<Graph> g = ParseGraphJson(
      R"({"format": "dplace.graph", "version": 1, "ops": [
          {"name": "v", "type": "VariableV2", "persistent_bytes": 1e9}]})",
      "exp.json");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->persistent_bytes(0), 1000000000);
}

// A graph document with `ops` as given.
std::string GraphText(const std::string& ops) {
  return R"({"format": "dplace.graph", "version": 1, "name": "t", "ops": )" +
         ops + "}";
}

std::string GraphError(const std::string& text) {
  StatusOr<Graph> g = ParseGraphJson(text, "bad_graph.json");
  EXPECT_FALSE(g.ok());
  if (g.ok()) return "";
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  return g.status().message();
}

TEST(GraphJsonErrorTest, MalformedJsonNamesSourceAndLine) {
  const std::string message = GraphError(
      "{\n  \"format\": \"dplace.graph\",\n  \"ops\": [\n    {\"name\": }\n  "
      "]\n}\n");
  EXPECT_THAT(message, StartsWith("bad_graph.json: malformed JSON"));
  EXPECT_THAT(message, HasSubstr("line 4"));
}

TEST(GraphJsonErrorTest, WrongTypeNamesPathAndExpectation) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "a", "type": "Const"},
      {"name": "b", "type": "Neg", "flops": "lots", "inputs": ["a"]}])"));
  EXPECT_THAT(
      message,
      AllOf(StartsWith("bad_graph.json: "), HasSubstr("ops[1].flops"),
            HasSubstr("expected a number >= 0"), HasSubstr("\"lots\"")));
}

TEST(GraphJsonErrorTest, NegativeTensorBytes) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "a", "type": "Const", "outputs": [{"bytes": -5}]}])"));
  EXPECT_THAT(message, AllOf(StartsWith("bad_graph.json: "),
                             HasSubstr("ops[0].outputs[0].bytes"),
                             HasSubstr("expected an integer >= 0, got -5")));
}

TEST(GraphJsonErrorTest, NegativeShapeDimension) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "a", "type": "Const", "outputs": [{"shape": [3, -2]}]}])"));
  EXPECT_THAT(message, AllOf(StartsWith("bad_graph.json: "),
                             HasSubstr("ops[0].outputs[0].shape[1]"),
                             HasSubstr("expected an integer >= 0, got -2")));
}

TEST(GraphJsonErrorTest, UnknownFieldIsATypo) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "a", "type": "Const"},
      {"name": "b", "type": "Neg", "flop": 10, "inputs": ["a"]}])"));
  EXPECT_THAT(message,
              AllOf(StartsWith("bad_graph.json: "), HasSubstr("ops[1].flop"),
                    HasSubstr("unknown field")));
}

TEST(GraphJsonErrorTest, UnknownFieldInsideATensor) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "a", "type": "Const", "outputs": [{"shape": [2], "dytpe": "int8"}]}])"));
  EXPECT_THAT(message, AllOf(StartsWith("bad_graph.json: "),
                             HasSubstr("ops[0].outputs[0].dytpe"),
                             HasSubstr("unknown field")));
}

TEST(GraphJsonErrorTest, UnknownDataTypePhaseAndDeviceKind) {
  EXPECT_THAT(GraphError(GraphText(R"([{"name": "a", "type": "C",
      "outputs": [{"shape": [2], "dtype": "float8"}]}])")),
              AllOf(HasSubstr("ops[0].outputs[0].dtype"),
                    HasSubstr("unknown data type \"float8\"")));
  EXPECT_THAT(GraphError(GraphText(
                  R"([{"name": "a", "type": "C", "phase": "backwards"}])")),
              AllOf(HasSubstr("ops[0].phase"),
                    HasSubstr("\"forward\", \"backward\" or \"update\""),
                    HasSubstr("\"backwards\"")));
  EXPECT_THAT(
      GraphError(GraphText(
          R"([{"name": "a", "type": "C", "devices": ["cpu", "tpu"]}])")),
      AllOf(HasSubstr("ops[0].devices[1]"),
            HasSubstr("expected \"cpu\" or \"gpu\", got \"tpu\"")));
}

TEST(GraphJsonErrorTest, InputNamingAnUnknownOp) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "a", "type": "Const"},
      {"name": "b", "type": "Const"},
      {"name": "c", "type": "Add", "inputs": ["nope", "b"]}])"));
  EXPECT_THAT(message, AllOf(StartsWith("bad_graph.json: "),
                             HasSubstr("ops[2].inputs[0]"),
                             HasSubstr("unknown op \"nope\"")));
}

TEST(GraphJsonErrorTest, InputThatIsNotAString) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "a", "type": "Const"},
      {"name": "b", "type": "Neg", "inputs": ["a", 3]}])"));
  EXPECT_THAT(message, AllOf(HasSubstr("ops[1].inputs[1]"),
                             HasSubstr("expected a string"), HasSubstr("3")));
}

TEST(GraphJsonErrorTest, CycleNamesTheOpsOnIt) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "start", "type": "Const", "outputs": [{"bytes": 4}]},
      {"name": "x", "type": "Add", "inputs": ["start", "z"],
       "outputs": [{"bytes": 4}]},
      {"name": "y", "type": "Neg", "inputs": ["x"], "outputs": [{"bytes": 4}]},
      {"name": "z", "type": "Neg", "inputs": ["y"], "outputs": [{"bytes": 4}]}
      ])"));
  EXPECT_THAT(message, AllOf(StartsWith("bad_graph.json: "), HasSubstr("cycle"),
                             HasSubstr("\"x\""), HasSubstr("\"y\""),
                             HasSubstr("\"z\"")));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("\"start\"")));
}

TEST(GraphJsonErrorTest, DuplicateOpName) {
  const std::string message = GraphError(GraphText(R"([
      {"name": "a", "type": "Const"},
      {"name": "b", "type": "Const"},
      {"name": "a", "type": "Neg"}])"));
  EXPECT_THAT(message,
              AllOf(StartsWith("bad_graph.json: "), HasSubstr("ops[2].name"),
                    HasSubstr("duplicate op name \"a\"")));
}

TEST(GraphJsonErrorTest, WrongFormatAndVersion) {
  EXPECT_THAT(
      GraphError(R"({"format": "dplace.cluster", "version": 1, "ops": []})"),
      AllOf(StartsWith("bad_graph.json: "), HasSubstr("format"),
            HasSubstr("expected \"dplace.graph\", got \"dplace.cluster\"")));
  EXPECT_THAT(
      GraphError(R"({"format": "dplace.graph", "version": 2, "ops": []})"),
      AllOf(HasSubstr("version"), HasSubstr("version 1, got 2")));
  EXPECT_THAT(GraphError(R"({"format": "dplace.graph", "version": 1})"),
              AllOf(HasSubstr("ops"), HasSubstr("missing")));
}

// A key named twice would silently mean its last value: refused in every
// JSON file, naming the file, the object's path and the key.
TEST(GraphJsonErrorTest, AKeyTwiceNamesFilePathAndKey) {
  EXPECT_EQ(GraphError(GraphText(R"([
      {"name": "a", "type": "Const"},
      {"name": "b", "type": "Neg", "flops": 10, "flops": 20}])")),
            "bad_graph.json: ops[1]: the key \"flops\" appears twice (each "
            "key may appear once in an object)");
  EXPECT_THAT(GraphError(R"({"format": "dplace.graph", "version": 1,
      "ops": [], "version": 1})"),
              HasSubstr("bad_graph.json: top level: the key \"version\""));
  EXPECT_THAT(GraphError(GraphText(R"([{"name": "a", "type": "C",
      "outputs": [{"shape": [2]}, {"shape": [2], "shape": [3]}]}])")),
              HasSubstr("ops[0].outputs[1]: the key \"shape\" appears twice"));
  StatusOr<Cluster> cluster = ParseClusterJson(
      R"({"format": "dplace.cluster", "version": 1, "name": "c",
          "devices": [{"name": "cpu:0", "name": "gpu:0"}]})",
      "c.json");
  ASSERT_FALSE(cluster.ok());
  EXPECT_THAT(cluster.status().message(),
              HasSubstr("c.json: devices[0]: the key \"name\" appears twice"));
  StatusOr<ProfileTable> profile = ParseProfileJson(
      R"({"format": "dplace.profile", "version": 1,
          "by_type": {"MatMul": {"gpu": 2e-3}, "MatMul": {"gpu": 1}}})",
      "p.json");
  ASSERT_FALSE(profile.ok());
  EXPECT_THAT(profile.status().message(),
              HasSubstr("p.json: by_type: the key \"MatMul\" appears twice"));
}

}  // namespace
}  // namespace dplace
