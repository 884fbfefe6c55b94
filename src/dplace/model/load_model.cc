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

// --optimizer's value, or `fallback` when it is empty.
StatusOr<Optimizer> OptimizerOf(const std::string& name,
                                const std::string& fallback) {
  const std::string& text = name.empty() ? fallback : name;
  std::optional<Optimizer> optimizer = ParseOptimizer(text);
  if (!optimizer) {
    return InvalidArgumentError("--optimizer " + text +
                                ": expected sgd, momentum, rmsprop, adam or "
                                "adamw");
  }
  return *optimizer;
}

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
  LoadedModel model{std::move(p.graph),   std::move(expert),
                    /*warnings=*/{},      std::move(p.profile),
                    std::move(p.cluster),
                    /*batch=*/0,
                    /*optimizer=*/{}};
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

// A zoo model (NAME[:k=v,...]) with --batch and --optimizer as its batch
// and optimizer parameters.
StatusOr<LoadedModel> LoadZooModel(const std::string& text,
                                   const ModelOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(ZooSpec zoo, ParseZooSpec(text));
  std::map<std::string, std::string> values = zoo.params.values();
  if (options.keep_merged_parameters) {
    return InvalidArgumentError("--keep-merged-parameters is for ONNX models");
  }
  const std::pair<const char*, std::string> overrides[] = {
      {"batch", options.batch > 0 ? std::to_string(options.batch) : ""},
      {"optimizer", options.optimizer}};
  for (const auto& [key, value] : overrides) {
    if (value.empty()) continue;
    if (!values.count(key)) {
      return InvalidArgumentError(std::string("--") + key + " " + value +
                                  ": zoo model " + zoo.model->name +
                                  " has no " + key + " parameter");
    }
    values[key] = value;
  }
  zoo.params = ZooParams(values);
  DPLACE_ASSIGN_OR_RETURN(Graph graph, MakeZooModel(zoo));
  const ZooSpec family = zoo;
  LoadedModel model{std::move(graph),
                    [family](const Graph& g, const Cluster& c) {
                      return family.model->expert(g, c, family.params);
                    },
                    /*warnings=*/{},
                    /*profile=*/{},
                    /*cluster=*/{},
                    /*batch=*/0,
                    values.at("optimizer")};
  if (values.count("batch")) model.batch = zoo.params.Int("batch");
  return model;
}

// --batch, --optimizer and --keep-merged-parameters apply to ONNX and zoo
// models only.
Status CheckNoModelOptions(const std::string& spec,
                           const ModelOptions& options) {
  const bool random = spec.rfind("random:", 0) == 0;
  const bool tarnawski = spec.rfind("tarnawski:", 0) == 0 ||
                         (!random && LooksLikeTarnawskiJson(FileHead(spec)));
  if (!random && !tarnawski) return Status::Ok();
  if (options.batch > 0 || !options.optimizer.empty() ||
      options.keep_merged_parameters) {
    return InvalidArgumentError(
        "--model " + spec +
        ": --batch, --optimizer and "
        "--keep-merged-parameters apply to ONNX and zoo models; " +
        (random ? "a random graph" : "a Tarnawski et al. input") +
        " has its own sizes");
  }
  return Status::Ok();
}

// A graph JSON is a training graph already: --batch and --optimizer may
// only repeat what it was made with.
Status CheckGraphFileOptions(const std::string& path, const LoadedModel& model,
                             const ModelOptions& options) {
  const std::string fix =
      "; it is a training graph made at its batch with its optimizer: "
      "import the ONNX model again (dplace import MODEL.onnx --batch N "
      "--optimizer NAME) or give the .onnx model itself";
  if (options.batch > 0 && options.batch != model.batch) {
    return InvalidArgumentError(
        path + ": --batch " + std::to_string(options.batch) +
        ": the graph was made at " +
        (model.batch > 0 ? "batch " + std::to_string(model.batch)
                         : std::string("a batch it does not record")) +
        fix);
  }
  if (!options.optimizer.empty() && options.optimizer != model.optimizer) {
    return InvalidArgumentError(
        path + ": --optimizer " + options.optimizer + ": the graph was made " +
        (model.optimizer.empty() ? std::string("with an optimizer it does "
                                               "not record")
                                 : "for " + model.optimizer) +
        fix);
  }
  if (options.keep_merged_parameters) {
    return InvalidArgumentError(
        path +
        ": --keep-merged-parameters is read when an ONNX model is "
        "imported" +
        fix);
  }
  return Status::Ok();
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

StatusOr<LoadedModel> ImportOnnxModel(const std::string& path,
                                      const ModelOptions& options) {
  OnnxImportOptions import_options;
  import_options.batch = options.batch;
  import_options.keep_merged_parameters = options.keep_merged_parameters;
  DPLACE_ASSIGN_OR_RETURN(OnnxImport imported,
                          ImportOnnxFile(path, import_options));
  TrainingOptions training_options;
  DPLACE_ASSIGN_OR_RETURN(training_options.optimizer,
                          OptimizerOf(options.optimizer, "sgd"));
  StatusOr<Graph> training =
      ExpandForTraining(imported.forward, training_options);
  if (!training.ok()) return training.status().WithPrefix(path);
  LoadedModel model{std::move(training).value(),
                    nullptr,
                    std::move(imported.warnings),
                    /*profile=*/{},
                    /*cluster=*/{},
                    imported.batch,
                    std::string(OptimizerName(training_options.optimizer))};
  return model;
}

GraphFileInfo GraphFileInfoOf(const LoadedModel& model) {
  GraphFileInfo info;
  info.warnings = model.warnings;
  info.batch = model.batch;
  info.optimizer = model.optimizer;
  return info;
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

StatusOr<LoadedModel> LoadModel(const std::string& spec,
                                const ModelOptions& options) {
  if (spec.rfind("zoo:", 0) == 0) {
    StatusOr<LoadedModel> zoo = LoadZooModel(spec.substr(4), options);
    if (!zoo.ok()) return zoo.status().WithPrefix("--model " + spec);
    return zoo;
  }
  if (IsOnnxPath(spec)) return ImportOnnxModel(spec, options);
  if (Status s = CheckNoModelOptions(spec, options); !s.ok()) return s;
  if (spec.rfind("tarnawski:", 0) == 0) return LoadTarnawskiSpec(spec);
  if (spec.rfind("random:", 0) == 0) {
    DPLACE_ASSIGN_OR_RETURN(Graph graph, MakeRandomModel(spec));
    return LoadedModel{std::move(graph), nullptr, {}, {}, {}, 0, {}};
  }
  if (LooksLikeTarnawskiJson(FileHead(spec))) {
    DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(spec));
    return LoadTarnawski(text, spec, "");
  }
  GraphFileInfo info;
  DPLACE_ASSIGN_OR_RETURN(Graph graph, ReadGraphJson(spec, {}, &info));
  LoadedModel model{std::move(graph), nullptr,    std::move(info.warnings),
                    /*profile=*/{},
                    /*cluster=*/{},   info.batch, std::move(info.optimizer)};
  if (Status s = CheckGraphFileOptions(spec, model, options); !s.ok()) {
    return s;
  }
  return model;
}

}  // namespace dplace
