// The dplace commands, one file each. Each has AddXCommand, which declares
// the subcommand under `parent` with its options bound to `flags` and
// returns it, and RunX, which runs it once parsed: results to `out`, one
// line "dplace: error: ..." to `err`, an ExitCode returned. RunCli
// (cli.cc) adds them all, parses and runs the one given.
#ifndef DPLACE_CLI_COMMANDS_COMMANDS_H_
#define DPLACE_CLI_COMMANDS_COMMANDS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "dplace/model/load_model.h"
#include "dplace/suite/suite.h"

namespace CLI {
class App;
}  // namespace CLI

namespace dplace {

// dplace inspect: counts of a graph.
struct InspectFlags {
  std::string graph;  // --graph or --model.
  ModelOptions model_options;
  bool json = false;  // --json: the counts as one JSON object.
};
CLI::App* AddInspectCommand(CLI::App* parent, InspectFlags* flags);
int RunInspect(const InspectFlags& flags, std::ostream& out, std::ostream& err);

// dplace import: an ONNX model as training graph JSON.
struct ImportFlags {
  std::string model;
  ModelOptions model_options;
  std::string output;
};
CLI::App* AddImportCommand(CLI::App* parent, ImportFlags* flags);
int RunImport(const ImportFlags& flags, std::ostream& out, std::ostream& err);

// dplace zoo list|export: the papers' benchmark models.
struct ZooListFlags {
  bool stats = false;  // --stats: the markdown table of every model.
};
struct ZooExportFlags {
  std::string name;
  std::vector<std::string> params;  // --param key=value.
  std::string output;
};
// `zoo`, the parent of list and export.
CLI::App* AddZooCommand(CLI::App* parent);
CLI::App* AddZooListCommand(CLI::App* zoo, ZooListFlags* flags);
int RunZooList(const ZooListFlags& flags, std::ostream& out, std::ostream& err);
CLI::App* AddZooExportCommand(CLI::App* zoo, ZooExportFlags* flags);
int RunZooExport(const ZooExportFlags& flags, std::ostream& out,
                 std::ostream& err);

// dplace cluster list|show: the hardware presets.
struct ClusterShowFlags {
  std::string name;  // Preset or cluster .json file.
  bool json = false;
};
// `cluster`, the parent of list, show, detect and calibrate.
CLI::App* AddClusterCommand(CLI::App* parent);
CLI::App* AddClusterListCommand(CLI::App* cluster);
int RunClusterList(std::ostream& out);
CLI::App* AddClusterShowCommand(CLI::App* cluster, ClusterShowFlags* flags);
int RunClusterShow(const ClusterShowFlags& flags, std::ostream& out,
                   std::ostream& err);

// dplace simulate: one training step of a placement.
struct SimulateFlags {
  std::string graph;  // --graph or --model.
  std::string cluster;
  std::string placement;
  std::string trace;
  std::string profile;
  ModelOptions model_options;
};
CLI::App* AddSimulateCommand(CLI::App* parent, SimulateFlags* flags);
int RunSimulate(const SimulateFlags& flags, std::ostream& out,
                std::ostream& err);

// dplace place: a method's placement, or every placer's (--method all).
struct PlaceFlags {
  std::string graph;  // --graph or --model.
  ModelOptions model_options;
  std::string cluster;
  std::string trace;
  std::string profile;
  std::string method;
  std::vector<std::string> options;
  uint64_t seed = 1;
  std::string out;
  bool list = false;
  // Learned placers (agents) only. Negative: not given.
  int64_t budget_samples = -1;
  double budget_seconds = -1;
  std::string log;
  std::string checkpoint;
  // Least seconds between two checkpoints. Negative: the method's default
  // (1 for mcmc and auto, 0 for the learned agents).
  double checkpoint_seconds = -1;
  std::string resume;
  std::string env = "simulated";
  // --env mpi: controller ranks, per-evaluation timeout, and the test hooks
  // RANK:SECONDS (a slow worker) and RANK:N (a worker that dies after N
  // evaluations).
  int controllers = 1;
  double mpi_timeout = 60;
  std::string mpi_slow_worker;
  std::string mpi_exit_worker;
  std::string report;   // HTML report to write.
  std::string command;  // The command line, shown in the report.
  // Its words after "dplace", for the line that says how to resume a
  // search a signal stopped.
  std::vector<std::string> args;
  std::string encoder;  // mars: --encoder, added to `options`.
  // --refine SECONDS: an mcmc search from the method's placement. Negative:
  // not given; 0: given but not positive (an error).
  double refine = -1;
  // --by-module [DEPTH]: the placement by module down to DEPTH (2 when
  // none is given). Negative: not given.
  int by_module = -1;
  std::string device_map;  // --device-map FILE: the map to write.
  // --whole-modules DEPTH: every module at DEPTH on one device. 0: not
  // given.
  int whole_modules = 0;
  bool json = false;  // --json: the results as one JSON document.
};
CLI::App* AddPlaceCommand(CLI::App* parent, PlaceFlags* flags);
int RunPlace(const PlaceFlags& place, std::ostream& out, std::ostream& err);

// dplace bench: a benchmark suite.
struct BenchFlags {
  std::string suite;
  std::string
      suites;  // File; empty: the built-in src/dplace/suite/suites.json.
  std::string output;
  std::string markdown;
  std::string report;
  bool list = false;
  SuiteFilter filter;
  std::string methods;  // Comma-separated.
  // Benchmark names or model specs; specs have commas of their own
  // (zoo:nmt:layers=4,batch=64), so these are separate arguments.
  std::vector<std::string> models;
  // Continue the unfinished run in --output (runs there are kept).
  bool resume = false;
  int max_runs = 0;  // > 0: stop after this many runs.
  // A results file: print its suite's claims sections instead of running.
  std::string claims;
  // A results file: print its tables and claims instead of running, the
  // detail tables unless no_details.
  std::string show;
  bool no_details = false;
  std::string command;  // The command line, kept with the results.
};
CLI::App* AddBenchCommand(CLI::App* parent, BenchFlags* flags);
int RunBench(const BenchFlags& flags, std::ostream& out, std::ostream& err);

// dplace report: a bench results JSON as an HTML page.
struct ReportFlags {
  std::string input;
  std::string output;
};
CLI::App* AddReportCommand(CLI::App* parent, ReportFlags* flags);
int RunReport(const ReportFlags& flags, std::ostream& out, std::ostream& err);

// dplace pretrain: pre-trains Mars's graph encoder on a model and writes it
// to a file that `dplace place --method mars --encoder FILE` loads.
struct PretrainFlags {
  std::string model;
  ModelOptions model_options;
  std::string output;
  int steps = -1;  // Negative: mars's pretrain_steps.
  uint64_t seed = 1;
  std::vector<std::string> options;  // Options of method mars.
};
CLI::App* AddPretrainCommand(CLI::App* parent, PretrainFlags* flags);
int RunPretrain(const PretrainFlags& flags, std::ostream& out,
                std::ostream& err);

// The real-execution commands, on this machine's devices: dplace profile,
// measure, fidelity, cluster detect and cluster calibrate. They share one
// ExecFlags.
struct ExecFlags {
  std::string model;
  ModelOptions model_options;
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
  double gpu_memory_gb = 0;  // cluster detect: each GPU's; 0: 16 GiB.
  int samples = 20;
  int rounds = -1;  // fidelity, calibrate: passes; negative: the default.
  std::string statistic = "fastest-quarter";  // Of a placement's rounds.
  int round_steps = 1;  // profile: steps of a run, with statistic fastest.
  uint64_t seed = 1;
};
CLI::App* AddProfileCommand(CLI::App* parent, ExecFlags* flags);
int RunProfile(const ExecFlags& flags, std::ostream& out, std::ostream& err);
CLI::App* AddClusterDetectCommand(CLI::App* cluster, ExecFlags* flags);
int RunClusterDetect(const ExecFlags& flags, std::ostream& out,
                     std::ostream& err);
CLI::App* AddClusterCalibrateCommand(CLI::App* cluster, ExecFlags* flags);
int RunClusterCalibrate(const ExecFlags& flags, std::ostream& out,
                        std::ostream& err);
CLI::App* AddMeasureCommand(CLI::App* parent, ExecFlags* flags);
int RunMeasure(const ExecFlags& flags, std::ostream& out, std::ostream& err);
CLI::App* AddFidelityCommand(CLI::App* parent, ExecFlags* flags);
int RunFidelity(const ExecFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace dplace

#endif  // DPLACE_CLI_COMMANDS_COMMANDS_H_
