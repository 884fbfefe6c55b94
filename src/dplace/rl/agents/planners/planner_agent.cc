#include "dplace/rl/agents/planners/planner_agent.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dplace/rl/agents/planners/grouper_net.h"
#include "dplace/rl/agents/planners/placer_net.h"
#include "dplace/rl/algorithms.h"
#include "dplace/rl/nets/policy.h"
#include "dplace/rl/policy_agent.h"

namespace dplace::planners {
namespace {

// Log-probabilities of one grouping and of placements given it.
struct JointLogProbs {
  torch::Tensor placer;   // [n, K, D] ([n, U, D] for the Simple Planner).
  torch::Tensor grouper;  // [U, K]; undefined without a learned grouper.
};

class PlannerAgent : public Agent {
 public:
  PlannerAgent(std::string name, PlannerSettings settings)
      : Agent(std::move(name), settings.search),
        settings_(std::move(settings)) {}

  int64_t PaperBudgetSamples() const override { return settings_.paper_budget; }

 protected:
  Status DoInit(const AgentSetup& setup) override {
    const PlannerSettings& s = settings_;
    features_ = MakeOpFeatures(*setup.problem->graph, setup.grouping,
                               *setup.problem->cluster, s.type_vocabulary);
    num_units_ = setup.grouping.num_groups;
    num_devices_ = setup.num_devices;
    seed_ = setup.problem->seed;
    simple_ = s.placer == Placer::kFeedForward;
    learned_ = s.grouper == Grouper::kLearned;
    modules_ = std::make_shared<torch::nn::Module>("Planner");
    fixed_ = torch::Tensor();
    incumbent_ = torch::Tensor();
    if (!s.search.warm_start.empty() || s.search.imitate_best > 0) {
      incumbent_ = torch::zeros({num_units_, num_devices_});
    }
    // ceil(d K / D) for d = 0..D (Teach), with K the search's groups.
    first_groups_ = torch::div(
        torch::arange(num_devices_ + 1, torch::kInt64) * s.search.num_groups +
            (num_devices_ - 1),
        num_devices_, "floor");
    if (simple_ || learned_) {
      GrouperConfig g;
      g.type_embedding = s.type_embedding;
      g.hidden = s.grouper_hidden;
      g.layers = s.grouper_layers;
      g.outputs = simple_ ? num_devices_ : s.search.num_groups;
      g.unit_inputs = incumbent_.defined() ? num_devices_ : 0;
      grouper_ = modules_->register_module("grouper",
                                           GrouperNet(features_.vocabulary, g));
    }
    if (simple_) {
      torch::Tensor forbids = features_.unit_forbids > 0;
      forbids = forbids & ~forbids.all(1, /*keepdim=*/true);
      unit_mask_ = forbids.to(torch::kFloat32) * -1e9f;
      num_groups_ = num_units_;
    } else {
      if (learned_) {
        num_groups_ = s.search.num_groups;
      } else if (s.grouper == Grouper::kRandom) {
        num_groups_ = s.search.num_groups;
        std::mt19937_64 rng(setup.problem->seed ^ 0x6a09e667f3bcc908ULL);
        fixed_ = torch::empty({num_units_}, torch::kInt64);
        for (int u = 0; u < num_units_; ++u) {
          fixed_[u] = static_cast<int64_t>(rng() % num_groups_);
        }
      } else {  // A heuristic grouping, or none: the units are the groups.
        num_groups_ = num_units_;
        fixed_ = torch::arange(num_units_, torch::kInt64);
      }
      if (fixed_.defined()) {
        fixed_input_ = MakeGroupEmbeddings(features_, fixed_, num_groups_);
      }
      const int64_t features = features_.vocabulary +
                               kEmbeddedOutputs * kEmbeddedDims +
                               (incumbent_.defined() ? num_devices_ : 0);
      const int64_t link = learned_ && s.link ? s.grouper_hidden : 0;
      if (s.placer == Placer::kGcn) {
        GcnPlacerConfig c;
        c.input_size = features + link;
        c.num_devices = num_devices_;
        c.hidden = s.hidden;
        placer_ = modules_->register_module("placer",
                                            std::make_shared<GcnPlacerImpl>(c));
      } else {
        Seq2SeqPlacerConfig c;
        c.input_size = features + 2 * static_cast<int64_t>(num_groups_);
        c.link_size = link;
        c.num_devices = num_devices_;
        c.hidden = s.hidden;
        c.device_embedding = s.device_embedding;
        c.attention_size = s.attention_size;
        c.attention_before = s.attention == Attention::kBefore;
        placer_ = modules_->register_module(
            "placer", std::make_shared<Seq2SeqPlacerImpl>(c));
      }
    }
    optimizer_ = std::make_unique<torch::optim::Adam>(
        modules_->parameters(), torch::optim::AdamOptions(s.learning_rate));
    updates_ = 0;
    // Rows: [grouping (U) |] placement (K).
    buffer_.Reset((learned_ ? num_units_ : 0) + num_groups_);
    return Status::Ok();
  }

