// The dplace command on a full disk: a small tmpfs mounted in a mount
// namespace of its own (`unshare -rm`, which needs neither root nor a
// change to the machine's mounts where user namespaces are allowed).
// Skipped, saying why, where no namespace can be made. A failed write is
// one error line naming the file and "No space left on device" (exit 2),
// the file written before stays whole, and no temporary is left.
//
// And searches stopped by SIGTERM or SIGINT: they end after the batch in
// flight with their checkpoint, say how to resume, exit 143 / 130, and
// the command they print ends where an uninterrupted search ends.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <regex>
#include <string>
#include <thread>

#include "dplace/io/file.h"
#include "dplace/testing/cli_test_util.h"
#include "dplace/testing/shell_run.h"
#include "dplace/testing/temp_dir.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

const std::string kDplace = DPLACE_BINARY;
const std::string kSource = DPLACE_SOURCE_DIR;
const std::string kGraph = kSource + "/examples/mlp_training.json";

class FullDiskTest : public CliDirTest {
 protected:
  void SetUp() override {
    CliDirTest::SetUp();
    MakeDir(dir_ + "/full");
    const ShellRun probe = Shell(
        "unshare -rm sh -c 'mount -t tmpfs -o size=8k none " + dir_ + "/full'");
    if (probe.code != 0) {
      GTEST_SKIP() << "cannot mount a small tmpfs in a mount namespace "
                      "(unshare -rm): "
                   << probe.out;
    }
  }

  // Runs `script` (sh) in `dir_` with a tmpfs of `kilobytes` on full/,
  // which lives as long as the script.
  ShellRun OnFullDisk(int kilobytes, const std::string& script) {
    return Shell("cd " + dir_ +
                 " && unshare -rm sh -c 'mount -t tmpfs -o size=" +
                 std::to_string(kilobytes) + "k none full && " + script + "'");
  }
};

// The second checkpoint of a search does not fit beside the first: the
// search stops with one line, the first checkpoint stays whole, no .tmp is
// left, and the search resumes from it.
TEST_F(FullDiskTest, ACheckpointWriteIsOneLineAndKeepsThePreviousOne) {
  const std::string search = kDplace + " place --model " + kGraph +
                             " --cluster k80x2 --method post --seed 1 "
                             "--budget-samples 360 --log d.jsonl";
  // The size of one checkpoint, in 4 kB pages, to size the tmpfs.
  const ShellRun sized =
      Shell("cd " + dir_ + " && " + search + " --checkpoint one.ckpt " +
            "> /dev/null && stat -c %s one.ckpt");
  ASSERT_EQ(sized.code, 0) << sized.out;
  const int pages = (std::stoi(sized.out) + 4095) / 4096;
  const ShellRun run = OnFullDisk(
      4 * (pages + 1),
      search + " --checkpoint full/C.ckpt > out.txt 2> err.txt; echo rc=$?; " +
          "ls -a full; cat err.txt; " + search +
          " --resume full/C.ckpt --checkpoint c2.ckpt");
  EXPECT_THAT(run.out, HasSubstr("rc=2\n")) << run.out;
  EXPECT_THAT(run.out, HasSubstr("\n.\n..\nC.ckpt\ndplace: error: "))
      << run.out;
  EXPECT_THAT(run.out, HasSubstr("dplace: error: method post: checkpoint: "
                                 "full/C.ckpt: cannot write: No space left on "
                                 "device\n"));
  EXPECT_THAT(run.out, HasSubstr("method post: searched 360 samples (resumed "
                                 "at 120, 30 updates"));
}

// Graph JSON, Chrome traces and placements are written whole or not at
// all: the file that was there stays, and no temporary is left.
TEST_F(FullDiskTest, AnOutputThatDoesNotFitLeavesTheOldFile) {
  const std::string onnx = kSource + "/testdata/onnx/resnet18.onnx";
  const ShellRun run = OnFullDisk(
      8, "echo old > full/g.json && echo old > full/t.json && " + kDplace +
             " zoo export nmt -o full/g.json; echo rc=$?; " + kDplace +
             " import " + onnx + " -o full/g.json; echo rc=$?; " + kDplace +
             " place --model zoo:nmt --cluster k40x2 --method m-etf --trace "
             "full/t.json > /dev/null; echo rc=$?; ls -a full; cat full/g.json "
             "full/t.json");
  EXPECT_EQ(run.out,
            "dplace: error: full/g.json: cannot write: No space left on "
            "device\nrc=2\n"
            "dplace: error: full/g.json: cannot write: No space left on "
            "device\nrc=2\n"
            "dplace: error: full/t.json: cannot write: No space left on "
            "device\nrc=2\n"
            ".\n..\ng.json\nt.json\nold\nold\n");
}

