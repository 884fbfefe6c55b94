// ONNX import: the committed fixtures (tools/export_onnx.py) against
// published figures, cost formulas against hand-computed counts, and every
// kind of bad input against its one-line error or warning.
#include "dplace/io/onnx/onnx_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dplace/graph/parameters.h"
#include "dplace/graph/training.h"
#include "dplace/io/file.h"
#include "dplace/io/onnx/constant_folding.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
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

// The trained parameters of a forward graph, as PyTorch counts them: the
// tensors, and the numbers in them.
std::pair<int, int64_t> TrainedParameters(const Graph& forward) {
  StatusOr<Graph> training = ExpandForTraining(forward);
  EXPECT_TRUE(training.ok()) << training.status().message();
  if (!training.ok()) std::abort();
  const ParameterCounts counts = CountParameters(*training);
  return {counts.trained.tensors, counts.trained.elements};
}

int64_t ParameterElementsOf(const std::string& stem) {
  StatusOr<std::string> text = ReadTextFile(kFixtures + stem + ".json");
  EXPECT_TRUE(text.ok()) << text.status().message();
  if (!text.ok()) std::abort();
  return nlohmann::json::parse(*text).at("parameter_elements").get<int64_t>();
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

// --- Hand-built models -----------------------------------------------------

// Builds small ONNX models for the tests. A dim of -1 is symbolic ("N").
class Model {
 public:
  explicit Model(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  Model& Input(const std::string& name, const std::vector<int64_t>& dims,
               int elem_type = onnx::TensorProto::FLOAT) {
    SetType(model_.mutable_graph()->add_input(), name, dims, elem_type);
    return *this;
  }
  Model& InputWithoutShape(const std::string& name) {
    auto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::FLOAT);
    return *this;
  }
  Model& Output(const std::string& name,
                int elem_type = onnx::TensorProto::FLOAT) {
    auto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    return *this;
  }
  Model& ValueInfo(const std::string& name, const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_value_info(), name, dims,
            onnx::TensorProto::FLOAT);
    return *this;
  }
  // Weight data is never read: dims alone, unless `int64_values` is given.
  Model& Initializer(const std::string& name, const std::vector<int64_t>& dims,
                     int elem_type = onnx::TensorProto::FLOAT,
                     const std::vector<int64_t>& int64_values = {}) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem_type);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : int64_values) t->add_int64_data(v);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? "/" + op : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  onnx::ModelProto& proto() { return model_; }

  StatusOr<OnnxImport> Import(int64_t batch = 0) const {
    OnnxImportOptions options;
    options.batch = batch;
    return ImportOnnxBytes(model_.SerializeAsString(), "test.onnx", options);
  }

 private:
  static void SetType(onnx::ValueInfoProto* v, const std::string& name,
                      const std::vector<int64_t>& dims, int elem_type) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0) {
        shape->add_dim()->set_dim_param("N");
      } else {
        shape->add_dim()->set_dim_value(d);
      }
    }
  }

  onnx::ModelProto model_;
};

void SetInts(onnx::NodeProto& node, const std::string& name,
             const std::vector<int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}
