// The `dplace` command, as a function so tests can run it in-process.
#ifndef DPLACE_CLI_CLI_H_
#define DPLACE_CLI_CLI_H_

#include <ostream>

namespace dplace {

// Exit codes of every dplace command.
enum ExitCode {
  kExitOk = 0,
  kExitInfeasible = 1,  // No feasible placement (e.g. out of memory).
  kExitBadInput = 2,    // Bad flags or files; one line on `err` says why.
};

// Runs `dplace argv[1..]`; human-readable results go to `out`, errors to
// `err` as one line "dplace: error: ...". Returns an ExitCode.
int RunCli(int argc, const char* const* argv, std::ostream& out,
           std::ostream& err);

}  // namespace dplace

#endif  // DPLACE_CLI_CLI_H_
