// The agents learn: on small problems whose optimum is known (found here by
// enumerating every placement), each agent's search, with a fixed seed and
// tiny settings, ends at the optimum. Also: the search loop's log and
// checkpoints (a killed search resumes to the same result), and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "dplace/io/file.h"
#include "dplace/rl/agent.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/agent_test_problems.h"
#include "dplace/testing/temp_dir.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;

using namespace testing_problems;  // NOLINT: the shared problems.

struct LearningCase {
  std::string agent;
  std::vector<std::string> options;
  // Of the last 24 samples, how many at least must be optimal: the policy
  // converged there (the policy-gradient learners are slower, as Post's
  // Figure 2 shows; for them the test asks for progress only).
  int converged;
};

void PrintTo(const LearningCase& c, std::ostream* os) { *os << c.agent; }

double MeanReward(const std::vector<SampleRecord>& h, size_t begin,
                  size_t end) {
  double sum = 0;
  for (size_t i = begin; i < end; ++i) sum += h[i].reward;
  return sum / (end - begin);
}

// Post's budget (2400 samples) with the agents' paper settings, except a
// small seq2seq for ColocRL.
class LearningTest : public ::testing::TestWithParam<LearningCase> {
 protected:
  void ExpectOptimum(const Problem& problem) {
    const LearningCase& c = GetParam();
    std::vector<std::string> options = c.options;
    options.push_back("grouping=ops");  // One op per group: 3^n placements.
    SearchOptions search;
    search.budget.samples = 2400;
    StatusOr<PlaceResult> r = RunSearch(problem, c.agent, options, search);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->search.samples, 2400);
    ASSERT_TRUE(r->search.best_feasible);
    EXPECT_NEAR(r->search.best_step_time, problem.optimum, 1e-9)
        << "optimum " << problem.optimum;
    const std::vector<SampleRecord>& h = r->search.history;
    EXPECT_GT(MeanReward(h, h.size() - 48, h.size()), MeanReward(h, 0, 48))
        << "no progress from the first samples to the last";
    int optimal = 0;
    for (size_t i = h.size() - 24; i < h.size(); ++i) {
      optimal += h[i].feasible && h[i].step_time < problem.optimum + 1e-9;
    }
    EXPECT_GE(optimal, c.converged)
        << "only " << optimal << " of the last 24 samples are optimal";
  }
};

TEST_P(LearningTest, SplitsTwoIndependentChains) { ExpectOptimum(TwoChains()); }
TEST_P(LearningTest, KeepsAHeavyTensorChainOnOneGpu) {
  ExpectOptimum(HeavyTensorChain());
}
TEST_P(LearningTest, SplitsLayersThatFitOnlyWhenSplit) {
  ExpectOptimum(OnlySplitFits());
}

INSTANTIATE_TEST_SUITE_P(
    Agents, LearningTest,
    ::testing::Values(
        LearningCase{"post", {}, 12}, LearningCase{"post-ce", {}, 12},
        LearningCase{"post-pg", {"feasible_only_after=100"}, 0},
        LearningCase{"spotlight", {}, 12},
        LearningCase{
            "colocrl", {"hidden=32", "embedding=8", "learning_rate=0.005"}, 0}),
    [](const ::testing::TestParamInfo<LearningCase>& info) {
      std::string name = info.param.agent;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

class SearchLoopTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDir("dplace_agents_test"); }
  void TearDown() override { RemoveTree(dir_); }
  std::string dir_;
};

