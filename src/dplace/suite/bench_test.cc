// The bench suites and runner: the suite file parses and names only
// registered methods, filters and budget overrides do what they say, and
// the smoke suite runs end to end into JSON, Markdown and an HTML report
// whose numbers hold together.
#include "dplace/suite/bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <nlohmann/json.hpp>
#include <string>

#include "dplace/io/file.h"
#include "dplace/method/run.h"
#include "dplace/report/html_report.h"
#include "dplace/search/search_log.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/testing/xml_check.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

const std::string kSourceDir = DPLACE_SOURCE_DIR;

std::vector<Suite> Builtin() {
  StatusOr<std::vector<Suite>> suites = LoadSuites("");
  EXPECT_TRUE(suites.ok()) << suites.status().message();
  return suites.ok() ? *suites : std::vector<Suite>{};
}

TEST(SuiteTest, BuiltinSuitesAreTheSourceFile) {
  StatusOr<std::string> text =
      ReadTextFile(kSourceDir + "/src/dplace/suite/suites.json");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, BuiltinSuitesJson());
}

TEST(SuiteTest, SmokePaperAndScaleExistAndNameOnlyRegisteredMethods) {
  const std::vector<Suite> suites = Builtin();
  for (const char* name : {"smoke", "paper", "peer", "scale"}) {
    StatusOr<Suite> suite = FindSuite(suites, name);
    ASSERT_TRUE(suite.ok()) << name;
    Status known = CheckSuiteMethods(*suite);
    EXPECT_TRUE(known.ok()) << known.message();
  }
  const Suite paper = *FindSuite(suites, "paper");
  ASSERT_EQ(paper.tables.size(), 3u);
  EXPECT_THAT(paper.tables[0].title, HasSubstr("Hierarchical Planner"));
  EXPECT_GE(paper.seeds.size(), 3u);  // Several seeds per learned method.
  EXPECT_THAT(
      FindSuite(suites, "smok").status().message(),
      HasSubstr(
          "unknown suite \"smok\" (suites: smoke, paper, peer, local-search, "
          "scale"));
}

const char* kOneTable = R"({
  "format": "dplace.suites", "version": 1,
  "suites": [{"name": "t", "seeds": [1, 2, 3], "tables": [{
    "title": "T",
    "benchmarks": [{"model": "zoo:rnnlm:layers=2,units=128,steps=2,vocab=500",
                    "cluster": "k40x2"},
                   {"name": "b2", "model": "random:ops=300", "cluster": "k80x2"}],
    "methods": [{"method": "expert"}, {"method": "m-etf"},
                {"method": "post", "budget_samples": 100},
                {"method": "eagle-typo"}]}]}]})";

TEST(SuiteTest, UnknownMethodListsTheKnownOnesBeforeAnythingRuns) {
  StatusOr<std::vector<Suite>> suites = ParseSuites(kOneTable, "s.json");
  ASSERT_TRUE(suites.ok()) << suites.status().message();
  StatusOr<BenchResults> results = RunSuite((*suites)[0], "test");
  ASSERT_FALSE(results.ok());
  EXPECT_THAT(results.status().message(),
              AllOf(HasSubstr("suite t, T: unknown method \"eagle-typo\""),
                    HasSubstr("(methods: single-cpu"), HasSubstr("post")));
}

TEST(SuiteTest, FiltersAndBudgetOverrides) {
  const Suite suite = (*ParseSuites(kOneTable, "s.json"))[0];
  SuiteFilter filter;
  filter.methods = {"post", "m-etf"};
  filter.models = {"b2"};
  filter.budget_samples = 12;
  filter.max_seeds = 2;
  StatusOr<Suite> f = FilterSuite(suite, filter);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->tables.size(), 1u);
  ASSERT_EQ(f->tables[0].benchmarks.size(), 1u);
  EXPECT_EQ(f->tables[0].benchmarks[0].name, "b2");
  ASSERT_EQ(f->tables[0].methods.size(), 2u);
  EXPECT_EQ(f->tables[0].methods[1].budget_samples, 12);
  EXPECT_EQ(f->seeds, (std::vector<uint64_t>{1, 2}));
  // The default name of a zoo benchmark drops "zoo:".
  EXPECT_EQ(suite.tables[0].benchmarks[0].name,
            "rnnlm:layers=2,units=128,steps=2,vocab=500@k40x2");

  filter = {};
  filter.budget_scale = 0.25;
  EXPECT_EQ(FilterSuite(suite, filter)->tables[0].methods[2].budget_samples,
            25);
  filter = {};
  filter.methods = {"psot"};
  EXPECT_THAT(FilterSuite(suite, filter).status().message(),
              HasSubstr("--methods psot: suite t has no such method"));
  filter = {};
  filter.models = {"zoo:nmt"};
  EXPECT_THAT(FilterSuite(suite, filter).status().message(),
              HasSubstr("--models zoo:nmt"));
}

