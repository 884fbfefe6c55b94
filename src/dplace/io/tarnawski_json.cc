#include "dplace/io/tarnawski_json.h"

#include <cctype>
#include <cmath>
#include <map>
#include <unordered_map>
#include <utility>

#include "dplace/io/json_fields.h"

namespace dplace {
namespace {

using io_internal::FieldReader;
using io_internal::json;

// The CPU's memory: unbounded in the paper; far below int64's end.
constexpr int64_t kCpuMemoryBytes = int64_t{1} << 50;

struct Node {
  int64_t id = 0;
  std::string name;
  bool on_accelerator = true;
  double cpu_ms = 0, accelerator_ms = 0;
  bool backward = false;
  bool has_class = false;
  int64_t color_class = 0;
  double size = 0;
};

struct Edge {
  int64_t from = 0, to = 0;
  double cost = 0;
};

// "MatMul27" -> "MatMul", "bert.pooler.dense_act.weight" -> "weight": the
// last dotted component without its trailing digits and underscores, an
// op type for the learned placers' features.
std::string TypeOf(const std::string& name) {
  std::string last = name.substr(name.rfind('.') + 1);
  while (!last.empty() &&
         (std::isdigit(static_cast<unsigned char>(last.back())) ||
          last.back() == '_')) {
    last.pop_back();
  }
  return last.empty() ? "node" : last;
}

// A flag of the format: true or false, or 1 or 0 as the layer graphs write
// it.
bool Flag(const json& object, FieldReader& f, const char* key, bool fallback) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_boolean()) return f.Bool(key, fallback);
  const int64_t value = f.Int(key, fallback ? 1 : 0, 0);
  if (value > 1) f.Fail(f.PathOf(key) + ": expected true, false, 0 or 1");
  return value == 1;
}

Status ReadNodes(const json& array, std::vector<Node>* nodes) {
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string path = "nodes[" + std::to_string(i) + "]";
    if (!array[i].is_object()) {
      return InvalidArgumentError(path + ": expected an object");
    }
    FieldReader f(array[i], path);
    Node n;
    n.id = f.Int("id", 0);
    n.name = f.String("name", "");
    n.on_accelerator = Flag(array[i], f, "supportedOnFpga", true);
    n.cpu_ms = f.Number("cpuLatency", 0);
    n.accelerator_ms = f.Number("fpgaLatency", 0);
    n.backward = Flag(array[i], f, "isBackwardNode", false);
    n.has_class = array[i].contains("colorClass");
    n.color_class = f.Int("colorClass", 0, std::numeric_limits<int64_t>::min());
    n.size = f.Number("size", 0, 0);
    f.Int("layerId", 0, std::numeric_limits<int64_t>::min());  // Unused.
    DPLACE_RETURN_IF_ERROR(f.Finish());
    nodes->push_back(std::move(n));
  }
  return Status::Ok();
}

Status ReadEdges(const json& array, std::vector<Edge>* edges) {
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string path = "edges[" + std::to_string(i) + "]";
    if (!array[i].is_object()) {
      return InvalidArgumentError(path + ": expected an object");
    }
    FieldReader f(array[i], path);
    Edge e;
    e.from = f.Int("sourceId", 0);
    e.to = f.Int("destId", 0);
    e.cost = f.Number("cost", 0);
    f.Number("size", 0, 0);  // The tensor's bytes; the cost is what counts.
    DPLACE_RETURN_IF_ERROR(f.Finish());
    edges->push_back(e);
  }
  return Status::Ok();
}

StatusOr<Cluster> MakeCluster(const std::string& name, int accelerators,
                              int cpu_cores, int64_t accelerator_bytes) {
  ClusterBuilder b(name);
  Device cpu;
  cpu.name = "cpu:0";
  cpu.kind = DeviceKind::kCpu;
  cpu.model = "host CPU (" + std::to_string(cpu_cores) + " cores)";
  cpu.peak_flops = 1e12;  // Unused: the profile gives every op's time.
  cpu.memory_bandwidth = 1e11;
  cpu.memory_bytes = kCpuMemoryBytes;
  cpu.compute_slots = cpu_cores;
  b.AddDevice(cpu);
  for (int i = 0; i < accelerators; ++i) {
    Device a;
    a.name = "gpu:" + std::to_string(i);
    a.kind = DeviceKind::kGpu;
    a.model = "accelerator";
    a.peak_flops = 1e13;
    a.memory_bandwidth = 1e12;
    a.memory_bytes = accelerator_bytes;
    b.AddDevice(a);
    b.AddLink("cpu:0", a.name, kTarnawskiBytesPerSecond, 0);
  }
  return std::move(b).Build();
}

