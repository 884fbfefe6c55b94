// The executor's own cost per op (docs/execution.md): a chain of 10,000
// Relu ops on 1-element tensors, whose kernels take about a microsecond,
// run as one training step on logical CPU devices. Placements: every op on
// cpu:0 (dispatch only), and alternating cpu:0 / cpu:1 (every edge a
// cross-device copy, made by the consumer's thread: the worst case).
// BM_ExecuteTwoChains runs two independent chains of 5,000 such ops, their
// ops interleaved in id order as parallel branches are in a real graph,
// with no edge between them: on one device, or a chain on each device. Two
// devices should take half the time of one; what they take beyond half is
// what the executor costs when both devices' threads run at once.
//
//   build/exec_benchmark --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <string>

#include "dplace/exec/executor.h"
#include "dplace/exec/profile.h"
#include "dplace/graph/graph.h"

namespace dplace {
namespace {

constexpr int kOps = 10000;

const Graph& Chain() {
  static const Graph* graph = new Graph(*ReluChain(kOps));
  return *graph;
}

// Measures `graph` one step per iteration: every op on cpu:0 with
// range(0) 0, op i on cpu:(i % 2) with 1 (`split_label`). Reports the
// step's time per op.
void MeasureSteps(benchmark::State& state, const Graph& graph,
                  const char* one_label, const char* split_label) {
  ExecOptions options;
  options.warmup_steps = 0;
  options.measured_steps = 1;
  auto executor =
      Executor::Create(graph, *ParseExecDevices("cpu:0,cpu:1"), options);
  Placement placement(graph.num_ops(), 0);
  if (state.range(0) == 1) {
    for (OpId op = 0; op < graph.num_ops(); ++op) placement[op] = op % 2;
  }
  double step_seconds = 0;
  for (auto _ : state) {
    StatusOr<ExecResult> result = (*executor)->Measure(placement);
    if (!result.ok() || !result->feasible) {
      state.SkipWithError("step failed");
      return;
    }
    step_seconds += result->step_time;
  }
  state.counters["us_per_op"] =
      1e6 * step_seconds /
      (state.iterations() * static_cast<double>(graph.num_ops()));
  state.SetLabel(state.range(0) == 1 ? split_label : one_label);
}

void BM_ExecuteChain(benchmark::State& state) {
  MeasureSteps(state, Chain(), "all on cpu:0", "alternating cpu:0/cpu:1");
}
BENCHMARK(BM_ExecuteChain)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Two chains of kOps / 2 ops: op 2i in the first, 2i + 1 in the second, so
// op i % 2 puts a chain on each device.
const Graph& TwoChains() {
  static const Graph* graph = [] {
    GraphBuilder builder("two_relu_chains");
    for (int i = 0; i < kOps; ++i) {
      OpSpec spec;
      spec.name = "relu_" + std::to_string(i);
      spec.type = i < 2 ? "VariableV2" : "Relu";
      spec.outputs.push_back({{1}, DataType::kFloat32, 0});
      const OpId op = builder.AddOp(spec);
      if (i >= 2) builder.AddEdge(op - 2, 0, op);
    }
    return new Graph(*std::move(builder).Build());
  }();
  return *graph;
}

void BM_ExecuteTwoChains(benchmark::State& state) {
  MeasureSteps(state, TwoChains(), "both chains on cpu:0",
               "a chain on each of cpu:0, cpu:1");
}
BENCHMARK(BM_ExecuteTwoChains)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dplace