void SetInt(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}
void SetString(onnx::NodeProto& node, const std::string& name,
               const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

double FlopsOf(const StatusOr<OnnxImport>& imported, const std::string& op) {
  EXPECT_TRUE(imported.ok()) << imported.status().message();
  if (!imported.ok()) return -1;
  const std::optional<OpId> id = imported->forward.FindOp(op);
  EXPECT_TRUE(id.has_value()) << op;
  return id ? imported->forward.flops(*id) : -1;
}

TEST(OnnxImportTest, GemmWithInitializerAndInputWeights) {
  Model m;
  m.Input("x", {4, 8}).Input("fc.bias", {16}).Initializer("w", {16, 8});
  m.Initializer("shape", {2}, onnx::TensorProto::INT64, {2, 32});
  SetInt(m.Node("Gemm", {"x", "w", "fc.bias"}, {"y"}), "transB", 1);
  m.Node("Reshape", {"y", "shape"}, {"z"});
  m.Output("z");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  const Graph& g = imported->forward;
  EXPECT_EQ(g.op_type(*g.FindOp("w")), "VariableV2");
  EXPECT_EQ(g.persistent_bytes(*g.FindOp("w")), 16 * 8 * 4);
  EXPECT_EQ(g.op_type(*g.FindOp("fc.bias")), "VariableV2");
  EXPECT_EQ(g.op_type(*g.FindOp("x")), "IteratorGetNext");
  // The integer shape is a constant of the Reshape, not an op.
  EXPECT_FALSE(g.FindOp("shape").has_value());
  EXPECT_EQ(g.num_ops(), 5);
  EXPECT_DOUBLE_EQ(FlopsOf(imported, "Gemm"), 2.0 * 4 * 16 * 8 + 4 * 16);
  EXPECT_THAT(g.tensor(g.output(*g.FindOp("Reshape"), 0)).shape,
              ElementsAre(2, 32));
}

// Malformed shape arithmetic is left unfolded, never read out of bounds: a
// Slice without its ends operand, a Range of empty tensors.
TEST(OnnxImportTest, MalformedSliceAndRangeAreNotFolded) {
  using onnx_internal::ConstTensor;
  using onnx_internal::Evaluate;
  const ConstTensor data{onnx::TensorProto::INT64, {4}, {1, 2, 3, 4}};
  const ConstTensor start{onnx::TensorProto::INT64, {1}, {1}};
  const ConstTensor empty{onnx::TensorProto::INT64, {0}, {}};
  onnx::NodeProto slice;
  slice.set_op_type("Slice");
  // The operand list a two-input node gives: no ends, nothing after it.
  const std::vector<const ConstTensor*> no_ends = {&data, &start};
  std::optional<ConstTensor> sliced;
  EXPECT_NO_THROW(sliced = Evaluate(slice, no_ends, std::nullopt));
  EXPECT_FALSE(sliced.has_value());
  onnx::NodeProto range;
  range.set_op_type("Range");
  std::optional<ConstTensor> ranged;
  EXPECT_NO_THROW(ranged =
                      Evaluate(range, {&empty, &empty, &empty}, std::nullopt));
  EXPECT_FALSE(ranged.has_value());
}

TEST(OnnxImportTest, CostFormulas) {
  {  // Depthwise 3x3 convolution with bias, 32 channels, 10x10, pad 1.
    Model m;
    m.Input("x", {2, 32, 10, 10}).Initializer("w", {32, 1, 3, 3});
    m.Initializer("b", {32});
    auto& conv = m.Node("Conv", {"x", "w", "b"}, {"y"});
    SetInt(conv, "group", 32);
    SetInts(conv, "pads", {1, 1, 1, 1});
    m.Output("y");
    EXPECT_DOUBLE_EQ(FlopsOf(m.Import(), "Conv"),
                     2.0 * (2 * 32 * 10 * 10) * 9 + 2 * 32 * 10 * 10);
  }
  {  // Transposed 2x2 convolution, stride 2: 8 -> 4 channels, 5x5 -> 10x10.
    Model m;
    m.Input("x", {1, 8, 5, 5}).Initializer("w", {8, 4, 2, 2});
    SetInts(m.Node("ConvTranspose", {"x", "w"}, {"y"}), "strides", {2, 2});
    m.Output("y");
    EXPECT_DOUBLE_EQ(FlopsOf(m.Import(), "ConvTranspose"),
                     2.0 * (8 * 5 * 5) * (4 * 2 * 2));
  }
  {  // Batched MatMul broadcasting a weight: [3, 5, 7] x [7, 11].
    Model m;
    m.Input("x", {3, 5, 7}).Initializer("w", {7, 11});
    m.Node("MatMul", {"x", "w"}, {"y"});
    m.Output("y");
    EXPECT_DOUBLE_EQ(FlopsOf(m.Import(), "MatMul"), 2.0 * 3 * 5 * 11 * 7);
  }
  {  // Einsum batched matmul.
    Model m;
    m.Input("a", {2, 3, 4}).Input("b", {2, 4, 5});
    SetString(m.Node("Einsum", {"a", "b"}, {"y"}), "equation", "bij,bjk->bik");
    m.Output("y");
    EXPECT_DOUBLE_EQ(FlopsOf(m.Import(), "Einsum"), 2.0 * 2 * 3 * 4 * 5);
  }
  {  // MaxPool 3x3 stride 2 over 9x9: 4x4 outputs of 9 compares each.
    Model m;
    m.Input("x", {1, 2, 9, 9});
    auto& pool = m.Node("MaxPool", {"x"}, {"y"});
    SetInts(pool, "kernel_shape", {3, 3});
    SetInts(pool, "strides", {2, 2});
    m.Output("y");
    EXPECT_DOUBLE_EQ(FlopsOf(m.Import(), "MaxPool"), 1.0 * 2 * 4 * 4 * 9);
  }
  {  // LSTM: 10 steps, batch 4, input 16, hidden 32, one direction.
    Model m;
    m.Input("x", {10, 4, 16}).Initializer("W", {1, 128, 16});
    m.Initializer("R", {1, 128, 32});
    SetInt(m.Node("LSTM", {"x", "W", "R"}, {"y"}), "hidden_size", 32);
    m.Output("y");
    const double gates = 4.0 * 4 * 32;  // batch * 4 gates * hidden.
    EXPECT_DOUBLE_EQ(FlopsOf(m.Import(), "LSTM"),
                     10 * (2 * gates * (16 + 32) + 3 * gates + 4 * 4 * 32));
  }
}

TEST(OnnxImportTest, ShapeReadsNoDataAndCarriesNoGradient) {
  // y = Reshape(x * w, Shape(x)) with a Shape that cannot fold (x's
  // batch is known only after inference): here x is static, so it folds
  // and leaves no op; the product keeps its gradient.
  Model m;
  m.Input("x", {2, 3}).Initializer("w", {2, 3});
  m.Node("Mul", {"x", "w"}, {"p"});
  m.Node("Shape", {"p"}, {"s"});
  m.Node("Reshape", {"p", "s"}, {"y"});
  m.Output("y");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  EXPECT_FALSE(imported->forward.FindOp("Shape").has_value());
  StatusOr<Graph> training = ExpandForTraining(imported->forward);
  ASSERT_TRUE(training.ok()) << training.status().message();
  EXPECT_EQ(TypeCounts(*training)["ApplyGradientDescent"], 1);
}

// --- Bad input -------------------------------------------------------------

TEST(OnnxImportTest, NotOnnxFileIsAnError) {
  const std::string json =
      std::string(DPLACE_SOURCE_DIR) + "/examples/mlp_training.json";
  StatusOr<OnnxImport> imported = ImportOnnxFile(json);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(),
              AllOf(HasSubstr("mlp_training.json"), HasSubstr("ONNX")));
  StatusOr<OnnxImport> text = ImportOnnxBytes("hello, world\n", "x.onnx");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("x.onnx: not"));
  EXPECT_THAT(ImportOnnxBytes("", "empty.onnx").status().message(),
              HasSubstr("empty.onnx: not an ONNX model"));
}

