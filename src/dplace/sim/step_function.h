// Non-increasing step functions of a device's memory, the values of the
// memory-aware path bound (path_bound.cc): G(v, c, m), v's earliest finish
// on class c when its run holds at most m bytes. Internal to the bound;
// apart so that the bound reads as its algorithm.
#ifndef DPLACE_SIM_STEP_FUNCTION_H_
#define DPLACE_SIM_STEP_FUNCTION_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace dplace::sim_detail {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A non-increasing step function of m >= 0: infinity below steps[0].m, and
// steps[i].g on [steps[i].m, steps[i + 1].m). Empty: infinity everywhere.
struct Step {
  int64_t m;
  double g;
};
using StepFn = std::vector<Step>;

inline double Smallest(const StepFn& f) {
  return f.empty() ? kInfinity : f.back().g;
}

// f(m - s), only up to m <= hi.
inline StepFn Shifted(const StepFn& f, int64_t s, int64_t hi) {
  StepFn out;
  for (const Step& step : f) {
    if (step.m > hi - s) break;
    out.push_back({step.m + s, step.g});
  }
  return out;
}

// min(f(m), k) for every m >= from; f(m) below it.
inline StepFn MinWith(const StepFn& f, double k, int64_t from = 0) {
  if (k == kInfinity) return f;
  StepFn out;
  for (const Step& step : f) {
    if (step.m >= from) break;
    out.push_back(step);
  }
  const double before = out.empty() ? kInfinity : out.back().g;
  if (k < before) out.push_back({from, k});
  for (const Step& step : f) {
    if (step.m < from || step.g >= std::min(k, before)) continue;
    if (!out.empty() && out.back().m == step.m) out.pop_back();
    out.push_back(step);
  }
  return out;
}

// The value of f at m.
inline double At(const StepFn& f, int64_t m) {
  double g = kInfinity;
  for (const Step& step : f) {
    if (step.m > m) break;
    g = step.g;
  }
  return g;
}

// combine(a(m), b(m)) at every step of either, kept where it falls (both
// are non-increasing, so max and min are too); none before both start.
template <typename Combine>
StepFn Merge(const StepFn& a, const StepFn& b, Combine combine) {
  StepFn out;
  size_t i = 0, j = 0;
  double ga = kInfinity, gb = kInfinity;
  while (i < a.size() || j < b.size()) {
    int64_t m;
    if (j == b.size() || (i < a.size() && a[i].m < b[j].m)) {
      m = a[i].m;
    } else {
      m = b[j].m;
    }
    while (i < a.size() && a[i].m == m) ga = a[i++].g;
    while (j < b.size() && b[j].m == m) gb = b[j++].g;
    const double g = combine(ga, gb);
    if (g == kInfinity) continue;
    if (out.empty() || g < out.back().g) out.push_back({m, g});
  }
  return out;
}

// max(a(m), b(m)): non-increasing again.
inline StepFn Max(const StepFn& a, const StepFn& b) {
  if (a.empty() || b.empty()) return {};
  return Merge(a, b, [](double x, double y) { return std::max(x, y); });
}

// f on [lo, hi], infinity outside.
inline StepFn Restricted(const StepFn& f, int64_t lo, int64_t hi) {
  if (lo > hi) return {};
  StepFn out;
  const double at_lo = At(f, lo);
  if (at_lo < kInfinity) out.push_back({lo, at_lo});
  for (const Step& step : f) {
    if (step.m <= lo) continue;
    if (step.m > hi) break;
    out.push_back(step);
  }
  return out;
}

// At most `max_steps` steps: the step with the smallest drop to the next is
// merged into it (its interval takes the next, lower value), so the function
// only decreases and stays a bound.
inline void RoundDown(StepFn* f, int max_steps) {
  while (static_cast<int>(f->size()) > std::max(1, max_steps)) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < f->size(); ++i) {
      if ((*f)[i].g - (*f)[i + 1].g < (*f)[best].g - (*f)[best + 1].g) {
        best = i;
      }
    }
    (*f)[best + 1].m = (*f)[best].m;
    f->erase(f->begin() + static_cast<std::ptrdiff_t>(best));
  }
}

// min(a(m), b(m)): non-increasing again.
inline StepFn Min(const StepFn& a, const StepFn& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return Merge(a, b, [](double x, double y) { return std::min(x, y); });
}

// Where ops share one device after a common start (the ops of a region on
// its dominator's device, path_bound.cc), their times add up as their
// memories do: a Front keeps, per way of placing them, the run's memory m,
// the finish g, the busy time b of those ops and the time x the device's
// one outgoing link is busy with tensors that leave it for ops elsewhere
// whose results come back, each point not dominated in all four by
// another. Unordered until Prune.
struct Point {
  int64_t m;
  double g;
  double b;
  double x = 0;
};
using Front = std::vector<Point>;

// Drops every point another is at most in m, g, b and x; sorts by m.
inline void Prune(Front* f) {
  std::sort(f->begin(), f->end(), [](const Point& p, const Point& q) {
    if (p.m != q.m) return p.m < q.m;
    if (p.g != q.g) return p.g < q.g;
    return p.b != q.b ? p.b < q.b : p.x < q.x;
  });
  Front kept;
  for (const Point& p : *f) {
    const bool dominated = std::any_of(
        kept.begin(), kept.end(),
        [&](const Point& q) { return q.g <= p.g && q.b <= p.b && q.x <= p.x; });
    if (!dominated) kept.push_back(p);
  }
  f->swap(kept);
}

// At most `max_points` points (after Prune): the two neighbours in m whose
// merge loses least become one at the least of each coordinate, so every
// point is at most one it replaces and the front stays a bound. `weight`
// scales b against g and x in the loss.
inline void Thin(Front* f, int max_points, double weight) {
  const auto loss = [&](const Point& p, const Point& q) {
    return std::abs(p.g - q.g) + weight * std::abs(p.b - q.b) +
           std::abs(p.x - q.x);
  };
  while (static_cast<int>(f->size()) > std::max(1, max_points)) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < f->size(); ++i) {
      if (loss((*f)[i], (*f)[i + 1]) < loss((*f)[best], (*f)[best + 1])) {
        best = i;
      }
    }
    Point& into = (*f)[best];
    const Point& next = (*f)[best + 1];
    into.g = std::min(into.g, next.g);
    into.b = std::min(into.b, next.b);
    into.x = std::min(into.x, next.x);
    f->erase(f->begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

// The least g at each m: the front seen as a step function. Pruned, it
// is sorted by m and, at one m, by g, so a point that does not fall below
// the last kept adds nothing.
inline StepFn Projected(const Front& f) {
  StepFn out;
  for (const Point& p : f) {
    if (out.empty() || p.g < out.back().g) out.push_back({p.m, p.g});
  }
  return out;
}

}  // namespace dplace::sim_detail

#endif  // DPLACE_SIM_STEP_FUNCTION_H_
