// ColocRL's seq2seq policy: its sampler against its own log-probabilities,
// and its batch split between workers against one thread. (The agent's
// search is tested with the others' in rl/agents_test.cc.)
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <vector>

#include "dplace/rl/agents/colocrl/seq2seq_policy.h"
#include "dplace/rl/algorithms.h"
#include "dplace/testing/policy_test_util.h"

namespace dplace {
namespace {

using testing_policies::ExpectSameGradients;
using testing_policies::TakenLoss;

std::vector<uint8_t> AllAllowed(int groups, int devices) {
  return std::vector<uint8_t>(static_cast<size_t>(groups) * devices, 1);
}

// The sampler decodes step by step, LogProbs teacher-forces the whole
// sequence in one call: both must be the same distribution.
TEST(Seq2SeqPolicyTest, SamplerFollowsItsOwnLogProbabilities) {
  const int groups = 3, devices = 2;
  GroupFeatures f;
  f.type_fractions = torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}, {0.5f, 0.5f}});
  f.sizes = torch::rand({groups, 4});
  f.adjacency = torch::zeros({groups, 2 * groups});
  f.adjacency[1][0] = 1;
  f.order = {2, 0, 1};  // Reading order differs from group ids.
  Seq2SeqConfig config;
  config.hidden = 8;
  config.embedding = 4;
  torch::manual_seed(5);
  Seq2SeqPolicy policy(f, devices, AllAllowed(groups, devices), config);
  // Make the distribution far from uniform.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : policy->parameters()) p.mul_(4);
  }
  std::vector<std::vector<int64_t>> all;
  for (int code = 0; code < 8; ++code) {
    all.push_back({code & 1, (code >> 1) & 1, (code >> 2) & 1});
  }
  torch::Tensor actions = torch::empty({8, groups}, torch::kLong);
  for (int i = 0; i < 8; ++i) {
    for (int g = 0; g < groups; ++g) actions[i][g] = all[i][g];
  }
  const torch::Tensor log_probs = policy->LogProbs(actions);
  const torch::Tensor p = ActionLogProbs(log_probs, actions).sum(1).exp();
  EXPECT_NEAR(p.sum().item<float>(), 1.0, 1e-5);

  std::mt19937_64 rng(11);
  const int n = 20000;
  const torch::Tensor drawn = policy->Sample(n, &rng);
  const torch::Tensor codes =
      drawn.select(1, 0) + 2 * drawn.select(1, 1) + 4 * drawn.select(1, 2);
  for (int code = 0; code < 8; ++code) {
    const double freq = (codes == code).sum().item<int64_t>() / double(n);
    EXPECT_NEAR(freq, p[code].item<float>(), 0.015) << "placement " << code;
  }
}

// ColocRL's seq2seq policy with its k placements split between two
// workers: the same draws, and the gradients of one thread (paper sizes, so
// the recurrences take the row-product path).
Seq2SeqPolicy SmallSeq2Seq(int num_groups, int num_devices) {
  torch::manual_seed(3);
  GroupFeatures f;
  f.type_fractions = torch::rand({num_groups, 3});
  f.sizes = torch::rand({num_groups, 8});
  f.adjacency = torch::zeros({num_groups, 2 * num_groups});
  for (int g = 0; g < num_groups; ++g) f.order.push_back((g * 5) % num_groups);
  std::vector<uint8_t> allowed(static_cast<size_t>(num_groups) * num_devices,
                               1);
  allowed[1] = 0;  // Group 0 may not use device 1.
  return Seq2SeqPolicy(f, num_devices, allowed, Seq2SeqConfig());
}

std::vector<torch::Tensor> RowGradients(Seq2SeqPolicy& policy, int workers,
                                        const torch::Tensor& actions,
                                        bool after_sample) {
  policy->set_workers(workers);
  for (torch::Tensor& p : policy->parameters()) {
    p.mutable_grad() = torch::Tensor();
  }
  if (after_sample) {  // The update reuses the sample's encoding.
    std::mt19937_64 rng(1);
    policy->Sample(static_cast<int>(actions.size(0)), &rng);
  }
  policy->BackwardRows(
      actions, TakenLoss(actions, torch::linspace(-1, 2, actions.size(0)),
                         static_cast<double>(actions.size(0))));
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& p : policy->parameters()) {
    grads.push_back(p.grad().defined() ? p.grad().clone()
                                       : torch::zeros_like(p));
  }
  return grads;
}

