#include "dplace/rl/algorithms.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dplace {

torch::Tensor ActionLogProbs(const torch::Tensor& log_probs,
                             const torch::Tensor& actions) {
  return log_probs.gather(2, actions.unsqueeze(2)).squeeze(2);
}

torch::Tensor ReinforceLoss(const torch::Tensor& log_probs,
                            const torch::Tensor& actions,
                            const torch::Tensor& advantages,
                            double entropy_bonus) {
  const torch::Tensor per_sample = ActionLogProbs(log_probs, actions).sum(1);
  torch::Tensor loss = -(advantages.to(per_sample.dtype()) * per_sample).mean();
  if (entropy_bonus != 0) {
    const torch::Tensor entropy = -(log_probs.exp() * log_probs).sum({1, 2});
    loss = loss - entropy_bonus * entropy.mean();
  }
  return loss;
}

torch::Tensor PpoLoss(const torch::Tensor& log_probs,
                      const torch::Tensor& old_log_probs,
                      const torch::Tensor& actions,
                      const torch::Tensor& advantages,
                      const PpoSettings& settings) {
  const torch::Tensor advantage =
      advantages.to(log_probs.dtype()).unsqueeze(1);  // [k, 1].
  const torch::Tensor ratio =
      torch::exp(ActionLogProbs(log_probs, actions) -
                 ActionLogProbs(old_log_probs, actions));
  torch::Tensor objective = ratio * advantage;
  if (settings.clip > 0) {
    objective = torch::min(
        objective,
        ratio.clamp(1 - settings.clip, 1 + settings.clip) * advantage);
  }
  torch::Tensor per_group = objective;  // [k, G].
  if (settings.kl_penalty != 0) {
    const torch::Tensor kl =
        (old_log_probs.exp() * (old_log_probs - log_probs)).sum(2);
    per_group = per_group - settings.kl_penalty * kl;
  }
  if (settings.entropy_bonus != 0) {
    const torch::Tensor entropy = -(log_probs.exp() * log_probs).sum(2);
    per_group = per_group + settings.entropy_bonus * entropy;
  }
  return -per_group.sum(1).mean();
}

std::vector<int64_t> SelectElite(const std::vector<double>& step_times,
                                 double rho) {
  std::vector<int64_t> index(step_times.size());
  std::iota(index.begin(), index.end(), 0);
  std::stable_sort(index.begin(), index.end(), [&](int64_t a, int64_t b) {
    return step_times[a] < step_times[b];
  });
  const size_t count = std::clamp<size_t>(
      static_cast<size_t>(std::ceil(rho * step_times.size() - 1e-9)), 1,
      step_times.size());
  index.resize(count);
  return index;
}

torch::Tensor CrossEntropySolution(const torch::Tensor& elite,
                                   const torch::Tensor& allowed,
                                   double epsilon) {
  const int64_t num_groups = allowed.size(0), num_devices = allowed.size(1);
  const torch::Tensor counts =
      torch::zeros({num_groups, num_devices}, torch::kFloat64)
          .scatter_add_(1, elite.t().contiguous(),
                        torch::ones(elite.t().sizes(), torch::kFloat64));
  const torch::Tensor frequency = counts / static_cast<double>(elite.size(0));
  const torch::Tensor mask = allowed.to(torch::kFloat64);
  const torch::Tensor uniform = mask / mask.sum(1, /*keepdim=*/true);
  return (1 - epsilon) * frequency + epsilon * uniform;
}

torch::Tensor EliteLikelihoodLoss(const torch::Tensor& log_probs,
                                  const torch::Tensor& elite) {
  return -ActionLogProbs(log_probs, elite).sum(1).mean();
}

}  // namespace dplace
