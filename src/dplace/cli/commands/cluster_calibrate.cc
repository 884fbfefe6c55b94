#include <CLI/CLI.hpp>
#include <cmath>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/cli/commands/exec_util.h"
#include "dplace/exec/calibration.h"
#include "dplace/exec/measured_environment.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/util/format.h"

namespace dplace {

CLI::App* AddClusterCalibrateCommand(CLI::App* cluster, ExecFlags* flags) {
  CLI::App* calibrate = cluster->add_subcommand(
      "calibrate",
      "fit the cluster's link latencies to real runs of a model: measure "
      "all-on-one-device and a random per-op placement in alternating "
      "rounds, then scale every link latency so that the simulated ratio "
      "of their step times matches the measured one, as far as the same fit "
      "to either half of the rounds agrees (check the result with dplace "
      "fidelity --compare-cluster)");
  calibrate->add_option("--model", flags->model, kExecModelHelp)->required();
  AddModelOptionFlags(calibrate, &flags->model_options);
  calibrate->add_option("--cluster", flags->cluster, kExecClusterHelp)
      ->required();
  calibrate->add_option("--profile", flags->profile,
                        "profile JSON the simulator uses (dplace profile)");
  calibrate->add_option("--rounds", flags->rounds,
                        "rounds, each measuring both placements once "
                        "(default: 12)");
  calibrate->add_option("--steps", flags->steps,
                        "measured steps per placement and round "
                        "(default: 5)");
  calibrate->add_option(
      "--statistic", flags->statistic,
      "what the measured steps of a placement's rounds, pooled, make its "
      "time: fastest, fastest-quarter (the mean of the fastest quarter) or "
      "median (default: fastest-quarter)");
  calibrate->add_option("--seed", flags->seed,
                        "seed of the random per-op placement; distinct "
                        "from those dplace fidelity draws for the same "
                        "--seed (default: 1)");
  calibrate->add_option("-o,--output", flags->output,
                        "calibrated cluster JSON to write");
  return calibrate;
}

int RunClusterCalibrate(const ExecFlags& flags, std::ostream& out,
                        std::ostream& err) {
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

}  // namespace dplace
