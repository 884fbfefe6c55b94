// The dplace command starts again with OpenBLAS's fast kernels where
// OpenBLAS fell back to its generic ones (UseFastBlasKernels), and keeps
// its arguments and output when it does.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

namespace dplace {
namespace {

// Runs `command` through the shell and returns what it printed (stdout and
// stderr).
std::string Output(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    out.append(buffer.data(), n);
  }
  pclose(pipe);
  return out;
}

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
  const std::string output = Output("OPENBLAS_VERBOSE=2 " + kPlace);
  EXPECT_NE(output.find("step time:"), std::string::npos) << output;
  const std::string core = LastCore(output);
  if (core.empty()) GTEST_SKIP() << "OpenBLAS does not say its kernels";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_NE(core, "Prescott") << output;
  }
}

TEST(BlasKernelsTest, AChoiceTheUserMadeStands) {
  const std::string output =
      Output("OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=Prescott " + kPlace);
  EXPECT_NE(output.find("step time:"), std::string::npos) << output;
  const std::string core = LastCore(output);
  if (core.empty()) GTEST_SKIP() << "OpenBLAS does not say its kernels";
  EXPECT_EQ(core, "Prescott") << output;
}

}  // namespace
}  // namespace dplace
