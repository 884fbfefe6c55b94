#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/graph/training.h"
#include "dplace/util/format.h"

namespace dplace {

CLI::App* AddInspectCommand(CLI::App* parent, InspectFlags* flags) {
  auto* inspect = parent->add_subcommand(
      "inspect", "counts of a graph: ops per phase, edges, FLOPs, bytes, hash");
  AddGraphFlags(inspect, &flags->graph);
  return inspect;
}

int RunInspect(const InspectFlags& flags, std::ostream& out,
               std::ostream& err) {
  StatusOr<Graph> graph = LoadGraph(flags.graph, &err);
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
  // Trained parameters: variables whose colocation group has an update op
  // (the expansion colocates each update with its variable).
  std::set<std::string> updated;
  double forward_flops = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (g.phase(op) == Phase::kUpdate) updated.insert(g.colocation_group(op));
    if (g.phase(op) == Phase::kForward) forward_flops += g.flops(op);
  }
  int variables = 0, trained = 0;
  int64_t trained_bytes = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (g.op_type(op) != kParameterOpType) continue;
    ++variables;
    const std::string& group = g.colocation_group(op);
    if (!group.empty() && updated.count(group)) {
      ++trained;
      trained_bytes += g.tensor_bytes(g.output(op, 0));
    }
  }
  const std::string parameters =
      phase_count[2] > 0
          ? std::to_string(trained) + " trained (" +
                FormatBytesScaled(trained_bytes) + "), each with its update" +
                (variables > trained
                     ? "; " + std::to_string(variables - trained) +
                           " more variables are never trained (buffers, moving "
                           "statistics)"
                     : std::string())
          : std::to_string(variables) + " (a forward graph: no updates)";
  const double total = g.total_flops();
  out << "graph:            " << g.name() << "\n"
      << "hash:             " << g.hash() << "\n"
      << "ops:              " << g.num_ops() << " (forward " << phase_count[0]
      << ", backward " << phase_count[1] << ", update " << phase_count[2]
      << ")\n"
      << "edges:            " << g.num_edges() << " (data "
      << g.num_edges() - control << ", control " << control << ")\n"
      << "tensors:          " << g.num_tensors() << "\n"
      << "parameters:       " << parameters << "\n"
      << "forward FLOPs:    " << Format("%.4g", forward_flops) << "\n"
      << "training FLOPs:   " << Format("%.4g", total)
      << (forward_flops > 0 && phase_count[1] + phase_count[2] > 0
              ? " (" + Format("%.2f", total / forward_flops) +
                    "x forward: forward, backward and update)"
              : std::string(" (forward only)"))
      << "\n"
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

}  // namespace dplace
