// The gradients of ONNX operators (dplace/io/onnx), as PyTorch's autograd
// runs them, built by the Expander (training_expander.h).
#include <string>

#include "dplace/graph/training_expander.h"

namespace dplace::training_internal {

// Conv / ConvTranspose (X, W[, B]): the input and the filter gradients
// each cost the forward's multiply-adds (grouped and depthwise included:
// W's dims already count C/group); the bias gradient is a sum of the
// output gradient over every axis but the channel.
void Expander::GradOnnxConv() {
  if (NumInputs() < 2 || XInfo(1).shape.size() < 2) return GradGeneric();
  const double out = Elements(YInfo());
  const double bias = NumInputs() >= 3 ? out : 0;
  const double products = std::max(0.0, f_.flops(c_.op) - bias);
  const bool transposed = f_.op_type(c_.op) == "ConvTranspose";
  // Typed as TensorFlow's kernels, which the cost model counts among the
  // dense ops (the input gradient of a transposed conv is a conv).
  if (Wants(0)) {
    c_.grads[0] = Emit(transposed ? "Conv" : "ConvBackpropInput",
                       transposed ? "Conv" : "Conv2DBackpropInput",
                       {Dy(), X(1)}, XInfo(0), products);
  }
  if (Wants(1)) {
    c_.grads[1] = Emit("ConvBackpropFilter", "Conv2DBackpropFilter",
                       {X(0), Dy()}, XInfo(1), products);
  }
  if (NumInputs() >= 3 && Wants(2)) {
    c_.grads[2] = Emit("BiasGrad", "ReduceSum", {Dy()}, XInfo(2), out);
  }
}

// Gemm (A, B[, C]): two products of the forward's size; C's gradient is
// the output gradient summed over the rows it was broadcast along (none
// when C is as large as the output).
void Expander::GradOnnxGemm() {
  if (NumInputs() < 2) return GradGeneric();
  const double out = Elements(YInfo());
  const bool has_c = NumInputs() >= 3;
  const double products = std::max(0.0, f_.flops(c_.op) - (has_c ? out : 0));
  if (Wants(0)) {
    c_.grads[0] = Emit("MatMul", "MatMul", {Dy(), X(1)}, XInfo(0), products);
  }
  if (Wants(1)) {
    c_.grads[1] = Emit("MatMul_1", "MatMul", {X(0), Dy()}, XInfo(1), products);
  }
  if (has_c && Wants(2)) {
    c_.grads[2] = Elements(XInfo(2)) == out
                      ? Dy()
                      : Emit("BiasGrad", "ReduceSum", {Dy()}, XInfo(2), out);
  }
}

// Batch, layer, instance and group normalization (X, scale, bias, ...):
// the input gradient recomputes the normalized input and subtracts two
// reductions of the output gradient (8 per element); the scale's
// gradient is sum(dy * x_hat) (2), the bias's sum(dy) (1). A
// BatchNormalization's running mean and variance get none.
void Expander::GradOnnxNormalization() {
  const double n = Elements(YInfo());
  std::vector<Ref> saved = {Dy(), X(0)};
  if (NumInputs() >= 2) saved.push_back(X(1));
  if (Wants(0)) {
    c_.grads[0] = Emit(f_.op_type(c_.op) + "Grad", f_.op_type(c_.op) + "Grad",
                       saved, XInfo(0), 8 * n);
  }
  if (NumInputs() >= 2 && Wants(1)) {
    c_.grads[1] = Emit("ScaleGrad", "ReduceSum", {Dy(), X(0)}, XInfo(1), 2 * n);
  }
  if (NumInputs() >= 3 && Wants(2)) {
    c_.grads[2] = Emit("BiasGrad", "ReduceSum", {Dy()}, XInfo(2), n);
  }
}

// x / y: dx = dy / y, dy = -dy * x / y^2, each summed over the axes its
// input was broadcast along.
void Expander::GradOnnxDiv() {
  if (NumInputs() != 2) return GradGeneric();
  const double n = Elements(YInfo());
  for (int k = 0; k < 2; ++k) {
    if (!Wants(k)) continue;
    const double reduce = Elements(XInfo(k)) < n ? n : 0;
    const std::vector<Ref> inputs = k == 0 ? std::vector<Ref>{Dy(), X(1)}
                                           : std::vector<Ref>{Dy(), X(0), X(1)};
    c_.grads[k] = Emit(k == 0 ? "div" : "div_1", "Div", inputs, XInfo(k),
                       (k == 0 ? 1 : 3) * n + reduce);
  }
}

// erf (GELU's exact form): dx = dy * 2/sqrt(pi) * exp(-x^2).
void Expander::GradOnnxErf() {
  if (!Wants(0)) return;
  c_.grads[0] = Emit("ErfGrad", "ErfGrad", {Dy(), X(0)}, XInfo(0),
                     5 * Elements(XInfo(0)));
}

// Where (condition, x, y): the gradient where each branch was taken,
// summed over the axes it was broadcast along.
void Expander::GradOnnxWhere() {
  if (NumInputs() != 3) return GradGeneric();
  const double n = Elements(YInfo());
  for (int k = 1; k < 3; ++k) {
    if (!Wants(k)) continue;
    const double reduce = Elements(XInfo(k)) < n ? n : 0;
    c_.grads[k] = Emit(k == 1 ? "Where" : "Where_1", "Where", {X(0), Dy()},
                       XInfo(k), n + reduce);
  }
}

// Einsum: each operand's gradient is a contraction of the output
// gradient with the other operands over the same indices: as many
// multiply-adds as the forward.
void Expander::GradOnnxEinsum() {
  const double flops = f_.flops(c_.op);
  for (int k = 0; k < NumInputs(); ++k) {
    if (!Wants(k)) continue;
    std::vector<Ref> inputs = {Dy()};
    for (int j = 0; j < NumInputs(); ++j) {
      if (j != k) inputs.push_back(X(j));
    }
    c_.grads[k] = Emit(k == 0 ? "Einsum" : "Einsum_" + std::to_string(k),
                       "Einsum", inputs, XInfo(k), flops);
  }
}

// LSTM, GRU, RNN (X, W, R[, B, sequence_lens, initial_h, initial_c]), as
// cuDNN's backward runs them: the data pass through time (the gate math
// and the products of the gate gradients with W and R: the forward's
// cost) gives X's and the initial states' gradients; the weight pass
// accumulates the gate gradients times the inputs (W, R: the forward's
// products, split by their widths) and sums them (B).
void Expander::GradOnnxRecurrent() {
  if (NumInputs() < 3 || XInfo(1).shape.size() != 3 ||
      XInfo(2).shape.size() != 3) {
    return GradGeneric();
  }
  const double flops = f_.flops(c_.op);
  const TensorInfo& w = XInfo(1);
  const TensorInfo& r = XInfo(2);
  // Per time step and direction the gate pre-activations are
  // [batch, gates * hidden]; W is [dirs, gates * hidden, input], R
  // [dirs, gates * hidden, hidden].
  const double input_width = static_cast<double>(w.shape[2]);
  const double hidden_width = static_cast<double>(r.shape[2]);
  const double products_per_width =
      flops / std::max(1.0, input_width + hidden_width);
  std::vector<Ref> dys;
  for (const auto& d : c_.dy) {
    if (d) dys.push_back(*d);
  }
  std::vector<Ref> saved = dys;
  for (int k = 0; k < NumInputs(); ++k) saved.push_back(X(k));
  const std::string& type = f_.op_type(c_.op);
  const OpId data = EmitOp(type + "BackpropData", type + "BackpropData", saved,
                           {XInfo(0)}, flops);
  if (Wants(0)) c_.grads[0] = Ref{data, 0};
  // The gate gradients are the data pass's by-product; the weight pass
  // reads them with the forward inputs.
  const double gate_elements = products_per_width / 2;
  for (int k = 1; k < NumInputs(); ++k) {
    if (!Wants(k)) continue;
    double cost = 0;
    if (k == 1) cost = products_per_width * input_width;
    if (k == 2) cost = products_per_width * hidden_width;
    if (k == 3) cost = gate_elements;
    if (k >= 4) cost = Elements(XInfo(k));
    c_.grads[k] =
        Emit(type + "BackpropWeights_" + std::to_string(k),
             type + "BackpropWeights", {{data, 0}, X(0), X(k)}, XInfo(k), cost);
  }
}

}  // namespace dplace::training_internal
