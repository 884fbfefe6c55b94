// The hierarchical planners learn: the Hierarchical Planner and EAGLE
// (fixed seeds, tiny networks) find the enumerated optimum of the small
// problems; the learned grouper ends using fewer groups than it starts
// with; hard co-location constraints hold in every sampled placement;
// every ablation of the papers runs end to end; bad options are clear
// errors; a resumed search continues exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dplace/rl/agent.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/agent_test_problems.h"
#include "dplace/testing/temp_dir.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using testing_problems::ChainOp;
using testing_problems::ExpectKilledSearchResumesToTheSameEnd;
using testing_problems::HeavyTensorChain;
using testing_problems::kGB;
using testing_problems::MakeProblem;
using testing_problems::OnlySplitFits;
using testing_problems::Problem;
using testing_problems::RunSearch;
using testing_problems::TwoChains;

// Small networks: the tests check the algorithms, not the papers' sizes.
std::vector<std::string> Tiny(std::vector<std::string> options) {
  for (const char* o : {"hidden=16", "grouper_hidden=16", "attention_size=8",
                        "device_embedding=4", "type_embedding=4"}) {
    options.push_back(o);
  }
  return options;
}

struct LearningCase {
  std::string agent;
  std::vector<std::string> options;
};

void PrintTo(const LearningCase& c, std::ostream* os) { *os << c.agent; }

class PlannerLearningTest : public ::testing::TestWithParam<LearningCase> {
 protected:
  void ExpectOptimum(const Problem& problem) {
    const LearningCase& c = GetParam();
    SearchOptions search;
    search.budget.samples = 800;
    StatusOr<PlaceResult> r =
        RunSearch(problem, c.agent, Tiny(c.options), search);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->search.best_feasible);
    EXPECT_NEAR(r->search.best_step_time, problem.optimum, 1e-9)
        << "optimum " << problem.optimum;
    Simulator sim(*problem.cost);
    EXPECT_DOUBLE_EQ(sim.Simulate(r->placement)->step_time,
                     r->search.best_step_time);
  }
};

TEST_P(PlannerLearningTest, SplitsTwoIndependentChains) {
  ExpectOptimum(TwoChains());
}
TEST_P(PlannerLearningTest, KeepsAHeavyTensorChainOnOneGpu) {
  ExpectOptimum(HeavyTensorChain());
}
TEST_P(PlannerLearningTest, SplitsLayersThatFitOnlyWhenSplit) {
  ExpectOptimum(OnlySplitFits());
}

