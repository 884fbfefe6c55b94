// The asynchronous fluid-communities grouper (Parés et al., "Fluid
// Communities: a competitive, scalable and diverse community detection
// algorithm", 2017), EAGLE's networkx baseline (Lan et al., sec. III-B).
//
// Differences from networkx's asyn_fluidc, on purpose:
// - It stops after a pass in which no op changed community, as the paper
//   says; networkx sets a convergence flag it never reads and always runs
//   max_iter passes.
// - Ties between summed densities are judged relative to the largest
//   (1e-9), not within networkx's absolute 1e-4, which on graphs of tens of
//   thousands of ops (densities near 1e-3) calls unequal densities equal.
// - It accepts disconnected graphs (virtual edges join the components) and
//   makes every community connected afterwards.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dplace/grouping/grouping.h"
#include "dplace/grouping/op_adjacency.h"

namespace dplace {
namespace {

constexpr int32_t kUnassigned = -1;

// Plain adjacency lists (no weights: the algorithm is unweighted).
using Adjacency = std::vector<std::vector<int32_t>>;

// The op graph's neighbours, plus virtual edges that chain its connected
// components (lowest op of each to the lowest op of the next).
Adjacency ConnectedAdjacency(const Graph& graph) {
  const grouping_internal::OpAdjacency adj =
      grouping_internal::MakeOpAdjacency(graph);
  const int n = adj.num_ops();
  Adjacency out(n);
  for (int v = 0; v < n; ++v) {
    out[v].assign(adj.neighbors.begin() + adj.offsets[v],
                  adj.neighbors.begin() + adj.offsets[v + 1]);
  }
  std::vector<char> seen(n, 0);
  std::vector<int32_t> queue;
  int32_t previous_root = -1;
  for (int32_t root = 0; root < n; ++root) {
    if (seen[root]) continue;
    seen[root] = 1;
    queue.assign(1, root);
    for (size_t head = 0; head < queue.size(); ++head) {
      for (int32_t w : out[queue[head]]) {
        if (!seen[w]) {
          seen[w] = 1;
          queue.push_back(w);
        }
      }
    }
    if (previous_root >= 0) {
      out[previous_root].push_back(root);
      out[root].push_back(previous_root);
    }
    previous_root = root;
  }
  return out;
}

// Uniform in [0, n), portable: std::uniform_int_distribution differs
// between standard libraries, and the same seed must give the same groups
// everywhere. The modulo bias (n / 2^64) does not matter here.
int32_t UniformIndex(std::mt19937_64& rng, size_t n) {
  return static_cast<int32_t>(rng() % n);
}

void Shuffle(std::vector<int32_t>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[UniformIndex(rng, i)]);
  }
}

// The fluid dynamics proper; returns each op's community (some may remain
// kUnassigned only if max_iterations ran out before the fluids spread).
std::vector<int32_t> RunFluids(const Adjacency& adj, int k, int max_iterations,
                               std::mt19937_64& rng) {
  const int n = static_cast<int>(adj.size());
  std::vector<int32_t> community(n, kUnassigned);
  std::vector<int32_t> size(k, 1);
  std::vector<double> density(k, 1.0);
  std::vector<int32_t> order(n);
  for (int v = 0; v < n; ++v) order[v] = v;
  Shuffle(order, rng);
  for (int c = 0; c < k; ++c) community[order[c]] = c;

  std::vector<double> score(k, 0.0);
  std::vector<int32_t> touched, best;
  for (int pass = 0; pass < max_iterations; ++pass) {
    Shuffle(order, rng);
    bool changed = false;
    for (int32_t v : order) {
      touched.clear();
      auto add = [&](int32_t c) {
        if (c == kUnassigned) return;
        if (score[c] == 0) touched.push_back(c);
        score[c] += density[c];
      };
      add(community[v]);
      for (int32_t w : adj[v]) add(community[w]);
      if (touched.empty()) continue;

      double max_score = 0;
      for (int32_t c : touched) max_score = std::max(max_score, score[c]);
      best.clear();
      bool keep = false;
      for (int32_t c : touched) {
        if (score[c] >= max_score * (1 - 1e-9)) {
          best.push_back(c);
          keep = keep || c == community[v];
        }
        score[c] = 0;
      }
      if (keep) continue;
      // touched is in neighbour order; sort so the draw does not depend on
      // it beyond the seed.
      std::sort(best.begin(), best.end());
      const int32_t next = best[UniformIndex(rng, best.size())];
      const int32_t previous = community[v];
      if (previous != kUnassigned) {
        // Never empties a community: a lone op's own density (1) is the
        // largest possible score, so it always keeps its community.
        --size[previous];
        density[previous] = 1.0 / size[previous];
      }
      community[v] = next;
      ++size[next];
      density[next] = 1.0 / size[next];
      changed = true;
    }
    if (!changed) break;
  }
  return community;
}

// Keeps each community's largest connected piece (ties: the piece with the
// lowest op), then floods the other ops from their assigned neighbours in
// breadth-first order, so every community is connected on a connected
// graph and none is empty.
void MakeCommunitiesConnected(const Adjacency& adj, int k,
                              std::vector<int32_t>& community) {
  const int n = static_cast<int>(adj.size());
  std::vector<int32_t> piece(n, -1), piece_size, best_piece(k, -1);
  std::vector<int32_t> queue;
  for (int32_t root = 0; root < n; ++root) {
    if (piece[root] >= 0 || community[root] == kUnassigned) continue;
    const int32_t id = static_cast<int32_t>(piece_size.size());
    const int32_t c = community[root];
    piece[root] = id;
    queue.assign(1, root);
    for (size_t head = 0; head < queue.size(); ++head) {
      for (int32_t w : adj[queue[head]]) {
        if (piece[w] < 0 && community[w] == c) {
          piece[w] = id;
          queue.push_back(w);
        }
      }
    }
    piece_size.push_back(static_cast<int32_t>(queue.size()));
    if (best_piece[c] < 0 || piece_size[id] > piece_size[best_piece[c]]) {
      best_piece[c] = id;
    }
  }
  queue.clear();
  for (int32_t v = 0; v < n; ++v) {
    if (community[v] == kUnassigned) continue;
    if (piece[v] == best_piece[community[v]]) {
      queue.push_back(v);
    } else {
      community[v] = kUnassigned;
    }
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    const int32_t v = queue[head];
    for (int32_t w : adj[v]) {
      if (community[w] == kUnassigned) {
        community[w] = community[v];
        queue.push_back(w);
      }
    }
  }
}

}  // namespace

StatusOr<Grouping> FluidGrouping(const Graph& graph,
                                 const FluidGroupingOptions& options) {
  const int n = graph.num_ops();
  const int k = options.num_groups;
  if (k < 1 || k > n) {
    return InvalidArgumentError(
        "fluid grouping: num_groups is " + std::to_string(k) +
        ", expected 1 .. the number of ops (" + std::to_string(n) + ")");
  }
  if (options.max_iterations < 1) {
    return InvalidArgumentError(
        "fluid grouping: max_iterations must be >= 1, got " +
        std::to_string(options.max_iterations));
  }
  const Adjacency adj = ConnectedAdjacency(graph);
  std::mt19937_64 rng(options.seed);
  std::vector<int32_t> community =
      RunFluids(adj, k, options.max_iterations, rng);
  MakeCommunitiesConnected(adj, k, community);
  return MakeGrouping(graph, community);
}

}  // namespace dplace
