#include "dplace/sim/path_bound.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "dplace/sim/device_classes.h"

namespace dplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Memory of a class that never binds (more than the graph's persistent
// bytes): far from int64's end, so shifts cannot overflow.
constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;

// A non-increasing step function of m >= 0: infinity below steps[0].m, and
// steps[i].g on [steps[i].m, steps[i + 1].m). Empty: infinity everywhere.
struct Step {
  int64_t m;
  double g;
};
using StepFn = std::vector<Step>;

double Smallest(const StepFn& f) { return f.empty() ? kInfinity : f.back().g; }

// f(m - s), only up to m <= hi.
StepFn Shifted(const StepFn& f, int64_t s, int64_t hi) {
  StepFn out;
  for (const Step& step : f) {
    if (step.m > hi - s) break;
    out.push_back({step.m + s, step.g});
  }
  return out;
}

// min(f(m), k) for every m >= 0.
StepFn MinWith(const StepFn& f, double k) {
  if (k == kInfinity) return f;
  StepFn out{{0, k}};
  for (const Step& step : f) {
    if (step.g >= k) continue;
    if (step.m == 0) out.clear();
    out.push_back(step);
  }
  return out;
}

// The value of f at m.
double At(const StepFn& f, int64_t m) {
  double g = kInfinity;
  for (const Step& step : f) {
    if (step.m > m) break;
    g = step.g;
  }
  return g;
}

// max(a(m), b(m)): non-increasing again.
StepFn Max(const StepFn& a, const StepFn& b) {
  if (a.empty() || b.empty()) return {};
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
    const double g = std::max(ga, gb);
    if (g == kInfinity) continue;
    if (out.empty() || g < out.back().g) out.push_back({m, g});
  }
  return out;
}

// f on [lo, hi], infinity outside.
StepFn Restricted(const StepFn& f, int64_t lo, int64_t hi) {
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
void RoundDown(StepFn* f, int max_steps) {
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

// The memory a run on each class may hold: the devices' capacity, or
// kUnlimited where a device holds every persistent byte and the largest
// op's outputs at once (memory never binds there).
std::vector<int64_t> RunCapacities(const CostModel& cost,
                                   const DeviceClasses& classes) {
  const Graph& g = cost.graph();
  const int64_t persistent = g.total_persistent_bytes();
  int64_t largest_op = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    int64_t bytes = g.temporary_bytes(op);
    for (int i = 0; i < g.num_outputs(op); ++i) {
      bytes += g.tensor_bytes(g.output(op, i));
    }
    largest_op = std::max(largest_op, bytes);
  }
  std::vector<int64_t> capacity;
  for (int c = 0; c < classes.num(); ++c) {
    const int64_t memory =
        cost.cluster().device(classes.representative(c)).memory_bytes;
    capacity.push_back(memory - largest_op >= persistent ? kUnlimited : memory);
  }
  return capacity;
}

// The cheapest transfer of `bytes` (a control edge: nullopt bytes) between
// two distinct devices of classes a and b: over the lines latency + bytes x
// seconds per byte of every such pair of devices.
class TransferTable {
 public:
  TransferTable(const CostModel& cost, const DeviceClasses& classes)
      : num_classes_(classes.num()),
        lines_(static_cast<size_t>(num_classes_) * num_classes_) {
    constexpr int64_t kProbe = int64_t{1} << 20;
    for (int a = 0; a < num_classes_; ++a) {
      for (int b = 0; b < num_classes_; ++b) {
        std::vector<Line>& lines = lines_[Index(a, b)];
        for (DeviceId from : classes.members[a]) {
          for (DeviceId to : classes.members[b]) {
            if (from == to) continue;
            const double latency = cost.RouteLatency(from, to);
            const double per_byte =
                (cost.TransferTime(kProbe, from, to) - latency) / kProbe;
            lines.push_back({latency, per_byte, from, to});
          }
        }
        std::sort(lines.begin(), lines.end(), [](const Line& x, const Line& y) {
          return x.latency != y.latency ? x.latency < y.latency
                                        : x.per_byte < y.per_byte;
        });
        // Keep the lower envelope's candidates: a line no cheaper per byte
        // than one of lower latency is never the minimum.
        std::vector<Line> kept;
        for (const Line& line : lines) {
          if (kept.empty() || line.per_byte < kept.back().per_byte) {
            kept.push_back(line);
          }
        }
        lines = std::move(kept);
      }
    }
  }

  // Infinity when the classes have no two distinct devices.
  double Seconds(const CostModel& cost, int a, int b, bool control,
                 int64_t bytes) const {
    double best = kInfinity;
    for (const Line& line : lines_[Index(a, b)]) {
      // The cost model's own sum, so that the bound never exceeds the
      // simulator by rounding.
      best = std::min(best, control
                                ? cost.RouteLatency(line.from, line.to)
                                : cost.TransferTime(bytes, line.from, line.to));
    }
    return best;
  }

 private:
  struct Line {
    double latency;
    double per_byte;
    DeviceId from, to;
  };
  size_t Index(int a, int b) const {
    return static_cast<size_t>(a) * num_classes_ + b;
  }
  int num_classes_;
  std::vector<std::vector<Line>> lines_;
};

}  // namespace

