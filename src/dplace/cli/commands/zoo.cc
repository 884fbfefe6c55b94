#include "dplace/zoo/zoo.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <utility>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/cost/cost_model.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/graph_json.h"
#include "dplace/report/markdown.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

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
  MarkdownTable table({{"model"},
                       {"ops", Align::kRight},
                       {"paper ops", Align::kRight},
                       {"vs paper", Align::kRight},
                       {"GFLOPs / step", Align::kRight},
                       {"parameters", Align::kRight},
                       {"peak on one GPU", Align::kRight},
                       {"fits one"},
                       {"expert placement"},
                       {"build", Align::kRight}});
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
      table.AddRow(
          {"`" + spec_text + "`", std::to_string(g.num_ops()),
           paper_ops ? std::to_string(paper_ops) : "-",
           paper_ops ? Format("%+.0f%%",
                              100.0 * (g.num_ops() - paper_ops) / paper_ops)
                     : "-",
           Format("%.1f", g.total_flops() / 1e9),
           FormatBytesScaled(g.total_persistent_bytes()),
           FormatBytesScaled(peak), fits.empty() ? "none" : fits,
           m.paper_preset + ": " +
               (expert.feasible ? Format("%.3f s", expert.step_time) : "OOM"),
           Format("%.0f ms", build * 1e3)});
    }
  }
  out << table.ToString();
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

}  // namespace

CLI::App* AddZooCommand(CLI::App* parent) {
  auto* zoo = parent->add_subcommand(
      "zoo",
      "the papers' benchmark models (use as --model zoo:NAME[:k=v,...])");
  zoo->require_subcommand(1);
  return zoo;
}

CLI::App* AddZooListCommand(CLI::App* zoo, ZooListFlags* flags) {
  auto* zoo_list = zoo->add_subcommand("list", "list the models and defaults");
  zoo_list->add_flag("--stats", flags->stats,
                     "build every model the papers report and print a "
                     "markdown table: op counts vs the papers, FLOPs, "
                     "memory, what fits");
  return zoo_list;
}

CLI::App* AddZooExportCommand(CLI::App* zoo, ZooExportFlags* flags) {
  auto* zoo_export = zoo->add_subcommand(
      "export", "write a model's training graph as graph JSON");
  zoo_export
      ->add_option("name", flags->name, "model name (see `dplace zoo list`)")
      ->required();
  zoo_export->add_option("--param", flags->params,
                         "key=value overriding a default (repeatable)");
  zoo_export->add_option("-o,--output", flags->output, "graph JSON to write")
      ->required();

  return zoo_export;
}

int RunZooList(const ZooListFlags& flags, std::ostream& out,
               std::ostream& err) {
  return flags.stats ? ZooStats(out, err) : ZooList(out);
}

int RunZooExport(const ZooExportFlags& flags, std::ostream& out,
                 std::ostream& err) {
  return ZooExport(flags.name, flags.params, flags.output, out, err);
}

}  // namespace dplace
