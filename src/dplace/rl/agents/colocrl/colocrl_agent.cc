// ColocRL (Mirhoseini et al., ICML 2017): an attentional seq2seq policy over
// co-location groups, trained with REINFORCE and a moving-average baseline
// that starts at the failing signal; after a warm-up only placements that
// run update it. Options allow PPO and elite imitation (the cross-entropy
// update for neural policies) for ablations.
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "dplace/rl/agent.h"
#include "dplace/rl/agents/colocrl/seq2seq_policy.h"
#include "dplace/rl/algorithms.h"
#include "dplace/rl/nets/policy.h"
#include "dplace/rl/policy_agent.h"

namespace dplace {
namespace {

enum class ColocRlAlgorithm { kReinforce, kPpo };

const std::vector<std::pair<std::string, ColocRlAlgorithm>>&
ColocRlAlgorithmNames() {
  static const auto* names =
      new std::vector<std::pair<std::string, ColocRlAlgorithm>>{
          {"reinforce", ColocRlAlgorithm::kReinforce},
          {"ppo", ColocRlAlgorithm::kPpo}};
  return *names;
}

struct ColocRlSettings {
  // Default: SearchSettings's, but the baseline starts at the failing
  // signal and only feasible samples update after 500 (ColocRL).
  SearchSettings search = [] {
    SearchSettings s;
    s.baseline_starts_failing = true;
    s.feasible_only_after = 500;
    return s;
  }();
  // Placements per update (Monte-Carlo samples of eq. 2). Default: 4.
  int batch = 4;
  // LSTM size. Default: 256 (as the Hierarchical Planner's placer).
  int hidden = 256;
  // Op-type and device embedding size. Default: 32.
  int embedding = 32;
  // Adam. Default: 3e-4 (the paper gives none; at 1e-2 or 1e-3 the policy
  // collapses within ~100 samples on NMT-2 / k80x2, see docs/agents.md).
  double learning_rate = 3e-4;
  // Gradient-norm clipping; 0: none. Default: 1.
  double grad_clip = 1;
  // Weight of the policy's entropy (summed over groups), added to the
  // objective of reinforce and ppo. Default: 0 (ColocRL has none).
  double entropy_bonus = 0;
  // "reinforce" (ColocRL) or "ppo" (clipped, per-group ratios).
  // Default: reinforce.
  ColocRlAlgorithm algorithm = ColocRlAlgorithm::kReinforce;
  // Gradient steps per batch with ppo. Default: 4.
  int ppo_steps = 4;
  // Every this many samples, `elite_steps` steps of maximum likelihood on
  // the best `elite_ratio` of them (the cross-entropy update for neural
  // policies); 0: never. Default: 0 (ColocRL has none).
  int ce_every = 0;
  double elite_ratio = 0.1;  // Default: 0.1.
  int elite_steps = 1;       // Default: 1.
};

class ColocRlAgent : public PolicyAgent {
 public:
  explicit ColocRlAgent(ColocRlSettings settings)
      : PolicyAgent("colocrl", settings.search),
        settings_(std::move(settings)) {}

 protected:
  Status DoInit(const AgentSetup& setup) override {
    num_groups_ = setup.groups.num_groups;
    num_devices_ = setup.num_devices;
    Seq2SeqConfig config;
    config.hidden = settings_.hidden;
    config.embedding = settings_.embedding;
    policy_ = Seq2SeqPolicy(
        MakeGroupFeatures(*setup.problem->graph, setup.grouping, setup.groups),
        setup.num_devices, setup.allowed, config);
    optimizer_ = std::make_unique<torch::optim::Adam>(
        policy_->parameters(),
        torch::optim::AdamOptions(settings_.learning_rate));
    buffer_.Reset(num_groups_);
    return Status::Ok();
  }

  int BatchSize() const override { return settings_.batch; }

  PlacementPolicyImpl& policy() override { return *policy_; }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  double grad_clip() const override { return settings_.grad_clip; }

