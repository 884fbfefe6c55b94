#include "dplace/rl/nets/lstm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dplace/rl/nets/placer_net.h"
#include "dplace/rl/nets/policy.h"

namespace dplace {
namespace {

// Outputs and the gradients of every parameter and initial state of one
// run, for comparing two implementations of the same LSTM.
struct Results {
  torch::Tensor outputs, h, c;
  std::vector<torch::Tensor> grads;
};

Results Differentiate(const torch::Tensor& outputs, const torch::Tensor& h,
                      const torch::Tensor& c,
                      const std::vector<torch::Tensor>& inputs) {
  // A loss that reads every output and both final states with different
  // weights, so every gradient path is exercised.
  torch::manual_seed(7);
  const torch::Tensor loss = (outputs * torch::randn(outputs.sizes())).sum() +
                             (h * torch::randn(h.sizes())).sum() +
                             (c * torch::randn(c.sizes())).sum();
  Results run{outputs.detach(), h.detach(), c.detach(),
              torch::autograd::grad({loss}, inputs)};
  return run;
}

void ExpectClose(const Results& a, const Results& b) {
  EXPECT_TRUE(torch::allclose(a.outputs, b.outputs, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(a.h, b.h, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(a.c, b.c, 1e-5, 1e-5));
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a.grads[i], b.grads[i], 1e-4, 1e-5))
        << "gradient " << i << " differs by "
        << (a.grads[i] - b.grads[i]).abs().max().item<float>();
  }
}

// For BackwardRows: minus the log-probabilities of the placements
// `actions` [k, G], summed over their groups, weighted by `weights` [k]
// (undefined: 1), summed over the block's rows and divided by `n`.
PlacementPolicyImpl::RowsLoss TakenLoss(const torch::Tensor& actions,
                                        const torch::Tensor& weights,
                                        double n) {
  return [actions, weights, n](const torch::Tensor& log_probs,
                               const torch::Tensor& rows) {
    torch::Tensor taken =
        log_probs.gather(2, actions.index_select(0, rows).unsqueeze(2))
            .squeeze(2)
            .sum(1);
    if (weights.defined()) taken = taken * weights.index_select(0, rows);
    return -taken.sum() / n;
  };
}

// Every pair of gradients agrees to rounding (a split or a shortcut of a
// computation against the plain one).
void ExpectSameGradients(const std::vector<torch::Tensor>& a,
                         const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-4, 1e-6))
        << "gradient " << i << " differs by "
        << (a[i] - b[i]).abs().max().item<double>();
  }
}

// Small layers run every product as one sgemm; hidden 256 at up to 16 rows
// runs the recurrent products with the weight packed (PackedProducts: 4
// rows as one group, 10 as two), 17 rows again as one sgemm (lstm.cc).
class LstmSizeTest
    : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

INSTANTIATE_TEST_SUITE_P(BatchAndHidden, LstmSizeTest,
                         ::testing::Values(std::make_pair(3, 6),
                                           std::make_pair(4, 256),
                                           std::make_pair(10, 256),
                                           std::make_pair(17, 256)));

TEST_P(LstmSizeTest, MatchesTorchLstmAndItsGradients) {
  torch::manual_seed(1);
  const auto [batch, hidden] = GetParam();
  const int64_t steps = 9, in = 5;
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(in, hidden));
  const torch::Tensor input = torch::randn({steps, batch, in}).requires_grad_();
  const torch::Tensor h0 = torch::randn({batch, hidden}).requires_grad_();
  const torch::Tensor c0 = torch::randn({batch, hidden}).requires_grad_();
  std::vector<torch::Tensor> inputs = lstm->parameters();
  inputs.insert(inputs.end(), {input, h0, c0});

  auto [out, state] =
      lstm(input, std::make_tuple(h0.unsqueeze(0), c0.unsqueeze(0)));
  const Results expected = Differentiate(out, std::get<0>(state).squeeze(0),
                                         std::get<1>(state).squeeze(0), inputs);
  const LstmSequence s = RunLstm(lstm, input, h0, c0);
  ExpectClose(Differentiate(s.outputs, s.h, s.c, inputs), expected);
}

