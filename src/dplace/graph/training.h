// Training expansion: a forward graph becomes the graph of one training
// step (forward, backward, update), as TensorFlow 1.x's gradients and
// optimizers build it.
//
// Conventions of the forward graph: every op is in the forward phase;
// variables are ops of type "VariableV2" (their output 0 is the variable,
// their persistent bytes its storage), optionally read through one Identity
// (TF's "<variable>/read"); the loss is every sink (op whose outputs nobody
// consumes) that depends on a variable, except state updates (Assign,
// AssignAdd, AssignSub). A variable is trained when a loss depends on it
// through differentiable ops; non-differentiable ops (StopGradient, Shape,
// Floor, RandomUniform, comparisons, ...) and integer tensors pass no
// gradient. Batch norm's moving statistics, which only feed AssignSub, are
// therefore not trained.
#ifndef DPLACE_GRAPH_TRAINING_H_
#define DPLACE_GRAPH_TRAINING_H_

#include <optional>
#include <string_view>

#include "dplace/graph/graph.h"

namespace dplace {

inline constexpr std::string_view kParameterOpType = "VariableV2";

enum class Optimizer { kSgd, kMomentum, kRmsProp, kAdam, kAdamWeightDecay };
// "sgd", "momentum", "rmsprop", "adam", "adamw".
std::string_view OptimizerName(Optimizer optimizer);
std::optional<Optimizer> ParseOptimizer(std::string_view name);
// Optimizer slots per parameter element: sgd 0, momentum 1, rmsprop 2 (mean
// square and momentum, as TF's RMSProp), adam and adamw 2 (m and v).
int OptimizerSlots(Optimizer optimizer);

struct TrainingOptions {
  Optimizer optimizer = Optimizer::kSgd;  // Default: sgd.
  // Gate the input gradients of every op that has several with a tuple (a
  // NoOp and an Identity per gradient), as Optimizer.minimize() and
  // compute_gradients() do by default (GATE_OP). A gated op's gradient
  // function runs in full, so inputs that need no gradient get one too, as
  // in TF. tf.gradients() does not gate. Default: false.
  bool gate_gradients = false;
  // Clip the gradients by their global norm before the update
  // (tf.clip_by_global_norm: an L2Loss per gradient, the norm, then a Mul
  // and an Identity per gradient). Every gradient is then held until the
  // last one is computed. Default: false.
  bool clip_by_global_norm = false;
};

// Returns forward + backward + update ops:
// - Forward ops are copied unchanged (same ids, names, edges).
// - For every forward op on a differentiable path from a variable to a
//   loss, the ops of its TensorFlow gradient function, named
//   "gradients/<op>_grad/<name>" (e.g. for Mul: Shape, Shape_1,
//   BroadcastGradientArgs, mul, Sum, Reshape, ...; for Mean the reduced
//   shape arithmetic, Reshape, Tile and the division), in the op's scope
//   and colocation group (a hint to keep them together). Each carries its
//   FLOPs, bytes and output shapes, and consumes the forward tensors its
//   math needs, which keeps those activations alive until it ran. ONNX
//   operators (Conv and ConvTranspose with or without bias, Gemm, the
//   normalizations, Div, Erf, Where, Einsum, LSTM/GRU/RNN) get one op per
//   input gradient costed by formula: products cost the forward's
//   multiply-adds, a bias's gradient is a reduction (one add per output
//   element). Other op types without a known gradient get one op per
//   input, "<Type>Grad", with the forward op's FLOPs.
// - An "AddN" where a tensor's gradient has several contributions (TF's
//   default aggregation: all contributions are held until the last one is
//   computed), the seed of each loss (Shape, Const, Fill).
// - Per trained variable its update, colocated with the variable: one op
//   ("<variable>/Apply<Optimizer>", the optimizer's slots in its persistent
//   bytes) or, for adamw (BERT's AdamWeightDecayOptimizer), the arithmetic
//   and assignments TF builds ("<variable>/adam_m_mul", ...); sparse
//   gradients (of embedding lookups) are de-duplicated first. Updates take
//   the variable's read when it has one.
// Errors: a graph that already has backward or update ops, or no variable
// that reaches a loss.
StatusOr<Graph> ExpandForTraining(const Graph& forward,
                                  const TrainingOptions& options = {});

}  // namespace dplace

#endif  // DPLACE_GRAPH_TRAINING_H_
