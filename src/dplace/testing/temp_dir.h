// A test's own scratch directory, made and removed with POSIX calls rather
// than std::filesystem: the LibTorch of the PyTorch wheel (a CUDA build,
// docs/fidelity-gpu.md) exports its own std::filesystem::remove_all, which
// a test that links LibTorch binds to, and which crashes there.
#ifndef DPLACE_TESTING_TEMP_DIR_H_
#define DPLACE_TESTING_TEMP_DIR_H_

#include <ftw.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

namespace dplace {

// Removes `path` and everything under it, without following links; a
// missing `path` is not an error.
inline void RemoveTree(const std::string& path) {
  nftw(
      path.c_str(),
      [](const char* entry, const struct stat*, int, struct FTW*) {
        std::remove(entry);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

// Makes the directory `path` (its parent must exist), as a test's step.
inline void MakeDir(const std::string& path) {
  EXPECT_EQ(::mkdir(path.c_str(), 0755), 0) << path << ": " << errno;
}

// A fresh, empty directory for the running test: the system's temporary
// directory, `prefix`, this process and the test's name (a parameterised
// test's '/' made '_').
inline std::string FreshTestDir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix + "_" + std::to_string(::getpid()) + "_" +
                     info->test_suite_name() + "_" + info->name();
  std::replace(name.begin(), name.end(), '/', '_');
  const std::string dir = ::testing::TempDir() + name;
  RemoveTree(dir);
  MakeDir(dir);
  return dir;
}

}  // namespace dplace

#endif  // DPLACE_TESTING_TEMP_DIR_H_