TEST(SuiteTest, BadFilesNameTheField) {
  EXPECT_THAT(ParseSuites(R"({"format": "dplace.suites", "version": 1,
    "suites": [{"name": "x", "tables": [{"title": "T", "benchmarks": [],
    "methods": [{"method": "m-etf", "budget_sample": 3}]}]}]})",
                          "s.json")
                  .status()
                  .message(),
              HasSubstr("s.json: suites[0].tables[0].methods[0].budget_sample: "
                        "unknown field"));
  EXPECT_THAT(ParseSuites(R"({"format": "dplace.suites", "version": 1,
    "suites": [{"name": "x"}]})",
                          "s.json")
                  .status()
                  .message(),
              HasSubstr("needs tables or a scale"));
}

TEST(SpreadTest, MedianAndQuartiles) {
  const Spread s = SpreadOf({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.q1, 1.75);
  EXPECT_DOUBLE_EQ(s.q3, 3.25);
  EXPECT_EQ(SpreadOf({}).count, 0);
}

// A method whose every feasible placement keeps its colocation groups
// whole gets the larger bound of such placements; one with a run that
// splits a group keeps the benchmark's bound, and so does a method whose
// runs all failed.
TEST(SpreadTest, GapsAreOverTheBoundEachMethodsPlacementsCarry) {
  BenchmarkResults b;
  b.lower_bound = 0.5;
  b.lower_bound_binding = "forced-transfer path";
  auto run = [](double step, double whole,
                const std::string& binding = kWholeGroupsBoundName) {
    RunRecord r;
    r.placed = r.feasible = true;
    r.step_time = step;
    r.whole_groups_bound = whole;
    r.whole_groups_binding = binding;
    return r;
  };
  MethodResults whole, split, failed, queued;
  whole.method = "whole";
  whole.runs = {run(0.8, 0.6), run(0.9, 0.6)};
  split.method = "split";
  split.runs = {run(0.8, 0.6), run(0.7, 0)};
  failed.method = "failed";
  failed.runs = {RunRecord{}};
  // The least bound of its runs, and its name.
  queued.method = "queued";
  queued.runs = {run(0.8, 0.7, kQueuedPathBoundName),
                 run(0.9, 0.65, kQueuedPathBoundName)};
  b.methods = {whole, split, failed, queued};
  SummariseBenchmark(&b);
  EXPECT_DOUBLE_EQ(b.methods[3].lower_bound, 0.65);
  EXPECT_EQ(b.methods[3].lower_bound_binding,
            "queued critical path, groups whole");
  EXPECT_DOUBLE_EQ(b.methods[0].lower_bound, 0.6);
  EXPECT_EQ(b.methods[0].lower_bound_binding,
            "forced-transfer path, groups whole");
  EXPECT_NEAR(b.methods[0].vs_lower_bound, 0.85 / 0.6, 1e-12);
  EXPECT_DOUBLE_EQ(b.methods[1].lower_bound, 0.5);
  EXPECT_NEAR(b.methods[1].vs_lower_bound, 0.75 / 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(b.methods[2].lower_bound, 0.5);
  EXPECT_TRUE(std::isnan(b.methods[2].vs_lower_bound));
}

TEST(CurveTest, BucketsKeepTheBestAndTheOomShare) {
  std::vector<SampleRecord> history;
  double best = 0;
  for (int i = 0; i < 250; ++i) {
    SampleRecord r;
    r.index = i;
    r.feasible = i % 5 != 0;
    r.step_time = r.feasible ? 10.0 - i * 0.01 : 100;
    if (r.feasible && (best == 0 || r.step_time < best)) best = r.step_time;
    r.best_step_time = best;
    history.push_back(r);
  }
  const LearningCurve c = CurveOf(history, 100);
  ASSERT_EQ(c.samples.size(), 84u);  // Buckets of 3.
  EXPECT_EQ(c.samples.back(), 250);
  EXPECT_DOUBLE_EQ(c.best_step_time.back(), best);
  EXPECT_NEAR(c.oom_share[0], 1.0 / 3, 1e-12);
}

// The smoke suite, as `make test` runs it, checked field by field.
class SmokeSuiteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    StatusOr<Suite> suite = FindSuite(Builtin(), "smoke");
    ASSERT_TRUE(suite.ok());
    StatusOr<BenchResults> results =
        RunSuite(*suite, "dplace bench --suite smoke");
    ASSERT_TRUE(results.ok()) << results.status().message();
    results_ = new BenchResults(*results);
    json_ = new std::string(BenchResultsToJson(*results));
  }
  static void TearDownTestSuite() {
    delete results_;
    delete json_;
  }
  static BenchResults* results_;
  static std::string* json_;
};
BenchResults* SmokeSuiteTest::results_ = nullptr;
std::string* SmokeSuiteTest::json_ = nullptr;

