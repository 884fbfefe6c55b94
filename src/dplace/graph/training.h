// Training expansion: a forward graph becomes the graph of one training
// step (forward, backward, update), as TensorFlow's gradients and optimizer
// ops would build it.
//
// Conventions of the forward graph: every op is in the forward phase;
// trainable parameters are ops of type "VariableV2" (their output 0 is the
// parameter, their persistent bytes its storage); the loss is every sink (op
// whose outputs nobody consumes) that depends on a parameter.
#ifndef DPLACE_GRAPH_TRAINING_H_
#define DPLACE_GRAPH_TRAINING_H_

#include <optional>
#include <string_view>

#include "dplace/graph/graph.h"

namespace dplace {

inline constexpr std::string_view kParameterOpType = "VariableV2";

enum class Optimizer { kSgd, kMomentum, kRmsProp, kAdam };
std::string_view OptimizerName(Optimizer optimizer);  // "sgd", "adam", ...
std::optional<Optimizer> ParseOptimizer(std::string_view name);
// Optimizer slots per parameter element: sgd 0, momentum 1, rmsprop 2 (mean
// square and momentum, as TF's RMSProp), adam 2 (m and v).
int OptimizerSlots(Optimizer optimizer);

struct TrainingOptions {
  Optimizer optimizer = Optimizer::kSgd;  // Default: sgd.
};

// Returns forward + backward + update ops:
// - Forward ops are copied unchanged (same ids, names, edges).
// - For every forward op on a path from a parameter to the loss, one
//   gradient op per input that needs a gradient, named
//   "gradients/<op>_grad/<input index>", in the op's scope and colocation
//   group (a hint to keep them together). Its output has the input's shape;
//   its FLOPs are the forward op's (so MatMul and convolutions cost 2x
//   forward in backward); it consumes the output gradient and the forward
//   tensors its math needs (other operands of MatMul/Conv/Mul, the output of
//   activations, inputs of pooling and normalisation), which keeps those
//   activations alive until it ran.
// - An "AddN" where a tensor's gradient has several contributions, a seed
//   ("OnesLike") per loss output.
// - One update op per parameter ("<param>/Apply<Optimizer>"), colocated
//   with the parameter; the optimizer's slots add to its persistent bytes.
// Errors: a graph that already has backward or update ops, or no parameter
// that reaches a sink.
StatusOr<Graph> ExpandForTraining(const Graph& forward,
                                  const TrainingOptions& options = {});

}  // namespace dplace

#endif  // DPLACE_GRAPH_TRAINING_H_
