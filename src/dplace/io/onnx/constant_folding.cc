#include "dplace/io/onnx/constant_folding.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>

#include "dplace/io/onnx/onnx_types.h"

namespace dplace::onnx_internal {
namespace {

using ::onnx::AttributeProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

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
  if (in.size() > 4 && in[4] && in[4]->values.size() != 1) return std::nullopt;
  const double step = in.size() > 4 && in[4] ? in[4]->values[0] : 1;
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

// The operands of a node: null where an input is absent or not constant.
using Operands = std::vector<const ConstTensor*>;
using StaticShape = std::optional<std::vector<int64_t>>;

// The value of a node's single output, or nullopt (as Evaluate).
using EvaluatorFn = std::function<std::optional<ConstTensor>(
    const NodeProto&, const Operands&, const StaticShape&)>;

using ElementFn = std::function<double(const std::vector<double>&)>;

bool OneOperand(const Operands& in) { return in.size() == 1 && in[0]; }

bool TwoOperands(const Operands& in) {
  return in.size() == 2 && in[0] && in[1];
}

bool AllConstant(const Operands& in) {
  for (const ConstTensor* c : in) {
    if (!c) return false;
  }
  return true;
}

// Element-wise ops of one operand, in its element type.
EvaluatorFn UnaryValue(ElementFn f) {
  return [f](const NodeProto&, const Operands& in,
             const StaticShape&) -> std::optional<ConstTensor> {
    if (!OneOperand(in)) return std::nullopt;
    return Elementwise({in[0]}, in[0]->elem_type, f);
  };
}

// Element-wise ops of two operands, in the first one's element type.
EvaluatorFn BinaryValue(ElementFn f) {
  return [f](const NodeProto&, const Operands& in,
             const StaticShape&) -> std::optional<ConstTensor> {
    if (!TwoOperands(in)) return std::nullopt;
    return Elementwise({in[0], in[1]}, in[0]->elem_type, f);
  };
}

// Comparisons of two operands, element by element, to bool.
EvaluatorFn ComparisonValue(ElementFn f) {
  return [f](const NodeProto&, const Operands& in,
             const StaticShape&) -> std::optional<ConstTensor> {
    if (!TwoOperands(in)) return std::nullopt;
    return Elementwise({in[0], in[1]}, TensorProto::BOOL, f);
  };
}

std::optional<ConstTensor> DivValue(const NodeProto&, const Operands& in,
                                    const StaticShape&) {
  if (!TwoOperands(in)) return std::nullopt;
  for (double d : in[1]->values) {
    if (d == 0) return std::nullopt;
  }
  const bool integral = IsIntegral(in[0]->elem_type);
  return Elementwise({in[0], in[1]}, in[0]->elem_type,
                     [integral](const auto& v) {
                       return integral ? std::trunc(v[0] / v[1]) : v[0] / v[1];
                     });
}

std::optional<ConstTensor> ModValue(const NodeProto& node, const Operands& in,
                                    const StaticShape&) {
  if (!TwoOperands(in)) return std::nullopt;
  for (double d : in[1]->values) {
    if (d == 0) return std::nullopt;
  }
  const bool fmod = IntAttribute(node, "fmod", 0) != 0;
  return Elementwise({in[0], in[1]}, in[0]->elem_type, [fmod](const auto& v) {
    return fmod ? std::fmod(v[0], v[1]) : v[0] - v[1] * std::floor(v[0] / v[1]);
  });
}

std::optional<ConstTensor> IdentityValue(const NodeProto&, const Operands& in,
                                         const StaticShape&) {
  if (!OneOperand(in)) return std::nullopt;
  return *in[0];
}

std::optional<ConstTensor> ShapeValue(const NodeProto& node, const Operands&,
                                      const StaticShape& static_shape) {
  if (!static_shape) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(static_shape->size());
  const auto [start, end] = ShapeRange(node, rank);
  ConstTensor c;
  c.values.assign(static_shape->begin() + start, static_shape->begin() + end);
  c.dims = {end - start};
  return c;
}

std::optional<ConstTensor> SizeValue(const NodeProto&, const Operands&,
                                     const StaticShape& static_shape) {
  if (!static_shape) return std::nullopt;
  const std::optional<int64_t> n = ElementCount(*static_shape);
  if (!n) return std::nullopt;
  return Scalar(static_cast<double>(*n), TensorProto::INT64);
}

std::optional<ConstTensor> CastValue(const NodeProto& node, const Operands& in,
                                     const StaticShape&) {
  if (!OneOperand(in)) return std::nullopt;
  const int32_t to = static_cast<int32_t>(IntAttribute(node, "to", 0));
  if (!IsFoldableType(to)) return std::nullopt;
  ConstTensor c = *in[0];
  c.elem_type = to;
  for (double& v : c.values) v = Normalize(v, to);
  return c;
}

std::optional<ConstTensor> ConstantOfShapeValue(const NodeProto& node,
                                                const Operands& in,
                                                const StaticShape&) {
  if (!OneOperand(in)) return std::nullopt;
  ConstTensor c;
  for (double v : in[0]->values) {
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

std::optional<ConstTensor> UnsqueezeValue(const NodeProto& node,
                                          const Operands& in,
                                          const StaticShape&) {
  if (in.empty() || !in[0]) return std::nullopt;
  const ConstTensor& x = *in[0];
  const std::optional<std::vector<int64_t>> axes =
      Axes(node, in.size() > 1 ? in[1] : nullptr);
  if (!axes) return std::nullopt;
  ConstTensor c = x;
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

std::optional<ConstTensor> SqueezeValue(const NodeProto& node,
                                        const Operands& in,
                                        const StaticShape&) {
  if (in.empty() || !in[0]) return std::nullopt;
  const ConstTensor& x = *in[0];
  const std::optional<std::vector<int64_t>> axes =
      Axes(node, in.size() > 1 ? in[1] : nullptr);
  if (!axes) return std::nullopt;
  ConstTensor c = x;
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

std::optional<ConstTensor> GatherValue(const NodeProto& node,
                                       const Operands& in, const StaticShape&) {
  if (!TwoOperands(in) || in[0]->dims.size() != 1) return std::nullopt;
  const ConstTensor& x = *in[0];
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

// Two or more 1-D operands.
std::optional<ConstTensor> ConcatValue(const NodeProto&, const Operands& in,
                                       const StaticShape&) {
  if (in.size() < 2 || !AllConstant(in)) return std::nullopt;
  ConstTensor c;
  c.elem_type = in[0]->elem_type;
  for (const ConstTensor* part : in) {
    if (part->dims.size() != 1) return std::nullopt;
    c.values.insert(c.values.end(), part->values.begin(), part->values.end());
  }
  c.dims = {static_cast<int64_t>(c.values.size())};
  return c;
}

std::optional<ConstTensor> SliceValue(const NodeProto&, const Operands& in,
                                      const StaticShape&) {
  // starts and ends are required inputs: fewer is a malformed node.
  if (in.size() < 3 || !in[0]) return std::nullopt;
  return Slice1D(*in[0], in);
}

std::optional<ConstTensor> ReshapeValue(const NodeProto&, const Operands& in,
                                        const StaticShape&) {
  if (in.size() < 2 || !in[0] || !in[1]) return std::nullopt;
  const ConstTensor& x = *in[0];
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

std::optional<ConstTensor> RangeValue(const NodeProto&, const Operands& in,
                                      const StaticShape&) {
  if (in.size() != 3 || !AllConstant(in)) return std::nullopt;
  for (const ConstTensor* operand : in) {
    if (operand->values.size() != 1) return std::nullopt;  // Scalars only.
  }
  const double start = in[0]->values[0], limit = in[1]->values[0],
               delta = in[2]->values[0];
  if (delta == 0) return std::nullopt;
  const double n = std::max(0.0, std::ceil((limit - start) / delta));
  if (n > kMaxFoldedElements) return std::nullopt;
  ConstTensor c;
  c.elem_type = in[0]->elem_type;
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
    c.values.push_back(start + i * delta);
  }
  c.dims = {static_cast<int64_t>(n)};
  return c;
}

std::optional<ConstTensor> WhereValue(const NodeProto&, const Operands& in,
                                      const StaticShape&) {
  if (in.size() != 3 || !AllConstant(in)) return std::nullopt;
  return Elementwise({in[0], in[1], in[2]}, in[1]->elem_type,
                     [](const auto& v) { return v[0] != 0 ? v[1] : v[2]; });
}

// By operator type; an operator without an evaluator is not folded.
const std::unordered_map<std::string, EvaluatorFn>& Evaluators() {
  static const auto* evaluators = [] {
    auto* e = new std::unordered_map<std::string, EvaluatorFn>;
    (*e)["Constant"] = [](const NodeProto& node, const Operands&,
                          const StaticShape&) {
      return ConstantNodeValue(node);
    };
    (*e)["Shape"] = ShapeValue;
    (*e)["Size"] = SizeValue;
    (*e)["Cast"] = CastValue;
    (*e)["ConstantOfShape"] = ConstantOfShapeValue;
    (*e)["Identity"] = IdentityValue;
    (*e)["Neg"] = UnaryValue([](const auto& v) { return -v[0]; });
    (*e)["Abs"] = UnaryValue([](const auto& v) { return std::abs(v[0]); });
    (*e)["Floor"] = UnaryValue([](const auto& v) { return std::floor(v[0]); });
    (*e)["Ceil"] = UnaryValue([](const auto& v) { return std::ceil(v[0]); });
    (*e)["Sqrt"] = UnaryValue([](const auto& v) { return std::sqrt(v[0]); });
    (*e)["Not"] = UnaryValue([](const auto& v) -> double { return v[0] == 0; });
    (*e)["Unsqueeze"] = UnsqueezeValue;
    (*e)["Squeeze"] = SqueezeValue;
    (*e)["Gather"] = GatherValue;
    (*e)["Concat"] = ConcatValue;
    (*e)["Slice"] = SliceValue;
    (*e)["Reshape"] = ReshapeValue;
    (*e)["Range"] = RangeValue;
    (*e)["Where"] = WhereValue;
    (*e)["Add"] = BinaryValue([](const auto& v) { return v[0] + v[1]; });
    (*e)["Sub"] = BinaryValue([](const auto& v) { return v[0] - v[1]; });
    (*e)["Mul"] = BinaryValue([](const auto& v) { return v[0] * v[1]; });
    (*e)["Div"] = DivValue;
    (*e)["Mod"] = ModValue;
    (*e)["Pow"] =
        BinaryValue([](const auto& v) { return std::pow(v[0], v[1]); });
    (*e)["Max"] =
        BinaryValue([](const auto& v) { return std::max(v[0], v[1]); });
    (*e)["Min"] =
        BinaryValue([](const auto& v) { return std::min(v[0], v[1]); });
    (*e)["Equal"] =
        ComparisonValue([](const auto& v) -> double { return v[0] == v[1]; });
    (*e)["Less"] =
        ComparisonValue([](const auto& v) -> double { return v[0] < v[1]; });
    (*e)["Greater"] =
        ComparisonValue([](const auto& v) -> double { return v[0] > v[1]; });
    (*e)["LessOrEqual"] =
        ComparisonValue([](const auto& v) -> double { return v[0] <= v[1]; });
    (*e)["GreaterOrEqual"] =
        ComparisonValue([](const auto& v) -> double { return v[0] >= v[1]; });
    (*e)["And"] = BinaryValue(
        [](const auto& v) -> double { return v[0] != 0 && v[1] != 0; });
    (*e)["Or"] = BinaryValue(
        [](const auto& v) -> double { return v[0] != 0 || v[1] != 0; });
    return e;
  }();
  return *evaluators;
}

}  // namespace

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

std::optional<ConstTensor> Evaluate(
    const NodeProto& node, const std::vector<const ConstTensor*>& in,
    const std::optional<std::vector<int64_t>>& static_shape) {
  auto it = Evaluators().find(node.op_type());
  if (it == Evaluators().end()) return std::nullopt;
  return it->second(node, in, static_shape);
}

}  // namespace dplace::onnx_internal
