#include "dplace/io/onnx/batch_change.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "dplace/io/onnx/onnx_types.h"

namespace dplace::onnx_internal {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

// What an element of a small integer tensor (a shape being computed) is.
enum Flag : int {
  kPlain = 0,    // Independent of the batch.
  kBatch = 1,    // The batch times a constant (a Shape dim, batch * heads).
  kTainted = 2,  // Depends on the batch otherwise (batch + 1, batch^2).
};

// The axis of a tensor that holds the batch: its dim is
// outer * batch * inner, where outer and inner are dims merged into it
// (seq * batch: outer = seq).
struct BatchDim {
  int axis = -1;
  int64_t outer = 1;
  int64_t inner = 1;
};

// The product of dims[begin, end); 0 when it overflows (no dim matches it).
int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) {
    if (__builtin_mul_overflow(p, dims[i], &p)) return 0;
  }
  return p;
}

// value / from * to, where `from` divides `value`; nullopt when it does not
// or the result overflows.
std::optional<int64_t> Rescaled(int64_t value, int64_t from, int64_t to) {
  int64_t r = 0;
  if (from <= 0 || value % from != 0 ||
      __builtin_mul_overflow(value / from, to, &r)) {
    return std::nullopt;
  }
  return r;
}

std::string Describe(const NodeProto& node, int index) {
  return "node '" +
         (node.name().empty() ? "#" + std::to_string(index) : node.name()) +
         "' (" + node.op_type() + ")";
}

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return s + "]";
}

bool IsElementwise(const std::string& type) {
  static const std::unordered_set<std::string> types = {
      "Add",     "Sub",   "Mul",   "Div",         "Pow",
      "Where",   "Equal", "Less",  "LessOrEqual", "Greater",
      "And",     "Or",    "Xor",   "Max",         "Min",
      "Sum",     "Mean",  "PRelu", "Mod",         "GreaterOrEqual",
      "BitShift"};
  return types.count(type) > 0;
}

// Ops whose output is some of input 0's elements rearranged (their other
// inputs are indices, axes or bounds), and Concat, all of whose inputs are.
bool RearrangesValues(const std::string& type) {
  static const std::unordered_set<std::string> types = {
      "Gather",   "Unsqueeze", "Squeeze", "Slice",  "Reshape",
      "Identity", "Cast",      "Concat",  "Flatten"};
  return types.count(type) > 0;
}

class Planner {
 public:
  Planner(const GraphProto& graph, int64_t from, int64_t to,
          const ExportView& view)
      : g_(graph), from_(from), to_(to), view_(view) {}

  StatusOr<BatchChangePlan> Plan(const std::vector<std::string>& data_inputs) {
    for (int i = 0; i < g_.node_size(); ++i) {
      for (const std::string& out : g_.node(i).output()) producer_[out] = i;
    }
    for (const std::string& name : data_inputs) dims_[name] = {0, 1, 1};
    for (int i = 0; i < g_.node_size(); ++i) {
      DPLACE_RETURN_IF_ERROR(Visit(i));
    }
    for (const auto& [name, dim] : dims_) {
      if (dim.axis >= 0) plan_.batch_axis[name] = dim.axis;
    }
    return std::move(plan_);
  }

 private:
  Status Error(int index, const std::string& what) const {
    return InvalidArgumentError(
        Describe(g_.node(index), index) + ": " + what +
        "; the model was exported at batch " + std::to_string(from_) +
        " and --batch " + std::to_string(to_) + " cannot change it with " +
        "certainty: " + kBatchFix);
  }

  std::vector<int64_t> ShapeOf(const std::string& name) const {
    if (name.empty()) return {};
    return view_.shape(name).value_or(std::vector<int64_t>{});
  }
  bool HasShape(const std::string& name) const {
    return !name.empty() && view_.shape(name).has_value();
  }
  BatchDim DimOf(const std::string& name) const {
    auto it = dims_.find(name);
    return it == dims_.end() ? BatchDim{} : it->second;
  }
  const std::vector<int>* FlagsOf(const std::string& name) const {
    auto it = flags_.find(name);
    return it == flags_.end() ? nullptr : &it->second;
  }
  static bool Any(const std::vector<int>* flags, int flag) {
    return flags && std::count(flags->begin(), flags->end(), flag) > 0;
  }
  // An int64 tensor holding `flags` in `like`'s dims.
  static ConstTensor FlagTensor(const ConstTensor& like,
                                const std::vector<int>* flags) {
    ConstTensor t;
    t.elem_type = TensorProto::INT64;
    t.dims = like.dims;
    t.values.assign(like.values.size(), 0.0);
    if (flags) {
      for (size_t i = 0; i < t.values.size() && i < flags->size(); ++i) {
        t.values[i] = (*flags)[i];
      }
    }
    return t;
  }

