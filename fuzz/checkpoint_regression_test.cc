// Replays the checkpoint fuzz target (checkpoint_target.h) over its seeds
// (fuzz/seeds/checkpoint/) and every input that once crashed it or broke its
// property (testdata/fuzz-regressions/checkpoint/), and checks what the
// checkpoint loader refuses, with which message. Apart from
// fuzz_regression_test because it links LibTorch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/io/graph_json.h"
#include "dplace/rl/agent.h"
#include "fuzz/checkpoint_target.h"
#include "fuzz/fuzz_util.h"

namespace dplace {
namespace fuzz {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kRoot(DPLACE_SOURCE_DIR);

int Replay(const fs::path& dir) {
  int replayed = 0;
  for (const fs::path& file : FilesIn(dir)) {
    SCOPED_TRACE(file.string());
    const std::string bytes = ReadBytes(file);
    FuzzCheckpoint(reinterpret_cast<const uint8_t*>(bytes.data()),
                   bytes.size());
    ++replayed;
  }
  return replayed;
}

TEST(CheckpointFuzzRegressionTest, SeedsAndPastCrashesRunCleanly) {
  EXPECT_EQ(Replay(kRoot / "fuzz" / "seeds" / "checkpoint"), 2);
  Replay(kRoot / "testdata" / "fuzz-regressions" / "checkpoint");
}

// The seeds' problem, as in checkpoint_target.cc.
class CheckpointCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<Graph> graph =
        ReadGraphJson((kRoot / "examples" / "mlp_training.json").string());
    ASSERT_TRUE(graph.ok());
    graph_ = std::make_unique<Graph>(std::move(graph).value());
    cluster_ = std::make_unique<Cluster>(*MakeClusterPreset("k80x2"));
    cost_ = std::make_unique<CostModel>(*graph_, *cluster_);
    problem_.graph = graph_.get();
    problem_.cluster = cluster_.get();
    problem_.cost = cost_.get();
  }

  StatusOr<CheckpointInfo> Check(const std::string& agent_name,
                                 const std::vector<std::string>& options,
                                 const std::string& bytes) {
    std::unique_ptr<Agent> agent =
        *MakeAgent(agent_name, *MethodOptions::Parse(options));
    return agent->CheckCheckpoint(problem_, bytes, "x.ckpt");
  }

  static std::string Seed(const std::string& name) {
    return ReadBytes(kRoot / "fuzz" / "seeds" / "checkpoint" / name);
  }

  // `bytes` with `from` replaced by `to`, of the same length, so the zip
  // stays valid (its entries are stored, not compressed).
  static std::string Edit(std::string bytes, const std::string& from,
                          const std::string& to) {
    EXPECT_EQ(from.size(), to.size());
    const size_t at = bytes.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) bytes.replace(at, from.size(), to);
    return bytes;
  }

  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<CostModel> cost_;
  PlacementProblem problem_;
};

TEST_F(CheckpointCheckTest, SeedsAreAccepted) {
  StatusOr<CheckpointInfo> post = Check("post", {}, Seed("post.ckpt"));
  ASSERT_TRUE(post.ok()) << post.status().message();
  EXPECT_EQ(post->samples, 24);
  EXPECT_EQ(post->updates, 2);
  EXPECT_TRUE(post->has_best);
  StatusOr<CheckpointInfo> colocrl =
      Check("colocrl", {"hidden=2", "embedding=2"}, Seed("colocrl.ckpt"));
  ASSERT_TRUE(colocrl.ok()) << colocrl.status().message();
  EXPECT_EQ(colocrl->samples, 8);
}

TEST_F(CheckpointCheckTest, MismatchesAreRefused) {
  // Another agent, and the same agent with another policy size whose meta
  // claims that size: the parameters do not fit.
  EXPECT_THAT(Check("post-ce", {}, Seed("post.ckpt")).status().message(),
              HasSubstr("agent is \"post\", but this search has \"post-ce\""));
  EXPECT_THAT(
      Check("colocrl", {"hidden=3", "embedding=2"},
            Edit(Seed("colocrl.ckpt"), "\"hidden\":\"2\"", "\"hidden\":\"3\""))
          .status()
          .message(),
      HasSubstr("cannot read a dplace checkpoint from it (corrupt or "
                "not a checkpoint): policy parameter"));
}

