#include "fuzz/fuzz_targets.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dplace/cluster/cluster.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/onnx/onnx_import.h"
#include "dplace/io/placement_json.h"
#include "dplace/io/profile_json.h"
#include "fuzz/fuzz_util.h"

namespace dplace {
namespace fuzz {
namespace {

std::string Text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Writes and re-reads a parsed graph: the second read must succeed and give
// the same hash and the same text.
void CheckGraphRoundTrip(const Graph& graph) {
  const std::string written = GraphToJson(graph);
  StatusOr<Graph> again = ParseGraphJson(written, "written");
  Check(again.ok(), "a written graph does not parse: " +
                        (again.ok() ? "" : again.status().message()));
  Check(again->hash() == graph.hash(), "graph hash changed by a round trip");
  Check(GraphToJson(*again) == written, "graph JSON changed by a round trip");
}

}  // namespace

void FuzzGraphJson(const uint8_t* data, size_t size) {
  StatusOr<Graph> graph = ParseGraphJson(Text(data, size), "fuzz.json");
  if (graph.ok()) CheckGraphRoundTrip(*graph);
}

void FuzzClusterJson(const uint8_t* data, size_t size) {
  StatusOr<Cluster> cluster = ParseClusterJson(Text(data, size), "fuzz.json");
  if (!cluster.ok()) return;
  const std::string written = ClusterToJson(*cluster);
  StatusOr<Cluster> again = ParseClusterJson(written, "written");
  Check(again.ok(), "a written cluster does not parse: " +
                        (again.ok() ? "" : again.status().message()));
  Check(ClusterToJson(*again) == written,
        "cluster JSON changed by a round trip");
}

void FuzzPlacementJson(const uint8_t* data, size_t size) {
  // Built once, never changed: the fixtures' graph and cluster.
  static const Graph* const graph = [] {
    StatusOr<Graph> g = ReadGraphJson(std::string(DPLACE_SOURCE_DIR) +
                                      "/examples/mlp_training.json");
    Check(g.ok(), "cannot read examples/mlp_training.json");
    return new Graph(std::move(g).value());
  }();
  static const Cluster* const cluster =
      new Cluster(std::move(MakeClusterPreset("k80x2")).value());
  StatusOr<Placement> placement =
      ParsePlacementJson(Text(data, size), "fuzz.json", *graph, *cluster);
  if (!placement.ok()) return;
  const std::string written = PlacementToJson(*graph, *cluster, *placement);
  StatusOr<Placement> again =
      ParsePlacementJson(written, "written", *graph, *cluster);
  Check(again.ok() && *again == *placement,
        "placement changed by a round trip");
}

void FuzzProfileJson(const uint8_t* data, size_t size) {
  StatusOr<ProfileTable> table = ParseProfileJson(Text(data, size), "f.json");
  if (!table.ok()) return;
  for (const auto* times : {&table->by_name, &table->by_type}) {
    for (const auto& [name, by_kind] : *times) {
      for (const auto& [kind, seconds] : by_kind) {
        Check(seconds >= 0, "negative time accepted for " + name);
      }
    }
  }
}

// A model that imports is imported again at another batch (3: neither
// the usual export batch nor a multiple of it), which runs the batch change
// (following the batch, rescaling constants) on the mutated graph.
void FuzzOnnxImport(const uint8_t* data, size_t size) {
  const std::string bytes = Text(data, size);
  StatusOr<OnnxImport> imported = ImportOnnxBytes(bytes, "fuzz.onnx");
  if (!imported.ok()) return;
  CheckGraphRoundTrip(imported->forward);
  OnnxImportOptions options;
  options.batch = 3;
  StatusOr<OnnxImport> rebatched = ImportOnnxBytes(bytes, "fuzz.onnx", options);
  if (rebatched.ok()) CheckGraphRoundTrip(rebatched->forward);
}

const std::vector<FuzzTarget>& FuzzTargets() {
  static const std::vector<FuzzTarget>* const targets =
      new std::vector<FuzzTarget>{
          {"graph_json", FuzzGraphJson},
          {"cluster_json", FuzzClusterJson},
          {"placement_json", FuzzPlacementJson},
          {"profile_json", FuzzProfileJson},
          {"onnx_import", FuzzOnnxImport},
      };
  return *targets;
}

}  // namespace fuzz
}  // namespace dplace
