// Recurrent benchmarks: RNNLM and NMT / GNMT with attention, unrolled over
// time steps as TF 1.x static_rnn graphs were (the graphs the papers
// placed), op by op as TensorFlow builds them: BasicLSTMCell with its
// dropout wrapper, tf.contrib.seq2seq's AttentionWrapper with normalised
// Bahdanau attention, and the sequence loss.
#include <memory>
#include <string>
#include <vector>

#include "dplace/zoo/models.h"

namespace dplace {
namespace zoo_internal {
namespace {

struct LstmState {
  Tensor c, h;
};

enum class Dropout { kNone, kInput, kOutput };

// One layer of TF's BasicLSTMCell wrapped in a DropoutWrapper: its
// parameters, and one step per call.
class LstmLayer {
 public:
  LstmLayer(ModelBuilder& b, int64_t input_size, int64_t units, int64_t batch,
            Dropout dropout)
      : dropout_(dropout) {
    kernel_ = b.Parameter("kernel", {input_size + units, 4 * units});
    bias_ = b.Parameter("bias", {4 * units});
    zero_ = {b.Op("Fill", {}, {batch, units}, 0, "zero_c"),
             b.Op("Fill", {}, {batch, units}, 0, "zero_h")};
  }

  const LstmState& zero() const { return zero_; }

  // [dropout,] concat, MatMul, BiasAdd, Split into gates i, j, f, o, then
  // c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j) and
  // h' = tanh(c') * sigmoid(o) [, dropout of h'].
  LstmState Step(ModelBuilder& b, Tensor x, const LstmState& s) const {
    if (dropout_ == Dropout::kInput) x = b.Dropout(x);
    const Tensor gates =
        b.BiasAdd(b.MatMul(b.Concat({x, s.h}, 1), kernel_), bias_);
    const std::vector<Tensor> g = b.Split(gates, 1, 4);
    const Tensor f = b.Unary("Sigmoid", b.WithScalar("Add", g[2], "add/y"));
    const Tensor c = b.Binary(
        "Add", b.Binary("Mul", s.c, f),
        b.Binary("Mul", b.Unary("Sigmoid", g[0]), b.Unary("Tanh", g[1])));
    Tensor h = b.Binary("Mul", b.Unary("Tanh", c), b.Unary("Sigmoid", g[3]));
    if (dropout_ == Dropout::kOutput) h = b.Dropout(h);
    return {c, h};
  }