// The search resumed must be the one checkpointed: the same options, as
// given, and the same seed.
TEST_F(CheckpointCheckTest, OtherOptionsOrSeedAreRefused) {
  EXPECT_THAT(
      Check("post", {"batch=24"}, Seed("post.ckpt")).status().message(),
      HasSubstr("checkpoint x.ckpt: options is {}, but this search has "
                "{\"batch\":\"24\"} (resume with the same method, model, "
                "cluster, --option and --seed)"));
  EXPECT_THAT(
      Check("colocrl", {"hidden=2"}, Seed("colocrl.ckpt")).status().message(),
      HasSubstr("options is {\"embedding\":\"2\",\"hidden\":\"2\"}, but "
                "this search has {\"hidden\":\"2\"}"));
  problem_.seed = 2;
  EXPECT_THAT(Check("post", {}, Seed("post.ckpt")).status().message(),
              HasSubstr("checkpoint x.ckpt: seed is 1, but this search has 2"));
}

TEST_F(CheckpointCheckTest, BadLoopStateIsRefused) {
  const std::string post = Seed("post.ckpt");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Edit(post, "\"samples\":24", "\"samples\":-4"),
       "checkpoint x.ckpt: samples is -4, expected an integer in [0, 2^53]"},
      {Edit(post, "\"samples\":24", "\"samples\":[]"),
       "samples is [], expected an integer in [0, 2^53]"},
      {Edit(post, "\"has_best\":true", "\"has_best\":1e99"),
       "has_best is 1e+99, expected true or false"},
      {Edit(post, "\"best_groups\":[0,2", "\"best_groups\":[0,3"),
       "best_groups is [0,3,0,2,2,2,2,1,1,1,2,2,0,2,2,1,1,0,2,2,1,1,0,1], "
       "expected an array of devices in [0, 3)"},
      {Edit(post, "\"best_step_time\":0.27671938145707975",
            "\"best_step_time\":-2.7671938145707975"),
       "best_step_time is -2.76719381457079"},
      {Edit(post, "\"rng\":\"9985981688718608518",
            "\"rng\":\"x985981688718608518"),
       "checkpoint x.ckpt: rng: not a generator state"},
      {Edit(post, "dplace-rl-checkpoint", "dplace-rl-checkpoinT"),
       "format is \"dplace-rl-checkpoinT\", but this search has "
       "\"dplace-rl-checkpoint\""},
  };
  for (const auto& [bytes, message] : cases) {
    SCOPED_TRACE(message);
    StatusOr<CheckpointInfo> info = Check("post", {}, bytes);
    ASSERT_FALSE(info.ok());
    EXPECT_THAT(info.status().message(), HasSubstr(message));
  }
}

