// The planners' seq2seq placer: its batch split between workers, and its
// update from the sampling pass, against one thread and a fresh pass.
#include "dplace/rl/agents/planners/placer_net.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <vector>

#include "dplace/testing/policy_test_util.h"

namespace dplace {
namespace {

using testing_policies::ExpectSameGradients;
using testing_policies::TakenLoss;

// A seq2seq placer for `groups` groups of `features` features on `devices`
// devices, seeded (the same weights on every call); with a link RNN of
// `link` inputs when `link` > 0.
Seq2SeqPlacer SmallPlacer(int64_t groups, int64_t features, int devices,
                          int64_t link, int hidden, bool attention_before) {
  torch::manual_seed(5);
  Seq2SeqPlacerConfig c;
  c.input_size = features + 2 * groups;
  c.link_size = link;
  c.num_devices = devices;
  c.hidden = hidden;
  c.attention_before = attention_before;
  return Seq2SeqPlacer(c);
}

// The placer's sampling split between workers draws what one thread draws,
// with the exploration noise on; its kept log-probabilities are those of
// the noiseless policy that LogProbs computes, and no draw takes a device
// the mask forbids. The contract is the same draws (so the same placements
// and log); the log-probabilities agree to rounding only: two workers
// multiply fewer rows at a time, which BLAS may compute by another kernel
// (it does on AVX-512 EPYCs), and each logit is a float sum of 32 products,
// so a relative error of about 32 * 2^-24 = 2e-6 per logit; 1e-5 bounds it
// after the log-softmax.
TEST(Seq2SeqWorkersTest, PlacerTwoWorkersDrawTheSamePlacements) {
  const int64_t groups = 10, devices = 3, features = 6;
  for (bool before : {false, true}) {
    Seq2SeqPlacer placer =
        SmallPlacer(groups, features, devices, 0, 32, before);
    PlacerInput input;
    input.features = torch::rand({groups, features});
    input.adjacency = torch::zeros({groups, 2 * groups});
    input.mask_bias = torch::zeros({groups, devices});
    input.mask_bias[2][1] = -1e9;
    input.active = torch::ones({groups});
    LogitShaping shaping;
    shaping.tanh_constant = 5;
    shaping.temperature = 10;
    shaping.noise = 0.5;
    std::vector<torch::Tensor> weights;
    for (const torch::Tensor& p : placer->parameters()) {
      weights.push_back(p.detach().clone());
    }
    // A block of one row (k = 3 split 1 + 2) reads the weights as the
    // others do, and no draw changes them.
    for (int k : {1, 3}) {
      torch::Tensor one, two;
      std::mt19937_64 rng_one(11), rng_two(11);
      one = placer->Sample(input, k, shaping, 1, &rng_one);
      two = placer->Sample(input, k, shaping, 2, &rng_two);
      EXPECT_TRUE(torch::equal(one, two)) << "k " << k;
    }
    const std::vector<torch::Tensor> after = placer->parameters();
    for (size_t i = 0; i < weights.size(); ++i) {
      EXPECT_TRUE(torch::equal(after[i], weights[i]))
          << "parameter " << i << ", attention " << before;
    }
    torch::Tensor drawn[2], kept[2];
    for (int workers : {1, 2}) {
      std::mt19937_64 rng(9);
      drawn[workers - 1] = placer->Sample(input, 5, shaping, workers, &rng);
      kept[workers - 1] = placer->SampledLogProbs();
    }
    EXPECT_TRUE(torch::equal(drawn[0], drawn[1])) << "attention " << before;
    EXPECT_TRUE(torch::allclose(kept[0], kept[1], 1e-5, 1e-6))
        << "differs by " << (kept[0] - kept[1]).abs().max().item<double>();
    EXPECT_FALSE((drawn[0].select(1, 2) == 1).any().item<bool>());
    torch::NoGradGuard no_grad;
    const torch::Tensor fresh = placer->LogProbs(input, drawn[0], shaping);
    EXPECT_TRUE(torch::allclose(kept[0], fresh, 1e-4, 1e-5))
        << "differs by " << (kept[0] - fresh).abs().max().item<double>();
  }
}

// The placer's update from what its Sample kept (the encoding with its
// graph, the attention-after decoder's recurrence) gives the gradients of
// one that encodes and decodes afresh: for a reordered subset of the
// placements and for all, with one worker and two, and when the weights
// changed after sampling (then nothing kept may be used).
TEST(Seq2SeqTraceTest, PlacerUpdateFromTheSamplingPassEqualsAFreshOne) {
  const int64_t groups = 10, devices = 3, features = 6;
  const torch::Tensor source = torch::rand({groups, features});
  const torch::Tensor link_source = torch::rand({groups, 8});
  const torch::Tensor row_sets[] = {torch::tensor({3, 0, 4}, torch::kInt64),
                                    torch::arange(5)};
  LogitShaping shaping;
  shaping.tanh_constant = 5;
  shaping.temperature = 10;
  for (int case_index = 0; case_index < 10; ++case_index) {
    const bool before = case_index % 2 == 1;
    const int workers = 1 + (case_index / 2) % 2;
    const bool changed = case_index >= 8;
    const torch::Tensor& rows = row_sets[changed ? 0 : case_index / 4];
    SCOPED_TRACE("attention before " + std::to_string(before) + ", workers " +
                 std::to_string(workers) + ", " + std::to_string(rows.size(0)) +
                 " rows, weights changed " + std::to_string(changed));
    std::vector<torch::Tensor> grads[2];
    for (bool kept : {true, false}) {
      Seq2SeqPlacer placer =
          SmallPlacer(groups, features, devices, 8, 32, before);
      torch::Tensor f = source.clone().requires_grad_();
      torch::Tensor l = link_source.clone().requires_grad_();
      PlacerInput input;
      input.features = f * 2;
      input.adjacency = torch::zeros({groups, 2 * groups});
      input.mask_bias = torch::zeros({groups, devices});
      input.active = torch::ones({groups});
      input.link = l * 3;
      std::mt19937_64 rng(7);
      torch::Tensor drawn;
      if (kept) {
        drawn = placer->Sample(input, 5, shaping, workers, &rng);
      } else {
        {
          c10::InferenceMode keep_nothing;
          drawn = placer->Sample(input, 5, shaping, workers, &rng);
        }
        drawn = drawn.clone();  // A normal tensor again.
      }
      if (changed) {
        torch::NoGradGuard no_grad;
        placer->parameters()[0].add_(0.01);
      }
      const torch::Tensor actions = drawn.index_select(0, rows);
      placer->BackwardRows(
          input, actions, shaping, workers,
          TakenLoss(actions, {}, static_cast<double>(rows.size(0))),
          (f.sum() + l.square().sum()) * 0.5);
      for (const torch::Tensor& p : placer->parameters()) {
        grads[kept].push_back(p.grad().defined() ? p.grad().clone()
                                                 : torch::zeros_like(p));
      }
      grads[kept].push_back(f.grad().clone());
      grads[kept].push_back(l.grad().clone());
    }
    ExpectSameGradients(grads[0], grads[1]);
  }
}

// With an input that carries no gradient, the extra term's backward pass
// (the planners' grouper term) runs beside the encoder's on a second
// thread: the gradients are still those of one worker.
TEST(Seq2SeqWorkersTest, PlacerExtraTermApartGivesTheGradientsOfOne) {
  const int64_t groups = 10, devices = 3, features = 6;
  Seq2SeqPlacer placer = SmallPlacer(groups, features, devices, 0, 32, false);
  PlacerInput input;
  input.features = torch::rand({groups, features});
  input.adjacency = torch::zeros({groups, 2 * groups});
  input.mask_bias = torch::zeros({groups, devices});
  input.active = torch::ones({groups});
  const torch::Tensor actions =
      torch::randint(0, devices, {5, groups}, torch::kInt64);
  const torch::Tensor source = torch::rand({7});
  std::vector<torch::Tensor> results[2];
  for (int workers : {1, 2}) {
    torch::Tensor other = source.clone().requires_grad_();
    for (torch::Tensor& p : placer->parameters()) {
      p.mutable_grad() = torch::Tensor();
    }
    placer->BackwardRows(input, actions, LogitShaping(), workers,
                         TakenLoss(actions, {}, 5.0), other.square().sum());
    for (const torch::Tensor& p : placer->parameters()) {
      results[workers - 1].push_back(p.grad().clone());
    }
    EXPECT_TRUE(torch::allclose(other.grad(), 2 * source));
  }
  ExpectSameGradients(results[0], results[1]);
}

TEST(Seq2SeqWorkersTest, PlacerTwoWorkersGiveTheGradientsOfOne) {
  const int64_t groups = 10, devices = 3, features = 6;
  for (bool before : {false, true}) {
    Seq2SeqPlacer placer =
        SmallPlacer(groups, features, devices, 8, 64, before);
    const torch::Tensor source = torch::rand({groups, features});
    const torch::Tensor link_source = torch::rand({groups, 8});
    const torch::Tensor actions =
        torch::randint(0, devices, {5, groups}, torch::kInt64);
    const torch::Tensor advantages = torch::linspace(-1, 1, 5);
    std::vector<torch::Tensor> results[2];
    for (int workers : {1, 2}) {
      torch::Tensor f = source.clone().requires_grad_();
      torch::Tensor l = link_source.clone().requires_grad_();
      PlacerInput input;
      input.features = f * 2;  // Through an op, as the grouper's would be.
      input.adjacency = torch::zeros({groups, 2 * groups});
      input.mask_bias = torch::zeros({groups, devices});
      input.active = torch::ones({groups});
      input.link = l * 3;
      for (torch::Tensor& p : placer->parameters()) {
        p.mutable_grad() = torch::Tensor();
      }
      placer->BackwardRows(input, actions, LogitShaping(), workers,
                           TakenLoss(actions, advantages, 5.0),
                           (f.sum() + l.square().sum()) * 0.5);
      for (const torch::Tensor& p : placer->parameters()) {
        results[workers - 1].push_back(
            p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
      }
      results[workers - 1].push_back(f.grad().clone());
      results[workers - 1].push_back(l.grad().clone());
    }
    SCOPED_TRACE("attention before " + std::to_string(before));
    ExpectSameGradients(results[0], results[1]);
  }
}

}  // namespace
}  // namespace dplace
