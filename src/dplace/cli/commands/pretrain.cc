#include <CLI/CLI.hpp>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/method/method.h"
#include "dplace/rl/agents/mars/mars.h"
#include "dplace/util/format.h"

namespace dplace {

CLI::App* AddPretrainCommand(CLI::App* parent, PretrainFlags* flags) {
  CLI::App* cmd = parent->add_subcommand(
      "pretrain",
      "pre-train Mars's graph encoder self-supervised (Deep Graph Infomax) "
      "on a model's group graph and save it for `place --method mars "
      "--encoder FILE`");
  cmd->add_option("--model", flags->model,
                  "model: zoo:NAME[:key=value,...], a graph .json file, or "
                  "an .onnx model")
      ->required();
  AddModelOptionFlags(cmd, &flags->model_options);
  cmd->add_option("-o,--output", flags->output, "encoder file to write")
      ->required();
  cmd->add_option("--steps", flags->steps,
                  "pre-training steps (default: mars's pretrain_steps, 200)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", flags->seed,
                  "seed (default: 1); `place --seed` with the same seed "
                  "makes mars pre-train the same encoder by itself");
  cmd->add_option("--option", flags->options,
                  "key=value option of method mars that shapes the encoder "
                  "(grouping, encoder_hidden, encoder_layers, "
                  "pretrain_learning_rate, ...; repeatable); use the same "
                  "with place");
  return cmd;
}

int RunPretrain(const PretrainFlags& flags, std::ostream& out,
                std::ostream& err) {
  StatusOr<Graph> graph = LoadGraph(flags.model, flags.model_options, &err);
  if (!graph.ok()) return Fail(err, graph.status());
  std::vector<std::string> items = flags.options;
  if (flags.steps >= 0) {
    for (const std::string& item : items) {
      if (item.rfind("pretrain_steps=", 0) == 0) {
        return Fail(err,
                    InvalidArgumentError(
                        "--steps and --option pretrain_steps=... both given"));
      }
    }
    items.push_back("pretrain_steps=" + std::to_string(flags.steps));
  }
  StatusOr<MethodOptions> options = MethodOptions::Parse(items);
  if (!options.ok()) return Fail(err, options.status());
  PlacementProblem problem;
  problem.graph = &*graph;
  problem.seed = flags.seed;
  StatusOr<PretrainSummary> summary =
      PretrainMarsEncoder(problem, *options, flags.output);
  if (!summary.ok()) return Fail(err, summary.status());
  out << "graph " << graph->name() << " (" << graph->num_ops() << " ops, hash "
      << graph->hash() << "): " << summary->num_groups << " groups\n"
      << "pre-trained " << summary->steps << " steps in "
      << Format("%.3f", summary->seconds) << " s: loss "
      << Format("%.4f", summary->first_loss) << " -> "
      << Format("%.4f", summary->final_loss) << ", discriminator accuracy "
      << Format("%.3f", summary->accuracy) << "\n"
      << "encoder: " << flags.output << "\n";
  return kExitOk;
}

}  // namespace dplace