// What TarnawskiProblem holds besides the graph and the cluster, while they
// are built.
struct Totals {
  ProfileTable profile;
  double total_size_bytes = 0;
  double accelerator_bytes = 0;
  int accelerators = 0;
  int cpu_cores = 0;
  std::vector<int64_t> node_ids;
};

}  // namespace

bool LooksLikeTarnawskiJson(const std::string& text) {
  const size_t head = std::min<size_t>(text.size(), 4096);
  const std::string start = text.substr(0, head);
  return start.find("\"maxSizePerFPGA\"") != std::string::npos ||
         (start.find("\"maxFPGAs\"") != std::string::npos &&
          start.find("\"nodes\"") != std::string::npos);
}

StatusOr<TarnawskiProblem> ParseTarnawskiJson(const std::string& text,
                                              const std::string& source,
                                              const std::string& name) {
  return io_internal::ParseDocument<TarnawskiProblem>(
      text, source, [&](const json& root) -> StatusOr<TarnawskiProblem> {
        if (!root.is_object()) {
          return InvalidArgumentError("expected a JSON object");
        }
        FieldReader top(root, "");
        Totals p;
        p.accelerator_bytes = top.Number("maxSizePerFPGA", 1);
        p.accelerators = static_cast<int>(top.Int("maxFPGAs", 1));
        p.cpu_cores = static_cast<int>(top.Int("maxCPUs", 1));
        const json* nodes_json = top.Array("nodes", true);
        const json* edges_json = top.Array("edges", true);
        DPLACE_RETURN_IF_ERROR(top.Finish());
        if (p.accelerators > 4096 || p.cpu_cores > 4096) {
          return InvalidArgumentError(
              "maxFPGAs and maxCPUs: expected at most 4096");
        }
        std::vector<Node> nodes;
        std::vector<Edge> edges;
        DPLACE_RETURN_IF_ERROR(ReadNodes(*nodes_json, &nodes));
        DPLACE_RETURN_IF_ERROR(ReadEdges(*edges_json, &edges));
        std::unordered_map<int64_t, OpId> op_of_id;
        for (size_t i = 0; i < nodes.size(); ++i) {
          if (!op_of_id.emplace(nodes[i].id, static_cast<OpId>(i)).second) {
            return InvalidArgumentError("nodes[" + std::to_string(i) +
                                        "].id: " + std::to_string(nodes[i].id) +
                                        " is used by an earlier node");
          }
        }
        // One output per node: every edge out of it carries it, at one cost.
        std::vector<double> cost(nodes.size(), -1);
        for (size_t i = 0; i < edges.size(); ++i) {
          const std::string path = "edges[" + std::to_string(i) + "]";
          for (int64_t id : {edges[i].from, edges[i].to}) {
            if (!op_of_id.count(id)) {
              return InvalidArgumentError(path + ": no node has id " +
                                          std::to_string(id));
            }
          }
          double& c = cost[op_of_id[edges[i].from]];
          if (c >= 0 && std::abs(c - edges[i].cost) > 1e-6) {
            return InvalidArgumentError(
                path + ".cost: " + std::to_string(edges[i].cost) +
                " differs from an earlier edge out of node " +
                std::to_string(edges[i].from) + " (" + std::to_string(c) +
                "): the format gives one cost per source node");
          }
          c = edges[i].cost;
        }
        double tensor_bytes = 0;
        GraphBuilder b(name);
        std::map<std::string, int> names;
        for (size_t i = 0; i < nodes.size(); ++i) {
          const Node& n = nodes[i];
          OpSpec spec;
          spec.name = n.name.empty() ? "node" + std::to_string(n.id) : n.name;
          if (names[spec.name]++ > 0) spec.name += "#" + std::to_string(n.id);
          spec.type = TypeOf(spec.name);
          spec.phase = n.backward ? Phase::kBackward : Phase::kForward;
          const size_t dot = n.name.rfind('.');
          if (dot != std::string::npos) spec.scope = n.name.substr(0, dot);
          spec.persistent_bytes = std::llround(n.size);
          if (n.has_class) {
            spec.colocation_group = "class_" + std::to_string(n.color_class);
          }
          if (!n.on_accelerator) {
            spec.allowed_devices = DeviceKindSet::Only(DeviceKind::kCpu);
          }
          TensorInfo out;
          out.bytes = cost[i] > 0
                          ? std::llround(cost[i] * kTarnawskiSecondsPerUnit *
                                         kTarnawskiBytesPerSecond)
                          : 0;
          tensor_bytes += static_cast<double>(out.bytes);
          spec.outputs.push_back(out);
          std::unordered_map<DeviceKind, double>& times =
              p.profile.by_name[spec.name];
          times[DeviceKind::kCpu] = n.cpu_ms * kTarnawskiSecondsPerUnit;
          if (n.on_accelerator) {
            times[DeviceKind::kGpu] =
                n.accelerator_ms * kTarnawskiSecondsPerUnit;
          }
          b.AddOp(std::move(spec));
          p.node_ids.push_back(n.id);
          p.total_size_bytes += n.size;
        }
        for (const Edge& e : edges)
          b.AddEdge(op_of_id[e.from], 0, op_of_id[e.to]);
        DPLACE_ASSIGN_OR_RETURN(Graph graph, std::move(b).Build());
        // The tensors that carry the transfer times also occupy memory in
        // dplace's simulator, which the paper does not count: room for all
        // of them at once keeps every split the paper accepts feasible.
        DPLACE_ASSIGN_OR_RETURN(
            Cluster cluster,
            MakeCluster("tarnawski-" + name, p.accelerators, p.cpu_cores,
                        std::llround(p.accelerator_bytes + tensor_bytes)));
        return TarnawskiProblem{std::move(graph),
                                std::move(p.profile),
                                std::move(cluster),
                                static_cast<int>(nodes.size()),
                                static_cast<int>(edges.size()),
                                p.total_size_bytes,
                                p.accelerator_bytes,
                                p.accelerators,
                                p.cpu_cores,
                                std::move(p.node_ids)};
      });
}

