// A simulated step's last chain: from the op that finished last, back
// through what each op waited for before it started (the input that came
// last, or its device when the inputs were there earlier), to the step's
// start. `place` prints where its time went (report/what_next.h); mcmc
// proposes moves of the groups that held it up (search/mcmc.cc).
//
//   SimOptions options;
//   options.record_timeline = true;
//   StatusOr<SimResult> sim = simulator.Simulate(placement, options);
//   for (const ChainLink& link : LastChain(cost, placement, *sim)) ...
#ifndef DPLACE_SIM_STEP_CHAIN_H_
#define DPLACE_SIM_STEP_CHAIN_H_

#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/placement.h"
#include "dplace/sim/simulator.h"

namespace dplace {

struct ChainLink {
  OpId op = -1;
  OpId waited_for = -1;  // The input that came last; -1 at the chain's start.
  double ready = 0;      // When that input was on op's device (0 for none).
  double start = 0;      // op ran from start to end; start - ready: queued.
  double end = 0;
};

// The chain from the last op back to the first; empty for a step without
// ops. REQUIRES: `sim` simulated `placement` on cost.cluster() with
// SimOptions::record_timeline.
std::vector<ChainLink> LastChain(const CostModel& cost,
                                 const Placement& placement,
                                 const SimResult& sim);

// An op that held the chain up, and for how long: the seconds of the
// chain's waits it took part in.
struct Delayer {
  OpId op = -1;
  double seconds = 0;
};

// The ops that held the chain up: each op of it that waited for its device
// (start > ready: the wait) or for a transfer from another device (ready
// after its producer's end: the transfer's time), that producer (the same
// time), and every op that ran on the waiting op's device while it waited
// (the overlap). Each op once, its seconds summed, in no particular order.
// REQUIRES: as LastChain.
std::vector<Delayer> ChainDelayers(const CostModel& cost,
                                   const Placement& placement,
                                   const SimResult& sim);

}  // namespace dplace

#endif  // DPLACE_SIM_STEP_CHAIN_H_
