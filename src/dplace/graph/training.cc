#include "dplace/graph/training.h"

#include <algorithm>
#include <unordered_set>

namespace dplace {
namespace {

struct OptimizerInfo {
  std::string_view name;
  std::string_view op_type;
  int slots;
  int flops_per_element;  // Rough count of the update's arithmetic.
};

constexpr OptimizerInfo kOptimizers[] = {
    {"sgd", "ApplyGradientDescent", 0, 2},
    {"momentum", "ApplyMomentum", 1, 4},
    {"rmsprop", "ApplyRMSProp", 2, 8},
    {"adam", "ApplyAdam", 2, 12},
};

const OptimizerInfo& Info(Optimizer o) {
  return kOptimizers[static_cast<int>(o)];
}

// Which forward tensors a gradient op reads, by forward op type.
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
      "StridedSlice", "Pad",     "Cast",    "Neg"};
  if (products.count(type)) return Saved::kOtherInputs;
  if (activations.count(type)) return Saved::kOutput;
  if (pass_through.count(type)) return Saved::kNothing;
  if (type == "MaxPool") return Saved::kInputsAndOutput;
  return Saved::kInputs;
}

// The type of the op computing the gradient of `type`'s input `input`.
std::string GradientType(const std::string& type, int input) {
  if (type == "MatMul" || type == "BatchMatMul" || type == "BatchMatMulV2" ||
      type == "Einsum") {
    return type;
  }
  if (type == "Gemm") return "MatMul";
  if (type == "Conv2D" || type == "Conv") {
    return input == 0 ? "Conv2DBackpropInput" : "Conv2DBackpropFilter";
  }
  if (type == "BiasAdd" && input == 1) return "BiasAddGrad";
  return type + "Grad";
}

// Element-wise binary ops whose TF gradient reduces over broadcast axes.
bool IsBroadcastingBinary(const std::string& type) {
  static const std::unordered_set<std::string> types = {
      "Add",     "AddV2",   "Sub",     "Mul",
      "RealDiv", "Maximum", "Minimum", "SquaredDifference"};
  return types.count(type) > 0;
}

bool IsConcat(const std::string& type) {
  return type == "ConcatV2" || type == "Concat";
}

bool IsGather(const std::string& type) {
  return type == "Gather" || type == "GatherV2" || type == "ResourceGather";
}

// Ops whose gradient for `input` is their output gradient itself, so no
// gradient op is needed (as in TensorFlow).
bool PassesGradientThrough(const std::string& type, int input) {
  return type == "Identity" || (type == "BiasAdd" && input == 0);
}

// A gradient that flows into a tensor: output `output` of op `op` of the
// training graph.
struct Contribution {
  OpId op;
  int output;
};

class Expander {
 public:
  Expander(const Graph& forward, const TrainingOptions& options)
      : f_(forward), options_(options), b_(forward.name()) {}

