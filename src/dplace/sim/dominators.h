// Immediate dominators of a graph's ops, for the memory-aware path bound
// (path_bound.cc), which computes an op's functions again from the op that
// dominates it. Internal to the bound.
#ifndef DPLACE_SIM_DOMINATORS_H_
#define DPLACE_SIM_DOMINATORS_H_

#include <cstdint>
#include <vector>

#include "dplace/graph/graph.h"

namespace dplace::sim_detail {

// Whether u is a source op whose tensors go to one op only (a weight): it
// belongs to that op and takes no part in domination.
inline bool OwnSource(const Graph& g, OpId u) {
  if (!g.in_edges(u).empty()) return false;
  const Span<EdgeId> out = g.out_edges(u);
  for (EdgeId e : out) {
    if (g.edge_dst(e) != g.edge_dst(out[0])) return false;
  }
  return true;
}

// Immediate dominators of a DAG below a virtual root joined to its sources,
// OwnSource ops left out: -1 where only the root dominates. Every path to v
// from a source that is not its own passes idom[v]; so an op that reaches
// v without passing idom[v] is not an ancestor of it, nor is its own
// source (their bytes are not in idom[v]'s run). depth[v]: v's depth in the
// dominator tree (the root's children have depth 1).
inline std::vector<OpId> ImmediateDominators(const Graph& g,
                                             std::vector<int32_t>* depth) {
  std::vector<OpId> idom(g.num_ops(), -1);
  depth->assign(g.num_ops(), 1);
  auto intersect = [&](OpId a, OpId b) {
    while (a != b) {
      if (a < 0 || b < 0) return OpId{-1};
      if ((*depth)[a] >= (*depth)[b]) {
        a = idom[a];
      } else {
        b = idom[b];
      }
    }
    return a;
  };
  for (OpId v : g.topological_order()) {
    bool first = true;
    OpId d = -1;
    for (EdgeId e : g.in_edges(v)) {
      const OpId u = g.edge_src(e);
      if (OwnSource(g, u)) continue;
      d = first ? u : intersect(d, u);
      first = false;
      if (d < 0) break;
    }
    idom[v] = d;
    (*depth)[v] = d < 0 ? 1 : (*depth)[d] + 1;
  }
  return idom;
}

}  // namespace dplace::sim_detail

#endif  // DPLACE_SIM_DOMINATORS_H_
