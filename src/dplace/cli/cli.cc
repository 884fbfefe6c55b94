#include "dplace/cli/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "dplace/bench/bench.h"
#include "dplace/bench/method_run.h"
#include "dplace/cli/exec_commands.h"
#include "dplace/cli/pretrain_command.h"
#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/util/format.h"
#ifdef DPLACE_WITH_MPI
#include "dplace/env/mpi_environment.h"
#include "dplace/exec/measured_environment.h"
#endif
#include "dplace/graph/training.h"
#include "dplace/io/chrome_trace.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/onnx_import.h"
#include "dplace/io/placement_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/placers/placer.h"
#include "dplace/report/html_report.h"
#include "dplace/rl/agent.h"
#include "dplace/sim/simulator.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

std::string Seconds(double s) { return Format("%.6f s", s); }

std::string PadRight(std::string s, size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

StatusOr<Graph> LoadGraph(const std::string& spec) {
  StatusOr<LoadedModel> model = LoadModel(spec);
  if (!model.ok()) return model.status();
  return std::move(model->graph);
}

struct CommonFlags {
  std::string graph;
  std::string cluster;
  std::string placement;
  std::string trace;
  std::string profile;
};

void AddGraphFlags(CLI::App* cmd, CommonFlags* flags, bool required = true) {
  auto* graph = cmd->add_option("--graph", flags->graph, "graph JSON file");
  auto* model = cmd->add_option(
      "--model", flags->graph,
      "model: zoo:NAME[:key=value,...] (see `dplace zoo list`), a graph "
      ".json file, or an .onnx model (imported, then expanded for training "
      "with sgd)");
  graph->excludes(model);
  if (!required) return;
  cmd->callback([cmd] {
    if (cmd->count("--graph") + cmd->count("--model") == 0) {
      throw CLI::RequiredError("--graph or --model");
    }
  });
}

int Fail(std::ostream& err, const Status& status) {
  err << "dplace: error: " << status.message() << "\n";
  return kExitBadInput;
}

int Inspect(const CommonFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<Graph> graph = LoadGraph(flags.graph);
  if (!graph.ok()) return Fail(err, graph.status());
  const Graph& g = *graph;
  int control = 0;
  for (EdgeId e = 0; e < g.num_edges(); ++e) control += g.is_control(e);
  int phase_count[3] = {0, 0, 0};
  std::map<std::string, int> type_count;
  int64_t activation_bytes = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    ++phase_count[static_cast<int>(g.phase(op))];
    ++type_count[g.op_type(op)];
  }
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    activation_bytes += g.tensor_bytes(t);
  }
  out << "graph:            " << g.name() << "\n"
      << "hash:             " << g.hash() << "\n"
      << "ops:              " << g.num_ops() << " (forward " << phase_count[0]
      << ", backward " << phase_count[1] << ", update " << phase_count[2]
      << ")\n"
      << "edges:            " << g.num_edges() << " (data "
      << g.num_edges() - control << ", control " << control << ")\n"
      << "tensors:          " << g.num_tensors() << "\n"
      << "total FLOPs:      " << Format("%.4g", g.total_flops()) << "\n"
      << "parameter bytes:  " << FormatBytesScaled(g.total_persistent_bytes())
      << " (persistent: weights and optimizer slots)\n"
      << "activation bytes: " << FormatBytesScaled(activation_bytes)
      << " (all op outputs)\n";
  std::vector<std::pair<int, std::string>> types;
  for (const auto& [type, count] : type_count) types.push_back({-count, type});
  std::sort(types.begin(), types.end());
  out << "op types:        ";
  for (size_t i = 0; i < types.size() && i < 8; ++i) {
    out << " " << types[i].second << " " << -types[i].first;
  }
  if (types.size() > 8) out << " (+" << types.size() - 8 << " more)";
  out << "\n";
  return kExitOk;
}

struct ImportFlags {
  std::string model;
  int64_t batch = 0;
  std::string optimizer = "sgd";
  std::string output;
};

// dplace import: ONNX model -> training graph JSON.
int Import(const ImportFlags& flags, std::ostream& out, std::ostream& err) {
  OnnxImportOptions options;
  options.batch = flags.batch;
  const Optimizer optimizer = *ParseOptimizer(flags.optimizer);
  std::vector<std::string> warnings;
  StatusOr<Graph> graph =
      ImportOnnxTrainingGraph(flags.model, options, optimizer, &warnings);
  if (!graph.ok()) return Fail(err, graph.status());
  const Graph& g = *graph;
  Status written = WriteGraphJson(g, flags.output);
  if (!written.ok()) return Fail(err, written);
  int phase_count[3] = {0, 0, 0};
  double forward_flops = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    ++phase_count[static_cast<int>(g.phase(op))];
    if (g.phase(op) == Phase::kForward) forward_flops += g.flops(op);
  }
  out << "imported " << flags.model << " as graph " << g.name()
      << ", expanded for training with " << OptimizerName(optimizer) << "\n"
      << "ops:             " << g.num_ops() << " (forward " << phase_count[0]
      << ", backward " << phase_count[1] << ", update " << phase_count[2]
      << ")\n"
      << "FLOPs per step:  " << Format("%.4g", g.total_flops()) << " (forward "
      << Format("%.4g", forward_flops) << ")\n"
      << "parameter bytes: " << FormatBytesScaled(g.total_persistent_bytes())
      << " (weights and optimizer slots)\n";
  for (const std::string& w : warnings) err << "dplace: warning: " << w << "\n";
  out << "wrote " << flags.output << "\n";
  return kExitOk;
}

int ZooList(std::ostream& out) {
  for (const ZooModel& m : ZooModels()) {
    out << PadRight(m.name, 14) << m.description << "\n";
    std::string defaults;
    for (const auto& [key, value] : m.defaults) {
      defaults += (defaults.empty() ? "" : ",") + key + "=" + value;
    }
    out << PadRight("", 14) << "defaults " << defaults << "; paper preset "
        << m.paper_preset << "\n";
  }
  return kExitOk;
}

// Peak memory of `graph` with every op on one GPU of `cluster` (CPU-only ops
// on the CPU), in bytes.
int64_t SingleGpuPeak(const Graph& graph, const Cluster& cluster) {
  const DeviceId gpu = cluster.DevicesOfKind(DeviceKind::kGpu)[0];
  const CostModel cost(graph, cluster);
  Simulator simulator(cost);
  return simulator.Simulate(SingleDevicePlacement(graph, cluster, gpu))
      ->device_peak_bytes[gpu];
}