  int BatchSize() const override { return settings_.batch; }

  // groups_used: the groups of the batch's grouping that have ops (the
  // Hierarchical Planner's observation: it falls as the grouper learns).
  std::vector<std::pair<std::string, double>> BatchStats() const override {
    if (simple_ || !pending_grouping_.defined()) return {};
    const torch::Tensor used = torch::zeros({num_groups_}, torch::kInt64)
                                   .index_fill_(0, pending_grouping_, 1);
    return {{"groups_used", used.sum().item<double>()}};
  }

  std::vector<std::vector<DeviceId>> DoSample(int k,
                                              std::mt19937_64* rng) override {
    torch::NoGradGuard no_grad;
    const LogitShaping shaping = PlacerShaping(/*sampling=*/true);
    if (simple_) {
      const torch::Tensor logits =
          grouper_->UnitLogits(features_, GrouperHidden());
      pending_placements_ = torch::empty({k, num_units_}, torch::kInt64);
      for (int i = 0; i < k; ++i) {
        pending_placements_[i] = SampleRows(
            SamplingProbabilities(logits, unit_mask_, shaping, rng), rng);
      }
      return ActionRows(pending_placements_);
    }
    // The grouper's pass and the placer's input keep their graphs for the
    // update that follows (SampledPass); inference tensors cannot.
    const bool keep = !c10::InferenceMode::is_enabled();
    sampled_pass_.reset();
    SampledPass pass;
    torch::Tensor hidden;
    if (learned_) {
      torch::Tensor logits;
      {
        torch::AutoGradMode with_graph(keep);
        hidden = GrouperHidden();
        logits = grouper_->UnitLogits(features_, hidden);
        pass.grouper_log_probs =
            PolicyLogProbs(logits, torch::Tensor(), GrouperShaping());
      }
      pending_grouper_log_probs_ = pass.grouper_log_probs.detach();
      LogitShaping grouping = GrouperShaping();
      grouping.noise = shaping.noise;
      pending_grouping_ = SampleRows(
          SamplingProbabilities(logits, torch::Tensor(), grouping, rng), rng);
    } else {
      pending_grouping_ = fixed_;
    }
    {
      torch::AutoGradMode with_graph(keep);
      pass.input = Input(pending_grouping_, hidden);
    }
    pending_placements_ =
        placer_->Sample(pass.input, k, shaping, settings_.search.workers, rng);
    if (keep) {
      pass.incumbent = incumbent_;
      pass.version = ParameterVersion(*modules_);
      sampled_pass_ = std::move(pass);
    }
    return ActionRows(pending_placements_.index_select(1, pending_grouping_));
  }

