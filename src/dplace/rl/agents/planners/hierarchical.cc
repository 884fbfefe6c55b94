// The Hierarchical Planner (Mirhoseini et al., ICLR 2018) and its Simple
// Planner ablation: PlannerAgent (planner_agent.h) at their papers'
// settings.
#include "dplace/rl/agents/planners/planner_agent.h"

namespace dplace::planners {
namespace {

// A learned feed-forward grouper and a seq2seq placer attending after its
// decoder, trained jointly with REINFORCE: PlannerSettings' defaults.
PlannerSettings HierarchicalSettings() { return PlannerSettings(); }

// No grouping: a feed-forward net places every unit.
PlannerSettings SimplePlannerSettings() {
  PlannerSettings s;
  s.grouper = Grouper::kNone;
  s.placer = Placer::kFeedForward;
  s.learning_rate = 0.1;
  return s;
}

REGISTER_METHOD("hierarchical", 120,
                "Hierarchical Planner: learned feed-forward grouper (256 "
                "groups) + seq2seq placer, joint REINFORCE; options grouper, "
                "placer, attention, algorithm, groups, ...",
                MakePlannerFactory("hierarchical", HierarchicalSettings()));
REGISTER_METHOD("simple", 121,
                "Simple Planner (HP's ablation): no grouping, a feed-forward "
                "net places every co-location unit, REINFORCE",
                MakePlannerFactory("simple", SimplePlannerSettings()));

}  // namespace
}  // namespace dplace::planners
