// Policy-update algorithms as reusable pieces, on the [k, G, D]
// log-probabilities a placement policy (PlacementPolicyImpl) gives for k
// sampled placements of G groups over D devices. Losses are minimised; each is
// the negated objective of its paper, averaged over the k placements and summed
// over the groups.
#ifndef DPLACE_RL_ALGORITHMS_H_
#define DPLACE_RL_ALGORITHMS_H_

#include <torch/torch.h>

#include <vector>

namespace dplace {

// log f(a_kg), [k, G], of `actions` [k, G] under `log_probs` [k, G, D].
torch::Tensor ActionLogProbs(const torch::Tensor& log_probs,
                             const torch::Tensor& actions);

// REINFORCE (Williams 1992; ColocRL eq. 2): -(1/k) sum_i A_i log f(a_i),
// with `advantages` [k] (reward minus baseline), minus `entropy_bonus`
// times the mean over placements of the summed per-group entropies.
torch::Tensor ReinforceLoss(const torch::Tensor& log_probs,
                            const torch::Tensor& actions,
                            const torch::Tensor& advantages,
                            double entropy_bonus = 0);

struct PpoSettings {
  // Clipped surrogate (Schulman et al. 2017) when > 0: the ratio is clipped
  // to [1 - clip, 1 + clip]. 0: the unclipped ratio (Post's form).
  // Default: 0.2.
  double clip = 0.2;
  // β of the KL penalty β KL(f_old || f_new), per group (Post eq. 11).
  // Default: 0.
  double kl_penalty = 0;
  // Weight of the policy's entropy, added to the objective. Default: 0.
  double entropy_bonus = 0;
};

// PPO on per-group ratios r_ig = f_new(a_ig) / f_old(a_ig), as Post's
// eq. (11) writes it for a factorised policy (an autoregressive policy's
// per-step ratios are the same thing):
//   -(1/k) sum_i sum_g [ min(r_ig A_i, clip(r_ig) A_i)
//                        - β KL(f_old,ig || f_new,ig) + c H(f_new,ig) ].
// `old_log_probs` [k, G, D] come from the policy that sampled, detached.
torch::Tensor PpoLoss(const torch::Tensor& log_probs,
                      const torch::Tensor& old_log_probs,
                      const torch::Tensor& actions,
                      const torch::Tensor& advantages,
                      const PpoSettings& settings);

// Indices of the ceil(rho * n) placements of lowest step time (at least
// one), best first; ties by index.
std::vector<int64_t> SelectElite(const std::vector<double>& step_times,
                                 double rho);

// Post's Theorem 1: the minimiser of the sample cross entropy (eq. 9) over
// softmax policies gives each group device j the frequency of j among the
// elite placements `elite` [P, G]; then mixed with the uniform
// distribution over each group's allowed devices (`allowed` [G, D] bool):
// (1 - epsilon) f + epsilon / |allowed|. Returns probabilities [G, D].
torch::Tensor CrossEntropySolution(const torch::Tensor& elite,
                                   const torch::Tensor& allowed,
                                   double epsilon);

// The cross-entropy update for policies without a closed form: maximum
// likelihood of the elite placements, -(1/P) sum_p log f(elite_p), with
// `log_probs` [P, G, D] from the policy given `elite` [P, G].
torch::Tensor EliteLikelihoodLoss(const torch::Tensor& log_probs,
                                  const torch::Tensor& elite);

}  // namespace dplace

#endif  // DPLACE_RL_ALGORITHMS_H_