  Status Visit(int index) {
    const NodeProto& node = g_.node(index);
    PropagateFlags(node);
    const std::string& type = node.op_type();
    if (type == "Reshape") return VisitReshape(index);
    if (type == "Expand") return VisitExpand(index);
    if (type == "ConstantOfShape") return VisitConstantOfShape(index);
    if (type == "LSTM" || type == "GRU" || type == "RNN") {
      return VisitRecurrent(index);
    }
    if (IsElementwise(type)) return VisitElementwise(index);
    VisitAxisMapping(node);
    return Status::Ok();
  }

  // --- Which elements of shape tensors are batch sizes -----------------

  void PropagateFlags(const NodeProto& node) {
    if (node.output_size() != 1) return;
    const std::string& out = node.output(0);
    const std::string& type = node.op_type();
    if (type == "Shape" && node.input_size() == 1) {
      const BatchDim d = DimOf(node.input(0));
      const int64_t rank = static_cast<int64_t>(ShapeOf(node.input(0)).size());
      const auto [start, end] = ShapeRange(node, rank);
      std::vector<int> flags;
      for (int64_t i = start; i < end; ++i) {
        flags.push_back(i == d.axis ? kBatch : kPlain);
      }
      flags_[out] = std::move(flags);
      return;
    }
    if (type == "Size" && node.input_size() == 1) {
      flags_[out] = {DimOf(node.input(0)).axis >= 0 ? kBatch : kPlain};
      return;
    }
    bool flagged = false;
    for (const std::string& in : node.input()) {
      const std::vector<int>* f = FlagsOf(in);
      flagged = flagged || Any(f, kBatch) || Any(f, kTainted);
    }
    if (!flagged) return;
    const ConstTensor* value = view_.value(out);
    const size_t size = value ? value->values.size() : 1;
    if (RearrangesValues(type)) {
      std::vector<ConstTensor> operands;
      std::vector<const ConstTensor*> pointers;
      operands.reserve(node.input_size());
      for (int k = 0; k < node.input_size(); ++k) {
        const ConstTensor* v = view_.value(node.input(k));
        if (!v) {
          flags_[out].assign(size, kTainted);
          return;
        }
        const bool data = k == 0 || type == "Concat";
        operands.push_back(data ? FlagTensor(*v, FlagsOf(node.input(k))) : *v);
      }
      for (const ConstTensor& c : operands) pointers.push_back(&c);
      const std::optional<ConstTensor> moved =
          Evaluate(node, pointers, std::nullopt);
      if (!moved || moved->values.size() != size) {
        flags_[out].assign(size, kTainted);
        return;
      }
      std::vector<int>& flags = flags_[out];
      flags.clear();
      for (double v : moved->values) flags.push_back(static_cast<int>(v));
      return;
    }
    // Batch times or over a constant stays a batch multiple; anything else
    // is some other function of the batch.
    std::vector<int>& flags = flags_[out];
    flags.assign(size, kTainted);
    if ((type == "Mul" || type == "Div") && node.input_size() == 2) {
      const std::vector<int>* a = FlagsOf(node.input(0));
      const std::vector<int>* b = FlagsOf(node.input(1));
      const ConstTensor* av = view_.value(node.input(0));
      const ConstTensor* bv = view_.value(node.input(1));
      if (!av || !bv) return;
      auto flag_at = [](const std::vector<int>* f, const ConstTensor* v,
                        size_t i) {
        if (!f) return static_cast<int>(kPlain);
        if (f->empty()) return static_cast<int>(kTainted);
        return v->values.size() == 1 ? (*f)[0] : (i < f->size() ? (*f)[i] : 2);
      };
      for (size_t i = 0; i < size; ++i) {
        const int fa = flag_at(a, av, i), fb = flag_at(b, bv, i);
        if (fa == kPlain && fb == kPlain) {
          flags[i] = kPlain;
        } else if (fa == kBatch && fb == kPlain) {
          flags[i] = kBatch;
        } else if (type == "Mul" && fa == kPlain && fb == kBatch) {
          flags[i] = kBatch;
        }
      }
    }
  }

