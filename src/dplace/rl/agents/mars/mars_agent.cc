// Mars (Lan, Chen, Li, ICPP 2021): a graph-convolution encoder pre-trained
// self-supervised (Deep Graph Infomax) and a segment-level seq2seq placer
// (mars_policy.h), trained together with PPO; and the ablation the paper
// measures, mars-nopretrain, whose encoder starts untrained.
//
// Settings the paper states: GCN encoder, DGI pre-training (row-shuffling
// corruption, mean-pooled sigmoid readout, bilinear discriminator, binary
// cross entropy), encoder fine-tuned during RL, segment-level placer, PPO.
// Those it does not state are ours (docs/agents.md says which): the PPO
// settings follow EAGLE, the same authors' previous placer (clip 0.3,
// entropy 0.01, 10 placements per update, 4 epochs, Adam 0.01, gradient
// clipping 1), DGI's Adam 0.001, and the sizes below.
#include <torch/torch.h>

#include <chrono>

#include "dplace/rl/agent.h"
#include "dplace/rl/agents/mars/graph_encoder.h"
#include "dplace/rl/agents/mars/mars.h"
#include "dplace/rl/agents/mars/mars_policy.h"
#include "dplace/rl/algorithms.h"
#include "dplace/rl/policy_agent.h"

namespace dplace {
namespace {

struct MarsSettings {
  SearchSettings search;  // Default: SearchSettings's.
  // Graph encoder: encoder_hidden, encoder_layers. Default:
  // GraphEncoderConfig's.
  GraphEncoderConfig encoder;
  // Pre-train the encoder (DGI) before the search. Default: true (mars);
  // false for mars-nopretrain.
  bool pretrain = true;
  // An encoder file from `dplace pretrain` to start from instead of
  // pre-training here. Default: none.
  std::string encoder_path;
  // pretrain_steps, pretrain_learning_rate. Default: PretrainSettings's.
  PretrainSettings pretraining;
  // The placer: hidden, device_embedding, segment, carry_gradient.
  // Default: SegmentPlacerConfig's.
  SegmentPlacerConfig placer;
  // PPO: placements per update. Default: 10 (EAGLE's minibatch).
  int batch = 10;
  // Epochs over each batch. Default: 4 (EAGLE).
  int ppo_steps = 4;
  // Default: 0.3 (EAGLE).
  double clip = 0.3;
  // Default: 0.01 (EAGLE).
  double entropy_bonus = 0.01;
  // Adam, for the placer. Default: 0.01 (EAGLE).
  double learning_rate = 0.01;
  // Adam, for fine-tuning the encoder; 0: the encoder is frozen.
  // Default: 0.001 (DGI's rate: fine-tuning keeps what pre-training
  // learned instead of overwriting it at the placer's rate).
  double encoder_learning_rate = 0.001;
  // Gradient-norm clipping; 0: none. Default: 1 (EAGLE).
  double grad_clip = 1;
  // Standardise each batch's advantages (zero mean, unit deviation), as
  // common PPO implementations do: differences of -sqrt(step time) are
  // small, and unscaled they lose to the entropy bonus. Default: true.
  bool normalize_advantages = true;
};

// Reads the keys of the search settings and Mars's; the pre-training keys
// only when s->pretrain.
void ReadMarsSettings(OptionReader* reader, MarsSettings* s) {
  ReadSearchSettings(reader, &s->search);
  reader->Int("encoder_hidden", &s->encoder.hidden);
  reader->Int("encoder_layers", &s->encoder.layers);
  if (s->pretrain) {
    reader->String("encoder", &s->encoder_path);
    reader->Int("pretrain_steps", &s->pretraining.steps);
    reader->Double("pretrain_learning_rate", &s->pretraining.learning_rate);
  }
  reader->Int("hidden", &s->placer.hidden);
  reader->Int("device_embedding", &s->placer.device_embedding);
  reader->Int("segment", &s->placer.segment);
  reader->Bool("carry_gradient", &s->placer.carry_gradient);
  reader->Int("batch", &s->batch);
  reader->Int("ppo_steps", &s->ppo_steps);
  reader->Double("clip", &s->clip);
  reader->Double("entropy_bonus", &s->entropy_bonus);
  reader->Double("learning_rate", &s->learning_rate);
  reader->Double("encoder_learning_rate", &s->encoder_learning_rate);
  reader->Double("grad_clip", &s->grad_clip);
  reader->Bool("normalize_advantages", &s->normalize_advantages);
}

Status ValidateMarsSettings(const std::string& method, const MarsSettings& s) {
  DPLACE_RETURN_IF_ERROR(ValidateSearchSettings(method, s.search));
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError("method " + method + ": option " + what);
  };
  if (s.encoder.hidden < 1 || s.encoder.layers < 1) {
    return bad("encoder_hidden and encoder_layers must be >= 1");
  }
  if (s.pretraining.steps < 0) return bad("pretrain_steps must be >= 0");
  if (!(s.pretraining.learning_rate > 0)) {
    return bad("pretrain_learning_rate must be > 0");
  }
  if (s.placer.hidden < 1 || s.placer.device_embedding < 1) {
    return bad("hidden and device_embedding must be >= 1");
  }
  if (s.placer.segment < 1) return bad("segment must be >= 1");
  if (s.batch < 1) return bad("batch must be >= 1");
  if (s.ppo_steps < 1) return bad("ppo_steps must be >= 1");
  if (s.clip < 0) return bad("clip must be >= 0");
  if (!(s.learning_rate > 0)) return bad("learning_rate must be > 0");
  if (!(s.encoder_learning_rate >= 0)) {
    return bad("encoder_learning_rate must be >= 0");
  }
  if (s.grad_clip < 0) return bad("grad_clip must be >= 0");
  return Status::Ok();
}

// The settings of method `name` (mars or mars-nopretrain) from `options`.
StatusOr<MarsSettings> ParseMarsSettings(const std::string& name,
                                         const MethodOptions& options,
                                         bool pretrain) {
  MarsSettings s;
  s.pretrain = pretrain;
  OptionReader reader(name, options);
  ReadMarsSettings(&reader, &s);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  DPLACE_RETURN_IF_ERROR(ValidateMarsSettings(name, s));
  return s;
}

EncoderFileInfo ExpectedInfo(const Graph& graph, const Grouping& grouping,
                             const MarsSettings& s) {
  EncoderFileInfo info;
  info.graph_name = graph.name();
  info.graph_hash = graph.hash();
  info.grouping = OpGroupingName(s.search.grouping);
  info.grouping_hash = GroupingHash(grouping);
  info.num_groups = grouping.num_groups;
  info.input_width = EncoderInputWidth();
  info.hidden = s.encoder.hidden;
  info.layers = s.encoder.layers;
  return info;
}

class MarsAgent : public PolicyAgent {
 public:
  MarsAgent(std::string name, MarsSettings settings)
      : PolicyAgent(std::move(name), settings.search),
        settings_(std::move(settings)) {}