// Units are ops here (the problems have no co-location hints); 4 groups
// for at most 6 ops; 800 samples.
INSTANTIATE_TEST_SUITE_P(
    Planners, PlannerLearningTest,
    ::testing::Values(
        // The paper's rate (0.1) makes this tiny net collapse everything
        // into one group on the CPU; its 500-update warm-up is longer than
        // this whole search. At 0.01 it settles on one GPU before finding
        // the two chains' split for half the seeds (6 and 5 of seeds 1-12,
        // with the placer's noise scaled over the batch or per row); at
        // 0.001 it finds every problem's optimum for each of seeds 1-12.
        LearningCase{
            "hierarchical",
            {"groups=4", "learning_rate=0.001", "valid_only_after=10"}},
        // EAGLE at its preset (learning rate 0.001, no entropy bonus, one
        // PPO epoch) finds every problem's optimum for each of seeds 1-12;
        // at the paper's bonus and 4 epochs (rate 0.003) 33 of the 36.
        LearningCase{"eagle", {"groups=4"}}),
    [](const ::testing::TestParamInfo<LearningCase>& info) {
      std::string name = info.param.agent;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// Two chains of 12 heavy MatMuls: every op of a chain looks alike, so a
// grouper that learns maps a chain to few groups.
Problem TwelveOpChains() {
  const ChainOp op{2e11, kGB / 4, 0};
  return MakeProblem(
      "twelve_op_chains",
      {std::vector<ChainOp>(12, op), std::vector<ChainOp>(12, op)},
      /*enumerate=*/false);
}

// Groups used per update of 200 (800 samples) of `hierarchical` on two
// 12-op chains and 24 groups, with `options` besides the tiny sizes.
std::vector<double> GroupsUsed(std::vector<std::string> options) {
  options.push_back("groups=24");
  const Problem problem = TwelveOpChains();
  std::vector<double> used;
  SearchOptions search;
  search.budget.samples = 800;
  search.progress = [&](const SearchProgress& p) {
    ASSERT_EQ(p.agent_stats.size(), 1u);
    EXPECT_EQ(p.agent_stats[0].first, "groups_used");
    used.push_back(p.agent_stats[0].second);
  };
  StatusOr<PlaceResult> r =
      RunSearch(problem, "hierarchical", Tiny(std::move(options)), search);
  EXPECT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(used.size(), 200u);
  return used;
}

double MeanOfLast(const std::vector<double>& v, size_t n) {
  double sum = 0;
  for (size_t i = v.size() - n; i < v.size(); ++i) sum += v[i];
  return sum / n;
}

// HP's observation: the grouper concentrates the ops on a few groups. At
// the paper's learning rate 0.1 it does so within 200 updates here.
TEST(HierarchicalGrouperTest, ConcentratesAtThePapersLearningRate) {
  const std::vector<double> used = GroupsUsed({"learning_rate=0.1"});
  ASSERT_EQ(used.size(), 200u);
  // 24 ops spread nearly uniformly over 24 groups fill about 15 of them.
  const double first = used[0], last = MeanOfLast(used, 10);
  EXPECT_GT(first, 12);
  EXPECT_LT(last, first / 2) << "the grouper did not concentrate";
}

// The default rate (0.001) keeps the grouper exploring: on NMT the paper's
// 0.1 collapsed it to a few groups within ~100 samples (docs/agents.md).
TEST(HierarchicalGrouperTest, DefaultLearningRateDoesNotCollapseEarly) {
  const std::vector<double> used = GroupsUsed({});
  ASSERT_EQ(used.size(), 200u);
  const double first = used[0], last = MeanOfLast(used, 10);
  EXPECT_GT(first, 12);
  EXPECT_GT(last, first / 2) << "the grouper collapsed";
}

// Records every placement the search asks for.
class RecordingEnvironment : public Environment {
 public:
  RecordingEnvironment(const CostModel& cost)
      : Environment(cost.graph(), cost.cluster()),
        inner_(NewSimulatedEnvironment(cost, 1)) {}
  std::vector<Placement> placements;

 protected:
  std::vector<Measurement> DoEvaluate(
      const std::vector<Placement>& batch) override {
    placements.insert(placements.end(), batch.begin(), batch.end());
    return *inner_->Evaluate(batch);
  }

 private:
  std::unique_ptr<Environment> inner_;
};

// Two chains whose i-th ops must share a device (a co-location hint each):
// the optimum would split the chains, the constraint forbids it.
TEST(PlannerConstraintTest, CoLocatedOpsShareADeviceInEverySample) {
  GraphBuilder b("hinted");
  for (int c = 0; c < 2; ++c) {
    OpId previous = -1;
    for (int i = 0; i < 4; ++i) {
      OpSpec spec;
      spec.name = "chain" + std::to_string(c) + "/op" + std::to_string(i);
      spec.type = "MatMul";
      spec.flops = 1e11;
      spec.bytes_accessed = 1;
      spec.outputs = {TensorInfo{{1000}, DataType::kFloat32, 0}};
      spec.colocation_group = "pair" + std::to_string(i);
      const OpId op = b.AddOp(spec);
      if (previous >= 0) b.AddEdge(previous, 0, op);
      previous = op;
    }
  }
  const Graph graph = *std::move(b).Build();
  const Cluster cluster = *MakeClusterPreset("k80x2");
  const CostModel cost(graph, cluster);
  for (const std::string agent : {"hierarchical", "eagle", "simple"}) {
    SCOPED_TRACE(agent);
    RecordingEnvironment env(cost);
    PlacementProblem p;
    p.graph = &graph;
    p.cluster = &cluster;
    p.cost = &cost;
    auto made = MakeMethod(agent, *MethodOptions::Parse(Tiny({"groups=4"})));
    ASSERT_TRUE(made.ok()) << made.status().message();
    SearchOptions search;
    search.budget.samples = 40;
    PlaceContext context;
    context.environment = &env;
    context.search = search;
    StatusOr<PlaceResult> r = (*made)->Place(p, context);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->search.num_groups, 4);  // The hint pairs are the units.
    ASSERT_EQ(env.placements.size(), 40u);
    std::set<std::vector<DeviceId>> distinct;
    for (const Placement& placement : env.placements) {
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(placement[i], placement[4 + i]) << "pair" << i;
      }
      distinct.insert(placement);
    }
    EXPECT_GT(distinct.size(), 1u) << "the search never explored";
  }
}

struct AblationCase {
  std::string name;  // Test name.
  std::string agent;
  std::vector<std::string> options;
  int num_groups;  // Groups the search places (units or heuristic groups).
};

void PrintTo(const AblationCase& c, std::ostream* os) { *os << c.name; }

class PlannerAblationTest : public ::testing::TestWithParam<AblationCase> {};

TEST_P(PlannerAblationTest, RunsEndToEnd) {
  const AblationCase& c = GetParam();
  const Problem problem = TwoChains();
  SearchOptions search;
  search.budget.samples = 40;
  std::vector<std::string> options = Tiny(c.options);
  StatusOr<PlaceResult> r = RunSearch(problem, c.agent, options, search);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->search.samples, 40);
  EXPECT_GT(r->search.updates, 0);
  EXPECT_EQ(r->search.num_groups, c.num_groups);
  ASSERT_TRUE(r->search.best_feasible);
  Simulator sim(*problem.cost);
  EXPECT_DOUBLE_EQ(sim.Simulate(r->placement)->step_time,
                   r->search.best_step_time);
}

