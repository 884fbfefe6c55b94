#include "dplace/cli/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>

#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"

namespace dplace {

int RunCli(int argc, const char* const* argv, std::ostream& out,
           std::ostream& err) {
  CLI::App app{
      "dplace: device placement for neural-network training.\n"
      "Assigns every op of a training graph to a CPU or GPU so that one "
      "training step is as fast as possible and every device's memory "
      "holds."};
  app.name("dplace");
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");

  // The commands, in the order --help lists them.
  InspectFlags inspect_flags;
  CLI::App* inspect = AddInspectCommand(&app, &inspect_flags);
  CLI::App* cluster = AddClusterCommand(&app);
  CLI::App* cluster_list = AddClusterListCommand(cluster);
  ClusterShowFlags cluster_show_flags;
  CLI::App* cluster_show = AddClusterShowCommand(cluster, &cluster_show_flags);
  SimulateFlags simulate_flags;
  CLI::App* simulate = AddSimulateCommand(&app, &simulate_flags);
  PlaceFlags place_flags;
  CLI::App* place = AddPlaceCommand(&app, &place_flags);
  BenchFlags bench_flags;
  CLI::App* bench = AddBenchCommand(&app, &bench_flags);
  ReportFlags report_flags;
  CLI::App* report = AddReportCommand(&app, &report_flags);
  PretrainFlags pretrain_flags;
  CLI::App* pretrain = AddPretrainCommand(&app, &pretrain_flags);
  ExecFlags exec_flags;
  CLI::App* profile = AddProfileCommand(&app, &exec_flags);
  CLI::App* cluster_detect = AddClusterDetectCommand(cluster, &exec_flags);
  CLI::App* cluster_calibrate =
      AddClusterCalibrateCommand(cluster, &exec_flags);
  CLI::App* measure = AddMeasureCommand(&app, &exec_flags);
  CLI::App* fidelity = AddFidelityCommand(&app, &exec_flags);
  CLI::App* zoo = AddZooCommand(&app);
  ZooListFlags zoo_list_flags;
  CLI::App* zoo_list = AddZooListCommand(zoo, &zoo_list_flags);
  ZooExportFlags zoo_export_flags;
  CLI::App* zoo_export = AddZooExportCommand(zoo, &zoo_export_flags);
  ImportFlags import_flags;
  CLI::App* import = AddImportCommand(&app, &import_flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --help-all print to `out` and succeed.
    if (e.get_exit_code() == 0) {
      app.exit(e, out, err);
      return kExitOk;
    }
    // Every other parse error is one line, like all dplace errors.
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    if (argc > 1 && argv[1][0] != '-') {
      bool known = false;
      std::string commands;
      for (const CLI::App* sub :
           app.get_subcommands([](const CLI::App*) { return true; })) {
        known = known || sub->get_name() == argv[1];
        commands += (commands.empty() ? "" : ", ") + sub->get_name();
      }
      if (!known) {
        message = std::string("unknown command \"") + argv[1] +
                  "\" (commands: " + commands + ")";
      }
    }
    err << "dplace: error: " << message << " (see dplace --help)\n";
    return kExitBadInput;
  }

  if (inspect->parsed()) return RunInspect(inspect_flags, out, err);
  if (simulate->parsed()) return RunSimulate(simulate_flags, out, err);
  if (place->parsed()) {
    place_flags.command = CommandLine(argc, argv);
    place_flags.args.assign(argv + 1, argv + argc);
    return RunPlace(place_flags, out, err);
  }
  if (bench->parsed()) {
    bench_flags.command = CommandLine(argc, argv);
    return RunBench(bench_flags, out, err);
  }
  if (report->parsed()) return RunReport(report_flags, out, err);
  if (pretrain->parsed()) return RunPretrain(pretrain_flags, out, err);
  if (import->parsed()) return RunImport(import_flags, out, err);
  if (zoo_export->parsed()) return RunZooExport(zoo_export_flags, out, err);
  if (zoo_list->parsed()) return RunZooList(zoo_list_flags, out, err);
  if (profile->parsed()) return RunProfile(exec_flags, out, err);
  if (cluster_detect->parsed()) return RunClusterDetect(exec_flags, out, err);
  if (measure->parsed()) return RunMeasure(exec_flags, out, err);
  if (fidelity->parsed()) return RunFidelity(exec_flags, out, err);
  if (cluster_calibrate->parsed()) {
    return RunClusterCalibrate(exec_flags, out, err);
  }
  if (cluster_show->parsed()) {
    return RunClusterShow(cluster_show_flags, out, err);
  }
  if (cluster_list->parsed()) return RunClusterList(out);
  return kExitBadInput;
}

}  // namespace dplace
