#include "dplace/rl/nets/lstm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

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
      const torch::Tensor expected = torch::linear(x, w, bias);
      const torch::Tensor bias_before = bias.clone();
      EXPECT_TRUE(torch::allclose(RowLinear(x, w, bias), expected, 1e-5, 1e-4));
      // The bias is read, never written (for one row, an expanded bias is
      // contiguous: a product into it would change the parameter).
      EXPECT_TRUE(torch::equal(bias, bias_before));
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
    const torch::Tensor expected = torch::linear(x, w, bias);
    const torch::Tensor bias_before = bias.clone();
    EXPECT_TRUE(
        torch::allclose(RowLinear(x, w, bias, &packed), expected, 1e-5, 1e-4));
    EXPECT_TRUE(torch::equal(bias, bias_before));
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

}  // namespace
}  // namespace dplace
