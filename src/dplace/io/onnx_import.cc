#include "dplace/io/onnx_import.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "dplace/graph/training.h"
#include "dplace/io/file.h"

namespace dplace {
namespace {

using ::onnx::AttributeProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::TypeProto;
using ::onnx::ValueInfoProto;

constexpr char kDataInputOpType[] = "IteratorGetNext";
constexpr char kConstantOpType[] = "Const";

// --- Shapes and element types ---------------------------------------------

std::optional<DataType> FromOnnxType(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT:
      return DataType::kFloat32;
    case TensorProto::FLOAT16:
      return DataType::kFloat16;
    case TensorProto::BFLOAT16:
      return DataType::kBFloat16;
    case TensorProto::DOUBLE:
      return DataType::kFloat64;
    case TensorProto::INT8:
    case TensorProto::UINT8:
      return DataType::kInt8;
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return DataType::kInt32;
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return DataType::kInt64;
    case TensorProto::BOOL:
      return DataType::kBool;
    default:  // 16-bit integers, strings, complex numbers: not in the IR.
      return std::nullopt;
  }
}

bool IsFloatingPoint(int32_t elem_type) {
  return elem_type == TensorProto::FLOAT || elem_type == TensorProto::FLOAT16 ||
         elem_type == TensorProto::BFLOAT16 || elem_type == TensorProto::DOUBLE;
}

// Fills in `info.bytes` from its shape; a negative dim or a byte count over
// 2^63-1 is an error (the caller names the tensor), never a wrapped size.
StatusOr<TensorInfo> WithBytes(TensorInfo info) {
  for (int64_t d : info.shape) {
    if (d < 0) {
      return InvalidArgumentError("negative dim in shape " +
                                  DescribeShape(info.shape, info.dtype));
    }
  }
  const std::optional<int64_t> bytes =
      CheckedShapeBytes(info.shape, info.dtype);
  if (!bytes) {
    return InvalidArgumentError("shape " +
                                DescribeShape(info.shape, info.dtype) +
                                " has more than 2^63-1 bytes");
  }
  info.bytes = *bytes;
  return info;
}

// The shape and element type of a value, or why there is none. The message
// says what is missing, for the caller to prefix with the tensor's name.
StatusOr<TensorInfo> InfoFromType(const TypeProto& type) {
  if (!type.has_tensor_type()) {
    return InvalidArgumentError(
        "not a tensor (sequence, map and optional values are not supported)");
  }
  const TypeProto::Tensor& tensor = type.tensor_type();
  if (tensor.elem_type() == TensorProto::UNDEFINED) {
    return InvalidArgumentError("no element type");
  }
  const std::optional<DataType> dtype = FromOnnxType(tensor.elem_type());
  if (!dtype) {
    return InvalidArgumentError(
        "element type " +
        TensorProto::DataType_Name(
            static_cast<TensorProto::DataType>(tensor.elem_type())) +
        " is not supported");
  }
  if (!tensor.has_shape()) {
    return InvalidArgumentError(
        "no shape (shape inference could not infer it and the model does not "
        "declare it)");
  }
  TensorInfo info;
  info.dtype = *dtype;
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const auto& dim = tensor.shape().dim(i);
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      info.shape.push_back(dim.dim_value());
    } else if (dim.has_dim_param()) {
      return InvalidArgumentError("dim " + std::to_string(i) +
                                  " is symbolic ('" + dim.dim_param() + "')");
    } else {
      return InvalidArgumentError("dim " + std::to_string(i) + " is unknown");
    }
  }
  return WithBytes(std::move(info));
}

int64_t Elements(const TensorInfo& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

int64_t Dim(const TensorInfo& t, int i) {
  if (i < 0) i += static_cast<int>(t.shape.size());
  return i >= 0 && i < static_cast<int>(t.shape.size()) ? t.shape[i] : 1;
}

// --- Attributes ------------------------------------------------------------

const AttributeProto* FindAttribute(const NodeProto& node,
                                    const std::string& name) {
  for (const AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t IntAttribute(const NodeProto& node, const std::string& name,
                     int64_t fallback) {
  const AttributeProto* a = FindAttribute(node, name);
  return a ? a->i() : fallback;
}

std::vector<int64_t> IntsAttribute(const NodeProto& node,
                                   const std::string& name) {
  const AttributeProto* a = FindAttribute(node, name);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}

std::string StringAttribute(const NodeProto& node, const std::string& name) {
  const AttributeProto* a = FindAttribute(node, name);
  return a ? a->s() : "";
}

// --- Costs -----------------------------------------------------------------

// The tensors one node reads and writes; null for an absent optional input.
struct NodeTensors {
  std::vector<const TensorInfo*> inputs;
  std::vector<bool> constant;  // Per input: folded at import, not read.
  std::vector<TensorInfo> outputs;

  const TensorInfo* input(size_t i) const {
    return i < inputs.size() ? inputs[i] : nullptr;
  }
  int64_t OutputElements() const {
    return outputs.empty() ? 0 : Elements(outputs[0]);
  }
  int64_t InputElements() const {
    return inputs.empty() || !inputs[0] ? 0 : Elements(*inputs[0]);
  }
};

// FLOPs of one run (2 per multiply-add), or nullopt when the operator has
// no formula here or its operands do not fit it.
using FlopsFormula =
    std::function<std::optional<double>(const NodeProto&, const NodeTensors&)>;

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

// An Einsum equation applied to its operands' shapes: the size of every
// index letter, the broadcast dims of "...", and the output's indices.
struct EinsumDims {
  std::map<char, int64_t> sizes;
  std::vector<int64_t> ellipsis;  // Right-aligned broadcast of the "..."s.
  size_t operands = 0;
  std::string output;  // Explicit after "->", else the implicit one.
};

std::optional<EinsumDims> ParseEinsum(
    std::string equation, const std::vector<const TensorInfo*>& inputs) {
  equation.erase(std::remove(equation.begin(), equation.end(), ' '),
                 equation.end());
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != inputs.size()) return std::nullopt;
  EinsumDims e;
  e.operands = terms.size();
  std::map<char, int> uses;
  bool any_ellipsis = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    const TensorInfo* x = inputs[i];
    if (!x) return std::nullopt;
    const std::string& term = terms[i];
    const size_t dots = term.find("...");
    any_ellipsis = any_ellipsis || dots != std::string::npos;
    const int letters =
        static_cast<int>(term.size()) - (dots == std::string::npos ? 0 : 3);
    const int ellipsis_rank = static_cast<int>(x->shape.size()) - letters;
    if (ellipsis_rank < 0 ||
        (dots == std::string::npos && ellipsis_rank != 0)) {
      return std::nullopt;
    }
    int axis = 0;
    for (size_t c = 0; c < term.size(); ++c) {
      if (c == dots) {
        if (static_cast<int>(e.ellipsis.size()) < ellipsis_rank) {
          e.ellipsis.insert(e.ellipsis.begin(),
                            ellipsis_rank - e.ellipsis.size(), 1);
        }
        for (int k = 0; k < ellipsis_rank; ++k) {
          int64_t& d = e.ellipsis[e.ellipsis.size() - ellipsis_rank + k];
          d = std::max(d, x->shape[axis + k]);
        }
        axis += ellipsis_rank;
        c += 2;
        continue;
      }
      int64_t& size = e.sizes[term[c]];
      size = std::max(size, x->shape[axis++]);
      ++uses[term[c]];
    }
  }
  if (arrow != std::string::npos) {
    e.output = equation.substr(arrow + 2);
  } else {  // Implicit: "..." first, then the letters used once, sorted.
    if (any_ellipsis) e.output = "...";
    for (const auto& [letter, count] : uses) {
      if (count == 1) e.output += letter;
    }
  }
  return e;
}

std::optional<std::vector<int64_t>> EinsumOutputShape(const EinsumDims& e) {
  std::vector<int64_t> shape;
  for (size_t c = 0; c < e.output.size(); ++c) {
    if (e.output.compare(c, 3, "...") == 0) {
      shape.insert(shape.end(), e.ellipsis.begin(), e.ellipsis.end());
      c += 2;
      continue;
    }
    auto it = e.sizes.find(e.output[c]);
    if (it == e.sizes.end()) return std::nullopt;
    shape.push_back(it->second);
  }
  return shape;
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

// Ops that only relabel their input's memory (or read no data at all).
bool IsView(const std::string& type) {
  static const std::unordered_set<std::string> views = {
      "Reshape",  "Flatten", "Squeeze", "Unsqueeze",
      "Identity", "Shape",   "Size",    "Constant"};
  return views.count(type) > 0;
}

int64_t BytesAccessed(const NodeProto& node, const NodeTensors& t) {
  if (IsView(node.op_type())) return 0;
  int64_t bytes = 0;
  for (const TensorInfo& out : t.outputs) bytes += out.bytes;
  if (node.op_type() == "Gather" || node.op_type() == "GatherElements" ||
      node.op_type() == "GatherND") {
    // Reads the indices and only the gathered part of the data.
    const bool read_indices = t.input(1) && !t.constant[1];
    return 2 * bytes + (read_indices ? t.input(1)->bytes : 0);
  }
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    if (t.inputs[i] && !t.constant[i]) bytes += t.inputs[i]->bytes;
  }
  return bytes;
}

// --- Weights ---------------------------------------------------------------

// Input slots that hold a layer's parameters, by operator.
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

// Slots whose tensor is state, not a trainable parameter.
bool IsStateSlot(const std::string& type, int slot) {
  return type == "BatchNormalization" && (slot == 3 || slot == 4);
}

// "layer1.0.bn1.running_mean", "encoder.layers.0.self_attn.in_proj_weight".
bool HasParameterName(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0 ||
      name.find_first_of(":/") != std::string::npos) {
    return false;
  }
  const std::string last = name.substr(dot + 1);
  auto ends_with = [&last](const std::string& suffix) {
    return last.size() >= suffix.size() &&
           last.compare(last.size() - suffix.size(), suffix.size(), suffix) ==
               0;
  };
  return ends_with("weight") || ends_with("bias") || last == "running_mean" ||
         last == "running_var" || last == "num_batches_tracked";
}