TEST_F(SmokeSuiteTest, JsonHasTheSchemaAndSaneNumbers) {
  ASSERT_NE(json_, nullptr);
  const json doc = json::parse(*json_);
  EXPECT_EQ(doc.at("format"), "dplace.bench-results");
  EXPECT_EQ(doc.at("version"), 1);
  EXPECT_EQ(doc.at("suite"), "smoke");
  EXPECT_EQ(doc.at("command"), "dplace bench --suite smoke");
  EXPECT_GT(doc.at("wall_seconds").get<double>(), 0);
  EXPECT_EQ(doc.at("seeds"), json({1, 2}));
  ASSERT_EQ(doc.at("tables").size(), 1u);
  const json& b = doc.at("tables")[0].at("benchmarks")[0];
  for (const char* key :
       {"name", "model", "cluster", "graph", "devices", "gpus", "lower_bound",
        "best_baseline", "best_baseline_step_time", "methods"}) {
    EXPECT_TRUE(b.contains(key)) << key;
  }
  EXPECT_GT(b.at("graph").at("ops").get<int>(), 500);
  const double bound = b.at("lower_bound").get<double>();
  EXPECT_GT(bound, 0);
  double best_classical = INFINITY;
  int learned = 0;
  for (const json& m : b.at("methods")) {
    SCOPED_TRACE(m.at("method").get<std::string>());
    const bool is_learned = m.at("searched").get<bool>();
    ASSERT_EQ(m.at("runs").size(), is_learned ? 2u : 1u);
    for (const json& r : m.at("runs")) {
      ASSERT_TRUE(r.at("placed").get<bool>());
      ASSERT_TRUE(r.at("feasible").get<bool>());
      const double t = r.at("step_time").get<double>();
      EXPECT_GE(t, bound * (1 - 1e-9));  // Never below the lower bound.
      EXPECT_EQ(r.at("peak_memory_bytes").size(),
                b.at("devices").get<size_t>());
      if (!is_learned) continue;
      const int64_t samples = r.at("samples").get<int64_t>();
      EXPECT_EQ(samples, m.at("budget_samples").get<int64_t>());
      EXPECT_GE(r.at("samples_to_best").get<int64_t>(), 1);
      EXPECT_LE(r.at("samples_to_best").get<int64_t>(), samples);
      EXPECT_LE(r.at("seconds_to_best").get<double>(),
                r.at("wall_seconds").get<double>());
      // The curve's best is non-increasing and ends at the run's best.
      const json& best = r.at("curve").at("best_step_time");
      ASSERT_FALSE(best.empty());
      for (size_t i = 1; i < best.size(); ++i) {
        if (best[i - 1].is_number()) {
          EXPECT_LE(best[i].get<double>(), best[i - 1].get<double>());
        }
      }
      EXPECT_DOUBLE_EQ(best.back().get<double>(), t);
      EXPECT_EQ(r.at("curve").at("samples").back().get<int64_t>(), samples);
    }
    const json& spread = m.at("step_time");
    EXPECT_LE(spread.at("min").get<double>(),
              spread.at("median").get<double>());
    EXPECT_LE(spread.at("median").get<double>(),
              spread.at("max").get<double>());
    if (is_learned) {
      ++learned;
    } else {
      best_classical =
          std::min(best_classical, spread.at("median").get<double>());
    }
    // Reduction against the best baseline, as defined.
    EXPECT_NEAR(m.at("reduction_vs_best_baseline").get<double>(),
                1 - spread.at("median").get<double>() /
                        b.at("best_baseline_step_time").get<double>(),
                1e-12);
  }
  EXPECT_EQ(learned, 3);  // mcmc, post, colocrl.
  // The best baseline is the fastest classical method, and no classical
  // method has a positive reduction against it.
  EXPECT_DOUBLE_EQ(b.at("best_baseline_step_time").get<double>(),
                   best_classical);
  for (const json& m : b.at("methods")) {
    if (!m.at("searched").get<bool>()) {
      EXPECT_LE(m.at("reduction_vs_best_baseline").get<double>(), 0);
    }
  }
  // The scale study: sizes grow, every cost is measured.
  const json& rows = doc.at("scale").at("rows");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_LT(rows[0].at("ops").get<int>(), rows[1].at("ops").get<int>());
  for (const json& row : rows) {
    EXPECT_GT(row.at("simulate_seconds").get<double>(), 0);
    EXPECT_GT(row.at("peak_rss_bytes").get<int64_t>(), 0);
    EXPECT_EQ(row.at("placers").size(), 2u);
  }
}

