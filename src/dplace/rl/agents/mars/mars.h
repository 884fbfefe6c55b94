// Mars (Lan, Chen, Li, ICPP 2021) outside the search: pre-training its
// graph encoder into a file that `mars` loads (`--option encoder=PATH`).
// The agents themselves ("mars", "mars-nopretrain") are registered by name
// (see agent.h and docs/agents.md); this header needs no LibTorch.
#ifndef DPLACE_RL_AGENTS_MARS_MARS_H_
#define DPLACE_RL_AGENTS_MARS_MARS_H_

#include <string>
#include <vector>

#include "dplace/method/method.h"
#include "dplace/util/status.h"

namespace dplace {

struct PretrainSummary {
  int num_groups = 0;
  int steps = 0;
  double first_loss = 0;  // Binary cross entropy before the first step.
  double final_loss = 0;  // On a fresh corruption after the last step.
  // Nodes the discriminator classifies right on that corruption.
  double accuracy = 0;
  double seconds = 0;  // Wall time of grouping, features and training.
};

// Pre-trains Mars's encoder on problem.graph with the grouping, encoder
// architecture and pre-training settings that `options` (the options of
// method mars: grouping, encoder_hidden, encoder_layers, pretrain_steps,
// pretrain_learning_rate, ...) give, seeded by problem.seed, and writes it
// to `path`. `mars` with the same options and seed builds the same encoder
// when it pre-trains by itself. problem.cluster may be null; problem.cost
// is needed only for grouping=metis (its op weights).
// Errors: bad options, a grouping that fails, an unwritable path.
StatusOr<PretrainSummary> PretrainMarsEncoder(const PlacementProblem& problem,
                                              const MethodOptions& options,
                                              const std::string& path);

}  // namespace dplace

#endif  // DPLACE_RL_AGENTS_MARS_MARS_H_