  int DoUpdate(const EvaluatedBatch& batch) override {
    int updates = 0;
    std::vector<int64_t> used;
    for (size_t i = 0; i < batch.use.size(); ++i) {
      if (batch.use[i]) used.push_back(static_cast<int64_t>(i));
    }
    if (!used.empty()) {
      const torch::Tensor actions =
          pending_placements_.index_select(0, torch::tensor(used));
      const torch::Tensor advantages = UsedAdvantages(batch);
      if (settings_.algorithm == PlannerAlgorithm::kReinforce) {
        // HP eqs. 4 and 6: the placer's term per placement, the grouper's
        // with the mean advantage of the placements of its (one) grouping.
        StepRows(
            actions,
            [&](const torch::Tensor& log_probs, const torch::Tensor& rows) {
              return ReinforceLoss(log_probs, actions.index_select(0, rows),
                                   advantages.index_select(0, rows));
            },
            [&](const torch::Tensor& grouper) {
              return ReinforceLoss(grouper.unsqueeze(0),
                                   pending_grouping_.unsqueeze(0),
                                   advantages.mean().unsqueeze(0));
            });
      } else {
        JointLogProbs old = SampledLogProbs(batch);
        if (!old.placer.defined()) {
          torch::NoGradGuard no_grad;
          old = LogProbs(pending_grouping_, actions);
        }
        // Clipped PPO on per-group ratios for the placer and per-unit
        // ratios for the grouper (its one grouping weighted by the mean
        // advantage).
        PpoSettings ppo;
        ppo.clip = settings_.clip;
        ppo.entropy_bonus = settings_.entropy_bonus;
        for (int epoch = 0; epoch < settings_.ppo_epochs; ++epoch) {
          StepRows(
              actions,
              [&](const torch::Tensor& log_probs, const torch::Tensor& rows) {
                return PpoLoss(log_probs, old.placer.index_select(0, rows),
                               actions.index_select(0, rows),
                               advantages.index_select(0, rows), ppo);
              },
              [&](const torch::Tensor& grouper) {
                return PpoLoss(grouper.unsqueeze(0), old.grouper.unsqueeze(0),
                               pending_grouping_.unsqueeze(0),
                               advantages.mean().unsqueeze(0), ppo);
              });
        }
      }
      ++updates;
    }
    if (settings_.algorithm == PlannerAlgorithm::kPpoCe) {
      torch::Tensor rows = pending_placements_;
      if (learned_) {
        rows = torch::cat(
            {pending_grouping_.unsqueeze(0).expand({rows.size(0), num_units_}),
             rows},
            1);
      }
      buffer_.Append(rows, batch.step_times);
      if (buffer_.size() >= settings_.ce_every) {
        CrossEntropyUpdate();
        ++updates;
      }
    }
    if (updates > 0) ++updates_;
    return updates;
  }

  // A planner cannot learn where a start (or the best so far) puts each
  // unit from the op features HP gives its grouper: ops of one type and
  // shape look alike wherever they run. So with warm_start or imitate_best
  // its nets also read the placement last taught (incumbent_): the grouper
  // (the Simple Planner's net too) each unit's device, one-hot; the placer
  // each group's share of ops on every device. The learned grouper is
  // taught the grouping of Teach, which keeps each device's units in
  // groups of their own; the placer, on groupings the grouper draws, to put
  // each group where most of its ops are. With a fixed grouping
  // (grouper=metis, random, ...) the placer learns the same. The warm start
  // runs Adam at the agent's learning rate (or warm_start_learning_rate):
  // EAGLE at 0.001 had not reached 0.4 after 60 steps on nmt@k40x2.
  StatusOr<int> DoWarmStart(const std::vector<DeviceId>& unit_devices,
                            double confidence,
                            const std::function<bool()>& budget_left) override {
    const torch::Tensor target = PlacementRow(unit_devices)[0];
    Teach(target);
    std::mt19937_64 rng(seed_ ^ 0x243f6a8885a308d3ULL);
    const double rate = settings_.search.WarmStartRate(settings_.learning_rate);
    return LearnPlacement(modules_->parameters(), rate, confidence, budget_left,
                          [&] {
                            double reached = 0;
                            TeachingLoss(target, &rng, &reached).backward();
                            return reached;
                          });
  }