std::string Stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const std::string ext = ".onnx";
  if (name.size() > ext.size() &&
      name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    name.resize(name.size() - ext.size());
  }
  return name.empty() ? "onnx" : name;
}

// --- Constant folding of shape arithmetic ----------------------------------
//
// Exporters compute Reshape targets and Slice bounds at run time from Shape
// ops (PyTorch does whenever a dim is dynamic). Once the batch is fixed
// these are constants, but libonnx's shape inference does not evaluate
// them, so the importer does: small tensors whose value is known (Constant
// nodes, small integer initializers, Shape of a tensor with a static shape,
// and arithmetic on those) are evaluated, and the nodes that compute them
// become no ops. Values are kept as doubles: exact for the integers of
// shapes.

constexpr int64_t kMaxFoldedElements = 1024;

struct ConstTensor {
  int32_t elem_type = TensorProto::INT64;
  std::vector<int64_t> dims;
  std::vector<double> values;
};

bool IsFoldableType(int32_t t) {
  return t == TensorProto::INT64 || t == TensorProto::INT32 ||
         t == TensorProto::BOOL || t == TensorProto::FLOAT ||
         t == TensorProto::DOUBLE;
}

// The number of elements of `dims`; nullopt for a negative dim or a count
// past int64 (a fuzzed Constant's dims multiplied past it: UBSan).
std::optional<int64_t> ElementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

// Integers a double holds exactly: folded integral values stay within, so
// converting one back to an integer is defined and exact.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

// A folded value as an integer (a dim, an axis, an index): nullopt unless
// it is one, and exact.
std::optional<int64_t> ExactInteger(double v) {
  if (!(std::fabs(v) <= kMaxExactInteger) || v != std::trunc(v)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

template <typename T>
bool ReadRaw(const std::string& raw, int64_t n, std::vector<double>* out) {
  if (raw.size() != static_cast<size_t>(n) * sizeof(T)) return false;
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out->push_back(static_cast<double>(v));
  }
  return true;
}

// A tensor's values, from its raw bytes (as `T`) or its typed field.
template <typename T, typename Field>
bool ReadValues(const TensorProto& t, const Field& typed, int64_t n,
                std::vector<double>* out) {
  if (t.has_raw_data()) return ReadRaw<T>(t.raw_data(), n, out);
  out->assign(typed.begin(), typed.end());
  return true;
}

std::optional<ConstTensor> ConstFromProto(const TensorProto& t) {
  if (!IsFoldableType(t.data_type()) ||
      t.data_location() == TensorProto::EXTERNAL) {
    return std::nullopt;
  }
  ConstTensor c;
  c.elem_type = t.data_type();
  c.dims.assign(t.dims().begin(), t.dims().end());
  const std::optional<int64_t> count = ElementCount(c.dims);
  if (!count || *count > kMaxFoldedElements) return std::nullopt;
  const int64_t n = *count;
  bool ok = true;
  switch (t.data_type()) {
    case TensorProto::INT64:
      ok = ReadValues<int64_t>(t, t.int64_data(), n, &c.values);
      break;
    case TensorProto::INT32:
      ok = ReadValues<int32_t>(t, t.int32_data(), n, &c.values);
      break;
    case TensorProto::BOOL:  // Typed bools live in int32_data.
      ok = ReadValues<uint8_t>(t, t.int32_data(), n, &c.values);
      break;
    case TensorProto::FLOAT:
      ok = ReadValues<float>(t, t.float_data(), n, &c.values);
      break;
    case TensorProto::DOUBLE:
      ok = ReadValues<double>(t, t.double_data(), n, &c.values);
      break;
  }
  if (!ok || static_cast<int64_t>(c.values.size()) != n) return std::nullopt;
  return c;
}

TensorProto ConstToProto(const ConstTensor& c, const std::string& name) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(c.elem_type);
  for (int64_t d : c.dims) t.add_dims(d);
  for (double v : c.values) {
    switch (c.elem_type) {
      case TensorProto::INT64:
        t.add_int64_data(static_cast<int64_t>(v));
        break;
      case TensorProto::FLOAT:
        t.add_float_data(static_cast<float>(v));
        break;
      case TensorProto::DOUBLE:
        t.add_double_data(v);
        break;
      default:  // INT32, BOOL.
        t.add_int32_data(static_cast<int32_t>(v));
        break;
    }
  }
  return t;
}

bool IsIntegral(int32_t elem_type) {
  return elem_type != TensorProto::FLOAT && elem_type != TensorProto::DOUBLE;
}

// Rounds a computed value to its element type.
double Normalize(double v, int32_t elem_type) {
  if (elem_type == TensorProto::BOOL) return v != 0 ? 1 : 0;
  if (elem_type == TensorProto::FLOAT) {
    // Past float's range the cast is undefined; IEEE rounds to infinity.
    return std::fabs(v) > FLT_MAX && std::isfinite(v)
               ? std::copysign(HUGE_VAL, v)
               : static_cast<float>(v);
  }
  return IsIntegral(elem_type) ? std::trunc(v) : v;
}

// Whether every value of `c` converts to its element type: integral
// values exact in a double (and int32 ones in int32's range). A fold
// that leaves this range is not folded.
bool Representable(const ConstTensor& c) {
  if (!IsIntegral(c.elem_type)) return true;
  const double most =
      c.elem_type == TensorProto::INT32 ? 2147483647.0 : kMaxExactInteger;
  const double least =
      c.elem_type == TensorProto::INT32 ? -2147483648.0 : -kMaxExactInteger;
  for (double v : c.values) {
    if (!(v >= least && v <= most)) return false;
  }
  return true;
}