TEST_F(SmokeSuiteTest, MarkdownHasThePapersLayout) {
  ASSERT_NE(results_, nullptr);
  const std::string md = BenchResultsToMarkdown(*results_);
  EXPECT_THAT(md, HasSubstr("## Smoke\n"));
  EXPECT_THAT(md, HasSubstr("| benchmark | GPUs | single-gpu | expert | "
                            "round-robin | m-etf | mcmc | post | colocrl | "
                            "best "
                            "learned vs best baseline |"));
  EXPECT_THAT(md, HasSubstr("| `rnnlm-small@k40x2` | 2 |"));
  EXPECT_THAT(md, HasSubstr("samples to best"));
  EXPECT_THAT(md, HasSubstr("## Scale"));
}

// A view of the results: the columns asked for, the comparison with the
// best baseline among them, the detail tables on request.
TEST_F(SmokeSuiteTest, SelectResultsKeepsTheColumnsAskedFor) {
  ASSERT_NE(results_, nullptr);
  StatusOr<BenchResults> all = SelectResults(*results_, {}, {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(BenchResultsToMarkdown(*all), BenchResultsToMarkdown(*results_));

  StatusOr<BenchResults> some =
      SelectResults(*results_, {"rnnlm-small@k40x2"}, {"single-gpu", "post"});
  ASSERT_TRUE(some.ok()) << some.status().message();
  ASSERT_EQ(some->tables.size(), 1u);
  const BenchmarkResults& b = some->tables[0].benchmarks[0];
  ASSERT_EQ(b.methods.size(), 2u);
  EXPECT_EQ(b.methods[0].label, "single-gpu");
  EXPECT_EQ(b.methods[1].label, "post");
  // The best baseline is the only classical column kept.
  EXPECT_EQ(b.best_baseline, "single-gpu");
  EXPECT_TRUE(some->scale.empty());
  const std::string md = BenchResultsToMarkdown(*some, /*details=*/false);
  EXPECT_THAT(md, HasSubstr("| benchmark | GPUs | single-gpu | post | best "
                            "learned vs best baseline |"));
  EXPECT_THAT(md, HasSubstr("vs single-gpu"));
  EXPECT_THAT(md, Not(HasSubstr("samples to best")));
  EXPECT_THAT(BenchResultsToMarkdown(*some), HasSubstr("samples to best"));

  EXPECT_THAT(SelectResults(*results_, {}, {"spotlight"}).status().message(),
              AllOf(HasSubstr("--methods spotlight: not in the results"),
                    HasSubstr("(there: colocrl, expert, m-etf, mcmc, post, "
                              "round-robin, single-gpu)")));
  EXPECT_THAT(SelectResults(*results_, {"nmt@k40x2"}, {}).status().message(),
              HasSubstr("--models nmt@k40x2: not in the results"));
}

TEST_F(SmokeSuiteTest, HtmlReportIsWellFormedWithCurvesAndScalePlot) {
  ASSERT_NE(json_, nullptr);
  StatusOr<std::string> html = BenchReportHtml(*json_, "smoke.json");
  ASSERT_TRUE(html.ok()) << html.status().message();
  const testing_xml::XmlCheck check = testing_xml::CheckXml(*html);
  ASSERT_TRUE(check.ok()) << check.error;
  // One curve plot for the benchmark and the scale plot.
  EXPECT_EQ(check.elements.at("svg"), 2);
  // Two methods x two seeds of best-so-far lines.
  EXPECT_GE(check.elements.at("polyline"), 4);
  EXPECT_THAT(*html, HasSubstr("Cost against graph size (log-log)"));
  EXPECT_THAT(*html, HasSubstr("best baseline ("));
  // A one-shot placer's wall time is under a millisecond: shown in
  // significant digits, not as 0.000.
  EXPECT_THAT(*html, Not(HasSubstr(">0.000<")));
}

// ------------------------------------------------- continuing a killed run

// Five runs: expert, m-etf, post with two seeds, a scale row.
const char* kTinySuites = R"({
  "format": "dplace.suites", "version": 1,
  "suites": [{"name": "tiny", "seeds": [1, 2], "tables": [{
    "title": "T",
    "benchmarks": [{"name": "rnnlm@k40x2",
                    "model": "zoo:rnnlm:layers=2,units=64,steps=2,vocab=300",
                    "cluster": "k40x2"}],
    "methods": [{"method": "expert"}, {"method": "m-etf"},
                {"method": "post", "budget_samples": 24}]}],
    "scale": {"cluster": "k40x2", "models": ["random:ops=200"],
              "methods": ["m-etf"], "simulate_repeats": 1}}]})";