  // --- Reshape -----------------------------------------------------------

  // The output axes a reshape can put the batch of `in` (shape `s`) in:
  // those whose dim is outer' * batch * inner', with the dims before it
  // dividing what was outside the batch before it and those after it what
  // was inside.
  std::vector<BatchDim> ReshapeCandidates(const std::vector<int64_t>& s,
                                          const BatchDim& in,
                                          const std::vector<int64_t>& o) const {
    const int64_t outside = Product(s, 0, in.axis) * in.outer;
    const int64_t inside = in.inner * Product(s, in.axis + 1, s.size());
    std::vector<BatchDim> candidates;
    for (size_t j = 0; j < o.size(); ++j) {
      const int64_t before = Product(o, 0, j);
      const int64_t after = Product(o, j + 1, o.size());
      if (before == 0 || after == 0 || outside % before != 0 ||
          inside % after != 0) {
        continue;
      }
      const int64_t outer = outside / before, inner = inside / after;
      int64_t size = 0;
      if (!__builtin_mul_overflow(outer, from_, &size) &&
          !__builtin_mul_overflow(size, inner, &size) && o[j] == size) {
        candidates.push_back({static_cast<int>(j), outer, inner});
      }
    }
    return candidates;
  }

  Status VisitReshape(int index) {
    const NodeProto& node = g_.node(index);
    if (node.input_size() < 2 || node.output_size() != 1) return Status::Ok();
    const BatchDim in = DimOf(node.input(0));
    const std::vector<int>* flags = FlagsOf(node.input(1));
    if (Any(flags, kTainted)) {
      return Error(index,
                   "its target shape is computed from the batch in a "
                   "way that is not a multiple of it");
    }
    if (in.axis < 0) {
      if (Any(flags, kBatch)) {
        return Error(index,
                     "it gives a tensor without a batch dim a "
                     "batch-sized shape");
      }
      return Status::Ok();
    }
    const ConstTensor* target = view_.value(node.input(1));
    const std::vector<int64_t> s = ShapeOf(node.input(0));
    const std::vector<int64_t> o = ShapeOf(node.output(0));
    if (!target || !HasShape(node.input(0)) || !HasShape(node.output(0)) ||
        target->values.size() != o.size()) {
      return Error(index, "its target shape is not known at import");
    }
    if ((flags && flags->size() != o.size()) ||
        in.axis >= static_cast<int>(s.size())) {
      return Error(index, "its target shape is not known at import");
    }
    const std::vector<BatchDim> candidates = ReshapeCandidates(s, in, o);
    std::optional<BatchDim> chosen;
    const auto entry = [&](int j) {
      return static_cast<int64_t>(target->values[j]);
    };
    if (Any(flags, kBatch)) {
      // The target's batch entry is computed from Shape: it follows.
      for (const BatchDim& c : candidates) {
        if ((*flags)[c.axis] == kBatch) chosen = c;
      }
      if (!chosen || std::count(flags->begin(), flags->end(), kBatch) != 1) {
        return Error(index, "its target shape " + DimsText(o) +
                                " does not keep the batch of its input " +
                                DimsText(s) + " in one dim");
      }
    } else if (candidates.size() == 1) {
      chosen = candidates[0];
    } else {
      // Several dims could hold it (dims of 1 at an export batch of 1): the
      // one left to -1 is the batch, as in view(-1, ...).
      for (const BatchDim& c : candidates) {
        if (entry(c.axis) != -1) continue;
        if (chosen) return AmbiguousReshape(index, s, o);
        chosen = c;
      }
      if (!chosen) return AmbiguousReshape(index, s, o);
    }
    const int64_t literal = entry(chosen->axis);
    if (!Any(flags, kBatch) && literal > 0) {
      const std::optional<int64_t> size = Rescaled(literal, from_, to_);
      if (!size) return AmbiguousReshape(index, s, o);
      ConstTensor rescaled = *target;
      rescaled.values[chosen->axis] = static_cast<double>(*size);
      plan_.overrides.push_back({index, 1, std::move(rescaled)});
    } else if (literal == 0 && chosen->axis != in.axis) {
      return AmbiguousReshape(index, s, o);
    }
    dims_[node.output(0)] = *chosen;
    return Status::Ok();
  }

