// PolicyAgent, the base of the agents that sample from one policy (Post,
// ColocRL, Mars), and what every LibTorch agent shares: converting between
// sampled action tensors and the search's group devices, the buffer of
// samples the cross-entropy update draws its elite from, and checkpointing
// a policy with its optimizer. Internal to src/dplace/rl.
#ifndef DPLACE_RL_POLICY_AGENT_H_
#define DPLACE_RL_POLICY_AGENT_H_

#include <torch/torch.h>

#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dplace/rl/agent.h"
#include "dplace/rl/algorithms.h"
#include "dplace/rl/nets/policy.h"
#include "dplace/util/format.h"

namespace dplace {

// The name of `value` in `names` (an OptionReader::Enum list that holds
// every value of E).
template <typename E>
const std::string& EnumName(const std::vector<std::pair<std::string, E>>& names,
                            E value) {
  for (const auto& [name, e] : names) {
    if (e == value) return name;
  }
  throw std::logic_error("a value missing from its names");
}

// Checks a tensor read from a checkpoint before anything reads its data:
// defined, on the CPU, strided, and its elements within its storage (the
// unpickler takes sizes, strides and offset from the file unchecked).
// Throws std::runtime_error naming `what`.
void CheckLoadedTensor(const torch::Tensor& t, const std::string& what);

// A one-element int64 tensor read from a checkpoint, >= 0.
int64_t LoadedCount(const torch::Tensor& t, const std::string& what);

// Rows of an [k, G] int64 action tensor as device vectors.
inline std::vector<std::vector<DeviceId>> ActionRows(
    const torch::Tensor& actions) {
  auto a = actions.accessor<int64_t, 2>();
  std::vector<std::vector<DeviceId>> out(actions.size(0));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].resize(actions.size(1));
    for (size_t g = 0; g < out[i].size(); ++g) out[i][g] = a[i][g];
  }
  return out;
}

// The batch's placements as an [k, G] action tensor; with `used_only`, only
// those the warm-up rule lets update the policy.
inline torch::Tensor BatchActions(const EvaluatedBatch& batch, int num_groups,
                                  bool used_only) {
  std::vector<int64_t> flat;
  int64_t rows = 0;
  for (size_t i = 0; i < batch.group_devices.size(); ++i) {
    if (used_only && !batch.use[i]) continue;
    flat.insert(flat.end(), batch.group_devices[i].begin(),
                batch.group_devices[i].end());
    ++rows;
  }
  return torch::tensor(flat, torch::kInt64).reshape({rows, num_groups});
}

// The rows of `per_sample` (one per placement of `batch`) that the warm-up
// rule lets update; undefined when `per_sample` is.
inline torch::Tensor UsedRows(const torch::Tensor& per_sample,
                              const EvaluatedBatch& batch) {
  if (!per_sample.defined()) return {};
  std::vector<int64_t> used;
  for (size_t i = 0; i < batch.use.size(); ++i) {
    if (batch.use[i]) used.push_back(static_cast<int64_t>(i));
  }
  return per_sample.index_select(0, torch::tensor(used, torch::kInt64));
}

// Advantages of the placements the warm-up rule lets update, as float32.
inline torch::Tensor UsedAdvantages(const EvaluatedBatch& batch) {
  std::vector<double> advantages;
  for (size_t i = 0; i < batch.advantages.size(); ++i) {
    if (batch.use[i]) advantages.push_back(batch.advantages[i]);
  }
  return torch::tensor(advantages, torch::kFloat64).to(torch::kFloat32);
}

// One group placement as an action row, [1, G] int64.
inline torch::Tensor PlacementRow(const std::vector<DeviceId>& group_devices) {
  return torch::tensor(
             std::vector<int64_t>(group_devices.begin(), group_devices.end()),
             torch::kInt64)
      .view({1, -1});
}