// One markdown row per model configuration the papers report: op counts
// against theirs, FLOPs, weights, single-GPU peak memory and which GPUs it
// fits, and the expert placement on the paper's machine.
int ZooStats(std::ostream& out, std::ostream& err) {
  // One GPU of each generation, to say which a model fits on.
  std::vector<Device> gpus;
  for (const char* preset : {"k80x2", "k40x2", "p100x4", "h100x8"}) {
    const Cluster c = *LoadCluster(preset);
    gpus.push_back(c.device(c.DevicesOfKind(DeviceKind::kGpu)[0]));
  }
  out << "| model | ops | paper ops | vs paper | GFLOPs / step | parameters "
         "| peak on one GPU | fits one | expert placement | build |\n"
         "|---|---:|---:|---:|---:|---:|---:|---|---|---:|\n";
  for (const ZooModel& m : ZooModels()) {
    std::vector<std::pair<std::string, int64_t>> configs = {
        {m.name, m.paper_ops}};
    for (const auto& [params, ops] : m.paper_variants) {
      configs.push_back({m.name + ":" + params, ops});
    }
    for (const auto& [spec_text, paper_ops] : configs) {
      const auto start = std::chrono::steady_clock::now();
      StatusOr<ZooSpec> spec = ParseZooSpec(spec_text);
      StatusOr<Graph> graph =
          spec.ok() ? MakeZooModel(*spec) : StatusOr<Graph>(spec.status());
      if (!graph.ok()) return Fail(err, graph.status());
      const double build = std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start)
                               .count();
      const Graph& g = *graph;
      const Cluster paper = *LoadCluster(m.paper_preset);
      const int64_t peak = SingleGpuPeak(g, paper);
      std::string fits;
      for (const Device& gpu : gpus) {
        if (peak <= gpu.memory_bytes) {
          fits += (fits.empty() ? "" : ", ") + gpu.model;
        }
      }
      const CostModel cost(g, paper);
      Simulator simulator(cost);
      const SimResult expert =
          *simulator.Simulate(m.expert(g, paper, spec->params));
      out << "| `" << spec_text << "` | " << g.num_ops() << " | "
          << (paper_ops ? std::to_string(paper_ops) : "-") << " | "
          << (paper_ops ? Format("%+.0f%%",
                                 100.0 * (g.num_ops() - paper_ops) / paper_ops)
                        : "-")
          << " | " << Format("%.1f", g.total_flops() / 1e9) << " | "
          << FormatBytesScaled(g.total_persistent_bytes()) << " | "
          << FormatBytesScaled(peak) << " | " << (fits.empty() ? "none" : fits)
          << " | " << m.paper_preset << ": "
          << (expert.feasible ? Format("%.3f s", expert.step_time) : "OOM")
          << " | " << Format("%.0f ms", build * 1e3) << " |\n";
    }
  }
  return kExitOk;
}

int ZooExport(const std::string& name, const std::vector<std::string>& params,
              const std::string& output, std::ostream& out, std::ostream& err) {
  std::string spec = name;
  for (size_t i = 0; i < params.size(); ++i) {
    spec +=
        (i == 0 && name.find(':') == std::string::npos ? ":" : ",") + params[i];
  }
  StatusOr<Graph> graph = MakeZooModel(spec);
  if (!graph.ok()) return Fail(err, graph.status());
  Status written = WriteGraphJson(*graph, output);
  if (!written.ok()) return Fail(err, written);
  out << "wrote " << output << ": " << spec << ", " << graph->num_ops()
      << " ops, hash " << graph->hash() << "\n";
  return kExitOk;
}

int ClusterList(std::ostream& out) {
  for (const std::string& name : ClusterPresetNames()) {
    out << PadRight(name, 10) << " " << ClusterPresetDescription(name) << "\n";
  }
  return kExitOk;
}

int ClusterShow(const std::string& name, bool as_json, std::ostream& out,
                std::ostream& err) {
  StatusOr<Cluster> cluster = LoadCluster(name);
  if (!cluster.ok()) return Fail(err, cluster.status());
  const Cluster& c = *cluster;
  if (as_json) {
    out << ClusterToJson(c);
    return kExitOk;
  }
  out << "cluster " << c.name() << ": " << c.num_devices() << " devices, "
      << c.num_links() << " directed links\n";
  out << PadRight("device", 12) << PadRight("kind", 5) << PadRight("host", 7)
      << PadRight("TFLOP/s", 9) << PadRight("GB/s", 8) << PadRight("memory", 12)
      << PadRight("slots", 6) << "model\n";
  for (const Device& d : c.devices()) {
    out << PadRight(d.name, 12)
        << PadRight(std::string(DeviceKindName(d.kind)), 5)
        << PadRight(d.host, 7)
        << PadRight(Format("%.2f", d.peak_flops / 1e12), 9)
        << PadRight(Format("%.0f", d.memory_bandwidth / 1e9), 8)
        << PadRight(FormatBytesScaled(d.memory_bytes), 12)
        << PadRight(std::to_string(d.compute_slots), 6) << d.model << "\n";
  }
  out << "routes (hops from the first device):\n";
  for (DeviceId d = 1; d < c.num_devices(); ++d) {
    out << "  " << c.device(0).name;
    for (LinkId l : c.route(0, d)) {
      const Link& link = c.link(l);
      out << " -> " << c.device(link.to).name << " ("
          << Format("%.0f GB/s", link.bandwidth / 1e9) << ", "
          << Format("%.0f us", link.latency * 1e6) << ")";
    }
    out << "\n";
  }
  return kExitOk;
}

