// Helpers of the policies' tests (rl/, rl/agents/): a loss for
// BackwardRows, and gradients compared to rounding.
#ifndef DPLACE_TESTING_POLICY_TEST_UTIL_H_
#define DPLACE_TESTING_POLICY_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "dplace/rl/nets/policy.h"

namespace dplace::testing_policies {

// For BackwardRows: minus the log-probabilities of the placements
// `actions` [k, G], summed over their groups, weighted by `weights` [k]
// (undefined: 1), summed over the block's rows and divided by `n`.
inline PlacementPolicyImpl::RowsLoss TakenLoss(const torch::Tensor& actions,
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
inline void ExpectSameGradients(const std::vector<torch::Tensor>& a,
                                const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-4, 1e-6))
        << "gradient " << i << " differs by "
        << (a[i] - b[i]).abs().max().item<double>();
  }
}

// Small layers run every product as one sgemm; hidden 256 at up to 16 rows

}  // namespace dplace::testing_policies

#endif  // DPLACE_TESTING_POLICY_TEST_UTIL_H_
