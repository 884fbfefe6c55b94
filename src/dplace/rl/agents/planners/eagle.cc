// EAGLE (Lan et al.) and EAGLE-CE: PlannerAgent (planner_agent.h) with the
// grouper linked by an LSTM to a seq2seq placer that attends before its
// decoder, trained with PPO, or PPO and cross entropy.
#include "dplace/rl/agents/planners/planner_agent.h"

namespace dplace::planners {
namespace {

PlannerSettings EagleSettings(PlannerAlgorithm algorithm) {
  PlannerSettings s;
  s.attention = Attention::kBefore;
  s.algorithm = algorithm;
  s.link = true;
  s.batch = 10;
  s.hidden = 512;
  // Not EAGLE's 0.01, 0.01 and 4 epochs: at those, each update moved the
  // policy off what it had learned (docs/notes/warm-start.md, "EAGLE's PPO").
  s.learning_rate = 0.001;
  s.entropy_bonus = 0;
  s.ppo_epochs = 1;
  s.tanh_constant = 0;
  s.noise = 0;
  s.noise_updates = 0;
  s.valid_only_after = -1;
  s.paper_budget = 2400;
  return s;
}

REGISTER_METHOD("eagle", 130,
                "EAGLE: learned grouper linked by an LSTM to a seq2seq placer "
                "with attention before the decoder, PPO; same options",
                MakePlannerFactory("eagle",
                                   EagleSettings(PlannerAlgorithm::kPpo)));
REGISTER_METHOD("eagle-ce", 131,
                "EAGLE with PPO + cross entropy (top 5 of every 50 "
                "placements)",
                MakePlannerFactory("eagle-ce",
                                   EagleSettings(PlannerAlgorithm::kPpoCe)));

}  // namespace
}  // namespace dplace::planners
