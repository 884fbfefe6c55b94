// auto, the portfolio: at least as fast as every one-shot placer, and
// where a bound meets its step it says optimal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "dplace/method/run.h"
#include "dplace/search/start_placements.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/testing/placer_test_util.h"
#include "dplace/testing/small_dags.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAreArray;
using testing_dags::Dag;
using testing_dags::Gpus;
using testing_dags::kGB;

// auto on a small problem: at least as fast as every one-shot placer, and
// where the MILP's or the path bound meets its step, it says optimal.
TEST(AutoTest, BeatsEveryOneShotPlacerAndCertifiesTheChain) {
  Dag dag;
  OpId last = dag.Op("op0", 1, 4 * kGB / 10);
  for (int i = 1; i < 4; ++i) {
    const OpId op = dag.Op("op" + std::to_string(i), 1, 4 * kGB / 10);
    dag.Edge(last, op, kGB / 10);
    last = op;
  }
  PlacerTestProblem p(std::move(dag).Build(), Gpus(2, 1e9, kGB));
  MethodRunOptions options;
  options.context.search.budget.samples = 200;
  options.environment_threads = 1;
  StatusOr<MethodRun> run = RunMethod("auto", {}, p.problem, options);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_TRUE(run->placed);
  for (const MethodEntry* e : Methods()) {
    if (TraitsOf(*e).searches || e->name == "milp") continue;
    StatusOr<MethodRun> one = RunMethod(e->name, {}, p.problem, {});
    ASSERT_TRUE(one.ok());
    if (!one->placed || !one->sim.feasible) continue;
    EXPECT_LE(run->sim.step_time, one->sim.step_time * (1 + 1e-12)) << e->name;
  }
  const StepLowerBound bound = ProblemLowerBound(run->sim.bounds);
  EXPECT_TRUE(ProvenOptimal(run->sim.step_time, bound))
      << run->sim.step_time << " against " << DescribeLowerBound(bound);
  EXPECT_THAT(DescribeGap(run->sim.step_time, bound), HasSubstr("optimal"));
  EXPECT_THAT(run->note, HasSubstr("one-shot placers"));
}

// Before its search samples, auto's progress names each one-shot placer
// (and the MILP) as it runs; the search's reports then count the wall time
// from auto's start, not from the search's.
// The one-shot placers run side by side where they may; the candidates
// are still each placer's own placement, in AutoStartMethods' order. Those
// that call Scotch, METIS or GLPK never run beside another.
TEST(AutoTest, StartCandidatesKeepThePlacersOrderWhenSideBySide) {
  Dag dag;
  OpId last = dag.Op("op0", 1, kGB / 10);
  for (int i = 1; i < 12; ++i) {
    const OpId op = dag.Op("op" + std::to_string(i), 1 + i % 3, kGB / 10);
    dag.Edge(last, op, kGB / 10);
    if (i % 4 == 0) dag.Edge(op - 3, op, kGB / 20);
    last = op;
  }
  PlacerTestProblem p(std::move(dag).Build(), Gpus(3, 1e9, kGB));
  StatusOr<std::vector<Placement>> starts = StartCandidates(p.problem, "auto");
  ASSERT_TRUE(starts.ok()) << starts.status().message();
  std::vector<Placement> one_by_one;
  for (const std::string& name : AutoStartMethods(p.problem)) {
    StatusOr<std::unique_ptr<Method>> method = MakeMethod(name);
    ASSERT_TRUE(method.ok()) << name;
    StatusOr<PlaceResult> placed = (*method)->Place(p.problem);
    if (placed.ok()) one_by_one.push_back(placed->placement);
  }
  EXPECT_EQ(*starts, one_by_one);
  for (const char* name :
       {"scotch", "mincut", "metis", "m-sct", "path-guided", "milp"}) {
    EXPECT_FALSE(TraitsOf(*FindMethod(name)).thread_safe) << name;
  }
  EXPECT_TRUE(TraitsOf(*FindMethod("split-dp")).thread_safe);
}

// A progress callback that throws while the placers run side by side
// (a test's stand-in for a killed process) reaches the caller, once the
// helper threads are joined, and the process goes on.
TEST(AutoTest, AnExceptionFromProgressAmongThePlacersReachesTheCaller) {
  Dag dag;
  const OpId a = dag.Op("a", 1, kGB / 10);
  dag.Edge(a, dag.Op("b", 1, kGB / 10), kGB / 10);
  PlacerTestProblem p(std::move(dag).Build(), Gpus(2, 1e9, kGB));
  for (int at : {0, 2, 5}) {
    SCOPED_TRACE(at);
    int reports = 0;
    EXPECT_THROW(
        (void)StartCandidates(p.problem, "auto",
                              [&](int, int, const std::vector<std::string>&) {
                                if (reports++ == at) {
                                  throw std::runtime_error("killed");
                                }
                              }),
        std::runtime_error);
    EXPECT_EQ(reports, at + 1);
  }
}

