// The hierarchical planners and their ablations, one agent class:
//   hierarchical  the Hierarchical Planner (Mirhoseini et al., ICLR 2018): a
//                 feed-forward grouper (hidden 64, 256 groups) and a seq2seq
//                 placer (bi-LSTM encoder, attention after the decoder,
//                 hidden 256), trained jointly with REINFORCE (one grouping
//                 and k = 4 placements per update, eqs. 4 and 6);
//   simple        the Simple Planner (HP, sec. 4): no grouping, a
//                 feed-forward net places every unit on its own;
//                 both in hierarchical.cc;
//   eagle         EAGLE (Lan et al.): the same grouper, an LSTM linking the
//                 grouper's output to the placer's input, attention before
//                 the decoder LSTM, hidden 512, PPO;
//   eagle-ce      EAGLE with PPO and cross-entropy (elite imitation);
//                 both in eagle.cc.
// Options swap any part for the papers' ablations: grouper=learned|random|
// metis|fluid|colocation|none, placer=seq2seq|gcn|ff, attention=before|
// after, algorithm=reinforce|ppo|ppo-ce, link=true|false.
//
// Every agent places the search grouping's units (default: the graph's
// co-location hints, the hard constraints), so ops that must share a device
// always do; the learned grouper assigns units, not ops, to groups.
// PlannerAgent (planner_agent.cc) is the agent; planner_settings.cc reads
// and checks its options.
#ifndef DPLACE_RL_AGENTS_PLANNERS_PLANNER_AGENT_H_
#define DPLACE_RL_AGENTS_PLANNERS_PLANNER_AGENT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dplace/method/method.h"
#include "dplace/rl/agent.h"

namespace dplace::planners {

// What groups the units the placer places: the feed-forward grouper,
// trained jointly; a fixed random group per unit (HP's ablation); a fixed
// heuristic grouping of the ops into `groups` groups, which becomes the
// search's grouping (EAGLE's Table I); or none, every unit a group.
enum class Grouper { kLearned, kRandom, kMetis, kFluid, kColocation, kNone };
const std::vector<std::pair<std::string, Grouper>>& GrouperNames();

enum class Placer {
  kSeq2Seq,      // The seq2seq placer (HP, EAGLE).
  kGcn,          // A graph-convolution placer (EAGLE's Table II).
  kFeedForward,  // The Simple Planner's per-unit feed-forward placer.
};
const std::vector<std::pair<std::string, Placer>>& PlacerNames();

// Where the seq2seq placer attends, relative to its decoder LSTM.
enum class Attention { kBefore, kAfter };
const std::vector<std::pair<std::string, Attention>>& AttentionNames();

enum class PlannerAlgorithm {
  kReinforce,  // HP.
  kPpo,        // EAGLE.
  kPpoCe,      // EAGLE with cross entropy (elite imitation).
};
const std::vector<std::pair<std::string, PlannerAlgorithm>>&
PlannerAlgorithmNames();

struct PlannerSettings {
  // SearchSettings's, except two that a planner derives from its own
  // settings unless the options give them (ResolvePlannerSettings):
  // grouping, the grouper's for metis, fluid and colocation, else hints;
  // feasible_only_after, valid_only_after x batch.
  SearchSettings search;
  // What groups the units (Grouper). Default: learned (none for simple).
  Grouper grouper = Grouper::kLearned;
  // The placer (Placer); ff needs grouper=none. Default: seq2seq (ff for
  // simple).
  Placer placer = Placer::kSeq2Seq;
  // Where the seq2seq placer attends. Default: after (hierarchical),
  // before (eagle).
  Attention attention = Attention::kAfter;
  // Default: reinforce (hierarchical, simple), ppo (eagle), ppo-ce
  // (eagle-ce).
  PlannerAlgorithm algorithm = PlannerAlgorithm::kReinforce;
  // EAGLE's RNN from the grouper's output to the placer's input (only with
  // grouper=learned). Default: false (hierarchical), true (eagle).
  bool link = false;
  // Placements per update (k; one grouping per update, m = 1).
  // Default: 4 (HP), 10 (EAGLE).
  int batch = 4;
  int hidden = 256;           // Placer size. Default: 256 (HP), 512 (EAGLE).
  int grouper_hidden = 64;    // Default: 64 (HP, EAGLE).
  int grouper_layers = 1;     // Hidden layers. Default: 1.
  int type_embedding = 20;    // Default: 20 (HP).
  int type_vocabulary = 200;  // Most frequent op types. Default: 200 (HP).
  int device_embedding = 16;  // Default: 16 (no paper gives one).
  int attention_size = 64;    // Default: 64 (no paper gives one).
  // Adam. Default: 0.001 (hierarchical: at HP's 0.1 the grouper collapses
  // to a few groups within ~40 samples, docs/agents.md), 0.1 (simple, HP),
  // 0.01 (EAGLE).
  double learning_rate = 0.001;
  double grad_clip = 1;  // Norm. Default: 1 (both papers).
  // The placer samples from softmax(C tanh(l / T)); C = 0: plain softmax.
  // Default: C = 5, T = 10 (HP); C = 0 (EAGLE gives none).
  double tanh_constant = 5;
  double temperature = 10;
  // Logit noise (std relative to the logits' RMS: the grouper's whole, a
  // placement's at a placer step) for the first `noise_updates` updates.
  // Default: 0.1 for 500 (HP); none (EAGLE).
  double noise = 0.1;
  int64_t noise_updates = 500;
  // After this many updates only valid (feasible) samples update the
  // policy and the baseline; negative: never. Sets feasible_only_after to
  // this x batch unless that option is given. Default: 500 (HP); -1
  // (EAGLE, which, like Post, keeps learning from the OOM signal).
  int64_t valid_only_after = 500;
  // PPO. Default: clip 0.3, entropy 0.01, 4 epochs (EAGLE's paper; the
  // eagle presets run 0 and 1, docs/notes/warm-start.md, "EAGLE's PPO").
  double clip = 0.3;
  double entropy_bonus = 0.01;
  int ppo_epochs = 4;
  // Cross entropy (ppo-ce): every `ce_every` placements, `ce_steps` steps
  // of maximum likelihood of the `elites` best of them. Default: 50, 5, 1.
  int ce_every = 50;
  int elites = 5;
  int ce_steps = 1;
  // Default: 4000 (HP: 1000 updates x 4), 2400 (EAGLE).
  int64_t paper_budget = 4000;
};

// Reads the options of PlannerSettings and SearchSettings into *s; a
// malformed value is the reader's error (Finish).
void ReadPlannerSettings(OptionReader* reader, PlannerSettings* s);
// The search's grouping and warm-up, unless `options` give them: a
// heuristic grouper is the search's grouping; the others group the units
// of the search's grouping (default: the co-location hints). Errors: a
// grouping given with a heuristic grouper.
Status ResolvePlannerSettings(const std::string& method,
                              const MethodOptions& options, PlannerSettings* s);
// Values out of range, naming the method and the option.
Status ValidatePlannerSettings(const std::string& method,
                               const PlannerSettings& s);

// The factory of method `name`: a PlannerAgent whose settings start at
// `defaults` (the method's preset) and take the options.
MethodFactory MakePlannerFactory(std::string name, PlannerSettings defaults);

}  // namespace dplace::planners

#endif  // DPLACE_RL_AGENTS_PLANNERS_PLANNER_AGENT_H_