  Status AmbiguousReshape(int index, const std::vector<int64_t>& s,
                          const std::vector<int64_t>& o) const {
    return Error(index, "cannot tell which dim of its target shape " +
                            DimsText(o) + " holds the batch of its input " +
                            DimsText(s));
  }

  // --- Expand, ConstantOfShape, baked operands --------------------------

  Status VisitExpand(int index) {
    const NodeProto& node = g_.node(index);
    if (node.input_size() != 2 || node.output_size() != 1) return Status::Ok();
    const std::vector<int>* flags = FlagsOf(node.input(1));
    if (Any(flags, kTainted)) {
      return Error(index,
                   "its target shape depends on the batch in a way "
                   "that is not a multiple of it");
    }
    const ConstTensor* target = view_.value(node.input(1));
    const std::vector<int64_t> x = ShapeOf(node.input(0));
    const std::vector<int64_t> o = ShapeOf(node.output(0));
    if (!target || !HasShape(node.input(0)) || !HasShape(node.output(0)) ||
        (flags && flags->size() != target->values.size())) {
      return Error(index, "its target shape is not known at import");
    }
    const int rank = static_cast<int>(o.size());
    const int target_offset = rank - static_cast<int>(target->values.size());
    const int x_offset = rank - static_cast<int>(x.size());
    const BatchDim in = DimOf(node.input(0));
    if (in.axis >= 0) {
      const int j = in.axis + x_offset;
      const int t = j - target_offset;
      if (j < 0 || j >= rank) {
        return Error(index, "its output has no dim for its input's batch");
      }
      if (t >= 0 && t < static_cast<int>(target->values.size()) &&
          (!flags || (*flags)[t] != kBatch)) {
        const int64_t literal = static_cast<int64_t>(target->values[t]);
        if (literal > 1) {
          const std::optional<int64_t> size = Rescaled(literal, from_, to_);
          if (!size) {
            return Error(index, "its target's batch dim " +
                                    std::to_string(literal) +
                                    " is not a multiple of the batch");
          }
          ConstTensor rescaled = *target;
          rescaled.values[t] = static_cast<double>(*size);
          plan_.overrides.push_back({index, 1, std::move(rescaled)});
        }
      }
      dims_[node.output(0)] = {j, in.outer, in.inner};
      return Status::Ok();
    }
    if (!Any(flags, kBatch)) return Status::Ok();
    if (std::count(flags->begin(), flags->end(), kBatch) != 1) {
      return Error(index, "its target shape holds the batch twice");
    }
    const int t = static_cast<int>(
        std::find(flags->begin(), flags->end(), kBatch) - flags->begin());
    const int j = t + target_offset;
    if (j < 0 || j >= rank || o[j] % from_ != 0) {
      return Error(index, "its batch dim is not a multiple of the batch");
    }
    dims_[node.output(0)] = {j, o[j] / from_, 1};
    const int xj = j - x_offset;
    if (xj >= 0 && xj < static_cast<int>(x.size()) && x[xj] != 1) {
      return RescaleBakedOperand(index, node.input(0), xj);
    }
    return Status::Ok();
  }

  Status VisitConstantOfShape(int index) {
    const NodeProto& node = g_.node(index);
    if (node.input_size() != 1 || node.output_size() != 1) return Status::Ok();
    const std::vector<int>* flags = FlagsOf(node.input(0));
    if (Any(flags, kTainted)) {
      return Error(index,
                   "its shape depends on the batch in a way that is "
                   "not a multiple of it");
    }
    if (!Any(flags, kBatch)) return Status::Ok();
    const int e = static_cast<int>(
        std::find(flags->begin(), flags->end(), kBatch) - flags->begin());
    const std::vector<int64_t> o = ShapeOf(node.output(0));
    if (e < static_cast<int>(o.size()) && o[e] % from_ == 0) {
      dims_[node.output(0)] = {e, o[e] / from_, 1};
    }
    return Status::Ok();
  }