TEST(OnnxImportTest, MissingFileIsAnError) {
  StatusOr<OnnxImport> imported = ImportOnnxFile(kFixtures + "nope.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(imported.status().message(), HasSubstr("nope.onnx"));
}

TEST(OnnxImportTest, TruncatedFixtureIsAnError) {
  StatusOr<std::string> bytes = ReadTextFile(kFixtures + "resnet50.onnx");
  ASSERT_TRUE(bytes.ok());
  for (double fraction : {0.1, 0.5, 0.9, 0.999}) {
    const std::string cut =
        bytes->substr(0, static_cast<size_t>(bytes->size() * fraction));
    StatusOr<OnnxImport> imported = ImportOnnxBytes(cut, "cut.onnx");
    ASSERT_FALSE(imported.ok()) << fraction;
    EXPECT_THAT(imported.status().message(),
                AllOf(HasSubstr("cut.onnx: "), HasSubstr("truncated")))
        << fraction;
    EXPECT_EQ(imported.status().message().find('\n'), std::string::npos);
  }
}

TEST(OnnxImportTest, InputWithoutShapeIsAnError) {
  Model m;
  m.InputWithoutShape("x").Initializer("w", {3, 3});
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Output("y");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(
      imported.status().message(),
      AllOf(HasSubstr("test.onnx: "), HasSubstr("'x'"), HasSubstr("no shape")));
}

// An operator libonnx does not know, without a declared output shape: the
// error names the node whose output has no shape.
TEST(OnnxImportTest, UnknownOperatorWithoutShapeIsAnError) {
  Model m;
  m.Input("x", {2, 3}).Initializer("w", {2, 3});
  m.Node("Mul", {"x", "w"}, {"p"});
  m.Node("Frobnicate", {"p"}, {"q"}, "/block/frob").set_domain("com.example");
  m.Node("Relu", {"q"}, {"y"});
  m.Output("y");
  m.proto().add_opset_import()->set_domain("com.example");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(),
              AllOf(HasSubstr("node '/block/frob' (Frobnicate)"),
                    HasSubstr("output 'q'"), HasSubstr("no shape")));
}