class StopSignalTest : public CliDirTest {
 protected:
  void SetUp() override {
    CliDirTest::SetUp();
    MakeDir(dir_ + "/whole");
    MakeDir(dir_ + "/stopped");
  }

  // Runs `search` in dir_/stopped (through sh, which execs dplace), sends
  // `signal` once its first checkpoint C.ckpt is there, and returns its
  // wait status.
  int RunAndSignal(const std::string& search, int signal) {
    const std::string script =
        "cd " + dir_ + "/stopped && exec " + search + " > out.txt 2> err.txt";
    const char* argv[] = {"sh", "-c", script.c_str(), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr,
                    const_cast<char* const*>(argv), environ) != 0) {
      return -1;
    }
    const std::string checkpoint = dir_ + "/stopped/C.ckpt";
    int status = 0;
    while (::access(checkpoint.c_str(), F_OK) != 0) {
      if (waitpid(pid, &status, WNOHANG) == pid) return status;  // Done.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid, signal);
    waitpid(pid, &status, 0);
    return status;
  }

  // The log without its wall times.
  static std::string LogWithoutWallTimes(const std::string& path) {
    StatusOr<std::string> text = ReadTextFile(path);
    return std::regex_replace(text.ok() ? *text : "",
                              std::regex("\"wall_s\":[^,}]*,?"), "");
  }

  // The search `flags` on the example graph, stopped by `signal` after its
  // first checkpoint, then continued by the command it printed: the same
  // placement and log as an uninterrupted search.
  void StopAndResume(const std::string& flags, int signal) {
    const std::string search =
        kDplace + " place --model " + kGraph + " --cluster k80x2 --seed 1 " +
        flags + " --log d.jsonl --checkpoint C.ckpt --out p.json";
    const ShellRun whole = Shell("cd " + dir_ + "/whole && " + search);
    ASSERT_EQ(whole.code, 0) << whole.out;

    const int status = RunAndSignal(search, signal);
    const std::string stopped = dir_ + "/stopped/";
    const std::string err = *ReadTextFile(stopped + "err.txt");
    ASSERT_TRUE(WIFEXITED(status)) << "killed, not stopped: " << err;
    EXPECT_EQ(WEXITSTATUS(status), 128 + signal) << err;
    const std::string name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    EXPECT_THAT(err, MatchesRegex("dplace: " + name +
                                  ": the search stopped after [0-9]+ "
                                  "samples of [0-9]+; checkpoint C.ckpt "
                                  "written; to continue it: dplace place "
                                  ".* --resume C.ckpt\n"));
    EXPECT_THAT(*ReadTextFile(stopped + "out.txt"),
                HasSubstr("stopped by a signal: the best so far"));
    // The line it printed, run as it is.
    const std::string line = err.substr(err.find("to continue it: dplace ") +
                                        std::string("to continue it: ").size());
    const std::string command =
        kDplace + line.substr(std::string("dplace").size());
    const ShellRun resumed = Shell("cd " + stopped + " && " + command);
    ASSERT_EQ(resumed.code, 0) << resumed.out;
    EXPECT_THAT(resumed.out, HasSubstr("(resumed at "));
    EXPECT_EQ(*ReadTextFile(stopped + "p.json"),
              *ReadTextFile(dir_ + "/whole/p.json"));
    EXPECT_EQ(LogWithoutWallTimes(stopped + "d.jsonl"),
              LogWithoutWallTimes(dir_ + "/whole/d.jsonl"));
  }
};

TEST_F(StopSignalTest, PostStoppedBySigtermResumesToTheSameEnd) {
  StopAndResume("--method post --budget-samples 2400", SIGTERM);
}

// mcmc's 20,000 samples take about 0.15 s: its checkpoints go every 10
// updates, not once a second, for the signal to come mid-search.
TEST_F(StopSignalTest, McmcStoppedBySigtermResumesToTheSameEnd) {
  StopAndResume("--method mcmc --budget-samples 20000 --checkpoint-seconds 0",
                SIGTERM);
}

TEST_F(StopSignalTest, McmcStoppedBySigintResumesToTheSameEnd) {
  StopAndResume("--method mcmc --budget-samples 20000 --checkpoint-seconds 0",
                SIGINT);
}

}  // namespace
}  // namespace dplace
