#include "dplace/fidelity/fidelity_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "dplace/util/format.h"

namespace dplace {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Ranks from 1, tied values sharing the mean of their ranks.
std::vector<double> Ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) {
      ++j;
    }
    const double mean_rank = (static_cast<double>(i + j) / 2) + 1;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = mean_rank;
    i = j + 1;
  }
  return ranks;
}

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2) return kNaN;
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace

double MeanAbsolutePercentageError(const std::vector<double>& predicted,
                                   const std::vector<double>& actual) {
  if (actual.empty()) return kNaN;
  double sum = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    sum += std::abs(predicted[i] - actual[i]) / actual[i];
  }
  return sum / actual.size();
}

double MaxAbsolutePercentageError(const std::vector<double>& predicted,
                                  const std::vector<double>& actual) {
  if (actual.empty()) return kNaN;
  double most = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    most = std::max(most, std::abs(predicted[i] - actual[i]) / actual[i]);
  }
  return most;
}

double SpearmanCorrelation(const std::vector<double>& x,
                           const std::vector<double>& y) {
  return Pearson(Ranks(x), Ranks(y));
}

double KendallTauB(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2) return kNaN;
  // Pairs: concordant minus discordant over the geometric mean of the pairs
  // untied in x and the pairs untied in y.
  double concordant = 0, discordant = 0, untied_x = 0, untied_y = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx != 0) ++untied_x;
      if (dy != 0) ++untied_y;
      if (dx * dy > 0) ++concordant;
      if (dx * dy < 0) ++discordant;
    }
  }
  if (untied_x == 0 || untied_y == 0) return kNaN;
  return (concordant - discordant) / std::sqrt(untied_x * untied_y);
}

StatusOr<FidelityStats> ComputeFidelityStats(
    const std::vector<double>& predicted, const std::vector<double>& actual) {
  if (predicted.size() != actual.size()) {
    return InvalidArgumentError(
        "fidelity: " + std::to_string(predicted.size()) + " predictions but " +
        std::to_string(actual.size()) + " measurements");
  }
  if (actual.empty()) {
    return InvalidArgumentError("fidelity: no measurements to compare");
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!(actual[i] > 0) || !std::isfinite(actual[i]) ||
        !std::isfinite(predicted[i])) {
      return InvalidArgumentError(
          "fidelity: pair " + std::to_string(i) +
          ": expected finite times and a measured time > 0, got " +
          Format("%g", predicted[i]) + " and " + Format("%g", actual[i]));
    }
  }
  FidelityStats stats;
  stats.count = static_cast<int>(actual.size());
  stats.mape = MeanAbsolutePercentageError(predicted, actual);
  stats.max_ape = MaxAbsolutePercentageError(predicted, actual);
  stats.spearman = SpearmanCorrelation(predicted, actual);
  stats.kendall = KendallTauB(predicted, actual);
  return stats;
}

}  // namespace dplace