TEST(OnnxImportTest, UnknownOperatorsAreListedInOneWarning) {
  Model m;
  m.Input("x", {2, 3}).Initializer("w", {2, 3});
  m.Node("Mul", {"x", "w"}, {"p"});
  m.Node("Frobnicate", {"p"}, {"q"}, "/block/frob").set_domain("com.example");
  m.Node("Frobnicate", {"q"}, {"r"}, "/block/frob2").set_domain("com.example");
  m.Node("Relu", {"r"}, {"y"});
  m.Output("y");
  m.ValueInfo("q", {2, 3}).ValueInfo("r", {2, 3});
  auto* opset = m.proto().add_opset_import();
  opset->set_domain("com.example");
  opset->set_version(1);
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  ASSERT_EQ(imported->warnings.size(), 1u);
  EXPECT_THAT(
      imported->warnings[0],
      AllOf(HasSubstr("test.onnx"), HasSubstr("com.example:Frobnicate (2 ops)"),
            HasSubstr("memory-only"), Not(HasSubstr("Relu"))));
  const Graph& g = imported->forward;
  const OpId frob = *g.FindOp("block/frob");
  EXPECT_EQ(g.flops(frob), 0);
  EXPECT_EQ(g.bytes_accessed(frob), 2 * 6 * 4);  // Reads p, writes q.
  EXPECT_EQ(g.scope(frob), "block");
  EXPECT_TRUE(ExpandForTraining(g).ok());
}

TEST(OnnxImportTest, SymbolicBatchNeedsAnOverride) {
  Model m;
  m.Input("x", {-1, 3}).Initializer("w", {3, 5});
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Output("y");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(),
              AllOf(HasSubstr("test.onnx: input 'x'"),
                    HasSubstr("symbolic ('N')"), HasSubstr("--batch")));
  StatusOr<OnnxImport> with_batch = m.Import(6);
  EXPECT_DOUBLE_EQ(FlopsOf(with_batch, "MatMul"), 2.0 * 6 * 5 * 3);
}

TEST(OnnxImportTest, SymbolicDimOtherThanBatchIsAnError) {
  Model m;
  m.Input("x", {4, -1}).Initializer("w", {3, 5});
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Output("y");
  StatusOr<OnnxImport> imported = m.Import(8);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(),
              AllOf(HasSubstr("input 'x': dim 1 is symbolic"),
                    HasSubstr("first (batch) dim")));
}

TEST(OnnxImportTest, TransformerFixtureNeedsABatch) {
  StatusOr<OnnxImport> imported =
      ImportOnnxFile(kFixtures + "transformer_encoder.onnx");
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(),
              AllOf(HasSubstr("transformer_encoder.onnx: input 'src'"),
                    HasSubstr("symbolic ('batch')")));
}

