// The MPI environment end to end: `mpirun --oversubscribe -np 3 dplace
// place --env mpi` on localhost against the in-process search, a hung
// worker, a rank that dies and --resume, several controllers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "dplace/io/file.h"
#include "dplace/testing/shell_run.h"
#include "dplace/testing/temp_dir.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kGraph =
    std::string(DPLACE_SOURCE_DIR) + "/examples/mlp_training.json";

// `dplace place` with post on the example MLP, seed 7, and `extra`.
std::string Place(const std::string& extra) {
  return std::string(DPLACE_BINARY) + " place --graph " + kGraph +
         " --cluster k80x2 --method post --seed 7 " + extra;
}

// The same under mpirun with `ranks` processes on localhost.
std::string MpiPlace(int ranks, const std::string& extra) {
  return std::string(DPLACE_MPIEXEC) + " --oversubscribe --bind-to none -np " +
         std::to_string(ranks) + " " + Place("--env mpi " + extra);
}

// The line of `out` that starts with `prefix`.
std::string LineStarting(const std::string& out, const std::string& prefix) {
  const size_t at = out.find("\n" + prefix);
  if (at == std::string::npos) return "";
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

int64_t Reissued(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("(\\d+) re-issued"))) return -1;
  return std::stoll(m[1]);
}

class MpiEnvironmentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // CI runs as root in a container; mpirun refuses root without these.
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  void SetUp() override { dir_ = FreshTestDir("dplace_mpi_test"); }
  void TearDown() override { RemoveTree(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

TEST_F(MpiEnvironmentTest, SameSeedFindsTheSameBestAsInProcess) {
  const ShellRun local =
      Shell(Place("--budget-samples 48 --out " + Path("local.json")));
  ASSERT_EQ(local.code, 0) << local.out;
  const ShellRun mpi =
      Shell(MpiPlace(3, "--budget-samples 48 --out " + Path("mpi.json")));
  ASSERT_EQ(mpi.code, 0) << mpi.out;
  EXPECT_THAT(mpi.out, HasSubstr("mpi: 3 ranks, 1 controller(s), 2 worker(s) "
                                 "for controller 0; 48 evaluations issued, 0 "
                                 "re-issued"));
  EXPECT_THAT(mpi.out, HasSubstr("method post: searched 48 samples"));
  EXPECT_NE(LineStarting(local.out, "step time: "), "");
  EXPECT_EQ(LineStarting(mpi.out, "step time: "),
            LineStarting(local.out, "step time: "));
  EXPECT_EQ(*ReadTextFile(Path("mpi.json")), *ReadTextFile(Path("local.json")));
}

TEST_F(MpiEnvironmentTest, HungWorkerIsTimedOutAndItsPlacementReissued) {
  const ShellRun local =
      Shell(Place("--budget-samples 36 --out " + Path("local.json")));
  ASSERT_EQ(local.code, 0) << local.out;
  // Rank 2 takes 3 s per placement, 15 times the timeout: without re-issue
  // the search would wait for it at every batch.
  const ShellRun mpi = Shell(MpiPlace(
      3, "--budget-samples 36 --mpi-timeout 0.2 --mpi-slow-worker 2:3 --out " +
             Path("mpi.json")));
  ASSERT_EQ(mpi.code, 0) << mpi.out;
  EXPECT_GE(Reissued(mpi.out), 1) << mpi.out;
  EXPECT_THAT(mpi.out, HasSubstr("method post: searched 36 samples"));
  EXPECT_EQ(LineStarting(mpi.out, "step time: "),
            LineStarting(local.out, "step time: "));
  EXPECT_EQ(*ReadTextFile(Path("mpi.json")), *ReadTextFile(Path("local.json")));
}

TEST_F(MpiEnvironmentTest, RankDeathStopsTheJobAndResumeLosesNothing) {
  // Post updates every 12 samples and checkpoints every 10 updates, so at
  // samples 120, 240 and 360.
  const ShellRun local =
      Shell(Place("--budget-samples 400 --out " + Path("local.json")));
  ASSERT_EQ(local.code, 0) << local.out;
  const std::string log = Path("search.jsonl");
  const std::string checkpoint = Path("search.ckpt");
  // Worker rank 1 dies when handed the job's 130th placement or a later
  // one: after the first checkpoint and, as every batch starts with rank 1,
  // by the batch of samples 132-143, long before the second.
  const ShellRun died = Shell(MpiPlace(
      3, "--budget-samples 400 --log " + log + " --mpi-exit-worker 1:130"));
  EXPECT_NE(died.code, 0) << died.out;
  EXPECT_THAT(died.out, Not(HasSubstr("method post: searched")));
  ASSERT_TRUE(std::filesystem::exists(checkpoint)) << died.out;

  const ShellRun resumed =
      Shell(MpiPlace(3, "--budget-samples 400 --log " + log + " --resume " +
                            checkpoint + " --out " + Path("mpi.json")));
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  std::smatch at;
  ASSERT_TRUE(std::regex_search(
      resumed.out, at, std::regex("searched 400 samples \\(resumed at (\\d+)")))
      << resumed.out;
  EXPECT_EQ(at[1], "120");
  // The log holds each sample once: the lost batch was sampled again.
  const StatusOr<std::string> text = ReadTextFile(log);
  ASSERT_TRUE(text.ok()) << text.status().message();
  const int lines =
      static_cast<int>(std::count(text->begin(), text->end(), '\n'));
  EXPECT_EQ(lines, 400);
  EXPECT_EQ(LineStarting(resumed.out, "step time: "),
            LineStarting(local.out, "step time: "));
  EXPECT_EQ(*ReadTextFile(Path("mpi.json")), *ReadTextFile(Path("local.json")));
}

TEST_F(MpiEnvironmentTest, TwoControllersTrainWithAveragedGradients) {
  const ShellRun mpi = Shell(MpiPlace(
      4, "--controllers 2 --budget-samples 48 --out " + Path("mpi.json")));
  ASSERT_EQ(mpi.code, 0) << mpi.out;
  EXPECT_THAT(mpi.out, HasSubstr("mpi: 4 ranks, 2 controller(s), 1 worker(s) "
                                 "for controller 0; 48 evaluations issued"));
  // Only controller 0 prints.
  EXPECT_THAT(mpi.out, HasSubstr("method post: searched 48 samples"));
  EXPECT_EQ(mpi.out.find("method post"), mpi.out.rfind("method post"));
  EXPECT_TRUE(std::filesystem::exists(Path("mpi.json")));
}

TEST_F(MpiEnvironmentTest, TooFewRanksIsAnError) {
  const ShellRun mpi =
      Shell(MpiPlace(2, "--controllers 2 --budget-samples 12"));
  EXPECT_EQ(mpi.code, 2) << mpi.out;
  EXPECT_THAT(mpi.out, HasSubstr("--env mpi with 2 controller(s) needs at "
                                 "least 4 ranks, a controller and a worker "
                                 "each (mpirun -np N); this job has 2"));
}

}  // namespace
}  // namespace dplace
