// The claims generator on a handmade results file: a claim holds or not as
// the figures say, a missing method is "not run", out-of-memory methods and
// references are judged as the papers' OOM cells are, and the Markdown
// gives the paper's figure, dplace's and the verdict per paper.
#include "dplace/suite/claims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// One benchmark: expert 1.0 s, scotch 1.2 s, hierarchical 0.8 s (median of
// 0.7, 0.8, 0.9), post 1.1 s, eagle 1.004 s, colocrl out of memory in
// every run, single-gpu out of memory, mars and mars-nopretrain finding
// their best after 800 and 1000 samples.
const char* kResults = R"json({"format": "dplace.bench-results",
  "suite": "t", "tables": [{"title": "T", "benchmarks": [{"name": "nmt@k40x2",
    "lower_bound": 0.5, "methods": [
    {"method": "expert", "runs": [{"step_time": 1.0}]},
    {"method": "scotch", "runs": [{"step_time": 1.2}]},
    {"method": "single-gpu", "runs": [{"step_time": 9.0, "feasible": false}]},
    {"method": "hierarchical", "runs": [{"seed": 1, "step_time": 0.9},
      {"seed": 2, "step_time": 0.7}, {"seed": 3, "step_time": 0.8}]},
    {"method": "post", "runs": [{"step_time": 1.1}]},
    {"method": "eagle", "runs": [{"step_time": 1.004}]},
    {"method": "colocrl", "runs": [{"step_time": 3.0, "feasible": false}]},
    {"method": "mars", "runs": [{"step_time": 0.9, "samples_to_best": 800}]},
    {"method": "mars", "label": "mars (no pre-training)",
     "runs": [{"step_time": 0.9, "samples_to_best": 1000}]}
  ]}]}]})json";

SuiteClaim Claim(std::string method, std::vector<std::string> versus) {
  SuiteClaim c;
  c.paper = "Paper A";
  c.claim = method + " beats the baselines";
  c.table = "T";
  c.benchmark = "nmt@k40x2";
  c.method = std::move(method);
  c.versus = std::move(versus);
  c.paper_figure = "0.84 s vs 2.13 s: 60.6% faster";
  return c;
}

class ClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<BenchResults> r = ParseBenchResults(kResults, "r.json");
    ASSERT_TRUE(r.ok()) << r.status().message();
    results_ = *r;
  }
  ClaimCheck CheckOne(const SuiteClaim& claim) {
    return CheckClaims({claim}, results_).at(0);
  }
  BenchResults results_;
};

TEST_F(ClaimsTest, FasterThanTheFastestReferenceHolds) {
  const ClaimCheck c = CheckOne(Claim("hierarchical", {"scotch", "expert"}));
  EXPECT_EQ(c.verdict, ClaimVerdict::kHolds);
  EXPECT_EQ(c.reference, "expert");  // The faster of the two.
  EXPECT_DOUBLE_EQ(c.value, 0.8);    // The median over seeds.
  EXPECT_NEAR(c.reduction, 0.2, 1e-12);
  EXPECT_EQ(c.figure, "hierarchical 0.8000 s vs expert 1.0000 s: 20.0% faster");
}

TEST_F(ClaimsTest, SlowerOrWithinTheToleranceIsJudgedByTheBounds) {
  EXPECT_EQ(CheckOne(Claim("post", {"expert"})).verdict,
            ClaimVerdict::kDoesNotHold);
  EXPECT_THAT(CheckOne(Claim("post", {"expert"})).figure,
              HasSubstr("10.0% slower"));
  // "Matches the best baseline" (HP on ResNet: 0%): within 1%.
  SuiteClaim matches = Claim("eagle", {"expert"});
  EXPECT_EQ(CheckOne(matches).verdict, ClaimVerdict::kDoesNotHold);
  matches.min_reduction = -0.01;
  EXPECT_EQ(CheckOne(matches).verdict, ClaimVerdict::kHolds);
  // "Does not beat the expert" (HP on NMT-8): holds only when not faster.
  SuiteClaim loses = Claim("hierarchical", {"expert"});
  loses.min_reduction = -1e300;
  loses.max_reduction = 0;
  EXPECT_EQ(CheckOne(loses).verdict, ClaimVerdict::kDoesNotHold);
  loses.method = "post";
  EXPECT_EQ(CheckOne(loses).verdict, ClaimVerdict::kHolds);
}

