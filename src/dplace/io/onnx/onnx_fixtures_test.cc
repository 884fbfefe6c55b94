// ONNX import of the committed fixtures (tools/export_onnx.py, PyTorch
// exports) against published figures: FLOPs, weights, scopes, batch
// changes, warnings of exports that cannot be training graphs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dplace/graph/training.h"
#include "dplace/io/file.h"
#include "dplace/io/onnx/constant_folding.h"
#include "dplace/io/onnx/onnx_import.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kFixtures =
    std::string(DPLACE_SOURCE_DIR) + "/testdata/onnx/";

double ForwardFlops(const Graph& g) {
  double flops = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (g.phase(op) == Phase::kForward) flops += g.flops(op);
  }
  return flops;
}

int64_t BytesOfType(const Graph& g, const std::string& type) {
  int64_t bytes = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (g.op_type(op) == type) bytes += g.persistent_bytes(op);
  }
  return bytes;
}

std::map<std::string, int> TypeCounts(const Graph& g) {
  std::map<std::string, int> counts;
  for (OpId op = 0; op < g.num_ops(); ++op) ++counts[g.op_type(op)];
  return counts;
}

OnnxImport ImportFixture(const std::string& name, int64_t batch = 0) {
  OnnxImportOptions options;
  options.batch = batch;
  StatusOr<OnnxImport> imported = ImportOnnxFile(kFixtures + name, options);
  EXPECT_TRUE(imported.ok()) << imported.status().message();
  if (!imported.ok()) std::abort();
  return std::move(imported).value();
}

// --- The fixtures ----------------------------------------------------------

// torchvision's ResNet-50: 4.09 G multiply-adds per 224x224 image (conv
// and fc; the model card's 4.09 GFLOPS count multiply-adds), i.e. 8.18 G
// FLOPs at 2 per multiply-add.
TEST(OnnxImportTest, ResNet50ForwardFlopsMatchPublishedFigure) {
  const OnnxImport imported = ImportFixture("resnet50.onnx");
  const double flops = ForwardFlops(imported.forward);
  EXPECT_NEAR(flops / 8.18e9, 1.0, 0.05) << flops;
  EXPECT_TRUE(imported.warnings.empty()) << imported.warnings[0];
}

TEST(OnnxImportTest, ResNet50TrainingFlopsAreAboutThreeTimesForward) {
  const OnnxImport imported = ImportFixture("resnet50.onnx");
  StatusOr<Graph> training = ExpandForTraining(imported.forward);
  ASSERT_TRUE(training.ok()) << training.status().message();
  const double ratio = training->total_flops() / ForwardFlops(imported.forward);
  EXPECT_NEAR(ratio, 3.0, 0.45);
}

// Parameter and buffer sizes as torchvision reports them: weights passed as
// graph inputs (export_params=False) are found, and BatchNormalization's
// running statistics are state, not trained.
TEST(OnnxImportTest, ResNet50WeightsAreClassified) {
  const OnnxImport imported = ImportFixture("resnet50.onnx");
  const Graph& g = imported.forward;
  std::map<std::string, int> types = TypeCounts(g);
  EXPECT_EQ(types["VariableV2"], 161);
  EXPECT_EQ(types["IteratorGetNext"], 1);
  EXPECT_EQ(types["Conv"], 53);
  EXPECT_EQ(types["BatchNormalization"], 53);
  EXPECT_EQ(types["Gemm"], 1);
  EXPECT_EQ(BytesOfType(g, "VariableV2"), 25557032 * 4);
  EXPECT_EQ(BytesOfType(g, "Const"), 53120 * 4);
  const std::optional<OpId> input = g.FindOp("input");
  ASSERT_TRUE(input.has_value());
  EXPECT_EQ(g.op_type(*input), "IteratorGetNext");
  EXPECT_THAT(g.tensor(g.output(*input, 0)).shape, ElementsAre(1, 3, 224, 224));
  EXPECT_EQ(g.op_type(*g.FindOp("layer1.0.bn1.running_mean")), "Const");
}

