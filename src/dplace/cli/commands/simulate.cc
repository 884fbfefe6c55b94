#include <CLI/CLI.hpp>
#include <chrono>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/cost/cost_model.h"
#include "dplace/io/chrome_trace.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/placement_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/model/load_model.h"
#include "dplace/report/what_next.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/format.h"

namespace dplace {

CLI::App* AddSimulateCommand(CLI::App* parent, SimulateFlags* flags) {
  auto* simulate = parent->add_subcommand(
      "simulate",
      "simulate one training step of a placement: step time, feasibility, "
      "per-device load and peak memory, lower bounds");
  AddGraphFlags(simulate, &flags->graph);
  AddModelOptionFlags(simulate, &flags->model_options);
  simulate->add_option("--cluster", flags->cluster,
                       "preset name (see `dplace cluster list`) or cluster "
                       ".json; a Tarnawski et al. input brings its own");
  simulate->add_option("--placement", flags->placement, "placement JSON file")
      ->required();
  simulate->add_option("--trace", flags->trace,
                       "write a Chrome trace (open in Perfetto)");
  simulate->add_option("--profile", flags->profile,
                       "profile JSON of measured op times (overrides the "
                       "roofline cost model)");
  return simulate;
}

int RunSimulate(const SimulateFlags& flags, std::ostream& out,
                std::ostream& err) {
  StatusOr<std::vector<OutputLock>> claims =
      ClaimOutputs({{"--trace", flags.trace}});
  if (!claims.ok()) return Fail(err, claims.status());
  StatusOr<LoadedModel> model = LoadModel(flags.graph, flags.model_options);
  if (!model.ok()) return Fail(err, model.status());
  PrintWarnings(model->warnings, err);
  const Graph* graph = &model->graph;
  StatusOr<Cluster> cluster = ClusterFor(*model, flags.cluster);
  if (!cluster.ok()) return Fail(err, cluster.status());
  StatusOr<Placement> placement =
      ReadPlacementJson(flags.placement, *graph, *cluster);
  if (!placement.ok()) return Fail(err, placement.status());
  StatusOr<ProfileTable> profile = ProfileFor(*model, flags.profile);
  if (!profile.ok()) return Fail(err, profile.status());

  const auto start = std::chrono::steady_clock::now();
  const CostModel cost(*graph, *cluster, *profile);
  Simulator simulator(cost);
  SimOptions options;
  options.record_timeline = true;  // For the trace and the step chain.
  StatusOr<SimResult> result = simulator.Simulate(*placement, options);
  if (!result.ok()) return Fail(err, result.status());
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  out << "graph " << graph->name() << " (" << graph->num_ops() << " ops, hash "
      << graph->hash() << ") on cluster " << cluster->name() << " ("
      << cluster->num_devices() << " devices)\n"
      << DescribeModel(*model) << "\n";
  PrintSimResult(*cluster, *result, out);
  out << DescribeStepChain(TraceStepChain(cost, *placement, *result)) << "\n";
  out << "simulated in " << Format("%.3f", elapsed * 1e3) << " ms\n";
  if (!flags.trace.empty()) {
    Status s = WriteChromeTrace(*graph, *cluster, *result, flags.trace);
    if (!s.ok()) return Fail(err, s);
    out << "trace: " << flags.trace << " (open in Perfetto)\n";
  }
  return result->feasible ? kExitOk : kExitInfeasible;
}

}  // namespace dplace
