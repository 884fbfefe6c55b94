// Mars: the graph encoder's input, Deep-Graph-Infomax pre-training on a zoo
// graph (the loss falls, the discriminator tells real from corrupted
// nodes), encoder files (identical embeddings after a round trip, clear
// errors for a mismatched or corrupt file), the segment-level placer's
// autoregressive contract, and the agents reaching the known optimum of the
// framework's small problems.
#include "dplace/rl/agents/mars/mars.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>

#include "dplace/io/file.h"
#include "dplace/rl/agent.h"
#include "dplace/rl/agents/mars/graph_encoder.h"
#include "dplace/rl/agents/mars/mars_policy.h"
#include "dplace/testing/agent_test_problems.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using testing_problems::ExpectKilledSearchResumesToTheSameEnd;
using testing_problems::HeavyTensorChain;
using testing_problems::OnlySplitFits;
using testing_problems::Problem;
using testing_problems::RunSearch;
using testing_problems::TwoChains;

struct Grouped {
  Grouping grouping;
  GroupGraph groups;
  EncoderInput input;
};

Grouped GroupColocation(const Graph& graph) {
  PlacementProblem problem;
  problem.graph = &graph;
  Grouped g;
  g.grouping = *SearchGrouping(problem, SearchSettings{});
  g.groups = CoarsenGraph(graph, g.grouping);
  g.input = MakeEncoderInput(graph, g.grouping, g.groups);
  return g;
}

// A small zoo graph: a 2-layer RNNLM unrolled over 6 steps.
const Graph& SmallRnnlm() {
  static const Graph* graph =
      new Graph(*MakeZooModel("rnnlm:steps=20,units=256,vocab=1000"));
  return *graph;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "dplace_mars_test_" +
         std::to_string(::getpid()) + "_" + name;
}

TEST(EncoderInputTest, SymmetricNormalisedAdjacencyWithSelfLoops) {
  const Problem problem = TwoChains();  // Two chains of three ops.
  PlacementProblem p = problem.Get();
  SearchSettings settings;
  settings.grouping = OpGrouping::kOps;
  const Grouping grouping = *SearchGrouping(p, settings);
  const GroupGraph groups = CoarsenGraph(*problem.graph, grouping);
  const EncoderInput input = MakeEncoderInput(*problem.graph, grouping, groups);
  ASSERT_TRUE(input.adjacency.is_sparse());
  const torch::Tensor a = input.adjacency.to_dense();
  EXPECT_TRUE(torch::allclose(a, a.t()));
  // The middle op of a chain has degree 3 (self loop included), the ends 2.
  const int64_t first = 0, middle = 1;  // Ops 0, 1 are chain0's first two.
  EXPECT_NEAR(a[middle][middle].item<double>(), 1.0 / 3, 1e-6);
  EXPECT_NEAR(a[first][middle].item<double>(), 1.0 / std::sqrt(6.0), 1e-6);
  EXPECT_EQ(a[first][3].item<double>(), 0);  // Another chain.
  EXPECT_EQ(input.features.size(0), 6);
  EXPECT_EQ(input.features.size(1), EncoderInputWidth());
  EXPECT_LE(input.features.abs().max().item<double>(), 1.0 + 1e-6);
}

TEST(PretrainTest, LossFallsAndDiscriminatorSeparatesRealFromCorrupted) {
  const Grouped g = GroupColocation(SmallRnnlm());
  ASSERT_GT(g.groups.num_groups, 50);
  torch::manual_seed(3);
  GraphEncoder encoder(EncoderInputWidth(), GraphEncoderConfig{64, 2});
  PretrainSettings settings;
  settings.steps = 150;
  settings.learning_rate = 0.005;
  settings.seed = 3;
  const PretrainReport report = PretrainEncoder(encoder, g.input, settings);
  ASSERT_EQ(report.losses.size(), 150u);
  const double first = report.losses.front();
  EXPECT_NEAR(first, std::log(2.0), 0.2);  // Chance: BCE of 1/2.
  const double last10 =
      std::accumulate(report.losses.end() - 10, report.losses.end(), 0.0) / 10;
  EXPECT_LT(last10, 0.5 * first) << "DGI loss did not fall";
  EXPECT_GT(report.accuracy, 0.9);
  EXPECT_LT(report.final_loss, 0.5 * first);
}

class EncoderFileTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& p : paths_) std::filesystem::remove(p);
  }
  std::string Path(const std::string& name) {
    paths_.push_back(TempPath(name));
    return paths_.back();
  }
  std::vector<std::string> paths_;
};

EncoderFileInfo InfoOf(const Graph& graph, const Grouped& g,
                       const GraphEncoderConfig& config) {
  EncoderFileInfo info;
  info.graph_name = graph.name();
  info.graph_hash = graph.hash();
  info.grouping = "colocation";
  info.grouping_hash = GroupingHash(g.grouping);
  info.num_groups = g.groups.num_groups;
  info.input_width = EncoderInputWidth();
  info.hidden = config.hidden;
  info.layers = config.layers;
  return info;
}

