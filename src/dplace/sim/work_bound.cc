#include "dplace/sim/work_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dplace/sim/device_classes.h"

namespace dplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The dual bound for class shares theta (theta_c = w_c x slots of class c,
// summing to 1): the sum over ops of min over c of theta_c x t(v, c) / slots
// of c. `scaled` holds t(v, c) / slots of c, op-major.
double Dual(const std::vector<double>& scaled, const std::vector<double>& theta,
            int num_classes) {
  double sum = 0;
  for (size_t i = 0; i < scaled.size(); i += num_classes) {
    double best = kInfinity;
    for (int c = 0; c < num_classes; ++c) {
      const double t = scaled[i + c];
      if (t == kInfinity) continue;
      best = std::min(best, theta[c] * t);
    }
    if (best < kInfinity) sum += best;
  }
  return sum;
}

}  // namespace

double WorkBound(const CostModel& cost) {
  const DeviceClasses classes = ClassesOf(cost);
  const int num_classes = classes.num();
  const int n = cost.graph().num_ops();
  std::vector<double> slots(num_classes, 0);
  double total_slots = 0;
  for (int c = 0; c < num_classes; ++c) {
    for (DeviceId d : classes.members[c]) {
      slots[c] += cost.cluster().device(d).compute_slots;
    }
    total_slots += slots[c];
  }
  std::vector<double> scaled(static_cast<size_t>(n) * num_classes);
  for (OpId op = 0; op < n; ++op) {
    for (int c = 0; c < num_classes; ++c) {
      scaled[static_cast<size_t>(op) * num_classes + c] =
          cost.OpTime(op, classes.representative(c)) / slots[c];
    }
  }
  // Equal weights per slot (the total work), then coordinate ascent over
  // pairs of classes: the dual is concave along each pair's exchange, so a
  // ternary search finds its best split. Every theta gives a bound.
  std::vector<double> theta(num_classes);
  for (int c = 0; c < num_classes; ++c) theta[c] = slots[c] / total_slots;
  double best = Dual(scaled, theta, num_classes);
  const int rounds = num_classes > 2 ? 3 : 1;
  for (int round = 0; round < rounds; ++round) {
    for (int a = 0; a < num_classes; ++a) {
      for (int b = a + 1; b < num_classes; ++b) {
        const double pair = theta[a] + theta[b];
        if (pair <= 0) continue;
        auto value = [&](double share) {
          std::vector<double> t = theta;
          t[a] = share * pair;
          t[b] = (1 - share) * pair;
          return Dual(scaled, t, num_classes);
        };
        double lo = 0, hi = 1;
        for (int i = 0; i < 40; ++i) {
          const double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
          if (value(m1) < value(m2)) {
            lo = m1;
          } else {
            hi = m2;
          }
        }
        const double share = (lo + hi) / 2;
        const double found = value(share);
        if (found > best) {
          best = found;
          theta[a] = share * pair;
          theta[b] = (1 - share) * pair;
        }
      }
    }
  }
  return best;
}

}  // namespace dplace