double MemoryPathBound(const CostModel& cost, const PathBoundOptions& options) {
  const Graph& g = cost.graph();
  const DeviceClasses classes = ClassesOf(cost);
  const std::vector<int64_t> capacity = RunCapacities(cost, classes);
  const TransferTable transfers(cost, classes);
  const int num_classes = classes.num();
  const int n = g.num_ops();
  // F(v, c), freed once every consumer of v has read it; G*(v, c).
  std::vector<StepFn> f(static_cast<size_t>(n) * num_classes);
  std::vector<double> smallest(static_cast<size_t>(n) * num_classes, kInfinity);
  std::vector<int32_t> readers_left(n, 0);
  for (EdgeId e = 0; e < g.num_edges(); ++e) ++readers_left[g.edge_src(e)];
  double bound = 0;
  for (OpId v : g.topological_order()) {
    int64_t extra = g.temporary_bytes(v);
    for (int i = 0; i < g.num_outputs(v); ++i) {
      extra += g.tensor_bytes(g.output(v, i));
    }
    const int64_t s = g.persistent_bytes(v);
    double best = kInfinity;
    for (int c = 0; c < num_classes; ++c) {
      const double time = cost.OpTime(v, classes.representative(c));
      const int64_t hi =
          capacity[c] == kUnlimited ? kUnlimited : capacity[c] - extra;
      if (time == kInfinity || s > hi) continue;
      StepFn need{{0, 0}};
      for (EdgeId e : g.in_edges(v)) {
        const OpId u = g.edge_src(e);
        const bool control = g.is_control(e);
        const int64_t bytes = control ? 0 : g.tensor_bytes(g.edge_tensor(e));
        double moved = kInfinity;  // u on another device.
        for (int from = 0; from < num_classes; ++from) {
          const double at_u =
              smallest[static_cast<size_t>(u) * num_classes + from];
          if (at_u == kInfinity) continue;
          moved = std::min(
              moved, at_u + transfers.Seconds(cost, from, c, control, bytes));
        }
        const StepFn& at_u = f[static_cast<size_t>(u) * num_classes + c];
        need = Max(need, MinWith(Shifted(at_u, s, hi), moved));
        if (need.empty()) break;
      }
      StepFn result = Restricted(need, s, hi);
      for (Step& step : result) step.g += time;
      RoundDown(&result, options.max_steps);
      const size_t k = static_cast<size_t>(v) * num_classes + c;
      smallest[k] = Smallest(result);
      best = std::min(best, smallest[k]);
      f[k] = std::move(result);
    }
    bound = std::max(bound, best);
    for (EdgeId e : g.in_edges(v)) {
      const OpId u = g.edge_src(e);
      if (--readers_left[u] > 0) continue;
      for (int c = 0; c < num_classes; ++c) {
        StepFn().swap(f[static_cast<size_t>(u) * num_classes + c]);
      }
    }
  }
  return bound;
}

}  // namespace dplace