 protected:
  Status DoInit(const AgentSetup& setup) override {
    num_groups_ = setup.groups.num_groups;
    const Graph& graph = *setup.problem->graph;
    EncoderInput input = MakeEncoderInput(graph, setup.grouping, setup.groups);
    // Built first, so that pre-training here and `dplace pretrain` with the
    // same seed start from the same weights.
    GraphEncoder encoder(EncoderInputWidth(), settings_.encoder);
    if (!settings_.encoder_path.empty()) {
      DPLACE_RETURN_IF_ERROR(
          LoadEncoder(settings_.encoder_path,
                      ExpectedInfo(graph, setup.grouping, settings_), encoder)
              .status());
    } else if (settings_.pretrain && !setup.resuming) {
      // On resume the checkpoint holds the encoder's trained weights.
      PretrainSettings pretraining = settings_.pretraining;
      pretraining.seed = setup.problem->seed;
      PretrainEncoder(encoder, input, pretraining);
    }
    // The placer's weights do not depend on how the encoder came about, so
    // mars, mars with an encoder file and mars-nopretrain start from the
    // same placer.
    torch::manual_seed(setup.problem->seed ^ 0x6d617273);  // "mars"
    std::vector<int32_t> order(setup.groups.order.begin(),
                               setup.groups.order.end());
    policy_ = MarsPolicy(std::move(input), order, encoder, setup.num_devices,
                         setup.allowed, settings_.placer);
    std::vector<torch::Tensor> placer_parameters, encoder_parameters;
    for (const auto& item : policy_->named_parameters()) {
      const bool is_encoder = item.key().rfind("graph_encoder.", 0) == 0;
      (is_encoder ? encoder_parameters : placer_parameters)
          .push_back(item.value());
    }
    if (settings_.encoder_learning_rate == 0) {
      for (torch::Tensor& p : encoder_parameters) p.set_requires_grad(false);
    }
    std::vector<torch::optim::OptimizerParamGroup> param_groups;
    param_groups.emplace_back(
        placer_parameters,
        std::make_unique<torch::optim::AdamOptions>(settings_.learning_rate));
    if (settings_.encoder_learning_rate > 0) {
      param_groups.emplace_back(encoder_parameters,
                                std::make_unique<torch::optim::AdamOptions>(
                                    settings_.encoder_learning_rate));
    }
    optimizer_ = std::make_unique<torch::optim::Adam>(
        std::move(param_groups),
        torch::optim::AdamOptions(settings_.learning_rate));
    return Status::Ok();
  }

  int BatchSize() const override { return settings_.batch; }

  PlacementPolicyImpl& policy() override { return *policy_; }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  double grad_clip() const override { return settings_.grad_clip; }