Suite Tiny() {
  StatusOr<std::vector<Suite>> suites = ParseSuites(kTinySuites, "tiny.json");
  EXPECT_TRUE(suites.ok()) << suites.status().message();
  return suites.ok() ? (*suites)[0] : Suite{};
}

// Every run's step time in suite order, and a scale row's placers' times.
std::vector<double> StepTimes(const BenchResults& r) {
  std::vector<double> out;
  for (const TableResults& t : r.tables) {
    for (const BenchmarkResults& b : t.benchmarks) {
      for (const MethodResults& m : b.methods) {
        for (const RunRecord& run : m.runs) out.push_back(run.step_time);
      }
    }
  }
  for (const ScaleRow& row : r.scale) {
    for (const ScalePlacerCost& p : row.placers) out.push_back(p.step_time);
  }
  return out;
}

class ResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/dplace_resume_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() +
            ".json";
    std::remove(path_.c_str());
  }
  // Runs the tiny suite (continuing `resume` when given), checkpointing to
  // path_; counts the runs that start.
  StatusOr<BenchResults> Run(const BenchResults* resume, int max_runs,
                             int* started) {
    BenchRunOptions options;
    options.resume = resume;
    options.max_runs = max_runs;
    options.progress = [started](const std::string&) { ++*started; };
    options.checkpoint = [this](const BenchResults& so_far) {
      return WriteTextFile(path_, BenchResultsToJson(so_far));
    };
    return RunSuite(Tiny(), "dplace bench --suite tiny", options);
  }
  BenchResults ReadBack() {
    StatusOr<std::string> text = ReadTextFile(path_);
    EXPECT_TRUE(text.ok()) << text.status().message();
    StatusOr<BenchResults> r = ParseBenchResults(text.ok() ? *text : "", path_);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : BenchResults{};
  }
  std::string path_;
};

TEST_F(ResumeTest, KilledRunContinuesWithOnlyTheRunsItLacks) {
  int started = 0;
  StatusOr<BenchResults> whole = Run(nullptr, 0, &started);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_EQ(started, 5);
  EXPECT_TRUE(whole->complete);
  std::remove(path_.c_str());

  // SIGKILL as the third run starts: the file holds the first two, whole.
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // LibTorch has threads.
  EXPECT_EXIT(
      {
        BenchRunOptions options;
        int runs = 0;
        options.progress = [&runs](const std::string&) {
          if (++runs == 3) std::raise(SIGKILL);
        };
        options.checkpoint = [this](const BenchResults& so_far) {
          return WriteTextFile(path_, BenchResultsToJson(so_far));
        };
        (void)RunSuite(Tiny(), "dplace bench --suite tiny", options);
      },
      ::testing::KilledBySignal(SIGKILL), "");
  const BenchResults killed = ReadBack();
  EXPECT_FALSE(killed.complete);
  EXPECT_EQ(killed.runs_done, 2);
  EXPECT_EQ(killed.runs_total, 5);
  ASSERT_TRUE(CheckResumable(killed, Tiny(), path_).ok());

  started = 0;
  StatusOr<BenchResults> resumed = Run(&killed, 0, &started);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ(started, 3);  // Only the runs the file lacked.
  EXPECT_TRUE(resumed->complete);
  EXPECT_EQ(resumed->runs_done, 5);
  EXPECT_EQ(resumed->command, "dplace bench --suite tiny");
  EXPECT_EQ(resumed->resumed_commands,
            std::vector<std::string>{"dplace bench --suite tiny"});
  // The same placements as one uninterrupted run (the scale study's times
  // differ, its placements do not).
  EXPECT_EQ(StepTimes(*resumed), StepTimes(*whole));
  EXPECT_EQ(StepTimes(ReadBack()), StepTimes(*whole));
  EXPECT_EQ(BenchResultsToMarkdown(*resumed).find("Unfinished"),
            std::string::npos);
}

