// BERT (Devlin et al.) fine-tuned on SQuAD, as google-research/bert's
// modeling.py and run_squad.py build it in TensorFlow 1.x: embeddings, L
// transformer encoder layers, a span head predicting start and end
// positions. The benchmark of EAGLE and Mars: BERT-Base, sequence 384,
// batch 24, which does not fit one 16 GB GPU.
#include <cmath>
#include <string>
#include <vector>

#include "dplace/zoo/models.h"

namespace dplace {
namespace zoo_internal {
namespace {

struct BertConfig {
  int64_t layers, hidden, heads, intermediate;
};

constexpr int64_t kMaxPositions = 512;  // Rows of the position table.
constexpr int64_t kTypeVocab = 2;       // Segment A / B.

// modeling.py's gelu, the tanh approximation:
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), op by op.
Tensor Gelu(ModelBuilder& b, const Tensor& x) {
  const Tensor cubed = b.Binary("Pow", x, b.Const("Pow/y", {}));
  Tensor inner =
      b.Binary("Add", x, b.Binary("Mul", b.Const("mul/x", {}), cubed));
  inner = b.Binary("Mul", b.Const("mul_1/x", {}), inner);
  Tensor cdf = b.Binary("Add", b.Const("add_1/x", {}), b.Unary("Tanh", inner));
  cdf = b.Binary("Mul", b.Const("mul_2/x", {}), cdf);
  return b.Binary("Mul", x, cdf);
}

// [batch * seq, hidden] -> [batch, heads, seq, hidden / heads].
Tensor SplitHeads(ModelBuilder& b, const Tensor& x, int64_t batch, int64_t seq,
                  int64_t heads) {
  const int64_t size = x.dim(-1) / heads;
  const Tensor r = b.Reshape(x, {batch, seq, heads, size});
  return b.Transpose(r, {0, 2, 1, 3});
}

// Multi-head self-attention of `x` ([batch * seq, hidden]) with the additive
// mask `mask` ([batch, seq, seq]); returns the context, [batch * seq,
// hidden].
Tensor SelfAttention(ModelBuilder& b, const Tensor& x, const Tensor& mask,
                     int64_t batch, int64_t seq, int64_t heads) {
  auto scope = b.Scope("self");
  const int64_t hidden = x.dim(-1);
  const Tensor q =
      SplitHeads(b, b.Dense(x, hidden, "", "query"), batch, seq, heads);
  const Tensor k =
      SplitHeads(b, b.Dense(x, hidden, "", "key"), batch, seq, heads);
  const Tensor v =
      SplitHeads(b, b.Dense(x, hidden, "", "value"), batch, seq, heads);
  Tensor scores = b.BatchMatMul(q, k, /*transpose_b=*/true);
  scores = b.Binary("Mul", scores, b.Const("Mul/y", {}));  // 1 / sqrt(size).
  // adder = (1 - mask) * -10000, recomputed in every layer as modeling.py
  // does.
  const Tensor expanded = b.ExpandDims(mask, 1);
  const Tensor adder =
      b.Binary("Mul", b.Binary("Sub", b.Const("sub/x", {}), expanded),
               b.Const("mul/y", {}));
  scores = b.Binary("Add", scores, adder);
  const Tensor probs = b.Dropout(b.Softmax(scores));
  const Tensor context = b.BatchMatMul(probs, v, /*transpose_b=*/false);
  const Tensor t = b.Transpose(context, {0, 2, 1, 3});
  return b.Reshape(t, {batch * seq, hidden});
}

// Dense, dropout, residual Add and LayerNorm: the output of a sub-layer.
Tensor Residual(ModelBuilder& b, const Tensor& x, const Tensor& residual) {
  const Tensor y = b.Dropout(b.Dense(x, residual.dim(-1), "", "dense"));
  auto scope = b.Scope("LayerNorm");
  return b.LayerNorm(b.Binary("Add", y, residual));
}

Tensor EncoderLayer(ModelBuilder& b, const Tensor& x, const Tensor& mask,
                    const BertConfig& c, int64_t batch, int64_t seq) {
  Tensor attention;
  {
    auto scope = b.Scope("attention");
    const Tensor context = SelfAttention(b, x, mask, batch, seq, c.heads);
    auto output = b.Scope("output");
    attention = Residual(b, context, x);
  }
  Tensor intermediate;
  {
    auto scope = b.Scope("intermediate");
    intermediate = Gelu(b, b.Dense(attention, c.intermediate, "", "dense"));
  }
  auto scope = b.Scope("output");
  return Residual(b, intermediate, attention);
}

// Word + token type + position embeddings, LayerNorm, dropout; returns
// [batch * seq, hidden].
Tensor Embeddings(ModelBuilder& b, const Tensor& ids, const Tensor& segments,
                  int64_t vocab, int64_t hidden) {
  auto scope = b.Scope("embeddings");
  const int64_t batch = ids.dim(0), seq = ids.dim(1);
  Tensor flat_ids = b.Reshape(ids, {batch * seq});
  flat_ids.dtype = DataType::kInt32;
  const Tensor words =
      b.Reshape(b.Embedding(flat_ids, vocab, hidden, "word_embeddings"),
                {batch, seq, hidden});
  // Token types: one-hot [batch * seq, 2] times the type table.
  Tensor types;
  {
    auto type_scope = b.Scope("token_type_embeddings");
    const Tensor one_hot = b.Op(
        "OneHot",
        {b.Reshape(segments, {batch * seq}), b.IntConst("one_hot/depth"),
         b.Const("one_hot/on_value", {}), b.Const("one_hot/off_value", {})},
        {batch * seq, kTypeVocab}, 0);
    const Tensor table = b.Parameter("embedding", {kTypeVocab, hidden});
    types = b.Reshape(b.MatMul(one_hot, table), {batch, seq, hidden});
  }
  Tensor positions;
  {
    auto position_scope = b.Scope("position_embeddings");
    const Tensor table = b.Parameter("embedding", {kMaxPositions, hidden});
    const Tensor slice =
        b.Op("Slice",
             {table, b.IntConst("Slice/begin", 2), b.IntConst("Slice/size", 2)},
             {seq, hidden}, 0, "Slice");
    positions = b.Reshape(slice, {1, seq, hidden});
  }
  Tensor sum = b.Binary("Add", b.Binary("Add", words, types), positions);
  {
    auto norm = b.Scope("LayerNorm");
    sum = b.LayerNorm(sum);
  }
  return b.Reshape(b.Dropout(sum), {batch * seq, hidden});
}

// modeling.py's create_attention_mask_from_input_mask: [batch, seq, seq].
Tensor AttentionMask(ModelBuilder& b, const Tensor& input_mask) {
  auto scope = b.Scope("attention_mask");
  const int64_t batch = input_mask.dim(0), seq = input_mask.dim(1);
  const Tensor to_mask =
      b.Unary("Cast", b.Reshape(input_mask, {batch, 1, seq}), 0);
  const Tensor ones = b.Const("ones", {batch, seq, 1});
  return b.Binary("Mul", ones, to_mask);
}

// -mean(sum(one_hot(positions) * log_softmax(logits))), per run_squad.py.
Tensor PositionLoss(ModelBuilder& b, const Tensor& logits,
                    const Tensor& positions, const std::string& name) {
  auto scope = b.Scope(name);
  const Tensor one_hot =
      b.Op("OneHot",
           {positions, b.IntConst("one_hot/depth"),
            b.Const("one_hot/on_value", {}), b.Const("one_hot/off_value", {})},
           logits.shape, 0);
  const Tensor log_probs = b.Unary("LogSoftmax", logits, 5);
  const Tensor picked = b.Binary("Mul", one_hot, log_probs);
  const Tensor sum = b.Reduce("Sum", picked, {1}, false);
  const Tensor mean = b.Reduce("Mean", sum, {0}, false);
  return b.Unary("Neg", mean);
}

StatusOr<BertConfig> ConfigOf(const std::string& variant) {
  if (variant == "base") return BertConfig{12, 768, 12, 3072};
  if (variant == "large") return BertConfig{24, 1024, 16, 4096};
  return InvalidArgumentError(
      "zoo model bert: variant must be base or large, got \"" + variant + "\"");
}

StatusOr<Graph> Bert(const ZooParams& p) {
  DPLACE_ASSIGN_OR_RETURN(const BertConfig c, ConfigOf(p.String("variant")));
  const int64_t batch = p.Int("batch"), seq = p.Int("seq");
  const int64_t vocab = p.Int("vocab");
  if (seq < 1 || seq > kMaxPositions) {
    return InvalidArgumentError(
        "zoo model bert: seq must be in [1, 512], got " + std::to_string(seq));
  }
  ModelBuilder b("bert_" + p.String("variant"));
  Tensor ids, input_mask, segments, start, end;
  {
    auto scope = b.Scope("input");
    ids = b.Input("input_ids", {batch, seq}, DataType::kInt32);
    input_mask = b.Input("input_mask", {batch, seq}, DataType::kInt32);
    segments = b.Input("segment_ids", {batch, seq}, DataType::kInt32);
    start = b.Input("start_positions", {batch}, DataType::kInt32);
    end = b.Input("end_positions", {batch}, DataType::kInt32);
  }
  Tensor x;
  {
    auto scope = b.Scope("bert");
    x = Embeddings(b, ids, segments, vocab, c.hidden);
    auto encoder = b.Scope("encoder");
    const Tensor mask = AttentionMask(b, input_mask);
    for (int64_t l = 0; l < c.layers; ++l) {
      auto layer = b.Scope("layer_" + std::to_string(l));
      x = EncoderLayer(b, x, mask, c, batch, seq);
    }
  }
  std::vector<Tensor> logits;
  {
    auto scope = b.Scope("cls/squad");
    const Tensor w = b.Parameter("output_weights", {c.hidden, 2});
    const Tensor bias = b.Parameter("output_bias", {2});
    const Tensor span =
        b.Reshape(b.BiasAdd(b.MatMul(x, w), bias), {batch, seq, 2});
    logits = b.Unpack(b.Transpose(span, {2, 0, 1}), 0);
  }
  auto scope = b.Scope("loss");
  const Tensor total =
      b.Binary("Add", PositionLoss(b, logits[0], start, "start"),
               PositionLoss(b, logits[1], end, "end"));
  b.Binary("RealDiv", total, b.Const("truediv/y", {}));
  return std::move(b).Build();
}

}  // namespace

ZooModel BertModel() {
  ZooModel m;
  m.name = "bert";
  m.description =
      "BERT (Devlin et al.) on SQuAD, as google-research/bert builds it: "
      "embeddings, transformer encoder layers (Q/K/V, scaled dot-product "
      "attention with mask and dropout, GELU feed-forward, residual "
      "LayerNorms), span head; variant base or large";
  m.defaults = {{"variant", "base"},
                {"seq", "384"},
                {"batch", "24"},
                {"vocab", "30522"},
                {"optimizer", "adamw"}};
  m.paper_preset = "p100x4";  // EAGLE and Mars.
  m.paper_ops = 0;            // Not given; EAGLE: "over 10,000 operations".
  m.forward = Bert;
  // optimization.py: tf.gradients, clipped to a global norm of 1.0, applied
  // by AdamWeightDecayOptimizer ("adamw").
  m.training.clip_by_global_norm = true;
  // Google's implementation has no multi-GPU placement (EAGLE, section 5):
  // the expert baseline is one GPU, which runs out of memory.
  m.expert = OneGpuPlacement;
  return m;
}

}  // namespace zoo_internal
}  // namespace dplace