TEST(OnnxImportTest, ScopesComeFromNodeNames) {
  const OnnxImport imported = ImportFixture("resnet50.onnx");
  const Graph& g = imported.forward;
  const std::optional<OpId> conv = g.FindOp("layer1/layer1.0/conv1/Conv");
  ASSERT_TRUE(conv.has_value());
  EXPECT_EQ(g.scope(*conv), "layer1/layer1.0/conv1");
  // A weight joins its consumer's scope.
  EXPECT_EQ(g.scope(*g.FindOp("layer1.0.conv1.weight")),
            "layer1/layer1.0/conv1");
  // 64 filters of 64x1x1 over 56x56: 2 * 64*56*56 * 64 FLOPs.
  EXPECT_DOUBLE_EQ(g.flops(*conv), 2.0 * 64 * 56 * 56 * 64);
  EXPECT_THAT(g.tensor(g.output(*conv, 0)).shape, ElementsAre(1, 64, 56, 56));
}

TEST(OnnxImportTest, BatchOverrideScalesFlopsNotWeights) {
  const OnnxImport one = ImportFixture("resnet50.onnx");
  const OnnxImport four = ImportFixture("resnet50.onnx", 4);
  EXPECT_NEAR(ForwardFlops(four.forward) / ForwardFlops(one.forward), 4.0,
              1e-9);
  EXPECT_EQ(four.forward.total_persistent_bytes(),
            one.forward.total_persistent_bytes());
  const Graph& g = four.forward;
  EXPECT_THAT(g.tensor(g.output(*g.FindOp("input"), 0)).shape,
              ElementsAre(4, 3, 224, 224));
  EXPECT_THAT(g.tensor(g.output(*g.FindOp("fc/Gemm"), 0)).shape,
              ElementsAre(4, 1000));
}

TEST(OnnxImportTest, EveryFixtureImportsAndExpandsForTraining) {
  struct Fixture {
    std::string file;
    int64_t batch;
    int parameters;
    int64_t parameter_elements;
  };
  for (const Fixture& f : std::vector<Fixture>{
           {"resnet18.onnx", 0, 62, 11689512},
           {"resnet50.onnx", 0, 161, 25557032},
           {"inception_v3.onnx", 0, 284, 23834568},
           {"transformer_encoder.onnx", 2, 24, 1579520},
       }) {
    SCOPED_TRACE(f.file);
    const OnnxImport imported = ImportFixture(f.file, f.batch);
    const Graph& g = imported.forward;
    EXPECT_TRUE(imported.warnings.empty());
    EXPECT_EQ(TypeCounts(g)["VariableV2"], f.parameters);
    EXPECT_EQ(BytesOfType(g, "VariableV2"), f.parameter_elements * 4);
    for (OpId op = 0; op < g.num_ops(); ++op) {
      EXPECT_EQ(g.phase(op), Phase::kForward) << g.op_name(op);
    }
    TrainingOptions adam;
    adam.optimizer = Optimizer::kAdam;
    StatusOr<Graph> training = ExpandForTraining(g, adam);
    ASSERT_TRUE(training.ok()) << training.status().message();
    std::map<std::string, int> types = TypeCounts(*training);
    EXPECT_EQ(types["ApplyAdam"], f.parameters);
    // Adam's two slots per parameter element on top of the weights.
    EXPECT_EQ(BytesOfType(*training, "ApplyAdam"),
              2 * f.parameter_elements * 4);
    EXPECT_NEAR(training->total_flops() / ForwardFlops(g), 3.0, 0.45);
  }
}

// What PyTorch said of a fixture when tools/export_onnx.py exported it.
struct ExportFacts {
  int64_t export_batch = 0;
  int parameters = 0;
  int64_t parameter_bytes = 0;
};

ExportFacts FactsOf(const std::string& stem) {
  StatusOr<std::string> text = ReadTextFile(kFixtures + stem + ".json");
  EXPECT_TRUE(text.ok()) << text.status().message();
  if (!text.ok()) std::abort();
  const nlohmann::json j = nlohmann::json::parse(*text);
  return {j.at("export_batch").get<int64_t>(), j.at("parameters").get<int>(),
          j.at("parameter_bytes").get<int64_t>()};
}

// The update ops of a training graph: one "Apply<Optimizer>" (or
// "SparseApply<Optimizer>" for an embedding) per trained parameter.
int UpdateOpsApplied(const Graph& g) {
  int count = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const std::string& type = g.op_type(op);
    count += g.phase(op) == Phase::kUpdate &&
             (type.rfind("Apply", 0) == 0 || type.rfind("SparseApply", 0) == 0);
  }
  return count;
}