  int DoUpdate(const EvaluatedBatch& batch) override {
    const torch::Tensor actions =
        BatchActions(batch, num_groups_, /*used_only=*/true);
    if (actions.size(0) == 0) return 0;
    torch::Tensor advantage = UsedAdvantages(batch);
    if (settings_.normalize_advantages && advantage.size(0) > 1) {
      advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8);
    }
    PpoSettings ppo;
    ppo.clip = settings_.clip;
    ppo.entropy_bonus = settings_.entropy_bonus;
    torch::Tensor old_log_probs = UsedRows(policy_->SampledLogProbs(), batch);
    if (!old_log_probs.defined()) {
      torch::NoGradGuard no_grad;
      old_log_probs = policy_->LogProbs(actions);
    }
    const PlacementPolicyImpl::RowsLoss loss = RowShare(
        [&](const torch::Tensor& log_probs, const torch::Tensor& rows) {
          return PpoLoss(log_probs, old_log_probs.index_select(0, rows),
                         actions.index_select(0, rows),
                         advantage.index_select(0, rows), ppo);
        },
        actions.size(0));
    for (int step = 0; step < settings_.ppo_steps; ++step) {
      GradientStepRows(policy_.get(), actions, loss, optimizer_.get(),
                       settings_.grad_clip, gradient_averaging());
    }
    return 1;
  }

  void DoSave(torch::serialize::OutputArchive* archive) const override {
    SavePolicy(*policy_, *optimizer_, archive);
  }

  void DoLoad(torch::serialize::InputArchive* archive) override {
    LoadPolicy(policy_.get(), optimizer_.get(), archive);
  }

 private:
  MarsSettings settings_;
  int num_groups_ = 0;
  MarsPolicy policy_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
};

MethodFactory MakeMarsFactory(std::string name, bool pretrain) {
  return
      [name, pretrain](
          const MethodOptions& options) -> StatusOr<std::unique_ptr<Method>> {
        DPLACE_ASSIGN_OR_RETURN(MarsSettings s,
                                ParseMarsSettings(name, options, pretrain));
        return std::unique_ptr<Method>(new MarsAgent(name, std::move(s)));
      };
}

REGISTER_METHOD("mars", 140,
                "Mars: GCN encoder pre-trained self-supervised (Deep Graph "
                "Infomax) + segment-level seq2seq placer, PPO; options "
                "encoder, pretrain_steps, segment, hidden, ...",
                MakeMarsFactory("mars", /*pretrain=*/true));
REGISTER_METHOD("mars-nopretrain", 141,
                "Mars without pre-training (the paper's ablation): the "
                "encoder is trained from scratch during the search",
                MakeMarsFactory("mars-nopretrain", /*pretrain=*/false));

}  // namespace

StatusOr<PretrainSummary> PretrainMarsEncoder(const PlacementProblem& problem,
                                              const MethodOptions& options,
                                              const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  if (!problem.graph) return InvalidArgumentError("pretrain: no graph");
  DPLACE_ASSIGN_OR_RETURN(
      const MarsSettings s,
      ParseMarsSettings("mars", options, /*pretrain=*/true));
  if (!s.encoder_path.empty()) {
    return InvalidArgumentError(
        "pretrain: option encoder makes no sense here (-o names the file to "
        "write)");
  }
  if (s.search.grouping == OpGrouping::kMetis && !problem.cost) {
    return InvalidArgumentError(
        "pretrain: grouping=metis weighs ops by the cluster's cost model, "
        "so its groups depend on the cluster; let mars pre-train by itself");
  }
  StatusOr<Grouping> grouping = SearchGrouping(problem, s.search);
  if (!grouping.ok()) {
    return grouping.status().WithPrefix("grouping " +
                                        OpGroupingName(s.search.grouping));
  }
  const GroupGraph groups = CoarsenGraph(*problem.graph, *grouping);
  const EncoderInput input =
      MakeEncoderInput(*problem.graph, *grouping, groups);
  PretrainReport report;
  PretrainSummary summary;
  try {
    torch::manual_seed(problem.seed);  // As Agent::Search seeds DoInit.
    GraphEncoder encoder(EncoderInputWidth(), s.encoder);
    PretrainSettings pretraining = s.pretraining;
    pretraining.seed = problem.seed;
    report = PretrainEncoder(encoder, input, pretraining);
    EncoderFileInfo info = ExpectedInfo(*problem.graph, *grouping, s);
    info.pretrain_steps = pretraining.steps;
    info.final_loss = report.final_loss;
    info.accuracy = report.accuracy;
    DPLACE_RETURN_IF_ERROR(SaveEncoder(path, encoder, info));
  } catch (const std::exception& e) {
    return InternalError(
        "pretrain: " +
        std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
  }
  summary.num_groups = groups.num_groups;
  summary.steps = static_cast<int>(report.losses.size());
  summary.first_loss = report.losses.empty() ? 0 : report.losses.front();
  summary.final_loss = report.final_loss;
  summary.accuracy = report.accuracy;
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return summary;
}

}  // namespace dplace