// An agent whose placements are drawn from one placement policy (Post and
// its baselines, ColocRL, Mars): its DoSample draws from the policy's
// distribution under the search's generator. The planners, which sample a
// grouping before the placements, are agents of their own.
class PolicyAgent : public Agent {
 public:
  using Agent::Agent;

 protected:
  // The policy DoInit built. REQUIRES: DoInit has run.
  virtual PlacementPolicyImpl& policy() = 0;

  std::vector<std::vector<DeviceId>> DoSample(int k,
                                              std::mt19937_64* rng) final {
    policy().set_workers(settings().workers);
    return ActionRows(policy().Sample(k, rng));
  }

  // Maximum likelihood of `group_devices` with Adam at 1e-3, one step
  // after another until the mean probability per group reaches
  // `confidence`, 1,000 steps or the end of the budget.
  StatusOr<int> DoWarmStart(const std::vector<DeviceId>& group_devices,
                            double confidence,
                            const std::function<bool()>& budget_left) override;

  // A GradientStepRows of maximum likelihood on `group_devices` with
  // optimizer() and the gradient clipping of grad_clip().
  Status DoImitate(const std::vector<DeviceId>& group_devices) override;

  // The optimizer of the agent's updates, and the norm its gradients are
  // clipped to (0: none).
  virtual torch::optim::Optimizer& optimizer() = 0;
  virtual double grad_clip() const { return 0; }
};

// Samples (actions and step times) since the last cross-entropy update.
class EliteBuffer {
 public:
  void Reset(int num_groups) {
    num_groups_ = num_groups;
    actions_ = torch::empty({0, num_groups}, torch::kInt64);
    times_ = torch::empty({0}, torch::kFloat64);
  }
  void Append(const torch::Tensor& actions,
              const std::vector<double>& step_times) {
    actions_ = torch::cat({actions_, actions});
    times_ = torch::cat({times_, torch::tensor(step_times, torch::kFloat64)});
  }
  int64_t size() const { return actions_.size(0); }
  // The ceil(ratio * size) samples of lowest step time, [P, G].
  torch::Tensor Elite(double ratio) const {
    const std::vector<double> times(times_.data_ptr<double>(),
                                    times_.data_ptr<double>() + times_.numel());
    return actions_.index_select(0, torch::tensor(SelectElite(times, ratio)));
  }
  void Save(torch::serialize::OutputArchive* archive) const {
    archive->write("buffer_actions", actions_);
    archive->write("buffer_times", times_);
  }
  // Throws std::runtime_error on a buffer of the wrong shape or type, or
  // with an action outside [0, value_limit) (the search loop turns it into
  // a corrupt-checkpoint error).
  void Load(torch::serialize::InputArchive* archive, int64_t value_limit) {
    archive->read("buffer_actions", actions_);
    archive->read("buffer_times", times_);
    CheckLoadedTensor(actions_, "buffer_actions");
    CheckLoadedTensor(times_, "buffer_times");
    if (actions_.dim() != 2 || actions_.size(1) != num_groups_ ||
        actions_.scalar_type() != torch::kInt64 || times_.dim() != 1 ||
        times_.size(0) != actions_.size(0) ||
        times_.scalar_type() != torch::kFloat64) {
      throw std::runtime_error("buffer of the wrong shape");
    }
    actions_ = actions_.contiguous();
    times_ = times_.contiguous();
    if (actions_.numel() > 0 &&
        (actions_.min().item<int64_t>() < 0 ||
         actions_.max().item<int64_t>() >= value_limit)) {
      throw std::runtime_error("buffer_actions: an action out of range");
    }
    if (!torch::isfinite(times_).all().item<bool>()) {
      throw std::runtime_error("buffer_times: not finite");
    }
  }

 private:
  int num_groups_ = 0;
  torch::Tensor actions_;
  torch::Tensor times_;
};

