// TensorFlow 1.x's gradient functions, op by op, as the Expander builds
// them (training_expander.h); the generic gradient of op types without one.
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "dplace/graph/training_expander.h"

namespace dplace::training_internal {
namespace {

// Which forward tensors a gradient op reads, for op types without a
// TensorFlow recipe here (ONNX operators, mostly).
enum class Saved {
  kNothing,      // Pass-through and shape ops: only the output gradient.
  kOtherInputs,  // Products: the other operands.
  kOutput,       // Activations: their own output.
  kInputsAndOutput,
  kInputs,  // Everything else: conservative.
};

Saved SavedFor(const std::string& type) {
  static const std::unordered_set<std::string> products = {
      "MatMul", "BatchMatMul",  "BatchMatMulV2", "Einsum",
      "Gemm",   "Conv2D",       "Conv",          "DepthwiseConv2dNative",
      "Mul",    "ConvTranspose"};
  static const std::unordered_set<std::string> activations = {
      "Relu",    "Relu6",      "Sigmoid", "Tanh",
      "Softmax", "LogSoftmax", "Elu",     "Exp"};
  static const std::unordered_set<std::string> pass_through = {
      "Add",          "AddV2",   "AddN",    "Sub",        "BiasAdd",
      "Identity",     "Reshape", "Squeeze", "ExpandDims", "Transpose",
      "ConcatV2",     "Concat",  "Split",   "SplitV",     "Slice",
      "StridedSlice", "Pad",     "Cast",    "Neg",        "Flatten"};
  if (products.count(type)) return Saved::kOtherInputs;
  if (activations.count(type)) return Saved::kOutput;
  if (pass_through.count(type)) return Saved::kNothing;
  if (type == "MaxPool") return Saved::kInputsAndOutput;
  return Saved::kInputs;
}

// The type of the op computing the gradient of `type`'s input `input`, for
// op types without a recipe.
std::string GradientType(const std::string& type, int input) {
  if (type == "MatMul" || type == "BatchMatMul" || type == "BatchMatMulV2" ||
      type == "Einsum") {
    return type;
  }
  if (type == "Gemm") return "MatMul";
  if (type == "Conv2D" || type == "Conv") {
    return input == 0 ? "Conv2DBackpropInput" : "Conv2DBackpropFilter";
  }
  return type + "Grad";
}

}  // namespace

const std::unordered_map<std::string, Expander::Recipe>& Expander::Recipes() {
  static const auto* recipes = new std::unordered_map<std::string, Recipe>{
      {"Identity", &Expander::GradIdentity},
      {"AddN", &Expander::GradAddN},
      {"Add", &Expander::GradBroadcast},
      {"AddV2", &Expander::GradBroadcast},
      {"Sub", &Expander::GradBroadcast},
      {"Mul", &Expander::GradBroadcast},
      {"RealDiv", &Expander::GradBroadcast},
      {"SquaredDifference", &Expander::GradBroadcast},
      {"Maximum", &Expander::GradBroadcast},
      {"Minimum", &Expander::GradBroadcast},
      {"Pow", &Expander::GradPow},
      {"MatMul", &Expander::GradMatMul},
      {"BatchMatMul", &Expander::GradMatMul},
      {"BatchMatMulV2", &Expander::GradMatMul},
      {"Conv2D", &Expander::GradConv2D},
      {"BiasAdd", &Expander::GradBiasAdd},
      {"Relu", &Expander::GradActivation},
      {"Relu6", &Expander::GradActivation},
      {"Elu", &Expander::GradActivation},
      {"Sigmoid", &Expander::GradActivation},
      {"Tanh", &Expander::GradActivation},
      {"Rsqrt", &Expander::GradActivation},
      {"Sqrt", &Expander::GradActivation},
      {"Exp", &Expander::GradActivation},
      {"Neg", &Expander::GradUnaryMath},
      {"Log", &Expander::GradUnaryMath},
      {"Square", &Expander::GradUnaryMath},
      {"L2Loss", &Expander::GradUnaryMath},
      {"Softmax", &Expander::GradSoftmax},
      {"LogSoftmax", &Expander::GradSoftmax},
      {"SparseSoftmaxCrossEntropyWithLogits", &Expander::GradCrossEntropy},
      {"SoftmaxCrossEntropyWithLogits", &Expander::GradCrossEntropy},
      {"Mean", &Expander::GradReduction},
      {"Sum", &Expander::GradReduction},
      {"Reshape", &Expander::GradReshape},
      {"Squeeze", &Expander::GradReshape},
      {"ExpandDims", &Expander::GradReshape},
      {"Transpose", &Expander::GradTranspose},
      {"ConcatV2", &Expander::GradConcat},
      {"Concat", &Expander::GradConcat},
      {"Split", &Expander::GradSplit},
      {"Pack", &Expander::GradPack},
      {"Unpack", &Expander::GradUnpack},
      {"GatherV2", &Expander::GradGather},
      {"Gather", &Expander::GradGather},
      {"Select", &Expander::GradSelect},
      {"Pad", &Expander::GradPad},
      {"MaxPool", &Expander::GradPool},
      {"AvgPool", &Expander::GradPool},
      // ONNX operators (dplace/io/onnx), as PyTorch's autograd runs them.
      {"Conv", &Expander::GradOnnxConv},
      {"ConvTranspose", &Expander::GradOnnxConv},
      {"Gemm", &Expander::GradOnnxGemm},
      {"BatchNormalization", &Expander::GradOnnxNormalization},
      {"LayerNormalization", &Expander::GradOnnxNormalization},
      {"InstanceNormalization", &Expander::GradOnnxNormalization},
      {"GroupNormalization", &Expander::GradOnnxNormalization},
      {"Div", &Expander::GradOnnxDiv},
      {"Erf", &Expander::GradOnnxErf},
      {"Where", &Expander::GradOnnxWhere},
      {"Einsum", &Expander::GradOnnxEinsum},
      {"LSTM", &Expander::GradOnnxRecurrent},
      {"GRU", &Expander::GradOnnxRecurrent},
      {"RNN", &Expander::GradOnnxRecurrent},
  };
  return *recipes;
}

void Expander::GradIdentity() {
  if (Wants(0)) c_.grads[0] = Dy();
}

void Expander::GradAddN() {
  for (int k = 0; k < NumInputs(); ++k) {
    if (Wants(k)) c_.grads[k] = Dy();
  }
}

Expander::BroadcastShapes Expander::EmitBroadcastGradientArgs() {
  const Ref sx = ShapeOf(X(0)), sy = ShapeOf(X(1));
  const size_t rank = YInfo().shape.size();
  return {sx, sy,
          EmitOp("BroadcastGradientArgs", "BroadcastGradientArgs", {sx, sy},
                 {ShapeVector(rank), ShapeVector(rank)}, 0)};
}

// math_grad's broadcasting binary ops: Shape of both inputs,
// BroadcastGradientArgs, then per input its factor, Sum over the
// broadcast axes and Reshape back.
void Expander::GradBroadcast() {
  if (NumInputs() != 2) return GradGeneric();
  const std::string& type = f_.op_type(c_.op);
  const bool want_x = Wants(0), want_y = Wants(1);
  if (!want_x && !want_y) return;
  const BroadcastShapes b = EmitBroadcastGradientArgs();
  const Ref sx = b.sx, sy = b.sy;
  const OpId args = b.args;
  const TensorInfo& out = YInfo();
  const double n = Elements(out);
  const Ref dy = Dy();
  // TF's names: input 0's ops are "mul", "Sum", "Reshape"; input 1's
  // "mul_1", "Sum_1", "Reshape_1".
  const auto named = [](const char* base, int k) {
    return k == 0 ? std::string(base) : std::string(base) + "_1";
  };
  // Sum over the broadcast axes of input k, [Neg,] Reshape to its shape.
  auto reduce = [&](Ref g, int k, bool negate) {
    Ref s = Emit(named("Sum", k), "Sum", {g, {args, k}}, XInfo(k), n);
    if (negate) s = Emit("Neg", "Neg", {s}, XInfo(k), Elements(XInfo(k)));
    return Emit(named("Reshape", k), "Reshape", {s, k == 0 ? sx : sy}, XInfo(k),
                0);
  };
  if (type == "Add" || type == "AddV2" || type == "Sub") {
    if (want_x) c_.grads[0] = reduce(dy, 0, false);
    if (want_y) c_.grads[1] = reduce(dy, 1, type == "Sub");
  } else if (type == "Mul") {
    if (want_x) {
      c_.grads[0] = reduce(Emit("mul", "Mul", {dy, X(1)}, out, n), 0, false);
    }
    if (want_y) {
      c_.grads[1] = reduce(Emit("mul_1", "Mul", {X(0), dy}, out, n), 1, false);
    }
  } else if (type == "RealDiv") {
    if (want_x) {
      c_.grads[0] =
          reduce(Emit("RealDiv", "RealDiv", {dy, X(1)}, out, n), 0, false);
    }
    if (want_y) {
      // -x / y / y * dy.
      const Ref neg = Emit("Neg", "Neg", {X(0)}, XInfo(0), Elements(XInfo(0)));
      const Ref d1 = Emit("RealDiv_1", "RealDiv", {neg, X(1)}, out, n);
      const Ref d2 = Emit("RealDiv_2", "RealDiv", {d1, X(1)}, out, n);
      c_.grads[1] = reduce(Emit("mul", "Mul", {dy, d2}, out, n), 1, false);
    }
  } else if (type == "SquaredDifference") {
    // x_grad = 2 * dy * (x - y); y gets its negation.
    const Ref two = EmitConst("scalar", Info({}));
    const Ref scaled = Emit("mul", "Mul", {two, dy}, out, n);
    const Ref diff = EmitAfterGradient("sub", "Sub", {X(0), X(1)}, out, n);
    const Ref g = Emit("mul_1", "Mul", {scaled, diff}, out, n);
    if (want_x) c_.grads[0] = reduce(g, 0, false);
    if (want_y) {
      const Ref r = reduce(g, 1, false);
      c_.grads[1] = Emit("Neg", "Neg", {r}, XInfo(1), Elements(XInfo(1)));
    }
  } else {  // Maximum, Minimum: the gradient goes where the input won.
    for (int k = 0; k < 2; ++k) {
      if (!Wants(k)) continue;
      c_.grads[k] =
          reduce(Emit(named("Select", k), "Select", {dy, X(0), X(1)}, out, n),
                 k, false);
    }
  }
}

// x ** y with a constant exponent: dx = dy * y * x ** (y - 1); dy (of the
// exponent) = dy * z * log(x) where x > 0.
void Expander::GradPow() {
  if (NumInputs() != 2) return GradGeneric();
  const BroadcastShapes b = EmitBroadcastGradientArgs();
  const Ref sx = b.sx, sy = b.sy;
  const OpId args = b.args;
  const TensorInfo& out = YInfo();
  const double n = Elements(out);
  if (Wants(0)) {
    const Ref one = EmitConst("sub/y", Info({}));
    const Ref y1 = Emit("sub", "Sub", {X(1), one}, XInfo(1), 1);
    const Ref pow = Emit("Pow", "Pow", {X(0), y1}, out, 10 * n);
    const Ref m = Emit("mul", "Mul", {Dy(), X(1)}, out, n);
    const Ref g = Emit("mul", "Mul", {m, pow}, out, n);
    const Ref s = Emit("Sum", "Sum", {g, {args, 0}}, XInfo(0), n);
    c_.grads[0] = ReshapeTo(s, sx, XInfo(0));
  }
  if (Wants(1)) {
    const Ref zero = EmitConst("Greater/y", Info({}));
    const Ref positive = Emit("Greater", "Greater", {X(0), zero},
                              Info(out.shape, DataType::kBool), n);
    const Ref log = Emit("Log", "Log", {X(0)}, XInfo(0), 10 * n);
    const Ref zeros = ZerosLike(X(0));
    const Ref safe = Emit("Select", "Select", {positive, log, zeros}, out, n);
    const Ref m = Emit("mul", "Mul", {Dy(), Y()}, out, n);
    const Ref g = Emit("mul", "Mul", {m, safe}, out, n);
    const Ref s = Emit("Sum", "Sum", {g, {args, 1}}, XInfo(1), n);
    c_.grads[1] = ReshapeTo(s, sy, XInfo(1));
  }
}

// MatMul, BatchMatMul: each operand's gradient is a product of the same
// size as the forward one.
void Expander::GradMatMul() {
  if (NumInputs() != 2) return GradGeneric();
  const std::string& type = f_.op_type(c_.op);
  const double flops = f_.flops(c_.op);
  if (Wants(0)) {
    c_.grads[0] = Emit("MatMul", type, {Dy(), X(1)}, XInfo(0), flops);
  }
  if (Wants(1)) {
    c_.grads[1] = Emit("MatMul_1", type, {X(0), Dy()}, XInfo(1), flops);
  }
}

void Expander::GradConv2D() {
  if (NumInputs() != 2) return GradGeneric();
  const double flops = f_.flops(c_.op);
  const OpId shapes = EmitOp("ShapeN", "ShapeN", {X(0), X(1)},
                             {ShapeVector(4), ShapeVector(4)}, 0);
  if (Wants(0)) {
    c_.grads[0] = Emit("Conv2DBackpropInput", "Conv2DBackpropInput",
                       {{shapes, 0}, X(1), Dy()}, XInfo(0), flops);
  }
  if (Wants(1)) {
    c_.grads[1] = Emit("Conv2DBackpropFilter", "Conv2DBackpropFilter",
                       {X(0), {shapes, 1}, Dy()}, XInfo(1), flops);
  }
}

void Expander::GradBiasAdd() {
  if (NumInputs() != 2) return GradGeneric();
  if (Wants(0)) c_.grads[0] = Dy();
  if (Wants(1)) {
    c_.grads[1] =
        Emit("BiasAddGrad", "BiasAddGrad", {Dy()}, XInfo(1), Elements(YInfo()));
  }
}

// Activations whose gradient reads their output (or input, for Relu6).
void Expander::GradActivation() {
  if (!Wants(0)) return;
  const std::string& type = f_.op_type(c_.op);
  const double n = Elements(YInfo());
  if (type == "Exp") {
    c_.grads[0] = Emit("mul", "Mul", {Dy(), Y()}, XInfo(0), n);
  } else if (type == "Relu6") {
    c_.grads[0] = Emit("Relu6Grad", "Relu6Grad", {Dy(), X(0)}, XInfo(0), n);
  } else {
    const int per_element = type == "Relu" ? 1 : 3;
    c_.grads[0] = Emit(type + "Grad", type + "Grad", {Y(), Dy()}, XInfo(0),
                       per_element * n);
  }
}

void Expander::GradUnaryMath() {
  if (!Wants(0)) return;
  const std::string& type = f_.op_type(c_.op);
  const TensorInfo& x = XInfo(0);
  const double n = Elements(x);
  if (type == "Neg") {
    c_.grads[0] = Emit("Neg", "Neg", {Dy()}, x, n);
  } else if (type == "Log") {
    const Ref r = EmitAfterGradient("Reciprocal", "Reciprocal", {X(0)}, x, n);
    c_.grads[0] = Emit("mul", "Mul", {Dy(), r}, x, n);
  } else if (type == "Square") {
    const Ref two = EmitConst("Const", Info({}));
    const Ref m = EmitAfterGradient("Mul", "Mul", {X(0), two}, x, n);
    c_.grads[0] = Emit("Mul_1", "Mul", {Dy(), m}, x, n);
  } else {  // L2Loss: x * dy.
    c_.grads[0] = Emit("mul", "Mul", {X(0), Dy()}, x, n);
  }
}

// Softmax: (dy - sum(dy * y, -1)) * y. LogSoftmax: dy - sum(dy, -1) *
// exp(y).
void Expander::GradSoftmax() {
  if (!Wants(0)) return;
  const TensorInfo& y = YInfo();
  const double n = Elements(y);
  std::vector<int64_t> kept = y.shape;
  if (!kept.empty()) kept.back() = 1;
  const Ref axis = EmitConst("Sum/reduction_indices", ShapeVector(1));
  if (f_.op_type(c_.op) == "Softmax") {
    const Ref m = Emit("mul", "Mul", {Dy(), Y()}, y, n);
    const Ref s = Emit("Sum", "Sum", {m, axis}, Info(kept), n);
    const Ref d = Emit("sub", "Sub", {Dy(), s}, y, n);
    c_.grads[0] = Emit("mul", "Mul", {d, Y()}, XInfo(0), n);
  } else {
    const Ref e = Emit("Exp", "Exp", {Y()}, y, n);
    const Ref s = Emit("Sum", "Sum", {Dy(), axis}, Info(kept), n);
    const Ref m = Emit("mul", "Mul", {s, e}, y, n);
    c_.grads[0] = Emit("sub", "Sub", {Dy(), m}, XInfo(0), n);
  }
}

// The logits' gradient is the saved backprop (output 1) times the loss
// gradient: PreventGradient, ExpandDims, Mul. Labels get none.
void Expander::GradCrossEntropy() {
  if (!Wants(0) || f_.num_outputs(c_.op) < 2) return;
  const TensorInfo& backprop = YInfo(1);
  const Ref saved =
      Emit("PreventGradient", "PreventGradient", {Y(1)}, backprop, 0);
  const Ref dim = EmitConst("ExpandDims/dim", IntScalar());
  std::vector<int64_t> column = YInfo(0).shape;
  column.push_back(1);
  const Ref e = Emit("ExpandDims", "ExpandDims", {Dy(), dim}, Info(column), 0);
  c_.grads[0] = Emit("mul", "Mul", {e, saved}, XInfo(0), Elements(backprop));
}

// Sum and Mean: reshape the gradient to the kept-dims shape and tile it
// back to the input's (TF's fast path when everything is reduced, else the
// reduced_shape arithmetic); Mean divides by the reduced count.
void Expander::GradReduction() {
  if (!Wants(0)) return;
  const TensorInfo& x = XInfo(0);
  const size_t rank = x.shape.size();
  const double n = Elements(x);
  std::vector<int64_t> kept(rank, 1);
  Ref tiled;
  if (Elements(YInfo()) == 1 || NumInputs() < 2) {
    const Ref shape = EmitConst("Reshape/shape", ShapeVector(rank));
    const Ref reshaped = ReshapeTo(Dy(), shape, Info(kept));
    const Ref multiples = EmitConst("Tile/multiples", ShapeVector(rank));
    tiled = Emit("Tile", "Tile", {reshaped, multiples}, x, n);
  } else {
    // reduced_shape(input_shape, axes): [d if i not in axes else 1].
    const Ref input_shape = ShapeOf(X(0));
    const Ref size = Emit("Size", "Size", {input_shape}, IntScalar(), 0);
    const TensorInfo axes = XInfo(1);
    const Ref add = Emit("add", "Add", {X(1), size}, axes, 0);
    const Ref mod = Emit("mod", "FloorMod", {add, size}, axes, 0);
    const Ref axes_shape = ShapeOf(mod);
    const Ref start = EmitConst("range/start", IntScalar());
    const Ref delta = EmitConst("range/delta", IntScalar());
    const Ref range =
        Emit("range", "Range", {start, size, delta}, ShapeVector(rank), 0);
    const Ref one = EmitConst("Fill/value", IntScalar());
    const Ref fill = Emit("Fill", "Fill", {axes_shape, one}, axes, 0);
    const Ref reduced =
        Emit("DynamicStitch", "DynamicStitch", {range, mod, input_shape, fill},
             ShapeVector(rank), 0);
    // tile_scaling = input_shape // max(reduced, 1).
    const Ref floor_one = EmitConst("Maximum/y", IntScalar());
    const Ref max =
        Emit("Maximum", "Maximum", {reduced, floor_one}, ShapeVector(rank), 0);
    const Ref scaling =
        Emit("floordiv", "FloorDiv", {input_shape, max}, ShapeVector(rank), 0);
    // The gradient in the kept-dims layout: as many elements as the
    // output, at the input's rank.
    std::vector<int64_t> kept_dims = YInfo().shape;
    if (kept_dims.size() != rank) {
      kept_dims = kept;
      if (rank > 0) kept_dims[0] = static_cast<int64_t>(Elements(YInfo()));
    }
    const Ref reshaped = ReshapeTo(Dy(), reduced, Info(kept_dims));
    tiled = Emit("Tile", "Tile", {reshaped, scaling}, x, n);
  }
  if (f_.op_type(c_.op) == "Mean") {
    const Ref factor = EmitConst("Const", Info({}));
    tiled = Emit("truediv", "RealDiv", {tiled, factor}, x, n);
  }
  c_.grads[0] = tiled;
}

// Reshape, Squeeze, ExpandDims: the gradient reshaped to the input's
// shape.
void Expander::GradReshape() {
  if (!Wants(0)) return;
  c_.grads[0] = ReshapeTo(Dy(), ShapeOf(X(0)), XInfo(0));
}

void Expander::GradTranspose() {
  if (!Wants(0)) return;
  if (NumInputs() < 2) {
    c_.grads[0] = Emit("transpose", "Transpose", {Dy()}, XInfo(0), 0);
    return;
  }
  const Ref inverse =
      Emit("InvertPermutation", "InvertPermutation", {X(1)}, XInfo(1), 0);
  c_.grads[0] = Emit("transpose", "Transpose", {Dy(), inverse}, XInfo(0), 0);
}

// ConcatV2 (values..., axis): axis % rank, ShapeN of the values,
// ConcatOffset, a Slice of the gradient per value. ONNX's Concat has no
// axis input.
void Expander::GradConcat() {
  const bool has_axis = f_.op_type(c_.op) == "ConcatV2" && NumInputs() >= 2 &&
                        !IsFloat(XInfo(NumInputs() - 1).dtype);
  const int values = has_axis ? NumInputs() - 1 : NumInputs();
  if (values == 1) {
    if (Wants(0)) c_.grads[0] = Dy();
    return;
  }
  const size_t rank = XInfo(0).shape.size();
  std::vector<Ref> operands;
  std::vector<TensorInfo> shapes;
  for (int k = 0; k < values; ++k) {
    operands.push_back(X(k));
    shapes.push_back(ShapeVector(rank));
  }
  std::vector<Ref> offset_inputs;
  if (has_axis) {
    const Ref rank_const = EmitConst("Rank", IntScalar());
    offset_inputs.push_back(
        Emit("mod", "FloorMod", {X(values), rank_const}, IntScalar(), 0));
  }
  const OpId shape_n = EmitOp("ShapeN", "ShapeN", operands, shapes, 0);
  for (int k = 0; k < values; ++k) offset_inputs.push_back({shape_n, k});
  const OpId offsets =
      EmitOp("ConcatOffset", "ConcatOffset", offset_inputs, shapes, 0);
  for (int k = 0; k < values; ++k) {
    if (!Wants(k)) continue;
    c_.grads[k] =
        Emit("Slice", "Slice", {Dy(), {offsets, k}, {shape_n, k}}, XInfo(k), 0);
  }
}

// Output i's gradient, zeros where nothing flowed back (TF's
// ZerosLikeOutsideLoop).
Ref Expander::DyOrZeros(int i) {
  if (c_.dy[i]) return *c_.dy[i];
  return ZerosLike(Y(i));
}

// Split (TF: split_dim, value; ONNX: value [, sizes]): the output
// gradients concatenated.
void Expander::GradSplit() {
  int value = -1;
  for (int k = 0; k < NumInputs() && value < 0; ++k) {
    if (IsFloat(XInfo(k).dtype)) value = k;
  }
  if (value < 0 || !Wants(value)) return;
  std::vector<Ref> parts;
  for (int i = 0; i < f_.num_outputs(c_.op); ++i) {
    parts.push_back(DyOrZeros(i));
  }
  if (value > 0) parts.push_back(X(0));
  c_.grads[value] = Emit("concat", "ConcatV2", parts, XInfo(value), 0);
}

void Expander::GradPack() {
  std::vector<TensorInfo> outputs;
  for (int k = 0; k < NumInputs(); ++k) outputs.push_back(XInfo(k));
  const OpId unstack = EmitOp("unstack", "Unpack", {Dy()}, outputs, 0);
  for (int k = 0; k < NumInputs(); ++k) {
    if (Wants(k)) c_.grads[k] = Ref{unstack, k};
  }
}

void Expander::GradUnpack() {
  if (!Wants(0)) return;
  std::vector<Ref> parts;
  for (int i = 0; i < f_.num_outputs(c_.op); ++i) {
    parts.push_back(DyOrZeros(i));
  }
  c_.grads[0] = Emit("stack", "Pack", parts, XInfo(0), 0);
}

// The gradient of a gathered table is sparse (TF's IndexedSlices): the
// output gradient reshaped to one row per id, and the ids.
void Expander::GradGather() {
  if (!Wants(0)) return;
  if (NumInputs() < 2) {
    // Indices folded at import (ONNX: positions from a constant Range):
    // no ids to pair a sparse gradient with, so the rows are summed into
    // a dense one.
    c_.grads[0] = Emit("UnsortedSegmentSum", "UnsortedSegmentSum", {Dy()},
                       XInfo(0), Elements(YInfo()));
    return;
  }
  const TensorInfo& table = XInfo(0);
  const TensorInfo& ids = XInfo(1);
  const size_t rank = table.shape.size();
  const Ref table_shape =
      Emit("Shape", "Shape", {X(0)},
           Info({static_cast<int64_t>(rank)}, DataType::kInt64), 0);
  const Ref shape32 =
      Emit("ToInt32", "Cast", {table_shape}, ShapeVector(rank), 0);
  const Ref size = Emit("Size", "Size", {X(1)}, IntScalar(), 0);
  const Ref zero = EmitConst("ExpandDims/dim", IntScalar());
  const Ref size1 =
      Emit("ExpandDims", "ExpandDims", {size, zero}, ShapeVector(1), 0);
  const Ref begin = EmitConst("strided_slice/stack", ShapeVector(1));
  const Ref end = EmitConst("strided_slice/stack_1", ShapeVector(1));
  const Ref strides = EmitConst("strided_slice/stack_2", ShapeVector(1));
  const Ref inner =
      Emit("strided_slice", "StridedSlice", {shape32, begin, end, strides},
           ShapeVector(rank - 1), 0);
  const Ref axis = EmitConst("concat/axis", IntScalar());
  const Ref values_shape =
      Emit("concat", "ConcatV2", {size1, inner, axis}, ShapeVector(rank), 0);
  const int64_t rows = static_cast<int64_t>(Elements(ids));
  std::vector<int64_t> values = {rows};
  values.insert(values.end(), table.shape.begin() + 1, table.shape.end());
  const Ref v = ReshapeTo(Dy(), values_shape, Info(values));
  const Ref i = ReshapeTo(X(1), size1, Info({rows}, ids.dtype));
  sparse_indices_[Key(v)] = i;
  c_.grads[0] = v;
}

// Select (condition, t, e): the gradient where each branch was taken.
void Expander::GradSelect() {
  if (NumInputs() != 3) return GradGeneric();
  const TensorInfo& y = YInfo();
  const double n = Elements(y);
  const Ref zeros = ZerosLike(X(1));
  if (Wants(1)) {
    c_.grads[1] = Emit("Select", "Select", {X(0), Dy(), zeros}, XInfo(1), n);
  }
  if (Wants(2)) {
    c_.grads[2] = Emit("Select", "Select", {X(0), zeros, Dy()}, XInfo(2), n);
  }
}

// Pad (x, paddings): slice the gradient at the leading paddings.
void Expander::GradPad() {
  if (!Wants(0) || NumInputs() != 2) return GradGeneric();
  const size_t rank = XInfo(0).shape.size();
  const Ref r = EmitConst("Rank", IntScalar());
  const Ref one = EmitConst("stack/1", IntScalar());
  const Ref size = Emit("stack", "Pack", {r, one}, ShapeVector(2), 0);
  const Ref begin0 = EmitConst("Slice/begin", ShapeVector(2));
  const Ref before =
      Emit("Slice", "Slice", {X(1), begin0, size},
           Info({static_cast<int64_t>(rank), 1}, DataType::kInt32), 0);
  const Ref flat = EmitConst("Reshape/shape", ShapeVector(1));
  const Ref begin = ReshapeTo(before, flat, ShapeVector(rank));
  const Ref sizes = ShapeOf(X(0));
  c_.grads[0] = Emit("Slice", "Slice", {Dy(), begin, sizes}, XInfo(0), 0);
}

void Expander::GradPool() {
  if (!Wants(0)) return;
  const double flops = f_.flops(c_.op);
  if (f_.op_type(c_.op) == "MaxPool") {
    c_.grads[0] =
        Emit("MaxPoolGrad", "MaxPoolGrad", {X(0), Y(), Dy()}, XInfo(0), flops);
  } else {
    c_.grads[0] = Emit("AvgPoolGrad", "AvgPoolGrad", {ShapeOf(X(0)), Dy()},
                       XInfo(0), flops);
  }
}

// Op types without a recipe: one gradient op per input, with the forward
// op's FLOPs, reading the output gradients and the forward tensors its
// math likely needs.
void Expander::GradGeneric() {
  const std::string& type = f_.op_type(c_.op);
  const Saved saved = SavedFor(type);
  std::vector<Ref> dys;
  for (const auto& d : c_.dy) {
    if (d) dys.push_back(*d);
  }
  for (int k = 0; k < NumInputs(); ++k) {
    if (!Wants(k)) continue;
    if (type == "BiasAdd" && k == 0 && dys.size() == 1) {
      c_.grads[k] = dys[0];
      continue;
    }
    std::vector<Ref> inputs = dys;
    if (saved == Saved::kOtherInputs || saved == Saved::kInputs ||
        saved == Saved::kInputsAndOutput) {
      for (int j = 0; j < NumInputs(); ++j) {
        if (saved == Saved::kOtherInputs && j == k) continue;
        inputs.push_back(X(j));
      }
    }
    if ((saved == Saved::kOutput || saved == Saved::kInputsAndOutput) &&
        f_.num_outputs(c_.op) > 0) {
      inputs.push_back(Y());
    }
    const OpId id = AddDerived(
        c_.op, "gradients/" + f_.op_name(c_.op) + "_grad/" + std::to_string(k),
        GradientType(type, k), Phase::kBackward, inputs, {XInfo(k)},
        f_.flops(c_.op));
    c_.grads[k] = Ref{id, 0};
  }
}

}  // namespace dplace::training_internal
