#include "dplace/model/load_model.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>

#include "dplace/graph/random_graph.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/io/tarnawski_json.h"
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

// The first 4 KiB of the file at `path` (empty when it cannot be read: the
// reader that follows reports why), to tell its format.
std::string FileHead(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  return head;
}

// A Tarnawski et al. input: its graph, op times and machine; with
// `expert_path`, the repository's human-expert split as the expert (its
// i-th accelerator on the cluster's i-th GPU, the rest on the first CPU).
StatusOr<LoadedModel> LoadTarnawski(const std::string& text,
                                    const std::string& path,
                                    const std::string& expert_path) {
  std::string name = path.substr(path.rfind('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
    name.resize(name.size() - 5);
  }
  DPLACE_ASSIGN_OR_RETURN(TarnawskiProblem p,
                          ParseTarnawskiJson(text, path, name));
  std::function<Placement(const Graph&, const Cluster&)> expert;
  if (!expert_path.empty()) {
    DPLACE_ASSIGN_OR_RETURN(Placement split,
                            ReadTarnawskiSplit(expert_path, p));
    // As accelerator indexes (-1: the CPU), for any cluster.
    const Cluster& own = p.cluster;
    std::vector<int> index(split.size(), -1);
    const std::vector<DeviceId> gpus = own.DevicesOfKind(DeviceKind::kGpu);
    for (size_t op = 0; op < split.size(); ++op) {
      for (size_t i = 0; i < gpus.size(); ++i) {
        if (gpus[i] == split[op]) index[op] = static_cast<int>(i);
      }
    }
    expert = [index](const Graph& g, const Cluster& c) {
      const std::vector<DeviceId> gpus = c.DevicesOfKind(DeviceKind::kGpu);
      const std::vector<DeviceId> cpus = c.DevicesOfKind(DeviceKind::kCpu);
      Placement placement(g.num_ops(), cpus.empty() ? 0 : cpus[0]);
      for (size_t op = 0; op < index.size(); ++op) {
        if (index[op] >= 0 && index[op] < static_cast<int>(gpus.size())) {
          placement[op] = gpus[index[op]];
        }
      }
      return placement;
    };
  }
  LoadedModel model{std::move(p.graph), std::move(expert), {}, {}, {}};
  model.profile = std::move(p.profile);
  model.cluster = std::move(p.cluster);
  return model;
}

// tarnawski:FILE[,expert=SPLIT].
StatusOr<LoadedModel> LoadTarnawskiSpec(const std::string& spec) {
  std::string path = spec.substr(std::string("tarnawski:").size());
  std::string expert;
  const size_t comma = path.find(",expert=");
  if (comma != std::string::npos) {
    expert = path.substr(comma + std::string(",expert=").size());
    path.resize(comma);
  }
  if (path.empty()) {
    return InvalidArgumentError("--model " + spec +
                                ": expected tarnawski:FILE[,expert=SPLIT]");
  }
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return LoadTarnawski(text, path, expert);
}

}  // namespace

StatusOr<Cluster> ClusterFor(const LoadedModel& model,
                             const std::string& name_or_path) {
  if (!name_or_path.empty()) return LoadCluster(name_or_path);
  if (model.cluster) return *model.cluster;
  return InvalidArgumentError(
      "give --cluster (a preset, see `dplace cluster list`, or a cluster "
      ".json): only a Tarnawski et al. input brings its own machine");
}

StatusOr<ProfileTable> ProfileFor(const LoadedModel& model,
                                  const std::string& path) {
  DPLACE_ASSIGN_OR_RETURN(ProfileTable file, LoadProfile(path));
  ProfileTable merged = model.profile;
  for (auto& [name, times] : file.by_name) {
    for (auto& [kind, seconds] : times) merged.by_name[name][kind] = seconds;
  }
  for (auto& [type, times] : file.by_type) {
    for (auto& [kind, seconds] : times) merged.by_type[type][kind] = seconds;
  }
  return merged;
}

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
                       /*warnings=*/{},
                       /*profile=*/{},
                       /*cluster=*/{}};
  }
  if (spec.rfind("tarnawski:", 0) == 0) return LoadTarnawskiSpec(spec);
  std::vector<std::string> warnings;
  if (spec.rfind("random:", 0) == 0 || IsOnnxPath(spec)) {
    DPLACE_ASSIGN_OR_RETURN(
        Graph graph,
        spec.rfind("random:", 0) == 0
            ? MakeRandomModel(spec)
            : ImportOnnxTrainingGraph(spec, {}, Optimizer::kSgd, &warnings));
    return LoadedModel{std::move(graph), nullptr, std::move(warnings), {}, {}};
  }
  if (LooksLikeTarnawskiJson(FileHead(spec))) {
    DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(spec));
    return LoadTarnawski(text, spec, "");
  }
  DPLACE_ASSIGN_OR_RETURN(Graph graph, ReadGraphJson(spec));
  return LoadedModel{std::move(graph), nullptr, std::move(warnings), {}, {}};
}

}  // namespace dplace
