#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/graph/parameters.h"
#include "dplace/graph/training.h"
#include "dplace/util/format.h"

namespace dplace {

CLI::App* AddInspectCommand(CLI::App* parent, InspectFlags* flags) {
  auto* inspect = parent->add_subcommand(
      "inspect", "counts of a graph: ops per phase, edges, FLOPs, bytes, hash");
  AddGraphFlags(inspect, &flags->graph);
  AddModelOptionFlags(inspect, &flags->model_options);
  inspect->add_flag("--json", flags->json,
                    "print the counts as one JSON object (docs/formats.md)");
  return inspect;
}

namespace {

// What inspect counts in a graph.
struct GraphCounts {
  int phase[3] = {0, 0, 0};
  int control_edges = 0;
  int64_t activation_bytes = 0;
  double forward_flops = 0;
  ParameterCounts parameters;
  std::vector<std::pair<int, std::string>> types;  // (-count, type), sorted.
};

GraphCounts CountGraph(const Graph& g) {
  GraphCounts c;
  for (EdgeId e = 0; e < g.num_edges(); ++e) c.control_edges += g.is_control(e);
  std::map<std::string, int> type_count;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    ++c.phase[static_cast<int>(g.phase(op))];
    ++type_count[g.op_type(op)];
    if (g.phase(op) == Phase::kForward) c.forward_flops += g.flops(op);
  }
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    c.activation_bytes += g.tensor_bytes(t);
  }
  c.parameters = CountParameters(g);
  for (const auto& [type, count] : type_count) {
    c.types.push_back({-count, type});
  }
  std::sort(c.types.begin(), c.types.end());
  return c;
}

nlohmann::json TallyJson(const ParameterCounts::Tally& t) {
  return {{"tensors", t.tensors}, {"elements", t.elements}, {"bytes", t.bytes}};
}

// The "dplace.inspect" document (docs/formats.md).
std::string InspectJson(const LoadedModel& model, const GraphCounts& c) {
  const Graph& g = model.graph;
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [count, type] : c.types) types[type] = -count;
  nlohmann::json j = {
      {"format", "dplace.inspect"},
      {"version", 1},
      {"graph", g.name()},
      {"hash", g.hash()},
      {"batch", model.batch},
      {"optimizer", model.optimizer},
      {"ops",
       {{"total", g.num_ops()},
        {"forward", c.phase[0]},
        {"backward", c.phase[1]},
        {"update", c.phase[2]}}},
      {"edges",
       {{"total", g.num_edges()},
        {"data", g.num_edges() - c.control_edges},
        {"control", c.control_edges}}},
      {"tensors", g.num_tensors()},
      {"parameters",
       {{"trained", TallyJson(c.parameters.trained)},
        {"untrained", TallyJson(c.parameters.untrained)}}},
      {"flops", {{"forward", c.forward_flops}, {"training", g.total_flops()}}},
      {"persistent_bytes", g.total_persistent_bytes()},
      {"activation_bytes", c.activation_bytes},
      {"op_types", types},
      {"warnings", model.warnings}};
  return j.dump(1) + "\n";
}

std::string ParametersLine(const GraphCounts& c) {
  const ParameterCounts& p = c.parameters;
  if (c.phase[2] == 0) {
    return FormatCount(p.untrained.elements) + " in " +
           std::to_string(p.untrained.tensors) +
           " tensors (a forward graph: no updates)";
  }
  std::string line = FormatCount(p.trained.elements) + " trained in " +
                     std::to_string(p.trained.tensors) + " tensors (" +
                     FormatBytesScaled(p.trained.bytes) +
                     "), each with its update";
  if (p.untrained.tensors > 0) {
    line += "; " + FormatCount(p.untrained.elements) + " more in " +
            std::to_string(p.untrained.tensors) +
            " tensors never trained (buffers, moving statistics)";
  }
  return line;
}

}  // namespace

int RunInspect(const InspectFlags& flags, std::ostream& out,
               std::ostream& err) {
  StatusOr<LoadedModel> model = LoadModel(flags.graph, flags.model_options);
  if (!model.ok()) return Fail(err, model.status());
  PrintWarnings(model->warnings, err);
  const Graph& g = model->graph;
  const GraphCounts c = CountGraph(g);
  if (flags.json) {
    out << InspectJson(*model, c);
    return kExitOk;
  }
  const double total = g.total_flops();
  out << "graph:            " << g.name() << "\n"
      << "hash:             " << g.hash() << "\n"
      << "batch:            "
      << (model->batch > 0 ? std::to_string(model->batch)
                           : std::string("unknown"))
      << (model->optimizer.empty() ? std::string()
                                   : ", updates by " + model->optimizer)
      << "\n"
      << "ops:              " << g.num_ops() << " (forward " << c.phase[0]
      << ", backward " << c.phase[1] << ", update " << c.phase[2] << ")\n"
      << "edges:            " << g.num_edges() << " (data "
      << g.num_edges() - c.control_edges << ", control " << c.control_edges
      << ")\n"
      << "tensors:          " << g.num_tensors() << "\n"
      << "parameters:       " << ParametersLine(c) << "\n"
      << "forward FLOPs:    " << Format("%.4g", c.forward_flops) << "\n"
      << "training FLOPs:   " << Format("%.4g", total)
      << (c.forward_flops > 0 && c.phase[1] + c.phase[2] > 0
              ? " (" + Format("%.2f", total / c.forward_flops) +
                    "x forward: forward, backward and update)"
              : std::string(" (forward only)"))
      << "\n"
      << "parameter bytes:  " << FormatBytesScaled(g.total_persistent_bytes())
      << " (persistent: weights and optimizer slots)\n"
      << "activation bytes: " << FormatBytesScaled(c.activation_bytes)
      << " (all op outputs)\n";
  out << "op types:        ";
  for (size_t i = 0; i < c.types.size() && i < 8; ++i) {
    out << " " << c.types[i].second << " " << -c.types[i].first;
  }
  if (c.types.size() > 8) out << " (+" << c.types.size() - 8 << " more)";
  out << "\n";
  return kExitOk;
}

}  // namespace dplace
