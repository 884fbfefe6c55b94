#include "dplace/graph/training.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "dplace/graph/training_expander.h"

namespace dplace::training_internal {
namespace {

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

}  // namespace

StatusOr<Graph> Expander::Expand() {
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

bool Expander::HasConsumers(OpId op) const {
  for (EdgeId e : f_.out_edges(op)) {
    if (!f_.is_control(e)) return true;
  }
  return false;
}

bool Expander::CarriesGradient(EdgeId e) const {
  return !f_.is_control(e) && IsFloat(f_.tensor(f_.edge_tensor(e)).dtype);
}

// needs_[op]: on a differentiable path from a variable to a loss.
void Expander::MarkOpsNeedingGradients() {
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

// Forward ops keep their ids; those that get gradients join a colocation
// group (their own name when they had none), shared with the gradients.
void Expander::CopyForward() {
  for (OpId op = 0; op < f_.num_ops(); ++op) {
    OpSpec s = f_.SpecOf(op);
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

std::string Expander::GroupOf(OpId op) const {
  return f_.colocation_group(op).empty() ? f_.op_name(op)
                                         : f_.colocation_group(op);
}

// Bytes of a tensor of the training graph.
int64_t Expander::Bytes(Ref r) const {
  if (r.op < f_.num_ops()) return f_.tensor_bytes(f_.output(r.op, r.output));
  return added_outputs_[r.op - f_.num_ops()][r.output].bytes;
}

const TensorInfo& Expander::TensorOf(Ref r) const {
  if (r.op < f_.num_ops()) return f_.tensor(f_.output(r.op, r.output));
  return added_outputs_[r.op - f_.num_ops()][r.output];
}

// Adds an op derived from forward op `source` (same scope, colocation
// group and allowed devices) reading `inputs`.
OpId Expander::AddDerived(OpId source, std::string name, std::string type,
                          Phase phase, const std::vector<Ref>& inputs,
                          std::vector<TensorInfo> outputs, double flops,
                          const std::vector<OpId>& control_inputs) {
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
OpId Expander::AddSpec(OpSpec s, const std::vector<Ref>& inputs,
                       std::vector<TensorInfo> outputs, double flops,
                       const std::vector<OpId>& control_inputs) {
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

// The gradient of output `index` of `op`, summing contributions; nullopt
// when nothing downstream needs it.
std::optional<Ref> Expander::OutputGradient(OpId op, int index) {
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
  return Ref{AddDerived(op, prefix + "AddN" + suffix, "AddN", Phase::kBackward,
                        in, {sum}, flops),
             0};
}

// TF aggregates IndexedSlices by concatenating their values and indices.
Ref Expander::ConcatSparse(OpId op, const std::string& prefix,
                           const std::string& suffix,
                           const std::vector<Ref>& in) {
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
  const OpId i =
      AddDerived(op, prefix + "concat_1" + suffix, "ConcatV2", Phase::kBackward,
                 indices, {Info({rows}, DataType::kInt32)}, 0);
  sparse_indices_[Key({v, 0})] = {i, 0};
  return {v, 0};
}

int64_t Expander::Key(Ref r) {
  return (static_cast<int64_t>(r.op) << 8) | static_cast<int64_t>(r.output);
}

Ref Expander::X(int k) const {
  const EdgeId e = c_.inputs[k];
  const OpId src = f_.edge_src(e);
  return {src, f_.edge_tensor(e) - f_.output(src, 0)};
}

const TensorInfo& Expander::XInfo(int k) const {
  return f_.tensor(f_.edge_tensor(c_.inputs[k]));
}

const TensorInfo& Expander::YInfo(int i) const {
  return f_.tensor(f_.output(c_.op, i));
}

// Whether the recipe builds a gradient for input k: always for a float
// input when gated (TF runs the whole gradient function), else only when
// its producer needs one.
bool Expander::Wants(int k) const {
  if (k >= NumInputs() || !CarriesGradient(c_.inputs[k])) return false;
  return options_.gate_gradients || needs_[f_.edge_src(c_.inputs[k])];
}

// Adds "gradients/<op>_grad/<base>[_n]" reading `inputs`.
OpId Expander::EmitOp(const std::string& base, const std::string& type,
                      const std::vector<Ref>& inputs,
                      std::vector<TensorInfo> outputs, double flops,
                      const std::vector<OpId>& control_inputs) {
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

Ref Expander::Emit(const std::string& base, const std::string& type,
                   const std::vector<Ref>& inputs, const TensorInfo& output,
                   double flops) {
  return {EmitOp(base, type, inputs, {output}, flops), 0};
}

// An op TF builds under control_dependencies([grad]): it waits for the
// output gradient instead of running (and holding its result) as soon as
// the forward tensors it reads exist.
Ref Expander::EmitAfterGradient(const std::string& base,
                                const std::string& type,
                                const std::vector<Ref>& inputs,
                                const TensorInfo& output, double flops) {
  return {EmitOp(base, type, inputs, {output}, flops, {Dy().op}), 0};
}

Ref Expander::EmitConst(const std::string& base, TensorInfo t) {
  return Emit(base, "Const", {}, t, 0);
}

Ref Expander::ShapeOf(Ref x) {
  return Emit("Shape", "Shape", {x}, ShapeVector(TensorOf(x).shape.size()), 0);
}

Ref Expander::ZerosLike(Ref x) {
  return Emit("zeros_like", "ZerosLike", {x}, TensorOf(x),
              Elements(TensorOf(x)));
}

// Reshape of `x` to `shape` (a shape tensor), typed like `like`.
Ref Expander::ReshapeTo(Ref x, Ref shape, const TensorInfo& like) {
  return Emit("Reshape", "Reshape", {x, shape}, like, 0);
}

void Expander::AddGradients(OpId op) {
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
Ref Expander::Densified(Ref g, TensorId t) {
  auto it = sparse_indices_.find(Key(g));
  if (it == sparse_indices_.end()) return g;
  const TensorInfo& dense = f_.tensor(t);
  const OpId rows = EmitOp("num_segments", "Const", {}, {IntScalar()}, 0);
  return Emit("UnsortedSegmentSum", "UnsortedSegmentSum",
              {g, it->second, {rows, 0}}, dense, Elements(dense));
}

// control_flow_ops.tuple(): a NoOp after every gradient, and each
// gradient passed on through an Identity that waits for it.
void Expander::Gate() {
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
    g = Ref{EmitOp("tuple/control_dependency", "Identity", {*g}, {TensorOf(*g)},
                   0, {gate}),
            0};
    if (sparse) sparse_indices_[Key(*g)] = indices;
  }
}

}  // namespace dplace::training_internal

namespace dplace {

StatusOr<Graph> ExpandForTraining(const Graph& forward,
                                  const TrainingOptions& options) {
  return training_internal::Expander(forward, options).Expand();
}

}  // namespace dplace
