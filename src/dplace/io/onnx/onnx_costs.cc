#include "dplace/io/onnx/onnx_costs.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <unordered_set>

namespace dplace::onnx_internal {
namespace {

using ::onnx::NodeProto;

std::optional<double> ConvFlops(const NodeProto& node, const NodeTensors& t) {
  const TensorInfo* w = t.input(1);
  if (!w || w->shape.size() < 2 || t.outputs.empty()) return std::nullopt;
  // W is [M, C/group, k...]: each output element is a dot product over
  // C/group * prod(k) input elements.
  double per_output = 1;
  for (size_t i = 1; i < w->shape.size(); ++i) per_output *= w->shape[i];
  const double out = static_cast<double>(t.OutputElements());
  return 2 * out * per_output + (t.input(2) ? out : 0);
}

std::optional<double> ConvTransposeFlops(const NodeProto& node,
                                         const NodeTensors& t) {
  const TensorInfo* x = t.input(0);
  const TensorInfo* w = t.input(1);
  if (!x || !w || w->shape.size() < 2 || t.outputs.empty()) {
    return std::nullopt;
  }
  // W is [C, M/group, k...]: each input element scatters into
  // M/group * prod(k) outputs.
  double per_input = 1;
  for (size_t i = 1; i < w->shape.size(); ++i) per_input *= w->shape[i];
  const double out = static_cast<double>(t.OutputElements());
  return 2 * static_cast<double>(Elements(*x)) * per_input +
         (t.input(2) ? out : 0);
}

std::optional<double> GemmFlops(const NodeProto& node, const NodeTensors& t) {
  const TensorInfo* a = t.input(0);
  if (!a || a->shape.size() != 2 || t.outputs.empty()) return std::nullopt;
  const double k = IntAttribute(node, "transA", 0) ? a->shape[0] : a->shape[1];
  const double out = static_cast<double>(t.OutputElements());
  return 2 * out * k + (t.input(2) ? out : 0);
}

std::optional<double> MatMulFlops(const NodeProto& node, const NodeTensors& t) {
  const TensorInfo* a = t.input(0);
  if (!a || t.outputs.empty()) return std::nullopt;
  // Each output element is a dot product over A's last dim (batch dims
  // broadcast; a 1-D A is a row vector).
  return 2.0 * static_cast<double>(t.OutputElements()) *
         static_cast<double>(Dim(*a, -1));
}

// Einsum: every combination of the indices of all operands is one
// multiply-add per extra operand (a plain contraction, no reordering).
std::optional<double> EinsumFlops(const NodeProto& node, const NodeTensors& t) {
  const std::optional<EinsumDims> e =
      ParseEinsum(StringAttribute(node, "equation"), t.inputs);
  if (!e) return std::nullopt;
  double combinations = 1;
  for (const auto& [letter, size] : e->sizes) combinations *= size;
  for (int64_t d : e->ellipsis) combinations *= d;
  if (e->operands == 1) return combinations;
  return 2 * combinations * static_cast<double>(e->operands - 1);
}

std::optional<double> PoolFlops(const NodeProto& node, const NodeTensors& t) {
  double window = 1;
  for (int64_t k : IntsAttribute(node, "kernel_shape")) window *= k;
  return static_cast<double>(t.OutputElements()) * window;
}

std::optional<double> BatchNormFlops(const NodeProto& node,
                                     const NodeTensors& t) {
  // Normalise, scale and shift; a training-mode run also computes the batch
  // mean and variance.
  const bool training = IntAttribute(node, "training_mode", 0) != 0;
  return (training ? 7.0 : 4.0) * static_cast<double>(t.OutputElements());
}

// LSTM, GRU and RNN: per time step and direction, the gate matmuls over
// [x, h] plus the element-wise gate math.
std::optional<double> RecurrentFlops(const NodeProto& node,
                                     const NodeTensors& t, int gates,
                                     int elementwise_per_hidden) {
  const TensorInfo* x = t.input(0);
  const TensorInfo* w = t.input(1);
  if (!x || !w || x->shape.size() != 3 || w->shape.size() != 3) {
    return std::nullopt;
  }
  const bool batch_major = IntAttribute(node, "layout", 0) != 0;
  const double steps = batch_major ? x->shape[1] : x->shape[0];
  const double batch = batch_major ? x->shape[0] : x->shape[1];
  const double input_size = x->shape[2];
  const double directions = w->shape[0];
  const double hidden = IntAttribute(node, "hidden_size", w->shape[1] / gates);
  const double gate_elements = batch * gates * hidden;
  return directions * steps *
         (2 * gate_elements * (input_size + hidden) + 3 * gate_elements +
          elementwise_per_hidden * batch * hidden);
}

FlopsFormula PerOutputElement(double flops) {
  return [flops](const NodeProto&, const NodeTensors& t) {
    return std::optional<double>(flops *
                                 static_cast<double>(t.OutputElements()));
  };
}

FlopsFormula PerInputElement(double flops) {
  return [flops](const NodeProto&, const NodeTensors& t) {
    return std::optional<double>(flops *
                                 static_cast<double>(t.InputElements()));
  };
}

// One operation per output element for each input beyond the first.
std::optional<double> VariadicFlops(const NodeProto&, const NodeTensors& t) {
  const double extra = std::max<double>(1, t.inputs.size() - 1.0);
  return extra * static_cast<double>(t.OutputElements());
}

std::optional<double> NoFlops(const NodeProto&, const NodeTensors&) {
  return 0.0;
}

// Ops that only relabel their input's memory (or read no data at all).
bool IsView(const std::string& type) {
  static const std::unordered_set<std::string> views = {
      "Reshape",  "Flatten", "Squeeze", "Unsqueeze",
      "Identity", "Shape",   "Size",    "Constant"};
  return views.count(type) > 0;
}

}  // namespace

const std::unordered_map<std::string, FlopsFormula>& FlopsFormulas() {
  static const auto* formulas = [] {
    auto* f = new std::unordered_map<std::string, FlopsFormula>;
    (*f)["Conv"] = ConvFlops;
    (*f)["ConvInteger"] = ConvFlops;
    (*f)["ConvTranspose"] = ConvTransposeFlops;
    (*f)["Gemm"] = GemmFlops;
    (*f)["MatMul"] = MatMulFlops;
    (*f)["MatMulInteger"] = MatMulFlops;
    (*f)["Einsum"] = EinsumFlops;
    (*f)["BatchNormalization"] = BatchNormFlops;
    for (const char* op :
         {"LayerNormalization", "InstanceNormalization", "GroupNormalization",
          "MeanVarianceNormalization", "LpNormalization"}) {
      (*f)[op] = PerOutputElement(8);
    }
    (*f)["LRN"] = [](const NodeProto& node, const NodeTensors& t) {
      return std::optional<double>((2.0 * IntAttribute(node, "size", 1) + 4) *
                                   static_cast<double>(t.OutputElements()));
    };
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
      (*f)[op] = PoolFlops;
    }
    for (const char* op :
         {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
      (*f)[op] = PerInputElement(1);
    }
    (*f)["LSTM"] = [](const NodeProto& n, const NodeTensors& t) {
      return RecurrentFlops(n, t, 4, 4);
    };
    (*f)["GRU"] = [](const NodeProto& n, const NodeTensors& t) {
      return RecurrentFlops(n, t, 3, 4);
    };
    (*f)["RNN"] = [](const NodeProto& n, const NodeTensors& t) {
      return RecurrentFlops(n, t, 1, 0);
    };
    // Softmax: max, subtract, exp, sum, divide.
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      (*f)[op] = PerOutputElement(5);
    }
    // Element-wise unary math and activations: one per element.
    for (const char* op : {"Relu",
                           "LeakyRelu",
                           "PRelu",
                           "Elu",
                           "Selu",
                           "Celu",
                           "Gelu",
                           "Sigmoid",
                           "HardSigmoid",
                           "HardSwish",
                           "Tanh",
                           "Exp",
                           "Log",
                           "Sqrt",
                           "Reciprocal",
                           "Neg",
                           "Abs",
                           "Ceil",
                           "Floor",
                           "Round",
                           "Sign",
                           "Erf",
                           "Sin",
                           "Cos",
                           "Tan",
                           "Asin",
                           "Acos",
                           "Atan",
                           "Sinh",
                           "Cosh",
                           "Asinh",
                           "Acosh",
                           "Atanh",
                           "Softplus",
                           "Softsign",
                           "Not",
                           "Clip",
                           "ThresholdedRelu",
                           "Mish",
                           "IsNaN",
                           "IsInf",
                           "Shrink",
                           "Dropout",
                           "QuantizeLinear",
                           "DequantizeLinear",
                           "Resize",
                           "Upsample"}) {
      (*f)[op] = PerOutputElement(1);
    }
    // Element-wise with broadcasting over two or more inputs.
    for (const char* op :
         {"Add",        "Sub",       "Mul",         "Div",     "Pow",
          "Max",        "Min",       "Mean",        "Sum",     "Mod",
          "Equal",      "Less",      "LessOrEqual", "Greater", "GreaterOrEqual",
          "And",        "Or",        "Xor",         "Where",   "BitShift",
          "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
      (*f)[op] = VariadicFlops;
    }
    // Reductions and scans: one per input element.
    for (const char* op :
         {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
          "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
          "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum", "TopK"}) {
      (*f)[op] = PerInputElement(1);
    }
    // Data movement and shape arithmetic: bytes only.
    for (const char* op : {"Concat",
                           "Split",
                           "Slice",
                           "Gather",
                           "GatherElements",
                           "GatherND",
                           "ScatterND",
                           "ScatterElements",
                           "Scatter",
                           "Transpose",
                           "Pad",
                           "Tile",
                           "Expand",
                           "Cast",
                           "CastLike",
                           "Identity",
                           "Reshape",
                           "Flatten",
                           "Squeeze",
                           "Unsqueeze",
                           "Shape",
                           "Size",
                           "Constant",
                           "ConstantOfShape",
                           "Range",
                           "OneHot",
                           "DepthToSpace",
                           "SpaceToDepth",
                           "Trilu",
                           "EyeLike",
                           "ReverseSequence"}) {
      (*f)[op] = NoFlops;
    }
    return f;
  }();
  return *formulas;
}

namespace {

// Tensors of up to 2^63-1 bytes each: their sum saturates there (a fuzzed
// Gather of 6e18 bytes overflowed it).
int64_t AddBytes(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum)
             ? std::numeric_limits<int64_t>::max()
             : sum;
}

}  // namespace