  // `tensor`, an operand without a batch dim, has a batch-sized `axis`
  // where it meets the batch: a constant baked at the export batch. A
  // filled one (zeros, ones) is resized; anything else cannot be.
  Status RescaleBakedOperand(int index, const std::string& tensor, int axis) {
    std::string name = tensor;
    // The tensors from the constant to the operand: each holds the batch
    // once the constant is resized.
    std::vector<std::string> path;
    const auto resized = [&]() {
      for (const std::string& t : path) {
        const std::vector<int64_t> s = ShapeOf(t);
        if (axis < static_cast<int>(s.size())) {
          dims_[t] = {axis, s[axis] / from_, 1};
        }
      }
      return Status::Ok();
    };
    for (int hops = 0; hops < 64; ++hops) {
      path.push_back(name);
      auto it = producer_.find(name);
      if (it == producer_.end()) break;
      const NodeProto& node = g_.node(it->second);
      const std::string& type = node.op_type();
      if (type == "Constant") {
        for (const ConstantResize& r : plan_.resizes) {
          if (r.node == it->second && r.axis == axis) return resized();
        }
        const ::onnx::AttributeProto* value = FindAttribute(node, "value");
        if (value && value->has_t() && axis < value->t().dims_size() &&
            value->t().dims(axis) % from_ == 0) {
          TensorProto probe = value->t();
          if (ResizeFilledTensor(&probe, axis, from_, to_)) {
            plan_.resizes.push_back({it->second, axis});
            return resized();
          }
        }
        break;
      }
      if (node.input_size() == 0) break;
      if (type == "ConstantOfShape") {
        const ConstTensor* shape = view_.value(node.input(0));
        if (!shape || axis >= static_cast<int>(shape->values.size())) break;
        ConstTensor rescaled = *shape;
        const std::optional<int64_t> size =
            Rescaled(static_cast<int64_t>(rescaled.values[axis]), from_, to_);
        if (!size) break;
        rescaled.values[axis] = static_cast<double>(*size);
        plan_.overrides.push_back({it->second, 0, std::move(rescaled)});
        return resized();
      }
      // Slices of other axes and casts keep the axis.
      if (type == "Identity" || type == "Cast") {
        name = node.input(0);
        continue;
      }
      if (type == "Slice" && node.input_size() >= 4) {
        const ConstTensor* axes = view_.value(node.input(3));
        const int rank = static_cast<int>(ShapeOf(node.input(0)).size());
        bool other_axes = axes != nullptr;
        for (double a : axes ? axes->values : std::vector<double>{}) {
          const int ai = static_cast<int>(a) < 0 ? static_cast<int>(a) + rank
                                                 : static_cast<int>(a);
          other_axes = other_axes && ai != axis;
        }
        if (!other_axes) break;
        name = node.input(0);
        continue;
      }
      break;
    }
    return Error(index, "its operand '" + tensor +
                            "' has a dim of the "
                            "export batch where it meets the batch, and is "
                            "no filled constant that could be resized");
  }

  Status VisitElementwise(int index) {
    const NodeProto& node = g_.node(index);
    if (node.output_size() < 1 || !HasShape(node.output(0))) {
      return Status::Ok();
    }
    const std::vector<int64_t> o = ShapeOf(node.output(0));
    const int rank = static_cast<int>(o.size());
    BatchDim out;
    for (const std::string& in : node.input()) {
      const BatchDim d = DimOf(in);
      if (d.axis < 0 || out.axis >= 0) continue;
      out = {d.axis + rank - static_cast<int>(ShapeOf(in).size()), d.outer,
             d.inner};
    }
    if (out.axis < 0 || out.axis >= rank) return Status::Ok();
    dims_[node.output(0)] = out;
    for (const std::string& in : node.input()) {
      if (in.empty() || DimOf(in).axis >= 0 || !HasShape(in)) continue;
      const std::vector<int64_t> s = ShapeOf(in);
      const int k = out.axis - (rank - static_cast<int>(s.size()));
      if (k >= 0 && s[k] != 1 && o[out.axis] != 1) {
        DPLACE_RETURN_IF_ERROR(RescaleBakedOperand(index, in, k));
      }
    }
    return Status::Ok();
  }

