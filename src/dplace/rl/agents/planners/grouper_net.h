// The planners' groupers (Hierarchical Planner, Mirhoseini et al. 2018;
// EAGLE, Lan et al.): op embeddings, the feed-forward grouper over them, and
// the group embeddings a placer reads once ops are grouped.
//
// The grouper groups *units*, not single ops: a unit is a group of the
// search's fixed grouping (by default the graph's hard co-location hints:
// a forward op with its gradient ops, a parameter with its update), so ops
// that must share a device always share a group. A unit's logits are the
// mean of its ops' logits, so every op still has its own embedding.
//
//   OpFeatures f = MakeOpFeatures(graph, units, cluster, 200);
//   GrouperNet grouper(f.vocabulary, config);
//   torch::Tensor logits = grouper->UnitLogits(f, grouper->Hidden(f));
//   ... sample a group per unit: g [U] int64 ...
//   PlacerInput in = MakeGroupEmbeddings(f, g, 256);
#ifndef DPLACE_RL_AGENTS_PLANNERS_GROUPER_NET_H_
#define DPLACE_RL_AGENTS_PLANNERS_GROUPER_NET_H_

#include <torch/torch.h>

#include <cstdint>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"
#include "dplace/grouping/grouping.h"
#include "dplace/rl/agents/planners/placer_net.h"

namespace dplace {

// Outputs and dims per output in an op's shape vector, and neighbours per
// direction in its adjacency vector (the Hierarchical Planner's 6 x 4 and
// 6 + 6).
constexpr int kEmbeddedOutputs = 6;
constexpr int kEmbeddedDims = 4;
constexpr int kEmbeddedNeighbours = 6;

// Fixed inputs of a grouper, built once per search. N ops, U units.
struct OpFeatures {
  int64_t num_ops = 0;
  int64_t num_units = 0;
  // Op types: the `vocabulary - 1` most frequent types of the graph get an
  // index each; every other type shares the last one.
  int64_t vocabulary = 0;
  torch::Tensor type_ids;  // [N] int64.
  // [N, 24]: log(1 + dim) of the first 4 dims of the first 6 outputs, -1
  // where an op has fewer outputs or dims.
  torch::Tensor shapes;
  // [N, 12]: breadth-first index / N of the first 6 producers, then of the
  // first 6 consumers (data or control), -1 where there are fewer.
  torch::Tensor adjacency;
  torch::Tensor unit;  // [N] int64: the unit of every op.
  // Per unit, for group embeddings: op counts, type counts [U, V], summed
  // output shapes without the padding [U, 24].
  torch::Tensor unit_ops;
  torch::Tensor unit_type_counts;
  torch::Tensor unit_shape_sums;
  // Edges between ops, aggregated per (unit, unit) pair: [E] int64 each,
  // and [E] float counts. Pairs within one unit included.
  torch::Tensor edge_src, edge_dst, edge_count;
  // [U, D] float: 1 where a unit has an op device d's kind forbids.
  torch::Tensor unit_forbids;
};

OpFeatures MakeOpFeatures(const Graph& graph, const Grouping& units,
                          const Cluster& cluster, int max_types);

// The placer's view of a grouping `group` ([U] int64 in [0, num_groups)):
// per group the counts of each op type, summed output shapes, and the
// counts of op edges to and from every group (the grouper's dag matrix and
// its transpose), each block divided by (its row's largest value + 1) as
// TensorFlow's grappler does; devices every unit of the group allows (all,
// when none suits every unit); which groups have ops. No gradient; `link`
// is left undefined.
PlacerInput MakeGroupEmbeddings(const OpFeatures& features,
                                const torch::Tensor& group, int num_groups);

// Mean of `per_op` [N, H] over the ops of every group, [num_groups, H];
// zero for empty groups. Differentiable in `per_op`.
torch::Tensor GroupMeans(const OpFeatures& features, const torch::Tensor& group,
                         int num_groups, const torch::Tensor& per_op);

struct GrouperConfig {
  int type_embedding = 20;  // Default: 20 (HP).
  int hidden = 64;          // Default: 64 (HP, EAGLE).
  int layers = 1;           // Hidden layers. Default: 1.
  int outputs = 256;        // Groups (or devices, for the Simple Planner).
  // Width of the per-unit inputs Hidden appends to every op's embedding
  // (the planners' best placement so far, one-hot, for options warm_start
  // and imitate_best). Default: 0.
  int unit_inputs = 0;
};

// Feed-forward: op embedding (learned type embedding, shapes, adjacency)
// -> `layers` x (Linear, ReLU) -> Linear to `outputs` logits.
class GrouperNetImpl : public torch::nn::Module {
 public:
  GrouperNetImpl(int64_t vocabulary, const GrouperConfig& config);

  // The last hidden layer of every op, [N, hidden]. `unit_inputs`
  // [U, unit_inputs] is appended to the embedding of every op of a unit;
  // undefined when the config has none.
  torch::Tensor Hidden(const OpFeatures& features,
                       const torch::Tensor& unit_inputs = {});
  // Logits of every unit, [U, outputs]: the mean over its ops of the
  // output layer applied to `hidden` (computed as the output layer of the
  // unit's mean hidden state).
  torch::Tensor UnitLogits(const OpFeatures& features,
                           const torch::Tensor& hidden);

 private:
  torch::nn::Embedding type_embedding_{nullptr};
  torch::nn::Sequential layers_{nullptr};
  torch::nn::Linear output_{nullptr};
};
TORCH_MODULE(GrouperNet);

}  // namespace dplace

#endif  // DPLACE_RL_AGENTS_PLANNERS_GROUPER_NET_H_