  Status DoImitate(const std::vector<DeviceId>& unit_devices) override {
    const torch::Tensor target = PlacementRow(unit_devices)[0];
    Teach(target);
    std::mt19937_64 rng(seed_ ^ (0x9E3779B97F4A7C15ULL * (updates_ + 1)));
    Step(TeachingLoss(target, &rng, nullptr));
    return Status::Ok();
  }

  void DoSave(torch::serialize::OutputArchive* archive) const override {
    SavePolicy(*modules_, *optimizer_, archive);
    archive->write("planner_updates", torch::tensor({updates_}));
    buffer_.Save(archive);
    if (incumbent_.defined()) archive->write("planner_incumbent", incumbent_);
  }

  void DoLoad(torch::serialize::InputArchive* archive) override {
    LoadPolicy(modules_.get(), optimizer_.get(), archive);
    torch::Tensor updates;
    archive->read("planner_updates", updates);
    updates_ = LoadedCount(updates, "planner_updates");
    buffer_.Load(archive, std::max(num_groups_, num_devices_));
    if (incumbent_.defined()) {
      torch::Tensor incumbent;
      archive->read("planner_incumbent", incumbent);
      CheckLoadedTensor(incumbent, "planner_incumbent");
      if (incumbent.sizes() != incumbent_.sizes() ||
          incumbent.scalar_type() != torch::kFloat32 ||
          !((incumbent == 0) | (incumbent == 1)).all().item<bool>()) {
        throw std::runtime_error(
            "planner_incumbent: not a one-hot [units, devices] float tensor");
      }
      incumbent_ = incumbent.contiguous();
    }
  }

 private:
  // DoSample's forward pass with its graphs, for the update that follows
  // with the same weights (REINFORCE's, PPO's first epoch), which then
  // runs neither the grouper nor the placer's encoder again (the placer
  // keeps its own part: its encoding of `input`, its decoder's trace).
  struct SampledPass {
    torch::Tensor grouper_log_probs;  // [U, K] (learned grouper).
    PlacerInput input;                // The placer's input.
    torch::Tensor incumbent;          // incumbent_ then.
    int64_t version = 0;              // ParameterVersion(*modules_) then.
  };

  LogitShaping PlacerShaping(bool sampling) const {
    LogitShaping shaping;
    shaping.tanh_constant = settings_.tanh_constant;
    shaping.temperature = settings_.temperature;
    if (sampling && updates_ < settings_.noise_updates) {
      shaping.noise = settings_.noise;
    }
    return shaping;
  }
  static LogitShaping GrouperShaping() { return LogitShaping(); }

  // The grouper net's hidden states, reading incumbent_ when it is taught.
  torch::Tensor GrouperHidden() {
    return grouper_->Hidden(features_, incumbent_);
  }

  // Shows the placement `unit_devices` [U] to the nets that read it
  // (incumbent_), and sets the grouping the learned grouper is taught for
  // it (taught_grouping_): unit u on device d goes to group
  // first_d + floor(u size_d / U) of the groups [first_d, first_d + size_d)
  // that stand for d, so that a group holds units of one device and of
  // nearby indices (the order of the graph's ops), and a unit that changes
  // device changes no other unit's group.
  void Teach(const torch::Tensor& unit_devices) {
    if (!incumbent_.defined()) return;
    incumbent_ = torch::one_hot(unit_devices, num_devices_).to(torch::kFloat32);
    if (!learned_) return;
    const int64_t u = num_units_;
    taught_grouping_ = torch::empty({u}, torch::kInt64);
    const int64_t* device = unit_devices.data_ptr<int64_t>();
    const int64_t* first = first_groups_.data_ptr<int64_t>();
    int64_t* group = taught_grouping_.data_ptr<int64_t>();
    for (int64_t i = 0; i < u; ++i) {
      const int64_t d = device[i];
      group[i] = first[d] + i * (first[d + 1] - first[d]) / u;
    }
  }