ConstTensor Scalar(double v, int32_t elem_type) {
  ConstTensor c;
  c.elem_type = elem_type;
  c.values = {v};
  return c;
}

// Element-wise over two or three operands of equal size, or of size 1.
std::optional<ConstTensor> Elementwise(
    const std::vector<const ConstTensor*>& in, int32_t elem_type,
    const std::function<double(const std::vector<double>&)>& f) {
  const ConstTensor* widest = in[0];
  for (const ConstTensor* c : in) {
    if (c->values.size() > widest->values.size() ||
        (c->values.size() == widest->values.size() &&
         c->dims.size() > widest->dims.size())) {
      widest = c;
    }
  }
  for (const ConstTensor* c : in) {
    if (c->values.size() != 1 && c->values.size() != widest->values.size()) {
      return std::nullopt;
    }
  }
  ConstTensor out;
  out.elem_type = elem_type;
  out.dims = widest->dims;
  std::vector<double> args(in.size());
  for (size_t i = 0; i < widest->values.size(); ++i) {
    for (size_t k = 0; k < in.size(); ++k) {
      args[k] = in[k]->values.size() == 1 ? in[k]->values[0] : in[k]->values[i];
    }
    out.values.push_back(Normalize(f(args), elem_type));
  }
  return out;
}

std::optional<ConstTensor> Binary(const std::string& op, const ConstTensor& a,
                                  const ConstTensor& b, const NodeProto& node) {
  const int32_t t = a.elem_type;
  const bool integral = IsIntegral(t);
  std::function<double(const std::vector<double>&)> f;
  int32_t out_type = t;
  if (op == "Add") {
    f = [](const auto& v) { return v[0] + v[1]; };
  } else if (op == "Sub") {
    f = [](const auto& v) { return v[0] - v[1]; };
  } else if (op == "Mul") {
    f = [](const auto& v) { return v[0] * v[1]; };
  } else if (op == "Div") {
    for (double d : b.values) {
      if (d == 0) return std::nullopt;
    }
    f = [integral](const auto& v) {
      return integral ? std::trunc(v[0] / v[1]) : v[0] / v[1];
    };
  } else if (op == "Mod") {
    for (double d : b.values) {
      if (d == 0) return std::nullopt;
    }
    const bool fmod = IntAttribute(node, "fmod", 0) != 0;
    f = [fmod](const auto& v) {
      return fmod ? std::fmod(v[0], v[1])
                  : v[0] - v[1] * std::floor(v[0] / v[1]);
    };
  } else if (op == "Pow") {
    f = [](const auto& v) { return std::pow(v[0], v[1]); };
  } else if (op == "Max") {
    f = [](const auto& v) { return std::max(v[0], v[1]); };
  } else if (op == "Min") {
    f = [](const auto& v) { return std::min(v[0], v[1]); };
  } else if (op == "Equal" || op == "Less" || op == "Greater" ||
             op == "LessOrEqual" || op == "GreaterOrEqual") {
    out_type = TensorProto::BOOL;
    f = [op](const auto& v) -> double {
      if (op == "Equal") return v[0] == v[1];
      if (op == "Less") return v[0] < v[1];
      if (op == "Greater") return v[0] > v[1];
      if (op == "LessOrEqual") return v[0] <= v[1];
      return v[0] >= v[1];
    };
  } else if (op == "And") {
    f = [](const auto& v) -> double { return v[0] != 0 && v[1] != 0; };
  } else if (op == "Or") {
    f = [](const auto& v) -> double { return v[0] != 0 || v[1] != 0; };
  } else {
    return std::nullopt;
  }
  return Elementwise({&a, &b}, out_type, f);
}

std::optional<ConstTensor> Unary(const std::string& op, const ConstTensor& a) {
  std::function<double(const std::vector<double>&)> f;
  if (op == "Identity") {
    return a;
  } else if (op == "Neg") {
    f = [](const auto& v) { return -v[0]; };
  } else if (op == "Abs") {
    f = [](const auto& v) { return std::abs(v[0]); };
  } else if (op == "Floor") {
    f = [](const auto& v) { return std::floor(v[0]); };
  } else if (op == "Ceil") {
    f = [](const auto& v) { return std::ceil(v[0]); };
  } else if (op == "Sqrt") {
    f = [](const auto& v) { return std::sqrt(v[0]); };
  } else if (op == "Not") {
    f = [](const auto& v) -> double { return v[0] == 0; };
  } else {
    return std::nullopt;
  }
  return Elementwise({&a}, a.elem_type, f);
}

// Axes of Unsqueeze and Squeeze: an input from opset 13, an attribute before.
std::optional<std::vector<int64_t>> Axes(const NodeProto& node,
                                         const ConstTensor* input) {
  if (input) {
    std::vector<int64_t> axes;
    for (double v : input->values) {
      const std::optional<int64_t> axis = ExactInteger(v);
      if (!axis) return std::nullopt;
      axes.push_back(*axis);
    }
    return axes;
  }
  if (node.input_size() > 1 && !node.input(1).empty()) return std::nullopt;
  return IntsAttribute(node, "axes");
}

std::optional<ConstTensor> Slice1D(const ConstTensor& data,
                                   const std::vector<const ConstTensor*>& in) {
  if (data.dims.size() != 1 || !in[1] || !in[2] || in[1]->values.size() != 1 ||
      in[2]->values.size() != 1) {
    return std::nullopt;
  }
  if (in.size() > 3 && in[3] &&
      (in[3]->values.size() != 1 ||
       (in[3]->values[0] != 0 && in[3]->values[0] != -1))) {
    return std::nullopt;
  }
  const double step = in.size() > 4 && in[4] ? in[4]->values.at(0) : 1;
  if (step == 0) return std::nullopt;
  const double n = static_cast<double>(data.values.size());
  double start = in[1]->values[0], end = in[2]->values[0];
  if (start < 0) start += n;
  if (end < 0) end += n;
  ConstTensor out;
  out.elem_type = data.elem_type;
  if (step > 0) {
    start = std::clamp(start, 0.0, n);
    end = std::clamp(end, 0.0, n);
    for (double i = start; i < end; i += step) {
      out.values.push_back(data.values[static_cast<size_t>(i)]);
    }
  } else {
    start = std::clamp(start, -1.0, n - 1);
    end = std::clamp(end, -1.0, n - 1);
    for (double i = start; i > end; i += step) {
      out.values.push_back(data.values[static_cast<size_t>(i)]);
    }
  }
  out.dims = {static_cast<int64_t>(out.values.size())};
  return out;
}

std::optional<ConstTensor> ConstantNodeValue(const NodeProto& node) {
  for (const AttributeProto& a : node.attribute()) {
    if (a.name() == "value") return ConstFromProto(a.t());
    if (a.name() == "value_int") return Scalar(a.i(), TensorProto::INT64);
    if (a.name() == "value_float") return Scalar(a.f(), TensorProto::FLOAT);
    if (a.name() == "value_ints" || a.name() == "value_floats") {
      ConstTensor c;
      c.elem_type =
          a.name() == "value_ints" ? TensorProto::INT64 : TensorProto::FLOAT;
      if (a.name() == "value_ints") {
        c.values.assign(a.ints().begin(), a.ints().end());
      } else {
        c.values.assign(a.floats().begin(), a.floats().end());
      }
      c.dims = {static_cast<int64_t>(c.values.size())};
      return c;
    }
  }
  return std::nullopt;
}

