// The inputs of an op in a pinned region of the forced-transfer path bound
// (path_bound.cc: the ops between an op v and the op w that dominates it,
// each knowing whether it shares w's device) and how their functions
// combine into what the op needs. Internal to the bound.
#ifndef DPLACE_SIM_REGION_INPUTS_H_
#define DPLACE_SIM_REGION_INPUTS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/sim/step_function.h"

namespace dplace::sim_detail {

// Regions of at most this many ops sum their branches' memory.
constexpr size_t kMaxSummedRegion = 512;

// An input op of an op in a pinned region: its function on the op's
// device and its arrival from another device.
struct RegionInput {
  OpId op;
  const StepFn* same;
  double moved;
  const Front* front = nullptr;  // On w's device: with busy times.
  // For an op on w's device, the input elsewhere: the least time w's link
  // is busy with the tensors that left on the way to it (ExitFloors).
  double own = 0;
};

// Per op of the region: the region's ops it reaches backwards (itself
// included), as bits of their index; empty when the region is too large
// to sum its branches' memory.
inline std::vector<std::vector<uint64_t>> RegionAncestors(
    const std::vector<OpId>& region, const std::unordered_map<OpId, int>& index,
    const Graph& g) {
  std::vector<std::vector<uint64_t>> bits;
  if (region.size() > kMaxSummedRegion) return bits;
  const size_t words = (region.size() + 63) / 64;
  bits.assign(region.size(), std::vector<uint64_t>(words, 0));
  for (size_t i = 0; i < region.size(); ++i) {  // Topological order.
    bits[i][i / 64] |= uint64_t{1} << (i % 64);
    for (EdgeId e : g.in_edges(region[i])) {
      const auto it = index.find(g.edge_src(e));
      if (it == index.end()) continue;  // w.
      for (size_t k = 0; k < words; ++k) bits[i][k] |= bits[it->second][k];
    }
  }
  return bits;
}

// Whether the inputs' ops in the region (w aside) share no op: disjoint
// branches from w, whose runs on one device add up.
inline bool Disjoint(const std::vector<RegionInput>& inputs, OpId w,
                     const std::vector<std::vector<uint64_t>>& ancestors,
                     const std::unordered_map<OpId, int>& index) {
  bool disjoint = !ancestors.empty() && inputs.size() > 1;
  for (size_t a = 0; a < inputs.size() && disjoint; ++a) {
    if (inputs[a].op == w) continue;
    const std::vector<uint64_t>& x = ancestors[index.at(inputs[a].op)];
    for (size_t b = a + 1; b < inputs.size() && disjoint; ++b) {
      if (inputs[b].op == w) continue;
      const std::vector<uint64_t>& y = ancestors[index.at(inputs[b].op)];
      for (size_t k = 0; k < x.size(); ++k) disjoint &= (x[k] & y[k]) == 0;
    }
  }
  return disjoint;
}

// What an op needs of its inputs as a function of the memory of its
// device before it: each input on that device (its function) or not (its
// arrival), the largest over inputs. Where the inputs' ops in the region
// share no op (disjoint branches from w), the device holds all their
// runs at once: their memories beyond `base` (w's run, for ops on w's
// device) add up; otherwise only the largest counts.
inline StepFn Combine(const std::vector<RegionInput>& inputs, int64_t base,
                      OpId w,
                      const std::vector<std::vector<uint64_t>>& ancestors,
                      const std::unordered_map<OpId, int>& index,
                      int max_steps) {
  const bool disjoint = Disjoint(inputs, w, ancestors, index);
  if (!disjoint) {
    StepFn need{{0, 0}};
    for (const RegionInput& in : inputs) {
      need = Max(need, MinWith(*in.same, in.moved));
      if (need.empty()) break;
    }
    return need;
  }
  StepFn need{{base, 0}};
  for (const RegionInput& in : inputs) {
    // On the device: memories add beyond base; elsewhere: its arrival.
    StepFn both;
    for (const Step& h : need) {
      for (const Step& f : *in.same) {
        if (f.m < base) continue;
        both.push_back({h.m + f.m - base, std::max(h.g, f.g)});
      }
    }
    std::sort(both.begin(), both.end(), [](const Step& x, const Step& y) {
      return x.m != y.m ? x.m < y.m : x.g < y.g;
    });
    StepFn together;
    for (const Step& step : both) {
      if (together.empty() || step.g < together.back().g) {
        if (!together.empty() && together.back().m == step.m) {
          together.back().g = step.g;
        } else {
          together.push_back(step);
        }
      }
    }
    StepFn apart = need;
    for (Step& step : apart) step.g = std::max(step.g, in.moved);
    if (in.moved == kInfinity) apart.clear();
    need = Min(together, apart);
    RoundDown(&need, max_steps);
    if (need.empty()) break;
  }
  return need;
}

// Combine for an op on w's device, with each input's front: the busy
// times of the inputs' ops on that device add up where their branches
// are disjoint (as their memories do); where they share ops, they add up
// less the shared ops' (`busy` and `bytes` per op of the region: at most
// all of those are on w's device, counted on both sides), and never fall
// below the largest; an input elsewhere brings none.
inline Front CombineOnW(const std::vector<RegionInput>& inputs, int64_t base,
                        OpId w,
                        const std::vector<std::vector<uint64_t>>& ancestors,
                        const std::unordered_map<OpId, int>& index,
                        const std::vector<double>& busy,
                        const std::vector<int64_t>& bytes, int max_points,
                        double weight) {
  const bool disjoint = Disjoint(inputs, w, ancestors, index);
  Front need{{disjoint ? base : 0, 0, 0}};
  // The previous inputs' ops in the region (with `ancestors`).
  std::vector<uint64_t> before;
  if (!ancestors.empty()) before.assign(ancestors[0].size(), 0);
  for (const RegionInput& in : inputs) {
    // What this input shares with the previous ones; everything where
    // the region is too large to know.
    double shared_busy = kInfinity;
    int64_t shared_bytes = std::numeric_limits<int64_t>::max() / 4;
    if (!before.empty()) {
      shared_busy = 0;
      shared_bytes = 0;
      const auto it = index.find(in.op);  // w: none.
      for (size_t k = 0; k < before.size() && it != index.end(); ++k) {
        const uint64_t mine = ancestors[it->second][k];
        for (uint64_t both = mine & before[k]; both != 0; both &= both - 1) {
          const size_t i = k * 64 + static_cast<size_t>(__builtin_ctzll(both));
          shared_busy += busy[i];
          shared_bytes += bytes[i];
        }
        before[k] |= mine;
      }
    }
    Front next;
    for (const Point& h : need) {
      for (const Point& f : *in.front) {
        if (disjoint) {
          if (f.m < base) continue;
          next.push_back(
              {h.m + f.m - base, std::max(h.g, f.g), h.b + f.b, h.x + f.x});
        } else {
          next.push_back({std::max({h.m, f.m, h.m + f.m - base - shared_bytes}),
                          std::max(h.g, f.g),
                          std::max({h.b, f.b, h.b + f.b - shared_busy}),
                          std::max(h.x, f.x)});
        }
      }
      if (in.moved < kInfinity) {
        next.push_back({h.m, std::max(h.g, in.moved), h.b,
                        disjoint ? h.x + in.own : std::max(h.x, in.own)});
      }
    }
    Prune(&next);
    Thin(&next, max_points, weight);
    need.swap(next);
    if (need.empty()) break;
  }
  return need;
}

}  // namespace dplace::sim_detail

#endif  // DPLACE_SIM_REGION_INPUTS_H_
