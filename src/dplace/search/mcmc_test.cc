// mcmc: finds known optima of small DAGs, never ends worse than its start,
// is deterministic for a seed, restarts only when asked, steps over
// out-of-memory placements without choosing them, resumes where an
// uninterrupted search ends, and rejects bad options by name.
#include "dplace/search/mcmc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "dplace/env/environment.h"
#include "dplace/io/file.h"
#include "dplace/io/placement_json.h"
#include "dplace/search/start_placements.h"
#include "dplace/sim/simulator.h"
#include "dplace/sim/work_bound.h"
#include "dplace/testing/placer_test_util.h"
#include "dplace/testing/small_dags.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing_dags::Dag;
using testing_dags::Gpus;
using testing_dags::kGB;

// mcmc with `options` on `problem`, through a one-thread simulated
// environment.
StatusOr<PlaceResult> Search(const PlacementProblem& problem,
                             const std::vector<std::string>& options,
                             const SearchOptions& search) {
  std::unique_ptr<Environment> env = NewSimulatedEnvironment(*problem.cost, 1);
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> method,
                          MakeMethod("mcmc", *MethodOptions::Parse(options)));
  PlaceContext context;
  context.environment = env.get();
  context.search = search;
  return method->Place(problem, context);
}

SearchOptions Samples(int64_t samples) {
  SearchOptions search;
  search.budget.samples = samples;
  return search;
}

// A search of 60 samples that continues `interrupted`'s: from its
// checkpoint, in its log.
SearchOptions ResumeOf(const SearchOptions& interrupted) {
  SearchOptions resumed = Samples(60);
  resumed.log_path = interrupted.log_path;
  resumed.checkpoint_path = interrupted.checkpoint_path;
  resumed.resume_path = interrupted.checkpoint_path;
  return resumed;
}

SimResult Simulate(const PlacementProblem& problem, const Placement& p) {
  return *Simulator(*problem.cost).Simulate(p);
}

// The log's lines without their wall times.
std::vector<std::string> LogWithoutWallTimes(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("wall_s");
    lines.push_back(j.dump());
  }
  return lines;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/mcmc_test_" + name;
}

// A search resumed from the checkpoint after `batches` batches of four
// began after the start candidates (every one-shot placer that places the
// problem, `starts`; one more sample when snapping the best to the groups
// changed it) and those batches.
void ExpectResumedAfter(const SearchTrace& resumed, int64_t starts,
                        int64_t batches) {
  EXPECT_GE(resumed.first_sample_of_this_run, starts + batches * 4);
  EXPECT_LE(resumed.first_sample_of_this_run, starts + 1 + batches * 4);
}

// The zoo's small RNN language model on two K40s, with its expert.
struct ZooProblem {
  explicit ZooProblem(const std::string& model, const std::string& preset)
      : spec(*ParseZooSpec(model)),
        p(*MakeZooModel(spec), *MakeClusterPreset(preset)) {
    p.problem.expert = [this] {
      return spec.model->expert(p.graph, p.cluster, spec.params);
    };
  }
  ZooSpec spec;
  PlacerTestProblem p;
};

constexpr const char* kSmallRnnlm =
    "rnnlm:layers=2,units=256,steps=4,vocab=2000,batch=16";

// The proposal mixes the tests run: mcmc's, and chain moves in place of
// moves of any group (whose chain a checkpoint keeps).
struct Moves {
  const char* name;
  std::vector<std::string> options;
};
const Moves kMoves[] = {
    {"mcmc's moves", {}},
    {"chain moves", {"chain_probability=0.35", "move_probability=0"}}};

// `options` followed by the mix's.
std::vector<std::string> With(std::vector<std::string> options,
                              const Moves& moves) {
  options.insert(options.end(), moves.options.begin(), moves.options.end());
  return options;
}

