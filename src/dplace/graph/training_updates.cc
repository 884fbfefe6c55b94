// Gradient clipping and the optimizers' updates of the training expansion
// (training_expander.h), and the optimizers' names and slots (training.h).
#include <array>
#include <string>

#include "dplace/graph/training_expander.h"

namespace dplace::training_internal {
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

}  // namespace

// tf.clip_by_global_norm: half squared norm of each gradient (L2Loss),
// summed, global norm, the scale, and each gradient scaled (Mul) and
// passed on (Identity).
void Expander::ClipByGlobalNorm() {
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
                             const std::vector<Ref>& inputs, TensorInfo output,
                             double flops) {
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
  const Ref inverse = scalar_op("truediv", "RealDiv", {one, norm}, Info({}), 1);
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
Ref Expander::VariableValue(OpId variable) const {
  OpId read = -1;
  int consumers = 0;
  for (EdgeId e : f_.out_edges(variable)) {
    if (f_.is_control(e)) continue;
    ++consumers;
    if (f_.op_type(f_.edge_dst(e)) == "Identity") read = f_.edge_dst(e);
  }
  return consumers == 1 && read >= 0 ? Ref{read, 0} : Ref{variable, 0};
}

void Expander::AddUpdate(const ParameterGradient& p) {
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
  const std::string type = (sparse ? "Sparse" : "") + std::string(info.op_type);
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
void Expander::AddAdamWeightDecay(OpId param, Ref gradient) {
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

}  // namespace dplace::training_internal

namespace dplace {

std::string_view OptimizerName(Optimizer optimizer) {
  return training_internal::InfoOf(optimizer).name;
}

std::optional<Optimizer> ParseOptimizer(std::string_view name) {
  for (size_t i = 0; i < training_internal::kOptimizers.size(); ++i) {
    if (training_internal::kOptimizers[i].name == name) {
      return static_cast<Optimizer>(i);
    }
  }
  return std::nullopt;
}

int OptimizerSlots(Optimizer optimizer) {
  return training_internal::InfoOf(optimizer).slots;
}

}  // namespace dplace
