// Runs the commands that make models in-process: `dplace import` of ONNX
// files (warnings, batch changes, optimizers), --model with an ONNX file,
// and `dplace zoo` (list, export, specs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
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
  EXPECT_EQ(BadInput(Dplace(
                {"import", kResNet18, "--batch", "0", "-o", dir_ + "/g.json"})),
            "dplace: error: --batch: 0 is not allowed: expected a whole "
            "number from 1 to 9223372036854775807 (see dplace --help)");
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
  EXPECT_THAT(r.out, AllOf(HasSubstr("parameters:       11,689,512 trained in "
                                     "62 tensors (46.76 MB)"),
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

// The untrained transformer a user exports by default: its warnings are
// printed wherever the model is read, kept in the graph file import
// writes and printed again from it, and shown at the top of the report.
TEST_F(ModelCommandsTest, WarningsFollowTheGraphEverywhere) {
  const std::string model =
      kSourceDir + "/testdata/onnx/transformer_untrained.onnx";
  const std::string graph = dir_ + "/t.json";
  const CliResult imported = Dplace({"import", model, "-o", graph});
  ASSERT_EQ(imported.code, kExitOk) << imported.err;
  EXPECT_THAT(imported.out,
              HasSubstr("model: batch 8, sgd updates; 133,888 parameters in 48 "
                        "tensors (535.55 kB)\n"));
  StatusOr<std::string> text = ReadTextFile(graph);
  ASSERT_TRUE(text.ok());
  const json file = json::parse(*text);
  ASSERT_EQ(file.at("warnings").size(), 2u);
  EXPECT_EQ(file.at("batch"), 8);
  EXPECT_EQ(file.at("optimizer"), "sgd");
  for (const std::string& spec : {model, graph}) {
    SCOPED_TRACE(spec);
    const CliResult inspected = Dplace({"inspect", "--model", spec});
    ASSERT_EQ(inspected.code, kExitOk) << inspected.err;
    EXPECT_THAT(inspected.err, AllOf(HasSubstr("dplace: warning: "),
                                     HasSubstr("eval-mode export"),
                                     HasSubstr("merged 39 parameters")));
    EXPECT_THAT(inspected.out,
                HasSubstr("batch:            8, updates by sgd"));
    const std::string report = dir_ + "/r.html";
    const CliResult placed =
        Dplace({"place", "--model", spec, "--cluster", "k80x2", "--method",
                "m-etf", "--report", report});
    ASSERT_EQ(placed.code, kExitOk) << placed.err;
    EXPECT_THAT(placed.err, HasSubstr("merged 39 parameters"));
    EXPECT_THAT(placed.out, HasSubstr("model: batch 8, sgd updates; 133,888 "
                                      "parameters in 48 tensors"));
    StatusOr<std::string> html = ReadTextFile(report);
    ASSERT_TRUE(html.ok());
    EXPECT_LT(html->find("merged 39 parameters"), html->find("<h2>"));
  }
  // simulate too, with --batch and --optimizer on the ONNX model.
  const std::string placement = dir_ + "/p.json";
  ASSERT_EQ(Dplace({"place", "--model", model, "--batch", "16", "--optimizer",
                    "adam", "--cluster", "k80x2", "--method", "single-gpu",
                    "--out", placement})
                .code,
            kExitOk);
  const CliResult simulated =
      Dplace({"simulate", "--model", model, "--batch", "16", "--optimizer",
              "adam", "--cluster", "k80x2", "--placement", placement});
  ASSERT_EQ(simulated.code, kExitOk) << simulated.err;
  EXPECT_THAT(simulated.err, HasSubstr("merged 39 parameters"));
  EXPECT_THAT(simulated.out, HasSubstr("model: batch 16, adam updates"));
  // The graph file keeps its batch and optimizer: others are refused.
  EXPECT_THAT(BadInput(Dplace({"inspect", "--model", graph, "--batch", "16"})),
              AllOf(HasSubstr("--batch 16: the graph was made at batch 8"),
                    HasSubstr("dplace import")));
  // --keep-merged-parameters reads the file as it is.
  const CliResult merged = Dplace(
      {"inspect", "--model", model, "--keep-merged-parameters", "--json"});
  ASSERT_EQ(merged.code, kExitOk) << merged.err;
  const json counts = json::parse(merged.out);
  EXPECT_LT(counts.at("parameters").at("trained").at("tensors"), 24);
}

TEST_F(ModelCommandsTest, InspectJsonCountsLikeItsText) {
  const std::string model = kSourceDir + "/testdata/onnx/cnn_eval_bn.onnx";
  const CliResult r = Dplace({"inspect", "--model", model, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("format"), "dplace.inspect");
  EXPECT_EQ(j.at("batch"), 4);
  EXPECT_EQ(j.at("parameters").at("trained"),
            json({{"tensors", 14}, {"elements", 4170}, {"bytes", 16680}}));
  EXPECT_GT(j.at("parameters").at("untrained").at("tensors"), 0);
  EXPECT_THAT(j.at("warnings")[0].get<std::string>(),
              AllOf(HasSubstr("BatchNormalization nodes are in inference form"),
                    HasSubstr("no Dropout")));
  EXPECT_EQ(j.at("ops").at("total").get<int>(),
            j.at("ops").at("forward").get<int>() +
                j.at("ops").at("backward").get<int>() +
                j.at("ops").at("update").get<int>());
}

}  // namespace
}  // namespace dplace
