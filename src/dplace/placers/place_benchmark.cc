// Times every registered placer on the papers' largest graphs: the 84k-op
// NMT-8 training graph on k40x8 and BERT-Base on p100x4, plus m-ETF and
// m-SCT on random layered graphs of 10k-100k ops (how they scale). One
// iteration each: the slow ones take tens of seconds. Reports seconds to
// place and the simulated step time of the result.
//
// Targets (issue 5): m-ETF on NMT-8 under 10 s, m-SCT under 60 s, Scotch and
// METIS in seconds.
//
//   build/place_benchmark --benchmark_counters_tabular=true
//   build/place_benchmark --benchmark_filter='nmt'
#include <benchmark/benchmark.h>

#include <string>
#include <utility>

#include "dplace/method/method.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/benchmark_problems.h"

namespace dplace {
namespace {

using testing_problems::BenchmarkProblem;
using testing_problems::RandomBenchmarkProblem;
using testing_problems::ZooBenchmarkProblem;

void Place(benchmark::State& state, const std::string& method,
           const BenchmarkProblem& p) {
  std::unique_ptr<Method> placer = *MakeMethod(method);
  Placement placement;
  for (auto _ : state) {
    StatusOr<PlaceResult> placed = placer->Place(p.problem);
    if (!placed.ok()) {
      state.SkipWithError(placed.status().message().c_str());
      return;
    }
    placement = std::move(placed->placement);
  }
  Simulator simulator(*p.cost);
  const SimResult result = *simulator.Simulate(placement);
  state.counters["ops"] = p.graph.num_ops();
  state.counters["step_s"] = result.feasible ? result.step_time : -1;
}

}  // namespace
}  // namespace dplace

int main(int argc, char** argv) {
  for (const dplace::MethodEntry* e : dplace::Methods()) {
    if (dplace::TraitsOf(*e).searches) continue;
    const std::string name = e->name;
    benchmark::RegisterBenchmark(
        ("Place/" + name + "/nmt8_k40x8").c_str(),
        [name](benchmark::State& s) {
          dplace::Place(s, name,
                        dplace::ZooBenchmarkProblem("nmt:layers=8", "k40x8"));
        })
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
    benchmark::RegisterBenchmark(
        ("Place/" + name + "/bert_p100x4").c_str(),
        [name](benchmark::State& s) {
          dplace::Place(s, name, dplace::ZooBenchmarkProblem("bert", "p100x4"));
        })
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
  }
  for (const char* name : {"m-etf", "m-sct"}) {
    if (!dplace::FindMethod(name)) continue;
    for (int ops : {10000, 30000, 100000}) {
      benchmark::RegisterBenchmark(
          ("Scale/" + std::string(name) + "/random_" + std::to_string(ops))
              .c_str(),
          [name, ops](benchmark::State& s) {
            dplace::Place(s, name, dplace::RandomBenchmarkProblem(ops));
          })
          ->Iterations(1)
          ->Unit(benchmark::kSecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
