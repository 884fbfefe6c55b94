#include "dplace/cli/exec_commands.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <system_error>

#include "dplace/bench/method_run.h"
#include "dplace/cli/cli.h"
#include "dplace/exec/calibration.h"
#include "dplace/exec/executor.h"
#include "dplace/exec/fidelity.h"
#include "dplace/exec/measured_environment.h"
#include "dplace/exec/profile.h"
#include "dplace/io/chrome_trace.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/io/placement_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

int Fail(std::ostream& err, const Status& status) {
  err << "dplace: error: " << status.message() << "\n";
  return kExitBadInput;
}

std::string GraphLine(const Graph& graph) {
  return "graph " + graph.name() + " (" + std::to_string(graph.num_ops()) +
         " ops, hash " + graph.hash() + ")";
}

// --steps as ExecOptions (negative: the defaults).
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

// --rounds: `fallback` when not given (negative).
StatusOr<int> RoundsFlag(int rounds, int fallback) {
  if (rounds < 0) return fallback;
  if (rounds < 1) {
    return InvalidArgumentError("--rounds: expected an integer >= 1, got " +
                                std::to_string(rounds));
  }
  return rounds;
}

int Profile(const ExecFlags& flags, std::ostream& out, std::ostream& err) {
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
  StatusOr<LoadedModel> model = LoadModel(flags.model);
  if (!model.ok()) return Fail(err, model.status());
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

int Detect(const ExecFlags& flags, std::ostream& out, std::ostream& err) {
  LocalClusterOptions options;
  options.cpu_devices = flags.cpu_devices;
  if (flags.cpu_devices < 1) {
    return Fail(err, InvalidArgumentError(
                         "--cpu-devices: expected an integer >= 1, got " +
                         std::to_string(flags.cpu_devices)));
  }
  err << "dplace: timing a matrix product, a large add and copies ...\n";
  StatusOr<Cluster> cluster = DetectLocalCluster(options);
  if (!cluster.ok()) return Fail(err, cluster.status());
  out << "cluster " << cluster->name() << " (" << cluster->num_devices()
      << " devices" << (CudaAvailable() ? "" : "; no GPU: LibTorch sees none")
      << ")\n";
  PrintCluster(*cluster, out);
  if (!flags.output.empty()) {
    Status s = WriteTextFile(flags.output, ClusterToJson(*cluster));
    if (!s.ok()) return Fail(err, s);
    out << "cluster: " << flags.output << "\n";
  }
  return kExitOk;
}

// The executor behind a cluster, with errors that point at `cluster detect`.
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
      const Span<LinkId> route = cluster.route(e.device, e.lane);
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

int Measure(const ExecFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<ExecOptions> options = StepOptions(flags.steps);
  if (!options.ok()) return Fail(err, options.status());
  StatusOr<LoadedModel> model = LoadModel(flags.model);
  if (!model.ok()) return Fail(err, model.status());
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

std::string FidelityMarkdown(const Graph& graph, const Cluster& cluster,
                             const FidelityReport& report,
                             const std::vector<StandIn>& stand_ins,
                             const std::string& compared_with) {
  std::string md = "### " + graph.name() + " (" +
                   std::to_string(graph.num_ops()) + " ops) on " +
                   cluster.name() + " (" +
                   std::to_string(cluster.num_devices()) + " devices)\n\n";
  if (report.calibration) {
    md += "Simulated with the " + CalibrationSummary(report) + ".\n\n";
  }
  md += FidelityTableMarkdown(report) + "\n";
  md += "**" + FidelitySummary(report.stats) + "**; measured in " +
        Format("%.0f", report.wall_seconds) + " s.\n";
  if (report.uncalibrated.count > 0) {
    md += "\nThe same measurements " + UncalibratedSummary(report) + ".\n";
  }
  if (report.retest.count > 0) {
    md += "\nThe same placements " + RetestSummary(report) +
          ": how well this machine agrees with itself.\n";
  }
  for (const FidelityReport::OtherStatistic& other : report.other_statistics) {
    md += "\nThe same measurements " + OtherStatisticSummary(report, other) +
          ".\n";
  }
  if (report.compared.count > 0) {
    md += "\nThe same measurements " + ComparedSummary(report, compared_with) +
          ".\n";
  }
  if (!report.op_time_ratios.empty()) {
    md += "\nThe devices' " + OpTimeSummary(report) +
          ": how far the profile's op times hold when the ops are split "
          "between devices (the \"op time\" column's mean by devices "
          "used).\n";
  }
  if (!stand_ins.empty()) {
    md += "\nOp types run as stand-ins (read inputs, write outputs):";
    for (const StandIn& s : stand_ins) {
      md += " " + s.op_type + " (" + std::to_string(s.count) + ")";
    }
    md += ".\n";
  }
  return md;
}

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

StatusOr<std::unique_ptr<MeasuredProblem>> LoadMeasuredProblem(
    const ExecFlags& flags, const ExecOptions& exec_options) {
  StatusOr<LoadedModel> model = LoadModel(flags.model);
  if (!model.ok()) return model.status();
  StatusOr<Cluster> cluster = LoadCluster(flags.cluster);
  if (!cluster.ok()) return cluster.status();
  StatusOr<ProfileTable> profile = LoadProfile(flags.profile);
  if (!profile.ok()) return profile.status();
  std::unique_ptr<MeasuredProblem> m(new MeasuredProblem{
      std::move(model).value(), std::move(cluster).value(),
      std::move(profile).value(), nullptr, nullptr, PlacementProblem{}});
  StatusOr<std::unique_ptr<Executor>> executor =
      ExecutorOfCluster(m->model.graph, m->cluster, exec_options);
  if (!executor.ok()) return executor.status();
  m->env = std::make_unique<MeasuredEnvironment>(m->model.graph, m->cluster,
                                                 std::move(executor).value());
  m->cost = std::make_unique<CostModel>(m->model.graph, m->cluster, m->profile);
  m->problem = ProblemOf(m->model, *m->cost, flags.seed);
  return m;
}

int Fidelity(const ExecFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<ExecOptions> exec_options = StepOptions(flags.steps);
  if (!exec_options.ok()) return Fail(err, exec_options.status());
  if (flags.samples < 2) {
    return Fail(
        err, InvalidArgumentError("--samples: expected an integer >= 2, got " +
                                  std::to_string(flags.samples)));
  }
  const StatusOr<int> rounds = RoundsFlag(flags.rounds, 2);
  if (!rounds.ok()) return Fail(err, rounds.status());
  const StatusOr<RoundStatistic> statistic = StatisticFlag(flags.statistic);
  if (!statistic.ok()) return Fail(err, statistic.status());
  if (flags.calibrate_links && flags.profile.empty()) {
    return Fail(err, InvalidArgumentError(
                         "--calibrate-links: needs --profile (the op times "
                         "the links are calibrated against)"));
  }
  if (!flags.placements_dir.empty()) {
    // Before measuring, which takes minutes: a directory that cannot be
    // made fails now.
    std::error_code ec;
    std::filesystem::create_directories(flags.placements_dir, ec);
    if (ec) {
      return Fail(err,
                  InvalidArgumentError("--placements: " + flags.placements_dir +
                                       ": cannot create: " + ec.message()));
    }
  }
  StatusOr<std::unique_ptr<MeasuredProblem>> loaded =
      LoadMeasuredProblem(flags, *exec_options);
  if (!loaded.ok()) return Fail(err, loaded.status());
  const MeasuredProblem& m = **loaded;
  const Graph& graph = m.model.graph;
  const Cluster& cluster = m.cluster;
  MeasuredEnvironment& env = *m.env;
  const PlacementProblem& problem = m.problem;
  // --compare-cluster: the same devices, other figures.
  std::optional<Cluster> compare_cluster;
  std::optional<CostModel> compare_cost;
  const std::string compared_with = "cluster " + flags.compare_cluster;
  if (!flags.compare_cluster.empty()) {
    StatusOr<Cluster> other = LoadCluster(flags.compare_cluster);
    if (!other.ok()) {
      return Fail(err, other.status().WithPrefix("--compare-cluster"));
    }
    bool same = other->num_devices() == cluster.num_devices();
    for (DeviceId d = 0; same && d < other->num_devices(); ++d) {
      same = other->device(d).name == cluster.device(d).name;
    }
    if (!same) {
      return Fail(err, InvalidArgumentError(
                           "--compare-cluster: " + flags.compare_cluster +
                           ": expected the devices of --cluster " +
                           flags.cluster + ", in the same order"));
    }
    compare_cluster = std::move(other).value();
    compare_cost.emplace(graph, *compare_cluster, m.profile);
  }
  FidelityOptions options;
  if (compare_cost) options.compare_cost = &*compare_cost;
  options.samples = flags.samples;
  options.seed = flags.seed;
  options.rounds = *rounds;
  options.statistic = *statistic;
  if (flags.calibrate_links) options.calibrate_links = &m.profile;
  options.progress = [&err](int i, int n, const std::string& label) {
    err << "dplace: measuring " << (i + 1) << "/" << n << ": " << label << "\n";
  };
  StatusOr<FidelityReport> report = RunFidelity(problem, &env, options);
  if (!report.ok()) {
    if (report.status().code() == StatusCode::kInfeasible) {
      out << "infeasible: " << report.status().message() << "\n";
      return kExitInfeasible;
    }
    return Fail(err, report.status());
  }
  out << GraphLine(graph) << " on cluster " << cluster.name() << " ("
      << cluster.num_devices() << " devices), profile "
      << (flags.profile.empty() ? std::string("none (roofline)")
                                : flags.profile)
      << "\n";
  if (report->calibration) out << CalibrationSummary(*report) << "\n";
  out << FidelityTableMarkdown(*report);
  out << FidelitySummary(report->stats) << "\n";
  if (report->uncalibrated.count > 0) {
    out << UncalibratedSummary(*report) << "\n";
  }
  if (report->retest.count > 0) out << RetestSummary(*report) << "\n";
  for (const FidelityReport::OtherStatistic& other : report->other_statistics) {
    out << OtherStatisticSummary(*report, other) << "\n";
  }
  if (report->compared.count > 0) {
    out << ComparedSummary(*report, compared_with) << "\n";
  }
  if (!report->op_time_ratios.empty()) out << OpTimeSummary(*report) << "\n";
  const std::vector<StandIn> stand_ins = env.executor().stand_ins();
  PrintStandIns(env.executor(), err);
  if (!flags.svg.empty()) {
    Status s = WriteTextFile(
        flags.svg,
        FidelityScatterSvg(*report, graph.name() + " on " + cluster.name()));
    if (!s.ok()) return Fail(err, s);
    out << "scatter plot: " << flags.svg << "\n";
  }
  if (!flags.markdown.empty()) {
    Status s = WriteTextFile(
        flags.markdown,
        FidelityMarkdown(graph, cluster, *report, stand_ins, compared_with));
    if (!s.ok()) return Fail(err, s);
    out << "markdown: " << flags.markdown << "\n";
  }
  if (!flags.placements_dir.empty()) {
    for (const FidelitySample& sample : report->samples) {
      const std::string path = (std::filesystem::path(flags.placements_dir) /
                                PlacementFileName(sample.label))
                                   .string();
      Status s = WriteTextFile(
          path, PlacementToJson(graph, cluster, sample.placement));
      if (!s.ok()) return Fail(err, s);
    }
    out << "placements: " << report->samples.size() << " files in "
        << flags.placements_dir << "\n";
  }
  return kExitOk;
}

int Calibrate(const ExecFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<ExecOptions> exec_options = StepOptions(flags.steps);
  if (!exec_options.ok()) return Fail(err, exec_options.status());
  const StatusOr<int> rounds = RoundsFlag(flags.rounds, 12);
  if (!rounds.ok()) return Fail(err, rounds.status());
  const StatusOr<RoundStatistic> statistic = StatisticFlag(flags.statistic);
  if (!statistic.ok()) return Fail(err, statistic.status());
  StatusOr<std::unique_ptr<MeasuredProblem>> loaded =
      LoadMeasuredProblem(flags, *exec_options);
  if (!loaded.ok()) return Fail(err, loaded.status());
  const MeasuredProblem& m = **loaded;
  const Graph& graph = m.model.graph;
  const Cluster& cluster = m.cluster;
  MeasuredEnvironment& env = *m.env;
  LinkCalibrationOptions options;
  options.rounds = *rounds;
  options.statistic = *statistic;
  options.seed = flags.seed;
  options.progress = [&err](int i, int n) {
    err << "dplace: calibrating, measurement " << (i + 1) << "/" << n << "\n";
  };
  StatusOr<LinkCalibration> c =
      CalibrateLinks(m.problem, m.profile, &env, options);
  if (!c.ok()) return Fail(err, c.status());
  PrintStandIns(env.executor(), err);
  const std::string statistic_name(RoundStatisticName(*statistic));
  auto seconds = [](double t) { return Format("%.4f s", t); };
  auto times = [](double ratio) { return Format("%.3fx", ratio); };
  out << GraphLine(graph) << " on cluster " << cluster.name() << "\n";
  out << "reference (every op on "
      << cluster.device(c->reference.empty() ? 0 : c->reference[0]).name
      << "): measured " << seconds(c->reference_measured) << " ("
      << statistic_name << " of the steps of " << *rounds
      << " rounds), simulated " << seconds(c->reference_simulated) << "\n";
  out << "random per op (seed " << CalibrationPlacementSeed(flags.seed)
      << "): measured " << seconds(c->calibration_measured) << " ("
      << times(c->calibration_measured / c->reference_measured)
      << " the reference), simulated "
      << seconds(c->calibration_simulated_before) << " ("
      << times(c->calibration_simulated_before / c->reference_simulated)
      << ") before, " << seconds(c->calibration_simulated_after) << " ("
      << times(c->calibration_simulated_after / c->reference_simulated)
      << ") after\n";
  auto joined = [](const std::vector<double>& rounds) {
    std::string text;
    for (double t : rounds) {
      text += (text.empty() ? "" : " / ") + Format("%.4f", t);
    }
    return text;
  };
  out << "rounds (s), reference: " << joined(c->reference_rounds) << "\n";
  out << "rounds (s), random per op: " << joined(c->calibration_rounds) << "\n";
  if (!c->split.empty()) {
    out << "rounds (s), split (cut at 40% of the ops): "
        << joined(c->split_rounds) << "\n";
    out << "ops on a device where a placement also uses another of its "
           "host's: x"
        << Format("%.3f", 1 + c->shared_host_slowdown) << " (split measured "
        << seconds(c->split_measured) << ")\n";
  }
  out << "link latencies scaled by " << Format("%.3f", c->latency_scale)
      << " (fitted to all rounds: " << Format("%.3f", c->fitted_scale);
  if (*rounds >= 2) {
    auto scale = [](double x) {
      return std::isfinite(x) ? Format("%.3f", x) : std::string("out of reach");
    };
    out << "; rounds 1, 3, ... alone: " << scale(c->half_scales[0])
        << "; rounds 2, 4, ... alone: " << scale(c->half_scales[1])
        << "; the nearest to 1 of what they span";
  }
  out << ")\n";
  PrintCluster(c->cluster, out);
  if (!flags.output.empty()) {
    Status s = WriteTextFile(flags.output, ClusterToJson(c->cluster));
    if (!s.ok()) return Fail(err, s);
    out << "cluster: " << flags.output << "\n";
  }
  return kExitOk;
}

}  // namespace

ExecCommands AddExecCommands(CLI::App* app, CLI::App* cluster,
                             ExecFlags* flags) {
  const char* kModel =
      "model: zoo:NAME[:key=value,...], a graph .json file, or an .onnx "
      "model";
  const char* kCluster =
      "cluster .json of this machine's devices (dplace cluster detect)";
  ExecCommands c;
  c.profile = app->add_subcommand(
      "profile",
      "run every op of a model on this machine's devices and write their "
      "times as a profile (--profile of simulate, place, fidelity); time "
      "copies between the devices");
  c.profile->add_option("--model", flags->model, kModel)->required();
  c.profile
      ->add_option("--devices", flags->devices,
                   "devices to profile on, e.g. cpu:0,cpu:1 (each op "
                   "is averaged over the devices of a kind; copies "
                   "between all)")
      ->required();
  c.profile->add_option("--steps", flags->steps,
                        "profiled steps, each op's median counts, plus its "
                        "share of the step time between ops (default: 3)");
  c.profile->add_option(
      "--statistic", flags->statistic,
      "what each device's op times sum to, as dplace fidelity --statistic "
      "measures a placement: fastest (its fastest run of --round-steps "
      "consecutive steps, the stretch other work on the machine disturbed "
      "least), fastest-quarter (the mean of the fastest quarter of those "
      "runs, which one lucky run moves less) or median (its median step) "
      "(default: fastest-quarter)");
  c.profile->add_option("--round-steps", flags->round_steps,
                        "steps of a run with --statistic fastest or "
                        "fastest-quarter; dplace fidelity takes the "
                        "statistic of single steps (default: 1)");
  c.profile->add_option("-o,--output", flags->output, "profile JSON to write");
  c.profile->add_option("--cluster-out", flags->cluster_out,
                        "also write these devices as a cluster JSON, with "
                        "the copy fit as links");

  c.detect = cluster->add_subcommand(
      "detect",
      "describe this machine's devices as a cluster (cpu:0..N-1, cuda:K) "
      "from a quick matrix product, a large add and a copy benchmark");
  c.detect->add_option("--cpu-devices", flags->cpu_devices,
                       "logical CPU devices, sharing the hardware threads "
                       "(default: 2)");
  c.detect->add_option("-o,--output", flags->output, "cluster JSON to write");

  c.calibrate = cluster->add_subcommand(
      "calibrate",
      "fit the cluster's link latencies to real runs of a model: measure "
      "all-on-one-device and a random per-op placement in alternating "
      "rounds, then scale every link latency so that the simulated ratio "
      "of their step times matches the measured one, as far as the same fit "
      "to either half of the rounds agrees (check the result with dplace "
      "fidelity --compare-cluster)");
  c.calibrate->add_option("--model", flags->model, kModel)->required();
  c.calibrate->add_option("--cluster", flags->cluster, kCluster)->required();
  c.calibrate->add_option("--profile", flags->profile,
                          "profile JSON the simulator uses (dplace profile)");
  c.calibrate->add_option("--rounds", flags->rounds,
                          "rounds, each measuring both placements once "
                          "(default: 12)");
  c.calibrate->add_option("--steps", flags->steps,
                          "measured steps per placement and round "
                          "(default: 5)");
  c.calibrate->add_option(
      "--statistic", flags->statistic,
      "what the measured steps of a placement's rounds, pooled, make its "
      "time: fastest, fastest-quarter (the mean of the fastest quarter) or "
      "median (default: fastest-quarter)");
  c.calibrate->add_option("--seed", flags->seed,
                          "seed of the random per-op placement; distinct "
                          "from those dplace fidelity draws for the same "
                          "--seed (default: 1)");
  c.calibrate->add_option("-o,--output", flags->output,
                          "calibrated cluster JSON to write");

  c.measure =
      app->add_subcommand("measure",
                          "run training steps of a placement on this machine's "
                          "devices and print the measured step time");
  c.measure->add_option("--model", flags->model, kModel)->required();
  c.measure->add_option("--cluster", flags->cluster, kCluster)->required();
  c.measure->add_option("--placement", flags->placement, "placement JSON")
      ->required();
  c.measure->add_option("--steps", flags->steps,
                        "measured steps, the median counts (default: 5)");
  c.measure->add_option("--trace", flags->trace,
                        "write the measured step nearest the median as a "
                        "Chrome trace (open in Perfetto) and print each "
                        "device's op, copy and idle time in it");

  c.fidelity = app->add_subcommand(
      "fidelity",
      "simulate and measure single-device, placer and random placements of "
      "a model; print the errors and rank correlations");
  c.fidelity->add_option("--model", flags->model, kModel)->required();
  c.fidelity->add_option("--cluster", flags->cluster, kCluster)->required();
  c.fidelity->add_option("--profile", flags->profile,
                         "profile JSON the simulator uses (dplace profile)");
  c.fidelity->add_option("--samples", flags->samples,
                         "placements in all (default: 20)");
  c.fidelity->add_option("--seed", flags->seed,
                         "seed of the random placements (default: 1)");
  c.fidelity->add_option("--steps", flags->steps,
                         "measured steps per placement and round (default: "
                         "5)");
  c.fidelity->add_option(
      "--rounds", flags->rounds,
      "passes measuring every placement (each after the first in a "
      "shuffled order); the even rounds are also compared with the odd "
      "ones, the machine's own noise (default: 2)");
  c.fidelity->add_option(
      "--statistic", flags->statistic,
      "what the measured steps of a placement's rounds, pooled, make its "
      "measured time: fastest (the step least disturbed by other work on "
      "the machine), fastest-quarter (the mean of the fastest quarter of "
      "the steps, which one lucky step moves less) or median (default: "
      "fastest-quarter)");
  c.fidelity->add_option(
      "--compare-cluster", flags->compare_cluster,
      "a cluster with the same devices (cluster calibrate -o, say): every "
      "placement is also simulated on it and compared with the same "
      "measurements");
  c.fidelity->add_flag(
      "--calibrate-links", flags->calibrate_links,
      "also measure dplace cluster calibrate's two placements in every "
      "round, fit the link latencies to them (--statistic) and simulate "
      "with the fitted links; the cluster's own figures are printed too "
      "(needs --profile)");
  c.fidelity->add_option("--svg", flags->svg,
                         "scatter plot of simulated vs measured to write");
  c.fidelity->add_option("--markdown", flags->markdown,
                         "table and statistics as markdown to write");
  c.fidelity->add_option(
      "--placements", flags->placements_dir,
      "directory to write each placement to as placement JSON, named after "
      "its label (random-per-group-1.json), to measure or simulate it again");
  return c;
}

int RunExecCommands(const ExecCommands& commands, const ExecFlags& flags,
                    std::ostream& out, std::ostream& err) {
  if (commands.profile->parsed()) return Profile(flags, out, err);
  if (commands.detect->parsed()) return Detect(flags, out, err);
  if (commands.measure->parsed()) return Measure(flags, out, err);
  if (commands.fidelity->parsed()) return Fidelity(flags, out, err);
  if (commands.calibrate->parsed()) return Calibrate(flags, out, err);
  return -1;
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