// SIGKILL in the middle of post's first search, after its first
// checkpoint: the next bench continues that search from the checkpoint,
// and the results are one uninterrupted run's, the search's curve and
// samples to best included; the search's files are gone at the end.
TEST_F(ResumeTest, KilledSearchContinuesFromItsCheckpoint) {
  int started = 0;
  StatusOr<BenchResults> whole = Run(nullptr, 0, &started);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  std::remove(path_.c_str());

  const std::string state = path_ + ".search";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // LibTorch has threads.
  EXPECT_EXIT(
      {
        BenchRunOptions options;
        options.search_state = state;
        options.search_checkpoint_every = 1;
        options.search_progress = [](const SearchProgress& p) {
          if (p.samples >= 12) std::raise(SIGKILL);  // Its first batch.
        };
        options.checkpoint = [this](const BenchResults& so_far) {
          return WriteTextFile(path_, BenchResultsToJson(so_far));
        };
        (void)RunSuite(Tiny(), "dplace bench --suite tiny", options);
      },
      ::testing::KilledBySignal(SIGKILL), "");
  const BenchResults killed = ReadBack();
  EXPECT_EQ(killed.runs_done, 2);  // expert and m-etf.
  ASSERT_TRUE(ReadTextFile(state + ".ckpt").ok());

  BenchRunOptions options;
  options.resume = &killed;
  options.search_state = state;
  options.search_checkpoint_every = 1;
  std::vector<std::string> lines;
  options.progress = [&lines](const std::string& line) {
    lines.push_back(line);
  };
  int64_t first_report = 0;
  options.search_progress = [&first_report](const SearchProgress& p) {
    if (first_report == 0) first_report = p.samples;
  };
  StatusOr<BenchResults> resumed =
      RunSuite(Tiny(), "dplace bench --suite tiny", options);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines[0], HasSubstr("post seed 1 (continues its search from "
                                  "the last checkpoint)"));
  EXPECT_EQ(first_report, 24);  // The batch after the checkpoint's.
  EXPECT_EQ(StepTimes(*resumed), StepTimes(*whole));
  const RunRecord& a = whole->tables[0].benchmarks[0].methods[2].runs[0];
  const RunRecord& b = resumed->tables[0].benchmarks[0].methods[2].runs[0];
  EXPECT_EQ(b.samples, 24);
  EXPECT_EQ(b.samples_to_best, a.samples_to_best);
  EXPECT_EQ(b.curve.samples, a.curve.samples);
  EXPECT_EQ(b.curve.best_step_time, a.curve.best_step_time);
  EXPECT_EQ(b.curve.mean_step_time, a.curve.mean_step_time);
  for (const char* ext : {".ckpt", ".jsonl", ".run"}) {
    EXPECT_FALSE(ReadTextFile(state + ext).ok()) << ext;
  }
}

// A stop requested (SIGINT, SIGTERM) while the second run is in flight:
// that run ends, no other starts, the file is resumable, and resuming it
// gives one uninterrupted run's results.
TEST_F(ResumeTest, AStopEndsTheRunInFlightAndResumes) {
  int started = 0;
  StatusOr<BenchResults> whole = Run(nullptr, 0, &started);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  std::remove(path_.c_str());

  BenchRunOptions options;
  int runs = 0;
  options.progress = [&runs](const std::string&) { ++runs; };
  options.stop_requested = [&runs] { return runs >= 2; };
  options.checkpoint = [this](const BenchResults& so_far) {
    return WriteTextFile(path_, BenchResultsToJson(so_far));
  };
  StatusOr<BenchResults> stopped =
      RunSuite(Tiny(), "dplace bench --suite tiny", options);
  ASSERT_TRUE(stopped.ok()) << stopped.status().message();
  EXPECT_EQ(runs, 2);
  EXPECT_FALSE(stopped->complete);
  EXPECT_EQ(stopped->runs_done, 2);
  const BenchResults kept = ReadBack();
  EXPECT_EQ(kept.runs_done, 2);
  ASSERT_TRUE(CheckResumable(kept, Tiny(), path_).ok());

  started = 0;
  StatusOr<BenchResults> resumed = Run(&kept, 0, &started);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ(started, 3);
  EXPECT_TRUE(resumed->complete);
  EXPECT_EQ(StepTimes(*resumed), StepTimes(*whole));
}

