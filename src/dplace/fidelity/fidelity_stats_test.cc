#include "dplace/fidelity/fidelity_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dplace/fidelity/fidelity_report.h"
#include "dplace/util/median.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(FidelityStatsTest, PercentageErrors) {
  // |1.1-1|/1 = 0.1, |1.8-2|/2 = 0.1, 0: mean 0.2/3.
  const std::vector<double> predicted = {1.1, 1.8, 3.0};
  const std::vector<double> actual = {1.0, 2.0, 3.0};
  EXPECT_NEAR(MeanAbsolutePercentageError(predicted, actual), 0.2 / 3, 1e-12);
  EXPECT_NEAR(MaxAbsolutePercentageError(predicted, actual), 0.1, 1e-12);
  // Relative to the actual value, not symmetric: 2 for 1 is 100%, 1 for 2
  // is 50%.
  EXPECT_NEAR(MeanAbsolutePercentageError({2}, {1}), 1.0, 1e-12);
  EXPECT_NEAR(MeanAbsolutePercentageError({1}, {2}), 0.5, 1e-12);
}

TEST(FidelityStatsTest, RankCorrelationsWithoutTies) {
  const std::vector<double> x = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(SpearmanCorrelation(x, {10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(KendallTauB(x, {10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(SpearmanCorrelation(x, {5, 4, 3, 2, 1}), -1.0);
  EXPECT_DOUBLE_EQ(KendallTauB(x, {5, 4, 3, 2, 1}), -1.0);
  // Monotone but not linear: ranks only.
  EXPECT_DOUBLE_EQ(SpearmanCorrelation(x, {1, 8, 27, 64, 1000}), 1.0);
  // y = {2, 1, 4, 3, 5}: d = rank differences {1, 1, 1, 1, 0}, sum d^2 =
  // 4, Spearman 1 - 6*4/(5*24) = 0.8. Pairs: 8 concordant, 2 discordant
  // ((1,2), (3,4)): tau = 6/10.
  EXPECT_NEAR(SpearmanCorrelation(x, {2, 1, 4, 3, 5}), 0.8, 1e-12);
  EXPECT_NEAR(KendallTauB(x, {2, 1, 4, 3, 5}), 0.6, 1e-12);
}

TEST(FidelityStatsTest, RankCorrelationsWithTies) {
  // y ranks {1, 2, 3.5, 5, 3.5}; Pearson of the ranks: sum dx*dy = 8,
  // sum dx^2 = 10, sum dy^2 = 9.5 -> 8 / sqrt(95).
  const std::vector<double> x = {1, 2, 3, 4, 5};
  const std::vector<double> y = {5, 6, 7, 8, 7};
  EXPECT_NEAR(SpearmanCorrelation(x, y), 8 / std::sqrt(95.0), 1e-12);
  // 8 concordant, 1 discordant ((4,5)), 1 pair tied in y ((3,5)):
  // tau-b = 7 / sqrt(10 * 9).
  EXPECT_NEAR(KendallTauB(x, y), 7 / std::sqrt(90.0), 1e-12);
  // Ties on both sides: x = {1, 1, 2, 3}, y = {1, 2, 2, 3}. Pairs:
  // (1,2) tied in x; (1,3) c; (1,4) c; (2,3) tied in y; (2,4) c; (3,4) c.
  // tau-b = 4 / sqrt(5 * 5). Ranks x {1.5, 1.5, 3, 4}, y {1, 2.5, 2.5, 4}:
  // dx {-1, -1, .5, 1.5}, dy {-1.5, 0, 0, 1.5}: 1.5 + 2.25 = 3.75 over
  // sqrt(4.5 * 4.5).
  EXPECT_NEAR(KendallTauB({1, 1, 2, 3}, {1, 2, 2, 3}), 0.8, 1e-12);
  EXPECT_NEAR(SpearmanCorrelation({1, 1, 2, 3}, {1, 2, 2, 3}), 3.75 / 4.5,
              1e-12);
}

TEST(FidelityStatsTest, ConstantSeriesHaveNoCorrelation) {
  EXPECT_TRUE(std::isnan(SpearmanCorrelation({1, 2, 3}, {4, 4, 4})));
  EXPECT_TRUE(std::isnan(KendallTauB({1, 2, 3}, {4, 4, 4})));
  EXPECT_TRUE(std::isnan(KendallTauB({1}, {4})));
}

TEST(FidelityStatsTest, ComputeChecksItsInput) {
  StatusOr<FidelityStats> stats = ComputeFidelityStats({1.1, 1.8}, {1, 2});
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->count, 2);
  EXPECT_NEAR(stats->mape, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(stats->spearman, 1.0);
  EXPECT_DOUBLE_EQ(stats->kendall, 1.0);
  EXPECT_THAT(ComputeFidelityStats({1}, {1, 2}).status().message(),
              HasSubstr("1 predictions but 2 measurements"));
  EXPECT_FALSE(ComputeFidelityStats({}, {}).ok());
  EXPECT_THAT(ComputeFidelityStats({1, 2}, {1, 0}).status().message(),
              HasSubstr("pair 1"));
  EXPECT_THAT(FidelitySummary(*stats),
              StartsWith("MAPE 10.0%, max error 10.0%, Spearman 1.000"));
}

TEST(WindowMediansTest, MediansOfConsecutiveRuns) {
  // Runs of 3: medians 5, 2, 7; the trailing 1 makes no run of its own.
  EXPECT_EQ(WindowMedians({5, 9, 4, 2, 2, 8, 7, 7, 9, 1}, 3),
            (std::vector<double>{5, 2, 7}));
  // A run of 1 is each value.
  EXPECT_EQ(WindowMedians({5, 9, 4}, 1), (std::vector<double>{5, 9, 4}));
  // Fewer values than a run: their median.
  EXPECT_EQ(WindowMedians({5, 9}, 3), (std::vector<double>{7}));
  EXPECT_TRUE(WindowMedians({}, 3).empty());
}

TEST(OfRoundsTest, FastestFastestQuarterAndMedian) {
  const std::vector<double> times = {5, 1, 3, 2, 9, 4, 8, 7};
  EXPECT_DOUBLE_EQ(OfRounds(times, RoundStatistic::kFastest), 1);
  // A quarter of 8 rounds: the 2 fastest, 1 and 2.
  EXPECT_DOUBLE_EQ(OfRounds(times, RoundStatistic::kFastestQuarter), 1.5);
  EXPECT_DOUBLE_EQ(OfRounds(times, RoundStatistic::kMedian), 4.5);
  // A quarter of 24 rounds is 6; of 3 rounds, at least one.
  std::vector<double> many;
  for (int i = 24; i >= 1; --i) many.push_back(i);
  EXPECT_DOUBLE_EQ(OfRounds(many, RoundStatistic::kFastestQuarter), 3.5);
  EXPECT_DOUBLE_EQ(OfRounds({3, 9, 6}, RoundStatistic::kFastestQuarter), 3);
  EXPECT_TRUE(std::isnan(OfRounds({}, RoundStatistic::kFastestQuarter)));
  for (RoundStatistic s : kRoundStatistics) {
    EXPECT_EQ(ParseRoundStatistic(RoundStatisticName(s)), s);
  }
  EXPECT_EQ(ParseRoundStatistic("fastest-half"), std::nullopt);
}

}  // namespace
}  // namespace dplace