void PrintSimResult(const Cluster& c, const SimResult& r, std::ostream& out) {
  out << "step time: " << Format("%.6f", r.step_time) << " s\n";
  if (r.feasible) {
    out << "feasible: yes\n";
  } else {
    out << "infeasible: " << DescribeInfeasibility(c, r) << "\n";
  }
  out << PadRight("device", 12) << PadRight("ops", 8) << PadRight("busy", 12)
      << PadRight("load", 8) << PadRight("peak memory", 14) << "capacity\n";
  for (DeviceId d = 0; d < c.num_devices(); ++d) {
    const Device& dev = c.device(d);
    const double load = r.step_time > 0 ? r.device_busy_seconds[d] /
                                              dev.compute_slots / r.step_time
                                        : 0;
    std::string peak = FormatBytesScaled(r.device_peak_bytes[d]);
    if (r.device_peak_bytes[d] > dev.memory_bytes) peak += " OOM";
    out << PadRight(dev.name, 12)
        << PadRight(std::to_string(r.device_op_count[d]), 8)
        << PadRight(Seconds(r.device_busy_seconds[d]), 12)
        << PadRight(Format("%.1f%%", 100 * load), 8) << PadRight(peak, 14)
        << FormatBytesScaled(dev.memory_bytes) << "\n";
  }
  bool any_link = false;
  for (LinkId l = 0; l < c.num_links(); ++l) {
    if (r.link_bytes[l] == 0) continue;
    if (!any_link) out << "bytes moved:\n";
    any_link = true;
    out << "  "
        << PadRight(c.device(c.link(l).from).name + " -> " +
                        c.device(c.link(l).to).name,
                    24)
        << FormatBytesScaled(r.link_bytes[l]) << "\n";
  }
  const LowerBounds& b = r.bounds;
  out << "lower bound: " << Format("%.6f", b.Max()) << " s (" << b.MaxName()
      << "); step time is " << Format("%.3f", r.step_time / b.Max())
      << "x the bound\n"
      << "  critical path " << Seconds(b.critical_path) << ", total work "
      << Seconds(b.total_work) << ", device load " << Seconds(b.device_load)
      << ", link volume " << Seconds(b.link_volume) << ", placed critical path "
      << Seconds(b.placed_critical_path) << "\n";
}

int Simulate(const CommonFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<Graph> graph = LoadGraph(flags.graph);
  if (!graph.ok()) return Fail(err, graph.status());
  StatusOr<Cluster> cluster = LoadCluster(flags.cluster);
  if (!cluster.ok()) return Fail(err, cluster.status());
  StatusOr<Placement> placement =
      ReadPlacementJson(flags.placement, *graph, *cluster);
  if (!placement.ok()) return Fail(err, placement.status());
  StatusOr<ProfileTable> profile = LoadProfile(flags.profile);
  if (!profile.ok()) return Fail(err, profile.status());

  const auto start = std::chrono::steady_clock::now();
  const CostModel cost(*graph, *cluster, *profile);
  Simulator simulator(cost);
  SimOptions options;
  options.record_timeline = !flags.trace.empty();
  StatusOr<SimResult> result = simulator.Simulate(*placement, options);
  if (!result.ok()) return Fail(err, result.status());
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  out << "graph " << graph->name() << " (" << graph->num_ops() << " ops, hash "
      << graph->hash() << ") on cluster " << cluster->name() << " ("
      << cluster->num_devices() << " devices)\n";
  PrintSimResult(*cluster, *result, out);
  out << "simulated in " << Format("%.3f", elapsed * 1e3) << " ms\n";
  if (!flags.trace.empty()) {
    Status s = WriteChromeTrace(*graph, *cluster, *result, flags.trace);
    if (!s.ok()) return Fail(err, s);
    out << "trace: " << flags.trace << " (open in Perfetto)\n";
  }
  return result->feasible ? kExitOk : kExitInfeasible;
}

struct PlaceFlags {
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
};

int PlaceList(std::ostream& out) {
  size_t width = 0;  // The longest name, plus two spaces.
  for (const PlacerEntry* e : Placers())
    width = std::max(width, e->name.size());
  for (const AgentEntry* e : Agents()) width = std::max(width, e->name.size());
  width += 2;
  for (const PlacerEntry* e : Placers()) {
    out << PadRight(e->name, width) << e->description << "\n";
  }
  for (const AgentEntry* e : Agents()) {
    out << PadRight(e->name, width) << "(learned) " << e->description << "\n";
  }
  return kExitOk;
}

bool HasAgentFlags(const PlaceFlags& place) {
  return place.budget_samples >= 0 || place.budget_seconds >= 0 ||
         !place.log.empty() || !place.checkpoint.empty() ||
         !place.resume.empty();
}

// Where the search checkpoints: --checkpoint, else beside --log
// (L.jsonl -> L.ckpt), else over the checkpoint it resumed from.
std::string CheckpointPath(const PlaceFlags& place) {
  if (!place.checkpoint.empty()) return place.checkpoint;
  if (!place.log.empty()) {
    const std::string& log = place.log;
    const size_t dot = log.rfind('.');
    const size_t slash = log.rfind('/');
    const bool has_ext =
        dot != std::string::npos && (slash == std::string::npos || dot > slash);
    return (has_ext ? log.substr(0, dot) : log) + ".ckpt";
  }
  return place.resume;
}

// A progress line rewritten in place: samples, time, best step time.
void PrintProgress(const SearchProgress& p, std::ostream& err) {
  std::string line = "\r" + std::to_string(p.samples);
  if (p.budget.samples > 0) {
    const int width = 20;
    const int filled = static_cast<int>(
        width *
        std::min<double>(1, static_cast<double>(p.samples) / p.budget.samples));
    line = "\r[" + std::string(filled, '#') + std::string(width - filled, ' ') +
           "] " + std::to_string(p.samples) + "/" +
           std::to_string(p.budget.samples);
  }
  line += " samples, " + Format("%.1f s", p.wall_seconds) + ", best " +
          (p.best_step_time > 0 ? Format("%.4f s", p.best_step_time)
                                : std::string("none feasible yet")) +
          "   ";
  err << line << std::flush;
}

// Writes the --report page of one placement.
Status WritePlacementReport(const PlacementProblem& problem,
                            const MethodRun& run, const std::string& command,
                            const std::string& path) {
  PlacementReportInput input;
  input.graph = problem.graph;
  input.cluster = problem.cluster;
  input.placement = &run.placement;
  input.sim = &run.sim;
  input.method = run.method;
  input.command = command;
  input.wall_seconds = run.wall_seconds;
  input.lower_bound = PlacementLowerBound(Simulator(*problem.cost));
  for (const SampleRecord& s : run.search.history) {
    input.history.push_back({s.step_time, s.feasible, s.best_step_time});
  }
  return WriteTextFile(path, PlacementReportHtml(input));
}

// The command line, for the record in reports.
std::string CommandLine(int argc, const char* const* argv) {
  std::string line = "dplace";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const bool plain = arg.find_first_of(" \"'$\\") == std::string::npos;
    line += " " + (plain ? arg : "'" + arg + "'");
  }
  return line;
}