TEST(LstmTest, ReverseDirectionMatchesABidirectionalTorchLstm) {
  torch::manual_seed(2);
  const int64_t steps = 7, batch = 2, in = 4, hidden = 3;
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(in, hidden).bidirectional(true));
  const torch::Tensor input = torch::randn({steps, batch, in}).requires_grad_();
  std::vector<torch::Tensor> inputs = lstm->parameters();
  inputs.push_back(input);

  auto [out, state] = lstm(input);
  const torch::Tensor& h = std::get<0>(state);  // [2, B, H].
  const torch::Tensor& c = std::get<1>(state);
  const Results expected = Differentiate(out, torch::cat({h[0], h[1]}, 1),
                                         torch::cat({c[0], c[1]}, 1), inputs);
  const LstmSequence forward = RunLstm(lstm, input);
  const LstmSequence backward = RunLstm(lstm, input, {}, {}, /*reverse=*/true);
  ExpectClose(Differentiate(torch::cat({forward.outputs, backward.outputs}, 2),
                            torch::cat({forward.h, backward.h}, 1),
                            torch::cat({forward.c, backward.c}, 1), inputs),
              expected);
}

TEST(LstmTest, StepsAgreeWithTheSequence) {
  torch::manual_seed(3);
  const int64_t steps = 5, batch = 4, in = 3, hidden = 8;
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(in, hidden));
  const torch::Tensor input = torch::randn({steps, batch, in});
  torch::NoGradGuard no_grad;
  const LstmSequence s = RunLstm(lstm, input);
  const LstmWeights w = LayerWeights(lstm);
  torch::Tensor h = torch::zeros({batch, hidden});
  torch::Tensor c = torch::zeros({batch, hidden});
  for (int64_t t = 0; t < steps; ++t) {
    LstmStep(torch::linear(input[t], w.w_ih, w.bias), w.w_hh, &h, &c);
    EXPECT_TRUE(torch::allclose(h, s.outputs[t], 1e-6, 1e-6)) << "step " << t;
  }
  EXPECT_TRUE(torch::allclose(c, s.c, 1e-6, 1e-6));
}

TEST(RowProductsTest, MatchTorchLinearAndMmOnEveryPath) {
  torch::manual_seed(5);
  const torch::Tensor large = torch::randn({1024, 256});
  // Rows contiguous but not the matrix: a slice of columns.
  const torch::Tensor sliced = torch::randn({1024, 300}).slice(1, 10, 266);
  const torch::Tensor small = torch::randn({16, 8});
  // Read in blocks of rows (more than 2^19 elements), the last one short.
  const torch::Tensor blocked = torch::randn({2100, 300}).slice(1, 0, 260);
  for (const torch::Tensor& w : {large, sliced, small, blocked}) {
    const torch::Tensor bias = torch::randn({w.size(0)});
    for (int64_t rows : {1, 4, 8, 9}) {
      SCOPED_TRACE("w " + std::to_string(w.size(0)) + "x" +
                   std::to_string(w.size(1)) + ", rows " +
                   std::to_string(rows));
      const torch::Tensor x = torch::randn({rows, w.size(1)});
      EXPECT_TRUE(torch::allclose(RowLinear(x, w, bias),
                                  torch::linear(x, w, bias), 1e-5, 1e-4));
      EXPECT_TRUE(
          torch::allclose(RowLinear(x, w), torch::linear(x, w), 1e-5, 1e-4));
      const torch::Tensor y = torch::randn({rows, w.size(0)});
      EXPECT_TRUE(torch::allclose(RowMm(y, w), y.mm(w), 1e-5, 1e-4));
    }
  }
}

// Every row count and panel remainder, either orientation of the weight
// (a transposed view packs as well as a contiguous matrix), rows and outputs
// with strides wider than the rows, and both the accumulating and the
// overwriting product.
TEST(PackedWeightTest, ProductsMatchMm) {
  torch::manual_seed(6);
  for (const int64_t inputs : {1, 7, 256}) {
    for (const int64_t outputs : {1, 31, 32, 33, 300}) {
      const torch::Tensor w = torch::randn({outputs, inputs});
      for (const torch::Tensor& b : {w.t(), torch::randn({inputs, outputs})}) {
        const PackedWeight packed = PackWeight(b);
        ASSERT_EQ(packed.inputs(), inputs);
        ASSERT_EQ(packed.outputs, outputs);
        for (const int64_t rows : {1, 2, 5, 8, 9, 16, 17}) {
          SCOPED_TRACE(std::to_string(rows) + " x [" + std::to_string(inputs) +
                       ", " + std::to_string(outputs) + "]");
          const torch::Tensor x =
              torch::randn({rows, inputs + 3}).slice(1, 0, inputs);
          for (const bool accumulate : {false, true}) {
            const torch::Tensor start = torch::randn({rows, outputs + 2});
            torch::Tensor out = start.clone();
            PackedProducts(packed, x.data_ptr<float>(), x.stride(0), rows,
                           out.data_ptr<float>(), out.stride(0), accumulate);
            torch::Tensor expected = start.clone();
            expected.slice(1, 0, outputs)
                .copy_(x.mm(b) + (accumulate ? start.slice(1, 0, outputs)
                                             : torch::zeros({rows, outputs})));
            EXPECT_TRUE(torch::allclose(out, expected, 1e-5, 1e-4))
                << (out - expected).abs().max().item<double>();
          }
        }
      }
    }
  }
}