INSTANTIATE_TEST_SUITE_P(
    Ablations, PlannerAblationTest,
    ::testing::Values(
        AblationCase{"simple_planner", "simple", {"grouping=ops"}, 6},
        AblationCase{"random_grouper",
                     "hierarchical",
                     {"grouper=random", "grouping=ops", "groups=3"},
                     6},
        AblationCase{
            "metis_grouper", "hierarchical", {"grouper=metis", "groups=2"}, 2},
        AblationCase{
            "fluid_grouper", "hierarchical", {"grouper=fluid", "groups=2"}, 2},
        // Six ops, under 8 groups per device: the co-location rule merges
        // nothing (agent.h, SearchGrouping).
        AblationCase{"colocation_grouper", "eagle", {"grouper=colocation"}, 6},
        AblationCase{"no_grouper", "eagle", {"grouper=none"}, 6},
        AblationCase{"attention_after",
                     "eagle",
                     {"attention=after", "grouping=ops", "groups=3"},
                     6},
        AblationCase{"attention_before",
                     "hierarchical",
                     {"attention=before", "grouping=ops", "groups=3"},
                     6},
        AblationCase{"gcn_placer",
                     "eagle",
                     {"placer=gcn", "grouper=metis", "groups=3"},
                     3},
        AblationCase{"gcn_placer_learned_grouper",
                     "hierarchical",
                     {"placer=gcn", "grouping=ops", "groups=3"},
                     6},
        AblationCase{"reinforce",
                     "eagle",
                     {"algorithm=reinforce", "grouping=ops", "groups=3"},
                     6},
        AblationCase{"ppo",
                     "hierarchical",
                     {"algorithm=ppo", "grouping=ops", "groups=3"},
                     6},
        AblationCase{"ppo_ce",
                     "eagle-ce",
                     {"grouping=ops", "groups=3", "ce_every=20"},
                     6},
        AblationCase{"ppo_ce_fixed_grouping",
                     "hierarchical",
                     {"algorithm=ppo-ce", "grouper=metis", "groups=3",
                      "ce_every=8", "elites=2"},
                     3},
        AblationCase{
            "simple_ppo_ce",
            "simple",
            {"algorithm=ppo-ce", "grouping=ops", "ce_every=8", "elites=2"},
            6}),
    [](const ::testing::TestParamInfo<AblationCase>& info) {
      return info.param.name;
    });

TEST(PlannerOptionsTest, BadOptionsAreClearErrors) {
  auto error = [](const std::string& agent, std::vector<std::string> options) {
    StatusOr<std::unique_ptr<Method>> a =
        MakeMethod(agent, *MethodOptions::Parse(options));
    return a.ok() ? std::string("ok") : a.status().message();
  };
  EXPECT_THAT(
      error("hierarchical", {"grouper=kmeans"}),
      HasSubstr("method hierarchical: option grouper=kmeans: expected one "
                "of learned, random, metis, fluid, colocation, none"));
  EXPECT_THAT(
      error("eagle", {"placer=transformer"}),
      HasSubstr("placer=transformer: expected one of seq2seq, gcn, ff"));
  EXPECT_THAT(error("hierarchical", {"placer=ff"}),
              HasSubstr("placer=ff is the Simple Planner's per-unit "
                        "feed-forward placer: it needs grouper=none, not "
                        "grouper=learned"));
  EXPECT_THAT(error("eagle", {"attention=during"}),
              HasSubstr("attention=during: expected one of before, after"));
  EXPECT_THAT(
      error("eagle-ce", {"algorithm=a2c"}),
      HasSubstr("algorithm=a2c: expected one of reinforce, ppo, ppo-ce"));
  EXPECT_THAT(error("hierarchical", {"grouper=metis", "grouping=ops"}),
              HasSubstr("grouping=ops with grouper=metis: the grouper groups "
                        "the ops itself"));
  EXPECT_THAT(error("eagle", {"hidden=7"}), HasSubstr("hidden must be even"));
  EXPECT_THAT(error("eagle-ce", {"elites=60"}),
              HasSubstr("elites in [1, ce_every]"));
  EXPECT_THAT(
      error("simple", {"grouping=clusters"}),
      HasSubstr("grouping=clusters: expected one of colocation, hints, ops"));
  EXPECT_THAT(error("eagle", {"tanh=5"}),
              HasSubstr("method eagle: unknown option \"tanh\""));
  EXPECT_EQ(error("eagle", {"placer=gcn", "grouper=fluid", "groups=8"}), "ok");
}

// A search killed midway resumes from its checkpoint to the same end: the
// policy, optimizer, noise schedule and elite buffer are all saved.
TEST(PlannerCheckpointTest, ResumedSearchContinuesFromTheCheckpoint) {
  const std::string dir = FreshTestDir("dplace_planners_test");
  const Problem problem = TwoChains();
  for (const std::string agent : {"hierarchical", "eagle-ce"}) {
    SCOPED_TRACE(agent);
    const std::vector<std::string> options =
        Tiny({"grouping=ops", "groups=3", "noise_updates=6", "ce_every=20"});
    ExpectKilledSearchResumesToTheSameEnd(problem, agent, options, 80, 50,
                                          dir + "/" + agent + ".ckpt", 2);
  }
  RemoveTree(dir);
}

}  // namespace
}  // namespace dplace