TEST(McmcTest, FindsTheOptimumOfSmallDagsFromOneGpu) {
  struct Case {
    const char* name;
    Graph graph;
    int gpus;
  };
  Case cases[] = {{"fork-join", testing_dags::ForkJoin(), 2},
                  {"two heavy chains", testing_dags::TwoHeavyChains(), 2},
                  {"wide diamond", testing_dags::WideDiamond(), 3}};
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PlacerTestProblem p(std::move(c.graph), Gpus(c.gpus));
    const double optimum = testing_dags::BruteForceOptimum(p);
    const double start =
        Simulate(p.problem, Place("single-gpu", p.problem)).step_time;
    ASSERT_GT(start, optimum * 1.1);  // The walk has somewhere to go.
    for (const Moves& moves : kMoves) {
      SCOPED_TRACE(moves.name);
      StatusOr<PlaceResult> r = Search(
          p.problem,
          With({"start=single-gpu", "batch=4", "restart_after=40"}, moves),
          Samples(600));
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_NEAR(Simulate(p.problem, r->placement).step_time, optimum,
                  1e-6 * optimum);
      EXPECT_NEAR(r->search.best_step_time, optimum, 1e-6 * optimum);
      EXPECT_EQ(r->search.samples, 600);
    }
  }
}

TEST(McmcTest, NeverEndsWorseThanItsStart) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  for (const char* start : {"expert", "round-robin", "m-etf", "single-gpu"}) {
    const double start_time =
        Simulate(z.p.problem, Place(start, z.p.problem)).step_time;
    for (uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE(std::string(start) + " seed " + std::to_string(seed));
      PlacementProblem problem = z.p.problem;
      problem.seed = seed;
      StatusOr<PlaceResult> r =
          Search(problem,
                 {std::string("start=") + start, "batch=8",
                  "beta=5"},  // A hot walk wanders uphill.
                 Samples(40));
      ASSERT_TRUE(r.ok()) << r.status().message();
      const SimResult result = Simulate(problem, r->placement);
      EXPECT_TRUE(result.feasible);
      EXPECT_LE(result.step_time, start_time);
      EXPECT_EQ(result.step_time, r->search.best_step_time);
    }
  }
}

// start=FILE.json refines a placement a user brings: the walk's first
// sample is that placement, and it never ends worse. A file that cannot be
// read, or is for another cluster, is an error naming it.
TEST(McmcTest, StartsFromAPlacementFile) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  const Placement start = Place("round-robin", z.p.problem);
  const double start_time = Simulate(z.p.problem, start).step_time;
  const std::string path = TempPath("start.json");
  {
    std::ofstream out(path);
    out << PlacementToJson(*z.p.problem.graph, *z.p.problem.cluster, start);
  }
  SearchOptions search = Samples(40);
  search.log_path = TempPath("start.jsonl");
  StatusOr<PlaceResult> r =
      Search(z.p.problem, {"start=" + path, "batch=4"}, search);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LE(r->search.best_step_time, start_time);
  std::ifstream log(search.log_path);
  std::string first;
  ASSERT_TRUE(std::getline(log, first));
  EXPECT_NEAR(nlohmann::json::parse(first).at("step_time").get<double>(),
              start_time, 1e-9 * start_time);

  const std::string missing = TempPath("no-such-start.json");
  r = Search(z.p.problem, {"start=" + missing}, Samples(8));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("start"));
  EXPECT_THAT(r.status().message(), HasSubstr(missing));
  ZooProblem other(kSmallRnnlm, "k40x4");
  r = Search(other.p.problem, {"start=" + path}, Samples(8));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("k40x2"));
}

TEST(McmcTest, AutoStartsFromTheBestClassicalPlacement) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  double best_classical = 0;
  for (const char* name :
       {"expert", "mincut", "round-robin", "m-etf", "single-gpu"}) {
    const double t = Simulate(z.p.problem, Place(name, z.p.problem)).step_time;
    if (best_classical == 0 || t < best_classical) best_classical = t;
  }
  StatusOr<PlaceResult> r = Search(z.p.problem, {"batch=4"}, Samples(12));
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The five candidates are the first samples.
  ASSERT_GE(r->search.history.size(), 5u);
  EXPECT_EQ(r->search.history[4].best_step_time, best_classical);
  EXPECT_LE(r->search.best_step_time, best_classical);
}