TEST(RowProductsTest, PackedWeightGivesTheSameProducts) {
  torch::manual_seed(7);
  const torch::Tensor w = torch::randn({1030, 256});
  const torch::Tensor bias = torch::randn({1030});
  const PackedWeight packed = PackWeight(w.t());
  for (int64_t rows : {1, 5, 12}) {
    const torch::Tensor x = torch::randn({rows, 256});
    EXPECT_TRUE(torch::allclose(RowLinear(x, w, bias, &packed),
                                torch::linear(x, w, bias), 1e-5, 1e-4));
  }
}

// The context-feeding decoder's recurrence against the same recurrence in
// LibTorch's ops: the same states and the same gradients of all eight
// inputs, through steps whose gradients reach each other by h, c and the
// attention. Hidden 192 makes the [4H, 2H] weight large enough to be packed
// (PackedWeight) in both passes.
TEST(AttentionFeedingTest, MatchesLibTorchOpsAndTheirGradients) {
  for (const int64_t hidden : {8, 192}) {
    SCOPED_TRACE("hidden " + std::to_string(hidden));
    torch::manual_seed(9);
    const int64_t steps = 5, batch = 3, groups = 7, size = 6;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hidden));
    std::vector<torch::Tensor> in = {
        torch::randn({steps, batch, 4 * hidden}),        // x_gates
        torch::randn({batch, hidden}) * 0.5,             // h0
        torch::randn({batch, hidden}),                   // c0
        torch::randn({groups, size}),                    // keys
        torch::randn({groups, hidden}),                  // states
        torch::randn({size}),                            // v
        torch::randn({size, hidden}) * scale,            // w_query
        torch::randn({4 * hidden, 2 * hidden}) * scale,  // w
    };
    for (torch::Tensor& t : in) t.requires_grad_();
    const torch::Tensor loss_weights = torch::randn({steps, batch, hidden});
    auto reference = [&]() {
      torch::Tensor h = in[1], c = in[2];
      std::vector<torch::Tensor> out;
      for (int64_t t = 0; t < steps; ++t) {
        const torch::Tensor q = h.mm(in[6].t());
        const torch::Tensor scores =
            (torch::tanh(in[3].unsqueeze(0) + q.unsqueeze(1)) * in[5]).sum(2);
        const torch::Tensor context = torch::softmax(scores, 1).mm(in[4]);
        const std::vector<torch::Tensor> g =
            (in[0][t] + torch::cat({context, h}, 1).mm(in[7].t())).chunk(4, 1);
        c = torch::sigmoid(g[1]) * c + torch::sigmoid(g[0]) * torch::tanh(g[2]);
        h = torch::sigmoid(g[3]) * torch::tanh(c);
        out.push_back(h);
      }
      return torch::stack(out, 0);
    };
    auto differentiate = [&](const torch::Tensor& out) {
      std::vector<torch::Tensor> d =
          torch::autograd::grad({(out * loss_weights).sum()}, in);
      d.push_back(out.detach());
      return d;
    };
    const std::vector<torch::Tensor> expected = differentiate(reference());
    const std::vector<torch::Tensor> got =
        differentiate(AttentionFeedingRecurrence(in[0], in[1], in[2], in[3],
                                                 in[4], in[5], in[6], in[7]));
    // To rounding, relative to each gradient's scale (sums of up to 384
    // terms in another order; tanh and sigmoid to about 2e-7).
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE((got[i] - expected[i]).abs().max().item<double>(),
                1e-5 * expected[i].abs().max().item<double>())
          << "input " << i;
    }
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

TEST(Seq2SeqWorkersTest, TwoWorkersDrawTheSamePlacements) {
  Seq2SeqPolicy policy = SmallSeq2Seq(12, 3);
  torch::Tensor drawn[2];
  for (int workers : {1, 2}) {
    policy->set_workers(workers);
    std::mt19937_64 rng(9);
    torch::NoGradGuard no_grad;
    drawn[workers - 1] = policy->Sample(5, &rng);
  }
  EXPECT_TRUE(torch::equal(drawn[0], drawn[1]));
  EXPECT_EQ(drawn[0][0][0].item<int64_t>() == 1, false);  // Disallowed.
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
