// Loading a model: a zoo benchmark, a random graph, a graph JSON file, an
// ONNX model or a Tarnawski et al. input, as --model names it, with what
// its family knows about it (the human expert's placement; a Tarnawski
// input's op times and machine), and the problem of placing it.
//
//   StatusOr<LoadedModel> model = LoadModel("zoo:nmt:layers=4");
//   const CostModel cost(model->graph, cluster);
//   const PlacementProblem problem = ProblemOf(*model, cost, /*seed=*/1);
#ifndef DPLACE_MODEL_LOAD_MODEL_H_
#define DPLACE_MODEL_LOAD_MODEL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dplace/graph/training.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/onnx/onnx_import.h"
#include "dplace/method/method.h"

namespace dplace {

// How --model is read: the flags every command that reads a model takes.
struct ModelOptions {
  // --batch: the batch size. An ONNX model: OnnxImportOptions::batch; a zoo
  // model: its batch parameter; a graph JSON was made at its batch and
  // takes only that one. 0: the model's. Default: 0.
  int64_t batch = 0;
  // --optimizer: of the update ops (sgd, momentum, rmsprop, adam, adamw)
  // of an ONNX model or a zoo model; a graph JSON takes only its own.
  // Empty: the model's (sgd for ONNX, the paper's for the zoo).
  // Default: "".
  std::string optimizer;
  // --keep-merged-parameters: OnnxImportOptions::keep_merged_parameters.
  // Default: false.
  bool keep_merged_parameters = false;
};

// A graph with what its family knows about it.
struct LoadedModel {
  Graph graph;
  // The human expert's placement of zoo models; empty for graph JSON, ONNX
  // and random graphs, which have no family.
  std::function<Placement(const Graph&, const Cluster&)> expert;
  // One line each, for the user: what the ONNX importer warns of (an
  // eval-mode export, aliased parameters, operators without a cost).
  std::vector<std::string> warnings;
  // Op times the model brings (a Tarnawski input's latencies); a --profile
  // overrides them op by op. Empty for the rest.
  ProfileTable profile;
  // The machine the model brings (a Tarnawski input's accelerators and
  // CPU), placed on when no --cluster is given. Empty for the rest.
  std::optional<Cluster> cluster;
  // The batch size in effect; 0 when unknown (random graphs, Tarnawski
  // inputs, graph files that do not record it).
  int64_t batch = 0;
  // The optimizer of the update ops; empty when unknown.
  std::string optimizer;
};

// Loads a model spec: zoo:NAME[:k=v,...], random:ops=N[,seed=K,width=W]
// (a random layered DAG, see random_graph.h, for scaling studies), a graph JSON
// file, an ONNX model (imported with its own batch size and expanded for
// training with SGD), or a Tarnawski et al. input (tarnawski_json.h; a
// .json file of that format, or tarnawski:FILE[,expert=SPLIT] with the
// repository's human-expert split as the expert placement). `options` set
// the batch, the optimizer and how merged ONNX parameters are read (see
// ModelOptions; a model they do not apply to is an error). Errors name the
// spec or the file.
StatusOr<LoadedModel> LoadModel(const std::string& spec,
                                const ModelOptions& options = {});

// The cluster to place `model` on: the preset or file `name_or_path`
// (LoadCluster), or the model's own when it is empty. Errors: neither.
StatusOr<Cluster> ClusterFor(const LoadedModel& model,
                             const std::string& name_or_path);

// The op times: the model's own, overridden op by op by the profile file
// `path` (none when empty).
StatusOr<ProfileTable> ProfileFor(const LoadedModel& model,
                                  const std::string& path);

// The problem of placing `model`'s graph on `cost`'s cluster, with the
// model's expert placement when it has one. REQUIRES: `model` and `cost`
// outlive the problem; cost.graph() is model.graph.
PlacementProblem ProblemOf(const LoadedModel& model, const CostModel& cost,
                           uint64_t seed);

// Imports the ONNX model at `path` and expands it into its training graph,
// with the importer's warnings, the batch and the optimizer (sgd when
// options.optimizer is empty).
StatusOr<LoadedModel> ImportOnnxModel(const std::string& path,
                                      const ModelOptions& options);

// What a graph file records of `model` (graph_json.h), to write beside it.
GraphFileInfo GraphFileInfoOf(const LoadedModel& model);

}  // namespace dplace

#endif  // DPLACE_MODEL_LOAD_MODEL_H_
