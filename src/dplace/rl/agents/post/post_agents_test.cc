// Post's exploration schedule is anytime: ε decays with the samples seen,
// not over the budget, so a search given a longer budget samples exactly
// what a shorter one did up to the shorter one's end (stopping early gives
// what the curve promised), and its options are checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "dplace/rl/agent.h"
#include "dplace/testing/agent_test_problems.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using namespace testing_problems;  // NOLINT: the shared problems.

std::vector<SampleRecord> History(const std::string& agent, int64_t budget) {
  SearchOptions search;
  search.budget.samples = budget;
  StatusOr<PlaceResult> r =
      RunSearch(TwoChains(), agent, {"grouping=ops"}, search);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->search.history : std::vector<SampleRecord>{};
}

TEST(PostScheduleTest, ALongerBudgetSamplesWhatAShorterOneDidUpToItsEnd) {
  for (const char* agent : {"post", "post-ce"}) {
    SCOPED_TRACE(agent);
    const std::vector<SampleRecord> short_run = History(agent, 240);
    const std::vector<SampleRecord> long_run = History(agent, 960);
    ASSERT_EQ(short_run.size(), 240u);
    ASSERT_EQ(long_run.size(), 960u);
    // Several cross-entropy solutions (every 60 samples) in the prefix: a
    // budget-dependent ε would give them other mixtures from the first on.
    for (size_t i = 0; i < short_run.size(); ++i) {
      ASSERT_EQ(short_run[i].step_time, long_run[i].step_time)
          << "sample " << i;
    }
    EXPECT_EQ(short_run.back().best_step_time,
              long_run[short_run.size() - 1].best_step_time);
    // And the prefix explores after the first solution, so the equality
    // says something about ε.
    std::set<double> after_first_solution;
    for (size_t i = 60; i < short_run.size(); ++i) {
      after_first_solution.insert(short_run[i].step_time);
    }
    EXPECT_GE(after_first_solution.size(), 2u);
  }
}

TEST(PostScheduleTest, OptionsAreChecked) {
  EXPECT_THAT(
      MakeMethod("post", *MethodOptions::Parse({"epsilon_halving_samples=-1"}))
          .status()
          .message(),
      HasSubstr("method post: option epsilon_halving_samples must be >= 0"));
  // The budget-long linear decay is gone; its option is an error, not
  // silently ignored.
  EXPECT_THAT(
      MakeMethod("post-ce", *MethodOptions::Parse({"epsilon_decay_samples=9"}))
          .status()
          .message(),
      HasSubstr("unknown option \"epsilon_decay_samples\""));
  EXPECT_TRUE(
      MakeMethod("post", *MethodOptions::Parse({"epsilon_halving_samples=500"}))
          .ok());
}

}  // namespace
}  // namespace dplace