TEST(McmcTest, SameSeedSamePlacementAndLog) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  std::vector<Placement> placements;
  std::vector<std::vector<std::string>> logs;
  for (const char* name : {"a", "b"}) {
    SearchOptions search = Samples(64);
    search.log_path = TempPath(std::string("determinism_") + name + ".jsonl");
    StatusOr<PlaceResult> r = Search(z.p.problem, {"batch=8"}, search);
    ASSERT_TRUE(r.ok()) << r.status().message();
    placements.push_back(r->placement);
    logs.push_back(LogWithoutWallTimes(search.log_path));
  }
  EXPECT_EQ(placements[0], placements[1]);
  EXPECT_EQ(logs[0], logs[1]);
  ASSERT_EQ(logs[0].size(), 64u);
  EXPECT_THAT(logs[0][0], HasSubstr("\"sample\":0"));
  EXPECT_THAT(logs[0][0], HasSubstr("\"best_step_time\""));
  EXPECT_THAT(logs[0][0], HasSubstr("\"reward\""));
  // Another seed walks elsewhere.
  PlacementProblem other = z.p.problem;
  other.seed = 7;
  SearchOptions search = Samples(64);
  search.log_path = TempPath("determinism_c.jsonl");
  ASSERT_TRUE(Search(other, {"batch=8"}, search).ok());
  EXPECT_NE(LogWithoutWallTimes(search.log_path), logs[0]);
}

// The walk goes back to its best only when restart_after asks it to: by
// default it never does (on long searches, restarts every 400 proposals
// kept it next to its best: docs/placers.md).
TEST(McmcTest, RestartsOnlyWhenAsked) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  auto restarts = [&](const std::vector<std::string>& options) {
    SearchOptions search = Samples(3000);
    double last = -1;
    search.progress = [&last](const SearchProgress& p) {
      for (const auto& [key, value] : p.agent_stats) {
        if (key == "restarts") last = value;
      }
    };
    StatusOr<PlaceResult> r = Search(z.p.problem, options, search);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return last;
  };
  EXPECT_EQ(restarts({"batch=4"}), 0);
  EXPECT_EQ(restarts({"batch=4", "restart_after=0"}), 0);
  EXPECT_GE(restarts({"batch=4", "restart_after=400"}), 1);
}

// Two 6 GB parameters on GPUs of 10 GB: only the placements that split them
// fit, and every move of one proposes an out-of-memory placement. It costs
// twice the serial bound (every op and tensor one after another: 2.5 s),
// more than any placement that fits.
TEST(McmcTest, OutOfMemoryProposalsAreLoggedInfeasibleAndNotChosen) {
  Dag g;
  const OpId a = g.Op("a", 1, 6 * kGB);
  const OpId b = g.Op("b", 1, 6 * kGB);
  const OpId c = g.Op("c", 0.5);
  g.Edge(a, c, 1000);
  g.Edge(b, c, 1000);
  const PlacerTestProblem p(std::move(g).Build(), Gpus(2, 1e9, 10 * kGB));
  std::unique_ptr<Environment> env = NewSimulatedEnvironment(p.cost, 1);
  const McmcSettings settings = *ReadMcmcSettings({});
  for (const Placement& start : {Placement{0, 1, 0}, Placement{0, 0, 0}}) {
    SCOPED_TRACE(start[1] == 1 ? "feasible start" : "infeasible start");
    PlaceContext context;
    context.environment = env.get();
    context.search.budget.samples = 48;
    StatusOr<PlaceResult> r =
        RefinePlacement(p.problem, start, settings, context);
    ASSERT_TRUE(r.ok()) << r.status().message();
    int infeasible = 0;
    for (const SampleRecord& s : r->search.history) {
      if (s.feasible) continue;
      ++infeasible;
      EXPECT_DOUBLE_EQ(s.reward, -std::sqrt(2 * SerialStepBound(p.cost)));
    }
    EXPECT_GT(infeasible, 0);
    EXPECT_NEAR(SerialStepBound(p.cost), 2.5, 1e-5);
    const SimResult result = Simulate(p.problem, r->placement);
    EXPECT_TRUE(result.feasible);
    EXPECT_TRUE(r->search.best_feasible);
    EXPECT_NE(r->placement[a], r->placement[b]);
  }
}

