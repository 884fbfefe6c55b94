// The median of a sample, and the statistics that make repeated timings
// one figure.
#ifndef DPLACE_UTIL_MEDIAN_H_
#define DPLACE_UTIL_MEDIAN_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace dplace {

// The middle value, or the mean of the two middle ones; 0 for none.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The medians of consecutive runs of `window` values (values[0..window),
// values[window..2 window), ...; a shorter last run counts when it is the
// only one), as `dplace fidelity --steps window` makes a round of steps
// one time. None for no values. REQUIRES: window >= 1.
inline std::vector<double> WindowMedians(const std::vector<double>& values,
                                         size_t window) {
  if (values.empty()) return {};
  if (values.size() <= window) return {Median(values)};
  std::vector<double> medians;
  for (size_t start = 0; start + window <= values.size(); start += window) {
    medians.push_back(Median(std::vector<double>(
        values.begin() + start, values.begin() + start + window)));
  }
  return medians;
}

// How repeated timings of one thing (a placement's rounds, a profile's
// runs of steps) make its time. Other work on the machine only ever adds
// time, so the fastest are the least disturbed: kFastest takes the least;
// kFastestQuarter the mean of the fastest quarter (at least one), which a
// single lucky or unlucky timing moves less; kMedian the median.
enum class RoundStatistic { kFastest, kFastestQuarter, kMedian };
inline constexpr RoundStatistic kRoundStatistics[] = {
    RoundStatistic::kFastest, RoundStatistic::kFastestQuarter,
    RoundStatistic::kMedian};

// Each statistic's name ("fastest", "fastest-quarter", "median") and how
// reports say it of rounds ("the fastest round", "the mean of the fastest
// quarter of the rounds", "the median of the rounds") and of the steps
// of all rounds pooled ("the fastest step", ...), in the enum's order.
struct RoundStatisticWords {
  std::string_view name;
  std::string_view phrase;
  std::string_view steps_phrase;
};
inline constexpr RoundStatisticWords kRoundStatisticWords[] = {
    {"fastest", "the fastest round", "the fastest step"},
    {"fastest-quarter", "the mean of the fastest quarter of the rounds",
     "the mean of the fastest quarter of the steps"},
    {"median", "the median of the rounds", "the median of the steps"}};

inline std::string_view RoundStatisticName(RoundStatistic statistic) {
  return kRoundStatisticWords[static_cast<int>(statistic)].name;
}
inline std::string_view RoundStatisticPhrase(RoundStatistic statistic,
                                             bool of_steps = false) {
  const RoundStatisticWords& words =
      kRoundStatisticWords[static_cast<int>(statistic)];
  return of_steps ? words.steps_phrase : words.phrase;
}

inline std::optional<RoundStatistic> ParseRoundStatistic(
    std::string_view name) {
  for (RoundStatistic s : kRoundStatistics) {
    if (name == RoundStatisticName(s)) return s;
  }
  return std::nullopt;
}

// `times` made one by the statistic; NaN when empty.
inline double OfRounds(std::vector<double> times, RoundStatistic statistic) {
  if (times.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (statistic == RoundStatistic::kMedian) return Median(std::move(times));
  std::sort(times.begin(), times.end());
  const size_t k = statistic == RoundStatistic::kFastest
                       ? 1
                       : std::max<size_t>(1, std::lround(times.size() / 4.0));
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += times[i];
  return sum / k;
}

}  // namespace dplace

#endif  // DPLACE_UTIL_MEDIAN_H_