// Replaces the gradients of `module`'s parameters by `average` of them
// (multi-controller training); nothing without one. A parameter without a
// gradient takes part with zeros, so every controller passes the same size.
inline void AverageGradients(torch::nn::Module* module,
                             const GradientAveraging& average) {
  if (!average) return;
  std::vector<torch::Tensor> grads;
  for (torch::Tensor& p : module->parameters()) {
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  std::vector<torch::Tensor> flat_parts;
  for (const torch::Tensor& g : grads) {
    flat_parts.push_back(g.reshape({-1}).to(torch::kFloat32));
  }
  const torch::Tensor flat = torch::cat(flat_parts).contiguous();
  std::vector<float> values(flat.data_ptr<float>(),
                            flat.data_ptr<float>() + flat.numel());
  average(&values);
  const torch::Tensor mean =
      torch::from_blob(values.data(), {flat.numel()}, torch::kFloat32);
  int64_t offset = 0;
  torch::NoGradGuard no_grad;
  for (torch::Tensor& g : grads) {
    g.copy_(mean.slice(0, offset, offset + g.numel()).view_as(g));
    offset += g.numel();
  }
}

// The end of an optimizer step whose gradients are in place: average them
// with `average` when given, clip the gradient norm of `module`'s
// parameters to `grad_clip` (0: no clipping), step.
inline void ApplyGradients(torch::nn::Module* module,
                           torch::optim::Optimizer* optimizer, double grad_clip,
                           const GradientAveraging& average = {}) {
  AverageGradients(module, average);
  if (grad_clip > 0) {
    torch::nn::utils::clip_grad_norm_(module->parameters(), grad_clip);
  }
  optimizer->step();
}

// The warm start's loop (Agent::DoWarmStart): Adam at `learning_rate` on
// `parameters`, each step's gradients from `backward` (which returns the
// mean probability of the taught placement it measured), until that
// reaches `confidence`, 1,000 steps or the end of `budget_left`. Returns
// the steps taken.
int LearnPlacement(const std::vector<torch::Tensor>& parameters,
                   double learning_rate, double confidence,
                   const std::function<bool()>& budget_left,
                   const std::function<double()>& backward);

// One optimizer step on `loss`: zero the gradients, backpropagate, then
// ApplyGradients.
inline void GradientStep(const torch::Tensor& loss, torch::nn::Module* module,
                         torch::optim::Optimizer* optimizer, double grad_clip,
                         const GradientAveraging& average = {}) {
  optimizer->zero_grad();
  loss.backward();
  ApplyGradients(module, optimizer, grad_clip, average);
}

// GradientStep on the loss `loss` gives the rows of `actions` (the
// policy's BackwardRows, which may split them between threads).
inline void GradientStepRows(PlacementPolicyImpl* policy,
                             const torch::Tensor& actions,
                             const PlacementPolicyImpl::RowsLoss& loss,
                             torch::optim::Optimizer* optimizer,
                             double grad_clip,
                             const GradientAveraging& average = {}) {
  optimizer->zero_grad();
  policy->BackwardRows(actions, loss);
  ApplyGradients(policy, optimizer, grad_clip, average);
}

// A policy and its optimizer in a checkpoint, under "policy" and
// "optimizer".
inline void SavePolicy(const torch::nn::Module& policy,
                       const torch::optim::Optimizer& optimizer,
                       torch::serialize::OutputArchive* archive) {
  torch::serialize::OutputArchive p, o;
  policy.save(p);
  optimizer.save(o);
  archive->write("policy", p);
  archive->write("optimizer", o);
}
// Loads a policy and its optimizer saved by SavePolicy. Throws
// std::runtime_error (or c10::Error) unless every parameter and buffer of
// `policy` comes back with its shape and type, finite, every buffer with
// the value the policy was built with (buffers come from the problem), and
// the optimizer with a state that fits the parameters: LibTorch itself
// takes whatever tensor the file has.
void LoadPolicy(torch::nn::Module* policy, torch::optim::Optimizer* optimizer,
                torch::serialize::InputArchive* archive);

}  // namespace dplace

#endif  // DPLACE_RL_POLICY_AGENT_H_