// Inputs the fuzzer found crashing LibTorch are refused before LibTorch
// sees them.
TEST_F(CheckpointCheckTest, FuzzFindingsAreRefusedWithAMessage) {
  const fs::path dir = kRoot / "testdata" / "fuzz-regressions" / "checkpoint";
  struct Case {
    std::string file;
    bool colocrl;  // Else post.
    std::string message;
  };
  const std::vector<Case> cases = {
      // `__buffers__ = []` misspelt `__buffess__`: a SEGV in LibTorch
      // 1.13's ScriptTypeParser::parseClassConstant.
      {"misspelt-buffers-in-code.ckpt", true,
       "checkpoint x.ckpt: code/__torch__/___torch_mangle_13.py: line 3 (not "
       "the code of a dplace checkpoint)"},
      // A BINUNICODE of 4294574086 bytes in data.pkl: LibTorch's Unpickler
      // reserved 4 GB before reading it (out of memory under libFuzzer).
      {"pickle-string-length-past-the-end.ckpt", false,
       "checkpoint x.ckpt: data.pkl: a string of 4294574086 bytes runs past "
       "the end (a corrupt pickle)"},
      // MARK where the empty tuple before NEWOBJ was: LibTorch 1.13's
      // Unpickler popped past its stack and freed what it had not
      // allocated (ASan, inside torch::jit::import_ir_module).
      {"newobj-after-a-mark-in-data-pkl.ckpt", true,
       "checkpoint x.ckpt: data.pkl: NEWOBJ at byte 23 needs 2 values above "
       "its mark, the stack holds 0 (a corrupt pickle)"},
      // meta's storage key changed from 0 to 1: LibTorch 1.13 sized the
      // storage by data.pkl (6733 bytes) over record 1's 120 bytes, and
      // reading meta overflowed the heap (ASan).
      {"storage-larger-than-its-record.ckpt", false,
       "checkpoint x.ckpt: data.pkl: BINPERSID at byte 131: storage 1 of "
       "6733 elements (6733 bytes) is larger than its record (120 bytes) (a "
       "corrupt pickle)"},
      // A deflated code record of 124 bytes claiming 4093640933 (its
      // central directory entry): LibTorch 1.13's reader allocated the 4 GB
      // claimed before inflating (out of memory under libFuzzer).
      {"record-claiming-4-gb.ckpt", true,
       "checkpoint x.ckpt: cannot read a dplace checkpoint from it (corrupt "
       "or not a checkpoint): record "},
      {"record-claiming-4-gb.ckpt", true,
       "(colocrl.ckpt/code/__torch__/___torch_mangle_29.py) claims "
       "4093640933 bytes from 124 compressed, more than the archive's 50235 "
       "bytes can hold"},
      // The colocrl policy's group order (a buffer) with an index out of
      // range: accepted, then sampling failed ("index out of range in
      // self"), breaking the target's property. The input as found also
      // had a corrupt debug pickle, refused since by the pickle check; the
      // `-alone` copy is the seed with only that buffer changed.
      {"policy-order-out-of-range.ckpt", true,
       "___torch_mangle_15.py.debug_pkl: APPEND at byte 33 needs 2 values "
       "above its mark, the stack holds 1 (a corrupt pickle)"},
      {"policy-order-out-of-range-alone.ckpt", true,
       "cannot read a dplace checkpoint from it (corrupt or not a "
       "checkpoint): policy buffer "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    StatusOr<CheckpointInfo> info =
        c.colocrl ? Check("colocrl", {"hidden=2", "embedding=2"},
                          ReadBytes(dir / c.file))
                  : Check("post", {}, ReadBytes(dir / c.file));
    ASSERT_FALSE(info.ok());
    EXPECT_THAT(info.status().message(), HasSubstr(c.message));
  }
}

// LibTorch's reader names records inside the archive's folder; a second
// folder with the same name would leave the size the pickle check uses in
// doubt.
TEST_F(CheckpointCheckTest, RefusesANameInTwoFolders) {
  std::string post = Seed("post.ckpt");
  // The last occurrence is the central directory's, after every record.
  const size_t at = post.rfind("archive/data/2");
  ASSERT_NE(at, std::string::npos);
  post.replace(at, 14, "xrchive/data/1");
  EXPECT_THAT(Check("post", {}, post).status().message(),
              HasSubstr("checkpoint x.ckpt: record xrchive/data/1 repeats a "
                        "name in another folder (a corrupt archive)"));
}

TEST_F(CheckpointCheckTest, TruncatedAndForeignFilesAreRefused) {
  const std::string post = Seed("post.ckpt");
  EXPECT_THAT(
      Check("post", {}, post.substr(0, post.size() / 2)).status().message(),
      HasSubstr("x.ckpt: cannot read a dplace checkpoint from it"));
  EXPECT_THAT(Check("post", {}, "").status().message(),
              HasSubstr("x.ckpt: cannot read a dplace checkpoint from it"));
}

}  // namespace
}  // namespace fuzz
}  // namespace dplace