TEST(AutoTest, ProgressNamesEachStageThenCountsFromTheStart) {
  Dag dag;
  const OpId a = dag.Op("a", 1, kGB / 10);
  const OpId b = dag.Op("b", 1, kGB / 10);
  dag.Edge(a, b, kGB / 10);
  PlacerTestProblem p(std::move(dag).Build(), Gpus(2, 1e9, kGB));
  MethodRunOptions options;
  options.context.search.budget.samples = 64;
  options.environment_threads = 1;
  double now = 0;  // Each report moves the clock on by a second.
  options.context.search.clock = [&now] { return now; };
  std::vector<SearchProgress> reports;
  options.context.search.progress = [&](const SearchProgress& p) {
    reports.push_back(p);
    now += 1;
  };
  StatusOr<MethodRun> run = RunMethod("auto", {}, p.problem, options);
  ASSERT_TRUE(run.ok()) << run.status().message();
  const int placers = static_cast<int>(AutoStartMethods(p.problem).size());
  // Counted as they start (some run side by side, and a report comes when
  // one ends beside others), each placer once, named first as it starts.
  std::vector<std::string> named;
  size_t i = 0;
  for (; i < reports.size() && reports[i].stage.rfind("one-shot", 0) == 0;
       ++i) {
    const std::string prefix = "one-shot placer " +
                               std::to_string(named.size() + 1) + " of " +
                               std::to_string(placers) + ": ";
    if (reports[i].stage.rfind(prefix, 0) == 0) {
      const std::string rest = reports[i].stage.substr(prefix.size());
      named.push_back(rest.substr(0, std::min(rest.find(','), rest.find(' '))));
    } else {  // One ended; the count stays.
      EXPECT_THAT(reports[i].stage,
                  StartsWith("one-shot placer " + std::to_string(named.size()) +
                             " of " + std::to_string(placers) + ": "));
    }
  }
  EXPECT_THAT(named, UnorderedElementsAreArray(AutoStartMethods(p.problem)));
  ASSERT_LT(i + 1, reports.size());
  EXPECT_THAT(reports[i].stage, HasSubstr("the MILP"));
  EXPECT_TRUE(reports[i + 1].stage.empty());
  EXPECT_GT(reports[i + 1].samples, 0);
  for (size_t j = 1; j < reports.size(); ++j) {
    EXPECT_GT(reports[j].wall_seconds, reports[j - 1].wall_seconds) << j;
  }
}

// The placers that run side by side are named together, the latest
// started first; each starts once, and one that ended is named no more.
TEST(AutoTest, ProgressNamesThePlacersRunningSideBySide) {
  EXPECT_EQ(StartPlacerStage(3, 14, {"m-sct"}),
            "one-shot placer 3 of 14: m-sct");
  EXPECT_EQ(StartPlacerStage(4, 14, {"mincut", "m-sct"}),
            "one-shot placer 4 of 14: mincut and m-sct");
  EXPECT_EQ(StartPlacerStage(5, 14, {"metis", "mincut", "m-sct"}),
            "one-shot placer 5 of 14: metis, mincut and m-sct");

  Dag dag;
  const OpId a = dag.Op("a", 1, kGB / 10);
  dag.Edge(a, dag.Op("b", 1, kGB / 10), kGB / 10);
  PlacerTestProblem p(std::move(dag).Build(), Gpus(2, 1e9, kGB));
  std::vector<std::string> started_names;
  std::vector<std::string> before;  // What ran at the previous call.
  StatusOr<std::vector<Placement>> starts = StartCandidates(
      p.problem, "auto",
      [&](int started, int n, const std::vector<std::string>& running) {
        EXPECT_EQ(n, static_cast<int>(AutoStartMethods(p.problem).size()));
        ASSERT_FALSE(running.empty());
        if (started == static_cast<int>(started_names.size()) + 1) {
          started_names.push_back(running[0]);  // The one that starts.
          // Beside it, what ran at the last call (unless all of that
          // ended since: an end that leaves none running is not told).
          const std::vector<std::string> others(running.begin() + 1,
                                                running.end());
          if (!others.empty()) {
            EXPECT_EQ(others, before);
          }
        } else {
          EXPECT_EQ(started, static_cast<int>(started_names.size()));
          EXPECT_EQ(running.size() + 1, before.size()) << "one ended";
        }
        before = running;
      });
  ASSERT_TRUE(starts.ok()) << starts.status().message();
  EXPECT_THAT(started_names,
              UnorderedElementsAreArray(AutoStartMethods(p.problem)));
}

}  // namespace
}  // namespace dplace