std::vector<nlohmann::json> ReadLog(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

TEST_F(SearchLoopTest, LogsOneLinePerSampleWithTheBestSoFar) {
  const Problem problem = OnlySplitFits();
  SearchOptions search;
  search.budget.samples = 50;  // Not a multiple of the batch: 4 x 12 + 2.
  search.log_path = dir_ + "/log.jsonl";
  int progress_calls = 0;
  search.progress = [&](const SearchProgress& p) {
    ++progress_calls;
    EXPECT_LE(p.samples, 50);
  };
  StatusOr<PlaceResult> r =
      RunSearch(problem, "post", {"grouping=ops"}, search);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(progress_calls, 5);
  const std::vector<nlohmann::json> log = ReadLog(search.log_path);
  ASSERT_EQ(log.size(), 50u);
  double best = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i]["sample"], static_cast<int64_t>(i));
    const bool feasible = log[i]["feasible"];
    const double t = log[i]["step_time"];
    EXPECT_DOUBLE_EQ(log[i]["reward"].get<double>(),
                     feasible ? -std::sqrt(t) : -10.0);  // OOM = 100 s.
    if (feasible && (best == 0 || t < best)) best = t;
    if (best > 0) {
      EXPECT_DOUBLE_EQ(log[i]["best_step_time"].get<double>(), best);
    } else {
      EXPECT_TRUE(log[i]["best_step_time"].is_null());
    }
    EXPECT_GE(log[i]["wall_s"].get<double>(), 0);
  }
  EXPECT_DOUBLE_EQ(r->search.best_step_time, best);
  Simulator sim(*problem.cost);
  EXPECT_DOUBLE_EQ(sim.Simulate(r->placement)->step_time, best);
}

// A search killed midway and resumed from its last checkpoint ends exactly
// where an uninterrupted search ends: same samples, same best, same log.
// The update after the last batch changes only the policy a checkpoint
// keeps: without one the search skips it, with the same samples and best.
TEST_F(SearchLoopTest, SkipsTheLastUpdateWhenNoCheckpointKeepsIt) {
  const Problem problem = TwoChains();
  const std::vector<std::string> options = {"grouping=ops", "hidden=16",
                                            "embedding=4"};
  SearchOptions plain;
  plain.budget.samples = 40;
  StatusOr<PlaceResult> a = RunSearch(problem, "colocrl", options, plain);
  SearchOptions checkpointed = plain;
  checkpointed.checkpoint_path = dir_ + "/last.ckpt";
  StatusOr<PlaceResult> b =
      RunSearch(problem, "colocrl", options, checkpointed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->search.updates, 9);  // 10 batches of 4.
  EXPECT_EQ(b->search.updates, 10);
  EXPECT_EQ(a->search.best_step_time, b->search.best_step_time);
  EXPECT_EQ(a->placement, b->placement);
}

TEST_F(SearchLoopTest, ResumedSearchContinuesFromTheCheckpoint) {
  const Problem problem = TwoChains();
  for (const std::string agent : {"post", "colocrl"}) {
    SCOPED_TRACE(agent);
    const std::vector<std::string> options = {"grouping=ops", "hidden=16",
                                              "embedding=4"};
    const std::vector<std::string> agent_options =
        agent == "post"
            ? std::vector<std::string>{"grouping=ops", "ce_every=24"}
            : options;
    SearchOptions full;
    full.budget.samples = 96;
    full.log_path = dir_ + "/full.jsonl";
    // Checkpointed like the killed search: without a checkpoint a search
    // skips the update after its last batch, which only a checkpoint keeps.
    full.checkpoint_path = dir_ + "/full.ckpt";
    StatusOr<PlaceResult> a = RunSearch(problem, agent, agent_options, full);
    ASSERT_TRUE(a.ok()) << a.status().message();

    SearchOptions killed = full;
    killed.log_path = dir_ + "/killed.jsonl";
    killed.checkpoint_path = dir_ + "/search.ckpt";
    killed.checkpoint_every = 3;
    killed.progress = [](const SearchProgress& p) {
      // Killed after a batch past the checkpoint: lost with the process.
      if (p.samples >= 50) throw std::runtime_error("killed");
    };
    EXPECT_THROW((void)RunSearch(problem, agent, agent_options, killed),
                 std::runtime_error);
    EXPECT_GT(ReadLog(killed.log_path).size(), 36u);

    SearchOptions resumed = killed;
    resumed.progress = nullptr;
    resumed.resume_path = killed.checkpoint_path;
    StatusOr<PlaceResult> b = RunSearch(problem, agent, agent_options, resumed);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_GT(b->search.first_sample_of_this_run, 0);
    EXPECT_LT(b->search.first_sample_of_this_run, 50);
    EXPECT_EQ(b->search.samples, a->search.samples);
    EXPECT_EQ(b->search.updates, a->search.updates);
    EXPECT_EQ(b->placement, a->placement);
    EXPECT_EQ(b->search.best_step_time, a->search.best_step_time);
    const std::vector<nlohmann::json> la = ReadLog(full.log_path);
    const std::vector<nlohmann::json> lb = ReadLog(killed.log_path);
    ASSERT_EQ(la.size(), lb.size());
    for (size_t i = 0; i < la.size(); ++i) {
      for (const char* key :
           {"sample", "step_time", "feasible", "reward", "best_step_time"}) {
        EXPECT_EQ(la[i][key], lb[i][key]) << key << " of sample " << i;
      }
    }
  }
}

