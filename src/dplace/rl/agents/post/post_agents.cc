// Post (Gao, Chen, Li, NeurIPS 2018) and the baselines of its Figure 2, all
// on an independent softmax per co-location group:
//   post       PPO with a KL penalty every K samples, the closed-form
//              cross-entropy solution every N samples (Algorithm 1);
//   post-ce    the cross-entropy solution only;
//   post-pg    the policy gradient (REINFORCE) only;
//   spotlight  PPO only (clipped surrogate, entropy bonus), as Spotlight.
#include <torch/torch.h>

#include <algorithm>

#include "dplace/rl/agent.h"
#include "dplace/rl/algorithms.h"
#include "dplace/rl/nets/policy.h"
#include "dplace/rl/policy_agent.h"

namespace dplace {
namespace {

enum class PostMode { kPost, kCrossEntropy, kPolicyGradient, kPpo };

struct PostSettings {
  SearchSettings search;  // Default: SearchSettings's.
  // K: placements per batch; one PPO (or policy-gradient) iteration per
  // batch. Default: 12 (Post's 12 workers).
  int batch = 12;
  // N: samples between cross-entropy solutions (post, post-ce); a multiple
  // of `batch`. Default: 60.
  int ce_every = 60;
  // ρ: the fraction of the N samples that are elite. Default: 0.1.
  double elite_ratio = 0.1;
  // ε: uniform mixing after each cross-entropy solution, decayed
  // harmonically with the samples n seen so far: ε T / (T + n). Default: 0.1.
  double epsilon = 0.1;
  // T: samples after which ε is halved (a third after 2T, a quarter after
  // 3T, ...). The schedule does not depend on the budget, so the search is
  // anytime: stopped at any point, its best is what its curve promises
  // (Post's Algorithm 1 decays ε to 0 over the budget, which holds the
  // improvement back until the budget's end; docs/agents.md). 0: 5 times
  // the number of co-location groups, the policy's size. Default: 0.
  int64_t epsilon_halving_samples = 0;
  // Stochastic gradient ascent on the softmax parameters. Default: 1.
  double learning_rate = 1;
  // SGA steps per PPO iteration. Default: 10 ("several (e.g., 10)").
  int ppo_steps = 10;
  // β of the KL penalty. Default: 1 (post); 0 (spotlight).
  double kl_penalty = 1;
  // PPO clip; 0: Post's unclipped ratio. Default: 0 (post); 0.2 (spotlight).
  double clip = 0;
  // Entropy bonus. Default: 0 (post); 0.01 (spotlight).
  double entropy_bonus = 0;
};

class PostAgent : public PolicyAgent {
 public:
  PostAgent(std::string name, PostMode mode, PostSettings settings)
      : PolicyAgent(std::move(name), settings.search),
        mode_(mode),
        settings_(std::move(settings)) {}

 protected:
  Status DoInit(const AgentSetup& setup) override {
    num_groups_ = setup.groups.num_groups;
    num_devices_ = setup.num_devices;
    allowed_ = torch::from_blob(const_cast<uint8_t*>(setup.allowed.data()),
                                {num_groups_, num_devices_}, torch::kUInt8)
                   .to(torch::kBool);
    policy_ = SoftmaxPolicy(num_groups_, num_devices_, setup.allowed);
    optimizer_ = std::make_unique<torch::optim::SGD>(
        policy_->parameters(),
        torch::optim::SGDOptions(settings_.learning_rate));
    halving_samples_ = settings_.epsilon_halving_samples > 0
                           ? settings_.epsilon_halving_samples
                           : kHalvingSamplesPerGroup * num_groups_;
    samples_ = 0;
    buffer_.Reset(num_groups_);
    return Status::Ok();
  }

  int BatchSize() const override { return settings_.batch; }

  PlacementPolicyImpl& policy() override { return *policy_; }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }

  int DoUpdate(const EvaluatedBatch& batch) override {
    const int k = static_cast<int>(batch.group_devices.size());
    const torch::Tensor actions =
        BatchActions(batch, num_groups_, /*used_only=*/false);
    samples_ += k;
    const bool uses_ce =
        mode_ == PostMode::kPost || mode_ == PostMode::kCrossEntropy;
    if (uses_ce) {
      buffer_.Append(actions, batch.step_times);
      if (buffer_.size() >= settings_.ce_every) {
        CrossEntropyUpdate();
        return 1;
      }
    }
    if (mode_ == PostMode::kCrossEntropy) return 0;
    const torch::Tensor used =
        BatchActions(batch, num_groups_, /*used_only=*/true);
    if (used.size(0) == 0) return 0;
    const torch::Tensor advantage = UsedAdvantages(batch);
    if (mode_ == PostMode::kPolicyGradient) {
      optimizer_->zero_grad();
      ReinforceLoss(policy_->LogProbs(used), used, advantage).backward();
      AverageGradients(policy_.get(), gradient_averaging());
      optimizer_->step();
      return 1;
    }
    PpoSettings ppo;
    ppo.clip = settings_.clip;
    ppo.kl_penalty = settings_.kl_penalty;
    ppo.entropy_bonus = settings_.entropy_bonus;
    torch::Tensor old_log_probs;
    {
      torch::NoGradGuard no_grad;
      old_log_probs = policy_->LogProbs(used).clone();
    }
    for (int step = 0; step < settings_.ppo_steps; ++step) {
      optimizer_->zero_grad();
      PpoLoss(policy_->LogProbs(used), old_log_probs, used, advantage, ppo)
          .backward();
      AverageGradients(policy_.get(), gradient_averaging());
      optimizer_->step();
    }
    return 1;
  }

  // Post's own cross-entropy solution with the one placement as the elite
  // and ε = 1 - confidence: each group's device gets at least `confidence`.
  StatusOr<int> DoWarmStart(const std::vector<DeviceId>& group_devices,
                            double confidence,
                            const std::function<bool()>&) override {
    policy_->SetProbabilities(CrossEntropySolution(PlacementRow(group_devices),
                                                   allowed_, 1 - confidence));
    return 0;
  }

  void DoSave(torch::serialize::OutputArchive* archive) const override {
    SavePolicy(*policy_, *optimizer_, archive);
    archive->write("samples", torch::tensor({samples_}, torch::kInt64));
    buffer_.Save(archive);
  }

  void DoLoad(torch::serialize::InputArchive* archive) override {
    LoadPolicy(policy_.get(), optimizer_.get(), archive);
    torch::Tensor samples;
    archive->read("samples", samples);
    samples_ = LoadedCount(samples, "samples");
    buffer_.Load(archive, num_devices_);
  }

 private:
  // Post, Algorithm 1, lines 10-12: the elite's device frequencies, mixed
  // with ε-uniform, become the policy.
  void CrossEntropyUpdate() {
    const double epsilon = settings_.epsilon *
                           static_cast<double>(halving_samples_) /
                           static_cast<double>(halving_samples_ + samples_);
    policy_->SetProbabilities(CrossEntropySolution(
        buffer_.Elite(settings_.elite_ratio), allowed_, epsilon));
    buffer_.Reset(num_groups_);
  }

