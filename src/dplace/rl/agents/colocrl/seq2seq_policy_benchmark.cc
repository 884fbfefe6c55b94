// ColocRL's attentional seq2seq policy at 256 groups, hidden 256, 5
// devices (k80x4): a batch of 4 placements decoded as one batch, then one
// REINFORCE step with Adam on them; and the sampling alone. Part of
// build/rl_benchmark (its main is rl/rl_benchmark.cc).
//
//   build/rl_benchmark --benchmark_filter=Seq2Seq
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <vector>

#include "dplace/rl/agents/colocrl/seq2seq_policy.h"
#include "dplace/rl/algorithms.h"

namespace dplace {
namespace {

constexpr int kDevices = 5;  // k80x4: one CPU, four GPUs.

// Features of a synthetic chain-like group graph with some skip edges: what
// the policy's cost depends on is only their sizes.
GroupFeatures SyntheticFeatures(int groups, int types) {
  torch::manual_seed(1);
  GroupFeatures f;
  f.type_fractions = torch::softmax(torch::randn({groups, types}), 1);
  f.sizes = torch::rand({groups, 10});
  f.adjacency = torch::zeros({groups, 2 * groups});
  for (int g = 1; g < groups; ++g) {
    f.adjacency[g][g - 1] = 1;
    f.adjacency[g - 1][groups + g] = 1;
    if (g >= 5 && g % 3 == 0) {
      f.adjacency[g][g - 5] = 1;
      f.adjacency[g - 5][groups + g] = 1;
    }
  }
  for (int g = 0; g < groups; ++g) f.order.push_back(g);
  return f;
}

void BM_Seq2SeqSampleAndReinforce(benchmark::State& state) {
  const int groups = static_cast<int>(state.range(0));
  const int hidden = static_cast<int>(state.range(1));
  const int batch = static_cast<int>(state.range(2));
  Seq2SeqConfig config;
  config.hidden = hidden;
  Seq2SeqPolicy policy(SyntheticFeatures(groups, 40), kDevices,
                       std::vector<uint8_t>(groups * kDevices, 1), config);
  torch::optim::Adam adam(policy->parameters(),
                          torch::optim::AdamOptions(0.01));
  std::mt19937_64 rng(1);
  const torch::Tensor advantages = torch::randn({batch});
  for (auto _ : state) {
    const torch::Tensor actions = policy->Sample(batch, &rng);
    adam.zero_grad();
    ReinforceLoss(policy->LogProbs(actions), actions, advantages).backward();
    adam.step();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["threads"] = torch::get_num_threads();
}
BENCHMARK(BM_Seq2SeqSampleAndReinforce)
    ->ArgNames({"groups", "hidden", "batch"})
    ->Args({256, 256, 4})
    ->Args({64, 256, 4})
    ->Args({256, 64, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The sampling half alone (what a search spends before each evaluation).
void BM_Seq2SeqSample(benchmark::State& state) {
  const int groups = static_cast<int>(state.range(0));
  Seq2SeqConfig config;
  config.hidden = 256;
  Seq2SeqPolicy policy(SyntheticFeatures(groups, 40), kDevices,
                       std::vector<uint8_t>(groups * kDevices, 1), config);
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(policy->Sample(4, &rng));
  }
  state.SetItemsProcessed(state.iterations() * 4);
}
BENCHMARK(BM_Seq2SeqSample)
    ->ArgNames({"groups"})
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace dplace
