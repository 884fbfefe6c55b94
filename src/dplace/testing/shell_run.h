// Running a command through the shell from tests: its exit code and what
// it printed (mpi_environment_test, blas_kernels_test).
#ifndef DPLACE_TESTING_SHELL_RUN_H_
#define DPLACE_TESTING_SHELL_RUN_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace dplace {

struct ShellRun {
  int code = -1;
  std::string out;  // stdout and stderr.
};

inline ShellRun Shell(const std::string& command) {
  ShellRun run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    run.out.append(buffer, n);
  }
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace dplace

#endif  // DPLACE_TESTING_SHELL_RUN_H_
