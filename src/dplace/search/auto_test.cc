// auto, the portfolio: at least as fast as every one-shot placer, and
// where a bound meets its step it says optimal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dplace/method/run.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/testing/placer_test_util.h"
#include "dplace/testing/small_dags.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
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

}  // namespace
}  // namespace dplace
