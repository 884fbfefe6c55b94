// Running `dplace` in-process from tests, and the bad-input contract every
// command keeps (cli_test, exec_commands_test).
#ifndef DPLACE_TESTING_CLI_TEST_UTIL_H_
#define DPLACE_TESTING_CLI_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/io/file.h"
#include "dplace/testing/temp_dir.h"

namespace dplace {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline CliResult Dplace(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"dplace"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult r;
  r.code = RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Checks the bad-input contract: exit 2, nothing on stdout, exactly one
// line on stderr that starts with "dplace: error: "; returns that line.
inline std::string BadInput(const CliResult& r) {
  EXPECT_EQ(r.code, kExitBadInput) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  const std::vector<std::string> lines = Lines(r.err);
  EXPECT_EQ(lines.size(), 1u) << r.err;
  EXPECT_FALSE(r.err.empty());
  if (!r.err.empty()) {
    EXPECT_EQ(r.err.back(), '\n');
  }
  EXPECT_THAT(r.err, ::testing::StartsWith("dplace: error: "));
  return lines.empty() ? "" : lines[0];
}

// A fresh directory per test, dir_, for the files it writes; removed after.
class CliDirTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDir("dplace"); }
  void TearDown() override { RemoveTree(dir_); }

  // Writes `contents` to dir_/`name`; returns the path.
  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = dir_ + "/" + name;
    Status s = WriteTextFile(path, contents);
    EXPECT_TRUE(s.ok()) << s.message();
    return path;
  }

  std::string dir_;
};

}  // namespace dplace

#endif  // DPLACE_TESTING_CLI_TEST_UTIL_H_