// Where PlaceOne's search evaluates and what it does around it: in
// process by default; --env mpi fills these in.
struct PlaceHooks {
  Environment* environment = nullptr;  // Default: the simulated one.
  GradientAveraging average_gradients;
  uint64_t sampling_stream = 0;
  // After a successful search: may replace the placement (the best over
  // controllers) and returns a line to print after the method's.
  std::function<StatusOr<std::string>(MethodRun*)> after_search;
  // When the search fails, after the error is printed (MPI: end the job).
  std::function<void()> on_error;
};

// dplace place --method NAME: one placer, or a learned placer's search
// through the simulated environment; prints the chosen placement.
int PlaceOne(const PlacementProblem& problem, const PlaceFlags& place,
             const PlacerOptions& options, const std::string& header,
             const std::string& trace, std::ostream& out, std::ostream& err,
             const PlaceHooks& hooks = {}) {
  const bool learned = IsLearnedMethod(place.method);
  MethodRunOptions run_options;
  run_options.record_timeline = !trace.empty() || !place.report.empty();
  run_options.environment = hooks.environment;
  SearchOptions& search = run_options.search;
  search.average_gradients = hooks.average_gradients;
  search.sampling_stream = hooks.sampling_stream;
  if (learned) {
    if (place.budget_samples == 0 || place.budget_seconds == 0) {
      return Fail(err,
                  InvalidArgumentError(
                      "--budget-samples and --budget-seconds must be > 0"));
    }
    if (place.budget_samples > 0) search.budget.samples = place.budget_samples;
    if (place.budget_seconds > 0) search.budget.seconds = place.budget_seconds;
    search.log_path = place.log;
    search.checkpoint_path = CheckpointPath(place);
    search.resume_path = place.resume;
  }
  const bool terminal =
      learned && &err == &std::cerr && ::isatty(STDERR_FILENO);
  if (terminal) {
    search.progress = [&err](const SearchProgress& p) {
      PrintProgress(p, err);
    };
  }
  StatusOr<MethodRun> run =
      RunMethod(place.method, options, problem, run_options);
  if (terminal) err << "\n";
  std::string note;
  if (run.ok() && run->placed && hooks.after_search) {
    StatusOr<std::string> line = hooks.after_search(&*run);
    if (line.ok()) note = *line;
    if (!line.ok()) run = line.status();
  }
  if (!run.ok()) {
    const int code = Fail(err, run.status());
    if (hooks.on_error) hooks.on_error();
    return code;
  }
  if (!run->placed) {
    const Status status(run->error_code, run->error);
    if (status.code() == StatusCode::kInfeasible) {
      out << header << "infeasible: " << status.message() << "\n";
      return kExitInfeasible;
    }
    return Fail(err, status);
  }
  const Graph& graph = *problem.graph;
  const Cluster& cluster = *problem.cluster;
  const SimResult& sim = run->sim;
  out << header << "method " << place.method << ": ";
  if (learned) {
    const SearchResult& result = run->search;
    out << "searched " << result.samples << " samples ("
        << (result.first_sample_of_this_run > 0
                ? "resumed at " +
                      std::to_string(result.first_sample_of_this_run) + ", "
                : "")
        << result.updates << " updates, " << result.num_groups << " groups) in "
        << Format("%.3f", result.wall_seconds) << " s\n";
  } else {
    out << "placed in " << Format("%.3f", run->wall_seconds) << " s\n";
  }
  if (!note.empty()) out << note << "\n";
  PrintSimResult(cluster, sim, out);
  if (!place.log.empty()) out << "log: " << place.log << "\n";
  if (learned && !search.checkpoint_path.empty()) {
    out << "checkpoint: " << search.checkpoint_path << "\n";
  }
  if (!place.out.empty()) {
    Status s = WriteTextFile(place.out,
                             PlacementToJson(graph, cluster, run->placement));
    if (!s.ok()) return Fail(err, s);
    out << "placement: " << place.out << "\n";
  }
  if (!trace.empty()) {
    Status s = WriteChromeTrace(graph, cluster, sim, trace);
    if (!s.ok()) return Fail(err, s);
    out << "trace: " << trace << " (open in Perfetto)\n";
  }
  if (!place.report.empty()) {
    Status s = WritePlacementReport(problem, *run, place.command, place.report);
    if (!s.ok()) return Fail(err, s);
    out << "report: " << place.report << "\n";
  }
  return sim.feasible ? kExitOk : kExitInfeasible;
}

// Every registered placer on one problem, as a markdown table; the best
// feasible step time is marked.
int PlaceAll(const PlacementProblem& problem, std::ostream& out,
             std::ostream& err) {
  Simulator simulator(*problem.cost);
  std::vector<MethodRun> results;
  for (const PlacerEntry* e : Placers()) {
    err << "dplace: placing with " << e->name << " ...\n";
    StatusOr<MethodRun> run = RunMethod(e->name, {}, problem, {});
    if (!run.ok()) {
      MethodRun failed;
      failed.method = e->name;
      failed.error = run.status().message();
      results.push_back(std::move(failed));
    } else {
      results.push_back(std::move(run).value());
    }
  }
  const double bound = PlacementLowerBound(simulator);
  double best = 0, single_gpu = 0;
  for (const MethodRun& r : results) {
    if (!r.placed || !r.sim.feasible) continue;
    if (best == 0 || r.sim.step_time < best) best = r.sim.step_time;
    if (r.method == "single-gpu") single_gpu = r.sim.step_time;
  }
  const Cluster& c = *problem.cluster;
  out << "| method | step time (s) | vs single-gpu | vs lower bound | max "
         "peak memory | time to place (s) | note |\n"
         "|---|---:|---:|---:|---:|---:|---|\n";
  for (const MethodRun& r : results) {
    out << "| " << r.method << " | ";
    if (!r.placed) {
      out << "- | - | - | - | " << Format("%.3f", r.wall_seconds) << " | "
          << r.error << " |\n";
      continue;
    }
    const SimResult& sim = r.sim;
    int64_t peak = 0;
    for (int64_t p : sim.device_peak_bytes) peak = std::max(peak, p);
    out << (sim.feasible ? Format("%.4f", sim.step_time) : "OOM")
        << (sim.feasible && sim.step_time == best ? " (best)" : "") << " | "
        << (sim.feasible && single_gpu > 0
                ? Format("%.2fx", single_gpu / sim.step_time)
                : "-")
        << " | "
        << (sim.feasible ? Format("%.2fx", sim.step_time / bound) : "-")
        << " | " << FormatBytesScaled(peak) << " | "
        << Format("%.3f", r.wall_seconds) << " | "
        << (sim.feasible ? "" : DescribeInfeasibility(c, sim)) << " |\n";
  }
  out << "lower bound: " << Format("%.4f", bound)
      << " s (no placement beats the larger of the critical path and the "
         "total work over all devices)\n";
  return best > 0 ? kExitOk : kExitInfeasible;
}

