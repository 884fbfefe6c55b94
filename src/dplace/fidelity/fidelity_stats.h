// Error and rank statistics of predictions against actual values: how
// well simulated step times predict measured ones (fidelity.h).
#ifndef DPLACE_FIDELITY_FIDELITY_STATS_H_
#define DPLACE_FIDELITY_FIDELITY_STATS_H_

#include <vector>

#include "dplace/util/status.h"

namespace dplace {

struct FidelityStats {
  int count = 0;  // Pairs compared.
  // Mean of |predicted - actual| / actual, as a fraction (0.1 = 10%).
  double mape = 0;
  // Largest |predicted - actual| / actual, as a fraction.
  double max_ape = 0;
  // Rank correlations in [-1, 1]; NaN when either side is constant or
  // fewer than two pairs are compared.
  double spearman = 0;
  double kendall = 0;  // Tau-b: ties on either side are accounted for.
};

// REQUIRES: equal sizes; every actual value > 0.
double MeanAbsolutePercentageError(const std::vector<double>& predicted,
                                   const std::vector<double>& actual);
double MaxAbsolutePercentageError(const std::vector<double>& predicted,
                                  const std::vector<double>& actual);
// Pearson correlation of the ranks (tied values share their mean rank).
// REQUIRES: equal sizes.
double SpearmanCorrelation(const std::vector<double>& x,
                           const std::vector<double>& y);
// Kendall's tau-b. REQUIRES: equal sizes.
double KendallTauB(const std::vector<double>& x, const std::vector<double>& y);

// All four. Errors: different sizes, no pairs, an actual value <= 0 or not
// finite.
StatusOr<FidelityStats> ComputeFidelityStats(
    const std::vector<double>& predicted, const std::vector<double>& actual);

}  // namespace dplace

#endif  // DPLACE_FIDELITY_FIDELITY_STATS_H_