  // Maximum likelihood of the units' devices `target` [U] in the form
  // DoWarmStart describes, and in `reached` (when not null) the mean
  // probability per unit of its device that it measures. The placer learns
  // its part on a grouping the grouper draws from `rng`: on one grouping
  // alone (the most likely, say) it learns that grouping's groups, and
  // places the groups of the groupings it samples as it likes.
  torch::Tensor TeachingLoss(const torch::Tensor& target, std::mt19937_64* rng,
                             double* reached) {
    const LogitShaping shaping = PlacerShaping(/*sampling=*/false);
    auto likelihood = [&](const torch::Tensor& log_probs,
                          const torch::Tensor& chosen) {
      if (reached != nullptr) {
        *reached = log_probs.detach()
                       .gather(2, chosen.unsqueeze(2))
                       .exp()
                       .mean()
                       .item<double>();
      }
      return EliteLikelihoodLoss(log_probs, chosen);
    };
    if (simple_) {
      const torch::Tensor log_probs =
          PolicyLogProbs(grouper_->UnitLogits(features_, GrouperHidden()),
                         unit_mask_, shaping);
      return likelihood(log_probs.unsqueeze(0), target.unsqueeze(0));
    }
    if (!learned_) {
      const PlacerInput input = Input(fixed_, {});
      const torch::Tensor votes =
          torch::zeros({num_groups_, num_devices_})
              .index_add_(
                  0, fixed_,
                  torch::one_hot(target, num_devices_).to(torch::kFloat32)) +
          input.mask_bias;
      const torch::Tensor groups = votes.argmax(1).unsqueeze(0);
      return likelihood(placer_->LogProbs(input, groups, shaping), groups);
    }
    const torch::Tensor hidden = GrouperHidden();
    const torch::Tensor log_probs = GrouperLogProbs(hidden);  // [U, K]
    const torch::Tensor grouping = SampleRows(log_probs.detach().exp(), rng);
    const PlacerInput input = Input(grouping, hidden);
    // Each group on the device most of its ops have in `target`: the shares
    // Input appended last.
    const torch::Tensor groups =
        (input.features.slice(1, -num_devices_) + input.mask_bias)
            .argmax(1)
            .unsqueeze(0);
    const torch::Tensor placer_log_probs =
        placer_->LogProbs(input, groups, shaping);
    if (reached != nullptr) {
      // A unit's device: the devices its taught group's set stands for,
      // then the placer's choice for the group it was drawn into.
      const torch::Tensor first = first_groups_.index_select(0, target);
      const torch::Tensor next = first_groups_.index_select(0, target + 1);
      const torch::Tensor group = torch::arange(num_groups_).unsqueeze(0);
      const torch::Tensor in_set =
          log_probs.detach()
              .masked_fill(
                  (group < first.unsqueeze(1)) | (group >= next.unsqueeze(1)),
                  -std::numeric_limits<float>::infinity())
              .logsumexp(1);
      const torch::Tensor placed = placer_log_probs.detach()[0]
                                       .index_select(0, grouping)
                                       .gather(1, target.unsqueeze(1))
                                       .squeeze(1);
      *reached = (in_set + placed).exp().mean().item<double>();
    }
    return EliteLikelihoodLoss(log_probs.unsqueeze(0),
                               taught_grouping_.unsqueeze(0)) +
           EliteLikelihoodLoss(placer_log_probs, groups);
  }

  // The learned grouper's log-probabilities [U, K] given its hidden states.
  torch::Tensor GrouperLogProbs(const torch::Tensor& hidden) {
    return PolicyLogProbs(grouper_->UnitLogits(features_, hidden),
                          torch::Tensor(), GrouperShaping());
  }