// The value of a node's single output from constant inputs (null: not
// constant), or nullopt. `static_shape` is the input's shape when Shape and
// Size need it and it is fully known.
std::optional<ConstTensor> Evaluate(
    const NodeProto& node, const std::vector<const ConstTensor*>& in,
    const std::optional<std::vector<int64_t>>& static_shape) {
  const std::string& op = node.op_type();
  auto all_inputs = [&in](size_t from, size_t to) {
    for (size_t i = from; i < std::min(to, in.size()); ++i) {
      if (!in[i]) return false;
    }
    return true;
  };
  if (op == "Constant") return ConstantNodeValue(node);
  if (op == "Shape" || op == "Size") {
    if (!static_shape) return std::nullopt;
    if (op == "Size") {
      const std::optional<int64_t> n = ElementCount(*static_shape);
      if (!n) return std::nullopt;
      return Scalar(static_cast<double>(*n), TensorProto::INT64);
    }
    const int64_t rank = static_cast<int64_t>(static_shape->size());
    int64_t start = IntAttribute(node, "start", 0);
    int64_t end = IntAttribute(node, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    ConstTensor c;
    c.values.assign(static_shape->begin() + start, static_shape->begin() + end);
    c.dims = {end - start};
    return c;
  }
  if (in.empty() || !in[0]) return std::nullopt;
  const ConstTensor& x = *in[0];
  if (in.size() == 1) {
    if (op == "Cast") {
      const int32_t to = static_cast<int32_t>(IntAttribute(node, "to", 0));
      if (!IsFoldableType(to)) return std::nullopt;
      ConstTensor c = x;
      c.elem_type = to;
      for (double& v : c.values) v = Normalize(v, to);
      return c;
    }
    if (op == "ConstantOfShape") {
      ConstTensor c;
      for (double v : x.values) {
        const std::optional<int64_t> d = ExactInteger(v);
        if (!d) return std::nullopt;
        c.dims.push_back(*d);
      }
      const std::optional<int64_t> count = ElementCount(c.dims);
      if (!count || *count > kMaxFoldedElements) return std::nullopt;
      const int64_t n = *count;
      c.elem_type = TensorProto::FLOAT;
      double fill = 0;
      if (const AttributeProto* a = FindAttribute(node, "value")) {
        std::optional<ConstTensor> v = ConstFromProto(a->t());
        if (!v || v->values.size() != 1) return std::nullopt;
        c.elem_type = v->elem_type;
        fill = v->values[0];
      }
      c.values.assign(n, fill);
      return c;
    }
    if (op != "Unsqueeze" && op != "Squeeze") return Unary(op, x);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    const std::optional<std::vector<int64_t>> axes =
        Axes(node, in.size() > 1 ? in[1] : nullptr);
    if (!axes) return std::nullopt;
    ConstTensor c = x;
    if (op == "Unsqueeze") {
      const int64_t rank = static_cast<int64_t>(x.dims.size() + axes->size());
      std::vector<int64_t> sorted;
      for (int64_t a : *axes) sorted.push_back(a < 0 ? a + rank : a);
      std::sort(sorted.begin(), sorted.end());
      for (int64_t a : sorted) {
        if (a < 0 || a > static_cast<int64_t>(c.dims.size())) {
          return std::nullopt;
        }
        c.dims.insert(c.dims.begin() + a, 1);
      }
      return c;
    }
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < rank; ++i) {
      bool squeeze = axes->empty() && x.dims[i] == 1;
      for (int64_t a : *axes) squeeze = squeeze || (a < 0 ? a + rank : a) == i;
      if (!squeeze) dims.push_back(x.dims[i]);
    }
    c.dims = dims;
    return c;
  }
  if (op == "Gather") {
    if (in.size() != 2 || !in[1] || x.dims.size() != 1) return std::nullopt;
    const int64_t axis = IntAttribute(node, "axis", 0);
    if (axis != 0 && axis != -1) return std::nullopt;
    ConstTensor c;
    c.elem_type = x.elem_type;
    c.dims = in[1]->dims;
    const double n = static_cast<double>(x.values.size());
    for (double i : in[1]->values) {
      if (i < 0) i += n;
      if (!(i >= 0 && i < n)) return std::nullopt;  // NaN too.
      c.values.push_back(x.values[static_cast<size_t>(i)]);
    }
    return c;
  }
  if (op == "Concat") {
    if (!all_inputs(0, in.size())) return std::nullopt;
    ConstTensor c;
    c.elem_type = x.elem_type;
    for (const ConstTensor* part : in) {
      if (part->dims.size() != 1) return std::nullopt;
      c.values.insert(c.values.end(), part->values.begin(), part->values.end());
    }
    c.dims = {static_cast<int64_t>(c.values.size())};
    return c;
  }
  if (op == "Slice") return Slice1D(x, in);
  if (op == "Reshape") {
    if (in.size() < 2 || !in[1]) return std::nullopt;
    ConstTensor c = x;
    c.dims.clear();
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < in[1]->values.size(); ++i) {
      const std::optional<int64_t> target = ExactInteger(in[1]->values[i]);
      if (!target || *target < -1) return std::nullopt;
      int64_t d = *target;
      if (d == 0 && i < x.dims.size()) d = x.dims[i];
      if (d == -1) infer = static_cast<int64_t>(i);
      c.dims.push_back(d);
      if (d != -1 && __builtin_mul_overflow(known, d, &known)) {
        return std::nullopt;
      }
    }
    if (infer >= 0) {
      if (known == 0) return std::nullopt;
      c.dims[infer] = static_cast<int64_t>(x.values.size()) / known;
    }
    if (ElementCount(c.dims) != static_cast<int64_t>(x.values.size())) {
      return std::nullopt;
    }
    return c;
  }
  if (op == "Range") {
    if (!all_inputs(0, 3) || in.size() != 3) return std::nullopt;
    const double start = x.values.at(0), limit = in[1]->values.at(0),
                 delta = in[2]->values.at(0);
    if (delta == 0) return std::nullopt;
    const double n = std::max(0.0, std::ceil((limit - start) / delta));
    if (n > kMaxFoldedElements) return std::nullopt;
    ConstTensor c;
    c.elem_type = x.elem_type;
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
      c.values.push_back(start + i * delta);
    }
    c.dims = {static_cast<int64_t>(n)};
    return c;
  }
  if (op == "Where") {
    if (in.size() != 3 || !all_inputs(0, 3)) return std::nullopt;
    return Elementwise({in[0], in[1], in[2]}, in[1]->elem_type,
                       [](const auto& v) { return v[0] != 0 ? v[1] : v[2]; });
  }
  if (in.size() == 2 && in[1]) return Binary(op, x, *in[1], node);
  return std::nullopt;
}

// --- The importer ----------------------------------------------------------

class Importer {
 public:
  Importer(std::string source, const OnnxImportOptions& options)
      : source_(std::move(source)),
        options_(options),
        builder_(Stem(source_)) {}

  StatusOr<OnnxImport> Import(const std::string& bytes) {
    DPLACE_RETURN_IF_ERROR(Parse(bytes));
    DPLACE_RETURN_IF_ERROR(CheckOpsets());
    WarnAboutFunctions();
    FindConsumers();
    ClassifyInputs();
    DropWeightData();
    DPLACE_RETURN_IF_ERROR(SetBatch());
    DPLACE_RETURN_IF_ERROR(CheckInputsAreDefined());
    SpellOutKernelShapes();
    DPLACE_RETURN_IF_ERROR(InferShapesAndFold());
    DPLACE_RETURN_IF_ERROR(AddOps());
    DPLACE_RETURN_IF_ERROR(AddEdges());
    WarnAboutUncostedOps();
    StatusOr<Graph> graph = std::move(builder_).Build();
    if (!graph.ok()) return graph.status().WithPrefix(source_);
    return OnnxImport{std::move(graph).value(), std::move(warnings_)};
  }

