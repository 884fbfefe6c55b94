#include "dplace/exec/fidelity.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/cli/commands/exec_util.h"
#include "dplace/cost/cost_model.h"
#include "dplace/exec/measured_environment.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/io/placement_json.h"
#include "dplace/method/run.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

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

}  // namespace

CLI::App* AddFidelityCommand(CLI::App* parent, ExecFlags* flags) {
  CLI::App* fidelity = parent->add_subcommand(
      "fidelity",
      "simulate and measure single-device, placer and random placements of "
      "a model; print the errors and rank correlations");
  fidelity->add_option("--model", flags->model, kExecModelHelp)->required();
  AddModelOptionFlags(fidelity, &flags->model_options);
  fidelity->add_option("--cluster", flags->cluster, kExecClusterHelp)
      ->required();
  fidelity->add_option("--profile", flags->profile,
                       "profile JSON the simulator uses (dplace profile)");
  fidelity->add_option("--samples", flags->samples,
                       "placements in all (default: 20)");
  fidelity->add_option("--seed", flags->seed,
                       "seed of the random placements (default: 1)");
  fidelity->add_option("--steps", flags->steps,
                       "measured steps per placement and round (default: "
                       "5)");
  fidelity->add_option(
      "--rounds", flags->rounds,
      "passes measuring every placement (each after the first in a "
      "shuffled order); the even rounds are also compared with the odd "
      "ones, the machine's own noise (default: 2)");
  fidelity->add_option(
      "--statistic", flags->statistic,
      "what the measured steps of a placement's rounds, pooled, make its "
      "measured time: fastest (the step least disturbed by other work on "
      "the machine), fastest-quarter (the mean of the fastest quarter of "
      "the steps, which one lucky step moves less) or median (default: "
      "fastest-quarter)");
  fidelity->add_option(
      "--compare-cluster", flags->compare_cluster,
      "a cluster with the same devices (cluster calibrate -o, say): every "
      "placement is also simulated on it and compared with the same "
      "measurements");
  fidelity->add_flag(
      "--calibrate-links", flags->calibrate_links,
      "also measure dplace cluster calibrate's two placements in every "
      "round, fit the link latencies to them (--statistic) and simulate "
      "with the fitted links; the cluster's own figures are printed too "
      "(needs --profile)");
  fidelity->add_option("--svg", flags->svg,
                       "scatter plot of simulated vs measured to write");
  fidelity->add_option("--markdown", flags->markdown,
                       "table and statistics as markdown to write");
  fidelity->add_option(
      "--placements", flags->placements_dir,
      "directory to write each placement to as placement JSON, named after "
      "its label (random-per-group-1.json), to measure or simulate it again");
  return fidelity;
}

int RunFidelity(const ExecFlags& flags, std::ostream& out, std::ostream& err) {
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

}  // namespace dplace
