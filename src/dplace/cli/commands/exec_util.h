// What the real-execution commands (profile, measure, fidelity, cluster
// detect, cluster calibrate) and `place --env measured` share: their flags'
// checks, the executor behind a cluster, the problem fidelity and calibrate
// measure, and what they print about devices and stand-ins.
#ifndef DPLACE_CLI_COMMANDS_EXEC_UTIL_H_
#define DPLACE_CLI_COMMANDS_EXEC_UTIL_H_

#include <memory>
#include <ostream>
#include <string>

#include "dplace/cli/commands/commands.h"
#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/exec/executor.h"
#include "dplace/exec/measured_environment.h"
#include "dplace/exec/profile.h"
#include "dplace/graph/graph.h"
#include "dplace/model/load_model.h"
#include "dplace/util/status.h"

namespace dplace {

// Help of their --model and --cluster.
inline constexpr const char* kExecModelHelp =
    "model: zoo:NAME[:key=value,...], a graph .json file, or an .onnx "
    "model";
inline constexpr const char* kExecClusterHelp =
    "cluster .json of this machine's devices (dplace cluster detect)";

// "graph NAME (N ops, hash H)".
std::string GraphLine(const Graph& graph);

// --steps as ExecOptions (negative: the defaults).
StatusOr<ExecOptions> StepOptions(int steps);

// Warns on `err` of the op types the executor ran as stand-ins.
void PrintStandIns(const Executor& executor, std::ostream& err);

// One line per device and per link of `cluster`.
void PrintCluster(const Cluster& cluster, std::ostream& out);

// --statistic: fastest, fastest-quarter or median.
StatusOr<RoundStatistic> StatisticFlag(const std::string& value);

// --rounds: `fallback` when not given (negative).
StatusOr<int> RoundsFlag(int rounds, int fallback);

// The executor behind a cluster, with errors that point at `cluster detect`.
StatusOr<std::unique_ptr<Executor>> ExecutorOfCluster(
    const Graph& graph, const Cluster& cluster, const ExecOptions& options);

// What fidelity and cluster calibrate measure and simulate: --model on
// --cluster's real devices, and the cost model of --profile. Held on the
// heap, so that what points into it stays put.
struct MeasuredProblem {
  LoadedModel model;
  Cluster cluster;
  ProfileTable profile;
  std::unique_ptr<MeasuredEnvironment> env;
  std::unique_ptr<CostModel> cost;
  PlacementProblem problem;
};

// Loads --model, --cluster and --profile and starts the executor of
// --cluster's devices.
StatusOr<std::unique_ptr<MeasuredProblem>> LoadMeasuredProblem(
    const ExecFlags& flags, const ExecOptions& exec_options);

// `place --env measured`: a MeasuredEnvironment on the cluster's real
// devices, or an error that says the cluster must be a local one (`dplace
// cluster detect`) when its devices are not this machine's.
StatusOr<std::unique_ptr<Environment>> MeasuredEnvironmentForPlace(
    const Graph& graph, const Cluster& cluster);

}  // namespace dplace

#endif  // DPLACE_CLI_COMMANDS_EXEC_UTIL_H_
