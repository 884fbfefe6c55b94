#include "dplace/io/onnx/onnx_types.h"

#include <algorithm>
#include <utility>

namespace dplace::onnx_internal {

using ::onnx::AttributeProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::TypeProto;

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

std::pair<int64_t, int64_t> ShapeRange(const NodeProto& node, int64_t rank) {
  int64_t start = IntAttribute(node, "start", 0);
  int64_t end = IntAttribute(node, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  return {start, end};
}

std::string StringAttribute(const NodeProto& node, const std::string& name) {
  const AttributeProto* a = FindAttribute(node, name);
  return a ? a->s() : "";
}

std::string DescribeNode(const NodeProto& node, int index) {
  return "node '" +
         (node.name().empty() ? "#" + std::to_string(index) : node.name()) +
         "' (" + node.op_type() + ")";
}

}  // namespace dplace::onnx_internal