  // LSTM, GRU, RNN: X is [seq, batch, input] (layout 0) or [batch, seq,
  // input]; the initial states [dirs, batch, hidden] or [batch, dirs,
  // hidden].
  Status VisitRecurrent(int index) {
    const NodeProto& node = g_.node(index);
    // An operator of another domain by the same name may have no input.
    if (node.input_size() == 0) return Status::Ok();
    const bool batch_major = IntAttribute(node, "layout", 0) != 0;
    const BatchDim x = DimOf(node.input(0));
    if (x.axis < 0) return Status::Ok();
    if (x.axis != (batch_major ? 0 : 1)) {
      return Error(index, "its input's batch is not in its batch dim");
    }
    const int state_axis = batch_major ? 0 : 1;
    for (int slot = 5; slot < node.input_size() && slot <= 6; ++slot) {
      const std::string& state = node.input(slot);
      if (state.empty() || DimOf(state).axis >= 0 || !HasShape(state)) {
        continue;
      }
      DPLACE_RETURN_IF_ERROR(RescaleBakedOperand(index, state, state_axis));
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      const int axis = batch_major ? 0 : (k == 0 ? 2 : 1);
      dims_[node.output(k)] = {axis, x.outer, x.inner};
    }
    return Status::Ok();
  }

  // --- Ops that move axes -------------------------------------------------

  void VisitAxisMapping(const NodeProto& node) {
    const std::string& type = node.op_type();
    if (node.input_size() == 0 || node.output_size() == 0) return;
    BatchDim in = DimOf(node.input(0));
    const std::vector<int64_t> s = ShapeOf(node.input(0));
    const int rank = static_cast<int>(s.size());
    if (in.axis >= rank) in = {};
    auto set = [&](int k, int axis) {
      if (k < node.output_size() && !node.output(k).empty() && axis >= 0) {
        dims_[node.output(k)] = {axis, in.outer, in.inner};
      }
    };
    if (type == "Gather" && node.input_size() == 2) {
      int g = static_cast<int>(IntAttribute(node, "axis", 0));
      if (g < 0) g += rank;
      const BatchDim ids = DimOf(node.input(1));
      const int ids_rank = static_cast<int>(ShapeOf(node.input(1)).size());
      if (ids.axis >= 0 && in.axis < 0) {
        dims_[node.output(0)] = {g + ids.axis, ids.outer, ids.inner};
      } else if (in.axis >= 0 && in.axis != g) {
        set(0, in.axis < g ? in.axis : in.axis + ids_rank - 1);
      }
      return;
    }
    if (type == "MatMul" && node.input_size() == 2) {
      const int out_rank = static_cast<int>(ShapeOf(node.output(0)).size());
      const BatchDim b = DimOf(node.input(1));
      const int b_rank = static_cast<int>(ShapeOf(node.input(1)).size());
      if (in.axis >= 0 && in.axis != rank - 1) {
        set(0, in.axis + out_rank - rank);
      } else if (b.axis >= 0 && b.axis != b_rank - 2) {
        dims_[node.output(0)] = {b.axis + out_rank - b_rank, b.outer, b.inner};
      }
      return;
    }
    if (type == "Gemm" && node.input_size() >= 2) {
      const bool trans_a = IntAttribute(node, "transA", 0) != 0;
      const bool trans_b = IntAttribute(node, "transB", 0) != 0;
      const BatchDim b = DimOf(node.input(1));
      if (in.axis == (trans_a ? 1 : 0)) {
        set(0, 0);
      } else if (b.axis == (trans_b ? 0 : 1)) {
        dims_[node.output(0)] = {1, b.outer, b.inner};
      }
      return;
    }
    if (in.axis < 0) return;
    if (type == "Transpose") {
      std::vector<int64_t> perm = IntsAttribute(node, "perm");
      if (perm.empty()) {
        for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
      }
      for (size_t p = 0; p < perm.size(); ++p) {
        if (perm[p] == in.axis) set(0, static_cast<int>(p));
      }
      return;
    }
    if (type == "Flatten") {
      int axis = static_cast<int>(IntAttribute(node, "axis", 1));
      if (axis < 0) axis += rank;
      if (in.axis < axis) {
        dims_[node.output(0)] = {0, in.outer * Product(s, 0, in.axis),
                                 in.inner * Product(s, in.axis + 1, axis)};
      } else {
        dims_[node.output(0)] = {1, in.outer * Product(s, axis, in.axis),
                                 in.inner * Product(s, in.axis + 1, s.size())};
      }
      return;
    }
    if (type == "Unsqueeze" || type == "Squeeze") {
      // As a reshape: the one output axis of the batch's size.
      const std::vector<int64_t> o = ShapeOf(node.output(0));
      const std::vector<BatchDim> c = ReshapeCandidates(s, in, o);
      if (c.size() == 1) dims_[node.output(0)] = c[0];
      return;
    }
    if (type.rfind("Reduce", 0) == 0 || type == "ArgMax" || type == "ArgMin") {
      std::vector<int64_t> axes = IntsAttribute(node, "axes");
      if (node.input_size() >= 2) {
        if (const ConstTensor* v = view_.value(node.input(1))) {
          for (double a : v->values) axes.push_back(static_cast<int64_t>(a));
        }
      }
      if (type == "ArgMax" || type == "ArgMin") {
        axes = {IntAttribute(node, "axis", 0)};
      }
      const bool keep = IntAttribute(node, "keepdims", 1) != 0;
      int removed_before = 0;
      for (int64_t a : axes) {
        if (a < 0) a += rank;
        if (a == in.axis) return;  // Reduced over the batch.
        removed_before += a < in.axis;
      }
      if (axes.empty() &&
          (node.input_size() < 2 ||
           IntAttribute(node, "noop_with_empty_axes", 0) == 0)) {
        return;  // Everything reduced.
      }
      set(0, keep ? in.axis : in.axis - removed_before);
      return;
    }
    // Everything else keeps input 0's batch axis in each output of its
    // rank with the same dim there (Conv, pools, normalizations,
    // activations, Dropout, Slice, Split, Concat, Cast, Softmax, ...).
    for (int k = 0; k < node.output_size(); ++k) {
      if (!HasShape(node.output(k))) continue;
      const std::vector<int64_t> o = ShapeOf(node.output(k));
      if (static_cast<int>(o.size()) == rank && o[in.axis] == s[in.axis]) {
        set(k, in.axis);
      }
    }
  }