// Before its first sample, the walk's progress names each placer of its
// start as it runs (start=auto: every one-shot placer; a method: that
// one), with the wall time going on; then the batches, with no stage.
TEST(McmcTest, ProgressNamesEachStartPlacerBeforeTheBatches) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  const int placers = static_cast<int>(AutoStartMethods(z.p.problem).size());
  for (const auto& [start, stages] : std::vector<std::pair<std::string, int>>{
           {"auto", placers}, {"m-etf", 1}}) {
    SCOPED_TRACE(start);
    SearchOptions search = Samples(16);
    double now = 0;
    search.clock = [&now] { return now; };
    std::vector<SearchProgress> reports;
    search.progress = [&](const SearchProgress& p) {
      reports.push_back(p);
      now += 1;
    };
    StatusOr<PlaceResult> r =
        Search(z.p.problem, {"batch=4", "start=" + start}, search);
    ASSERT_TRUE(r.ok()) << r.status().message();
    // One report as each placer starts, and one as a placer ends while
    // others run beside it.
    size_t first_batch = 0;
    int started = 0;
    for (; first_batch < reports.size() && !reports[first_batch].stage.empty();
         ++first_batch) {
      const SearchProgress& report = reports[first_batch];
      const std::string next = "one-shot placer " +
                               std::to_string(started + 1) + " of " +
                               std::to_string(stages) + ": ";
      if (report.stage.rfind(next, 0) == 0) ++started;
      EXPECT_THAT(report.stage,
                  StartsWith("one-shot placer " + std::to_string(started) +
                             " of " + std::to_string(stages) + ": "));
      EXPECT_EQ(report.samples, 0);
      EXPECT_EQ(report.wall_seconds, first_batch);
    }
    EXPECT_EQ(started, stages);
    if (start != "auto") {
      EXPECT_EQ(first_batch, 1u);
      EXPECT_THAT(reports[0].stage, EndsWith(": m-etf"));
    }
    ASSERT_LT(first_batch, reports.size());
    for (size_t i = first_batch; i < reports.size(); ++i) {
      EXPECT_TRUE(reports[i].stage.empty());
      EXPECT_GT(reports[i].samples, 0);
    }
  }
}

// checkpoint_min_seconds: a due checkpoint waits until that many seconds
// passed since the last one. The clock moves one second a batch; with a
// checkpoint due every batch and 2.5 s between them, the ones written are
// those of batches 4 and 7 (at 3 s and 6 s), so a search killed after its
// eighth resumes from the seventh; with no least time, from the eighth.
TEST(McmcTest, CheckpointsWaitTheirLeastSeconds) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  const std::vector<std::string> options = {"batch=4", "restart_after=12"};
  const int64_t starts = StartCandidates(z.p.problem, "auto")->size();
  for (const auto& [least, batches] :
       std::vector<std::pair<double, int64_t>>{{2.5, 7}, {0, 8}}) {
    SCOPED_TRACE("least seconds " + std::to_string(least));
    double now = 0;
    SearchOptions killed = Samples(60);
    killed.clock = [&now] { return now; };
    killed.checkpoint_path = TempPath("least.ckpt");
    killed.checkpoint_every = 1;
    killed.checkpoint_min_seconds = least;
    std::remove(killed.checkpoint_path.c_str());
    killed.progress = [&now](const SearchProgress& p) {
      if (!p.stage.empty()) return;  // A start placer: not a batch.
      now += 1;
      if (p.updates == 8) throw std::runtime_error("killed");
    };
    EXPECT_THROW((void)Search(z.p.problem, options, killed),
                 std::runtime_error);
    SearchOptions resumed = Samples(60);
    resumed.resume_path = killed.checkpoint_path;
    StatusOr<PlaceResult> r = Search(z.p.problem, options, resumed);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ExpectResumedAfter(r->search, starts, batches);
  }
  SearchOptions negative = Samples(8);
  negative.checkpoint_min_seconds = -1;
  StatusOr<PlaceResult> refused = Search(z.p.problem, options, negative);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("checkpoint_min_seconds must be >= 0"));
}

