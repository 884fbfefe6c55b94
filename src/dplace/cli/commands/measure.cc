#include <CLI/CLI.hpp>
#include <algorithm>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/cli/commands/exec_util.h"
#include "dplace/exec/executor.h"
#include "dplace/io/chrome_trace.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/placement_json.h"
#include "dplace/model/load_model.h"
#include "dplace/util/format.h"
#include "dplace/util/span.h"

namespace dplace {
namespace {

// Prints what each device's thread did in the traced step (ops, copies
// into it, idle) and writes the step as a Chrome trace in the simulator's
// layout: a copy shows on its link's lane, though the consumer's thread
// ran it.
Status WriteMeasuredTrace(const Graph& graph, const Cluster& cluster,
                          const ExecResult& result, const std::string& path,
                          std::ostream& out) {
  const int n = cluster.num_devices();
  std::vector<double> op_seconds(n, 0), copy_seconds(n, 0);
  std::vector<int> ops(n, 0), copies(n, 0);
  SimResult trace;
  trace.step_time = result.timeline_step_time;
  for (TimelineEvent e : result.timeline) {
    const double seconds = e.end - e.start;
    if (e.kind == TimelineEvent::Kind::kCompute) {
      op_seconds[e.device] += seconds;
      ++ops[e.device];
    } else {
      copy_seconds[e.lane] += seconds;
      ++copies[e.lane];
      const Route route = cluster.route(e.device, e.lane);
      if (route.empty()) continue;
      e.lane = route[0];
    }
    trace.timeline.push_back(e);
  }
  const double step = result.timeline_step_time;
  for (DeviceId d = 0; d < n; ++d) {
    out << "traced step, " << cluster.device(d).name << ": " << ops[d]
        << " ops " << Format("%.6f", op_seconds[d]) << " s, " << copies[d]
        << " copies in " << Format("%.6f", copy_seconds[d]) << " s, idle "
        << Format("%.6f", std::max(0.0, step - op_seconds[d] - copy_seconds[d]))
        << " s\n";
  }
  DPLACE_RETURN_IF_ERROR(WriteChromeTrace(graph, cluster, trace, path));
  out << "trace: " << path << " (open in Perfetto)\n";
  return Status::Ok();
}

}  // namespace

CLI::App* AddMeasureCommand(CLI::App* parent, ExecFlags* flags) {
  CLI::App* measure = parent->add_subcommand(
      "measure",
      "run training steps of a placement on this machine's "
      "devices and print the measured step time");
  measure->add_option("--model", flags->model, kExecModelHelp)->required();
  AddModelOptionFlags(measure, &flags->model_options);
  measure->add_option("--cluster", flags->cluster, kExecClusterHelp)
      ->required();
  measure->add_option("--placement", flags->placement, "placement JSON")
      ->required();
  measure->add_option("--steps", flags->steps,
                      "measured steps, the median counts (default: 5)");
  measure->add_option("--trace", flags->trace,
                      "write the measured step nearest the median as a "
                      "Chrome trace (open in Perfetto) and print each "
                      "device's op, copy and idle time in it");
  return measure;
}

int RunMeasure(const ExecFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<std::vector<OutputLock>> claims =
      ClaimOutputs({{"--trace", flags.trace}});
  if (!claims.ok()) return Fail(err, claims.status());
  StatusOr<ExecOptions> options = StepOptions(flags.steps);
  if (!options.ok()) return Fail(err, options.status());
  StatusOr<LoadedModel> model = LoadModel(flags.model, flags.model_options);
  if (!model.ok()) return Fail(err, model.status());
  PrintWarnings(model->warnings, err);
  const Graph& graph = model->graph;
  StatusOr<Cluster> cluster = LoadCluster(flags.cluster);
  if (!cluster.ok()) return Fail(err, cluster.status());
  StatusOr<Placement> placement =
      ReadPlacementJson(flags.placement, graph, *cluster);
  if (!placement.ok()) return Fail(err, placement.status());
  options->record_timeline = !flags.trace.empty();
  StatusOr<std::unique_ptr<Executor>> executor =
      ExecutorOfCluster(graph, *cluster, *options);
  if (!executor.ok()) return Fail(err, executor.status());
  err << "dplace: running " << options->warmup_steps << " warm-up and "
      << options->measured_steps << " measured step(s) ...\n";
  StatusOr<ExecResult> result = (*executor)->Measure(*placement);
  if (!result.ok()) return Fail(err, result.status());
  out << GraphLine(graph) << " on cluster " << cluster->name() << " ("
      << cluster->num_devices() << " devices)\n";
  if (result->feasible) {
    out << "step time: " << Format("%.6f", result->step_time) << " s\n";
    std::string steps;
    for (double t : result->step_times) steps += " " + Format("%.6f", t);
    out << "measured steps (s):" << steps << "\n";
    for (size_t d = 0; d < result->op_seconds.size(); ++d) {
      out << "per step on " << cluster->device(static_cast<DeviceId>(d)).name
          << ": ops " << Format("%.6f", result->op_seconds[d])
          << " s, copies in " << Format("%.6f", result->copy_seconds[d])
          << " s (the mean of the measured steps)\n";
    }
  } else {
    out << "infeasible: " << result->infeasible_reason << "\n";
  }
  for (size_t d = 0; d < result->peak_memory_bytes.size(); ++d) {
    out << "peak memory " << cluster->device(static_cast<DeviceId>(d)).name
        << ": " << Format("%.2f MB", result->peak_memory_bytes[d] / 1e6)
        << "\n";
  }
  out << "measured in " << Format("%.3f", result->wall_seconds) << " s\n";
  if (!flags.trace.empty() && result->feasible) {
    Status s = WriteMeasuredTrace(graph, *cluster, *result, flags.trace, out);
    if (!s.ok()) return Fail(err, s);
  } else if (!flags.trace.empty()) {
    out << "no trace written: no step completed\n";
  }
  PrintStandIns(**executor, err);
  return result->feasible ? kExitOk : kExitInfeasible;
}

}  // namespace dplace
