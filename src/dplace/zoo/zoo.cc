#include "dplace/zoo/zoo.h"

#include <algorithm>
#include <cstdlib>

#include "dplace/graph/training.h"
#include "dplace/zoo/models.h"

namespace dplace {

int64_t ZooParams::Int(const std::string& key) const {
  return std::strtoll(values_.at(key).c_str(), nullptr, 10);
}

const std::string& ZooParams::String(const std::string& key) const {
  return values_.at(key);
}

const std::vector<ZooModel>& ZooModels() {
  static const auto* models = new std::vector<ZooModel>{
      zoo_internal::RnnlmModel(),  zoo_internal::NmtModel(),
      zoo_internal::GnmtModel(),   zoo_internal::InceptionV3Model(),
      zoo_internal::ResNetModel(), zoo_internal::BertModel(),
  };
  return *models;
}

const ZooModel* FindZooModel(std::string_view name) {
  for (const ZooModel& m : ZooModels()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

namespace {

bool IsInteger(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

std::string Keys(const std::map<std::string, std::string>& m) {
  std::string keys;
  for (const auto& [k, v] : m) keys += (keys.empty() ? "" : ", ") + k;
  return keys;
}

}  // namespace

StatusOr<ZooSpec> ParseZooSpec(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string name(spec.substr(0, colon));
  const ZooModel* model = FindZooModel(name);
  if (!model) {
    std::string known;
    for (const ZooModel& m : ZooModels()) {
      known += (known.empty() ? "" : ", ") + m.name;
    }
    return NotFoundError("unknown zoo model \"" + name +
                         "\" (models: " + known + ")");
  }
  std::map<std::string, std::string> values = model->defaults;
  std::string rest = colon == std::string_view::npos
                         ? ""
                         : std::string(spec.substr(colon + 1));
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    auto it = model->defaults.find(key);
    if (eq == std::string::npos || it == model->defaults.end()) {
      return InvalidArgumentError(
          "zoo model " + name + ": unknown parameter \"" + key +
          "\" (parameters: " + Keys(model->defaults) + ")");
    }
    const std::string value = item.substr(eq + 1);
    if (IsInteger(it->second) && !IsInteger(value)) {
      return InvalidArgumentError("zoo model " + name + ": " + key +
                                  " must be an integer, got \"" + value + "\"");
    }
    values[key] = value;
  }
  return ZooSpec{model, ZooParams(std::move(values))};
}

StatusOr<Graph> MakeZooModel(const ZooSpec& spec) {
  const std::string& name = spec.params.String("optimizer");
  const std::optional<Optimizer> optimizer = ParseOptimizer(name);
  if (!optimizer) {
    return InvalidArgumentError("zoo model " + spec.model->name +
                                ": unknown optimizer \"" + name +
                                "\" (sgd, momentum, rmsprop, adam, adamw)");
  }
  DPLACE_ASSIGN_OR_RETURN(Graph forward, spec.model->forward(spec.params));
  TrainingOptions options = spec.model->training;
  options.optimizer = *optimizer;
  return ExpandForTraining(forward, options);
}

StatusOr<Graph> MakeZooModel(std::string_view spec) {
  DPLACE_ASSIGN_OR_RETURN(ZooSpec parsed, ParseZooSpec(spec));
  return MakeZooModel(parsed);
}

namespace zoo_internal {

Placement PlaceByScope(
    const Graph& graph, const Cluster& cluster,
    const std::function<DeviceId(const std::string& scope)>& rule) {
  const std::vector<DeviceId> cpus = cluster.DevicesOfKind(DeviceKind::kCpu);
  Placement placement(graph.num_ops());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    DeviceId d = rule(graph.scope(op));
    if (!graph.allowed_devices(op).Contains(cluster.device(d).kind) &&
        !cpus.empty()) {
      d = cpus[0];
    }
    placement[op] = d;
  }
  return placement;
}

Placement OneGpuPlacement(const Graph& graph, const Cluster& cluster,
                          const ZooParams& params) {
  return SingleDevicePlacement(graph, cluster, LayerGpu(cluster, 0, 1));
}

DeviceId LayerGpu(const Cluster& cluster, int64_t layer, int64_t layers) {
  const std::vector<DeviceId> gpus = cluster.DevicesOfKind(DeviceKind::kGpu);
  if (gpus.empty()) return 0;
  const int64_t n = static_cast<int64_t>(gpus.size());
  // One layer per GPU in order while they last; more layers than GPUs are
  // spread in contiguous blocks.
  const int64_t index = layers <= n ? layer : layer * n / layers;
  return gpus[static_cast<size_t>(std::min(index, n - 1))];
}

}  // namespace zoo_internal
}  // namespace dplace
