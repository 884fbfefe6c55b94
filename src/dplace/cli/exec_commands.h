// The real-execution commands: `dplace profile`, `dplace cluster detect`,
// `dplace measure` and `dplace fidelity`. Kept out of cli.cc, which only
// registers and dispatches them.
#ifndef DPLACE_CLI_EXEC_COMMANDS_H_
#define DPLACE_CLI_EXEC_COMMANDS_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "dplace/env/environment.h"

namespace CLI {
class App;
}  // namespace CLI

namespace dplace {

struct ExecFlags {
  std::string model;
  std::string cluster;
  std::string devices;  // profile: "cpu:0,cpu:1".
  std::string placement;
  std::string profile;
  std::string output;       // -o of profile and cluster detect.
  std::string cluster_out;  // profile --cluster-out.
  std::string svg;
  std::string markdown;
  std::string trace;             // measure: Chrome trace of the real step.
  std::string placements_dir;    // fidelity: where each placement is written.
  std::string compare_cluster;   // fidelity: also simulated on this cluster.
  bool calibrate_links = false;  // fidelity: links fitted in the rounds.
  int steps = -1;  // Measured (or profiled) steps; negative: the default.
  int cpu_devices = 2;
  int samples = 20;
  int rounds = -1;  // fidelity, calibrate: passes; negative: the default.
  std::string statistic = "fastest-quarter";  // Of a placement's rounds.
  int round_steps = 1;  // profile: steps of a run, with statistic fastest.
  uint64_t seed = 1;
};

// The subcommands, all bound to one ExecFlags.
struct ExecCommands {
  CLI::App* profile = nullptr;
  CLI::App* detect = nullptr;  // Under `cluster`.
  CLI::App* measure = nullptr;
  CLI::App* fidelity = nullptr;
  CLI::App* calibrate = nullptr;  // Under `cluster`.
};

// Adds profile, measure and fidelity to `app` and detect and calibrate
// to `cluster`.
ExecCommands AddExecCommands(CLI::App* app, CLI::App* cluster,
                             ExecFlags* flags);

// Runs whichever of them was parsed; returns -1 when none was.
int RunExecCommands(const ExecCommands& commands, const ExecFlags& flags,
                    std::ostream& out, std::ostream& err);

// `place --env measured`: a MeasuredEnvironment on the cluster's real
// devices, or an error that says the cluster must be a local one (`dplace
// cluster detect`) when its devices are not this machine's.
StatusOr<std::unique_ptr<Environment>> MeasuredEnvironmentForPlace(
    const Graph& graph, const Cluster& cluster);

}  // namespace dplace

#endif  // DPLACE_CLI_EXEC_COMMANDS_H_