// Every split of the rows, a block of one row included (k = 1, 3): the
// same draws (the contract: the same placements and log at any worker
// count), and sampling leaves the weights bitwise as they were (it writes
// none; nothing is computed).
TEST(Seq2SeqWorkersTest, TwoWorkersDrawTheSamePlacements) {
  Seq2SeqPolicy policy = SmallSeq2Seq(12, 3);
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& p : policy->parameters()) {
    before.push_back(p.detach().clone());
  }
  for (int k : {1, 3, 5}) {
    SCOPED_TRACE("k " + std::to_string(k));
    torch::Tensor drawn[2];
    for (int workers : {1, 2}) {
      policy->set_workers(workers);
      std::mt19937_64 rng(9);
      torch::NoGradGuard no_grad;
      drawn[workers - 1] = policy->Sample(k, &rng);
    }
    EXPECT_TRUE(torch::equal(drawn[0], drawn[1]));
    EXPECT_EQ(drawn[0][0][0].item<int64_t>() == 1, false);  // Disallowed.
    const std::vector<torch::Tensor> after = policy->parameters();
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_TRUE(torch::equal(after[i], before[i])) << "parameter " << i;
    }
  }
}

TEST(Seq2SeqWorkersTest, TwoWorkersGiveTheGradientsOfOne) {
  Seq2SeqPolicy policy = SmallSeq2Seq(12, 3);
  torch::manual_seed(4);
  torch::Tensor actions = torch::randint(0, 3, {5, 12}, torch::kInt64);
  actions.select(1, 0).fill_(0);
  for (bool after_sample : {false, true}) {
    const std::vector<torch::Tensor> one =
        RowGradients(policy, 1, actions, after_sample);
    const std::vector<torch::Tensor> two =
        RowGradients(policy, 2, actions, after_sample);
    ASSERT_EQ(one.size(), two.size());
    int nonzero = 0;
    for (size_t i = 0; i < one.size(); ++i) {
      nonzero += one[i].abs().sum().item<double>() > 0;
      EXPECT_TRUE(torch::allclose(one[i], two[i], 1e-4, 1e-6))
          << "parameter " << i << " (after_sample " << after_sample
          << ") differs by " << (one[i] - two[i]).abs().max().item<double>();
    }
    // The encoder's and the decoder's parameters all learn.
    EXPECT_EQ(nonzero, static_cast<int>(one.size()));
  }
}

// The planners' seq2seq placer (both attentions, with EAGLE's link) with
// its update split between two workers: the gradients of one thread, for
// the placer's parameters and for what its input depends on (the grouper,
// here the features and the link), with an extra term added once.
// The update after a Sample decodes the placements it drew from the
// sampling's trace of the decoder (LstmTrace) instead of running the
// recurrence again: the same log-probabilities and gradients as a decode
// from scratch, for all rows in order (the trace itself) and for a subset
// in another order (the update drops infeasible ones), with one worker or
// two.
TEST(Seq2SeqTraceTest, UpdateFromTheSamplingTraceEqualsAFreshDecode) {
  Seq2SeqPolicy policy = SmallSeq2Seq(12, 3);
  const torch::Tensor row_sets[] = {torch::tensor({3, 0, 4}, torch::kInt64),
                                    torch::arange(5)};
  for (int case_index = 0; case_index < 4; ++case_index) {
    const int workers = 1 + case_index % 2;
    const torch::Tensor& rows = row_sets[case_index / 2];
    SCOPED_TRACE("workers " + std::to_string(workers) + ", " +
                 std::to_string(rows.size(0)) + " rows");
    policy->set_workers(workers);
    torch::Tensor log_probs[2];
    std::vector<torch::Tensor> grads[2];
    for (bool traced : {true, false}) {
      std::mt19937_64 rng(7);
      torch::Tensor drawn;
      if (traced) {
        drawn = policy->Sample(5, &rng);
      } else {
        {
          c10::InferenceMode no_trace;  // Sample keeps nothing.
          drawn = policy->Sample(5, &rng);
        }
        drawn = drawn.clone();  // A normal tensor again.
      }
      const torch::Tensor actions = drawn.index_select(0, rows);
      log_probs[traced] = policy->LogProbs(actions).detach();
      for (torch::Tensor& p : policy->parameters()) {
        p.mutable_grad() = torch::Tensor();
      }
      policy->BackwardRows(
          actions, TakenLoss(actions, {}, static_cast<double>(rows.size(0))));
      for (const torch::Tensor& p : policy->parameters()) {
        grads[traced].push_back(p.grad().clone());
      }
    }
    EXPECT_TRUE(torch::allclose(log_probs[0], log_probs[1], 1e-5, 1e-5))
        << (log_probs[0] - log_probs[1]).abs().max().item<double>();
    ExpectSameGradients(grads[0], grads[1]);
  }
}

}  // namespace
}  // namespace dplace