int64_t BytesAccessed(const NodeProto& node, const NodeTensors& t) {
  if (IsView(node.op_type())) return 0;
  int64_t bytes = 0;
  for (const TensorInfo& out : t.outputs) bytes = AddBytes(bytes, out.bytes);
  if (node.op_type() == "Gather" || node.op_type() == "GatherElements" ||
      node.op_type() == "GatherND") {
    // Reads the indices and only the gathered part of the data.
    const bool read_indices = t.input(1) && !t.constant[1];
    return AddBytes(AddBytes(bytes, bytes),
                    read_indices ? t.input(1)->bytes : 0);
  }
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    if (t.inputs[i] && !t.constant[i]) {
      bytes = AddBytes(bytes, t.inputs[i]->bytes);
    }
  }
  return bytes;
}

// --- Weights ---------------------------------------------------------------

bool IsParameterSlot(const std::string& type, int slot) {
  if (type == "Conv" || type == "ConvTranspose") return slot == 1 || slot == 2;
  if (type == "Gemm") return slot == 1 || slot == 2;
  if (type == "BatchNormalization") return slot >= 1 && slot <= 4;
  if (type == "InstanceNormalization" || type == "LayerNormalization" ||
      type == "GroupNormalization") {
    return slot == 1 || slot == 2;
  }
  if (type == "LSTM" || type == "GRU" || type == "RNN") {
    return slot >= 1 && slot <= 3;
  }
  if (type == "PRelu") return slot == 1;
  return false;
}

bool IsStateSlot(const std::string& type, int slot) {
  return type == "BatchNormalization" && (slot == 3 || slot == 4);
}

bool HasParameterName(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == name.size() ||
      name.find_first_of(":/") != std::string::npos) {
    return false;
  }
  // A state_dict key names a module attribute: its last part is an
  // identifier ("weight_ih_l0", "in_proj_bias", "running_var", "mask"),
  // where an exporter's own value names end in a number ("input.1").
  const char first = name[dot + 1];
  return std::isalpha(static_cast<unsigned char>(first)) || first == '_';
}

bool IsShapeOnlyPath(const std::string& type, int slot) {
  static const std::unordered_set<std::string> data_slot_0 = {
      "Slice",   "Unsqueeze", "Squeeze", "Reshape",  "Transpose", "Gather",
      "Flatten", "Split",     "Cast",    "Identity", "Expand"};
  if (type == "Concat") return true;
  return slot == 0 && data_slot_0.count(type) > 0;
}

}  // namespace dplace::onnx_internal