bool IsMpiEnv(const std::string& env) {
  return env == "mpi" || env == "mpi:simulated" || env == "mpi:measured";
}

// --env: simulated, measured (one method, on a detected cluster), or
// mpi[:simulated|:measured] (learned placers only).
Status CheckEnv(const PlaceFlags& place) {
  if (place.env == "simulated") return Status::Ok();
  if (place.env == "measured") {
    if (place.method == "all") {
      return InvalidArgumentError(
          "--env measured runs one method; to measure many placements "
          "against the simulator use dplace fidelity");
    }
    return Status::Ok();
  }
  if (!IsMpiEnv(place.env)) {
    return InvalidArgumentError("--env " + place.env +
                                ": expected simulated, measured or "
                                "mpi[:simulated|:measured]");
  }
#ifndef DPLACE_WITH_MPI
  return InvalidArgumentError(
      "--env " + place.env +
      ": this dplace was built without MPI; install Open MPI (apt-get "
      "install libopenmpi-dev openmpi-bin), rebuild with "
      "-DDPLACE_WITH_MPI=ON and start it with mpirun (docs/mpi.md)");
#else
  if (place.method == "all" || !IsLearnedMethod(place.method)) {
    return InvalidArgumentError("--env " + place.env +
                                " spreads a learned placer's evaluations "
                                "over MPI ranks; method " +
                                place.method +
                                " is not a learned placer (see --list)");
  }
  if (place.controllers > 1 &&
      (place.budget_samples <= 0 || place.budget_seconds >= 0 ||
       !place.resume.empty())) {
    return InvalidArgumentError(
        "--controllers " + std::to_string(place.controllers) +
        ": controllers step together, so they need --budget-samples and no "
        "--budget-seconds or --resume");
  }
  return Status::Ok();
#endif
}

#ifdef DPLACE_WITH_MPI
// "RANK:VALUE" of the MPI test hooks.
Status ParseRankValue(const std::string& flag, const std::string& text,
                      int* rank, double* value) {
  const size_t colon = text.find(':');
  try {
    size_t end = 0;
    if (colon == std::string::npos) throw std::invalid_argument(text);
    *rank = std::stoi(text.substr(0, colon), &end);
    if (end != colon) throw std::invalid_argument(text);
    *value = std::stod(text.substr(colon + 1), &end);
    if (end != text.size() - colon - 1) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    return InvalidArgumentError(flag + " " + text + ": expected RANK:NUMBER");
  }
  return Status::Ok();
}

// dplace place --env mpi under mpirun: controllers search, the other ranks
// evaluate their placements (see mpi_environment.h). Only controller 0
// prints and writes files.
int PlaceWithMpi(const PlacementProblem& problem, PlaceFlags place,
                 const PlacerOptions& options, const std::string& header,
                 std::string trace, std::ostream& out, std::ostream& err) {
  MpiOptions mpi;
  mpi.controllers = place.controllers;
  mpi.evaluation_timeout_seconds = place.mpi_timeout;
  if (!place.mpi_slow_worker.empty()) {
    Status s = ParseRankValue("--mpi-slow-worker", place.mpi_slow_worker,
                              &mpi.slow_rank, &mpi.slow_seconds);
    if (!s.ok()) return Fail(err, s);
  }
  if (!place.mpi_exit_worker.empty()) {
    double after = 0;
    Status s = ParseRankValue("--mpi-exit-worker", place.mpi_exit_worker,
                              &mpi.exit_rank, &after);
    if (!s.ok()) return Fail(err, s);
    mpi.exit_after = static_cast<int64_t>(after);
  }
  StatusOr<std::unique_ptr<MpiContext>> started = MpiContext::Start(mpi);
  if (!started.ok()) return Fail(err, started.status());
  MpiContext& context = **started;
  if (!context.is_controller()) {
    // Each worker evaluates alone: one simulator thread, or this host's
    // devices as --cluster names them.
    StatusOr<std::unique_ptr<Environment>> local =
        place.env == "mpi:measured"
            ? NewMeasuredEnvironment(*problem.graph, *problem.cluster, {})
            : StatusOr<std::unique_ptr<Environment>>(
                  NewSimulatedEnvironment(*problem.cost, /*num_threads=*/1));
    Status s = local.ok() ? context.RunWorker(local->get()) : local.status();
    if (!s.ok()) {
      Fail(err, s);
      context.Abort(kExitBadInput);
    }
    return kExitOk;
  }
  std::ostringstream discarded;
  std::ostream* shown = &out;
  if (context.controller() > 0) {
    // The other controllers search and share their best, silently.
    place.log.clear();
    place.checkpoint.clear();
    place.out.clear();
    place.report.clear();
    trace.clear();
    shown = &discarded;
  }
  std::unique_ptr<Environment> env =
      context.NewEnvironment(*problem.graph, *problem.cluster);
  PlaceHooks hooks;
  hooks.environment = env.get();
  hooks.sampling_stream = static_cast<uint64_t>(context.controller());
  if (context.num_controllers() > 1) {
    hooks.average_gradients = [&context](std::vector<float>* gradient) {
      context.AverageOverControllers(gradient);
    };
    hooks.on_error = [&context] { context.Abort(kExitBadInput); };
  }
  const bool record_timeline = !trace.empty() || !place.report.empty();
  hooks.after_search = [&](MethodRun* run) -> StatusOr<std::string> {
    context.StopWorkers();
    const int best = context.ShareBest(
        run->search.best_feasible, run->search.best_step_time, &run->placement);
    if (best != context.controller()) {
      SimOptions sim_options;
      sim_options.record_timeline = record_timeline;
      StatusOr<SimResult> sim =
          Simulator(*problem.cost).Simulate(run->placement, sim_options);
      if (!sim.ok()) return sim.status();
      run->sim = std::move(sim).value();
    }
    const MpiEvaluationStats stats = context.stats();
    return "mpi: " + std::to_string(context.world_size()) + " ranks, " +
           std::to_string(context.num_controllers()) + " controller(s), " +
           std::to_string(context.num_workers()) +
           " worker(s) for controller 0; " + std::to_string(stats.issued) +
           " evaluations issued, " + std::to_string(stats.reissued) +
           " re-issued after a " + Format("%g", place.mpi_timeout) +
           " s timeout, " + std::to_string(stats.late_replies) +
           " late replies ignored; best from controller " +
           std::to_string(best);
  };
  return PlaceOne(problem, place, options, header, trace, *shown, err, hooks);
}
#endif  // DPLACE_WITH_MPI