TEST_F(ResumeTest, MaxRunsStopsAndTheRestRunsInParts) {
  int started = 0;
  StatusOr<BenchResults> first = Run(nullptr, 3, &started);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(started, 3);
  EXPECT_FALSE(first->complete);
  EXPECT_EQ(first->runs_done, 3);
  EXPECT_THAT(BenchResultsToMarkdown(*first),
              HasSubstr("Unfinished: 3 of 5 runs"));
  // post has one of its two seeds; the first part's runs are kept.
  const BenchResults part = ReadBack();
  ASSERT_EQ(part.tables[0].benchmarks[0].methods.size(), 3u);
  EXPECT_EQ(part.tables[0].benchmarks[0].methods[2].runs.size(), 1u);

  started = 0;
  StatusOr<BenchResults> second = Run(&part, 1, &started);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(started, 1);
  EXPECT_EQ(second->runs_done, 4);
  const BenchResults part2 = ReadBack();
  started = 0;
  StatusOr<BenchResults> last = Run(&part2, 0, &started);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(started, 1);  // The scale row.
  EXPECT_TRUE(last->complete);
  ASSERT_EQ(last->scale.size(), 1u);
  EXPECT_EQ(last->tables[0].benchmarks[0].methods[2].runs[1].seed, 2u);

  // Continuing a finished run runs nothing.
  started = 0;
  const BenchResults done = ReadBack();
  StatusOr<BenchResults> again = Run(&done, 0, &started);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(started, 0);
  EXPECT_EQ(StepTimes(*again), StepTimes(done));
}

TEST_F(ResumeTest, ResultsOfAnotherRunAreRefusedNamingTheField) {
  int started = 0;
  ASSERT_TRUE(Run(nullptr, 2, &started).ok());
  const BenchResults part = ReadBack();

  Suite other = Tiny();
  other.tables[0].methods[2].budget_samples = 48;
  Status s = CheckResumable(part, other, "r.json");
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("r.json: holds the results of another run"),
                    HasSubstr("tables[0].methods[2].budget_samples is 24, "
                              "this run's is 48")));
  other = Tiny();
  other.seeds = {1};
  EXPECT_THAT(CheckResumable(part, other, "r.json").message(),
              HasSubstr("definition.seeds is 2 entries, this run's is 1 "
                        "entries"));
  other = Tiny();
  other.tables[0].benchmarks[0].model = "zoo:rnnlm";
  EXPECT_THAT(CheckResumable(part, other, "r.json").message(),
              HasSubstr("tables[0].benchmarks[0].model is "
                        "\"zoo:rnnlm:layers=2,units=64,steps=2,vocab=300\", "
                        "this run's is \"zoo:rnnlm\""));
  // Prose is not part of what ran.
  other = Tiny();
  other.tables[0].source = "another description";
  EXPECT_TRUE(CheckResumable(part, other, "r.json").ok());

  BenchResults legacy = part;
  legacy.definition.clear();
  EXPECT_THAT(CheckResumable(legacy, Tiny(), "old.json").message(),
              HasSubstr("old.json: has no suite definition"));

  // A kept benchmark whose graph changed since is not mixed with new runs.
  BenchResults changed = part;
  changed.tables[0].benchmarks[0].graph_hash = "0000";
  StatusOr<BenchResults> mixed = Run(&changed, 0, &started);
  EXPECT_THAT(mixed.status().message(),
              AllOf(HasSubstr("rnnlm@k40x2: the graph differs from the one "
                              "of the kept runs"),
                    HasSubstr("start a new results file")));
}

