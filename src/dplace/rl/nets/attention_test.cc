#include "dplace/rl/nets/attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

namespace dplace {
namespace {

// LibTorch's composition of the same scores.
torch::Tensor Reference(const torch::Tensor& keys, const torch::Tensor& queries,
                        const torch::Tensor& v) {
  return torch::matmul(torch::tanh(keys + queries.unsqueeze(-2)), v);
}

TEST(AdditiveAttentionScoresTest, MatchLibTorchsOpsAndTheirGradients) {
  torch::manual_seed(3);
  // A = 19: not a multiple of any vector width; sums from about -25 to 25,
  // past the tanh's clamp at 9.
  for (const std::vector<int64_t>& query_sizes :
       std::vector<std::vector<int64_t>>{{19}, {4, 19}, {3, 5, 19}}) {
    SCOPED_TRACE("queries of rank " + std::to_string(query_sizes.size()));
    const torch::Tensor keys = (5 * torch::randn({37, 19})).requires_grad_();
    const torch::Tensor queries =
        (5 * torch::randn(query_sizes)).requires_grad_();
    const torch::Tensor v = torch::randn({19}).requires_grad_();
    const torch::Tensor d_scores = torch::randn(
        Reference(keys, queries, v).sizes());  // Any loss's gradient.

    const torch::Tensor scores = AdditiveAttentionScores(keys, queries, v);
    const torch::Tensor expected = Reference(keys, queries, v);
    ASSERT_EQ(scores.sizes(), expected.sizes());
    EXPECT_TRUE(torch::allclose(scores, expected, 1e-5, 1e-5));

    const auto grads =
        torch::autograd::grad({scores}, {keys, queries, v}, {d_scores});
    const auto want =
        torch::autograd::grad({expected}, {keys, queries, v}, {d_scores});
    for (size_t i = 0; i < grads.size(); ++i) {
      SCOPED_TRACE("gradient " + std::to_string(i));
      EXPECT_TRUE(torch::allclose(grads[i], want[i], 1e-5, 1e-5))
          << (grads[i] - want[i]).abs().max().item<float>();
    }
  }
}

TEST(AdditiveAttentionScoresTest, RefusesMismatchedShapes) {
  EXPECT_THROW(AdditiveAttentionScores(torch::zeros({5, 4}),
                                       torch::zeros({2, 3}), torch::zeros({4})),
               std::invalid_argument);
  EXPECT_THROW(
      AdditiveAttentionScores(torch::zeros({5, 4}), torch::zeros({2, 4}),
                              torch::zeros({4}, torch::kFloat64)),
      std::invalid_argument);
}

}  // namespace
}  // namespace dplace
