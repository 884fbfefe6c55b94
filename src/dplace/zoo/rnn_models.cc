// Recurrent benchmarks: RNNLM and NMT / GNMT with attention, unrolled over
// time steps as TF 1.x static_rnn graphs were (the graphs the papers placed).
#include <string>
#include <vector>

#include "dplace/zoo/models.h"

namespace dplace {
namespace zoo_internal {
namespace {

struct LstmState {
  Tensor c, h;
};

// One layer of TF's BasicLSTMCell: its parameters, and one step per call.
class LstmLayer {
 public:
  LstmLayer(ModelBuilder& b, int64_t input_size, int64_t units, int64_t batch)
      : units_(units) {
    kernel_ = b.Parameter("kernel", {input_size + units, 4 * units});
    bias_ = b.Parameter("bias", {4 * units});
    zero_ = {b.Op("Fill", {}, {batch, units}, 0, "zero_c"),
             b.Op("Fill", {}, {batch, units}, 0, "zero_h")};
  }

  const LstmState& zero() const { return zero_; }

  // Concat, MatMul, BiasAdd, Split into gates i, j, f, o, then
  // c' = c * sigmoid(f + 1) + sigmoid(i) * tanh(j), h' = tanh(c') *
  // sigmoid(o): 14 ops.
  LstmState Step(ModelBuilder& b, const Tensor& x, const LstmState& s) const {
    const Tensor gates =
        b.BiasAdd(b.MatMul(b.Concat({x, s.h}, 1), kernel_), bias_);
    const std::vector<Tensor> g = b.Split(gates, 1, 4);
    const Tensor i = b.Unary("Sigmoid", g[0]);
    const Tensor j = b.Unary("Tanh", g[1]);
    const Tensor f = b.Unary("Sigmoid", b.Unary("Add", g[2]));  // Forget bias.
    const Tensor o = b.Unary("Sigmoid", g[3]);
    const Tensor c =
        b.Binary("Add", b.Binary("Mul", s.c, f), b.Binary("Mul", i, j));
    return {c, b.Binary("Mul", b.Unary("Tanh", c), o)};
  }