 private:
  Status Error(const std::string& message) const {
    return InvalidArgumentError(source_ + ": " + message);
  }
  static std::string Describe(const NodeProto& node, int index) {
    return "node '" +
           (node.name().empty() ? "#" + std::to_string(index) : node.name()) +
           "' (" + node.op_type() + ")";
  }
  const ::onnx::GraphProto& graph() const { return model_.graph(); }

  Status Parse(const std::string& bytes) {
    if (!model_.ParseFromString(bytes)) {
      return Error(
          "not a valid ONNX model: the protobuf does not parse (not an ONNX "
          "file, or a truncated or corrupt one)");
    }
    if (model_.ir_version() <= 0 || !model_.has_graph() ||
        model_.opset_import_size() == 0) {
      return Error(
          "not an ONNX model: no IR version, graph or opset_import (not an "
          "ONNX file, or a truncated one)");
    }
    return Status::Ok();
  }

  Status CheckOpsets() {
    const auto& known =
        ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    bool has_default = false;
    for (const auto& opset : model_.opset_import()) {
      const std::string domain =
          opset.domain() == "ai.onnx" ? "" : opset.domain();
      has_default = has_default || domain.empty();
      auto it = known.find(domain);
      if (it != known.end() && opset.version() > it->second.second) {
        warnings_.push_back(
            source_ + ": opset " + std::to_string(opset.version()) +
            " of domain '" + (domain.empty() ? "ai.onnx" : domain) +
            "' is newer than this build's libonnx knows (" +
            std::to_string(it->second.second) +
            "): shapes are inferred with the newest operator definitions it "
            "has, which may differ");
      }
    }
    if (!has_default) {
      return Error("opset_import: no version for the default domain ai.onnx");
    }
    return Status::Ok();
  }

  void WarnAboutFunctions() {
    if (model_.functions_size() == 0) return;
    std::string names;
    for (const auto& f : model_.functions()) {
      functions_.insert(f.domain() + ":" + f.name());
      names += (names.empty() ? "" : ", ") + f.name();
    }
    int calls = 0;
    for (const NodeProto& node : graph().node()) {
      calls += functions_.count(node.domain() + ":" + node.op_type()) > 0;
    }
    warnings_.push_back(source_ + ": model-local functions are not expanded (" +
                        names + "): their " + std::to_string(calls) +
                        " calls are imported as single ops with memory-only "
                        "cost (no FLOPs)");
  }

