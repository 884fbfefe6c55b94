// Policy throughput of the learned placers: placements per second that a
// policy samples and learns from (forward + backward + optimizer step).
//
//   AgentCycle: each neural agent (colocrl, hierarchical, mars, eagle) with
//     its paper settings, through the Method interface, placing nmt on
//     k40x2 with the simulated environment as `dplace place` does. Times the
//     full cycle of the batches between the first and the last (sample,
//     evaluate, update; the first batch has no update before it, the last
//     none after it) and reports samples/s, the FLOPs of a sample, the
//     FLOP/s achieved and the machine's dense sgemm rate at the same thread
//     count (torch::mm of 1024 x 1024, best of 5), the physical limit for
//     this work. FLOPs are counted, not estimated: a second search of the
//     same agent runs with a LibTorch RecordFunction callback that adds
//     2mnk for every matrix product (mm, addmm(_), bmm, baddbmm, mv, addmv,
//     and the few-row products the policies make with BLAS calls of their
//     own, "dplace::row_products",
//     forward and backward, sparse products 2 nnz n); element-wise work is
//     not counted. Arguments: threads and workers (the agents' options; 1 by
//     default).
//   Seq2Seq: ColocRL's attentional seq2seq policy, in this binary from
//     rl/agents/colocrl/seq2seq_policy_benchmark.cc.
//   Softmax: Post's softmax policy, one batch of K = 12 placements and one
//     PPO iteration (10 SGA steps), at 256 and 2048 groups.
//   RowProducts, PackWeight: a recurrence step's few-row product with its
//     weight plain or packed (rl/nets/packed_weight.h), and the packing.
//
// items_per_second is samples (placements) per second.
//
//   build/rl_benchmark --benchmark_filter=AgentCycle
#include <ATen/record_function.h>
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/method/method.h"
#include "dplace/model/load_model.h"
#include "dplace/rl/algorithms.h"
#include "dplace/rl/nets/lstm.h"
#include "dplace/rl/nets/packed_weight.h"
#include "dplace/rl/nets/policy.h"
#include "dplace/util/blas_kernels.h"

namespace dplace {
namespace {

constexpr int kDevices = 5;  // k80x4: one CPU, four GPUs.

// FLOPs of the matrix products LibTorch ran while counting.
std::atomic<int64_t> counted_flops{0};

int64_t Dim(const c10::IValue& v, int64_t d) {
  const at::Tensor& t = v.toTensor();
  return t.size(d < 0 ? t.dim() + d : d);
}

std::unique_ptr<at::ObserverContext> CountProductFlops(
    const at::RecordFunction& fn) {
  const std::string name = fn.name();
  const c10::ArrayRef<const c10::IValue> in = fn.inputs();
  auto tensor = [&](size_t i) {
    return i < in.size() && in[i].isTensor() && in[i].toTensor().defined();
  };
  int64_t flops = 0;
  if (name == "aten::mm" && tensor(0) && tensor(1)) {
    const at::Tensor& a = in[0].toTensor();
    if (a.is_sparse()) {
      flops = 2 * a._nnz() * Dim(in[1], 1);
    } else {
      flops = 2 * Dim(in[0], 0) * Dim(in[0], 1) * Dim(in[1], 1);
    }
  } else if ((name == "aten::addmm" || name == "aten::addmm_") && tensor(1) &&
             tensor(2)) {
    const at::Tensor& a = in[1].toTensor();
    if (a.is_sparse()) {
      flops = 2 * a._nnz() * Dim(in[2], 1);
    } else {
      flops = 2 * Dim(in[1], 0) * Dim(in[1], 1) * Dim(in[2], 1);
    }
  } else if (name == "aten::bmm" && tensor(0) && tensor(1)) {
    flops = 2 * Dim(in[0], 0) * Dim(in[0], 1) * Dim(in[0], 2) * Dim(in[1], 2);
  } else if (name == "aten::baddbmm" && tensor(1) && tensor(2)) {
    flops = 2 * Dim(in[1], 0) * Dim(in[1], 1) * Dim(in[1], 2) * Dim(in[2], 2);
  } else if (name == "aten::mv" && tensor(0)) {
    flops = 2 * Dim(in[0], 0) * Dim(in[0], 1);
  } else if (name == "aten::addmv" && tensor(1)) {
    flops = 2 * Dim(in[1], 0) * Dim(in[1], 1);
  } else if (name == "dplace::row_products" && tensor(0) && tensor(1)) {
    // rl/nets: the rows of x times the matrix w, outside LibTorch's ops.
    flops = 2 * Dim(in[0], 0) * in[1].toTensor().numel();
  }
  counted_flops += flops;
  return nullptr;
}

// Sets LibTorch's and OpenBLAS's threads (as the agents' option threads
// does during a search).
void SetComputeThreads(int threads) {
  torch::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(threads);
  }
}

// GFLOP/s of a dense 1024 x 1024 x 1024 sgemm on `threads` threads, best of
// five.
double SgemmGflops(int threads) {
  SetComputeThreads(threads);
  const int64_t n = 1024;
  const torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
  torch::Tensor c = torch::empty({n, n});
  at::mm_out(c, a, b);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, 2.0 * n * n * n / s / 1e9);
  }
  return best;
}

