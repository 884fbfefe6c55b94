// The dplace command starts again with OpenBLAS's fast kernels where
// OpenBLAS fell back to its generic ones (UseFastBlasKernels), and keeps
// its arguments and output when it does.
#include <gtest/gtest.h>

#include <string>

#include "dplace/testing/shell_run.h"

namespace dplace {
namespace {

// The kernels OpenBLAS reported last (OPENBLAS_VERBOSE=2 prints "Core: NAME"
// as each copy of it loads).
std::string LastCore(const std::string& output) {
  const size_t at = output.rfind("Core: ");
  if (at == std::string::npos) return "";
  return output.substr(at + 6, output.find('\n', at) - at - 6);
}

const std::string kPlace = std::string(DPLACE_BINARY) +
                           " place --model zoo:rnnlm --cluster k40x2 "
                           "--method round-robin";

TEST(BlasKernelsTest, PlaceRunsOnKernelsForThisCpu) {
  const ShellRun run = Shell("OPENBLAS_VERBOSE=2 " + kPlace);
  const std::string& output = run.out;
  EXPECT_EQ(run.code, 0) << output;
  EXPECT_NE(output.find("step time:"), std::string::npos) << output;
  const std::string core = LastCore(output);
  if (core.empty()) GTEST_SKIP() << "OpenBLAS does not say its kernels";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_NE(core, "Prescott") << output;
  }
}

TEST(BlasKernelsTest, AChoiceTheUserMadeStands) {
  const ShellRun run =
      Shell("OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=Prescott " + kPlace);
  const std::string& output = run.out;
  EXPECT_EQ(run.code, 0) << output;
  EXPECT_NE(output.find("step time:"), std::string::npos) << output;
  const std::string core = LastCore(output);
  if (core.empty()) GTEST_SKIP() << "OpenBLAS does not say its kernels";
  EXPECT_EQ(core, "Prescott") << output;
}

}  // namespace
}  // namespace dplace