// dplace place --env measured: a learned placer's samples are measured on
// this machine's devices (the cluster must be a detected one); the chosen
// placement, from any method, is measured too.
int PlaceMeasured(const PlacementProblem& problem, const PlaceFlags& place,
                  const PlacerOptions& options, const std::string& header,
                  const std::string& trace, std::ostream& out,
                  std::ostream& err) {
  StatusOr<std::unique_ptr<Environment>> env =
      MeasuredEnvironmentForPlace(*problem.graph, *problem.cluster);
  if (!env.ok()) return Fail(err, env.status());
  PlaceHooks hooks;
  hooks.environment = env->get();
  hooks.after_search = [&](MethodRun* run) -> StatusOr<std::string> {
    err << "dplace: measuring the chosen placement ...\n";
    StatusOr<std::vector<Measurement>> m = (*env)->Evaluate({run->placement});
    if (!m.ok()) return m.status();
    const Measurement& r = (*m)[0];
    if (!r.feasible) return "measured: infeasible: " + r.infeasible_reason;
    return "measured step time: " + Format("%.6f", r.step_time) +
           " s (simulated below)";
  };
  return PlaceOne(problem, place, options, header, trace, out, err, hooks);
}

int Place(const CommonFlags& flags, const PlaceFlags& place, std::ostream& out,
          std::ostream& err) {
  if (place.list) return PlaceList(out);
  if (flags.graph.empty() || flags.cluster.empty() || place.method.empty()) {
    return Fail(err, InvalidArgumentError(
                         "place needs --model (or --graph), --cluster and "
                         "--method (or --list)"));
  }
  if (Status s = CheckEnv(place); !s.ok()) return Fail(err, s);
  const bool is_agent = IsLearnedMethod(place.method);
  if (!is_agent && HasAgentFlags(place)) {
    return Fail(err, InvalidArgumentError(
                         "--budget-samples, --budget-seconds, --log, "
                         "--checkpoint and --resume are for learned placers "
                         "(see --list); " +
                         (place.method == "all"
                              ? std::string("--method all runs the classical "
                                            "placers")
                              : "method " + place.method + " is not one")));
  }
  if (place.method != "all" && !IsKnownMethod(place.method)) {
    return Fail(err, NotFoundError("unknown method \"" + place.method +
                                   "\" (methods: " + KnownMethodNames() + ")"));
  }
  StatusOr<LoadedModel> model = LoadModel(flags.graph);
  if (!model.ok()) return Fail(err, model.status());
  StatusOr<Cluster> cluster = LoadCluster(flags.cluster);
  if (!cluster.ok()) return Fail(err, cluster.status());
  StatusOr<ProfileTable> profile = LoadProfile(flags.profile);
  if (!profile.ok()) return Fail(err, profile.status());
  const Graph& graph = model->graph;
  const CostModel cost(graph, *cluster, *profile);
  const PlacementProblem problem = ProblemOf(*model, cost, place.seed);
  const std::string header =
      "graph " + graph.name() + " (" + std::to_string(graph.num_ops()) +
      " ops, hash " + graph.hash() + ") on cluster " + cluster->name() + " (" +
      std::to_string(cluster->num_devices()) + " devices)\n";

  if (place.method == "all") {
    if (!place.options.empty() || !place.out.empty() || !flags.trace.empty() ||
        !place.report.empty()) {
      return Fail(err, InvalidArgumentError(
                           "--method all compares the placers at their "
                           "defaults; --option, --out, --trace and --report "
                           "need one method"));
    }
    out << header;
    return PlaceAll(problem, out, err);
  }

  StatusOr<PlacerOptions> options = PlacerOptions::Parse(place.options);
  if (!options.ok()) return Fail(err, options.status());
#ifdef DPLACE_WITH_MPI
  if (IsMpiEnv(place.env)) {
    return PlaceWithMpi(problem, place, *options, header, flags.trace, out,
                        err);
  }
#endif
  if (place.env == "measured") {
    return PlaceMeasured(problem, place, *options, header, flags.trace, out,
                         err);
  }
  return PlaceOne(problem, place, *options, header, flags.trace, out, err);
}

struct BenchFlags {
  std::string suite;
  std::string suites;  // File; empty: the built-in bench/suites.json.
  std::string output;
  std::string markdown;
  std::string report;
  bool list = false;
  SuiteFilter filter;
  std::string methods;  // Comma-separated.
  // Benchmark names or model specs; specs have commas of their own
  // (zoo:nmt:layers=4,batch=64), so these are separate arguments.
  std::vector<std::string> models;
};

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= text.size() && !text.empty()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) items.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

