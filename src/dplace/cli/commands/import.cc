#include <CLI/CLI.hpp>
#include <limits>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/graph/training.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/onnx/onnx_import.h"
#include "dplace/model/load_model.h"
#include "dplace/util/format.h"

namespace dplace {

CLI::App* AddImportCommand(CLI::App* parent, ImportFlags* flags) {
  auto* import = parent->add_subcommand(
      "import",
      "import an ONNX model, expand it into its training graph and write it "
      "as graph JSON");
  import->add_option("model", flags->model, "the .onnx model file")->required();
  import
      ->add_option("--batch", flags->batch,
                   "batch size: the first dim of the data inputs (default: "
                   "the model's; needed when it is symbolic)")
      ->check(WholeNumber(1, std::numeric_limits<int64_t>::max()));
  import
      ->add_option("--optimizer", flags->optimizer,
                   "optimizer of the update ops: sgd, momentum, rmsprop, "
                   "adam, or adamw (BERT's Adam with weight decay) (default: "
                   "sgd)")
      ->check(CLI::IsMember({"sgd", "momentum", "rmsprop", "adam", "adamw"}));
  import->add_option("-o,--output", flags->output, "graph JSON to write")
      ->required();
  return import;
}

// dplace import: ONNX model -> training graph JSON.
int RunImport(const ImportFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<std::vector<OutputLock>> claims =
      ClaimOutputs({{"-o", flags.output}});
  if (!claims.ok()) return Fail(err, claims.status());
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
  PrintWarnings(warnings, err);
  out << "wrote " << flags.output << "\n";
  return kExitOk;
}

}  // namespace dplace