TEST_F(ClaimsTest, OutOfMemoryAndMissingMethods) {
  // Every run of colocrl out of memory: it does not beat a feasible expert.
  const ClaimCheck oom = CheckOne(Claim("colocrl", {"expert"}));
  EXPECT_EQ(oom.verdict, ClaimVerdict::kDoesNotHold);
  EXPECT_EQ(oom.figure, "colocrl: no run fits in memory; expert 1.0000 s");
  // A placement that fits beats a reference that never does (the papers'
  // OOM cells).
  const ClaimCheck ref_oom = CheckOne(Claim("post", {"single-gpu"}));
  EXPECT_EQ(ref_oom.verdict, ClaimVerdict::kHolds);
  EXPECT_THAT(ref_oom.figure, HasSubstr("every reference out of memory"));
  // Not in the results (a reduced run): not run, not failed.
  const ClaimCheck missing = CheckOne(Claim("eagle-ce", {"expert"}));
  EXPECT_EQ(missing.verdict, ClaimVerdict::kNotRun);
  EXPECT_THAT(missing.figure, HasSubstr("the results have no eagle-ce"));
  EXPECT_EQ(CheckOne(Claim("post", {"metis"})).verdict, ClaimVerdict::kNotRun);
}

TEST_F(ClaimsTest, SamplesToBestComparesHowSoonASearchFoundItsBest) {
  SuiteClaim pretraining = Claim("mars", {"mars (no pre-training)"});
  pretraining.measure = "samples_to_best";
  const ClaimCheck c = CheckOne(pretraining);
  EXPECT_EQ(c.verdict, ClaimVerdict::kHolds);
  EXPECT_EQ(c.figure,
            "mars 800 samples vs mars (no pre-training) 1000 samples: 20.0% "
            "fewer");
}

// Samples to a common level: on each seed, the slower of the two searches'
// bests, read from their curves. On seed 1 mars reaches 0.9 s (the other's
// best) at 100 samples, the other at 300; on seed 2 mars needs 200 to reach
// the other's 0.75 s, found at 100; seed 3 has no feasible run of the
// reference and does not count. Medians 150 against 200: 25% fewer, though
// samples to each run's own best say "as many" (medians 200 and 200).
TEST(ClaimsCommonLevelTest, SamplesToTheSlowerSearchsBestOnEachSeed) {
  const char* results = R"json({"format": "dplace.bench-results",
    "suite": "t", "tables": [{"title": "T", "benchmarks": [
      {"name": "b", "methods": [
      {"method": "mars", "runs": [
        {"seed": 1, "step_time": 0.8, "samples_to_best": 300, "curve": {
          "samples": [100, 200, 300], "best_step_time": [0.9, 0.85, 0.8]}},
        {"seed": 2, "step_time": 0.7, "samples_to_best": 200, "curve": {
          "samples": [100, 200, 300], "best_step_time": [1.0, 0.7, 0.7]}},
        {"seed": 3, "step_time": 0.6, "samples_to_best": 100, "curve": {
          "samples": [100, 200, 300], "best_step_time": [0.6, 0.6, 0.6]}}]},
      {"method": "mars", "label": "mars-nopretrain", "runs": [
        {"seed": 1, "step_time": 0.9, "samples_to_best": 300, "curve": {
          "samples": [100, 200, 300], "best_step_time": [1.2, 1.0, 0.9]}},
        {"seed": 2, "step_time": 0.75, "samples_to_best": 100, "curve": {
          "samples": [100, 200, 300], "best_step_time": [0.75, 0.75, 0.75]}},
        {"seed": 3, "step_time": 2.0, "feasible": false}]}
    ]}]}]})json";
  StatusOr<BenchResults> r = ParseBenchResults(results, "r.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  SuiteClaim claim;
  claim.paper = "Mars";
  claim.claim = "pre-training shortens the search";
  claim.table = "T";
  claim.benchmark = "b";
  claim.method = "mars";
  claim.versus = {"mars-nopretrain"};
  claim.measure = "samples_to_common";
  const ClaimCheck c = CheckClaims({claim}, *r).at(0);
  EXPECT_EQ(c.verdict, ClaimVerdict::kHolds);
  EXPECT_DOUBLE_EQ(c.value, 150);
  EXPECT_DOUBLE_EQ(c.reference_value, 200);
  EXPECT_EQ(c.figure,
            "mars 150 samples vs mars-nopretrain 200 samples to the slower "
            "one's best: 25.0% fewer");
  claim.measure = "samples_to_best";  // The same runs, each to its own best.
  EXPECT_EQ(CheckClaims({claim}, *r).at(0).verdict, ClaimVerdict::kDoesNotHold);
}

