// `dplace pretrain`: pre-trains Mars's graph encoder on a model and writes
// it to a file that `dplace place --method mars --encoder FILE` loads.
// Kept out of cli.cc, which only registers it.
#ifndef DPLACE_CLI_PRETRAIN_COMMAND_H_
#define DPLACE_CLI_PRETRAIN_COMMAND_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/util/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace dplace {

struct PretrainFlags {
  std::string model;
  std::string output;
  int steps = -1;  // Negative: mars's pretrain_steps.
  uint64_t seed = 1;
  std::vector<std::string> options;  // Options of method mars.
};

// Adds the `pretrain` subcommand to `app`, its flags bound to `flags`.
CLI::App* AddPretrainCommand(CLI::App* app, PretrainFlags* flags);

// Runs it; `load_graph` turns --model into a graph (as every command does).
int RunPretrainCommand(
    const PretrainFlags& flags,
    const std::function<StatusOr<Graph>(const std::string&)>& load_graph,
    std::ostream& out, std::ostream& err);

}  // namespace dplace

#endif  // DPLACE_CLI_PRETRAIN_COMMAND_H_
