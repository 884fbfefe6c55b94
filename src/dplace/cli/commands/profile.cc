#include "dplace/exec/profile.h"

#include <CLI/CLI.hpp>
#include <utility>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/cli/commands/exec_util.h"
#include "dplace/exec/executor.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/io/profile_json.h"
#include "dplace/model/load_model.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

// "256 bytes", "4 KiB", "64 MiB".
std::string SizeText(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  if (bytes < (int64_t{1} << 20)) return Format("%.0f KiB", bytes / 1024.0);
  return Format("%.0f MiB", bytes / 1048576.0);
}

std::string DescribeFit(const CopyFit& fit) {
  std::string text = "copy " + fit.from_name + " -> " + fit.to_name +
                     ": latency " + Format("%.1f us", fit.latency * 1e6) +
                     ", bandwidth " + Format("%.2f GB/s", fit.bandwidth / 1e9) +
                     " (the consumer's time per copy, least squares over " +
                     std::to_string(fit.bytes.size()) + " sizes, " +
                     SizeText(fit.bytes.front()) + " to " +
                     SizeText(fit.bytes.back()) + ")";
  if (fit.edge_seconds > 0) {
    text += "; hand-off " + Format("%.1f us", fit.hand_off * 1e6) +
            " (a lone edge delays a step " +
            Format("%.1f us", fit.edge_seconds * 1e6) + ")";
  }
  return text;
}

}  // namespace

CLI::App* AddProfileCommand(CLI::App* parent, ExecFlags* flags) {
  CLI::App* profile = parent->add_subcommand(
      "profile",
      "run every op of a model on this machine's devices and write their "
      "times as a profile (--profile of simulate, place, fidelity); time "
      "copies between the devices");
  profile->add_option("--model", flags->model, kExecModelHelp)->required();
  AddModelOptionFlags(profile, &flags->model_options);
  profile
      ->add_option("--devices", flags->devices,
                   "devices to profile on, e.g. cpu:0,cpu:1 (each op "
                   "is averaged over the devices of a kind; copies "
                   "between all)")
      ->required();
  profile->add_option("--steps", flags->steps,
                      "profiled steps, each op's median counts, plus its "
                      "share of the step time between ops (default: 3)");
  profile->add_option(
      "--statistic", flags->statistic,
      "what each device's op times sum to, as dplace fidelity --statistic "
      "measures a placement: fastest (its fastest run of --round-steps "
      "consecutive steps, the stretch other work on the machine disturbed "
      "least), fastest-quarter (the mean of the fastest quarter of those "
      "runs, which one lucky run moves less) or median (its median step) "
      "(default: fastest-quarter)");
  profile->add_option("--round-steps", flags->round_steps,
                      "steps of a run with --statistic fastest or "
                      "fastest-quarter; dplace fidelity takes the "
                      "statistic of single steps (default: 1)");
  profile->add_option("-o,--output", flags->output, "profile JSON to write");
  profile->add_option("--cluster-out", flags->cluster_out,
                      "also write these devices as a cluster JSON, with "
                      "the copy fit as links");
  return profile;
}

int RunProfile(const ExecFlags& flags, std::ostream& out, std::ostream& err) {
  if (flags.steps == 0 || flags.steps < -1) {
    return Fail(err,
                InvalidArgumentError("--steps: expected an integer >= 1, got " +
                                     std::to_string(flags.steps)));
  }
  const StatusOr<RoundStatistic> statistic = StatisticFlag(flags.statistic);
  if (!statistic.ok()) return Fail(err, statistic.status());
  if (flags.round_steps < 1) {
    return Fail(err, InvalidArgumentError(
                         "--round-steps: expected an integer >= 1, got " +
                         std::to_string(flags.round_steps)));
  }
  StatusOr<LoadedModel> model = LoadModel(flags.model, flags.model_options);
  if (!model.ok()) return Fail(err, model.status());
  PrintWarnings(model->warnings, err);
  const Graph& graph = model->graph;
  StatusOr<std::vector<ExecDevice>> devices = ParseExecDevices(flags.devices);
  if (!devices.ok()) return Fail(err, devices.status().WithPrefix("--devices"));
  LocalClusterOptions local;
  SizeLocalDevices(&*devices, local);
  StatusOr<std::unique_ptr<Executor>> executor =
      Executor::Create(graph, *devices);
  if (!executor.ok()) return Fail(err, executor.status());
  ProfileOptions options;
  if (flags.steps > 0) options.steps = flags.steps;
  options.window =
      *statistic == RoundStatistic::kMedian ? 0 : flags.round_steps;
  options.statistic = *statistic;

  const bool fastest = *statistic == RoundStatistic::kFastest;
  const std::string runs =
      options.window == 1 ? std::string(fastest ? "step" : "steps")
                          : "run" + std::string(fastest ? "" : "s") + " of " +
                                std::to_string(options.window) + " steps";
  out << GraphLine(graph) << "\n";
  err << "dplace: profiling every op, " << options.steps
      << " step(s) on each device (a kind's time: the mean of its devices; "
      << (options.window == 0
              ? std::string("a device's ops sum to its median step")
          : fastest
              ? "a device's ops sum to its fastest " + runs
              : "a device's ops sum to the mean of its fastest quarter of " +
                    runs)
      << ") ...\n";
  StatusOr<ProfileTable> table = ProfileGraph(graph, **executor, options);
  if (!table.ok()) return Fail(err, table.status());
  for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kGpu}) {
    double total = 0;
    int ops = 0;
    for (const auto& [name, times] : table->by_name) {
      auto it = times.find(kind);
      if (it == times.end()) continue;
      total += it->second;
      ++ops;
    }
    if (ops == 0) continue;
    out << DeviceKindName(kind) << ": " << ops << " ops, "
        << Format("%.6f s", total) << " of op time per step\n";
  }
  std::vector<CopyFit> fits;
  if (devices->size() > 1) {
    err << "dplace: timing copies between devices ...\n";
    StatusOr<std::vector<CopyFit>> timed = BenchmarkCopies(**executor, {});
    if (!timed.ok()) return Fail(err, timed.status());
    fits = std::move(timed).value();
    for (const CopyFit& fit : fits) out << DescribeFit(fit) << "\n";
  }
  PrintStandIns(**executor, err);
  if (!flags.output.empty()) {
    Status s = WriteTextFile(flags.output, ProfileToJson(*table));
    if (!s.ok()) return Fail(err, s);
    out << "profile: " << flags.output << "\n";
  }
  if (!flags.cluster_out.empty()) {
    err << "dplace: timing a matrix product and a large add per device ...\n";
    StatusOr<std::vector<DeviceSpeed>> speeds =
        MeasureDeviceSpeeds(*devices, local);
    if (!speeds.ok()) return Fail(err, speeds.status());
    StatusOr<Cluster> cluster =
        MakeLocalCluster(local.name, *devices, *speeds, fits);
    if (!cluster.ok()) return Fail(err, cluster.status());
    PrintCluster(*cluster, out);
    Status s = WriteTextFile(flags.cluster_out, ClusterToJson(*cluster));
    if (!s.ok()) return Fail(err, s);
    out << "cluster: " << flags.cluster_out << "\n";
  }
  return kExitOk;
}

}  // namespace dplace