// nmt on k40x2, as `dplace place --model zoo:nmt --cluster k40x2` has it.
struct NmtProblem {
  std::unique_ptr<LoadedModel> model;
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<CostModel> cost;
  PlacementProblem problem;

  NmtProblem() {
    StatusOr<LoadedModel> m = LoadModel("zoo:nmt");
    StatusOr<Cluster> c = MakeClusterPreset("k40x2");
    if (!m.ok() || !c.ok()) throw std::runtime_error("nmt or k40x2 missing");
    model = std::make_unique<LoadedModel>(std::move(m).value());
    cluster = std::make_unique<Cluster>(std::move(c).value());
    cost = std::make_unique<CostModel>(model->graph, *cluster);
    problem = ProblemOf(*model, *cost, /*seed=*/1);
  }
};

struct Cycle {
  int64_t samples = 0;
  double seconds = 0;
  int64_t flops = 0;  // Counted when asked for.
};

// One search of `agent` for `samples` samples; the cycle is what lies
// between the first batch's progress report and the last's.
Cycle RunCycle(const NmtProblem& nmt, const std::string& agent, int threads,
               int workers, int64_t samples, bool count_flops) {
  std::vector<std::string> settings = {"threads=" + std::to_string(threads),
                                       "workers=" + std::to_string(workers)};
  // The paper's update for EAGLE, 4 PPO epochs per batch (its preset runs
  // 1, docs/agents.md); the other agents' presets are their papers'.
  if (agent == "eagle") settings.push_back("ppo_epochs=4");
  StatusOr<MethodOptions> options = MethodOptions::Parse(settings);
  StatusOr<std::unique_ptr<Method>> method = MakeMethod(agent, *options);
  if (!method.ok()) throw std::runtime_error(method.status().message());
  std::unique_ptr<Environment> env = NewSimulatedEnvironment(*nmt.cost);
  std::vector<SearchProgress> reports;
  std::vector<int64_t> flops;
  PlaceContext context;
  context.environment = env.get();
  context.search.budget.samples = samples;
  context.search.progress = [&](const SearchProgress& p) {
    reports.push_back(p);
    flops.push_back(counted_flops.load());
  };
  at::CallbackHandle handle = 0;
  if (count_flops) {
    handle = at::addGlobalCallback(
        at::RecordFunctionCallback(CountProductFlops).needsInputs(true));
  }
  StatusOr<PlaceResult> result = (*method)->Place(nmt.problem, context);
  if (count_flops) at::removeCallback(handle);
  if (!result.ok()) throw std::runtime_error(result.status().message());
  if (reports.size() < 3) throw std::runtime_error("fewer than 3 batches");
  const size_t first = 0, last = reports.size() - 2;
  Cycle cycle;
  cycle.samples = reports[last].samples - reports[first].samples;
  cycle.seconds = reports[last].wall_seconds - reports[first].wall_seconds;
  cycle.flops = flops[last] - flops[first];
  return cycle;
}

