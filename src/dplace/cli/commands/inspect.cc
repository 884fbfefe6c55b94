#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
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

}  // namespace dplace
