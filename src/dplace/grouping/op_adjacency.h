// Internal to the grouping module: the undirected, weighted op graph that
// the k-way groupers partition. Not part of the public interface.
#ifndef DPLACE_GROUPING_OP_ADJACENCY_H_
#define DPLACE_GROUPING_OP_ADJACENCY_H_

#include <cstdint>
#include <vector>

#include "dplace/graph/graph.h"

namespace dplace::grouping_internal {

// CSR: the neighbours of op v are neighbors[offsets[v] .. offsets[v + 1]),
// ascending, without v itself and without duplicates; bytes[i] is the
// weight of the pair: the bytes of the tensors between the two ops in
// either direction, each tensor once per consumer op (0 when only control
// edges join them). Symmetric: the pair appears from both ends.
struct OpAdjacency {
  std::vector<int32_t> offsets;
  std::vector<OpId> neighbors;
  std::vector<int64_t> bytes;

  int num_ops() const { return static_cast<int>(offsets.size()) - 1; }
  int degree(OpId v) const { return offsets[v + 1] - offsets[v]; }
};

OpAdjacency MakeOpAdjacency(const Graph& graph);

}  // namespace dplace::grouping_internal

#endif  // DPLACE_GROUPING_OP_ADJACENCY_H_