// A run with --seeds 1 is continued by one with every seed: the new seeds
// run, the first seed's runs are kept.
TEST_F(ResumeTest, MoreSeedsContinueAFinishedRun) {
  Suite one_seed = Tiny();
  one_seed.seeds = {1};
  int started = 0;
  BenchRunOptions options;
  options.progress = [&started](const std::string&) { ++started; };
  StatusOr<BenchResults> first =
      RunSuite(one_seed, "dplace bench --suite tiny --seeds 1", options);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(started, 4);
  EXPECT_TRUE(first->complete);

  ASSERT_TRUE(CheckResumable(*first, Tiny(), "r.json").ok());
  started = 0;
  options.resume = &*first;
  StatusOr<BenchResults> all =
      RunSuite(Tiny(), "dplace bench --suite tiny", options);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(started, 1);  // post's seed 2.
  EXPECT_TRUE(all->complete);
  EXPECT_EQ(all->runs_done, 5);
  const MethodResults& post = all->tables[0].benchmarks[0].methods[2];
  ASSERT_EQ(post.runs.size(), 2u);
  EXPECT_EQ(post.runs[1].seed, 2u);
  started = 0;
  StatusOr<BenchResults> whole = Run(nullptr, 0, &started);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(StepTimes(*all), StepTimes(*whole));

  // Other seeds than the file's are another run.
  Suite other = Tiny();
  other.seeds = {2, 3};
  EXPECT_THAT(CheckResumable(*first, other, "r.json").message(),
              HasSubstr("definition.seeds[0] is 1, this run's is 2"));
}

// The search in flight reports to the bench's hook after each batch: post's
// two runs (seeds 1 and 2) count up to their budget of 24 samples; the
// classical placers report nothing.
TEST(SearchLogTest, ReadsBackWhatTheLogWrote) {
  const std::string path = ::testing::TempDir() + "/dplace_search_log.jsonl";
  SampleRecord none{0, 0.5, 9.0, false, -3.0, 0};
  SampleRecord fits{1, 0.75, 1.25, true, -1.1, 1.25};
  ASSERT_TRUE(WriteTextFile(path, SampleRecordLine(none) + "\n" +
                                      SampleRecordLine(fits, {{"groups", 3}}) +
                                      "\n")
                  .ok());
  StatusOr<std::vector<SampleRecord>> read = ReadSearchLog(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].best_step_time, 0);  // null: none feasible yet.
  EXPECT_FALSE((*read)[0].feasible);
  EXPECT_EQ((*read)[1].index, 1);
  EXPECT_EQ((*read)[1].wall_seconds, 0.75);
  EXPECT_EQ((*read)[1].step_time, 1.25);
  EXPECT_EQ((*read)[1].reward, -1.1);
  EXPECT_EQ((*read)[1].best_step_time, 1.25);

  ASSERT_TRUE(WriteTextFile(path, SampleRecordLine(none) +
                                      "\n{\"sample\": 1, \"wall_s\": 2}\n")
                  .ok());
  EXPECT_THAT(ReadSearchLog(path).status().message(),
              HasSubstr(path + ":2: expected a sample record"));
}

TEST(BenchProgressTest, EverySearchReportsItsBatches) {
  BenchRunOptions options;
  std::vector<int64_t> samples;
  options.search_progress = [&samples](const SearchProgress& p) {
    EXPECT_EQ(p.budget.samples, 24);
    samples.push_back(p.samples);
  };
  StatusOr<BenchResults> r =
      RunSuite(Tiny(), "dplace bench --suite tiny", options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_GE(samples.size(), 4u);
  EXPECT_EQ(std::count(samples.begin(), samples.end(), 24), 2);
  EXPECT_EQ(samples.back(), 24);
  for (size_t i = 1; i < samples.size(); ++i) {
    if (samples[i - 1] != 24) {
      EXPECT_GT(samples[i], samples[i - 1]) << i;
    }
  }
}

TEST_F(ResumeTest, ResultsJsonReadsBackToTheSameDocument) {
  int started = 0;
  StatusOr<BenchResults> r = Run(nullptr, 0, &started);
  ASSERT_TRUE(r.ok());
  const std::string json_text = BenchResultsToJson(*r);
  StatusOr<BenchResults> back = ParseBenchResults(json_text, "r.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(BenchResultsToJson(*back), json_text);
  EXPECT_THAT(
      ParseBenchResults(R"({"format": "dplace.bench-results", "tables": [
        {"title": "T", "benchmarks": [{"name": "b", "methods": [
          {"method": "post", "runs": [{"seed": 1, "step_time": "fast"}]}]}]}]})",
                        "r.json")
          .status()
          .message(),
      HasSubstr("r.json: tables[0].benchmarks[0].methods[0].runs[0]."
                "step_time: expected a number, got \"fast\""));
}

}  // namespace
}  // namespace dplace