// A search killed after its fifth batch (its checkpoint is of the fourth;
// the log has the fifth batch's lines too) and resumed ends where an
// uninterrupted one ends, with the same log.
TEST(McmcTest, ResumedAfterAKillEndsWhereAnUninterruptedSearchEnds) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  for (const Moves& moves : kMoves) {
    SCOPED_TRACE(moves.name);
    const std::vector<std::string> options =
        With({"batch=4", "restart_after=12"}, moves);
    SearchOptions whole = Samples(60);
    whole.log_path = TempPath("whole.jsonl");
    StatusOr<PlaceResult> uninterrupted = Search(z.p.problem, options, whole);
    ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status().message();

    SearchOptions killed = Samples(60);
    killed.log_path = TempPath("killed.jsonl");
    killed.checkpoint_path = TempPath("killed.ckpt");
    killed.checkpoint_every = 4;
    std::remove(killed.checkpoint_path.c_str());
    killed.progress = [](const SearchProgress& p) {
      if (p.updates == 5) throw std::runtime_error("killed");
    };
    EXPECT_THROW((void)Search(z.p.problem, options, killed),
                 std::runtime_error);

    SearchOptions resumed = ResumeOf(killed);
    StatusOr<PlaceResult> r = Search(z.p.problem, options, resumed);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ExpectResumedAfter(r->search, StartCandidates(z.p.problem, "auto")->size(),
                       4);
    EXPECT_EQ(r->placement, uninterrupted->placement);
    EXPECT_EQ(r->search.best_step_time, uninterrupted->search.best_step_time);
    EXPECT_EQ(r->search.samples, 60);
    EXPECT_EQ(LogWithoutWallTimes(resumed.log_path),
              LogWithoutWallTimes(whole.log_path));

    // A checkpoint of other settings is refused, naming what differs.
    StatusOr<PlaceResult> other = Search(z.p.problem, {"batch=8"}, resumed);
    ASSERT_FALSE(other.ok());
    EXPECT_THAT(other.status().message(),
                HasSubstr("made for another search: batch is 4"));
    std::vector<std::string> boundary = options;
    boundary.push_back("boundary_probability=0.2");
    other = Search(z.p.problem, boundary, resumed);
    ASSERT_FALSE(other.ok());
    EXPECT_THAT(other.status().message(),
                HasSubstr("made for another search: boundary_probability is"));

    // One changed byte, or a file cut short, is refused as such (no longer
    // as "not an mcmc checkpoint").
    const std::string file = *ReadTextFile(resumed.checkpoint_path);
    for (size_t at :
         {size_t{0}, file.find("\"samples\"") + 12, file.size() - 2}) {
      std::string flipped = file;
      flipped[at] = static_cast<char>(flipped[at] ^ 0x01);
      ASSERT_TRUE(WriteTextFile(resumed.resume_path, flipped).ok());
      other = Search(z.p.problem, options, resumed);
      ASSERT_FALSE(other.ok());
      EXPECT_THAT(other.status().message(),
                  HasSubstr("killed.ckpt: checksum mismatch: the file is "
                            "corrupt"))
          << at;
    }
    ASSERT_TRUE(
        WriteTextFile(resumed.resume_path, file.substr(0, file.size() / 2))
            .ok());
    EXPECT_THAT(Search(z.p.problem, options, resumed).status().message(),
                HasSubstr("killed.ckpt: no dplace checksum line at its end"));
  }
}

