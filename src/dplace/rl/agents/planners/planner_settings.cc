#include "dplace/rl/agents/planners/planner_agent.h"
#include "dplace/rl/policy_agent.h"

namespace dplace::planners {

const std::vector<std::pair<std::string, Grouper>>& GrouperNames() {
  static const auto* names = new std::vector<std::pair<std::string, Grouper>>{
      {"learned", Grouper::kLearned},       {"random", Grouper::kRandom},
      {"metis", Grouper::kMetis},           {"fluid", Grouper::kFluid},
      {"colocation", Grouper::kColocation}, {"none", Grouper::kNone}};
  return *names;
}

const std::vector<std::pair<std::string, Placer>>& PlacerNames() {
  static const auto* names = new std::vector<std::pair<std::string, Placer>>{
      {"seq2seq", Placer::kSeq2Seq},
      {"gcn", Placer::kGcn},
      {"ff", Placer::kFeedForward}};
  return *names;
}

const std::vector<std::pair<std::string, Attention>>& AttentionNames() {
  static const auto* names = new std::vector<std::pair<std::string, Attention>>{
      {"before", Attention::kBefore}, {"after", Attention::kAfter}};
  return *names;
}

const std::vector<std::pair<std::string, PlannerAlgorithm>>&
PlannerAlgorithmNames() {
  static const auto* names =
      new std::vector<std::pair<std::string, PlannerAlgorithm>>{
          {"reinforce", PlannerAlgorithm::kReinforce},
          {"ppo", PlannerAlgorithm::kPpo},
          {"ppo-ce", PlannerAlgorithm::kPpoCe}};
  return *names;
}

void ReadPlannerSettings(OptionReader* reader, PlannerSettings* s) {
  ReadSearchSettings(reader, &s->search);
  reader->Enum("grouper", GrouperNames(), &s->grouper);
  reader->Enum("placer", PlacerNames(), &s->placer);
  reader->Enum("attention", AttentionNames(), &s->attention);
  reader->Enum("algorithm", PlannerAlgorithmNames(), &s->algorithm);
  reader->Bool("link", &s->link);
  reader->Int("batch", &s->batch);
  reader->Int("hidden", &s->hidden);
  reader->Int("grouper_hidden", &s->grouper_hidden);
  reader->Int("grouper_layers", &s->grouper_layers);
  reader->Int("type_embedding", &s->type_embedding);
  reader->Int("type_vocabulary", &s->type_vocabulary);
  reader->Int("device_embedding", &s->device_embedding);
  reader->Int("attention_size", &s->attention_size);
  reader->Double("learning_rate", &s->learning_rate);
  reader->Double("grad_clip", &s->grad_clip);
  reader->Double("tanh_constant", &s->tanh_constant);
  reader->Double("temperature", &s->temperature);
  reader->Double("noise", &s->noise);
  reader->Int("noise_updates", &s->noise_updates);
  reader->Int("valid_only_after", &s->valid_only_after);
  reader->Double("clip", &s->clip);
  reader->Double("entropy_bonus", &s->entropy_bonus);
  reader->Int("ppo_epochs", &s->ppo_epochs);
  reader->Int("ce_every", &s->ce_every);
  reader->Int("elites", &s->elites);
  reader->Int("ce_steps", &s->ce_steps);
}

Status ResolvePlannerSettings(const std::string& method,
                              const MethodOptions& options,
                              PlannerSettings* s) {
  const bool grouping_given = options.values().count("grouping") > 0;
  if (s->grouper == Grouper::kMetis || s->grouper == Grouper::kFluid ||
      s->grouper == Grouper::kColocation) {
    const OpGrouping grouper_grouping =
        s->grouper == Grouper::kMetis   ? OpGrouping::kMetis
        : s->grouper == Grouper::kFluid ? OpGrouping::kFluid
                                        : OpGrouping::kColocation;
    if (grouping_given) {
      return InvalidArgumentError(
          "method " + method +
          ": option grouping=" + OpGroupingName(s->search.grouping) +
          " with grouper=" + EnumName(GrouperNames(), s->grouper) +
          ": the grouper groups the ops itself; give one of them");
    }
    s->search.grouping = grouper_grouping;
  } else if (!grouping_given) {
    s->search.grouping = OpGrouping::kHints;
  }
  if (options.values().count("feasible_only_after") == 0) {
    s->search.feasible_only_after =
        s->valid_only_after < 0 ? -1 : s->valid_only_after * s->batch;
  }
  return Status::Ok();
}

Status ValidatePlannerSettings(const std::string& method,
                               const PlannerSettings& s) {
  DPLACE_RETURN_IF_ERROR(ValidateSearchSettings(method, s.search));
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError("method " + method + ": option " + what);
  };
  if (s.placer == Placer::kFeedForward && s.grouper != Grouper::kNone) {
    return bad(
        "placer=ff is the Simple Planner's per-unit feed-forward "
        "placer: it needs grouper=none, not grouper=" +
        EnumName(GrouperNames(), s.grouper));
  }
  if (s.batch < 1) return bad("batch must be >= 1");
  if (s.hidden < 2 || s.hidden % 2 != 0) {
    return bad(
        "hidden must be even and >= 2 (the bi-LSTM encoder has "
        "hidden/2 per direction)");
  }
  if (s.grouper_hidden < 1 || s.grouper_layers < 1 || s.type_embedding < 1 ||
      s.type_vocabulary < 2 || s.device_embedding < 1 || s.attention_size < 1) {
    return bad(
        "grouper_hidden, grouper_layers, type_embedding, "
        "device_embedding and attention_size must be >= 1, "
        "type_vocabulary >= 2");
  }
  if (!(s.learning_rate > 0)) return bad("learning_rate must be > 0");
  if (s.grad_clip < 0) return bad("grad_clip must be >= 0");
  if (s.tanh_constant < 0) return bad("tanh_constant must be >= 0");
  if (!(s.temperature > 0)) return bad("temperature must be > 0");
  if (s.noise < 0) return bad("noise must be >= 0");
  if (!(s.clip > 0)) return bad("clip must be > 0");
  if (s.ppo_epochs < 1 || s.ce_steps < 1) {
    return bad("ppo_epochs and ce_steps must be >= 1");
  }
  if (s.ce_every < 1 || s.elites < 1 || s.elites > s.ce_every) {
    return bad("ce_every must be >= 1 and elites in [1, ce_every]");
  }
  return Status::Ok();
}

}  // namespace dplace::planners