// PyTorch's nn.LSTM weights reach the ONNX LSTM node through Slice, Concat
// and Unsqueeze: they are parameters all the same, with their own bytes,
// gradient and update.
TEST(OnnxImportTest, LstmWeightsBehindShapeOpsAreParameters) {
  const ExportFacts facts = FactsOf("lstm_seq2seq");
  const OnnxImport imported = ImportFixture("lstm_seq2seq.onnx");
  const Graph& g = imported.forward;
  EXPECT_EQ(TypeCounts(g)["VariableV2"], facts.parameters);
  EXPECT_EQ(BytesOfType(g, "VariableV2"), facts.parameter_bytes);
  const std::optional<OpId> w = g.FindOp("enc.weight_ih_l0");
  ASSERT_TRUE(w.has_value());
  EXPECT_THAT(g.tensor(g.output(*w, 0)).shape, ElementsAre(1024, 128));
  StatusOr<Graph> training = ExpandForTraining(g);
  ASSERT_TRUE(training.ok()) << training.status().message();
  EXPECT_EQ(UpdateOpsApplied(*training), facts.parameters);
  EXPECT_TRUE(training->FindOp("enc.weight_hh_l3/ApplyGradientDescent"));
}

// GPT-2's LM head shares the token embedding: one parameter, one update,
// its gradient summed from both uses. The causal masks are buffers: they
// take memory but get no update.
TEST(OnnxImportTest, Gpt2TiedEmbeddingIsOneParameter) {
  const ExportFacts facts = FactsOf("gpt2_decoder");
  const OnnxImport imported = ImportFixture("gpt2_decoder.onnx");
  const int64_t mask_bytes = 2 * 32 * 32 * 4;
  EXPECT_EQ(BytesOfType(imported.forward, "VariableV2"),
            facts.parameter_bytes + mask_bytes);
  StatusOr<Graph> training = ExpandForTraining(imported.forward);
  ASSERT_TRUE(training.ok()) << training.status().message();
  EXPECT_EQ(UpdateOpsApplied(*training), facts.parameters);
  EXPECT_TRUE(training->FindOp("gradients/wte.weight/AddN_0"));
  EXPECT_FALSE(training->FindOp("blocks.0.attn.mask/ApplyGradientDescent"));
}

// A bias's gradient is a sum of the output gradient over every axis but
// the channel: one add per output element, not a filter gradient.
TEST(OnnxImportTest, BiasedConvBiasGradientIsAReduction) {
  const OnnxImport imported = ImportFixture("small_cnn_eval.onnx");
  StatusOr<Graph> training = ExpandForTraining(imported.forward);
  ASSERT_TRUE(training.ok()) << training.status().message();
  const Graph& g = *training;
  const std::optional<OpId> conv = g.FindOp("features/features.0/Conv");
  ASSERT_TRUE(conv.has_value());
  const std::optional<OpId> bias_grad =
      g.FindOp("gradients/features/features.0/Conv_grad/BiasGrad");
  ASSERT_TRUE(bias_grad.has_value());
  const TensorInfo& out = g.tensor(g.output(*conv, 0));
  int64_t out_elements = 1;
  for (int64_t d : out.shape) out_elements *= d;
  EXPECT_GT(g.flops(*bias_grad), 0);
  EXPECT_LE(g.flops(*bias_grad), out_elements);
  // The input and filter gradients each cost the forward's products.
  const double products = g.flops(*conv) - out_elements;
  EXPECT_DOUBLE_EQ(
      g.flops(*g.FindOp(
          "gradients/features/features.3/Conv_grad/ConvBackpropInput")),
      g.flops(*g.FindOp("features/features.3/Conv")) -
          g.tensor(g.output(*g.FindOp("features/features.3/Conv"), 0)).bytes /
              4);
  EXPECT_DOUBLE_EQ(
      g.flops(*g.FindOp(
          "gradients/features/features.0/Conv_grad/ConvBackpropFilter")),
      products);
}