  int DoUpdate(const EvaluatedBatch& batch) override {
    int updates = 0;
    const torch::Tensor actions =
        BatchActions(batch, num_groups_, /*used_only=*/true);
    if (actions.size(0) > 0) {
      const torch::Tensor advantage = UsedAdvantages(batch);
      if (settings_.algorithm == ColocRlAlgorithm::kPpo) {
        PpoSettings ppo;
        ppo.entropy_bonus = settings_.entropy_bonus;
        torch::Tensor old;
        {
          torch::NoGradGuard no_grad;
          old = policy_->LogProbs(actions);
        }
        for (int step = 0; step < settings_.ppo_steps; ++step) {
          StepRows(actions, [&](const torch::Tensor& log_probs,
                                const torch::Tensor& rows) {
            return PpoLoss(log_probs, old.index_select(0, rows),
                           actions.index_select(0, rows),
                           advantage.index_select(0, rows), ppo);
          });
        }
      } else {
        StepRows(actions, [&](const torch::Tensor& log_probs,
                              const torch::Tensor& rows) {
          return ReinforceLoss(log_probs, actions.index_select(0, rows),
                               advantage.index_select(0, rows),
                               settings_.entropy_bonus);
        });
      }
      ++updates;
    }
    if (settings_.ce_every > 0) {
      buffer_.Append(BatchActions(batch, num_groups_, /*used_only=*/false),
                     batch.step_times);
      if (buffer_.size() >= settings_.ce_every) {
        const torch::Tensor elite = buffer_.Elite(settings_.elite_ratio);
        for (int step = 0; step < settings_.elite_steps; ++step) {
          StepRows(elite, [&](const torch::Tensor& log_probs,
                              const torch::Tensor& rows) {
            return EliteLikelihoodLoss(log_probs, elite.index_select(0, rows));
          });
        }
        buffer_.Reset(num_groups_);
        ++updates;
      }
    }
    return updates;
  }

  void DoSave(torch::serialize::OutputArchive* archive) const override {
    SavePolicy(*policy_, *optimizer_, archive);
    buffer_.Save(archive);
  }

  void DoLoad(torch::serialize::InputArchive* archive) override {
    LoadPolicy(policy_.get(), optimizer_.get(), archive);
    buffer_.Load(archive, num_devices_);
  }

 private:
  // A gradient step on the batch mean of `mean_loss` (a loss averaged over
  // the placements it is given), which the policy may compute in blocks.
  void StepRows(const torch::Tensor& actions,
                const PlacementPolicyImpl::RowsLoss& mean_loss) {
    GradientStepRows(policy_.get(), actions,
                     RowShare(mean_loss, actions.size(0)), optimizer_.get(),
                     settings_.grad_clip, gradient_averaging());
  }

  ColocRlSettings settings_;
  int num_groups_ = 0;
  Seq2SeqPolicy policy_{nullptr};
  int num_devices_ = 0;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  EliteBuffer buffer_;  // Samples since the last elite update.
};

void ReadColocRlSettings(OptionReader* reader, ColocRlSettings* s) {
  ReadSearchSettings(reader, &s->search);
  reader->Int("batch", &s->batch);
  reader->Int("hidden", &s->hidden);
  reader->Int("embedding", &s->embedding);
  reader->Double("learning_rate", &s->learning_rate);
  reader->Double("grad_clip", &s->grad_clip);
  reader->Double("entropy_bonus", &s->entropy_bonus);
  reader->Enum("algorithm", ColocRlAlgorithmNames(), &s->algorithm);
  reader->Int("ppo_steps", &s->ppo_steps);
  reader->Int("ce_every", &s->ce_every);
  reader->Double("elite_ratio", &s->elite_ratio);
  reader->Int("elite_steps", &s->elite_steps);
}

Status ValidateColocRlSettings(const ColocRlSettings& s) {
  DPLACE_RETURN_IF_ERROR(ValidateSearchSettings("colocrl", s.search));
  auto bad = [](const std::string& what) {
    return InvalidArgumentError("method colocrl: option " + what);
  };
  if (s.batch < 1) return bad("batch must be >= 1");
  if (s.hidden < 1 || s.embedding < 1) {
    return bad("hidden and embedding must be >= 1");
  }
  if (!(s.learning_rate > 0)) return bad("learning_rate must be > 0");
  if (s.grad_clip < 0) return bad("grad_clip must be >= 0");
  if (s.entropy_bonus < 0) return bad("entropy_bonus must be >= 0");
  if (s.ppo_steps < 1 || s.elite_steps < 1) {
    return bad("ppo_steps and elite_steps must be >= 1");
  }
  if (s.ce_every < 0) return bad("ce_every must be >= 0");
  if (!(s.elite_ratio > 0 && s.elite_ratio <= 1)) {
    return bad("elite_ratio must be in (0, 1]");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Method>> MakeColocRl(const MethodOptions& options) {
  ColocRlSettings s;
  OptionReader reader("colocrl", options);
  ReadColocRlSettings(&reader, &s);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  DPLACE_RETURN_IF_ERROR(ValidateColocRlSettings(s));
  return std::unique_ptr<Method>(new ColocRlAgent(s));
}

REGISTER_METHOD("colocrl", 110,
                "ColocRL: attentional seq2seq LSTM over co-location groups, "
                "REINFORCE; options batch, hidden, learning_rate, algorithm, "
                "...",
                MakeColocRl);

}  // namespace
}  // namespace dplace