// dplace bench: runs a suite, writes its JSON, Markdown and HTML report.
int Bench(BenchFlags flags, const std::string& command, std::ostream& out,
          std::ostream& err) {
  StatusOr<std::vector<Suite>> suites = LoadSuites(flags.suites);
  if (!suites.ok()) return Fail(err, suites.status());
  if (flags.list || flags.suite.empty()) {
    if (!flags.list) {
      return Fail(err,
                  InvalidArgumentError("bench needs --suite NAME (or --list)"));
    }
    for (const Suite& s : *suites) {
      out << PadRight(s.name, 8) << s.description << "\n";
    }
    return kExitOk;
  }
  StatusOr<Suite> suite = FindSuite(*suites, flags.suite);
  if (!suite.ok()) return Fail(err, suite.status());
  flags.filter.methods = SplitList(flags.methods);
  flags.filter.models = flags.models;
  StatusOr<Suite> filtered = FilterSuite(*suite, flags.filter);
  if (!filtered.ok()) return Fail(err, filtered.status());
  StatusOr<BenchResults> results =
      RunSuite(*filtered, command, [&err](const std::string& line) {
        err << "dplace: bench " << line << "\n";
      });
  if (!results.ok()) return Fail(err, results.status());
  const std::string json = BenchResultsToJson(*results);
  const std::string markdown = BenchResultsToMarkdown(*results);
  if (!flags.output.empty()) {
    Status s = WriteTextFile(flags.output, json);
    if (!s.ok()) return Fail(err, s);
  }
  if (!flags.markdown.empty()) {
    Status s = WriteTextFile(flags.markdown, markdown);
    if (!s.ok()) return Fail(err, s);
  } else {
    out << markdown;
  }
  if (!flags.report.empty()) {
    StatusOr<std::string> html = BenchReportHtml(json, "results");
    if (!html.ok()) return Fail(err, html.status());
    Status s = WriteTextFile(flags.report, *html);
    if (!s.ok()) return Fail(err, s);
  }
  out << "suite " << results->suite << ": "
      << Format("%.1f", results->wall_seconds) << " s";
  if (!flags.output.empty()) out << "; results: " << flags.output;
  if (!flags.markdown.empty()) out << "; markdown: " << flags.markdown;
  if (!flags.report.empty()) out << "; report: " << flags.report;
  out << "\n";
  return kExitOk;
}

