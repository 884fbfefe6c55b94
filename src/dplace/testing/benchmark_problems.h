// The problems the simulator's and the placers' benchmarks share, each
// built once per process and kept for the benchmark's run: layered random
// graphs of a given size on k80x4, and the zoo's models on a preset with
// their expert placement.
//
//   const BenchmarkProblem& p = RandomBenchmarkProblem(50000);
//   Simulator simulator(*p.cost);
#ifndef DPLACE_TESTING_BENCHMARK_PROBLEMS_H_
#define DPLACE_TESTING_BENCHMARK_PROBLEMS_H_

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/random_graph.h"
#include "dplace/method/method.h"
#include "dplace/zoo/zoo.h"

namespace dplace::testing_problems {

struct BenchmarkProblem {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  PlacementProblem problem;  // Of the above; `expert` set for zoo models.
};

inline std::unique_ptr<BenchmarkProblem> NewBenchmarkProblem(
    Graph graph, const std::string& preset) {
  auto p = std::make_unique<BenchmarkProblem>(BenchmarkProblem{
      std::move(graph), *MakeClusterPreset(preset), nullptr, {}});
  p->cost = std::make_unique<CostModel>(p->graph, p->cluster);
  p->problem.graph = &p->graph;
  p->problem.cluster = &p->cluster;
  p->problem.cost = p->cost.get();
  return p;
}

// A layered random graph of `num_ops` ops (50 per layer, inputs from the
// two layers before, seed 42) on k80x4.
inline const BenchmarkProblem& RandomBenchmarkProblem(int num_ops) {
  static std::map<int, std::unique_ptr<BenchmarkProblem>> cache;
  std::unique_ptr<BenchmarkProblem>& p = cache[num_ops];
  if (!p) {
    RandomGraphOptions o;
    o.num_ops = num_ops;
    o.layer_width = 50;
    o.max_reach = 2;
    o.max_inputs = 3;
    o.max_persistent_bytes = 1 << 20;
    o.seed = 42;
    p = NewBenchmarkProblem(MakeRandomLayeredGraph(o), "k80x4");
  }
  return *p;
}

// The zoo model `spec` ("nmt:layers=8") on the preset `cluster`.
inline const BenchmarkProblem& ZooBenchmarkProblem(const std::string& spec,
                                                   const std::string& cluster) {
  static std::map<std::string, std::unique_ptr<BenchmarkProblem>> cache;
  std::unique_ptr<BenchmarkProblem>& p = cache[spec + "@" + cluster];
  if (!p) {
    const ZooSpec zoo = *ParseZooSpec(spec);
    p = NewBenchmarkProblem(*MakeZooModel(zoo), cluster);
    const BenchmarkProblem* raw = p.get();
    p->problem.expert = [raw, zoo] {
      return zoo.model->expert(raw->graph, raw->cluster, zoo.params);
    };
  }
  return *p;
}

}  // namespace dplace::testing_problems

#endif  // DPLACE_TESTING_BENCHMARK_PROBLEMS_H_
