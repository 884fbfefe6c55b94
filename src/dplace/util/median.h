// The median of a sample, for the places that summarise timings.
#ifndef DPLACE_UTIL_MEDIAN_H_
#define DPLACE_UTIL_MEDIAN_H_

#include <algorithm>
#include <vector>

namespace dplace {

// The middle value, or the mean of the two middle ones; 0 for none.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The fastest of the medians of consecutive runs of `window` values
// (values[0..window), values[window..2 window), ...; a shorter last run
// counts when it is the only one): a timing's least disturbed stretch,
// as `dplace fidelity --statistic fastest` takes a placement's rounds of
// `window` steps. 0 for none. REQUIRES: window >= 1.
inline double FastestWindowMedian(const std::vector<double>& values,
                                  size_t window) {
  if (values.size() <= window) return Median(values);
  double fastest = 0;
  for (size_t start = 0; start + window <= values.size(); start += window) {
    const double m = Median(std::vector<double>(
        values.begin() + start, values.begin() + start + window));
    if (start == 0 || m < fastest) fastest = m;
  }
  return fastest;
}

}  // namespace dplace

#endif  // DPLACE_UTIL_MEDIAN_H_