TEST(OnnxImportTest, NewerOpsetWarnsAndImports) {
  Model m(/*opset=*/99);
  m.Input("x", {2, 3}).Initializer("w", {3, 4});
  m.Node("MatMul", {"x", "w"}, {"p"});
  m.Node("Relu", {"p"}, {"y"});
  m.Output("y");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  ASSERT_EQ(imported->warnings.size(), 1u);
  EXPECT_THAT(imported->warnings[0],
              AllOf(HasSubstr("opset 99"), HasSubstr("newer")));
  EXPECT_DOUBLE_EQ(FlopsOf(imported, "MatMul"), 2.0 * 2 * 4 * 3);
}

TEST(OnnxImportTest, ModelLocalFunctionWarnsAndImports) {
  Model m;
  m.Input("x", {2, 3}).Initializer("w", {2, 3});
  m.Node("Mul", {"x", "w"}, {"p"});
  m.Node("Twice", {"p"}, {"y"}, "/call").set_domain("local");
  m.Output("y");
  auto* opset = m.proto().add_opset_import();
  opset->set_domain("local");
  opset->set_version(1);
  auto* f = m.proto().add_functions();
  f->set_name("Twice");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  auto* body = f->add_node();
  body->set_op_type("Add");
  body->add_input("a");
  body->add_input("a");
  body->add_output("b");
  auto* f_opset = f->add_opset_import();
  f_opset->set_domain("");
  f_opset->set_version(17);
  m.ValueInfo("y", {2, 3});
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  ASSERT_EQ(imported->warnings.size(), 1u);
  EXPECT_THAT(imported->warnings[0],
              AllOf(HasSubstr("model-local functions"), HasSubstr("Twice"),
                    HasSubstr("1 calls")));
  EXPECT_EQ(imported->forward.flops(*imported->forward.FindOp("call")), 0);
}

TEST(OnnxImportTest, UnsupportedElementTypeIsAnError) {
  Model m;
  m.Input("x", {2, 3}, onnx::TensorProto::STRING);
  m.Initializer("w", {2, 3});
  m.Node("Identity", {"x"}, {"y"});
  m.Node("Mul", {"w", "w"}, {"z"});
  m.Output("y", onnx::TensorProto::STRING).Output("z");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(),
              AllOf(HasSubstr("'x'"), HasSubstr("STRING")));
}

TEST(OnnxImportTest, DanglingInputIsAnError) {
  Model m;
  m.Input("x", {2, 3});
  m.Node("Relu", {"nowhere"}, {"y"}, "/act");
  m.Output("y");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(),
              AllOf(HasSubstr("test.onnx: node '/act' (Relu)"),
                    HasSubstr("input 'nowhere' is produced by no node")));
}