  const GraphProto& g_;
  const int64_t from_, to_;
  const ExportView& view_;
  BatchChangePlan plan_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, BatchDim> dims_;
  std::unordered_map<std::string, std::vector<int>> flags_;
};

int ElementBytes(int32_t type) {
  switch (type) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return 8;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::INT16:
    case TensorProto::UINT16:
      return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

StatusOr<BatchChangePlan> PlanBatchChange(
    const GraphProto& graph, const std::vector<std::string>& data_inputs,
    int64_t from, int64_t to, const ExportView& view) {
  return Planner(graph, from, to, view).Plan(data_inputs);
}

bool ResizeFilledTensor(TensorProto* t, int axis, int64_t from, int64_t to) {
  if (axis < 0 || axis >= t->dims_size() || from <= 0 || to <= 0 ||
      t->dims(axis) % from != 0 ||
      t->data_location() == TensorProto::EXTERNAL) {
    return false;
  }
  int64_t count = 1;
  for (int i = 0; i < t->dims_size(); ++i) {
    const int64_t d = i == axis ? t->dims(i) / from * to : t->dims(i);
    if (d < 0 || __builtin_mul_overflow(count, d, &count) ||
        count > (int64_t{1} << 31)) {
      return false;
    }
  }
  const int bytes = ElementBytes(t->data_type());
  if (t->has_raw_data() && bytes > 0) {
    const std::string& raw = t->raw_data();
    if (raw.size() < static_cast<size_t>(bytes)) return false;
    for (size_t i = bytes; i < raw.size(); i += bytes) {
      if (raw.compare(i, bytes, raw, 0, bytes) != 0) return false;
    }
    std::string filled;
    filled.reserve(static_cast<size_t>(count) * bytes);
    for (int64_t i = 0; i < count; ++i) filled.append(raw, 0, bytes);
    t->set_raw_data(std::move(filled));
  } else if (t->data_type() == TensorProto::FLOAT && t->float_data_size()) {
    const float v = t->float_data(0);
    for (float f : t->float_data()) {
      if (f != v) return false;
    }
    t->clear_float_data();
    for (int64_t i = 0; i < count; ++i) t->add_float_data(v);
  } else {
    return false;
  }
  t->set_dims(axis, t->dims(axis) / from * to);
  return true;
}

}  // namespace dplace::onnx_internal
