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

}  // namespace dplace

#endif  // DPLACE_UTIL_MEDIAN_H_