// A CNN's training step is about three forward passes: the input and the
// filter gradients of each conv, the cheaper normalization and activation
// gradients, the update.
TEST(OnnxImportTest, ResNet18TrainingFlopsAreThreeTimesForward) {
  const OnnxImport imported = ImportFixture("resnet18.onnx");
  StatusOr<Graph> training = ExpandForTraining(imported.forward);
  ASSERT_TRUE(training.ok()) << training.status().message();
  const double ratio = training->total_flops() / ForwardFlops(imported.forward);
  EXPECT_GE(ratio, 2.8);
  EXPECT_LE(ratio, 3.2);
}

// Each fixture exported at a fixed batch imports at twice and half that
// batch: the baked shape constants (attention's reshapes, the LSTM's zero
// initial states) are rescaled, parameters are untouched, and every op
// whose output holds the batch costs exactly the ratio more or less.
TEST(OnnxImportTest, FixedBatchFixturesImportAtOtherBatches) {
  for (const std::string stem :
       {"lstm_seq2seq", "gpt2_decoder", "transformer_encoder_b8"}) {
    SCOPED_TRACE(stem);
    const ExportFacts facts = FactsOf(stem);
    const OnnxImport base = ImportFixture(stem + ".onnx");
    for (const int64_t batch :
         {2 * facts.export_batch, facts.export_batch / 2}) {
      SCOPED_TRACE(batch);
      const double ratio = static_cast<double>(batch) / facts.export_batch;
      const OnnxImport scaled = ImportFixture(stem + ".onnx", batch);
      const Graph& a = base.forward;
      const Graph& b = scaled.forward;
      EXPECT_EQ(BytesOfType(b, "VariableV2"), BytesOfType(a, "VariableV2"));
      ASSERT_EQ(a.num_ops(), b.num_ops());
      int scaled_ops = 0;
      for (OpId op = 0; op < a.num_ops(); ++op) {
        const std::optional<OpId> other = b.FindOp(a.op_name(op));
        ASSERT_TRUE(other.has_value()) << a.op_name(op);
        bool holds_batch = false;
        for (int k = 0; k < a.num_outputs(op); ++k) {
          holds_batch = holds_batch || a.tensor(a.output(op, k)).shape !=
                                           b.tensor(b.output(*other, k)).shape;
        }
        scaled_ops += holds_batch;
        EXPECT_DOUBLE_EQ(b.flops(*other),
                         a.flops(op) * (holds_batch ? ratio : 1.0))
            << a.op_name(op);
        if (a.op_type(op) == "VariableV2") {
          EXPECT_FALSE(holds_batch) << a.op_name(op);
        }
      }
      EXPECT_GT(scaled_ops, 0);
      EXPECT_NEAR(ForwardFlops(b) / ForwardFlops(a), ratio, 1e-4 * ratio);
    }
  }
}

// The same encoder exported at a fixed batch of 2 and with a dynamic batch
// axis: imported at another batch, the rescaled export costs exactly what
// the dynamic one does, forward and training step.
TEST(OnnxImportTest, FixedBatchExportCostsWhatTheDynamicExportDoes) {
  for (const int64_t batch : {1, 8}) {
    SCOPED_TRACE(batch);
    const OnnxImport fixed =
        ImportFixture("transformer_encoder_b2.onnx", batch);
    const OnnxImport dynamic = ImportFixture("transformer_encoder.onnx", batch);
    EXPECT_EQ(BytesOfType(fixed.forward, "VariableV2"),
              BytesOfType(dynamic.forward, "VariableV2"));
    EXPECT_DOUBLE_EQ(ForwardFlops(fixed.forward),
                     ForwardFlops(dynamic.forward));
    StatusOr<Graph> a = ExpandForTraining(fixed.forward);
    StatusOr<Graph> b = ExpandForTraining(dynamic.forward);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_DOUBLE_EQ(a->total_flops(), b->total_flops());
  }
}

// view(2, -1) of an [8, 4] batch mixes the batch into the features: no
// other batch follows from the export, so --batch is refused, naming the
// node and the fix.
TEST(OnnxImportTest, BatchMixedIntoALiteralShapeIsRefused) {
  OnnxImportOptions options;
  options.batch = 16;
  StatusOr<OnnxImport> imported =
      ImportOnnxFile(kFixtures + "batch_mixing.onnx", options);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(
      imported.status().message(),
      AllOf(HasSubstr("batch_mixing.onnx"), HasSubstr("'/Reshape'"),
            HasSubstr("dynamic batch axis"), HasSubstr("omit --batch")));
  // At its own batch it imports.
  EXPECT_TRUE(ImportOnnxFile(kFixtures + "batch_mixing.onnx").ok());
}