// A checkpoint changed in any byte, or cut short, is refused before
// anything is read from it: the ZIP records' own CRCs cover neither the
// archive's directory nor every record (a flipped byte used to resume to
// another result).
TEST_F(SearchLoopTest, ACorruptCheckpointIsRefused) {
  const Problem problem = TwoChains();
  SearchOptions write;
  write.budget.samples = 24;
  write.checkpoint_path = dir_ + "/post.ckpt";
  ASSERT_TRUE(RunSearch(problem, "post", {}, write).ok());
  const std::string file = *ReadTextFile(write.checkpoint_path);
  SearchOptions resume;
  resume.budget.samples = 36;
  resume.resume_path = dir_ + "/flipped.ckpt";
  // The meta, a tensor record, the ZIP directory, the checksum line.
  for (size_t at : {file.find("\"samples\""), file.size() / 3,
                    file.rfind("PK\x01\x02"), file.size() - 4}) {
    SCOPED_TRACE(at);
    std::string flipped = file;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x04);
    ASSERT_TRUE(WriteTextFile(resume.resume_path, flipped).ok());
    StatusOr<PlaceResult> r = RunSearch(problem, "post", {}, resume);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(),
                HasSubstr("flipped.ckpt: checksum mismatch: the file is "
                          "corrupt"));
  }
  ASSERT_TRUE(
      WriteTextFile(resume.resume_path, file.substr(0, file.size() - 100))
          .ok());
  EXPECT_THAT(RunSearch(problem, "post", {}, resume).status().message(),
              HasSubstr("flipped.ckpt: no dplace checksum line at its end: "
                        "the file was cut short"));
  resume.resume_path = write.checkpoint_path;
  EXPECT_TRUE(RunSearch(problem, "post", {}, resume).ok());
}

// `--help` promises a resume with the same options and seed; other ones
// are refused, as another model or cluster is.
TEST_F(SearchLoopTest, AResumeWithOtherOptionsOrSeedIsRefused) {
  const Problem problem = TwoChains();
  for (const std::string agent : {"post", "colocrl"}) {
    SCOPED_TRACE(agent);
    const std::vector<std::string> options =
        agent == "post" ? std::vector<std::string>{"batch=12"}
                        : std::vector<std::string>{"hidden=8", "embedding=4"};
    SearchOptions write;
    write.budget.samples = 24;
    write.checkpoint_path = dir_ + "/" + agent + ".ckpt";
    ASSERT_TRUE(RunSearch(problem, agent, options, write).ok());
    SearchOptions resume;
    resume.budget.samples = 36;
    resume.resume_path = write.checkpoint_path;
    std::vector<std::string> other = options;
    other[0] = agent == "post" ? "batch=24" : "hidden=16";
    EXPECT_THAT(RunSearch(problem, agent, other, resume).status().message(),
                HasSubstr("options is "));
    EXPECT_THAT(
        RunSearch(problem, agent, options, resume, /*seed=*/2)
            .status()
            .message(),
        HasSubstr("seed is 1, but this search has 2 (resume with the same "
                  "method, model, cluster, --option and --seed)"));
    EXPECT_TRUE(RunSearch(problem, agent, options, resume).ok());
  }
}

TEST_F(SearchLoopTest, SecondsBudgetStopsTheSearch) {
  const Problem problem = TwoChains();
  SearchOptions search;
  search.budget.seconds = 1;
  // A fake clock that every batch of 12 advances by a quarter second: the
  // budget runs out after the fourth batch.
  double now = 0;
  search.clock = [&now] { return now; };
  search.progress = [&now](const SearchProgress&) { now += 0.25; };
  StatusOr<PlaceResult> r =
      RunSearch(problem, "post", {"grouping=ops"}, search);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->search.samples, 48);
  EXPECT_EQ(r->search.wall_seconds, 1.0);
  ASSERT_EQ(r->search.history.size(), 48u);
  EXPECT_EQ(r->search.history.front().wall_seconds, 0.0);
  EXPECT_EQ(r->search.history.back().wall_seconds, 0.75);
}