// Each operator's gradient as frameworks run it, by formula: a grouped
// (depthwise) conv's input and filter gradients cost its forward products
// and its bias gradient one add per output element; Gemm likewise; layer
// normalization 8 per element for the input, 2 and 1 for scale and bias;
// softmax 4 per element; erf (GELU's exact form) 5; each Einsum operand a
// contraction of the forward's size.
TEST(OnnxImportTest, GradientCostsByFormula) {
  Model m;
  m.Input("x", {2, 8, 6, 6})
      .Input("dw.weight", {8, 1, 3, 3})
      .Input("dw.bias", {8})
      .Input("ln.weight", {36})
      .Input("ln.bias", {36})
      .Input("fc.weight", {4, 288})
      .Input("fc.bias", {4})
      .Input("e.weight", {4, 4});
  onnx::NodeProto& conv =
      m.Node("Conv", {"x", "dw.weight", "dw.bias"}, {"c"}, "/dw/Conv");
  SetInt(conv, "group", 8);
  SetInts(conv, "pads", {1, 1, 1, 1});
  m.Initializer("flat", {3}, onnx::TensorProto::INT64, {2, 8, 36});
  m.Node("Reshape", {"c", "flat"}, {"r"}, "/Reshape");
  SetInt(m.Node("LayerNormalization", {"r", "ln.weight", "ln.bias"}, {"n"},
                "/ln/LayerNormalization"),
         "axis", -1);
  m.Node("Erf", {"n"}, {"g"}, "/Erf");
  SetInt(m.Node("Softmax", {"g"}, {"s"}, "/Softmax"), "axis", -1);
  m.Initializer("rows", {2}, onnx::TensorProto::INT64, {2, 288});
  m.Node("Reshape", {"s", "rows"}, {"f"}, "/Reshape_1");
  SetInt(m.Node("Gemm", {"f", "fc.weight", "fc.bias"}, {"y"}, "/fc/Gemm"),
         "transB", 1);
  SetString(m.Node("Einsum", {"y", "e.weight"}, {"z"}, "/Einsum"), "equation",
            "bi,ij->bj");
  m.Output("z");
  StatusOr<OnnxImport> imported = m.Import();
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  StatusOr<Graph> training = ExpandForTraining(imported->forward);
  ASSERT_TRUE(training.ok()) << training.status().message();
  const Graph& g = *training;
  const auto flops = [&](const std::string& op) {
    const std::optional<OpId> id = g.FindOp(op);
    EXPECT_TRUE(id.has_value()) << op;
    return id ? g.flops(*id) : -1.0;
  };
  // Depthwise: each of the 2*8*6*6 outputs is a 3x3 dot product.
  const double conv_out = 2 * 8 * 6 * 6;
  EXPECT_DOUBLE_EQ(flops("dw/Conv"), 2 * conv_out * 9 + conv_out);
  EXPECT_DOUBLE_EQ(flops("gradients/dw/Conv_grad/ConvBackpropFilter"),
                   2 * conv_out * 9);
  EXPECT_DOUBLE_EQ(flops("gradients/dw/Conv_grad/BiasGrad"), conv_out);
  // Typed as the dense kernels the cost model runs at dense efficiency.
  EXPECT_EQ(g.op_type(*g.FindOp("gradients/dw/Conv_grad/ConvBackpropFilter")),
            "Conv2DBackpropFilter");
  const double n = 2 * 8 * 36;
  EXPECT_DOUBLE_EQ(
      flops("gradients/ln/LayerNormalization_grad/LayerNormalizationGrad"),
      8 * n);
  EXPECT_DOUBLE_EQ(flops("gradients/ln/LayerNormalization_grad/ScaleGrad"),
                   2 * n);
  EXPECT_DOUBLE_EQ(flops("gradients/ln/LayerNormalization_grad/BiasGrad"), n);
  EXPECT_DOUBLE_EQ(flops("gradients/Erf_grad/ErfGrad"), 5 * n);
  double softmax = 0;
  for (const char* op : {"mul", "Sum", "sub", "mul_1"}) {
    softmax += flops(std::string("gradients/Softmax_grad/") + op);
  }
  EXPECT_DOUBLE_EQ(softmax, 4 * n);
  EXPECT_DOUBLE_EQ(flops("gradients/fc/Gemm_grad/MatMul"), 2.0 * 2 * 4 * 288);
  EXPECT_DOUBLE_EQ(flops("gradients/fc/Gemm_grad/MatMul_1"), 2.0 * 2 * 4 * 288);
  EXPECT_DOUBLE_EQ(flops("gradients/fc/Gemm_grad/BiasGrad"), 2 * 4);
  EXPECT_DOUBLE_EQ(flops("gradients/Einsum_grad/Einsum"), flops("Einsum"));
  EXPECT_DOUBLE_EQ(flops("gradients/Einsum_grad/Einsum_1"), flops("Einsum"));
}

// Data inputs whose first dims differ share no batch: --batch is refused
// rather than reshaping one of them into nonsense.
TEST(OnnxImportTest, DataInputsWithoutACommonBatchAreRefused) {
  Model m;
  m.Input("x", {8, 4}).Input("y", {4, 4});
  m.Node("MatMul", {"x", "y"}, {"z"});
  m.Output("z");
  EXPECT_TRUE(m.Import().ok());
  StatusOr<OnnxImport> imported = m.Import(16);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(),
              AllOf(HasSubstr("'x'"), HasSubstr("'y'"), HasSubstr("8"),
                    HasSubstr("omit --batch")));
}

}  // namespace
}  // namespace dplace