// An eval-mode export with BatchNorm folded into the convs, and one whose
// equal parameters the exporter aliased through Identity, each get one
// warning and still import; the training-mode fixtures get none.

// The PyTorch fixtures exported in training mode without aliased
// parameters, with the batch to import them at (0: their own): none of
// them should warn.
std::vector<std::pair<std::string, int>> TrainingModeFixtures() {
  return {{"resnet18.onnx", 0},
          {"resnet50.onnx", 0},
          {"inception_v3.onnx", 0},
          {"transformer_encoder.onnx", 2},
          {"lstm_seq2seq.onnx", 0},
          {"gpt2_decoder.onnx", 0},
          {"transformer_encoder_b8.onnx", 0},
          {"transformer_encoder_b2.onnx", 0},
          {"batch_mixing.onnx", 0}};
}

TEST(OnnxImportTest, ExportsThatCannotBeTrainingGraphsWarn) {
  const OnnxImport eval = ImportFixture("small_cnn_eval.onnx");
  ASSERT_EQ(eval.warnings.size(), 1u);
  EXPECT_THAT(eval.warnings[0],
              AllOf(HasSubstr("small_cnn_eval.onnx"), HasSubstr("eval-mode"),
                    HasSubstr("'onnx::Conv_25'"), HasSubstr("training mode")));
  // Its equal parameters are un-merged, and the eval-mode export named.
  const OnnxImport aliased = ImportFixture("aliased_mlp.onnx");
  ASSERT_EQ(aliased.warnings.size(), 2u);
  EXPECT_THAT(aliased.warnings[0],
              AllOf(HasSubstr("eval-mode"), HasSubstr("no Dropout")));
  EXPECT_THAT(aliased.warnings[1],
              AllOf(HasSubstr("merged 8 parameters"),
                    HasSubstr("'2.1.bias' = '0.1.bias'"), HasSubstr("Identity"),
                    HasSubstr("parameter of its own"),
                    HasSubstr("--keep-merged-parameters")));
  for (const auto& [file, batch] : TrainingModeFixtures()) {
    SCOPED_TRACE(file);
    EXPECT_THAT(ImportFixture(file, batch).warnings, ::testing::IsEmpty());
  }
}

// Every operator PyTorch put in the fixtures has a cost formula.
TEST(OnnxImportTest, FixtureOperatorsAreAllCosted) {
  std::vector<std::pair<std::string, int>> fixtures = TrainingModeFixtures();
  fixtures.insert(fixtures.end(),
                  {{"small_cnn_eval.onnx", 0},
                   {"aliased_mlp.onnx", 0},
                   {"transformer_untrained.onnx", 0},
                   {"cnn_eval_bn.onnx", 0}});
  for (const auto& [file, batch] : fixtures) {
    SCOPED_TRACE(file);
    const OnnxImport imported = ImportFixture(file, batch);
    for (const std::string& w : imported.warnings) {
      EXPECT_THAT(w, Not(HasSubstr("without a cost formula")));
    }
  }
}

// The transformer's reshapes are computed from Shape ops on a symbolic
// batch: after the override they fold away, and every shape is static.
TEST(OnnxImportTest, TransformerShapeArithmeticFoldsAway) {
  const OnnxImport imported = ImportFixture("transformer_encoder.onnx", 3);
  const Graph& g = imported.forward;
  std::map<std::string, int> types = TypeCounts(g);
  for (const char* folded :
       {"Shape", "Constant", "Gather", "Unsqueeze", "Concat", "Cast"}) {
    EXPECT_EQ(types.count(folded), 0u) << folded;
  }
  EXPECT_EQ(types["MatMul"], 10);
  EXPECT_EQ(types["LayerNormalization"], 4);
  EXPECT_THAT(
      g.tensor(g.output(*g.FindOp("layers.0/self_attn/Reshape"), 0)).shape,
      ElementsAre(64, 12, 64));  // [seq, batch * heads, head dim].
  // Per token and layer: q, k, v and output projections (4 * 256 * 256),
  // the feed-forward (2 * 256 * 1024) and attention over 64 positions
  // (2 * 64 * 256) multiply-adds.
  const double macs =
      3 * 64 * 2 * (4 * 256 * 256 + 2 * 256 * 1024 + 2 * 64 * 256);
  EXPECT_NEAR(ForwardFlops(g) / (2 * macs), 1.0, 0.03);
}