  // The last DoSample's pass when the update that follows can take it:
  // no parameter and no taught placement changed since, grad mode on.
  // Used once (its graph serves one backward pass).
  std::optional<SampledPass> TakeSampledPass() {
    std::optional<SampledPass> pass = std::move(sampled_pass_);
    sampled_pass_.reset();
    if (!pass || !torch::GradMode::is_enabled() ||
        pass->version != ParameterVersion(*modules_) ||
        !pass->incumbent.is_same(incumbent_)) {
      return std::nullopt;
    }
    return pass;
  }

  // The placer's input for `grouping` (fixed_ without a learned grouper)
  // given the learned grouper's hidden states `hidden`: with a taught
  // placement, each group's share of ops on every device in it too.
  PlacerInput Input(const torch::Tensor& grouping,
                    const torch::Tensor& hidden) {
    PlacerInput input =
        learned_ ? MakeGroupEmbeddings(features_, grouping, num_groups_)
                 : fixed_input_;
    if (learned_ && settings_.link) {
      input.link = GroupMeans(features_, grouping, num_groups_, hidden);
    }
    if (incumbent_.defined()) {
      input.features =
          torch::cat({input.features,
                      GroupMeans(features_, grouping, num_groups_,
                                 incumbent_.index_select(0, features_.unit))},
                     1);
    }
    return input;
  }

  JointLogProbs LogProbs(const torch::Tensor& grouping,
                         const torch::Tensor& actions) {
    const LogitShaping shaping = PlacerShaping(/*sampling=*/false);
    JointLogProbs j;
    if (simple_) {
      const torch::Tensor log_probs =
          PolicyLogProbs(grouper_->UnitLogits(features_, GrouperHidden()),
                         unit_mask_, shaping);
      j.placer = log_probs.unsqueeze(0).expand(
          {actions.size(0), num_units_, num_devices_});
      return j;
    }
    if (learned_) {
      const torch::Tensor hidden = GrouperHidden();
      j.grouper = GrouperLogProbs(hidden);
      j.placer = placer_->LogProbs(Input(grouping, hidden), actions, shaping);
    } else {
      j.placer = placer_->LogProbs(Input(grouping, {}), actions, shaping);
    }
    return j;
  }

  // The log-probabilities of the batch's used placements and its grouping
  // kept from sampling; the placer's undefined when it keeps none.
  JointLogProbs SampledLogProbs(const EvaluatedBatch& batch) const {
    JointLogProbs j;
    if (simple_) return j;
    j.placer = UsedRows(placer_->SampledLogProbs(), batch);
    if (learned_) j.grouper = pending_grouper_log_probs_;
    return j;
  }

  // A gradient step on the placer's batch mean of `placer_term` (a loss
  // averaged over the placements it is given) plus `grouper_term` of the
  // grouper's log-probabilities when the grouper learns. The placer may
  // compute its term in blocks of rows (the option workers): each block's
  // mean counts by its share of the rows.
  void StepRows(
      const torch::Tensor& actions,
      const PlacementPolicyImpl::RowsLoss& placer_term,
      const std::function<torch::Tensor(const torch::Tensor&)>& grouper_term) {
    const int64_t k = actions.size(0);
    const PlacementPolicyImpl::RowsLoss share = RowShare(placer_term, k);
    if (simple_) {
      Step(
          share(LogProbs(pending_grouping_, actions).placer, torch::arange(k)));
      return;
    }
    optimizer_->zero_grad();
    torch::Tensor extra;
    PlacerInput input;
    if (std::optional<SampledPass> pass = TakeSampledPass()) {
      if (learned_) extra = grouper_term(pass->grouper_log_probs);
      input = std::move(pass->input);
    } else {
      torch::Tensor hidden;
      if (learned_) {
        hidden = GrouperHidden();
        extra = grouper_term(GrouperLogProbs(hidden));
      }
      input = Input(pending_grouping_, hidden);
    }
    placer_->BackwardRows(input, actions, PlacerShaping(/*sampling=*/false),
                          settings_.search.workers, share, extra);
    ApplyGradients(modules_.get(), optimizer_.get(), settings_.grad_clip,
                   gradient_averaging());
  }

