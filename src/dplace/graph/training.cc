#include "dplace/graph/training.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

namespace dplace {
namespace {

struct OptimizerInfo {
  std::string_view name;
  std::string_view op_type;  // The fused update op; empty: decomposed.
  int slots;
  int flops_per_element;  // Rough count of the update's arithmetic.
};

constexpr std::array<OptimizerInfo, 5> kOptimizers = {{
    {"sgd", "ApplyGradientDescent", 0, 2},
    {"momentum", "ApplyMomentum", 1, 4},
    {"rmsprop", "ApplyRMSProp", 2, 8},
    {"adam", "ApplyAdam", 2, 12},
    {"adamw", "", 2, 14},
}};

const OptimizerInfo& InfoOf(Optimizer o) {
  return kOptimizers[static_cast<int>(o)];
}

bool IsFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 ||
         t == DataType::kBFloat16 || t == DataType::kFloat64;
}

// Ops through which TF passes no gradient: registered as not
// differentiable, or whose gradient function returns None.
bool IsNonDifferentiable(const std::string& type) {
  static const std::unordered_set<std::string> types = {"StopGradient",
                                                        "PreventGradient",
                                                        "Shape",
                                                        "ShapeN",
                                                        "Size",
                                                        "Rank",
                                                        "Floor",
                                                        "Ceil",
                                                        "Round",
                                                        "Sign",
                                                        "RandomUniform",
                                                        "RandomStandardNormal",
                                                        "TruncatedNormal",
                                                        "Multinomial",
                                                        "Equal",
                                                        "NotEqual",
                                                        "Less",
                                                        "LessEqual",
                                                        "Greater",
                                                        "GreaterEqual",
                                                        "LogicalAnd",
                                                        "LogicalOr",
                                                        "LogicalNot",
                                                        "ArgMax",
                                                        "ArgMin",
                                                        "OneHot",
                                                        "Range",
                                                        "Fill",
                                                        "ZerosLike",
                                                        "OnesLike",
                                                        "Const",
                                                        "IteratorGetNext",
                                                        "BroadcastGradientArgs",
                                                        "NoOp",
                                                        "Unique",
                                                        "Assign",
                                                        "AssignAdd",
                                                        "AssignSub"};
  return types.count(type) > 0;
}

// Ops that write state: sinks, but not losses.
bool IsStateUpdate(const std::string& type) {
  return type == "Assign" || type == "AssignAdd" || type == "AssignSub" ||
         type == "ScatterAdd" || type == "ScatterSub" ||
         type == "ScatterUpdate";
}

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

// One input of an op being added: output `output` of op `op` of the
// training graph (forward ops keep their ids).
struct Ref {
  OpId op;
  int output;
};

TensorInfo Info(std::vector<int64_t> shape,
                DataType dtype = DataType::kFloat32) {
  TensorInfo t{std::move(shape), dtype, 0};
  t.bytes = ShapeBytes(t.shape, t.dtype);
  return t;
}

// A vector of int32 holding a shape of rank `rank`.
TensorInfo ShapeVector(size_t rank) {
  return Info({static_cast<int64_t>(rank)}, DataType::kInt32);
}

TensorInfo IntScalar() { return Info({}, DataType::kInt32); }

double Elements(const TensorInfo& t) {
  return static_cast<double>(t.bytes) / std::max(1, DataTypeSize(t.dtype));
}

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
    if (options_.clip_by_global_norm) ClipByGlobalNorm();
    for (const ParameterGradient& p : gradients_) AddUpdate(p);
    return std::move(b_).Build();
  }

 private:
  // A trained variable and its gradient (values and, when sparse, indices).
  struct ParameterGradient {
    OpId variable;
    Ref gradient;
    std::optional<Ref> indices;
  };

  bool IsParameter(OpId op) const { return f_.op_type(op) == kParameterOpType; }

  bool HasConsumers(OpId op) const {
    for (EdgeId e : f_.out_edges(op)) {
      if (!f_.is_control(e)) return true;
    }
    return false;
  }

  bool CarriesGradient(EdgeId e) const {
    return !f_.is_control(e) && IsFloat(f_.tensor(f_.edge_tensor(e)).dtype);
  }

  // needs_[op]: on a differentiable path from a variable to a loss.
  void MarkOpsNeedingGradients() {
    const int n = f_.num_ops();
    std::vector<char> from_parameter(n, 0), to_loss(n, 0);
    for (OpId op : f_.topological_order()) {
      from_parameter[op] = IsParameter(op);
      if (IsNonDifferentiable(f_.op_type(op))) continue;
      for (EdgeId e : f_.in_edges(op)) {
        if (CarriesGradient(e) && from_parameter[f_.edge_src(e)]) {
          from_parameter[op] = 1;
        }
      }
    }
    const std::vector<OpId>& order = f_.topological_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const OpId op = *it;
      to_loss[op] = !HasConsumers(op) && from_parameter[op] &&
                    !IsStateUpdate(f_.op_type(op));
      for (EdgeId e : f_.out_edges(op)) {
        const OpId dst = f_.edge_dst(e);
        if (CarriesGradient(e) && to_loss[dst] &&
            !IsNonDifferentiable(f_.op_type(dst))) {
          to_loss[op] = 1;
        }
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

  std::string GroupOf(OpId op) const {
    return f_.colocation_group(op).empty() ? f_.op_name(op)
                                           : f_.colocation_group(op);
  }

  // Bytes of a tensor of the training graph.
  int64_t Bytes(Ref r) const {
    if (r.op < f_.num_ops()) return f_.tensor_bytes(f_.output(r.op, r.output));
    return added_outputs_[r.op - f_.num_ops()][r.output].bytes;
  }
  const TensorInfo& TensorOf(Ref r) const {
    if (r.op < f_.num_ops()) return f_.tensor(f_.output(r.op, r.output));
    return added_outputs_[r.op - f_.num_ops()][r.output];
  }

  // Adds an op derived from forward op `source` (same scope, colocation
  // group and allowed devices) reading `inputs`.
  OpId AddDerived(OpId source, std::string name, std::string type, Phase phase,
                  const std::vector<Ref>& inputs,
                  std::vector<TensorInfo> outputs, double flops,
                  const std::vector<OpId>& control_inputs = {}) {
    OpSpec s;
    s.name = std::move(name);
    s.type = std::move(type);
    s.phase = phase;
    s.scope = f_.scope(source);
    s.colocation_group = GroupOf(source);
    s.allowed_devices = f_.allowed_devices(source);
    return AddSpec(std::move(s), inputs, std::move(outputs), flops,
                   control_inputs);
  }

  // Adds `s` with its outputs, FLOPs and bytes, reading `inputs`.
  OpId AddSpec(OpSpec s, const std::vector<Ref>& inputs,
               std::vector<TensorInfo> outputs, double flops,
               const std::vector<OpId>& control_inputs = {}) {
    s.flops = flops;
    for (const Ref& r : inputs) s.bytes_accessed += Bytes(r);
    for (const TensorInfo& t : outputs) s.bytes_accessed += t.bytes;
    s.outputs = outputs;
    const OpId id = b_.AddOp(std::move(s));
    added_outputs_.push_back(std::move(outputs));
    for (const Ref& r : inputs) b_.AddEdge(r.op, r.output, id);
    for (OpId c : control_inputs) b_.AddControlEdge(c, id);
    return id;
  }

  // ---------------------------------------------------------------------
  // Output gradients.

  // The gradient of output `index` of `op`, summing contributions; nullopt
  // when nothing downstream needs it.
  std::optional<Ref> OutputGradient(OpId op, int index) {
    const TensorId t = f_.output(op, index);
    std::vector<Ref>& in = contributions_[t];
    if (in.size() == 1) return in[0];
    if (in.empty() && HasConsumers(op)) return std::nullopt;
    const std::string prefix = "gradients/" + f_.op_name(op) + "/";
    const std::string suffix = "_" + std::to_string(index);
    if (in.empty()) {
      // A loss: TF seeds its gradient with Fill(Shape(loss), 1).
      const TensorInfo& loss = f_.tensor(t);
      const OpId shape =
          AddDerived(op, prefix + "Shape" + suffix, "Shape", Phase::kBackward,
                     {{op, index}}, {ShapeVector(loss.shape.size())}, 0);
      const OpId one = AddDerived(op, prefix + "grad_ys" + suffix, "Const",
                                  Phase::kBackward, {}, {Info({})}, 0);
      return Ref{
          AddDerived(op, prefix + "Fill" + suffix, "Fill", Phase::kBackward,
                     {{shape, 0}, {one, 0}}, {loss}, Elements(loss)),
          0};
    }
    const bool sparse = std::all_of(in.begin(), in.end(), [&](const Ref& r) {
      return sparse_indices_.count(Key(r)) > 0;
    });
    if (sparse) return ConcatSparse(op, prefix, suffix, in);
    TensorInfo sum = f_.tensor(t);
    const double flops = static_cast<double>(in.size() - 1) * Elements(sum);
    return Ref{AddDerived(op, prefix + "AddN" + suffix, "AddN",
                          Phase::kBackward, in, {sum}, flops),
               0};
  }

  // TF aggregates IndexedSlices by concatenating their values and indices.
  Ref ConcatSparse(OpId op, const std::string& prefix,
                   const std::string& suffix, const std::vector<Ref>& in) {
    std::vector<Ref> values = in, indices;
    int64_t rows = 0;
    for (const Ref& r : in) {
      indices.push_back(sparse_indices_.at(Key(r)));
      rows += TensorOf(r).shape.empty() ? 1 : TensorOf(r).shape[0];
    }
    const OpId axis = AddDerived(op, prefix + "concat/axis" + suffix, "Const",
                                 Phase::kBackward, {}, {IntScalar()}, 0);
    values.push_back({axis, 0});
    indices.push_back({axis, 0});
    std::vector<int64_t> shape = TensorOf(in[0]).shape;
    shape[0] = rows;
    const OpId v = AddDerived(op, prefix + "concat" + suffix, "ConcatV2",
                              Phase::kBackward, values, {Info(shape)}, 0);
    const OpId i = AddDerived(op, prefix + "concat_1" + suffix, "ConcatV2",
                              Phase::kBackward, indices,
                              {Info({rows}, DataType::kInt32)}, 0);
    sparse_indices_[Key({v, 0})] = {i, 0};
    return {v, 0};
  }

  static int64_t Key(Ref r) {
    return (static_cast<int64_t>(r.op) << 8) | static_cast<int64_t>(r.output);
  }

  // ---------------------------------------------------------------------
  // The forward op whose gradient is being built, and helpers for recipes.

  struct Current {
    OpId op;
    std::vector<EdgeId> inputs;  // Data inputs in order.
    std::vector<std::optional<Ref>> dy;
    std::vector<std::optional<Ref>> grads;           // Per data input.
    std::vector<std::pair<std::string, int>> names;  // Base name, uses.
  };
  Current c_;

  int NumInputs() const { return static_cast<int>(c_.inputs.size()); }
  Ref X(int k) const {
    const EdgeId e = c_.inputs[k];
    const OpId src = f_.edge_src(e);
    return {src, f_.edge_tensor(e) - f_.output(src, 0)};
  }
  const TensorInfo& XInfo(int k) const {
    return f_.tensor(f_.edge_tensor(c_.inputs[k]));
  }
  Ref Y(int i = 0) const { return {c_.op, i}; }
  const TensorInfo& YInfo(int i = 0) const {
    return f_.tensor(f_.output(c_.op, i));
  }
  Ref Dy(int i = 0) const { return *c_.dy[i]; }
  // Whether the recipe builds a gradient for input k: always for a float
  // input when gated (TF runs the whole gradient function), else only when
  // its producer needs one.
  bool Wants(int k) const {
    if (k >= NumInputs() || !CarriesGradient(c_.inputs[k])) return false;
    return options_.gate_gradients || needs_[f_.edge_src(c_.inputs[k])];
  }

  // Adds "gradients/<op>_grad/<base>[_n]" reading `inputs`.
  OpId EmitOp(const std::string& base, const std::string& type,
              const std::vector<Ref>& inputs, std::vector<TensorInfo> outputs,
              double flops, const std::vector<OpId>& control_inputs = {}) {
    int n = 0;
    auto it = std::find_if(c_.names.begin(), c_.names.end(),
                           [&](const auto& p) { return p.first == base; });
    if (it == c_.names.end()) {
      c_.names.push_back({base, 1});
    } else {
      n = it->second++;
    }
    std::string name = "gradients/" + f_.op_name(c_.op) + "_grad/" + base;
    if (n > 0) name += "_" + std::to_string(n);
    return AddDerived(c_.op, std::move(name), type, Phase::kBackward, inputs,
                      std::move(outputs), flops, control_inputs);
  }
  Ref Emit(const std::string& base, const std::string& type,
           const std::vector<Ref>& inputs, const TensorInfo& output,
           double flops) {
    return {EmitOp(base, type, inputs, {output}, flops), 0};
  }
  // An op TF builds under control_dependencies([grad]): it waits for the
  // output gradient instead of running (and holding its result) as soon as
  // the forward tensors it reads exist.
  Ref EmitAfterGradient(const std::string& base, const std::string& type,
                        const std::vector<Ref>& inputs,
                        const TensorInfo& output, double flops) {
    return {EmitOp(base, type, inputs, {output}, flops, {Dy().op}), 0};
  }
  Ref EmitConst(const std::string& base, TensorInfo t) {
    return Emit(base, "Const", {}, t, 0);
  }
  Ref ShapeOf(Ref x) {
    return Emit("Shape", "Shape", {x}, ShapeVector(TensorOf(x).shape.size()),
                0);
  }
  Ref ZerosLike(Ref x) {
    return Emit("zeros_like", "ZerosLike", {x}, TensorOf(x),
                Elements(TensorOf(x)));
  }
  // Reshape of `x` to `shape` (a shape tensor), typed like `like`.
  Ref ReshapeTo(Ref x, Ref shape, const TensorInfo& like) {
    return Emit("Reshape", "Reshape", {x, shape}, like, 0);
  }

  // ---------------------------------------------------------------------
  // Gradient recipes: TensorFlow 1.x's gradient functions.

  using Recipe = void (Expander::*)();

  static const std::unordered_map<std::string, Recipe>& Recipes() {
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

  void AddGradients(OpId op) {
    c_.op = op;
    c_.inputs.clear();
    c_.dy.clear();
    c_.grads.clear();
    c_.names.clear();
    for (EdgeId e : f_.in_edges(op)) {
      if (!f_.is_control(e)) c_.inputs.push_back(e);
    }
    bool any = false;
    for (int i = 0; i < f_.num_outputs(op); ++i) {
      c_.dy.push_back(OutputGradient(op, i));
      any = any || c_.dy.back().has_value();
    }
    if (IsParameter(op)) {
      if (c_.dy[0]) {
        auto it = sparse_indices_.find(Key(*c_.dy[0]));
        gradients_.push_back({op, *c_.dy[0],
                              it == sparse_indices_.end()
                                  ? std::nullopt
                                  : std::optional<Ref>(it->second)});
      }
      return;
    }
    if (!any) return;
    // A sparse gradient (of a gathered tensor that is not a variable) turns
    // dense where a dense gradient function reads it, as TF converts
    // IndexedSlices.
    if (f_.op_type(op) != "Identity") {
      for (int i = 0; i < static_cast<int>(c_.dy.size()); ++i) {
        if (c_.dy[i]) c_.dy[i] = Densified(*c_.dy[i], f_.output(op, i));
      }
    }
    c_.grads.assign(c_.inputs.size(), std::nullopt);
    const auto& recipes = Recipes();
    // Recipes read output 0's gradient, except Split's and Unpack's, which
    // read all of them.
    const std::string& type = f_.op_type(op);
    auto it = recipes.find(type);
    if (it != recipes.end() &&
        (c_.dy[0] || type == "Split" || type == "Unpack")) {
      (this->*(it->second))();
    } else {
      GradGeneric();
    }
    if (options_.gate_gradients) Gate();
    for (int k = 0; k < NumInputs(); ++k) {
      const EdgeId e = c_.inputs[k];
      if (c_.grads[k] && needs_[f_.edge_src(e)]) {
        contributions_[f_.edge_tensor(e)].push_back(*c_.grads[k]);
      }
    }
  }

  // `g` as a dense tensor like forward tensor `t`: itself, or the sum of a
  // sparse gradient's rows into place (UnsortedSegmentSum).
  Ref Densified(Ref g, TensorId t) {
    auto it = sparse_indices_.find(Key(g));
    if (it == sparse_indices_.end()) return g;
    const TensorInfo& dense = f_.tensor(t);
    const OpId rows = EmitOp("num_segments", "Const", {}, {IntScalar()}, 0);
    return Emit("UnsortedSegmentSum", "UnsortedSegmentSum",
                {g, it->second, {rows, 0}}, dense, Elements(dense));
  }

  // control_flow_ops.tuple(): a NoOp after every gradient, and each
  // gradient passed on through an Identity that waits for it.
  void Gate() {
    std::vector<OpId> producers;
    int count = 0;
    for (const auto& g : c_.grads) {
      if (!g) continue;
      ++count;
      if (std::find(producers.begin(), producers.end(), g->op) ==
          producers.end()) {
        producers.push_back(g->op);
      }
    }
    if (count < 2) return;
    const OpId gate = EmitOp("tuple/group_deps", "NoOp", {}, {}, 0, producers);
    for (auto& g : c_.grads) {
      if (!g) continue;
      const bool sparse = sparse_indices_.count(Key(*g)) > 0;
      const Ref indices = sparse ? sparse_indices_.at(Key(*g)) : Ref{};
      g = Ref{EmitOp("tuple/control_dependency", "Identity", {*g},
                     {TensorOf(*g)}, 0, {gate}),
              0};
      if (sparse) sparse_indices_[Key(*g)] = indices;
    }
  }

  void GradIdentity() {
    if (Wants(0)) c_.grads[0] = Dy();
  }

  void GradAddN() {
    for (int k = 0; k < NumInputs(); ++k) {
      if (Wants(k)) c_.grads[k] = Dy();
    }
  }

  // Shape of both inputs and their BroadcastGradientArgs, whose outputs 0
  // and 1 are the reduction axes of each input's gradient.
  struct BroadcastShapes {
    Ref sx, sy;
    OpId args;
  };
  BroadcastShapes EmitBroadcastGradientArgs() {
    const Ref sx = ShapeOf(X(0)), sy = ShapeOf(X(1));
    const size_t rank = YInfo().shape.size();
    return {sx, sy,
            EmitOp("BroadcastGradientArgs", "BroadcastGradientArgs", {sx, sy},
                   {ShapeVector(rank), ShapeVector(rank)}, 0)};
  }

  // math_grad's broadcasting binary ops: Shape of both inputs,
  // BroadcastGradientArgs, then per input its factor, Sum over the
  // broadcast axes and Reshape back.
  void GradBroadcast() {
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
      return Emit(named("Reshape", k), "Reshape", {s, k == 0 ? sx : sy},
                  XInfo(k), 0);
    };
    if (type == "Add" || type == "AddV2" || type == "Sub") {
      if (want_x) c_.grads[0] = reduce(dy, 0, false);
      if (want_y) c_.grads[1] = reduce(dy, 1, type == "Sub");
    } else if (type == "Mul") {
      if (want_x) {
        c_.grads[0] = reduce(Emit("mul", "Mul", {dy, X(1)}, out, n), 0, false);
      }
      if (want_y) {
        c_.grads[1] =
            reduce(Emit("mul_1", "Mul", {X(0), dy}, out, n), 1, false);
      }
    } else if (type == "RealDiv") {
      if (want_x) {
        c_.grads[0] =
            reduce(Emit("RealDiv", "RealDiv", {dy, X(1)}, out, n), 0, false);
      }
      if (want_y) {
        // -x / y / y * dy.
        const Ref neg =
            Emit("Neg", "Neg", {X(0)}, XInfo(0), Elements(XInfo(0)));
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
  void GradPow() {
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
  void GradMatMul() {
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

  void GradConv2D() {
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

  void GradBiasAdd() {
    if (NumInputs() != 2) return GradGeneric();
    if (Wants(0)) c_.grads[0] = Dy();
    if (Wants(1)) {
      c_.grads[1] = Emit("BiasAddGrad", "BiasAddGrad", {Dy()}, XInfo(1),
                         Elements(YInfo()));
    }
  }

  // Activations whose gradient reads their output (or input, for Relu6).
  void GradActivation() {
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

  void GradUnaryMath() {
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
  void GradSoftmax() {
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
  void GradCrossEntropy() {
    if (!Wants(0) || f_.num_outputs(c_.op) < 2) return;
    const TensorInfo& backprop = YInfo(1);
    const Ref saved =
        Emit("PreventGradient", "PreventGradient", {Y(1)}, backprop, 0);
    const Ref dim = EmitConst("ExpandDims/dim", IntScalar());
    std::vector<int64_t> column = YInfo(0).shape;
    column.push_back(1);
    const Ref e =
        Emit("ExpandDims", "ExpandDims", {Dy(), dim}, Info(column), 0);
    c_.grads[0] = Emit("mul", "Mul", {e, saved}, XInfo(0), Elements(backprop));
  }

  // Sum and Mean: reshape the gradient to the kept-dims shape and tile it
  // back to the input's (TF's fast path when everything is reduced, else the
  // reduced_shape arithmetic); Mean divides by the reduced count.
  void GradReduction() {
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
          Emit("DynamicStitch", "DynamicStitch",
               {range, mod, input_shape, fill}, ShapeVector(rank), 0);
      // tile_scaling = input_shape // max(reduced, 1).
      const Ref floor_one = EmitConst("Maximum/y", IntScalar());
      const Ref max = Emit("Maximum", "Maximum", {reduced, floor_one},
                           ShapeVector(rank), 0);
      const Ref scaling = Emit("floordiv", "FloorDiv", {input_shape, max},
                               ShapeVector(rank), 0);
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
  void GradReshape() {
    if (!Wants(0)) return;
    c_.grads[0] = ReshapeTo(Dy(), ShapeOf(X(0)), XInfo(0));
  }

  void GradTranspose() {
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
  void GradConcat() {
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
      c_.grads[k] = Emit("Slice", "Slice", {Dy(), {offsets, k}, {shape_n, k}},
                         XInfo(k), 0);
    }
  }

  // Output i's gradient, zeros where nothing flowed back (TF's
  // ZerosLikeOutsideLoop).
  Ref DyOrZeros(int i) {
    if (c_.dy[i]) return *c_.dy[i];
    return ZerosLike(Y(i));
  }

  // Split (TF: split_dim, value; ONNX: value [, sizes]): the output
  // gradients concatenated.
  void GradSplit() {
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

  void GradPack() {
    std::vector<TensorInfo> outputs;
    for (int k = 0; k < NumInputs(); ++k) outputs.push_back(XInfo(k));
    const OpId unstack = EmitOp("unstack", "Unpack", {Dy()}, outputs, 0);
    for (int k = 0; k < NumInputs(); ++k) {
      if (Wants(k)) c_.grads[k] = Ref{unstack, k};
    }
  }

  void GradUnpack() {
    if (!Wants(0)) return;
    std::vector<Ref> parts;
    for (int i = 0; i < f_.num_outputs(c_.op); ++i) {
      parts.push_back(DyOrZeros(i));
    }
    c_.grads[0] = Emit("stack", "Pack", parts, XInfo(0), 0);
  }

  // The gradient of a gathered table is sparse (TF's IndexedSlices): the
  // output gradient reshaped to one row per id, and the ids.
  void GradGather() {
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
  void GradSelect() {
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
  void GradPad() {
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

  void GradPool() {
    if (!Wants(0)) return;
    const double flops = f_.flops(c_.op);
    if (f_.op_type(c_.op) == "MaxPool") {
      c_.grads[0] = Emit("MaxPoolGrad", "MaxPoolGrad", {X(0), Y(), Dy()},
                         XInfo(0), flops);
    } else {
      c_.grads[0] = Emit("AvgPoolGrad", "AvgPoolGrad", {ShapeOf(X(0)), Dy()},
                         XInfo(0), flops);
    }
  }

  // ---------------------------------------------------------------------
  // ONNX operators: one op per input gradient, each costed by its formula
  // (the kernels PyTorch's autograd runs), from the forward tensors'
  // shapes. Inputs folded at import (constants) are no edges, so input k of
  // the recipe is the k-th input that is an edge.

  // Conv / ConvTranspose (X, W[, B]): the input and the filter gradients
  // each cost the forward's multiply-adds (grouped and depthwise included:
  // W's dims already count C/group); the bias gradient is a sum of the
  // output gradient over every axis but the channel.
  void GradOnnxConv() {
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
  void GradOnnxGemm() {
    if (NumInputs() < 2) return GradGeneric();
    const double out = Elements(YInfo());
    const bool has_c = NumInputs() >= 3;
    const double products = std::max(0.0, f_.flops(c_.op) - (has_c ? out : 0));
    if (Wants(0)) {
      c_.grads[0] = Emit("MatMul", "MatMul", {Dy(), X(1)}, XInfo(0), products);
    }
    if (Wants(1)) {
      c_.grads[1] =
          Emit("MatMul_1", "MatMul", {X(0), Dy()}, XInfo(1), products);
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
  void GradOnnxNormalization() {
    const double n = Elements(YInfo());
    std::vector<Ref> saved = {Dy(), X(0)};
    if (NumInputs() >= 2) saved.push_back(X(1));
    if (Wants(0)) {
      c_.grads[0] = Emit(f_.op_type(c_.op) + "Grad", f_.op_type(c_.op) + "Grad",
                         saved, XInfo(0), 8 * n);
    }
    if (NumInputs() >= 2 && Wants(1)) {
      c_.grads[1] =
          Emit("ScaleGrad", "ReduceSum", {Dy(), X(0)}, XInfo(1), 2 * n);
    }
    if (NumInputs() >= 3 && Wants(2)) {
      c_.grads[2] = Emit("BiasGrad", "ReduceSum", {Dy()}, XInfo(2), n);
    }
  }

  // x / y: dx = dy / y, dy = -dy * x / y^2, each summed over the axes its
  // input was broadcast along.
  void GradOnnxDiv() {
    if (NumInputs() != 2) return GradGeneric();
    const double n = Elements(YInfo());
    for (int k = 0; k < 2; ++k) {
      if (!Wants(k)) continue;
      const double reduce = Elements(XInfo(k)) < n ? n : 0;
      const std::vector<Ref> inputs = k == 0
                                          ? std::vector<Ref>{Dy(), X(1)}
                                          : std::vector<Ref>{Dy(), X(0), X(1)};
      c_.grads[k] = Emit(k == 0 ? "div" : "div_1", "Div", inputs, XInfo(k),
                         (k == 0 ? 1 : 3) * n + reduce);
    }
  }

  // erf (GELU's exact form): dx = dy * 2/sqrt(pi) * exp(-x^2).
  void GradOnnxErf() {
    if (!Wants(0)) return;
    c_.grads[0] = Emit("ErfGrad", "ErfGrad", {Dy(), X(0)}, XInfo(0),
                       5 * Elements(XInfo(0)));
  }

  // Where (condition, x, y): the gradient where each branch was taken,
  // summed over the axes it was broadcast along.
  void GradOnnxWhere() {
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
  void GradOnnxEinsum() {
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
  void GradOnnxRecurrent() {
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
    const OpId data = EmitOp(type + "BackpropData", type + "BackpropData",
                             saved, {XInfo(0)}, flops);
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
      c_.grads[k] = Emit(type + "BackpropWeights_" + std::to_string(k),
                         type + "BackpropWeights", {{data, 0}, X(0), X(k)},
                         XInfo(k), cost);
    }
  }

  // Op types without a recipe: one gradient op per input, with the forward
  // op's FLOPs, reading the output gradients and the forward tensors its
  // math likely needs.
  void GradGeneric() {
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
          c_.op,
          "gradients/" + f_.op_name(c_.op) + "_grad/" + std::to_string(k),
          GradientType(type, k), Phase::kBackward, inputs, {XInfo(k)},
          f_.flops(c_.op));
      c_.grads[k] = Ref{id, 0};
    }
  }

  // ---------------------------------------------------------------------
  // Clipping and updates.

  // tf.clip_by_global_norm: half squared norm of each gradient (L2Loss),
  // summed, global norm, the scale, and each gradient scaled (Mul) and
  // passed on (Identity).
  void ClipByGlobalNorm() {
    if (gradients_.empty()) return;
    const std::string prefix = "clip_by_global_norm/";
    std::vector<Ref> norms;
    for (size_t i = 0; i < gradients_.size(); ++i) {
      const ParameterGradient& p = gradients_[i];
      norms.push_back(
          {AddDerived(p.variable,
                      prefix + "global_norm/L2Loss_" + std::to_string(i),
                      "L2Loss", Phase::kBackward, {p.gradient}, {Info({})},
                      2 * Elements(TensorOf(p.gradient))),
           0});
    }
    // The norm and the scale: scalars, in no colocation group.
    const auto scalar_op = [&](const std::string& name, const std::string& type,
                               const std::vector<Ref>& inputs,
                               TensorInfo output, double flops) {
      OpSpec s;
      s.name = prefix + name;
      s.type = type;
      s.phase = Phase::kBackward;
      s.scope = "clip_by_global_norm";
      return Ref{AddSpec(std::move(s), inputs, {std::move(output)}, flops), 0};
    };
    const Ref stack = scalar_op("global_norm/stack", "Pack", norms,
                                Info({static_cast<int64_t>(norms.size())}), 0);
    const Ref axis =
        scalar_op("global_norm/Const", "Const", {}, ShapeVector(1), 0);
    const Ref sum = scalar_op("global_norm/Sum", "Sum", {stack, axis}, Info({}),
                              static_cast<double>(norms.size()));
    const Ref two = scalar_op("global_norm/Const_1", "Const", {}, Info({}), 0);
    const Ref twice =
        scalar_op("global_norm/mul", "Mul", {sum, two}, Info({}), 1);
    const Ref norm =
        scalar_op("global_norm/global_norm", "Sqrt", {twice}, Info({}), 1);
    const Ref one = scalar_op("truediv/x", "Const", {}, Info({}), 0);
    const Ref inverse =
        scalar_op("truediv", "RealDiv", {one, norm}, Info({}), 1);
    const Ref clip = scalar_op("Const", "Const", {}, Info({}), 0);
    const Ref one_over_clip =
        scalar_op("truediv_1", "RealDiv", {one, clip}, Info({}), 1);
    const Ref minimum =
        scalar_op("Minimum", "Minimum", {inverse, one_over_clip}, Info({}), 1);
    const Ref scale = scalar_op("mul", "Mul", {clip, minimum}, Info({}), 1);
    for (size_t i = 0; i < gradients_.size(); ++i) {
      ParameterGradient& p = gradients_[i];
      const TensorInfo& g = TensorOf(p.gradient);
      const Ref scaled = {
          AddDerived(p.variable, prefix + "mul_" + std::to_string(i + 1), "Mul",
                     Phase::kBackward, {p.gradient, scale}, {g}, Elements(g)),
          0};
      p.gradient = {
          AddDerived(p.variable,
                     prefix + "clip_by_global_norm/_" + std::to_string(i),
                     "Identity", Phase::kBackward, {scaled}, {g}, 0),
          0};
    }
  }

  // What an update reads as the variable: its read (an Identity that is its
  // only consumer) when it has one, else the variable itself. TF's update
  // takes the variable by reference; reading through the read keeps the
  // simulator from holding the variable's output all step besides the read.
  Ref VariableValue(OpId variable) const {
    OpId read = -1;
    int consumers = 0;
    for (EdgeId e : f_.out_edges(variable)) {
      if (f_.is_control(e)) continue;
      ++consumers;
      if (f_.op_type(f_.edge_dst(e)) == "Identity") read = f_.edge_dst(e);
    }
    return consumers == 1 && read >= 0 ? Ref{read, 0} : Ref{variable, 0};
  }

  void AddUpdate(const ParameterGradient& p) {
    const OptimizerInfo& info = InfoOf(options_.optimizer);
    const OpId param = p.variable;
    const TensorInfo& value = f_.tensor(f_.output(param, 0));
    const int64_t bytes = value.bytes;
    const double elements = Elements(value);
    const std::string& name = f_.op_name(param);
    Ref gradient = p.gradient;
    std::vector<Ref> extra;
    if (p.indices && options_.optimizer == Optimizer::kAdamWeightDecay) {
      // AdamWeightDecayOptimizer does dense math on the gradient, which
      // turns the IndexedSlices into a dense tensor (UnsortedSegmentSum into
      // the table's rows).
      const OpId rows = AddDerived(param, name + "/num_segments", "Const",
                                   Phase::kUpdate, {}, {IntScalar()}, 0);
      gradient = {
          AddDerived(param, name + "/UnsortedSegmentSum", "UnsortedSegmentSum",
                     Phase::kUpdate, {gradient, *p.indices, {rows, 0}}, {value},
                     Elements(TensorOf(gradient))),
          0};
    } else if (p.indices) {
      // Optimizer._apply_sparse_duplicate_indices: sum the rows of repeated
      // ids (Unique, UnsortedSegmentSum over the unique count).
      const TensorInfo& g = TensorOf(gradient);
      const TensorInfo& ids = TensorOf(*p.indices);
      const OpId unique =
          AddDerived(param, name + "/Unique", "Unique", Phase::kUpdate,
                     {*p.indices}, {ids, ids}, Elements(ids));
      const Ref count_shape = {
          AddDerived(param, name + "/Shape", "Shape", Phase::kUpdate,
                     {{unique, 0}}, {ShapeVector(1)}, 0),
          0};
      const Ref count = {
          AddDerived(param, name + "/strided_slice", "StridedSlice",
                     Phase::kUpdate, {count_shape}, {IntScalar()}, 0),
          0};
      gradient = {AddDerived(param, name + "/UnsortedSegmentSum",
                             "UnsortedSegmentSum", Phase::kUpdate,
                             {gradient, {unique, 1}, count}, {g}, Elements(g)),
                  0};
      extra.push_back({unique, 0});
    }
    if (options_.optimizer == Optimizer::kAdamWeightDecay) {
      return AddAdamWeightDecay(param, gradient);
    }
    const bool sparse = p.indices.has_value();
    const std::string type =
        (sparse ? "Sparse" : "") + std::string(info.op_type);
    OpSpec u;
    u.name = name + "/" + type;
    u.type = type;
    u.phase = Phase::kUpdate;
    u.scope = f_.scope(param);
    u.colocation_group = GroupOf(param);
    u.allowed_devices = f_.allowed_devices(param);
    u.flops = static_cast<double>(info.flops_per_element) * elements;
    u.persistent_bytes = info.slots * bytes;
    // Reads parameter, gradient and slots; writes parameter and slots.
    u.bytes_accessed = (3 + 2 * info.slots) * bytes;
    // TF's sparse Adam rescales m and v densely (m * beta1, v * beta2,
    // sqrt(v), ...): about two dense copies at a time.
    if (sparse && options_.optimizer == Optimizer::kAdam) {
      u.temporary_bytes = 2 * bytes;
    }
    const OpId id = b_.AddOp(std::move(u));
    added_outputs_.push_back({});
    const Ref v = VariableValue(param);
    b_.AddEdge(v.op, v.output, id);
    b_.AddEdge(gradient.op, gradient.output, id);
    for (const Ref& r : extra) b_.AddEdge(r.op, r.output, id);
  }

  // BERT's AdamWeightDecayOptimizer, op by op: next_m = b1 * m + (1 - b1) *
  // g; next_v = b2 * v + (1 - b2) * g^2; update = next_m / (sqrt(next_v) +
  // eps) [+ wd * param, except for LayerNorm and bias variables]; param -=
  // lr * update; and the three assignments. The slots (m, v) are held by
  // the first op.
  void AddAdamWeightDecay(OpId param, Ref gradient) {
    const TensorInfo value = f_.tensor(f_.output(param, 0));
    const double n = Elements(value);
    const std::string prefix = f_.op_name(param) + "/adam_";
    int consts = 0;
    const auto op = [&](const std::string& name, const std::string& type,
                        const std::vector<Ref>& inputs, double flops) {
      return Ref{AddDerived(param, prefix + name, type, Phase::kUpdate, inputs,
                            {value}, flops),
                 0};
    };
    const auto constant = [&]() {
      return Ref{AddDerived(param, prefix + "Const_" + std::to_string(consts++),
                            "Const", Phase::kUpdate, {}, {Info({})}, 0),
                 0};
    };
    const Ref w = VariableValue(param);
    // The first op reading m holds both slots. It, the one reading v and
    // the weight decay depend on no gradient: TF runs them as soon as the
    // step starts and holds their results until the update.
    OpSpec first;
    first.name = prefix + "m_mul";
    first.type = "Mul";
    first.phase = Phase::kUpdate;
    first.scope = f_.scope(param);
    first.colocation_group = GroupOf(param);
    first.allowed_devices = f_.allowed_devices(param);
    first.persistent_bytes = 2 * value.bytes;
    const Ref m = {AddSpec(std::move(first), {constant()}, {value}, n), 0};
    const Ref g1 = op("m_mul_1", "Mul", {constant(), gradient}, n);
    const Ref next_m = op("m_add", "Add", {m, g1}, n);
    const Ref v = op("v_mul", "Mul", {constant()}, n);
    const Ref square = op("Square", "Square", {gradient}, n);
    const Ref g2 = op("v_mul_1", "Mul", {constant(), square}, n);
    const Ref next_v = op("v_add", "Add", {v, g2}, n);
    const Ref root = op("Sqrt", "Sqrt", {next_v}, n);
    const Ref denominator = op("add", "Add", {root, constant()}, n);
    Ref update = op("truediv", "RealDiv", {next_m, denominator}, n);
    const std::string& name = f_.op_name(param);
    if (name.find("LayerNorm") == std::string::npos &&
        name.find("bias") == std::string::npos) {
      const Ref decay = op("mul", "Mul", {constant(), w}, n);
      update = op("add_1", "Add", {update, decay}, n);
    }
    const Ref scaled = op("mul_1", "Mul", {constant(), update}, n);
    const Ref next = op("sub", "Sub", {w, scaled}, n);
    op("Assign", "Assign", {w, next}, 0);
    op("Assign_1", "Assign", {next_m}, 0);
    op("Assign_2", "Assign", {next_v}, 0);
  }

  const Graph& f_;
  const TrainingOptions& options_;
  GraphBuilder b_;
  std::vector<char> needs_;
  bool any_parameter_ = false;
  std::vector<std::vector<Ref>> contributions_;         // Per forward tensor.
  std::vector<std::vector<TensorInfo>> added_outputs_;  // Per added op.
  std::unordered_map<int64_t, Ref> sparse_indices_;     // Values -> indices.
  std::vector<ParameterGradient> gradients_;
};

}  // namespace

std::string_view OptimizerName(Optimizer optimizer) {
  return InfoOf(optimizer).name;
}

std::optional<Optimizer> ParseOptimizer(std::string_view name) {
  for (size_t i = 0; i < kOptimizers.size(); ++i) {
    if (kOptimizers[i].name == name) return static_cast<Optimizer>(i);
  }
  return std::nullopt;
}

int OptimizerSlots(Optimizer optimizer) { return InfoOf(optimizer).slots; }

StatusOr<Graph> ExpandForTraining(const Graph& forward,
                                  const TrainingOptions& options) {
  return Expander(forward, options).Expand();
}

}  // namespace dplace