 private:
  int64_t units_;
  Tensor kernel_, bias_;
  LstmState zero_;
};

// Per-step inputs: ids [batch, steps] -> embeddings -> one tensor per step.
std::vector<Tensor> EmbedSteps(ModelBuilder& b, const Tensor& ids,
                               int64_t vocab, int64_t units) {
  auto scope = b.Scope("embedding");
  const Tensor embedded = b.Embedding(ids, vocab, units, "table");
  return b.MultiOp(
      "Unpack", {embedded},
      std::vector<std::vector<int64_t>>(ids.dim(1), {ids.dim(0), units}), 0);
}

std::vector<Tensor> UnpackLabels(ModelBuilder& b, const Tensor& labels) {
  std::vector<Tensor> out = b.MultiOp(
      "Unpack", {labels},
      std::vector<std::vector<int64_t>>(labels.dim(1), {labels.dim(0)}), 0);
  for (Tensor& t : out) t.dtype = DataType::kInt32;
  return out;
}

// Softmax projection and cross-entropy per step, summed into one loss.
void SoftmaxLoss(ModelBuilder& b, const std::vector<Tensor>& outputs,
                 const std::vector<Tensor>& labels, int64_t vocab) {
  std::vector<Tensor> losses;
  {
    auto scope = b.Scope("softmax");
    const Tensor w = b.Parameter("weights", {outputs[0].dim(-1), vocab});
    const Tensor bias = b.Parameter("bias", {vocab});
    for (size_t t = 0; t < outputs.size(); ++t) {
      auto step = b.Scope("step_" + std::to_string(t));
      const Tensor logits = b.BiasAdd(b.MatMul(outputs[t], w), bias);
      const int64_t batch = logits.dim(0);
      losses.push_back(b.MultiOp("SparseSoftmaxCrossEntropyWithLogits",
                                 {logits, labels[t]}, {{batch}, {batch, vocab}},
                                 5.0 * logits.elements())[0]);
    }
  }
  auto scope = b.Scope("loss");
  const Tensor total =
      b.Op("AddN", losses, losses[0].shape,
           static_cast<double>(losses.size() * losses[0].elements()));
  b.Op("Mean", {total}, {}, static_cast<double>(total.elements()));
}

// A stack of LSTM layers over `inputs`; layer l is scoped "<name>/lstm_<l>".
// Returns each layer's outputs per step.
std::vector<std::vector<Tensor>> LstmStack(ModelBuilder& b,
                                           std::vector<Tensor> inputs,
                                           int64_t layers, int64_t units,
                                           bool residual_from_layer_2) {
  std::vector<std::vector<Tensor>> all;
  for (int64_t l = 0; l < layers; ++l) {
    auto scope = b.Scope("lstm_" + std::to_string(l));
    const int64_t batch = inputs[0].dim(0);
    const LstmLayer layer(b, inputs[0].dim(-1), units, batch);
    LstmState s = layer.zero();
    std::vector<Tensor> outputs;
    for (size_t t = 0; t < inputs.size(); ++t) {
      auto step = b.Scope("step_" + std::to_string(t));
      s = layer.Step(b, inputs[t], s);
      Tensor out = s.h;
      if (residual_from_layer_2 && l >= 2) {
        out = b.Binary("Add", out, inputs[t]);
      }
      outputs.push_back(out);
    }
    inputs = outputs;
    all.push_back(std::move(outputs));
  }
  return all;
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
  const std::vector<Tensor> x = EmbedSteps(b, ids, vocab, units);
  const auto layers = LstmStack(b, x, p.Int("layers"), units, false);
  const std::vector<Tensor> targets = UnpackLabels(b, labels);
  SoftmaxLoss(b, layers.back(), targets, vocab);
  return std::move(b).Build();
}

struct Seq2SeqConfig {
  bool gnmt = false;  // Bidirectional first encoder layer, residuals,
                      // attention from the first decoder layer to all.
};

// Luong attention of `query` over `keys` / `memory` ([batch, steps, units]).
Tensor Attend(ModelBuilder& b, const Tensor& query, const Tensor& keys,
              const Tensor& memory) {
  const int64_t batch = query.dim(0), units = query.dim(-1);
  const Tensor q = b.Reshape(query, {batch, 1, units});
  const Tensor scores = b.BatchMatMul(q, keys, /*transpose_b=*/true);
  const Tensor weights = b.Softmax(scores);
  const Tensor context = b.BatchMatMul(weights, memory, false);
  return b.Reshape(context, {batch, units});
}

StatusOr<Graph> Seq2Seq(const ZooParams& p, const std::string& name,
                        const Seq2SeqConfig& config) {
  const int64_t batch = p.Int("batch"), units = p.Int("units");
  const int64_t layers = p.Int("layers"), vocab = p.Int("vocab");
  const int64_t src_steps = p.Int("source_steps");
  const int64_t tgt_steps = p.Int("target_steps");
  ModelBuilder b(name);
  Tensor src, tgt, labels;
  {
    auto scope = b.Scope("input");
    src = b.Input("source", {batch, src_steps}, DataType::kInt32);
    tgt = b.Input("target", {batch, tgt_steps}, DataType::kInt32);
    labels = b.Input("labels", {batch, tgt_steps}, DataType::kInt32);
  }

  // Encoder.
  std::vector<Tensor> memory_steps;
  {
    auto scope = b.Scope("encoder");
    std::vector<Tensor> x = EmbedSteps(b, src, vocab, units);
    int64_t stacked = layers;
    if (config.gnmt) {
      // Layer 0 reads the sentence both ways; its outputs are concatenated.
      std::vector<Tensor> backward;
      {
        auto bw = b.Scope("lstm_0_backward");
        const LstmLayer layer(b, units, units, batch);
        LstmState s = layer.zero();
        std::vector<Tensor> out(x.size());
        for (size_t t = x.size(); t-- > 0;) {
          auto step = b.Scope("step_" + std::to_string(t));
          s = layer.Step(b, x[t], s);
          out[t] = s.h;
        }
        backward = std::move(out);
      }
      const auto forward = LstmStack(b, x, 1, units, false)[0];
      std::vector<Tensor> both;
      for (size_t t = 0; t < x.size(); ++t) {
        auto step = b.Scope("lstm_0/step_" + std::to_string(t));
        both.push_back(b.Concat({forward[t], backward[t]}, 1));
      }
      x = both;
      stacked = layers - 1;
    }
    const auto outputs = LstmStack(b, x, stacked, units, config.gnmt);
    memory_steps = outputs.back();
  }

  // Attention memory: encoder outputs stacked, and their projection (keys).
  Tensor memory, keys;
  {
    auto scope = b.Scope("attention");
    memory = b.Op("Pack", memory_steps, {batch, src_steps, units}, 0);
    const Tensor w = b.Parameter("memory_layer", {units, units});
    keys = b.MatMul(memory, w);
  }

  // Decoder, one step at a time so attention can feed the next step.
  auto dec_scope = b.Scope("decoder");
  const std::vector<Tensor> y = EmbedSteps(b, tgt, vocab, units);
  std::vector<LstmLayer> cells;
  std::vector<LstmState> state;
  Tensor attention_w;
  {
    auto scope = b.Scope("attention");
    attention_w = b.Parameter("attention_layer", {2 * units, units});
  }
  for (int64_t l = 0; l < layers; ++l) {
    auto scope = b.Scope("lstm_" + std::to_string(l));
    // NMT feeds the attention output into layer 0; GNMT feeds the context
    // into every layer.
    const int64_t input = (l == 0 || config.gnmt) ? 2 * units : units;
    cells.emplace_back(b, input, units, batch);
    state.push_back(cells.back().zero());
  }
  Tensor feed = b.Op("Fill", {}, {batch, units}, 0, "zero_attention");
  std::vector<Tensor> outputs;
  for (int64_t t = 0; t < tgt_steps; ++t) {
    const std::string step = "step_" + std::to_string(t);
    Tensor x = y[t];
    Tensor context;
    for (int64_t l = 0; l < layers; ++l) {
      auto scope = b.Scope("lstm_" + std::to_string(l) + "/" + step);
      Tensor input = (l == 0) ? b.Concat({x, feed}, 1)
                              : (config.gnmt ? b.Concat({x, context}, 1) : x);
      state[l] = cells[l].Step(b, input, state[l]);
      Tensor out = state[l].h;
      if (config.gnmt && l >= 2) out = b.Binary("Add", out, x);
      x = out;
      if (config.gnmt && l == 0) {
        auto att = b.Scope("attention");
        context = Attend(b, x, keys, memory);
        feed = context;
      }
    }
    if (config.gnmt) {
      outputs.push_back(x);
    } else {
      auto att = b.Scope("attention/" + step);
      const Tensor context_t = Attend(b, x, keys, memory);
      feed =
          b.Unary("Tanh", b.MatMul(b.Concat({x, context_t}, 1), attention_w));
      outputs.push_back(feed);
    }
  }
  const std::vector<Tensor> targets = UnpackLabels(b, labels);
  SoftmaxLoss(b, outputs, targets, vocab);
  return std::move(b).Build();
}

}  // namespace

ZooModel RnnlmModel() {
  ZooModel m;
  m.name = "rnnlm";
  m.description =
      "LSTM language model (Zaremba et al.), unrolled over time steps";
  m.defaults = {{"layers", "4"}, {"units", "1024"},  {"steps", "40"},
                {"batch", "64"}, {"vocab", "10000"}, {"optimizer", "sgd"}};
  m.paper_preset = "k40x4";
  m.paper_ops = 9021;
  m.forward = Rnnlm;
  m.expert = RnnExpert;
  return m;
}

ZooModel NmtModel() {
  ZooModel m;
  m.name = "nmt";
  m.description =
      "NMT with attention (Bahdanau et al., Wu et al.): LSTM encoder and "
      "decoder, Luong attention with input feeding";
  m.defaults = {{"layers", "2"},        {"units", "1024"},
                {"source_steps", "40"}, {"target_steps", "40"},
                {"batch", "64"},        {"vocab", "40000"},
                {"optimizer", "sgd"}};
  m.paper_preset = "k40x4";
  m.paper_ops = 28044;
  m.paper_variants = {{"layers=4", 46600}, {"layers=8", 83712}};
  m.forward = [](const ZooParams& p) { return Seq2Seq(p, "nmt", {false}); };
  m.expert = RnnExpert;
  return m;
}

ZooModel GnmtModel() {
  ZooModel m;
  m.name = "gnmt";
  m.description =
      "GNMT (Wu et al.) as EAGLE placed it: bidirectional first encoder "
      "layer, residual connections, attention from the first decoder layer";
  m.defaults = {{"layers", "4"},        {"units", "256"},
                {"source_steps", "50"}, {"target_steps", "50"},
                {"batch", "256"},       {"vocab", "32000"},
                {"optimizer", "adam"}};
  m.paper_preset = "p100x4";
  m.forward = [](const ZooParams& p) { return Seq2Seq(p, "gnmt", {true}); };
  m.expert = RnnExpert;
  return m;
}

}  // namespace zoo_internal
}  // namespace dplace
