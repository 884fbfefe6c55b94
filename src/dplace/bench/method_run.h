// One method on one problem: what `dplace place`, `dplace place --method
// all` and `dplace bench` all do. A classical placer places once; a learned
// placer (agent) searches through the simulated environment. Either way the
// chosen placement is simulated and returned with how long it took.
//
//   StatusOr<LoadedModel> model = LoadModel("zoo:nmt:layers=4");
//   ... build a PlacementProblem of model->graph ...
//   StatusOr<MethodRun> run = RunMethod("m-etf", {}, problem, {});
//   if (run.ok() && run->placed) use(run->sim.step_time);
#ifndef DPLACE_BENCH_METHOD_RUN_H_
#define DPLACE_BENCH_METHOD_RUN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dplace/graph/training.h"
#include "dplace/io/onnx/onnx_import.h"
#include "dplace/placers/placer.h"
#include "dplace/rl/agent.h"
#include "dplace/sim/simulator.h"

namespace dplace {

// A graph with what its family knows about it.
struct LoadedModel {
  Graph graph;
  // The human expert's placement of zoo models; empty for graph JSON, ONNX
  // and random graphs, which have no family.
  std::function<Placement(const Graph&, const Cluster&)> expert;
};

// Loads a model spec: zoo:NAME[:k=v,...], random:ops=N[,seed=K,width=W]
// (a random layered DAG, see random_graph.h, for scaling studies), a graph JSON
// file, or an ONNX model (imported with its own batch size and expanded for
// training with SGD). Errors name the spec or the file.
StatusOr<LoadedModel> LoadModel(const std::string& spec);

// The problem of placing `model`'s graph on `cost`'s cluster, with the
// model's expert placement when it has one. REQUIRES: `model` and `cost`
// outlive the problem; cost.graph() is model.graph.
PlacementProblem ProblemOf(const LoadedModel& model, const CostModel& cost,
                           uint64_t seed);

// Imports an ONNX model and expands it into its training graph; the
// importer's warnings go to *warnings when given.
StatusOr<Graph> ImportOnnxTrainingGraph(const std::string& path,
                                        const OnnxImportOptions& options,
                                        Optimizer optimizer,
                                        std::vector<std::string>* warnings);

// Every placer and agent name, in listing order ("single-cpu, ..., post").
std::string KnownMethodNames();
// True when `method` names a registered placer or agent.
bool IsKnownMethod(const std::string& method);
bool IsLearnedMethod(const std::string& method);

struct MethodRunOptions {
  // Learned placers: budget (both zero: the agent's paper budget), log,
  // checkpoint, resume and progress callback. Ignored by placers.
  SearchOptions search;
  // Threads of the simulated environment agents search through; <= 0: one
  // per hardware thread. Default: 0.
  int environment_threads = 0;
  // Where agents' placements are evaluated instead (e.g. an MPI
  // environment); not owned. Default: none (the simulated one).
  Environment* environment = nullptr;
  // Record the simulated timeline of the chosen placement (for traces and
  // reports). Default: false.
  bool record_timeline = false;
};

struct MethodRun {
  std::string method;
  bool learned = false;
  // False when the placer refused (e.g. nothing fits); `error` and
  // `error_code` say why. A learned placer always places.
  bool placed = false;
  std::string error;
  StatusCode error_code = StatusCode::kOk;
  Placement placement;
  SimResult sim;            // Of `placement`, when placed.
  double wall_seconds = 0;  // Placing, or the whole search.
  SearchResult search;      // Learned placers only (`best` left empty).
};

// Runs `method` on `problem` (its seed included). Errors: an unknown method
// (the message lists the known ones), bad options, a search that could not
// run (see Agent::Search); a placer that cannot place is a MethodRun with
// placed == false instead.
StatusOr<MethodRun> RunMethod(const std::string& method,
                              const PlacerOptions& options,
                              const PlacementProblem& problem,
                              const MethodRunOptions& run_options);

// The placement-independent lower bound the tables report: the larger of
// the critical path (each op on its fastest device) and the total work over
// every device.
double PlacementLowerBound(const Simulator& simulator);

}  // namespace dplace

#endif  // DPLACE_BENCH_METHOD_RUN_H_