 private:
  Dropout dropout_;
  Tensor kernel_, bias_;
  LstmState zero_;
};

// Per-step inputs: ids [batch, steps] -> embeddings -> one tensor per step
// (tf.unstack, as static_rnn takes a list).
std::vector<Tensor> EmbedSteps(ModelBuilder& b, const Tensor& ids,
                               int64_t vocab, int64_t units,
                               bool dropout = false) {
  auto scope = b.Scope("embedding");
  Tensor embedded = b.Embedding(ids, vocab, units, "table");
  if (dropout) embedded = b.Dropout(embedded);
  return b.Unpack(embedded, 1);
}

// A stack of LSTM layers over `inputs`; layer l is scoped "lstm_<l>", step t
// "lstm_<l>/step_<t>". Residual connections (GNMT) add each layer's input to
// its output from layer `residual_from` on (0: none). Returns the top
// layer's outputs per step.
std::vector<Tensor> LstmStack(ModelBuilder& b, std::vector<Tensor> inputs,
                              int64_t layers, int64_t first_layer,
                              int64_t units, Dropout dropout,
                              int64_t residual_from) {
  for (int64_t l = first_layer; l < first_layer + layers; ++l) {
    auto scope = b.Scope("lstm_" + std::to_string(l));
    const int64_t batch = inputs[0].dim(0);
    const LstmLayer layer(b, inputs[0].dim(-1), units, batch, dropout);
    LstmState s = layer.zero();
    std::vector<Tensor> outputs;
    for (size_t t = 0; t < inputs.size(); ++t) {
      auto step = b.Scope("step_" + std::to_string(t));
      s = layer.Step(b, inputs[t], s);
      Tensor out = s.h;
      if (residual_from > 0 && l >= residual_from) {
        out = b.Binary("Add", out, inputs[t]);
      }
      outputs.push_back(out);
    }
    inputs = std::move(outputs);
  }
  return inputs;
}

// The GPU of the layer named in `scope` ("lstm_3" -> layer 3), or -1.
int64_t LayerOf(const std::string& scope) {
  const size_t at = scope.find("lstm_");
  if (at == std::string::npos) return -1;
  return std::strtoll(scope.c_str() + at + 5, nullptr, 10);
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Expert placement of RNNs (Sutskever et al., GNMT): one LSTM layer per GPU,
// the embedding with the first layer, attention and softmax with the last.
Placement RnnExpert(const Graph& g, const Cluster& c, const ZooParams& p) {
  const int64_t layers = p.Int("layers");
  const std::vector<DeviceId> cpus = c.DevicesOfKind(DeviceKind::kCpu);
  return PlaceByScope(g, c, [&](const std::string& scope) -> DeviceId {
    const int64_t layer = LayerOf(scope);
    if (layer >= 0) return LayerGpu(c, layer, layers);
    if (StartsWith(scope, "input") && !cpus.empty()) return cpus[0];
    if (StartsWith(scope, "attention") || StartsWith(scope, "softmax") ||
        StartsWith(scope, "loss")) {
      return LayerGpu(c, layers - 1, layers);
    }
    return LayerGpu(c, 0, layers);
  });
}

// Masked sequence loss: the cross-entropy of every step weighted by the
// target mask, summed and divided by the batch (tensorflow/nmt's
// reduce_sum(crossent * target_weights) / batch_size).
void SequenceLoss(ModelBuilder& b, const std::vector<Tensor>& crossent,
                  const Tensor& weights) {
  auto scope = b.Scope("loss");
  const std::vector<Tensor> w = b.Unpack(weights, 1);
  std::vector<Tensor> weighted;
  for (size_t t = 0; t < crossent.size(); ++t) {
    weighted.push_back(b.Binary("Mul", crossent[t], w[t]));
  }
  const Tensor total =
      b.Op("AddN", weighted, weighted[0].shape,
           static_cast<double>(weighted.size() * weighted[0].elements()));
  const Tensor sum = b.Reduce("Sum", total, {0}, false);
  b.WithScalar("RealDiv", sum, "truediv/y");
}

StatusOr<Graph> Rnnlm(const ZooParams& p) {
  const int64_t batch = p.Int("batch"), steps = p.Int("steps");
  const int64_t units = p.Int("units"), vocab = p.Int("vocab");
  ModelBuilder b("rnnlm");
  Tensor ids, labels;
  {
    auto scope = b.Scope("input");
    ids = b.Input("ids", {batch, steps}, DataType::kInt32);
    labels = b.Input("labels", {batch, steps}, DataType::kInt32);
  }
  const std::vector<Tensor> x = EmbedSteps(b, ids, vocab, units, true);
  const std::vector<Tensor> outputs =
      LstmStack(b, x, p.Int("layers"), 0, units, Dropout::kOutput, 0);
  // ptb_word_lm: one softmax over all steps, logits [batch * steps, vocab].
  Tensor logits;
  {
    auto scope = b.Scope("softmax");
    const Tensor stacked =
        b.Reshape(b.Concat(outputs, 1), {batch * steps, units});
    logits = b.Binary(
        "Add", b.MatMul(stacked, b.Parameter("softmax_w", {units, vocab})),
        b.Parameter("softmax_b", {vocab}));
  }
  auto scope = b.Scope("loss");
  // legacy_seq2seq.sequence_loss_by_example with weights of ones, averaged
  // over time steps, then summed over the batch and divided by it.
  const Tensor targets = b.Reshape(labels, {batch * steps});
  const Tensor crossent = b.SparseSoftmaxCrossEntropy(logits, targets);
  const Tensor weights = b.Const("ones", {batch * steps});
  const Tensor size = b.WithScalar("Add", weights, "add/y");
  const Tensor per_example =
      b.Binary("RealDiv", b.Binary("Mul", crossent, weights), size);
  b.WithScalar("RealDiv", b.Reduce("Sum", per_example, {0}, false),
               "truediv/y");
  return std::move(b).Build();
}

struct Seq2SeqConfig {
  // GNMT (tensorflow/nmt's gnmt_v2): bidirectional first encoder layer,
  // residual connections from layer 2, attention computed from the first
  // decoder layer's output and fed to every layer, no attention layer.
  // Otherwise the standard architecture: attention over the top layer's
  // output with an attention layer, fed back as the next step's input.
  bool gnmt = false;
};

// tf.sequence_mask(lengths, maxlen): [batch, maxlen] booleans, as TF builds
// it (Range, ExpandDims, Less).
Tensor SequenceMask(ModelBuilder& b, const Tensor& lengths, int64_t maxlen) {
  auto name = b.NameScope("SequenceMask");
  const Tensor range = b.Op(
      "Range", {b.IntConst("Const"), b.IntConst("Const"), b.IntConst("Const")},
      {maxlen}, 0, "Range", DataType::kInt32);
  const Tensor column = b.ExpandDims(lengths, -1);
  return b.Op("Less", {range, column}, {lengths.dim(0), maxlen},
              static_cast<double>(lengths.dim(0) * maxlen), "Less",
              DataType::kBool);
}

// BahdanauAttention(normalize=True) over a memory: its variables, the
// masked memory and its keys, built once; Align() and Context() per decoder
// step.
class BahdanauAttention {
 public:
  BahdanauAttention(ModelBuilder& b, const Tensor& memory,
                    const Tensor& lengths)
      : lengths_(lengths) {
    const int64_t steps = memory.dim(1), units = memory.dim(2);
    // _prepare_memory: zero the memory beyond each sentence's length.
    {
      auto name = b.NameScope("memory_mask");
      Tensor mask = b.Unary("Cast", SequenceMask(b, lengths, steps), 1);
      mask.dtype = DataType::kFloat32;
      values_ = b.Binary("Mul", memory, b.ExpandDims(mask, 2));
    }
    keys_ = b.Dense3D(values_, units, "memory_layer");
    query_kernel_ = b.Parameter("query_layer/kernel", {units, units});
    v_ = b.Parameter("attention_v", {units});
    g_ = b.Parameter("attention_g", {});
    bias_ = b.Parameter("attention_b", {units});
  }

  const Tensor& values() const { return values_; }

  // Alignments [batch, steps] of `query` [batch, units]:
  // softmax(mask(sum(g * v / |v| * tanh(keys + W q + b), 2))).
  Tensor Align(ModelBuilder& b, const Tensor& query) const {
    const Tensor processed = b.ExpandDims(b.MatMul(query, query_kernel_), 1);
    const Tensor norm =
        b.Unary("Rsqrt", b.Reduce("Sum", b.Unary("Square", v_), {0}, false), 2);
    const Tensor normed_v = b.Binary("Mul", b.Binary("Mul", g_, v_), norm);
    const Tensor hidden = b.Unary(
        "Tanh", b.Binary("Add", b.Binary("Add", keys_, processed), bias_), 3);
    Tensor score =
        b.Reduce("Sum", b.Binary("Mul", normed_v, hidden), {2}, false);
    {
      // _maybe_mask_score: -inf beyond each source length.
      auto name = b.NameScope("mask");
      const Tensor mask = SequenceMask(b, lengths_, score.dim(1));
      const Tensor fill =
          b.WithScalar("Mul", b.Unary("OnesLike", score, 0), "mul/x");
      score = b.Op("Select", {mask, score, fill}, score.shape,
                   static_cast<double>(score.elements()), "Select");
    }
    return b.Softmax(score);
  }

  // The context: alignments times the memory, [batch, units].
  Tensor Context(ModelBuilder& b, const Tensor& alignments) const {
    const Tensor context =
        b.BatchMatMul(b.ExpandDims(alignments, 1), values_, false);
    return b.Squeeze(context, {1});
  }

 private:
  Tensor lengths_, values_, keys_, query_kernel_, v_, g_, bias_;
};

StatusOr<Graph> Seq2Seq(const ZooParams& p, const std::string& name,
                        const Seq2SeqConfig& config) {
  const int64_t batch = p.Int("batch"), units = p.Int("units");
  const int64_t layers = p.Int("layers"), vocab = p.Int("vocab");
  const int64_t src_steps = p.Int("source_steps");
  const int64_t tgt_steps = p.Int("target_steps");
  if (config.gnmt && layers < 2) {
    return InvalidArgumentError("zoo model gnmt: layers must be at least 2");
  }
  ModelBuilder b(name);
  Tensor src, src_lengths, tgt, labels, weights;
  {
    auto scope = b.Scope("input");
    src = b.Input("source", {batch, src_steps}, DataType::kInt32);
    src_lengths = b.Input("source_length", {batch}, DataType::kInt32);
    tgt = b.Input("target_input", {batch, tgt_steps}, DataType::kInt32);
    labels = b.Input("target_output", {batch, tgt_steps}, DataType::kInt32);
    weights = b.Input("target_weights", {batch, tgt_steps});
  }

  // Encoder.
  std::vector<Tensor> encoded;
  {
    auto scope = b.Scope("encoder");
    std::vector<Tensor> x = EmbedSteps(b, src, vocab, units);
    int64_t first = 0;
    if (config.gnmt) {
      // Layer 0 reads the sentence both ways; its outputs are concatenated.
      std::vector<Tensor> backward(x.size());
      {
        auto bw = b.Scope("lstm_0_backward");
        const LstmLayer layer(b, units, units, batch, Dropout::kInput);
        LstmState s = layer.zero();
        for (size_t t = x.size(); t-- > 0;) {
          auto step = b.Scope("step_" + std::to_string(t));
          s = layer.Step(b, x[t], s);
          backward[t] = s.h;
        }
      }
      const std::vector<Tensor> forward =
          LstmStack(b, x, 1, 0, units, Dropout::kInput, 0);
      std::vector<Tensor> both;
      for (size_t t = 0; t < x.size(); ++t) {
        auto step = b.Scope("lstm_0/step_" + std::to_string(t));
        both.push_back(b.Concat({forward[t], backward[t]}, 1));
      }
      x = std::move(both);
      first = 1;
    }
    encoded = LstmStack(b, x, layers - first, first, units, Dropout::kInput,
                        config.gnmt ? 2 : 0);
  }

  // Attention memory: encoder outputs stacked, masked and projected (keys).
  std::unique_ptr<BahdanauAttention> attention;
  Tensor attention_kernel;
  {
    auto scope = b.Scope("attention");
    const Tensor memory = b.Pack(encoded, 1);
    attention = std::make_unique<BahdanauAttention>(b, memory, src_lengths);
    if (!config.gnmt) {
      attention_kernel =
          b.Parameter("attention_layer/kernel", {2 * units, units});
    }
  }

  // Decoder, one step at a time so attention can feed the next step.
  std::vector<Tensor> y;
  {
    auto scope = b.Scope("decoder");
    y = EmbedSteps(b, tgt, vocab, units);
  }
  std::vector<LstmLayer> cells;
  std::vector<LstmState> state;
  for (int64_t l = 0; l < layers; ++l) {
    auto scope = b.Scope("decoder/lstm_" + std::to_string(l));
    // The first layer reads the embedding and the attention; GNMT feeds the
    // context to every layer.
    const int64_t input = (l == 0 || config.gnmt) ? 2 * units : units;
    cells.emplace_back(b, input, units, batch, Dropout::kInput);
    state.push_back(cells.back().zero());
  }
  Tensor feed;
  {
    auto scope = b.Scope("attention");
    feed = b.Op("Fill", {}, {batch, units}, 0, "zero_attention");
  }
  Tensor softmax_w;
  {
    auto scope = b.Scope("softmax");
    softmax_w = b.Parameter("output_projection/kernel", {units, vocab});
  }
  const std::vector<Tensor> targets = [&] {
    auto scope = b.Scope("loss");
    return b.Unpack(labels, 1);
  }();
  std::vector<Tensor> crossent;
  for (int64_t t = 0; t < tgt_steps; ++t) {
    const std::string step = "step_" + std::to_string(t);
    Tensor x = y[t];
    Tensor context;
    for (int64_t l = 0; l < layers; ++l) {
      {
        auto scope = b.Scope("decoder/lstm_" + std::to_string(l) + "/" + step);
        // AttentionWrapper's cell_input_fn for layer 0; GNMT's multi-cell
        // concatenates the context to the other layers' inputs.
        Tensor input = x;
        if (l == 0) {
          input = b.Concat({x, feed}, 1);
        } else if (config.gnmt) {
          input = b.Concat({x, context}, 1);
        }
        state[l] = cells[l].Step(b, input, state[l]);
        Tensor out = state[l].h;
        if (config.gnmt && l >= 2) out = b.Binary("Add", out, x);
        x = out;
      }
      if (config.gnmt && l == 0) {
        auto att = b.Scope("attention/" + step);
        context = attention->Context(b, attention->Align(b, x));
        feed = context;
      }
    }
    Tensor output = x;
    if (!config.gnmt) {
      // AttentionWrapper's attention layer: a Dense without bias over the
      // cell output and the context.
      auto att = b.Scope("attention/" + step);
      const Tensor context_t = attention->Context(b, attention->Align(b, x));
      feed = b.MatMul(b.Concat({x, context_t}, 1), attention_kernel);
      output = feed;
    }
    Tensor logits;
    {
      auto scope = b.Scope("softmax/" + step);
      logits = b.MatMul(output, softmax_w);
    }
    auto scope = b.Scope("loss/" + step);
    crossent.push_back(b.SparseSoftmaxCrossEntropy(logits, targets[t]));
  }
  SequenceLoss(b, crossent, weights);
  return std::move(b).Build();
}

// Training as tensorflow/nmt, ptb_word_lm and GNMT's trainers do it:
// tf.gradients (no gating), clipped by the global norm.
TrainingOptions ClippedGradients() {
  TrainingOptions o;
  o.clip_by_global_norm = true;
  return o;
}

}  // namespace

ZooModel RnnlmModel() {
  ZooModel m;
  m.name = "rnnlm";
  m.description =
      "LSTM language model (Zaremba et al.), unrolled over time steps, as "
      "TF's ptb_word_lm builds it: dropout on the embedding and every "
      "layer's output, one softmax over all steps";
  // ColocRL / Hierarchical Planner: 2 layers of 2048 units, 40 steps, batch
  // 64, Adam. Post's RNNLM has 4 layers ("layers=4").
  m.defaults = {{"layers", "2"}, {"units", "1024"},  {"steps", "40"},
                {"batch", "64"}, {"vocab", "10000"}, {"optimizer", "adam"}};
  m.paper_preset = "k40x4";
  m.paper_ops = 9021;
  m.paper_variants = {{"layers=4", 0}};
  m.forward = Rnnlm;
  m.training = ClippedGradients();
  m.expert = RnnExpert;
  return m;
}

ZooModel NmtModel() {
  ZooModel m;
  m.name = "nmt";
  m.description =
      "NMT with attention (Bahdanau et al., Wu et al.): LSTM encoder and "
      "decoder with input dropout, AttentionWrapper with normalised Bahdanau "
      "attention over the masked source, input feeding, a softmax and "
      "masked loss per step";
  // Settings and their sources: docs/models.md.
  m.defaults = {{"layers", "2"},        {"units", "1024"},
                {"source_steps", "50"}, {"target_steps", "50"},
                {"batch", "64"},        {"vocab", "40000"},
                {"optimizer", "adam"}};
  m.paper_preset = "k40x4";
  m.paper_ops = 28044;
  m.paper_variants = {{"layers=4", 46600}, {"layers=8", 83712}};
  m.forward = [](const ZooParams& p) { return Seq2Seq(p, "nmt", {false}); };
  m.training = ClippedGradients();
  m.expert = RnnExpert;
  return m;
}

ZooModel GnmtModel() {
  ZooModel m;
  m.name = "gnmt";
  m.description =
      "GNMT (Wu et al.) as tensorflow/nmt's gnmt_v2 builds it and EAGLE "
      "placed it: bidirectional first encoder layer, residual connections, "
      "attention from the first decoder layer fed to every layer";
  m.defaults = {{"layers", "4"},        {"units", "1024"},
                {"source_steps", "50"}, {"target_steps", "50"},
                {"batch", "256"},       {"vocab", "32000"},
                {"optimizer", "sgd"}};
  m.paper_preset = "p100x4";
  m.paper_variants = {{"batch=128", 0}};
  m.forward = [](const ZooParams& p) { return Seq2Seq(p, "gnmt", {true}); };
  m.training = ClippedGradients();
  m.expert = RnnExpert;
  return m;
}

}  // namespace zoo_internal
}  // namespace dplace