  // Maximum likelihood of the best `elites` placements (with their
  // groupings) of the last `ce_every`.
  void CrossEntropyUpdate() {
    const torch::Tensor elite =
        buffer_.Elite(static_cast<double>(settings_.elites) / buffer_.size());
    for (int step = 0; step < settings_.ce_steps; ++step) {
      torch::Tensor loss = torch::zeros({});
      for (int64_t e = 0; e < elite.size(0); ++e) {
        const torch::Tensor row = elite[e];
        const torch::Tensor grouping =
            learned_ ? row.slice(0, 0, num_units_) : fixed_;
        const torch::Tensor placement =
            row.slice(0, learned_ ? num_units_ : 0).unsqueeze(0);
        const JointLogProbs j = LogProbs(grouping, placement);
        loss = loss + EliteLikelihoodLoss(j.placer, placement);
        if (j.grouper.defined()) {
          loss = loss + EliteLikelihoodLoss(j.grouper.unsqueeze(0),
                                            grouping.unsqueeze(0));
        }
      }
      Step(loss / static_cast<double>(elite.size(0)));
    }
    buffer_.Reset((learned_ ? num_units_ : 0) + num_groups_);
  }

  void Step(const torch::Tensor& loss) {
    GradientStep(loss, modules_.get(), optimizer_.get(), settings_.grad_clip,
                 gradient_averaging());
  }

  PlannerSettings settings_;
  OpFeatures features_;
  int num_units_ = 0;
  int num_groups_ = 0;  // K: what the placer places.
  int num_devices_ = 0;
  uint64_t seed_ = 0;  // The problem's: the teaching's groupings.
  bool simple_ = false;
  bool learned_ = false;
  std::shared_ptr<torch::nn::Module> modules_;
  GrouperNet grouper_{nullptr};
  std::shared_ptr<PlacerNetImpl> placer_;
  torch::Tensor unit_mask_;  // [U, D] (Simple Planner).
  torch::Tensor fixed_;      // [U] int64: a fixed grouping's group per unit.
  PlacerInput fixed_input_;
  // [U, D] float: the placement last taught (DoWarmStart), one-hot per
  // unit, which the grouper net and the placer read; zeros before the
  // first; undefined without options warm_start and imitate_best.
  torch::Tensor incumbent_;
  torch::Tensor taught_grouping_;  // [U] int64 (Teach); learned grouper.
  // [D + 1] int64: the first of the groups that stand for device d in
  // taught_grouping_ (K for d = D).
  torch::Tensor first_groups_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  int64_t updates_ = 0;  // Policy updates so far (the noise schedule).
  EliteBuffer buffer_;   // Samples since the last cross-entropy update.
  // The batch DoSample drew, for the DoUpdate that follows it.
  torch::Tensor pending_grouping_;           // [U].
  torch::Tensor pending_placements_;         // [k, K] ([k, U] for simple).
  torch::Tensor pending_grouper_log_probs_;  // [U, K] (learned grouper).
  std::optional<SampledPass> sampled_pass_;  // DoSample's, for DoUpdate.
};

}  // namespace

MethodFactory MakePlannerFactory(std::string name, PlannerSettings defaults) {
  return
      [name, defaults](
          const MethodOptions& options) -> StatusOr<std::unique_ptr<Method>> {
        PlannerSettings s = defaults;
        OptionReader reader(name, options);
        ReadPlannerSettings(&reader, &s);
        DPLACE_RETURN_IF_ERROR(reader.Finish());
        DPLACE_RETURN_IF_ERROR(ResolvePlannerSettings(name, options, &s));
        DPLACE_RETURN_IF_ERROR(ValidatePlannerSettings(name, s));
        return std::unique_ptr<Method>(new PlannerAgent(name, s));
      };
}

}  // namespace dplace::planners