// dplace report results.json -o report.html
int Report(const std::string& input, const std::string& output,
           std::ostream& out, std::ostream& err) {
  StatusOr<std::string> text = ReadTextFile(input);
  if (!text.ok()) return Fail(err, text.status());
  StatusOr<std::string> html = BenchReportHtml(*text, input);
  if (!html.ok()) return Fail(err, html.status());
  Status s = WriteTextFile(output, *html);
  if (!s.ok()) return Fail(err, s);
  out << "report: " << output << "\n";
  return kExitOk;
}

}  // namespace

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

  CommonFlags flags;
  auto* inspect = app.add_subcommand(
      "inspect", "counts of a graph: ops per phase, edges, FLOPs, bytes, hash");
  AddGraphFlags(inspect, &flags);

  auto* cluster = app.add_subcommand("cluster", "hardware presets");
  cluster->require_subcommand(1);
  cluster->add_subcommand("list", "list the presets");
  auto* show = cluster->add_subcommand(
      "show", "devices, figures and routes of a preset or cluster JSON file");
  std::string show_name;
  bool show_json = false;
  show->add_option("name", show_name, "preset name or cluster .json file")
      ->required();
  show->add_flag("--json", show_json, "print the cluster as JSON");

  auto* simulate = app.add_subcommand(
      "simulate",
      "simulate one training step of a placement: step time, feasibility, "
      "per-device load and peak memory, lower bounds");
  AddGraphFlags(simulate, &flags);
  simulate
      ->add_option("--cluster", flags.cluster,
                   "preset name (see `dplace cluster list`) or cluster .json")
      ->required();
  simulate->add_option("--placement", flags.placement, "placement JSON file")
      ->required();
  simulate->add_option("--trace", flags.trace,
                       "write a Chrome trace (open in Perfetto)");
  simulate->add_option("--profile", flags.profile,
                       "profile JSON of measured op times (overrides the "
                       "roofline cost model)");

  PlaceFlags place_flags;
  auto* place = app.add_subcommand(
      "place",
      "place a model on a cluster with a method, simulate the placement and "
      "print step time, feasibility, per-device load and peak memory, the "
      "gap to the lower bound and the time placing took");
  AddGraphFlags(place, &flags, /*required=*/false);
  place->add_option("--cluster", flags.cluster,
                    "preset name (see `dplace cluster list`) or cluster .json");
  place->add_option("--method", place_flags.method,
                    "placer or learned placer name (see --list), or `all` "
                    "for a table comparing every classical placer");
  place->add_option("--option", place_flags.options,
                    "key=value setting of the method (repeatable)");
  place->add_option("--seed", place_flags.seed,
                    "seed of randomised methods (default: 1)");
  place->add_option("--out", place_flags.out, "write the placement JSON");
  place->add_option("--trace", flags.trace,
                    "write the placement's Chrome trace (open in Perfetto)");
  place->add_option("--profile", flags.profile,
                    "profile JSON of measured op times (overrides the "
                    "roofline cost model)");
  place->add_flag("--list", place_flags.list,
                  "list every method, one line each");
  place->add_option("--budget-samples", place_flags.budget_samples,
                    "learned placers: placements to evaluate (default: the "
                    "agent's paper budget, 2400, when no budget is given)");
  place->add_option("--budget-seconds", place_flags.budget_seconds,
                    "learned placers: wall seconds to search");
  place->add_option("--log", place_flags.log,
                    "learned placers: write one JSON line per sampled "
                    "placement (sample, wall_s, step_time, feasible, reward, "
                    "best_step_time)");
  place->add_option("--checkpoint", place_flags.checkpoint,
                    "learned placers: checkpoint file, written every 10 "
                    "updates and at the end (default: beside --log as "
                    ".ckpt)");
  place->add_option("--resume", place_flags.resume,
                    "learned placers: continue the search saved in this "
                    "checkpoint (same method, model, cluster, options)");
  place->add_option("--env", place_flags.env,
                    "where a learned placer's placements are evaluated: "
                    "simulated (default, in process), measured (run on this "
                    "machine's devices; --cluster from `cluster detect`), "
                    "or mpi[:simulated|:measured] "
                    "under mpirun: rank 0 searches, the other ranks evaluate "
                    "(docs/mpi.md)");
  place
      ->add_option("--controllers", place_flags.controllers,
                   "--env mpi: controller ranks training one policy, each "
                   "with its own workers and baseline, gradients averaged "
                   "(default: 1)")
      ->check(CLI::PositiveNumber);
  place
      ->add_option("--mpi-timeout", place_flags.mpi_timeout,
                   "--env mpi: seconds one evaluation may take before the "
                   "placement goes to another worker; 0: never (default: "
                   "60)")
      ->check(CLI::NonNegativeNumber);
  // Test hooks of the MPI environment, hidden from --help.
  place->add_option("--mpi-slow-worker", place_flags.mpi_slow_worker)
      ->group("");
  place->add_option("--mpi-exit-worker", place_flags.mpi_exit_worker)
      ->group("");
  place->add_option("--report", place_flags.report,
                    "write a self-contained HTML report: placement by layer "
                    "and op, per-device load and memory, the step's "
                    "timeline, and a learned placer's learning curve");

  BenchFlags bench_flags;
  auto* bench = app.add_subcommand(
      "bench",
      "run a benchmark suite (models x clusters x methods x budgets x "
      "seeds) and print its tables in the papers' layout; see docs/bench.md");
  bench->add_option("--suite", bench_flags.suite,
                    "suite name: smoke, paper, scale (see --list)");
  bench->add_flag("--list", bench_flags.list, "list the suites");
  bench->add_option("--suites", bench_flags.suites,
                    "suites JSON file (default: bench/suites.json, built "
                    "into dplace)");
  bench->add_option("-o,--output", bench_flags.output,
                    "write the results as JSON (dplace.bench-results)");
  bench->add_option("--markdown", bench_flags.markdown,
                    "write the Markdown tables to this file instead of "
                    "stdout");
  bench->add_option("--report", bench_flags.report,
                    "write the HTML report of the results");
  bench->add_option("--methods", bench_flags.methods,
                    "only these methods (comma-separated)");
  bench->add_option("--models", bench_flags.models,
                    "only these benchmarks, by name (nmt-4@k40x4) or model "
                    "spec (zoo:nmt:layers=4); several after one --models, "
                    "or repeat it");
  bench
      ->add_option("--budget-samples", bench_flags.filter.budget_samples,
                   "learned placers: samples per search, replacing the "
                   "suite's budgets")
      ->check(CLI::PositiveNumber);
  bench
      ->add_option("--budget-scale", bench_flags.filter.budget_scale,
                   "learned placers: multiply the suite's sample budgets")
      ->check(CLI::PositiveNumber);
  bench
      ->add_option("--budget-seconds", bench_flags.filter.budget_seconds,
                   "learned placers: wall seconds per search (with the "
                   "sample budget, whichever ends first)")
      ->check(CLI::PositiveNumber);
  bench
      ->add_option("--seeds", bench_flags.filter.max_seeds,
                   "only the first N seeds of each method")
      ->check(CLI::PositiveNumber);

  auto* report = app.add_subcommand(
      "report", "render a bench results JSON as a self-contained HTML page");
  std::string report_input, report_output;
  report->add_option("results", report_input, "results JSON of dplace bench")
      ->required();
  report->add_option("-o,--output", report_output, "HTML page to write")
      ->required();

  std::string place_encoder;
  place->add_option("--encoder", place_encoder,
                    "mars: start from this pre-trained encoder (see `dplace "
                    "pretrain`); the same as --option encoder=FILE");

  PretrainFlags pretrain_flags;
  CLI::App* pretrain = AddPretrainCommand(&app, &pretrain_flags);

  ExecFlags exec_flags;
  const ExecCommands exec = AddExecCommands(&app, cluster, &exec_flags);

  auto* zoo = app.add_subcommand(
      "zoo",
      "the papers' benchmark models (use as --model zoo:NAME[:k=v,...])");
  zoo->require_subcommand(1);
  auto* zoo_list = zoo->add_subcommand("list", "list the models and defaults");
  bool zoo_stats = false;
  zoo_list->add_flag("--stats", zoo_stats,
                     "build every model the papers report and print a "
                     "markdown table: op counts vs the papers, FLOPs, "
                     "memory, what fits");
  auto* zoo_export = zoo->add_subcommand(
      "export", "write a model's training graph as graph JSON");
  std::string zoo_name, zoo_output;
  std::vector<std::string> zoo_params;
  zoo_export->add_option("name", zoo_name, "model name (see `dplace zoo list`)")
      ->required();
  zoo_export->add_option("--param", zoo_params,
                         "key=value overriding a default (repeatable)");
  zoo_export->add_option("-o,--output", zoo_output, "graph JSON to write")
      ->required();

  ImportFlags import_flags;
  auto* import = app.add_subcommand(
      "import",
      "import an ONNX model, expand it into its training graph and write it "
      "as graph JSON");
  import->add_option("model", import_flags.model, "the .onnx model file")
      ->required();
  import
      ->add_option("--batch", import_flags.batch,
                   "batch size: the first dim of the data inputs (default: "
                   "the model's; needed when it is symbolic)")
      ->check(CLI::PositiveNumber);
  import
      ->add_option("--optimizer", import_flags.optimizer,
                   "optimizer of the update ops: sgd, momentum, rmsprop, "
                   "adam, or adamw (BERT's Adam with weight decay) (default: "
                   "sgd)")
      ->check(CLI::IsMember({"sgd", "momentum", "rmsprop", "adam", "adamw"}));
  import->add_option("-o,--output", import_flags.output, "graph JSON to write")
      ->required();

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

  if (inspect->parsed()) return Inspect(flags, out, err);
  if (simulate->parsed()) return Simulate(flags, out, err);
  if (place->parsed()) {
    // A negative budget is as wrong as zero (negative means "not given").
    if (place->count("--budget-samples") && place_flags.budget_samples < 0) {
      place_flags.budget_samples = 0;
    }
    if (place->count("--budget-seconds") && place_flags.budget_seconds < 0) {
      place_flags.budget_seconds = 0;
    }
    place_flags.command = CommandLine(argc, argv);
    if (!place_encoder.empty()) {
      place_flags.options.push_back("encoder=" + place_encoder);
    }
    return Place(flags, place_flags, out, err);
  }
  if (bench->parsed()) {
    return Bench(bench_flags, CommandLine(argc, argv), out, err);
  }
  if (report->parsed()) return Report(report_input, report_output, out, err);
  if (pretrain->parsed()) {
    return RunPretrainCommand(pretrain_flags, LoadGraph, out, err);
  }
  if (import->parsed()) return Import(import_flags, out, err);
  if (zoo_export->parsed()) {
    return ZooExport(zoo_name, zoo_params, zoo_output, out, err);
  }
  if (zoo_list->parsed()) return zoo_stats ? ZooStats(out, err) : ZooList(out);
  if (const int code = RunExecCommands(exec, exec_flags, out, err); code >= 0) {
    return code;
  }
  if (cluster->parsed()) {
    if (show->parsed()) return ClusterShow(show_name, show_json, out, err);
    return ClusterList(out);
  }
  return kExitBadInput;
}

}  // namespace dplace
