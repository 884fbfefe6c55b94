#include <CLI/CLI.hpp>
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
  AddModelOptionFlags(import, &flags->model_options);
  import->add_option("-o,--output", flags->output, "graph JSON to write")
      ->required();
  return import;
}

// dplace import: ONNX model -> training graph JSON.
int RunImport(const ImportFlags& flags, std::ostream& out, std::ostream& err) {
  StatusOr<LoadedModel> model =
      ImportOnnxModel(flags.model, flags.model_options);
  if (!model.ok()) return Fail(err, model.status());
  const Graph& g = model->graph;
  Status written = WriteGraphJson(g, flags.output, GraphFileInfoOf(*model));
  if (!written.ok()) return Fail(err, written);
  int phase_count[3] = {0, 0, 0};
  double forward_flops = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    ++phase_count[static_cast<int>(g.phase(op))];
    if (g.phase(op) == Phase::kForward) forward_flops += g.flops(op);
  }
  out << "imported " << flags.model << " as graph " << g.name()
      << ", expanded for training with " << model->optimizer << "\n"
      << DescribeModel(*model) << "\n"
      << "ops:             " << g.num_ops() << " (forward " << phase_count[0]
      << ", backward " << phase_count[1] << ", update " << phase_count[2]
      << ")\n"
      << "FLOPs per step:  " << Format("%.4g", g.total_flops()) << " (forward "
      << Format("%.4g", forward_flops) << ")\n"
      << "parameter bytes: " << FormatBytesScaled(g.total_persistent_bytes())
      << " (weights and optimizer slots)\n";
  PrintWarnings(model->warnings, err);
  out << "wrote " << flags.output << "\n";
  return kExitOk;
}

}  // namespace dplace
