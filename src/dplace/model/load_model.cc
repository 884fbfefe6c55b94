#include "dplace/model/load_model.h"

#include <climits>
#include <cstdlib>
#include <map>

#include "dplace/graph/random_graph.h"
#include "dplace/io/graph_json.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

bool IsOnnxPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

// random:ops=N[,seed=K,width=W,reach=R,persistent=B,tensor=B]: a random
// layered DAG (random_graph.h); persistent and tensor bound each op's
// persistent and output bytes, so large graphs can still fit a cluster.
StatusOr<Graph> MakeRandomModel(const std::string& spec) {
  const std::string params = spec.substr(std::string("random:").size());
  RandomGraphOptions defaults;
  const std::map<std::string, int64_t> limits = {
      {"ops", 10'000'000}, {"seed", INT64_MAX},       {"width", 1'000'000},
      {"reach", 1000},     {"persistent", 1LL << 40}, {"tensor", 1LL << 40}};
  std::map<std::string, int64_t> values = {
      {"ops", 1000},
      {"seed", 1},
      {"width", defaults.layer_width},
      {"reach", defaults.max_reach},
      {"persistent", defaults.max_persistent_bytes},
      {"tensor", defaults.max_tensor_bytes}};
  size_t begin = 0;
  while (begin < params.size()) {
    size_t end = params.find(',', begin);
    if (end == std::string::npos) end = params.size();
    const std::string item = params.substr(begin, end - begin);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (eq == std::string::npos || !limits.count(key)) {
      return InvalidArgumentError(
          "--model " + spec + ": expected random:key=value,... with keys " +
          "ops, seed, width, reach, persistent, tensor; got \"" + item + "\"");
    }
    const std::string text = item.substr(eq + 1);
    char* rest = nullptr;
    const long long value = std::strtoll(text.c_str(), &rest, 10);
    if (text.empty() || *rest != '\0' || value < 1 || value > limits.at(key)) {
      return InvalidArgumentError(
          "--model " + spec + ": " + key + ": expected an integer in [1, " +
          std::to_string(limits.at(key)) + "], got \"" + text + "\"");
    }
    values[key] = value;
    begin = end + 1;
  }
  RandomGraphOptions options;
  options.num_ops = static_cast<int>(values["ops"]);
  options.seed = static_cast<uint64_t>(values["seed"]);
  options.layer_width = static_cast<int>(values["width"]);
  options.max_reach = static_cast<int>(values["reach"]);
  options.max_persistent_bytes = values["persistent"];
  options.max_tensor_bytes = values["tensor"];
  return MakeRandomLayeredGraph(options);
}

}  // namespace

StatusOr<Graph> ImportOnnxTrainingGraph(const std::string& path,
                                        const OnnxImportOptions& options,
                                        Optimizer optimizer,
                                        std::vector<std::string>* warnings) {
  DPLACE_ASSIGN_OR_RETURN(OnnxImport imported, ImportOnnxFile(path, options));
  if (warnings) *warnings = std::move(imported.warnings);
  TrainingOptions training_options;
  training_options.optimizer = optimizer;
  StatusOr<Graph> training =
      ExpandForTraining(imported.forward, training_options);
  if (!training.ok()) return training.status().WithPrefix(path);
  return training;
}

PlacementProblem ProblemOf(const LoadedModel& model, const CostModel& cost,
                           uint64_t seed) {
  PlacementProblem problem;
  problem.graph = &cost.graph();
  problem.cluster = &cost.cluster();
  problem.cost = &cost;
  problem.seed = seed;
  if (model.expert) {
    problem.expert = [&model, &cost] {
      return model.expert(cost.graph(), cost.cluster());
    };
  }
  return problem;
}

StatusOr<LoadedModel> LoadModel(const std::string& spec) {
  if (spec.rfind("zoo:", 0) == 0) {
    StatusOr<ZooSpec> zoo = ParseZooSpec(spec.substr(4));
    StatusOr<Graph> graph =
        zoo.ok() ? MakeZooModel(*zoo) : StatusOr<Graph>(zoo.status());
    if (!graph.ok()) return graph.status().WithPrefix("--model " + spec);
    const ZooSpec family = *zoo;
    return LoadedModel{std::move(graph).value(),
                       [family](const Graph& g, const Cluster& c) {
                         return family.model->expert(g, c, family.params);
                       },
                       /*warnings=*/{}};
  }
  std::vector<std::string> warnings;
  DPLACE_ASSIGN_OR_RETURN(
      Graph graph,
      spec.rfind("random:", 0) == 0 ? MakeRandomModel(spec)
      : IsOnnxPath(spec)
          ? ImportOnnxTrainingGraph(spec, {}, Optimizer::kSgd, &warnings)
          : ReadGraphJson(spec));
  return LoadedModel{std::move(graph), nullptr, std::move(warnings)};
}

}  // namespace dplace