StatusOr<TarnawskiProblem> ReadTarnawskiJson(const std::string& path,
                                             const FileLimits& limits) {
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, limits));
  std::string name = path.substr(path.rfind('/') + 1);
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") {
    name.resize(name.size() - 5);
  }
  return ParseTarnawskiJson(text, path, name);
}

StatusOr<Placement> ReadTarnawskiSplit(const std::string& path,
                                       const TarnawskiProblem& problem) {
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return io_internal::ParseDocument<Placement>(
      text, path, [&](const json& root) -> StatusOr<Placement> {
        if (!root.is_object()) {
          return InvalidArgumentError("expected a JSON object");
        }
        std::unordered_map<int64_t, OpId> op_of_id;
        for (size_t i = 0; i < problem.node_ids.size(); ++i) {
          op_of_id[problem.node_ids[i]] = static_cast<OpId>(i);
        }
        const std::vector<DeviceId> accelerators =
            problem.cluster.DevicesOfKind(DeviceKind::kGpu);
        const DeviceId cpu =
            problem.cluster.DevicesOfKind(DeviceKind::kCpu).front();
        Placement placement(problem.graph.num_ops(), cpu);
        FieldReader top(root, "");
        const json* fpgas = top.Array("fpgas", true);
        top.Array("cpus", false);
        top.Number("maxLoad", 0, -1e300);
        DPLACE_RETURN_IF_ERROR(top.Finish());
        if (fpgas->size() > accelerators.size()) {
          return InvalidArgumentError(
              "fpgas: " + std::to_string(fpgas->size()) +
              " accelerators, the problem has " +
              std::to_string(accelerators.size()));
        }
        for (size_t a = 0; a < fpgas->size(); ++a) {
          const std::string path = "fpgas[" + std::to_string(a) + "]";
          const json& entry = (*fpgas)[a];
          if (!entry.is_object()) {
            return InvalidArgumentError(path + ": expected an object");
          }
          FieldReader f(entry, path);
          const json* ids = f.Array("nodes", true);
          f.Number("load", 0, -1e300);
          DPLACE_RETURN_IF_ERROR(f.Finish());
          for (size_t i = 0; i < ids->size(); ++i) {
            const json& id = (*ids)[i];
            if (!id.is_number_integer() || !op_of_id.count(id.get<int64_t>())) {
              return InvalidArgumentError(path + ".nodes[" + std::to_string(i) +
                                          "]: not a node id of the problem");
            }
            placement[op_of_id[id.get<int64_t>()]] = accelerators[a];
          }
        }
        return placement;
      });
}

}  // namespace dplace