void BM_AgentCycle(benchmark::State& state, const std::string& agent,
                   int64_t samples) {
  const int threads = static_cast<int>(state.range(0));
  const int workers = static_cast<int>(state.range(1));
  static const NmtProblem* nmt = new NmtProblem();
  // The limit: dense sgemm on as many threads as the cycle uses.
  const double sgemm = SgemmGflops(threads * workers);
  const Cycle counted = RunCycle(*nmt, agent, threads, workers, samples, true);
  Cycle timed;
  for (auto _ : state) {
    const Cycle c = RunCycle(*nmt, agent, threads, workers, samples, false);
    state.SetIterationTime(c.seconds);
    timed.samples += c.samples;
    timed.seconds += c.seconds;
  }
  const double per_second = timed.samples / timed.seconds;
  const double flops_per_sample =
      static_cast<double>(counted.flops) / counted.samples;
  state.SetItemsProcessed(timed.samples);
  state.counters["samples_per_s"] = per_second;
  state.counters["GFLOP_per_sample"] = flops_per_sample / 1e9;
  state.counters["GFLOP_per_s"] = per_second * flops_per_sample / 1e9;
  state.counters["sgemm_GFLOP_per_s"] = sgemm;
  state.counters["of_sgemm"] = per_second * flops_per_sample / 1e9 / sgemm;
}
// Each agent at one and two LibTorch threads, and at two workers of one
// thread each (the agents' options threads and workers); the second
// number is the samples of the search whose batches are timed.
const bool kAgentCyclesRegistered = [] {
  const std::pair<const char*, int> agents[] = {
      {"colocrl", 48}, {"hierarchical", 32}, {"mars", 40}, {"eagle", 40}};
  for (const auto& [agent, samples] : agents) {
    benchmark::RegisterBenchmark(
        (std::string("BM_AgentCycle/") + agent).c_str(),
        [agent = std::string(agent), samples = samples](
            benchmark::State& state) { BM_AgentCycle(state, agent, samples); })
        ->ArgNames({"threads", "workers"})
        ->Args({1, 1})
        ->Args({2, 1})
        ->Args({1, 2})
        ->Iterations(1)
        ->Unit(benchmark::kSecond)
        ->UseManualTime();
  }
  return true;
}();

void BM_SoftmaxSampleAndPpo(benchmark::State& state) {
  const int groups = static_cast<int>(state.range(0));
  const int batch = 12;
  SoftmaxPolicy policy(groups, kDevices,
                       std::vector<uint8_t>(groups * kDevices, 1));
  torch::optim::SGD sgd(policy->parameters(), torch::optim::SGDOptions(1.0));
  std::mt19937_64 rng(1);
  const torch::Tensor advantages = torch::randn({batch});
  PpoSettings ppo;
  ppo.clip = 0;
  ppo.kl_penalty = 1;
  for (auto _ : state) {
    const torch::Tensor actions = policy->Sample(batch, &rng);
    torch::Tensor old;
    {
      torch::NoGradGuard no_grad;
      old = policy->LogProbs(actions).clone();
    }
    for (int step = 0; step < 10; ++step) {
      sgd.zero_grad();
      PpoLoss(policy->LogProbs(actions), old, actions, advantages, ppo)
          .backward();
      sgd.step();
    }
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_SoftmaxSampleAndPpo)
    ->ArgNames({"groups"})
    ->Arg(256)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A recurrence step's product on one thread: `rows` rows times a weight
// [n, k]^T through RowLinear, plain (OpenBLAS's sgemv per row, in blocks
// of the weight above 2 MB) or with the weight packed once (PackedWeight).
void BM_RowProducts(benchmark::State& state) {
  const int64_t rows = state.range(0), n = state.range(1), k = state.range(2);
  const bool packed = state.range(3) != 0;
  SetComputeThreads(1);
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  const torch::Tensor w = torch::randn({n, k});
  const torch::Tensor x = torch::randn({rows, k});
  const PackedWeight panels = packed ? PackWeight(w.t()) : PackedWeight();
  for (auto _ : state) {
    benchmark::DoNotOptimize(RowLinear(x, w, {}, packed ? &panels : nullptr));
  }
  state.counters["GFLOP_per_s"] =
      benchmark::Counter(2e-9 * static_cast<double>(rows * n * k),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RowProducts)
    ->ArgNames({"rows", "n", "k", "packed"})
    ->ArgsProduct({{2, 5}, {1024}, {256}, {0, 1}})
    ->ArgsProduct({{5}, {2048}, {512}, {0, 1}})
    ->ArgsProduct({{2, 5, 10}, {2048}, {1024}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// What packing costs: a weight [n, k] packed for the products x w^T, once
// per recurrence (forward) and once more for its backward pass.
void BM_PackWeight(benchmark::State& state) {
  SetComputeThreads(1);
  torch::manual_seed(1);
  const torch::Tensor w = torch::randn({state.range(0), state.range(1)});
  for (auto _ : state) benchmark::DoNotOptimize(PackWeight(w.t()));
}
BENCHMARK(BM_PackWeight)
    ->ArgNames({"n", "k"})
    ->Args({1024, 256})
    ->Args({2048, 1024})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dplace

// Google Benchmark's main, after OpenBLAS has its fast kernels (as in
// dplace): the figures are what a search gets.
int main(int argc, char** argv) {
  dplace::UseFastBlasKernels(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