TEST_F(EncoderFileTest, SavedEncoderLoadsWithIdenticalEmbeddings) {
  const Graph& graph = SmallRnnlm();
  const Grouped g = GroupColocation(graph);
  const GraphEncoderConfig config{32, 2};
  torch::manual_seed(1);
  GraphEncoder trained(EncoderInputWidth(), config);
  PretrainSettings settings;
  settings.steps = 5;
  PretrainEncoder(trained, g.input, settings);
  const std::string path = Path("enc.pt");
  ASSERT_TRUE(SaveEncoder(path, trained, InfoOf(graph, g, config)).ok());

  torch::manual_seed(2);  // Other initial weights.
  GraphEncoder loaded(EncoderInputWidth(), config);
  torch::NoGradGuard no_grad;
  const torch::Tensor want = trained(g.input.features, g.input.adjacency);
  EXPECT_FALSE(torch::equal(loaded(g.input.features, g.input.adjacency), want));
  StatusOr<EncoderFileInfo> info =
      LoadEncoder(path, InfoOf(graph, g, config), loaded);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->pretrain_steps, 0);  // InfoOf leaves it 0.
  EXPECT_TRUE(torch::equal(loaded(g.input.features, g.input.adjacency), want));
}

TEST_F(EncoderFileTest, MismatchedOrCorruptFileIsAClearError) {
  const Graph& graph = SmallRnnlm();
  const Grouped g = GroupColocation(graph);
  const GraphEncoderConfig config{16, 1};
  GraphEncoder encoder(EncoderInputWidth(), config);
  const std::string path = Path("enc.pt");
  ASSERT_TRUE(SaveEncoder(path, encoder, InfoOf(graph, g, config)).ok());

  const Problem other = TwoChains();
  const Grouped og = GroupColocation(*other.graph);
  StatusOr<EncoderFileInfo> r =
      LoadEncoder(path, InfoOf(*other.graph, og, config), encoder);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("pre-trained on graph rnnlm (hash " + graph.hash() +
                        "), but this search places graph two_chains"));
  EXPECT_THAT(r.status().message(), HasSubstr("dplace pretrain"));

  GraphEncoder wider(EncoderInputWidth(), GraphEncoderConfig{32, 1});
  r = LoadEncoder(path, InfoOf(graph, g, GraphEncoderConfig{32, 1}), wider);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("hidden is 16, but this search needs 32"));

  const std::string corrupt = Path("corrupt.pt");
  ASSERT_TRUE(WriteTextFile(corrupt, "not an encoder").ok());
  r = LoadEncoder(corrupt, InfoOf(graph, g, config), encoder);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("corrupt.pt: cannot read a dplace encoder file"));
  r = LoadEncoder(Path("missing.pt"), InfoOf(graph, g, config), encoder);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("missing.pt"));
}

// Group t's log-probabilities depend on the devices of the groups before it
// only, across segment boundaries too (the carried recurrent state).
TEST(MarsPolicyTest, AutoregressiveAcrossSegments) {
  const Problem problem = TwoChains();
  SearchSettings settings;
  settings.grouping = OpGrouping::kOps;
  const Grouping grouping = *SearchGrouping(problem.Get(), settings);
  const GroupGraph groups = CoarsenGraph(*problem.graph, grouping);
  torch::manual_seed(1);
  SegmentPlacerConfig config;
  config.hidden = 16;
  config.device_embedding = 4;
  config.segment = 2;
  const int devices = problem.cluster.num_devices();
  MarsPolicy policy(MakeEncoderInput(*problem.graph, grouping, groups),
                    groups.order,
                    GraphEncoder(EncoderInputWidth(), GraphEncoderConfig{8, 1}),
                    devices, std::vector<uint8_t>(6 * devices, 1), config);
  std::mt19937_64 rng(1);
  const torch::Tensor a = policy->Sample(1, &rng);
  ASSERT_EQ(a.size(1), 6);
  const torch::Tensor base = policy->LogProbs(a);
  EXPECT_TRUE(torch::allclose(base.exp().sum(-1), torch::ones({1, 6})));
  // Change the device of the group read second (position 1, segment 0).
  torch::Tensor changed = a.clone();
  const int64_t second = groups.order[1];
  changed[0][second] = (a[0][second].item<int64_t>() + 1) % devices;
  const torch::Tensor after = policy->LogProbs(changed);
  for (int position = 0; position < 6; ++position) {
    const int64_t g = groups.order[position];
    const bool same = torch::equal(base[0][g], after[0][g]);
    if (position <= 1) {
      EXPECT_TRUE(same) << "position " << position;
    } else {
      EXPECT_FALSE(same) << "position " << position;  // Segments 1 and 2.
    }
  }
}