TEST_F(ClaimsTest, MarkdownHasASectionPerPaperWithTheVerdicts) {
  SuiteClaim other = Claim("post", {"expert"});
  other.paper = "Paper B";
  const std::string md = ClaimsToMarkdown(CheckClaims(
      {Claim("hierarchical", {"expert"}), Claim("eagle-ce", {"expert"}), other},
      results_));
  EXPECT_THAT(
      md, AllOf(HasSubstr("## Claims\n"), HasSubstr("### Claims: Paper A\n"),
                HasSubstr("### Claims: Paper B\n")));
  EXPECT_THAT(md, HasSubstr("| hierarchical beats the baselines | "
                            "`nmt@k40x2` | 0.84 s vs 2.13 s: 60.6% faster | "
                            "hierarchical 0.8000 s vs expert 1.0000 s: 20.0% "
                            "faster | at least 0.1% faster | **holds** |"));
  EXPECT_THAT(md, HasSubstr("1 of 2 claims hold on dplace's simulator (1 "
                            "not run)."));
  EXPECT_THAT(md, HasSubstr("| **does not hold** |\n\n0 of 1 claims hold"));
  EXPECT_EQ(ClaimsToMarkdown({}), "");
}

TEST(SuiteClaimsTest, ClaimsNameTheSuitesTablesAndLabels) {
  const std::string head = R"json({"format": "dplace.suites", "version": 1,
    "suites": [{"name": "s", "tables": [{"title": "T",
      "benchmarks": [{"name": "b", "model": "zoo:rnnlm", "cluster": "k40x2"}],
      "methods": [{"method": "expert"},
                  {"method": "post", "label": "post (eps)",
                   "options": ["epsilon=0.2"]}]}],
    "claims": [)json";
  auto parse = [&](const std::string& claim) {
    return ParseSuites(head + claim + "]}]}", "s.json");
  };
  StatusOr<std::vector<Suite>> ok = parse(
      R"json({"paper": "P", "claim": "c", "table": "T", "benchmark": "b",
          "method": "post (eps)", "versus": ["expert"],
          "paper_figure": "1 s", "min_reduction": -0.01})json");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ((*ok)[0].claims.size(), 1u);
  EXPECT_DOUBLE_EQ((*ok)[0].claims[0].min_reduction, -0.01);
  EXPECT_EQ((*ok)[0].tables[0].methods[1].label, "post (eps)");
  EXPECT_EQ((*ok)[0].tables[0].methods[0].label, "expert");
  EXPECT_THAT(parse(R"({"paper": "P", "claim": "c", "table": "T",
                        "benchmark": "b", "method": "post",
                        "versus": ["expert"], "paper_figure": "1 s"})")
                  .status()
                  .message(),
              HasSubstr("s.json: suites[0].claims[0]: table \"T\" has no "
                        "method labelled \"post\""));
  EXPECT_THAT(parse(R"({"paper": "P", "claim": "c", "table": "U",
                        "benchmark": "b", "method": "expert",
                        "versus": ["expert"], "paper_figure": "1 s"})")
                  .status()
                  .message(),
              HasSubstr("suites[0].claims[0].table: the suite has no table "
                        "\"U\""));
  EXPECT_THAT(ParseSuites(R"({"format": "dplace.suites", "version": 1,
    "suites": [{"name": "s", "tables": [{"title": "T",
      "benchmarks": [{"model": "zoo:rnnlm", "cluster": "k40x2"}],
      "methods": [{"method": "post"}, {"method": "post"}]}]}]})",
                          "s.json")
                  .status()
                  .message(),
              HasSubstr("methods[1]: label \"post\" appears twice"));
}

}  // namespace
}  // namespace dplace