  StatusOr<Graph> Expand() {
    for (OpId op = 0; op < f_.num_ops(); ++op) {
      if (f_.phase(op) != Phase::kForward) {
        return InvalidArgumentError(
            "graph \"" + f_.name() + "\" already has " +
            std::string(PhaseName(f_.phase(op))) + " op \"" + f_.op_name(op) +
            "\"; training expansion needs a forward graph");
      }
    }
    MarkOpsNeedingGradients();
    if (!any_parameter_) {
      return InvalidArgumentError(
          "graph \"" + f_.name() +
          "\": no parameter (op of type VariableV2) reaches a loss");
    }
    CopyForward();
    contributions_.resize(f_.num_tensors());
    const std::vector<OpId>& order = f_.topological_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (needs_[*it]) AddGradients(*it);
    }
    return std::move(b_).Build();
  }

 private:
  bool IsParameter(OpId op) const { return f_.op_type(op) == kParameterOpType; }

  bool HasConsumers(OpId op) const {
    for (EdgeId e : f_.out_edges(op)) {
      if (!f_.is_control(e)) return true;
    }
    return false;
  }

  // needs_[op]: on a data path from a parameter to a sink.
  void MarkOpsNeedingGradients() {
    const int n = f_.num_ops();
    std::vector<char> from_parameter(n, 0), to_loss(n, 0);
    for (OpId op : f_.topological_order()) {
      from_parameter[op] = IsParameter(op);
      for (EdgeId e : f_.in_edges(op)) {
        if (!f_.is_control(e) && from_parameter[f_.edge_src(e)]) {
          from_parameter[op] = 1;
        }
      }
    }
    const std::vector<OpId>& order = f_.topological_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const OpId op = *it;
      to_loss[op] = !HasConsumers(op) && from_parameter[op];
      for (EdgeId e : f_.out_edges(op)) {
        if (!f_.is_control(e) && to_loss[f_.edge_dst(e)]) to_loss[op] = 1;
      }
    }
    needs_.assign(n, 0);
    for (OpId op = 0; op < n; ++op) {
      needs_[op] = from_parameter[op] && to_loss[op];
      any_parameter_ = any_parameter_ || (needs_[op] && IsParameter(op));
    }
  }

  OpSpec Spec(OpId op) const {
    OpSpec s;
    s.name = f_.op_name(op);
    s.type = f_.op_type(op);
    s.phase = f_.phase(op);
    s.scope = f_.scope(op);
    for (int i = 0; i < f_.num_outputs(op); ++i) {
      s.outputs.push_back(f_.tensor(f_.output(op, i)));
    }
    s.flops = f_.flops(op);
    s.bytes_accessed = f_.bytes_accessed(op);
    s.persistent_bytes = f_.persistent_bytes(op);
    s.temporary_bytes = f_.temporary_bytes(op);
    s.colocation_group = f_.colocation_group(op);
    s.allowed_devices = f_.allowed_devices(op);
    return s;
  }

  // Forward ops keep their ids; those that get gradients join a colocation
  // group (their own name when they had none), shared with the gradients.
  void CopyForward() {
    for (OpId op = 0; op < f_.num_ops(); ++op) {
      OpSpec s = Spec(op);
      if (needs_[op]) s.colocation_group = GroupOf(op);
      b_.AddOp(std::move(s));
    }
    for (OpId op = 0; op < f_.num_ops(); ++op) {
      for (EdgeId e : f_.in_edges(op)) {
        if (f_.is_control(e)) {
          b_.AddControlEdge(f_.edge_src(e), op);
        } else {
          b_.AddEdge(f_.edge_src(e),
                     f_.edge_tensor(e) - f_.output(f_.edge_src(e), 0), op);
        }
      }
    }
  }

  // The colocation group of forward op `op` in the training graph: its own,
  // or its name when it had none.
  std::string GroupOf(OpId op) const {
    return f_.colocation_group(op).empty() ? f_.op_name(op)
                                           : f_.colocation_group(op);
  }

  // An op derived from forward op `source` (its gradient or its update):
  // same scope, colocation group and allowed devices.
  OpSpec DerivedSpec(OpId source, std::string name, std::string type,
                     Phase phase) const {
    OpSpec s;
    s.name = std::move(name);
    s.type = std::move(type);
    s.phase = phase;
    s.scope = f_.scope(source);
    s.colocation_group = GroupOf(source);
    s.allowed_devices = f_.allowed_devices(source);
    return s;
  }

  OpSpec BackwardSpec(OpId forward_op, std::string name, std::string type,
                      const TensorInfo& output) const {
    OpSpec s = DerivedSpec(forward_op, std::move(name), std::move(type),
                           Phase::kBackward);
    s.outputs.push_back(output);
    return s;
  }

  // The gradient of output `index` of `op`, summing contributions; nullopt
  // when nothing downstream needs it.
  std::optional<Contribution> OutputGradient(OpId op, int index) {
    const TensorId t = f_.output(op, index);
    std::vector<Contribution>& in = contributions_[t];
    if (in.empty()) {
      if (HasConsumers(op)) return std::nullopt;
      // A loss output: seed its gradient with ones.
      OpSpec seed = BackwardSpec(
          op, "gradients/" + f_.op_name(op) + "/seed_" + std::to_string(index),
          "OnesLike", f_.tensor(t));
      return Contribution{b_.AddOp(std::move(seed)), 0};
    }
    if (in.size() == 1) return in[0];
    OpSpec sum = BackwardSpec(
        op, "gradients/" + f_.op_name(op) + "/AddN_" + std::to_string(index),
        "AddN", f_.tensor(t));
    sum.flops =
        static_cast<double>(in.size() - 1) *
        (f_.tensor_bytes(t) / std::max(1, DataTypeSize(f_.tensor(t).dtype)));
    sum.bytes_accessed =
        static_cast<int64_t>(in.size() + 1) * f_.tensor_bytes(t);
    const OpId id = b_.AddOp(std::move(sum));
    for (const Contribution& c : in) b_.AddEdge(c.op, c.output, id);
    return Contribution{id, 0};
  }

  void AddGradients(OpId op) {
    std::vector<Contribution> output_grads;
    for (int i = 0; i < f_.num_outputs(op); ++i) {
      if (auto g = OutputGradient(op, i)) output_grads.push_back(*g);
    }
    if (IsParameter(op)) {
      if (!output_grads.empty()) AddUpdate(op, output_grads[0]);
      return;
    }
    const std::string& type = f_.op_type(op);
    if (output_grads.size() == 1) {
      if (type == "AddN") return PassThroughToAll(op, output_grads[0]);
      if (IsBroadcastingBinary(type)) {
        return AddBroadcastingGradients(op, output_grads[0]);
      }
      if (IsConcat(type)) return AddConcatGradients(op, output_grads[0]);
    }
    const Span<EdgeId> inputs = f_.in_edges(op);
    const Saved saved = SavedFor(f_.op_type(op));
    for (size_t k = 0; k < inputs.size(); ++k) {
      const EdgeId e = inputs[k];
      if (f_.is_control(e) || !needs_[f_.edge_src(e)]) continue;
      const TensorId x = f_.edge_tensor(e);
      if (PassesGradientThrough(f_.op_type(op), static_cast<int>(k)) &&
          output_grads.size() == 1) {
        contributions_[x].push_back(output_grads[0]);
        continue;
      }
      // The gradient of a gathered table is sparse (TF's IndexedSlices): one
      // row per looked-up id, the size of the gather's output.
      const bool sparse = IsGather(f_.op_type(op)) && k == 0;
      OpSpec g = BackwardSpec(
          op, "gradients/" + f_.op_name(op) + "_grad/" + std::to_string(k),
          GradientType(f_.op_type(op), static_cast<int>(k)),
          sparse ? f_.tensor(f_.output(op, 0)) : f_.tensor(x));
      g.flops = f_.flops(op);
      g.bytes_accessed = f_.bytes_accessed(op);
      g.temporary_bytes = f_.temporary_bytes(op);
      const OpId id = b_.AddOp(std::move(g));
      for (const Contribution& c : output_grads) b_.AddEdge(c.op, c.output, id);
      if (saved == Saved::kOtherInputs || saved == Saved::kInputs ||
          saved == Saved::kInputsAndOutput) {
        for (size_t j = 0; j < inputs.size(); ++j) {
          const EdgeId other = inputs[j];
          if (f_.is_control(other)) continue;
          if (saved == Saved::kOtherInputs && j == k) continue;
          b_.AddEdge(f_.edge_src(other),
                     f_.edge_tensor(other) - f_.output(f_.edge_src(other), 0),
                     id);
        }
      }
      if ((saved == Saved::kOutput || saved == Saved::kInputsAndOutput) &&
          f_.num_outputs(op) > 0) {
        b_.AddEdge(op, 0, id);
      }
      contributions_[x].push_back({id, 0});
    }
  }

  // Data inputs of `op` whose producers need a gradient, with their index
  // among the op's inputs.
  std::vector<std::pair<int, EdgeId>> InputsNeedingGradients(OpId op) const {
    std::vector<std::pair<int, EdgeId>> out;
    const Span<EdgeId> inputs = f_.in_edges(op);
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!f_.is_control(inputs[k]) && needs_[f_.edge_src(inputs[k])]) {
        out.push_back({static_cast<int>(k), inputs[k]});
      }
    }
    return out;
  }

  // The forward tensor an edge carries, as an input of backward ops.
  Contribution ForwardTensor(EdgeId e) const {
    const OpId src = f_.edge_src(e);
    return {src, f_.edge_tensor(e) - f_.output(src, 0)};
  }

  // Adds backward op "gradients/<op>_grad/<suffix>" reading `inputs`.
  Contribution AddBackwardOp(OpId op, const std::string& suffix,
                             const std::string& type,
                             const std::vector<Contribution>& inputs,
                             std::vector<TensorInfo> outputs, double flops) {
    OpSpec s =
        BackwardSpec(op, "gradients/" + f_.op_name(op) + "_grad/" + suffix,
                     type, outputs[0]);
    s.outputs = std::move(outputs);
    s.flops = flops;
    for (const TensorInfo& t : s.outputs) s.bytes_accessed += t.bytes;
    const OpId id = b_.AddOp(std::move(s));
    for (const Contribution& c : inputs) b_.AddEdge(c.op, c.output, id);
    return {id, 0};
  }

  void PassThroughToAll(OpId op, Contribution dy) {
    for (const auto& [k, e] : InputsNeedingGradients(op)) {
      contributions_[f_.edge_tensor(e)].push_back(dy);
    }
  }

  // TF's math_grad for broadcasting binary ops: Shape of each input and
  // BroadcastGradientArgs, then per input [Mul by the other operand,] Sum
  // over the broadcast axes and Reshape back to the input's shape.
  void AddBroadcastingGradients(OpId op, Contribution dy) {
    const auto needing = InputsNeedingGradients(op);
    const Span<EdgeId> inputs = f_.in_edges(op);
    const TensorInfo& out = f_.tensor(f_.output(op, 0));
    const double elements =
        static_cast<double>(out.bytes) / std::max(1, DataTypeSize(out.dtype));
    std::vector<Contribution> shapes;
    std::vector<TensorInfo> axes;
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (f_.is_control(inputs[j])) continue;
      const TensorInfo& x = f_.tensor(f_.edge_tensor(inputs[j]));
      const TensorInfo shape{
          {static_cast<int64_t>(x.shape.size())}, DataType::kInt32, 0};
      shapes.push_back(AddBackwardOp(op, "Shape_" + std::to_string(j), "Shape",
                                     {ForwardTensor(inputs[j])},
                                     {WithBytes(shape)}, 0));
      axes.push_back(WithBytes(shape));
    }
    const Contribution args = AddBackwardOp(
        op, "BroadcastGradientArgs", "BroadcastGradientArgs", shapes, axes, 0);
    const bool product = f_.op_type(op) != "Add" && f_.op_type(op) != "AddV2" &&
                         f_.op_type(op) != "Sub";
    int shape_index = 0;
    for (size_t j = 0, n = 0; j < inputs.size(); ++j) {
      if (f_.is_control(inputs[j])) continue;
      const int axis_output = static_cast<int>(n++);
      const bool wanted =
          std::any_of(needing.begin(), needing.end(),
                      [&](const auto& p) { return p.second == inputs[j]; });
      shape_index = axis_output;
      if (!wanted) continue;
      const std::string k = std::to_string(j);
      const TensorInfo& x = f_.tensor(f_.edge_tensor(inputs[j]));
      Contribution g = dy;
      if (product) {
        std::vector<Contribution> operands = {dy};
        for (size_t other = 0; other < inputs.size(); ++other) {
          if (other != j && !f_.is_control(inputs[other])) {
            operands.push_back(ForwardTensor(inputs[other]));
          }
        }
        g = AddBackwardOp(op, "mul_" + k, f_.op_type(op), operands, {out},
                          elements);
      }
      const Contribution sum = AddBackwardOp(
          op, "Sum_" + k, "Sum", {g, {args.op, axis_output}}, {x}, elements);
      contributions_[f_.edge_tensor(inputs[j])].push_back(AddBackwardOp(
          op, "Reshape_" + k, "Reshape", {sum, shapes[shape_index]}, {x}, 0));
    }
  }

  // TF's ConcatV2 gradient: ShapeN of the inputs, ConcatOffset, and a Slice
  // of the output gradient per input.
  void AddConcatGradients(OpId op, Contribution dy) {
    const Span<EdgeId> inputs = f_.in_edges(op);
    std::vector<Contribution> operands;
    std::vector<TensorInfo> shapes;
    for (EdgeId e : inputs) {
      if (f_.is_control(e)) continue;
      operands.push_back(ForwardTensor(e));
      const TensorInfo& x = f_.tensor(f_.edge_tensor(e));
      shapes.push_back(WithBytes(
          {{static_cast<int64_t>(x.shape.size())}, DataType::kInt32, 0}));
    }
    const Contribution shape_n =
        AddBackwardOp(op, "ShapeN", "ShapeN", operands, shapes, 0);
    std::vector<Contribution> shape_outputs;
    for (size_t i = 0; i < shapes.size(); ++i) {
      shape_outputs.push_back({shape_n.op, static_cast<int>(i)});
    }
    const Contribution offsets = AddBackwardOp(
        op, "ConcatOffset", "ConcatOffset", shape_outputs, shapes, 0);
    for (const auto& [k, e] : InputsNeedingGradients(op)) {
      const TensorInfo& x = f_.tensor(f_.edge_tensor(e));
      contributions_[f_.edge_tensor(e)].push_back(
          AddBackwardOp(op, "Slice_" + std::to_string(k), "Slice",
                        {dy, {offsets.op, k}, {shape_n.op, k}}, {x}, 0));
    }
  }

  static TensorInfo WithBytes(TensorInfo t) {
    t.bytes = ShapeBytes(t.shape, t.dtype);
    return t;
  }

  void AddUpdate(OpId param, Contribution gradient) {
    const OptimizerInfo& info = Info(options_.optimizer);
    const int64_t bytes = f_.tensor_bytes(f_.output(param, 0));
    const int64_t elements =
        bytes / std::max(1, DataTypeSize(f_.tensor(f_.output(param, 0)).dtype));
    OpSpec u =
        DerivedSpec(param, f_.op_name(param) + "/" + std::string(info.op_type),
                    std::string(info.op_type), Phase::kUpdate);
    u.flops = static_cast<double>(info.flops_per_element) * elements;
    u.persistent_bytes = info.slots * bytes;
    // Reads parameter, gradient and slots; writes parameter and slots.
    u.bytes_accessed = (3 + 2 * info.slots) * bytes;
    const OpId id = b_.AddOp(std::move(u));
    b_.AddEdge(param, 0, id);
    b_.AddEdge(gradient.op, gradient.output, id);
  }

  const Graph& f_;
  const TrainingOptions& options_;
  GraphBuilder b_;
  std::vector<char> needs_;
  bool any_parameter_ = false;
  std::vector<std::vector<Contribution>> contributions_;  // Per tensor.
};

}  // namespace

std::string_view OptimizerName(Optimizer optimizer) {
  return Info(optimizer).name;
}

std::optional<Optimizer> ParseOptimizer(std::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (kOptimizers[i].name == name) return static_cast<Optimizer>(i);
  }
  return std::nullopt;
}

int OptimizerSlots(Optimizer optimizer) { return Info(optimizer).slots; }

StatusOr<Graph> ExpandForTraining(const Graph& forward,
                                  const TrainingOptions& options) {
  return Expander(forward, options).Expand();
}

}  // namespace dplace