class MarsLearningTest : public ::testing::TestWithParam<std::string> {
 protected:
  void ExpectOptimum(const Problem& problem) {
    SearchOptions search;
    search.budget.samples = 1800;
    // Tiny networks, a lower learning rate than EAGLE's 0.01 (at 0.01 the
    // policy settles before it finds the optimum); segments of 3 groups so
    // that a problem spans two.
    std::vector<std::string> options = {
        "grouping=ops",      "hidden=32", "device_embedding=8",
        "encoder_hidden=16", "segment=3", "learning_rate=0.003"};
    if (GetParam() == "mars") options.push_back("pretrain_steps=50");
    StatusOr<PlaceResult> r = RunSearch(problem, GetParam(), options, search);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->search.best_feasible);
    EXPECT_NEAR(r->search.best_step_time, problem.optimum, 1e-9)
        << "optimum " << problem.optimum;
    const std::vector<SampleRecord>& h = r->search.history;
    int optimal = 0;
    for (size_t i = h.size() - 20; i < h.size(); ++i) {
      optimal += h[i].feasible && h[i].step_time < problem.optimum + 1e-9;
    }
    // Without pre-training, the policy may settle at a near-optimal
    // placement (with seed 1 it does on two of the three problems); the
    // test asks mars-nopretrain to have found the optimum only.
    const int converged = GetParam() == "mars" ? 10 : 0;
    EXPECT_GE(optimal, converged)
        << "only " << optimal << " of the last 20 samples are optimal";
  }
};

TEST_P(MarsLearningTest, SplitsTwoIndependentChains) {
  ExpectOptimum(TwoChains());
}
TEST_P(MarsLearningTest, KeepsAHeavyTensorChainOnOneGpu) {
  ExpectOptimum(HeavyTensorChain());
}
TEST_P(MarsLearningTest, SplitsLayersThatFitOnlyWhenSplit) {
  ExpectOptimum(OnlySplitFits());
}

INSTANTIATE_TEST_SUITE_P(Agents, MarsLearningTest,
                         ::testing::Values("mars", "mars-nopretrain"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "mars" ? std::string("mars")
                                                    : "mars_nopretrain";
                         });

// `dplace pretrain` then mars with the file is the same search as mars
// pre-training by itself (same seed, same options).
TEST_F(EncoderFileTest, MarsWithAPretrainedFileEqualsMarsPretrainingItself) {
  const Problem problem = TwoChains();
  const std::vector<std::string> options = {
      "grouping=ops", "hidden=16", "encoder_hidden=8", "pretrain_steps=20"};
  const std::string path = Path("two_chains.pt");
  StatusOr<PretrainSummary> summary =
      PretrainMarsEncoder(problem.Get(7), *MethodOptions::Parse(options), path);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->num_groups, 6);
  EXPECT_EQ(summary->steps, 20);

  SearchOptions search;
  search.budget.samples = 40;
  StatusOr<PlaceResult> itself = RunSearch(problem, "mars", options, search, 7);
  std::vector<std::string> with_file = options;
  with_file.push_back("encoder=" + path);
  StatusOr<PlaceResult> from_file =
      RunSearch(problem, "mars", with_file, search, 7);
  ASSERT_TRUE(itself.ok()) << itself.status().message();
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  ASSERT_EQ(itself->search.history.size(), from_file->search.history.size());
  for (size_t i = 0; i < itself->search.history.size(); ++i) {
    EXPECT_EQ(itself->search.history[i].step_time,
              from_file->search.history[i].step_time)
        << "sample " << i;
  }

  // A file of another architecture or graph is refused by the search.
  std::vector<std::string> wider = with_file;
  wider[2] = "encoder_hidden=16";
  StatusOr<PlaceResult> r = RunSearch(problem, "mars", wider, search, 7);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("hidden is 8, but this search needs 16"));
  r = RunSearch(OnlySplitFits(), "mars", with_file, search, 7);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("but this search places graph only_split_fits"));
}

// A mars search killed midway resumes to the same end. The resumed run
// skips pre-training (the checkpoint holds the encoder's weights), so this
// also checks that nothing else depended on it.
TEST(MarsCheckpointTest, ResumedSearchContinuesFromTheCheckpoint) {
  const Problem problem = TwoChains();
  const std::vector<std::string> options = {
      "grouping=ops", "hidden=16", "encoder_hidden=8", "pretrain_steps=20"};
  const std::string checkpoint = TempPath("resume.ckpt");
  ExpectKilledSearchResumesToTheSameEnd(problem, "mars", options, 60, 30,
                                        checkpoint, 2);
  std::filesystem::remove(checkpoint);
}

TEST(MarsOptionsTest, BadOptionsAreClearErrors) {
  EXPECT_THAT(MakeMethod("mars", *MethodOptions::Parse({"segment=0"}))
                  .status()
                  .message(),
              HasSubstr("method mars: option segment must be >= 1"));
  // The ablation has no pre-training to configure.
  EXPECT_THAT(
      MakeMethod("mars-nopretrain", *MethodOptions::Parse({"encoder=x.pt"}))
          .status()
          .message(),
      HasSubstr("unknown option \"encoder\""));
  EXPECT_THAT(
      PretrainMarsEncoder(PlacementProblem{}, *MethodOptions::Parse({}), "x.pt")
          .status()
          .message(),
      HasSubstr("no graph"));
}

}  // namespace
}  // namespace dplace