// A stop requested (SIGINT, SIGTERM) after the third batch, between two
// periodic checkpoints: the search returns its best so far, marked
// stopped, with a checkpoint of that batch, and resumed ends where an
// uninterrupted one ends, with the same log.
TEST(McmcTest, StoppedAtABatchItsCheckpointResumesWhereAWholeSearchEnds) {
  ZooProblem z(kSmallRnnlm, "k40x2");
  for (const Moves& moves : kMoves) {
    SCOPED_TRACE(moves.name);
    const std::vector<std::string> options =
        With({"batch=4", "restart_after=12"}, moves);
    SearchOptions whole = Samples(60);
    whole.log_path = TempPath("whole-stop.jsonl");
    StatusOr<PlaceResult> uninterrupted = Search(z.p.problem, options, whole);
    ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status().message();
    EXPECT_FALSE(uninterrupted->search.stopped);

    SearchOptions stopped = Samples(60);
    stopped.log_path = TempPath("stopped.jsonl");
    stopped.checkpoint_path = TempPath("stopped.ckpt");
    stopped.checkpoint_every = 10;  // None is due before the stop.
    std::remove(stopped.checkpoint_path.c_str());
    int64_t updates = 0;
    stopped.progress = [&updates](const SearchProgress& p) {
      updates = p.updates;
    };
    stopped.stop_requested = [&updates] { return updates >= 3; };
    StatusOr<PlaceResult> first = Search(z.p.problem, options, stopped);
    ASSERT_TRUE(first.ok()) << first.status().message();
    EXPECT_TRUE(first->search.stopped);
    EXPECT_EQ(first->search.updates, 3);
    EXPECT_LT(first->search.samples, 60);
    ASSERT_TRUE(ReadTextFile(stopped.checkpoint_path).ok());

    SearchOptions resumed = ResumeOf(stopped);
    StatusOr<PlaceResult> r = Search(z.p.problem, options, resumed);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_FALSE(r->search.stopped);
    EXPECT_EQ(r->search.first_sample_of_this_run, first->search.samples);
    EXPECT_EQ(r->placement, uninterrupted->placement);
    EXPECT_EQ(r->search.samples, 60);
    EXPECT_EQ(LogWithoutWallTimes(resumed.log_path),
              LogWithoutWallTimes(whole.log_path));
  }
}

TEST(McmcTest, BadOptionsAreErrorsNamingTheMethodAndKey) {
  auto error = [](const std::vector<std::string>& options) {
    StatusOr<std::unique_ptr<Method>> m =
        MakeMethod("mcmc", *MethodOptions::Parse(options));
    return m.ok() ? std::string("ok") : m.status().message();
  };
  EXPECT_THAT(error({"beta=-1"}),
              HasSubstr("method mcmc: option beta must be >= 0"));
  EXPECT_THAT(error({"beta=hot"}), HasSubstr("mcmc"));
  EXPECT_THAT(error({"beta=hot"}), HasSubstr("beta"));
  EXPECT_THAT(error({"batch=0"}),
              HasSubstr("method mcmc: option batch must be >= 1"));
  EXPECT_THAT(error({"restart_after=-1"}),
              HasSubstr("method mcmc: option restart_after must be >= 0"));
  EXPECT_EQ(error({"restart_after=0"}), "ok");
  EXPECT_THAT(error({"failing_step_time=-1"}),
              HasSubstr("method mcmc: option failing_step_time"));
  EXPECT_THAT(error({"move_probability=0.8", "swap_probability=0.4"}),
              HasSubstr("method mcmc: option chain_probability, "
                        "move_probability, swap_probability and "
                        "boundary_probability must be >= 0 and sum to at "
                        "most 1"));
  EXPECT_THAT(error({"chain_probability=0.4"}), HasSubstr("sum to at most 1"));
  EXPECT_THAT(error({"chain_probability=-0.1"}),
              HasSubstr("method mcmc: option chain_probability"));
  EXPECT_EQ(error({"chain_probability=0.35", "move_probability=0"}), "ok");
  EXPECT_THAT(error({"start=m-etff"}),
              HasSubstr("method mcmc: option start=m-etff: unknown method"));
  EXPECT_THAT(error({"start=mcmc"}),
              HasSubstr("method mcmc: option start=mcmc: a search cannot"));
  EXPECT_THAT(error({"betta=3"}), HasSubstr("unknown option \"betta\""));
  EXPECT_EQ(error({"start=m-sct", "beta=10"}), "ok");
}

TEST(McmcTest, IsASearchThatResumes) {
  const MethodTraits traits = TraitsOf(*FindMethod("mcmc"));
  EXPECT_TRUE(traits.searches);
  EXPECT_FALSE(traits.learns);  // No policy: not a learned placer.
  EXPECT_TRUE(traits.can_resume);
  EXPECT_EQ(traits.default_budget_samples, 2000);
  // A search without a budget or an environment says so.
  ZooProblem z(kSmallRnnlm, "k40x2");
  StatusOr<PlaceResult> r = Search(z.p.problem, {}, SearchOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("method mcmc: the search needs a budget"));
}

}  // namespace
}  // namespace dplace