TEST_F(SearchLoopTest, BadInputIsAClearError) {
  const Problem problem = TwoChains();
  SearchOptions search;
  // No budget.
  StatusOr<PlaceResult> r = RunSearch(problem, "post", {}, search);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("method post: the search needs a budget"));

  // A one-device cluster.
  ClusterBuilder one("one_gpu");
  Device gpu;
  gpu.name = "gpu:0";
  gpu.peak_flops = 1e12;
  gpu.memory_bandwidth = 1e11;
  gpu.memory_bytes = 16 * kGB;
  one.AddDevice(gpu);
  const Cluster single = *std::move(one).Build();
  const CostModel cost(*problem.graph, single);
  PlacementProblem p = problem.Get();
  p.cluster = &single;
  p.cost = &cost;
  auto env = NewSimulatedEnvironment(cost, 1);
  search.budget.samples = 10;
  PlaceContext context;
  context.environment = env.get();
  context.search = search;
  r = (*MakeMethod("colocrl"))->Place(p, context);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("needs a cluster of at least two devices; cluster "
                        "one_gpu has 1"));

  // A corrupt checkpoint, and one of another agent.
  search.resume_path = dir_ + "/corrupt.ckpt";
  ASSERT_TRUE(WriteTextFile(search.resume_path, "not a checkpoint").ok());
  r = RunSearch(problem, "post", {}, search);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("corrupt.ckpt: no dplace checksum line at its end"));
  search.resume_path = dir_ + "/missing.ckpt";
  r = RunSearch(problem, "post", {}, search);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("missing.ckpt"));

  SearchOptions write;
  write.budget.samples = 12;
  write.checkpoint_path = dir_ + "/post.ckpt";
  ASSERT_TRUE(RunSearch(problem, "post", {}, write).ok());
  search.resume_path = write.checkpoint_path;
  r = RunSearch(problem, "post-ce", {}, search);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("agent is \"post\", but this search has \"post-ce\""));

  // Options.
  EXPECT_THAT(
      MakeMethod("post", *MethodOptions::Parse({"bogus=1"})).status().message(),
      HasSubstr("method post: unknown option \"bogus\""));
  EXPECT_THAT(MakeMethod("post", *MethodOptions::Parse({"elite_ratio=2"}))
                  .status()
                  .message(),
              HasSubstr("elite_ratio must be in (0, 1]"));
  EXPECT_THAT(MakeMethod("nope").status().message(),
              HasSubstr("unknown method \"nope\" (methods: single-cpu"));
}

// Option warm_start: the start placement is the search's first sample and
// the policy then samples it: all on gpu:0 (single-gpu) for most samples of
// the first batches, which a policy from its random initialisation draws
// with probability 1/729 (6 ops, 3 devices).
TEST_F(SearchLoopTest, WarmStartSamplesAroundTheStartPlacement) {
  const Problem problem = TwoChains();
  Simulator sim(*problem.cost);
  const double single_gpu =
      sim.Simulate(Placement(problem.graph->num_ops(), 1))->step_time;
  ASSERT_GT(single_gpu, problem.optimum * 1.5);
  const std::vector<std::pair<std::string, std::vector<std::string>>> agents = {
      {"post", {}},
      {"colocrl", {"hidden=16", "embedding=4"}},
      {"mars",
       {"hidden=16", "encoder_hidden=8", "segment=3", "pretrain_steps=20"}},
      {"hierarchical", {"hidden=16", "groups=6"}},
      {"hierarchical", {"hidden=16", "groups=6", "grouper=random"}},
      // At EAGLE's learning rate (0.01), PPO's first update moves the policy
      // off the start (on to the optimum, here).
      {"eagle", {"hidden=16", "groups=6", "batch=4", "learning_rate=0.001"}},
      {"simple", {}}};
  for (const auto& [agent, agent_options] : agents) {
    SCOPED_TRACE(agent + " " + ::testing::PrintToString(agent_options));
    std::vector<std::string> options = agent_options;
    options.insert(options.end(), {"grouping=ops", "warm_start=single-gpu",
                                   "warm_start_confidence=0.95"});
    SearchOptions search;
    search.budget.samples = 17;
    std::vector<std::string> stages;  // Progress names the start's placer.
    search.progress = [&stages](const SearchProgress& p) {
      stages.push_back(p.stage);
    };
    StatusOr<PlaceResult> r = RunSearch(problem, agent, options, search);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_GT(stages.size(), 1u);
    EXPECT_EQ(stages[0], "one-shot placer 1 of 1: single-gpu");
    EXPECT_EQ(stages[1], "");
    const std::vector<SampleRecord>& h = r->search.history;
    ASSERT_EQ(h.size(), 17u);
    EXPECT_DOUBLE_EQ(h[0].step_time, single_gpu);
    EXPECT_LE(r->search.best_step_time, single_gpu);
    int at_start = 0;
    for (size_t i = 1; i < h.size(); ++i)
      at_start += h[i].step_time == single_gpu;
    EXPECT_GE(at_start, 8) << "of 16 samples after the warm start";
  }
}

