#include "dplace/cli/cli_util.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>

#include "dplace/cli/cli.h"
#include "dplace/graph/parameters.h"
#include "dplace/model/load_model.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

std::string Seconds(double s) { return Format("%.6f s", s); }

// A number `text` compared with `min` by `holds`; `allowed` says what is.
CLI::Validator NumberCheck(std::function<bool(double)> holds,
                           const std::string& allowed) {
  return CLI::Validator(
      [holds, allowed](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value) ||
            !holds(value)) {
          return text + " is not allowed: expected " + allowed;
        }
        return "";
      },
      "");
}

}  // namespace

CLI::Validator WholeNumber(uint64_t min, uint64_t max) {
  const std::string allowed = "a whole number from " + std::to_string(min) +
                              " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, allowed](std::string& text) -> std::string {
        const bool digits =
            !text.empty() && text.size() <= 20 &&
            std::all_of(text.begin(), text.end(),
                        [](unsigned char c) { return std::isdigit(c); });
        errno = 0;
        const unsigned long long value =
            digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (!digits || errno == ERANGE || value < min || value > max) {
          return text + " is not allowed: expected " + allowed;
        }
        return "";
      },
      "");
}

CLI::Validator NumberAbove(double min) {
  return NumberCheck([min](double v) { return v > min; },
                     "a number > " + Format("%g", min));
}

CLI::Validator NumberAtLeast(double min) {
  return NumberCheck([min](double v) { return v >= min; },
                     "a number >= " + Format("%g", min));
}

std::string PadRight(std::string s, size_t width) {
  // A value wider than its column still gets a space before the next one.
  s.resize(std::max(width, s.size() + 1), ' ');
  return s;
}

StatusOr<std::vector<OutputLock>> ClaimOutputs(const OutputFlags& outputs) {
  std::vector<OutputLock> locks;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path.empty()) continue;
    for (size_t j = 0; j < i; ++j) {
      if (outputs[j].second == path) {
        return InvalidArgumentError(outputs[j].first + " and " + flag +
                                    " both name " + path +
                                    "; give each output its own file");
      }
    }
    StatusOr<OutputLock> lock = OutputLock::Acquire(path);
    if (!lock.ok()) {
      return InvalidArgumentError(flag + " " + lock.status().message());
    }
    locks.push_back(std::move(lock).value());
  }
  return locks;
}

StatusOr<Graph> LoadGraph(const std::string& spec, const ModelOptions& options,
                          std::ostream* warnings) {
  DPLACE_ASSIGN_OR_RETURN(LoadedModel model, LoadModel(spec, options));
  if (warnings) PrintWarnings(model.warnings, *warnings);
  return std::move(model.graph);
}

void AddModelOptionFlags(CLI::App* cmd, ModelOptions* options) {
  cmd->add_option("--batch", options->batch,
                  "batch size of an ONNX or zoo model (an ONNX model's "
                  "first dim of its data inputs; default: the model's, "
                  "needed when it is symbolic)")
      ->check(WholeNumber(1, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--optimizer", options->optimizer,
                  "optimizer of the update ops of an ONNX or zoo model: "
                  "sgd, momentum, rmsprop, adam, or adamw (BERT's Adam with "
                  "weight decay) (default: sgd for ONNX, the paper's for "
                  "the zoo)")
      ->check(CLI::IsMember({"sgd", "momentum", "rmsprop", "adam", "adamw"}));
  cmd->add_flag("--keep-merged-parameters", options->keep_merged_parameters,
                "ONNX: read parameters the exporter merged (equal values "
                "behind Identity nodes) as one, as the file has them "
                "(default: each is a parameter of its own, as in the model; "
                "docs/onnx.md)");
}

std::string DescribeModel(const LoadedModel& model) {
  const ParameterCounts p = CountParameters(model.graph);
  std::string line =
      "model: batch " +
      (model.batch > 0 ? std::to_string(model.batch) : std::string("unknown"));
  if (!model.optimizer.empty()) line += ", " + model.optimizer + " updates";
  const ParameterCounts::Tally& trained =
      p.trained.tensors > 0 ? p.trained : p.untrained;
  line += "; " + FormatCount(trained.elements) + " parameters in " +
          std::to_string(trained.tensors) + " tensors (" +
          FormatBytesScaled(static_cast<double>(trained.bytes)) + ")";
  if (p.trained.tensors == 0) {
    line += ", none trained (a forward graph)";
  } else if (p.untrained.tensors > 0) {
    line += ", and " + FormatCount(p.untrained.elements) + " in " +
            std::to_string(p.untrained.tensors) +
            " untrained buffers (running statistics, masks)";
  }
  return line;
}

void PrintWarnings(const std::vector<std::string>& warnings,
                   std::ostream& err) {
  for (const std::string& w : warnings) err << "dplace: warning: " << w << "\n";
}

void AddGraphFlags(CLI::App* cmd, std::string* spec, bool required) {
  auto* graph = cmd->add_option("--graph", *spec, "graph JSON file");
  auto* model = cmd->add_option(
      "--model", *spec,
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
  const StepLowerBound bound = ProblemLowerBound(b);
  const double whole = WholeGroupsLowerBound(b).seconds;
  out << "lower bound: " << DescribeLowerBound(bound);
  const std::string gap = DescribeGap(r.step_time, bound);
  if (r.feasible && !gap.empty()) out << "; " << gap;
  out << "\n"
      << "  any placement: critical path " << Seconds(b.critical_path)
      << ", total work " << Seconds(b.total_work)
      << "; any that fits: forced-transfer path " << Seconds(b.memory_path)
      << (whole > b.memory_path
              ? " (" + Seconds(whole) +
                    " keeping colocation groups whole, as this placement does)"
              : "")
      << (b.proven > 0 ? ", MILP bound " + Seconds(b.proven) : "")
      << "; this placement: device load " << Seconds(b.device_load)
      << ", link volume " << Seconds(b.link_volume) << ", placed critical path "
      << Seconds(b.placed_critical_path) << "\n";
}

void PrintSearchProgress(const SearchProgress& p, std::ostream& err) {
  // Padded, so that a shorter line covers a longer one before it.
  constexpr size_t kWidth = 64;
  if (!p.stage.empty()) {
    err << "\r"
        << PadRight(p.stage + ", " + Format("%.1f s", p.wall_seconds), kWidth)
        << std::flush;
    return;
  }
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
                                : std::string("none feasible yet"));
  err << PadRight(line, kWidth + 1) << std::flush;
}

// The command line, for the record in reports.
std::string CommandLine(int argc, const char* const* argv) {
  return CommandLine(std::vector<std::string>(argv + 1, argv + argc));
}

std::string CommandLine(const std::vector<std::string>& args) {
  std::string line = "dplace";
  for (const std::string& arg : args) {
    const bool plain = arg.find_first_of(" \"'$\\") == std::string::npos;
    line += " " + (plain ? arg : "'" + arg + "'");
  }
  return line;
}

}  // namespace dplace