// An untrained nn.TransformerEncoder exported as torch.onnx.export does by
// default: its four layers are deep copies, so the exporter merged the
// last three's parameters into the first's behind Identity nodes. Each is
// a parameter of its own again, and the count is PyTorch's; the merged
// reading stays behind an option.
TEST(OnnxImportTest, MergedParametersAreUnmergedToPyTorchsCount) {
  const ExportFacts facts = FactsOf("transformer_untrained");
  const OnnxImport imported = ImportFixture("transformer_untrained.onnx");
  EXPECT_EQ(TrainedParameters(imported.forward),
            std::make_pair(facts.parameters,
                           ParameterElementsOf("transformer_untrained")));
  EXPECT_EQ(imported.batch, 8);
  // Layer 3's attention reads its own weights, not layer 0's.
  const Graph& g = imported.forward;
  const std::optional<OpId> w = g.FindOp("layers.3.self_attn.out_proj.weight");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(g.scope(*w), "layers.3/self_attn");
  for (OpId op = 0; op < g.num_ops(); ++op) {
    EXPECT_NE(g.op_type(op), "Identity") << g.op_name(op);
  }
  ASSERT_EQ(imported.warnings.size(), 2u);
  EXPECT_THAT(imported.warnings[0],
              AllOf(HasSubstr("eval-mode"), HasSubstr("merged"),
                    HasSubstr("no Dropout")));
  // The folded weight matrices ("onnx::MatMul_409", transposed) as well as
  // those named like state_dict entries.
  EXPECT_THAT(imported.warnings[1],
              AllOf(HasSubstr("merged 39 parameters"),
                    HasSubstr("parameter of its own"),
                    ContainsRegex("'layers\\.[1-3]\\.[a-z0-9_.]+' = "
                                  "'layers\\.0\\.")));

  OnnxImportOptions merged;
  merged.keep_merged_parameters = true;
  StatusOr<OnnxImport> kept =
      ImportOnnxFile(kFixtures + "transformer_untrained.onnx", merged);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  const auto [tensors, elements] = TrainedParameters(kept->forward);
  EXPECT_LT(tensors, facts.parameters / 2);
  EXPECT_LT(elements, ParameterElementsOf("transformer_untrained") / 2);
  EXPECT_THAT(kept->warnings.back(),
              AllOf(HasSubstr("read as the file has them"),
                    HasSubstr("--keep-merged-parameters")));
}

// A DenseNet-style CNN exported in eval mode at opset 13: BatchNorm in
// inference form (one output, running statistics as inputs, and no
// training_mode attribute at this opset) and Dropout removed are named;
// the running statistics the exporter merged with equal weights are
// buffers again, so the count of parameters is PyTorch's.
TEST(OnnxImportTest, EvalModeBatchNormIsFlaggedAndBuffersAreNotParameters) {
  const ExportFacts facts = FactsOf("cnn_eval_bn");
  const OnnxImport imported = ImportFixture("cnn_eval_bn.onnx");
  EXPECT_EQ(TrainedParameters(imported.forward),
            std::make_pair(facts.parameters,
                           ParameterElementsOf("cnn_eval_bn")));
  ASSERT_GE(imported.warnings.size(), 1u);
  EXPECT_THAT(imported.warnings[0],
              AllOf(HasSubstr("eval-mode"),
                    HasSubstr("4 of 4 BatchNormalization nodes are in "
                              "inference form"),
                    HasSubstr("no Dropout"), HasSubstr("training mode")));
  if (imported.warnings.size() > 1) {
    EXPECT_THAT(imported.warnings[1],
                AllOf(HasSubstr("pair a buffer"),
                      Not(HasSubstr("share one gradient"))));
  }
}

}  // namespace
}  // namespace dplace