  void FindConsumers() {
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      for (int k = 0; k < node.input_size(); ++k) {
        if (!node.input(k).empty()) consumers_[node.input(k)].push_back({i, k});
      }
    }
    for (const ValueInfoProto& out : graph().output()) {
      graph_outputs_.insert(out.name());
    }
  }

  // Every node input must name a graph input, an initializer or some
  // node's output, and window attributes must be positive. Checked before
  // shape inference, which libonnx 1.12 does not guard against either: a
  // null type for an undefined input of Shape (a SEGV found by
  // onnx_import_fuzzer).
  // libonnx 1.12 copies raw_data into a vector sized by the bytes'
  // whole elements, so a few bytes fewer than one element are written
  // through a null pointer (a SEGV found by onnx_import_fuzzer in a
  // Constant's int64 value). The bytes must be what the dims say.
  Status CheckRawData(const TensorProto& t, const std::string& where) const {
    if (!t.has_raw_data()) return Status::Ok();
    static const std::unordered_map<int, int64_t> kElementBytes = {
        {TensorProto::FLOAT, 4},     {TensorProto::UINT8, 1},
        {TensorProto::INT8, 1},      {TensorProto::UINT16, 2},
        {TensorProto::INT16, 2},     {TensorProto::INT32, 4},
        {TensorProto::INT64, 8},     {TensorProto::BOOL, 1},
        {TensorProto::FLOAT16, 2},   {TensorProto::DOUBLE, 8},
        {TensorProto::UINT32, 4},    {TensorProto::UINT64, 8},
        {TensorProto::COMPLEX64, 8}, {TensorProto::COMPLEX128, 16},
        {TensorProto::BFLOAT16, 2}};
    auto it = kElementBytes.find(t.data_type());
    if (it == kElementBytes.end()) return Status::Ok();
    int64_t bytes = it->second;
    for (int64_t d : t.dims()) {
      if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) {
        return Error(where + ": dims are negative or overflow");
      }
    }
    if (static_cast<uint64_t>(bytes) != t.raw_data().size()) {
      return Error(where + ": raw_data holds " +
                   std::to_string(t.raw_data().size()) +
                   " bytes, its dims and type need " + std::to_string(bytes));
    }
    return Status::Ok();
  }

  Status CheckInputsAreDefined() const {
    std::unordered_set<std::string> defined;
    for (const ValueInfoProto& v : graph().input()) defined.insert(v.name());
    for (const TensorProto& t : graph().initializer()) defined.insert(t.name());
    for (const auto& t : graph().sparse_initializer()) {
      defined.insert(t.values().name());
    }
    std::unordered_set<std::string> produced;
    for (const NodeProto& node : graph().node()) {
      for (const std::string& out : node.output()) produced.insert(out);
    }
    for (const TensorProto& t : graph().initializer()) {
      DPLACE_RETURN_IF_ERROR(CheckRawData(t, "initializer '" + t.name() + "'"));
    }
    // In node order: libonnx infers in that order and reads an input of a
    // later node as undefined.
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      for (const ::onnx::AttributeProto& a : node.attribute()) {
        const std::string where =
            Describe(node, i) + ": attribute " + a.name() + "'s tensor";
        if (a.has_t()) DPLACE_RETURN_IF_ERROR(CheckRawData(a.t(), where));
        for (const TensorProto& t : a.tensors()) {
          DPLACE_RETURN_IF_ERROR(CheckRawData(t, where));
        }
      }
      for (const std::string& in : node.input()) {
        if (in.empty() || defined.count(in)) continue;
        if (produced.count(in)) {
          return Error(Describe(node, i) + ": input '" + in +
                       "' is produced by a later node (the graph is not in "
                       "topological order)");
        }
        return Error(Describe(node, i) + ": input '" + in +
                     "' is produced by no node and is no graph input or "
                     "initializer (is the file truncated?)");
      }
      // libonnx 1.12 divides by these in its Conv and pooling inference
      // (a SIGFPE for strides of 0, found by onnx_import_fuzzer).
      for (const ::onnx::AttributeProto& a : node.attribute()) {
        const std::string& n = a.name();
        if (n != "strides" && n != "dilations" && n != "kernel_shape" &&
            n != "group") {
          continue;
        }
        for (int64_t v : a.ints()) {
          if (v < 1) {
            return Error(Describe(node, i) + ": attribute " + n +
                         " must be >= 1, got " + std::to_string(v));
          }
        }
        if (n == "group" && a.has_i() && a.i() < 1) {
          return Error(Describe(node, i) + ": attribute group must be >= 1, " +
                       "got " + std::to_string(a.i()));
        }
      }
      // ONNX assigns each tensor once; a second producer would let the
      // tensor's type differ between nodes (another libonnx SEGV).
      for (const std::string& out : node.output()) {
        if (!out.empty() && !defined.insert(out).second) {
          return Error(Describe(node, i) + ": output '" + out +
                       "' is already a graph input, an initializer or an "
                       "earlier node's output (ONNX assigns each tensor once)");
        }
      }
    }
    return Status::Ok();
  }

  // Weights: initializers, and graph inputs in a parameter slot or with a
  // parameter's name; data: every other consumed graph input.
  void ClassifyInputs() {
    for (const TensorProto& t : graph().initializer()) {
      // Integer tensors (shapes, indices, axes) and scalars are constants
      // of the computation, not weights.
      if (!IsFloatingPoint(t.data_type()) || t.dims_size() == 0) {
        std::optional<ConstTensor> c = ConstFromProto(t);
        if (c && Representable(*c)) {
          folded_[t.name()] = std::move(*c);
          continue;
        }
      }
      weights_.push_back(t.name());
      weight_set_.insert(t.name());
    }
    for (const auto& t : graph().sparse_initializer()) {
      weights_.push_back(t.values().name());
      weight_set_.insert(t.values().name());
    }
    for (const ValueInfoProto& input : graph().input()) {
      const std::string& name = input.name();
      if (weight_set_.count(name) || folded_.count(name) ||
          !consumers_.count(name)) {
        continue;
      }
      bool weight = HasParameterName(name);
      for (const auto& [node, slot] : consumers_[name]) {
        weight = weight || IsParameterSlot(graph().node(node).op_type(), slot);
      }
      if (weight) {
        weights_.push_back(name);
        weight_set_.insert(name);
      } else {
        data_inputs_.push_back(name);
      }
    }
  }

  // Weight values are never needed (constants keep theirs: shape inference
  // reads them).
  void DropWeightData() {
    for (TensorProto& t : *model_.mutable_graph()->mutable_initializer()) {
      if (folded_.count(t.name())) continue;
      t.clear_raw_data();
      t.clear_float_data();
      t.clear_double_data();
      t.clear_int32_data();  // float16 and bfloat16 values live here.
    }
  }

  // A convolution without kernel_shape takes it from W's dims; libonnx
  // 1.12 then reads past the input's dims when W has more spatial dims than
  // the input (a SEGV found by onnx_import_fuzzer), but checks an explicit
  // kernel_shape. So spell it out where W's shape is declared: the same
  // model, per the ONNX spec. (Where W is computed, the risk remains.)
  void SpellOutKernelShapes() {
    for (NodeProto& node : *model_.mutable_graph()->mutable_node()) {
      const std::string& op = node.op_type();
      const int w = op == "QLinearConv" ? 3 : 1;
      if ((op != "Conv" && op != "ConvInteger" && op != "ConvTranspose" &&
           op != "QLinearConv") ||
          node.input_size() <= w || FindAttribute(node, "kernel_shape")) {
        continue;
      }
      const std::optional<std::vector<int64_t>> dims =
          DeclaredDims(node.input(w));
      if (!dims || dims->size() < 2) continue;
      AttributeProto* a = node.add_attribute();
      a->set_name("kernel_shape");
      a->set_type(AttributeProto::INTS);
      for (size_t i = 2; i < dims->size(); ++i) a->add_ints((*dims)[i]);
    }
  }

  // The dims of an initializer or of a graph input with a fully known
  // shape; nullopt otherwise.
  std::optional<std::vector<int64_t>> DeclaredDims(
      const std::string& name) const {
    for (const TensorProto& t : graph().initializer()) {
      if (t.name() == name) {
        return std::vector<int64_t>(t.dims().begin(), t.dims().end());
      }
    }
    for (const ValueInfoProto& v : graph().input()) {
      if (v.name() != name || !v.type().tensor_type().has_shape()) continue;
      std::vector<int64_t> dims;
      for (const auto& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value()) return std::nullopt;
        dims.push_back(d.dim_value());
      }
      return dims;
    }
    return std::nullopt;
  }

  ::onnx::TensorShapeProto* DataInputShape(const std::string& name) {
    for (ValueInfoProto& input : *model_.mutable_graph()->mutable_input()) {
      if (input.name() == name && input.type().has_tensor_type() &&
          input.type().tensor_type().has_shape()) {
        return input.mutable_type()->mutable_tensor_type()->mutable_shape();
      }
    }
    return nullptr;
  }

  // Sets the first dim of every data input to options_.batch: a symbolic
  // batch is replaced by name wherever the model uses it; a numeric one
  // makes the declared intermediate and output shapes stale, so they are
  // dropped and inferred anew.
  Status SetBatch() {
    std::set<std::string> symbols;
    bool numeric_change = false;
    for (const std::string& name : data_inputs_) {
      ::onnx::TensorShapeProto* shape = DataInputShape(name);
      if (!shape) continue;  // Reported when its op is built.
      for (int i = 0; i < shape->dim_size(); ++i) {
        const auto& dim = shape->dim(i);
        if (dim.has_dim_value()) continue;
        const std::string what =
            "input '" + name + "': dim " + std::to_string(i) + " is " +
            (dim.has_dim_param() ? "symbolic ('" + dim.dim_param() + "')"
                                 : std::string("unknown"));
        if (i != 0) {
          return Error(what + "; only the first (batch) dim can be set");
        }
        if (options_.batch <= 0) {
          return Error(what + "; give the batch size (--batch N)");
        }
      }
      if (options_.batch <= 0 || shape->dim_size() == 0) continue;
      auto* batch = shape->mutable_dim(0);
      if (batch->has_dim_param()) symbols.insert(batch->dim_param());
      if (batch->has_dim_value() && batch->dim_value() != options_.batch) {
        numeric_change = true;
      }
      batch->set_dim_value(options_.batch);
    }
    auto* g = model_.mutable_graph();
    if (numeric_change) {
      g->clear_value_info();
      for (ValueInfoProto& out : *g->mutable_output()) {
        if (out.type().has_tensor_type()) {
          out.mutable_type()->mutable_tensor_type()->clear_shape();
        }
      }
    }
    if (symbols.empty()) return Status::Ok();
    auto substitute = [&](ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) {
        return;
      }
      auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
      for (auto& dim : *shape->mutable_dim()) {
        if (dim.has_dim_param() && symbols.count(dim.dim_param())) {
          dim.set_dim_value(options_.batch);
        }
      }
    };
    for (ValueInfoProto& v : *g->mutable_input()) substitute(v);
    for (ValueInfoProto& v : *g->mutable_value_info()) substitute(v);
    for (ValueInfoProto& v : *g->mutable_output()) substitute(v);
    return Status::Ok();
  }

  // Shape inference, then folding of what became constant, until nothing
  // more folds: each round can resolve the shapes the next one's Shape ops
  // read. Inference runs on a copy of the model in which folded tensors are
  // initializers and the nodes that computed them are gone.
  Status InferShapesAndFold() {
    // libonnx 1.12's data propagation for Shape dereferences its input's
    // type unchecked (a SEGV found by onnx_import_fuzzer): infer types once
    // without it, and refuse a Shape node whose input got none.
    DPLACE_RETURN_IF_ERROR(InferShapes(/*data_propagation=*/false));
    DPLACE_RETURN_IF_ERROR(CheckShapeInputsHaveTypes());
    constexpr int kMaxRounds = 100;
    for (int round = 0; round < kMaxRounds; ++round) {
      DPLACE_RETURN_IF_ERROR(InferShapes(/*data_propagation=*/true));
      const bool folded = FoldConstants();
      const bool completed = CompleteShapes();
      if (!folded && !completed) return Status::Ok();
    }
    return Status::Ok();
  }

  Status CheckShapeInputsHaveTypes() const {
    std::unordered_set<std::string> typed;
    for (const TensorProto& t : inferred_.graph().initializer()) {
      typed.insert(t.name());
    }
    for (const auto& [name, value] : types_) {
      if (value->has_type()) typed.insert(name);
    }
    // libonnx types an untyped graph input from its consumers in the pass
    // above, but data propagation looks it up untyped (another SEGV found
    // by onnx_import_fuzzer): such an input counts as untyped.
    for (const ValueInfoProto& v : model_.graph().input()) {
      if (!v.has_type()) typed.erase(v.name());
    }
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      if (node.op_type() != "Shape" || node.input_size() == 0 ||
          folded_nodes_.count(i) || typed.count(node.input(0))) {
        continue;
      }
      return Error(Describe(node, i) + ": input '" + node.input(0) +
                   "' has no type (shape inference could not infer it)");
    }
    return Status::Ok();
  }

  Status InferShapes(bool data_propagation) {
    inferred_ = model_;
    ::onnx::GraphProto* g = inferred_.mutable_graph();
    google::protobuf::RepeatedPtrField<NodeProto> kept;
    for (int i = 0; i < g->node_size(); ++i) {
      if (!folded_nodes_.count(i)) *kept.Add() = g->node(i);
    }
    g->mutable_node()->Swap(&kept);
    std::unordered_set<std::string> initializers;
    for (const TensorProto& t : g->initializer()) initializers.insert(t.name());
    for (const auto& [name, value] : folded_) {
      if (!initializers.count(name)) {
        *g->add_initializer() = ConstToProto(value, name);
      }
    }
    // Node-level inference errors are not fatal (error_mode 0): a node
    // whose outputs stay unknown is reported by name later.
    const ::onnx::ShapeInferenceOptions options(/*check_type_val=*/false,
                                                /*strict_mode_val=*/0,
                                                data_propagation);
    try {
      ::onnx::shape_inference::InferShapes(
          inferred_, ::onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      std::string what = e.what();
      std::replace(what.begin(), what.end(), '\n', ' ');
      return Error("shape inference failed: " + what);
    }
    types_.clear();
    for (const ValueInfoProto& v : g->input()) types_[v.name()] = &v;
    for (const ValueInfoProto& v : g->value_info()) types_[v.name()] = &v;
    for (const ValueInfoProto& v : g->output()) types_[v.name()] = &v;
    return Status::Ok();
  }

  // The static shape of `tensor`, when shape inference knows every dim.
  std::optional<std::vector<int64_t>> StaticShape(
      const std::string& tensor) const {
    StatusOr<TensorInfo> info = InfoOf(tensor);
    if (!info.ok()) return std::nullopt;
    return info->shape;
  }

  // Declares the output shapes libonnx 1.12 leaves unknown where the
  // operands fix them (Einsum: it infers only the rank); returns whether it
  // declared any, for the next round of inference to use.
  bool CompleteShapes() {
    bool progress = false;
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      if (node.op_type() != "Einsum" || node.output_size() != 1 ||
          node.input_size() == 0 || completed_.count(node.output(0)) ||
          InfoOf(node.output(0)).ok()) {
        continue;
      }
      std::vector<TensorInfo> infos;
      for (const std::string& input : node.input()) {
        StatusOr<TensorInfo> info = InfoOf(input);
        if (!info.ok()) break;
        infos.push_back(*info);
      }
      if (infos.size() != static_cast<size_t>(node.input_size())) continue;
      std::vector<const TensorInfo*> inputs;
      for (const TensorInfo& info : infos) inputs.push_back(&info);
      const std::optional<EinsumDims> e =
          ParseEinsum(StringAttribute(node, "equation"), inputs);
      const std::optional<std::vector<int64_t>> shape =
          e ? EinsumOutputShape(*e) : std::nullopt;
      auto input_type = types_.find(node.input(0));
      if (!shape || input_type == types_.end()) continue;
      ValueInfoProto* v = nullptr;  // A graph output's, else a new one.
      for (ValueInfoProto& out : *model_.mutable_graph()->mutable_output()) {
        if (out.name() == node.output(0)) v = &out;
      }
      if (!v) v = model_.mutable_graph()->add_value_info();
      v->set_name(node.output(0));
      auto* tensor = v->mutable_type()->mutable_tensor_type();
      tensor->set_elem_type(
          input_type->second->type().tensor_type().elem_type());
      tensor->clear_shape();
      for (int64_t d : *shape) {
        tensor->mutable_shape()->add_dim()->set_dim_value(d);
      }
      completed_.insert(node.output(0));
      progress = true;
    }
    return progress;
  }

  // Evaluates the nodes whose inputs are all known; returns whether any
  // folded. Nodes with graph outputs, several outputs or subgraphs stay.
  bool FoldConstants() {
    bool progress = false;
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      if (folded_nodes_.count(i) || node.output_size() != 1 ||
          graph_outputs_.count(node.output(0)) ||
          !(node.domain().empty() || node.domain() == "ai.onnx")) {
        continue;
      }
      const bool reads_shape =
          node.op_type() == "Shape" || node.op_type() == "Size";
      std::vector<const ConstTensor*> inputs;
      bool known = true;
      for (const std::string& input : node.input()) {
        auto it = folded_.find(input);
        inputs.push_back(it == folded_.end() ? nullptr : &it->second);
        known = known && (input.empty() || it != folded_.end() || reads_shape);
      }
      if (!known) continue;
      std::optional<std::vector<int64_t>> shape;
      if (reads_shape && node.input_size() == 1) {
        shape = StaticShape(node.input(0));
      }
      std::optional<ConstTensor> value = Evaluate(node, inputs, shape);
      if (!value ||
          static_cast<int64_t>(value->values.size()) > kMaxFoldedElements ||
          !Representable(*value)) {
        continue;
      }
      folded_[node.output(0)] = std::move(*value);
      folded_nodes_.insert(i);
      progress = true;
    }
    return progress;
  }

  StatusOr<TensorInfo> InfoOf(const std::string& tensor) const {
    if (auto c = folded_.find(tensor); c != folded_.end()) {
      TensorInfo info;
      info.dtype =
          FromOnnxType(c->second.elem_type).value_or(DataType::kFloat32);
      info.shape = c->second.dims;
      return WithBytes(std::move(info));
    }
    auto it = types_.find(tensor);
    if (it == types_.end()) {
      return InvalidArgumentError(
          "no shape (shape inference could not infer it and the model does "
          "not declare it)");
    }
    return InfoFromType(it->second->type());
  }

  StatusOr<TensorInfo> WeightInfo(const std::string& name) const {
    for (const TensorProto& t : graph().initializer()) {
      if (t.name() != name) continue;
      const std::optional<DataType> dtype = FromOnnxType(t.data_type());
      if (!dtype) {
        return InvalidArgumentError(
            "element type " +
            TensorProto::DataType_Name(
                static_cast<TensorProto::DataType>(t.data_type())) +
            " is not supported");
      }
      TensorInfo info;
      info.dtype = *dtype;
      info.shape.assign(t.dims().begin(), t.dims().end());
      return WithBytes(std::move(info));
    }
    for (const auto& t : graph().sparse_initializer()) {
      if (t.values().name() != name) continue;
      TypeProto type;
      type.mutable_tensor_type()->set_elem_type(t.values().data_type());
      for (int64_t d : t.dims()) {
        type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(
            d);
      }
      return InfoFromType(type);
    }
    return InfoOf(name);
  }

  bool WeightIsTrainable(const std::string& name, const TensorInfo& info) {
    if (info.dtype != DataType::kFloat32 && info.dtype != DataType::kFloat16 &&
        info.dtype != DataType::kBFloat16 && info.dtype != DataType::kFloat64) {
      return false;
    }
    for (const auto& [node, slot] : consumers_[name]) {
      if (!IsStateSlot(graph().node(node).op_type(), slot)) return true;
    }
    return false;
  }

  std::string UniqueName(std::string name) {
    if (name.empty()) name = "unnamed";
    std::string candidate = name;
    for (int i = 1; !used_names_.insert(candidate).second; ++i) {
      candidate = name + "_" + std::to_string(i);
    }
    return candidate;
  }

  static std::string ScopeOf(const NodeProto& node) {
    std::string name = node.name();
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
    const size_t slash = name.rfind('/');
    return slash == std::string::npos ? "" : name.substr(0, slash);
  }

  struct Producer {
    OpId op;
    int output;
  };

  // Whether a node that stays an op reads `tensor` (not only folded ones).
  bool HasLiveConsumer(const std::string& tensor) const {
    auto it = consumers_.find(tensor);
    if (it == consumers_.end()) return false;
    for (const auto& [node, slot] : it->second) {
      if (!folded_nodes_.count(node)) return true;
    }
    return false;
  }

  Status AddSourceOps() {
    for (const std::string& name : weights_) {
      if (!HasLiveConsumer(name) || producers_.count(name)) continue;
      StatusOr<TensorInfo> info = WeightInfo(name);
      if (!info.ok()) {
        return Error("weight '" + name + "': " + info.status().message());
      }
      OpSpec spec;
      spec.name = UniqueName(name);
      spec.type = WeightIsTrainable(name, *info) ? std::string(kParameterOpType)
                                                 : kConstantOpType;
      spec.scope = ScopeOf(graph().node(consumers_[name].front().first));
      spec.persistent_bytes = info->bytes;
      spec.outputs.push_back(*info);
      producers_[name] = {builder_.AddOp(std::move(spec)), 0};
      producer_infos_[name] = *info;
    }
    for (const std::string& name : data_inputs_) {
      if (!HasLiveConsumer(name)) continue;
      StatusOr<TensorInfo> info = InfoOf(name);
      if (!info.ok()) {
        return Error("input '" + name + "': " + info.status().message());
      }
      OpSpec spec;
      spec.name = UniqueName(name);
      spec.type = kDataInputOpType;
      spec.bytes_accessed = info->bytes;
      spec.outputs.push_back(*info);
      producers_[name] = {builder_.AddOp(std::move(spec)), 0};
      producer_infos_[name] = *info;
    }
    return Status::Ok();
  }

  // The node's outputs that become op outputs: those consumed or returned
  // by the graph (the first when none is).
  std::vector<int> KeptOutputs(const NodeProto& node) const {
    std::vector<int> kept;
    int first = -1;
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& name = node.output(k);
      if (name.empty()) continue;
      if (first < 0) first = k;
      if (consumers_.count(name) || graph_outputs_.count(name)) {
        kept.push_back(k);
      }
    }
    if (kept.empty() && first >= 0) kept.push_back(first);
    return kept;
  }

  Status AddNodeOp(int index) {
    const NodeProto& node = graph().node(index);
    if (folded_nodes_.count(index)) {
      node_ops_.push_back(-1);
      return Status::Ok();
    }
    NodeTensors tensors;
    for (int k = 0; k < node.input_size(); ++k) {
      const bool constant = folded_.count(node.input(k)) > 0;
      tensors.constant.push_back(constant);
      if (node.input(k).empty()) {
        tensors.inputs.push_back(nullptr);
        continue;
      }
      if (constant) {
        producer_infos_[node.input(k)] = *InfoOf(node.input(k));
      }
      auto it = producer_infos_.find(node.input(k));
      if (it == producer_infos_.end()) {
        return Error(Describe(node, index) + ": input '" + node.input(k) +
                     "' is produced by no node and is no graph input or "
                     "initializer (is the file truncated, or the graph not "
                     "in topological order?)");
      }
      tensors.inputs.push_back(&it->second);
    }
    const std::vector<int> kept = KeptOutputs(node);
    for (int k : kept) {
      StatusOr<TensorInfo> info = InfoOf(node.output(k));
      if (!info.ok()) {
        return Error(Describe(node, index) + ": output '" + node.output(k) +
                     "': " + info.status().message());
      }
      tensors.outputs.push_back(*info);
    }
    OpSpec spec;
    std::string name = node.name();
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
    if (name.empty()) name = node.op_type() + "_" + std::to_string(index);
    spec.name = UniqueName(name);
    spec.type = node.op_type();
    spec.scope = ScopeOf(node);
    spec.bytes_accessed = BytesAccessed(node, tensors);
    std::optional<double> flops;
    const bool is_function =
        functions_.count(node.domain() + ":" + node.op_type()) > 0;
    const bool default_domain =
        node.domain().empty() || node.domain() == "ai.onnx";
    auto formula = FlopsFormulas().find(node.op_type());
    if (default_domain && formula != FlopsFormulas().end()) {
      flops = formula->second(node, tensors);
    }
    if (!flops && !is_function) {
      ++uncosted_[(default_domain ? "" : node.domain() + ":") + node.op_type()];
    }
    spec.flops = flops.value_or(0);
    spec.outputs = tensors.outputs;
    const OpId op = builder_.AddOp(std::move(spec));
    node_ops_.push_back(op);
    for (size_t i = 0; i < kept.size(); ++i) {
      producers_[node.output(kept[i])] = {op, static_cast<int>(i)};
      producer_infos_[node.output(kept[i])] = tensors.outputs[i];
    }
    return Status::Ok();
  }

  // ONNX requires nodes in topological order, so one pass sees every
  // input's producer before its consumer.
  Status AddOps() {
    DPLACE_RETURN_IF_ERROR(AddSourceOps());
    for (int i = 0; i < graph().node_size(); ++i) {
      DPLACE_RETURN_IF_ERROR(AddNodeOp(i));
    }
    return Status::Ok();
  }

  // Constants folded at import are no edges: their values are part of the
  // op, like attributes.
  Status AddEdges() {
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      const OpId op = node_ops_[i];
      if (op < 0) continue;
      const bool reads_shape_only =
          node.op_type() == "Shape" || node.op_type() == "Size";
      for (const std::string& input : node.input()) {
        if (input.empty() || folded_.count(input)) continue;
        const Producer& p = producers_.at(input);
        if (reads_shape_only) {
          builder_.AddControlEdge(p.op, op);
        } else {
          builder_.AddEdge(p.op, p.output, op);
        }
      }
    }
    return Status::Ok();
  }

  void WarnAboutUncostedOps() {
    if (uncosted_.empty()) return;
    int total = 0;
    std::string list;
    for (const auto& [type, count] : uncosted_) {
      total += count;
      list += (list.empty() ? "" : ", ") + type + " (" + std::to_string(count) +
              (count == 1 ? " op)" : " ops)");
    }
    warnings_.push_back(source_ + ": " + std::to_string(total) + " op" +
                        (total == 1 ? "" : "s") +
                        " of operators without a cost formula imported with "
                        "memory-only cost (bytes, no FLOPs): " +
                        list);
  }

  const std::string source_;
  const OnnxImportOptions options_;
  ModelProto model_;
  ModelProto inferred_;  // With inferred shapes; types_ points into it.
  GraphBuilder builder_;
  std::vector<std::string> warnings_;

  // Tensor name -> (node index, input slot) of each consumer.
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> consumers_;
  std::unordered_set<std::string> graph_outputs_;
  std::vector<std::string> weights_;  // In the model's order.
  std::unordered_set<std::string> weight_set_;
  std::vector<std::string> data_inputs_;
  std::unordered_set<std::string> functions_;  // "domain:name".
  std::unordered_map<std::string, const ValueInfoProto*> types_;
  std::unordered_map<std::string, ConstTensor> folded_;  // By tensor name.
  std::unordered_set<int> folded_nodes_;                 // Node indices.
  std::unordered_set<std::string> completed_;  // Shapes CompleteShapes set.
  std::vector<OpId> node_ops_;                 // Per node; -1 when folded.
  std::unordered_map<std::string, Producer> producers_;
  std::unordered_map<std::string, TensorInfo> producer_infos_;
  std::unordered_set<std::string> used_names_;
  std::map<std::string, int> uncosted_;  // Operator -> op count.
};

}  // namespace

StatusOr<OnnxImport> ImportOnnxBytes(const std::string& bytes,
                                     const std::string& source,
                                     const OnnxImportOptions& options) {
  return Importer(source, options).Import(bytes);
}

StatusOr<OnnxImport> ImportOnnxFile(const std::string& path,
                                    const OnnxImportOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(std::string bytes, ReadTextFile(path));
  return ImportOnnxBytes(bytes, path, options);
}

}  // namespace dplace
