// The update algorithms and policies against hand-computed or numerically
// computed answers: Post's closed-form cross-entropy solution against a
// numerical minimisation of its eq. (9), PPO's gradient at the old policy
// against REINFORCE's, clipping, the KL penalty.
#include "dplace/rl/algorithms.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "dplace/rl/nets/policy.h"
#include "dplace/rl/policy_agent.h"

namespace dplace {
namespace {

using ::testing::ElementsAre;

std::vector<uint8_t> AllAllowed(int groups, int devices) {
  return std::vector<uint8_t>(static_cast<size_t>(groups) * devices, 1);
}

TEST(SelectEliteTest, KeepsTheCeilOfRhoNLowestTimesTiesByIndex) {
  EXPECT_THAT(SelectElite({3, 1, 2, 1, 5}, 0.4), ElementsAre(1, 3));
  EXPECT_THAT(SelectElite({3, 1, 2, 1, 5}, 0.5), ElementsAre(1, 3, 2));
  EXPECT_THAT(SelectElite({3, 1}, 0.01), ElementsAre(1));  // At least one.
  // Post: 6 best out of 60 with rho = 0.1.
  std::vector<double> times(60);
  for (int i = 0; i < 60; ++i) times[i] = 60 - i;
  EXPECT_EQ(SelectElite(times, 0.1).size(), 6u);
}

// Post, Theorem 1: the closed form (eq. 10) minimises the sample cross
// entropy (eq. 9) over softmax parameters. Minimise eq. (9) numerically
// from random starts and compare the distributions.
TEST(CrossEntropySolutionTest, MatchesANumericalMinimisationOfEquation9) {
  const int num_samples = 50, num_groups = 3, num_devices = 4;
  std::mt19937_64 rng(7);
  torch::Tensor samples = torch::empty({num_samples, num_groups}, torch::kLong);
  std::vector<double> times(num_samples);
  for (int n = 0; n < num_samples; ++n) {
    for (int g = 0; g < num_groups; ++g) {
      // The first ten cover every device of every group, so the optimum is
      // interior (a device the elite never uses has probability 0, which a
      // finite u only approaches).
      samples[n][g] = n < 10 ? (n + g) % num_devices
                             : static_cast<int64_t>(rng() % num_devices);
    }
    times[n] = n < 10 ? 1.0 + 0.01 * n : 2.0 + (rng() % 1000) * 1e-3;
  }
  const double rho = 0.2;  // gamma_t: the 10th lowest time.
  const std::vector<int64_t> elite = SelectElite(times, rho);
  ASSERT_EQ(elite.size(), 10u);
  const torch::Tensor allowed =
      torch::ones({num_groups, num_devices}, torch::kBool);
  const torch::Tensor closed_form = CrossEntropySolution(
      samples.index_select(0, torch::tensor(elite)), allowed, 0);

  // Eq. (9): -(1/N) sum_n I{T(d_n) <= gamma} log f(d_n | u).
  const double gamma = times[elite.back()];
  torch::Tensor indicator = torch::zeros({num_samples});
  for (int n = 0; n < num_samples; ++n) indicator[n] = times[n] <= gamma;
  torch::manual_seed(3);
  torch::Tensor u = torch::randn({num_groups, num_devices}).requires_grad_();
  torch::optim::LBFGS optimizer(
      {u}, torch::optim::LBFGSOptions(1).max_iter(500).tolerance_grad(1e-12));
  auto objective = [&] {
    optimizer.zero_grad();
    const torch::Tensor log_f =
        torch::log_softmax(u, 1).unsqueeze(0).expand({num_samples, -1, -1});
    const torch::Tensor loss =
        -(indicator * ActionLogProbs(log_f, samples).sum(1)).sum() /
        num_samples;
    loss.backward();
    return loss;
  };
  for (int i = 0; i < 5; ++i) optimizer.step(objective);
  const torch::Tensor numerical = torch::softmax(u.detach(), 1);
  EXPECT_TRUE(torch::allclose(numerical.to(torch::kDouble), closed_form,
                              /*rtol=*/0, /*atol=*/1e-4))
      << "numerical\n"
      << numerical << "\nclosed form\n"
      << closed_form;
}

TEST(CrossEntropySolutionTest, MixesUniformOverAllowedDevicesOnly) {
  const torch::Tensor elite = torch::tensor({{0, 2}, {0, 2}}, torch::kLong);
  const torch::Tensor allowed =
      torch::tensor({{1, 1, 1}, {0, 1, 1}}, torch::kBool);
  const torch::Tensor p = CrossEntropySolution(elite, allowed, 0.1);
  const torch::Tensor expected = torch::tensor(
      {{0.9 + 0.1 / 3, 0.1 / 3, 0.1 / 3}, {0.0, 0.05, 0.95}}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(p, expected, 0, 1e-12)) << p;
}

TEST(PpoLossTest, GradientAtTheOldPolicyIsReinforcesWithoutPenalties) {
  torch::manual_seed(1);
  const torch::Tensor u = torch::randn({4, 3}).requires_grad_();
  const torch::Tensor actions =
      torch::tensor({{0, 1, 2, 0}, {2, 2, 1, 1}}, torch::kLong);
  const torch::Tensor advantages = torch::tensor({0.5, -1.5});
  auto log_probs = [&] {
    return torch::log_softmax(u, 1).unsqueeze(0).expand({2, 4, 3});
  };
  ReinforceLoss(log_probs(), actions, advantages).backward();
  const torch::Tensor reinforce = u.grad().clone();
  u.grad().zero_();
  PpoSettings ppo;
  ppo.clip = 0.2;
  ppo.kl_penalty = 1;  // KL(old || new) has zero gradient at new == old.
  PpoLoss(log_probs(), log_probs().detach(), actions, advantages, ppo)
      .backward();
  EXPECT_TRUE(torch::allclose(u.grad(), reinforce, 1e-5, 1e-6));
}

TEST(PpoLossTest, ClippingStopsTheGradientBeyondTheTrustRegion) {
  // One group, two devices; the new policy already favours the sampled
  // device (ratio 0.9 / 0.5 = 1.8 > 1.2) and the advantage is positive.
  const torch::Tensor u =
      torch::tensor({{std::log(9.0f), 0.0f}}).requires_grad_();
  const torch::Tensor old =
      torch::log(torch::tensor({{0.5, 0.5}})).unsqueeze(0);
  const torch::Tensor actions = torch::tensor({{0}}, torch::kLong);
  PpoSettings ppo;
  ppo.clip = 0.2;
  PpoLoss(torch::log_softmax(u, 1).unsqueeze(0), old, actions,
          torch::tensor({1.0}), ppo)
      .backward();
  EXPECT_EQ(u.grad().abs().sum().item<float>(), 0);
  // Without clipping the same sample still pushes.
  u.grad().zero_();
  ppo.clip = 0;
  PpoLoss(torch::log_softmax(u, 1).unsqueeze(0), old, actions,
          torch::tensor({1.0}), ppo)
      .backward();
  EXPECT_GT(u.grad().abs().sum().item<float>(), 0);
}

TEST(PpoLossTest, KlPenaltyIsTheExactDivergence) {
  // Zero advantage: the loss is beta * KL(old || new) alone.
  const torch::Tensor old = torch::log(torch::tensor({{0.5, 0.5}}));
  const torch::Tensor now = torch::log(torch::tensor({{0.8, 0.2}}));
  PpoSettings ppo;
  ppo.clip = 0;
  ppo.kl_penalty = 2;
  const double loss =
      PpoLoss(now.unsqueeze(0), old.unsqueeze(0),
              torch::tensor({{0}}, torch::kLong), torch::tensor({0.0}), ppo)
          .item<double>();
  const double kl = 0.5 * std::log(0.5 / 0.8) + 0.5 * std::log(0.5 / 0.2);
  EXPECT_NEAR(loss, 2 * kl, 1e-6);
}

TEST(ReinforceLossTest, EntropyBonusIsTheMeanSummedEntropy) {
  // Two placements of two groups; the second group's last device is masked
  // (probability 0), which must add nothing (not NaN) to the entropy.
  const torch::Tensor p = torch::tensor({{{0.5, 0.5, 0.0}, {0.8, 0.2, 0.0}},
                                         {{0.25, 0.25, 0.5}, {1.0, 0.0, 0.0}}},
                                        torch::kDouble);
  const torch::Tensor log_probs = torch::log(p).clamp_min(-1e9);
  const torch::Tensor actions = torch::tensor({{0, 1}, {2, 0}}, torch::kLong);
  const torch::Tensor advantages = torch::tensor({0.5, -1.0}, torch::kDouble);
  const double plain =
      ReinforceLoss(log_probs, actions, advantages).item<double>();
  const double with =
      ReinforceLoss(log_probs, actions, advantages, 0.1).item<double>();
  auto h = [](std::vector<double> q) {
    double sum = 0;
    for (double x : q) sum -= x > 0 ? x * std::log(x) : 0;
    return sum;
  };
  const double entropy =
      0.5 * (h({0.5, 0.5}) + h({0.8, 0.2}) + h({0.25, 0.25, 0.5}) + h({1.0}));
  EXPECT_NEAR(with, plain - 0.1 * entropy, 1e-12);
}

TEST(ReinforceLossTest, EntropyBonusAloneStepsTowardUniform) {
  const torch::Tensor u = torch::tensor({{2.0, 0.0, -1.0}}).requires_grad_();
  const torch::Tensor actions = torch::tensor({{0}}, torch::kLong);
  ReinforceLoss(torch::log_softmax(u, 1).unsqueeze(0), actions,
                torch::tensor({0.0}), 0.5)
      .backward();
  // Descending the loss lowers the favourite's logit, raises the others'.
  EXPECT_GT(u.grad()[0][0].item<float>(), 0);
  EXPECT_LT(u.grad()[0][2].item<float>(), 0);
}

TEST(SoftmaxPolicyTest, StartsUniformOverAllowedDevicesAndNeverSamplesOthers) {
  std::vector<uint8_t> allowed = AllAllowed(2, 3);
  allowed[1 * 3 + 0] = 0;  // Group 1 may not go to device 0.
  SoftmaxPolicy policy(2, 3, allowed);
  std::mt19937_64 rng(1);
  const torch::Tensor a = policy->Sample(3000, &rng);
  for (int d = 0; d < 3; ++d) {
    EXPECT_NEAR((a.select(1, 0) == d).sum().item<int64_t>() / 3000.0, 1.0 / 3,
                0.03);
  }
  EXPECT_EQ((a.select(1, 1) == 0).sum().item<int64_t>(), 0);
  policy->SetProbabilities(torch::tensor({{0.7, 0.2, 0.1}, {0.0, 0.5, 0.5}}));
  const torch::Tensor p = policy->Probabilities();
  EXPECT_NEAR(p[0][0].item<float>(), 0.7, 1e-6);
  EXPECT_NEAR(p[1][1].item<float>(), 0.5, 1e-6);
}

TEST(EliteLikelihoodLossTest, StepsTowardTheElite) {
  SoftmaxPolicy policy(2, 3, AllAllowed(2, 3));
  torch::optim::SGD sgd(policy->parameters(), torch::optim::SGDOptions(1.0));
  const torch::Tensor elite = torch::tensor({{2, 1}, {2, 0}}, torch::kLong);
  for (int i = 0; i < 50; ++i) {
    sgd.zero_grad();
    EliteLikelihoodLoss(policy->LogProbs(elite), elite).backward();
    sgd.step();
  }
  const torch::Tensor p = policy->Probabilities();
  EXPECT_GT(p[0][2].item<float>(), 0.95);
  EXPECT_NEAR(p[1][0].item<float>(), 0.5, 0.02);
  EXPECT_NEAR(p[1][1].item<float>(), 0.5, 0.02);
}

// Multi-controller training: GradientStep hands every gradient, flattened
// in parameter order, to the averaging callback and steps with what it
// returns. Here the other controller's gradient is zero, so the mean is half.
TEST(GradientStepTest, StepsWithTheAveragedGradient) {
  torch::manual_seed(1);
  torch::nn::Linear linear(3, 2);
  torch::nn::Linear unused(1, 1);  // Takes part with zeros.
  auto module = std::make_shared<torch::nn::Module>();
  module->register_module("linear", linear);
  module->register_module("unused", unused);
  const torch::Tensor weight_before = linear->weight.detach().clone();
  torch::optim::SGD sgd(module->parameters(), torch::optim::SGDOptions(1.0));
  const torch::Tensor x = torch::tensor({{1.0f, 2.0f, 3.0f}});
  int64_t seen = 0;
  GradientStep(linear->forward(x).sum(), module.get(), &sgd, /*grad_clip=*/0,
               [&seen](std::vector<float>* gradient) {
                 seen = static_cast<int64_t>(gradient->size());
                 for (float& g : *gradient) g /= 2;
               });
  EXPECT_EQ(seen, 3 * 2 + 2 + 1 + 1);  // Weights and biases of both.
  // d(sum)/dW = x for each output row; half of it was applied.
  const torch::Tensor expected = weight_before - 0.5 * x.expand({2, 3});
  EXPECT_TRUE(torch::allclose(linear->weight, expected)) << linear->weight;
}

}  // namespace
}  // namespace dplace