TEST_F(SearchLoopTest, WarmStartedSearchResumesToTheSameEnd) {
  ExpectKilledSearchResumesToTheSameEnd(
      TwoChains(), "colocrl",
      {"grouping=ops", "hidden=16", "embedding=4", "warm_start=auto"}, 24, 13,
      dir_ + "/warm.ckpt", 1);
  // The planner's grouper reads the best placement so far, which the
  // checkpoint keeps.
  ExpectKilledSearchResumesToTheSameEnd(
      TwoChains(), "hierarchical",
      {"hidden=16", "groups=6", "warm_start=auto", "imitate_best=4"}, 24, 13,
      dir_ + "/warm-planner.ckpt", 1);
}

// Option imitate_best: a step of maximum likelihood on the best placement
// every batch holds the policy there; without it, REINFORCE's samples
// spread around.
TEST_F(SearchLoopTest, ImitatingTheBestHoldsTheSamplesAtIt) {
  const Problem problem = TwoChains();
  auto at_best = [&](const std::string& imitate) {
    SearchOptions search;
    search.budget.samples = 200;
    StatusOr<PlaceResult> r =
        RunSearch(problem, "colocrl",
                  {"grouping=ops", "hidden=16", "embedding=4",
                   "learning_rate=0.01", "imitate_best=" + imitate},
                  search);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return -1;
    const std::vector<SampleRecord>& h = r->search.history;
    int n = 0;
    for (size_t i = h.size() - 40; i < h.size(); ++i) {
      n += h[i].feasible && h[i].step_time == r->search.best_step_time;
    }
    return n;
  };
  const int with = at_best("4"), without = at_best("0");
  EXPECT_GE(with, 30) << "of the last 40 samples";
  EXPECT_LT(without, with);
}

TEST_F(SearchLoopTest, WarmStartErrorsNameTheOption) {
  auto error = [](const std::string& agent,
                  const std::vector<std::string>& options) {
    return MakeMethod(agent, *MethodOptions::Parse(options)).status().message();
  };
  EXPECT_THAT(error("colocrl", {"warm_start=m-etff"}),
              HasSubstr("method colocrl: option warm_start=m-etff: unknown "
                        "method (auto, a placement FILE.json, or one of:"));
  EXPECT_THAT(error("post", {"warm_start=mcmc"}),
              HasSubstr("method post: option warm_start=mcmc: a search "
                        "cannot be a start"));
  EXPECT_THAT(error("mars", {"warm_start_confidence=1"}),
              HasSubstr("warm_start_confidence must be in (0, 1)"));
  EXPECT_THAT(error("eagle", {"warm_start_learning_rate=-0.01"}),
              HasSubstr("warm_start_learning_rate must be >= 0"));
  EXPECT_THAT(error("hierarchical", {"imitate_best=-4"}),
              HasSubstr("imitate_best must be >= 0"));
}

TEST(AgentRegistryTest, ListsThePapersAgents) {
  std::vector<std::string> names;
  for (const MethodEntry* e : Methods()) {
    if (TraitsOf(*e).learns) names.push_back(e->name);
  }
  EXPECT_THAT(names, ::testing::ElementsAre(
                         "post", "post-ce", "post-pg", "spotlight", "colocrl",
                         "hierarchical", "simple", "eagle", "eagle-ce", "mars",
                         "mars-nopretrain"));
}

}  // namespace
}  // namespace dplace
