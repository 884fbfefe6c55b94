// Runs the commands that make models in-process: `dplace import` of ONNX
// files (warnings, batch changes, optimizers), --model with an ONNX file,
// and `dplace zoo` (list, export, specs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/io/file.h"
#include "dplace/io/graph_json.h"
#include "dplace/testing/cli_test_util.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using json = nlohmann::json;

const std::string kSourceDir = DPLACE_SOURCE_DIR;

class ModelCommandsTest : public CliDirTest {};

// --- dplace import ---------------------------------------------------------

const std::string kResNet18 = kSourceDir + "/testdata/onnx/resnet18.onnx";
const std::string kEncoder =
    kSourceDir + "/testdata/onnx/transformer_encoder.onnx";

TEST_F(ModelCommandsTest, ImportWritesTheTrainingGraph) {
  const std::string out = dir_ + "/resnet18.json";
  const CliResult r = Dplace(
      {"import", kResNet18, "--batch", "8", "--optimizer", "adam", "-o", out});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out,
              HasSubstr("as graph resnet18, expanded for training with adam"));
  EXPECT_THAT(r.out, HasSubstr("update 62)"));
  EXPECT_THAT(r.out, HasSubstr("wrote " + out));
  StatusOr<Graph> graph = ReadGraphJson(out);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  int updates = 0;
  for (OpId op = 0; op < graph->num_ops(); ++op) {
    updates += graph->op_type(op) == "ApplyAdam";
  }
  EXPECT_EQ(updates, 62);
  const OpId input = *graph->FindOp("input");
  EXPECT_EQ(graph->tensor(graph->output(input, 0)).shape[0], 8);
}

// BERT's optimizer, which the zoo's BERT uses, for an imported encoder:
// every weight Adam updates gets BERT's update, op by op.
TEST_F(ModelCommandsTest, ImportTakesAdamWithWeightDecay) {
  auto count = [](const Graph& graph, const std::string& end, bool type) {
    int n = 0;
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      const std::string& s = type ? graph.op_type(op) : graph.op_name(op);
      n += s.size() >= end.size() &&
           s.compare(s.size() - end.size(), end.size(), end) == 0;
    }
    return n;
  };
  int adam_updates = 0;
  for (const std::string optimizer : {"adam", "adamw"}) {
    const std::string out = dir_ + "/encoder-" + optimizer + ".json";
    const CliResult r = Dplace({"import", kEncoder, "--batch", "2",
                                "--optimizer", optimizer, "-o", out});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_THAT(r.out, HasSubstr("expanded for training with " + optimizer));
    StatusOr<Graph> graph = ReadGraphJson(out);
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    if (optimizer == "adam") {
      adam_updates = count(*graph, "Adam", /*type=*/true);
      EXPECT_GT(adam_updates, 0);
    } else {
      EXPECT_EQ(count(*graph, "/adam_m_mul", /*type=*/false), adam_updates);
    }
  }
}

TEST_F(ModelCommandsTest, ImportPrintsWarnings) {
  // The fixture with its opset raised past what libonnx knows: still
  // imported, with a warning on stderr.
  StatusOr<std::string> bytes = ReadTextFile(kResNet18);
  ASSERT_TRUE(bytes.ok());
  // opset_import { version: 17 } is the bytes 0x42 0x02 0x10 0x11 near the
  // end of the file; 0x11 -> 0x12 makes it 18.
  std::string model = *bytes;
  const size_t at = model.rfind(std::string("\x42\x02\x10\x11", 4));
  ASSERT_NE(at, std::string::npos);
  model[at + 3] = 0x12;
  const std::string path = Write("newer.onnx", model);
  const CliResult r = Dplace({"import", path, "-o", dir_ + "/newer.json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err,
              AllOf(StartsWith("dplace: warning: "), HasSubstr("opset 18")));
}

TEST_F(ModelCommandsTest, ImportSymbolicBatchNeedsBatchFlag) {
  const std::string line =
      BadInput(Dplace({"import", kEncoder, "-o", dir_ + "/e.json"}));
  EXPECT_THAT(line, AllOf(HasSubstr("transformer_encoder.onnx"),
                          HasSubstr("'src'"), HasSubstr("--batch")));
  const CliResult r =
      Dplace({"import", kEncoder, "--batch", "4", "-o", dir_ + "/e.json"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
}

TEST_F(ModelCommandsTest, ImportBadInput) {
  const std::string text = Write("model.onnx", "this is not a model\n");
  EXPECT_THAT(BadInput(Dplace({"import", text, "-o", dir_ + "/g.json"})),
              HasSubstr("model.onnx: not"));
  EXPECT_THAT(BadInput(Dplace(
                  {"import", dir_ + "/missing.onnx", "-o", dir_ + "/g.json"})),
              HasSubstr("missing.onnx"));
  BadInput(Dplace(
      {"import", kResNet18, "--optimizer", "lbfgs", "-o", dir_ + "/g.json"}));
  BadInput(
      Dplace({"import", kResNet18, "--batch", "0", "-o", dir_ + "/g.json"}));
  BadInput(Dplace({"import", kResNet18}));  // No -o.
  EXPECT_THAT(BadInput(Dplace(
                  {"import", kResNet18, "-o", dir_ + "/no/such/dir/g.json"})),
              HasSubstr("cannot write"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/g.json"));
}

TEST_F(ModelCommandsTest, ModelAcceptsOnnxFiles) {
  const CliResult r = Dplace({"inspect", "--model", kResNet18});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(
      r.out, AllOf(HasSubstr("graph:            resnet18\n"),
                   HasSubstr("update 62)"), HasSubstr("ApplyGradientDescent")));
  // Parameters, forward and training FLOPs, each on its own line.
  EXPECT_THAT(r.out, AllOf(HasSubstr("parameters:       62 trained (46.76 MB)"),
                           HasSubstr("forward FLOPs:    3.65e+09\n"),
                           HasSubstr("training FLOPs:   ")));
}

// An eval-mode export imports, with its warning on stderr, from `import`
// and from any --model.
TEST_F(ModelCommandsTest, EvalModeExportWarnsAndImports) {
  const std::string model = kSourceDir + "/testdata/onnx/small_cnn_eval.onnx";
  const CliResult r = Dplace({"import", model, "-o", dir_ + "/g.json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err, AllOf(StartsWith("dplace: warning: "),
                           HasSubstr("eval-mode export")));
  const CliResult inspected = Dplace({"inspect", "--model", model});
  ASSERT_EQ(inspected.code, kExitOk) << inspected.err;
  EXPECT_THAT(inspected.err, HasSubstr("eval-mode export"));
}

// A batch that cannot be changed with certainty is bad input: exit 2, one
// line naming the file, the node and the fix.
TEST_F(ModelCommandsTest, ImportRefusesABatchItCannotChange) {
  const std::string model = kSourceDir + "/testdata/onnx/batch_mixing.onnx";
  const std::string line = BadInput(
      Dplace({"import", model, "--batch", "16", "-o", dir_ + "/g.json"}));
  EXPECT_THAT(line, AllOf(HasSubstr("batch_mixing.onnx"),
                          HasSubstr("'/Reshape'"), HasSubstr("omit --batch")));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/g.json"));
}

}  // namespace
}  // namespace dplace
