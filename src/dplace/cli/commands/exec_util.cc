#include "dplace/cli/commands/exec_util.h"

#include <optional>
#include <utility>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/util/format.h"

namespace dplace {

std::string GraphLine(const Graph& graph) {
  return "graph " + graph.name() + " (" + std::to_string(graph.num_ops()) +
         " ops, hash " + graph.hash() + ")";
}

StatusOr<ExecOptions> StepOptions(int steps) {
  ExecOptions options;
  if (steps == 0 || steps < -1) {
    return InvalidArgumentError("--steps: expected an integer >= 1, got " +
                                std::to_string(steps));
  }
  if (steps > 0) options.measured_steps = steps;
  return options;
}

void PrintStandIns(const Executor& executor, std::ostream& err) {
  for (const StandIn& s : executor.stand_ins()) {
    err << "dplace: warning: " << s.count << " op(s) of type " << s.op_type
        << " ran as a stand-in that only reads inputs and writes outputs ("
        << s.reason << ")\n";
  }
}

void PrintCluster(const Cluster& cluster, std::ostream& out) {
  for (const Device& d : cluster.devices()) {
    out << d.name << ": " << d.model << ", "
        << Format("%.1f GFLOP/s", d.peak_flops / 1e9) << " peak, "
        << Format("%.1f GB/s", d.memory_bandwidth / 1e9) << ", "
        << FormatBytes(d.memory_bytes) << ", launch "
        << Format("%.1f us", d.launch_overhead * 1e6);
    if (d.shared_host_slowdown > 0) {
      out << ", ops x" << Format("%.3f", 1 + d.shared_host_slowdown)
          << " beside another busy device of " << d.host;
    }
    out << "\n";
  }
  for (LinkId l = 0; l < cluster.num_links(); ++l) {
    const Link& link = cluster.link(l);
    out << cluster.device(link.from).name << " -> "
        << cluster.device(link.to).name << ": "
        << Format("%.2f GB/s", link.bandwidth / 1e9) << ", "
        << Format("%.1f us", link.latency * 1e6);
    if (link.hand_off > 0) {
      out << ", hand-off " << Format("%.1f us", link.hand_off * 1e6);
    }
    if (link.copier == Copier::kDestination) {
      out << ", copied by " << cluster.device(link.to).name;
    }
    out << "\n";
  }
}

StatusOr<RoundStatistic> StatisticFlag(const std::string& value) {
  const std::optional<RoundStatistic> statistic = ParseRoundStatistic(value);
  if (!statistic) {
    return InvalidArgumentError(
        "--statistic: expected fastest, fastest-quarter or median, got \"" +
        value + "\"");
  }
  return *statistic;
}

StatusOr<int> RoundsFlag(int rounds, int fallback) {
  if (rounds < 0) return fallback;
  if (rounds < 1) {
    return InvalidArgumentError("--rounds: expected an integer >= 1, got " +
                                std::to_string(rounds));
  }
  return rounds;
}

StatusOr<std::unique_ptr<Executor>> ExecutorOfCluster(
    const Graph& graph, const Cluster& cluster, const ExecOptions& options) {
  StatusOr<std::vector<ExecDevice>> devices = ExecDevicesOfCluster(cluster);
  if (!devices.ok()) {
    return Status(devices.status().code(),
                  "cluster " + cluster.name() + ": " +
                      devices.status().message() +
                      " (real execution needs a cluster of this machine's "
                      "devices: dplace cluster detect -o local.json)");
  }
  return Executor::Create(graph, std::move(devices).value(), options);
}

StatusOr<std::unique_ptr<MeasuredProblem>> LoadMeasuredProblem(
    const ExecFlags& flags, const ExecOptions& exec_options) {
  DPLACE_ASSIGN_OR_RETURN(LoadedModel model,
                          LoadModel(flags.model, flags.model_options));
  DPLACE_ASSIGN_OR_RETURN(Cluster cluster, LoadCluster(flags.cluster));
  DPLACE_ASSIGN_OR_RETURN(ProfileTable profile, LoadProfile(flags.profile));
  std::unique_ptr<MeasuredProblem> m(new MeasuredProblem{
      std::move(model), std::move(cluster), std::move(profile), nullptr,
      nullptr, PlacementProblem{}});
  DPLACE_ASSIGN_OR_RETURN(
      std::unique_ptr<Executor> executor,
      ExecutorOfCluster(m->model.graph, m->cluster, exec_options));
  m->env = std::make_unique<MeasuredEnvironment>(m->model.graph, m->cluster,
                                                 std::move(executor));
  m->cost = std::make_unique<CostModel>(m->model.graph, m->cluster, m->profile);
  m->problem = ProblemOf(m->model, *m->cost, flags.seed);
  return m;
}

StatusOr<std::unique_ptr<Environment>> MeasuredEnvironmentForPlace(
    const Graph& graph, const Cluster& cluster) {
  StatusOr<std::unique_ptr<Executor>> executor =
      ExecutorOfCluster(graph, cluster, {});
  if (!executor.ok()) return executor.status().WithPrefix("--env measured");
  return std::unique_ptr<Environment>(
      new MeasuredEnvironment(graph, cluster, std::move(executor).value()));
}

}  // namespace dplace