  PostMode mode_;
  PostSettings settings_;
  int num_groups_ = 0;
  int num_devices_ = 0;
  torch::Tensor allowed_;  // [G, D] bool.
  SoftmaxPolicy policy_{nullptr};
  std::unique_ptr<torch::optim::SGD> optimizer_;
  // T per co-location group: 5 did best of 2, 5, 10 and 20 per group
  // (docs/notes/post-exploration-schedule.md).
  static constexpr int64_t kHalvingSamplesPerGroup = 5;
  int64_t halving_samples_ = 1;  // T.
  int64_t samples_ = 0;          // Seen by this agent, for ε's decay.
  EliteBuffer buffer_;           // Samples since the last CE solution.
};

// The settings of `mode` before the options: spotlight's PPO differs.
PostSettings DefaultPostSettings(PostMode mode) {
  PostSettings s;
  if (mode == PostMode::kPpo) {
    s.kl_penalty = 0;
    s.clip = 0.2;
    s.entropy_bonus = 0.01;
  }
  return s;
}

// Reads the keys of the search settings and those `mode` uses.
void ReadPostSettings(OptionReader* reader, PostMode mode, PostSettings* s) {
  ReadSearchSettings(reader, &s->search);
  reader->Int("batch", &s->batch);
  if (mode == PostMode::kPost || mode == PostMode::kCrossEntropy) {
    reader->Int("ce_every", &s->ce_every);
    reader->Double("elite_ratio", &s->elite_ratio);
    reader->Double("epsilon", &s->epsilon);
    reader->Int("epsilon_halving_samples", &s->epsilon_halving_samples);
  }
  if (mode != PostMode::kCrossEntropy) {
    reader->Double("learning_rate", &s->learning_rate);
  }
  if (mode == PostMode::kPost || mode == PostMode::kPpo) {
    reader->Int("ppo_steps", &s->ppo_steps);
    reader->Double("kl_penalty", &s->kl_penalty);
    reader->Double("clip", &s->clip);
    reader->Double("entropy_bonus", &s->entropy_bonus);
  }
}

Status ValidatePostSettings(const std::string& method, const PostSettings& s) {
  DPLACE_RETURN_IF_ERROR(ValidateSearchSettings(method, s.search));
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError("method " + method + ": option " + what);
  };
  if (s.batch < 1) return bad("batch must be >= 1");
  if (s.ce_every < 1) return bad("ce_every must be >= 1");
  if (!(s.elite_ratio > 0 && s.elite_ratio <= 1)) {
    return bad("elite_ratio must be in (0, 1]");
  }
  if (!(s.epsilon >= 0 && s.epsilon <= 1)) {
    return bad("epsilon must be in [0, 1]");
  }
  if (s.epsilon_halving_samples < 0) {
    return bad("epsilon_halving_samples must be >= 0");
  }
  if (!(s.learning_rate > 0)) return bad("learning_rate must be > 0");
  if (s.ppo_steps < 1) return bad("ppo_steps must be >= 1");
  if (s.clip < 0) return bad("clip must be >= 0");
  return Status::Ok();
}

MethodFactory MakePostFactory(std::string name, PostMode mode) {
  return
      [name, mode](
          const MethodOptions& options) -> StatusOr<std::unique_ptr<Method>> {
        PostSettings s = DefaultPostSettings(mode);
        OptionReader reader(name, options);
        ReadPostSettings(&reader, mode, &s);
        DPLACE_RETURN_IF_ERROR(reader.Finish());
        DPLACE_RETURN_IF_ERROR(ValidatePostSettings(name, s));
        return std::unique_ptr<Method>(new PostAgent(name, mode, s));
      };
}

REGISTER_METHOD("post", 100,
                "Post: softmax per co-location group, PPO with KL penalty "
                "every K samples + closed-form cross entropy every N; options "
                "batch, ce_every, elite_ratio, epsilon, kl_penalty, ...",
                MakePostFactory("post", PostMode::kPost));
REGISTER_METHOD("post-ce", 101,
                "Post's cross-entropy minimisation alone (softmax per group, "
                "closed form every N samples)",
                MakePostFactory("post-ce", PostMode::kCrossEntropy));
REGISTER_METHOD("post-pg", 102,
                "policy gradient (REINFORCE) on Post's softmax per group",
                MakePostFactory("post-pg", PostMode::kPolicyGradient));
REGISTER_METHOD("spotlight", 103,
                "PPO alone (clipped, entropy bonus) on Post's softmax per "
                "group, as Spotlight",
                MakePostFactory("spotlight", PostMode::kPpo));

}  // namespace
}  // namespace dplace
