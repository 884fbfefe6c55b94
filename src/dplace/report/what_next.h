// What next, after a placement: the bottleneck of a step that fits (the
// busiest device and its share, each device's idle time, the largest
// transfers, where the step's last chain spent its time), and for a model that
// fits nowhere the changes that would make it fit, computed from the model and
// the cluster, for `place` to print and to write in its JSON.
#ifndef DPLACE_REPORT_WHAT_NEXT_H_
#define DPLACE_REPORT_WHAT_NEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/sim/simulator.h"

namespace dplace {

struct Bottleneck {
  DeviceId busiest = -1;
  double busiest_share = 0;  // Its busy time over its slots, of the step.
  // Per device: the step time less its busy time over its slots.
  std::vector<double> idle_seconds;
  struct Transfer {
    LinkId link = -1;
    int64_t bytes = 0;
    double seconds = 0;  // Of the bytes on that link, without contention.
  };
  std::vector<Transfer> largest_transfers;  // Up to three, most bytes first.
  int64_t transfer_bytes = 0;               // Over every link.
};

// REQUIRES: `sim` is a simulation of a placement on cost.cluster().
Bottleneck FindBottleneck(const CostModel& cost, const SimResult& sim);

// Lines such as "busiest: gpu:1, busy 92% of the step" and "largest
// transfers: gpu:0 -> gpu:1 1.2 GB (0.10 s), ...".
std::vector<std::string> DescribeBottleneck(const Cluster& cluster,
                                            const SimResult& sim,
                                            const Bottleneck& b);

// Where a step's time went along its last chain: from the op that
// finished last, back through what each op of the chain waited for before
// it started (the input that came last, or its device when the inputs were
// there earlier), to the step's start. The parts add up to the step time.
// Queued time is what the bounds of docs/simulator.md do not see: an op
// ready to run behind others in its device's FIFO queue.
struct StepChain {
  int64_t ops = 0;              // On the chain.
  double compute_seconds = 0;   // Its ops running.
  double queued_seconds = 0;    // Its ops ready, their device busy.
  int64_t queued_ops = 0;       // How many of them waited so.
  double transfer_seconds = 0;  // Its inputs on their way: the hops and
                                // the links' queues.
};

// REQUIRES: `sim` simulated `placement` on cost.cluster() with
// SimOptions::record_timeline.
StepChain TraceStepChain(const CostModel& cost, const Placement& placement,
                         const SimResult& sim);

// "the step's last chain: 6,421 ops, 502 ms computing, 397 ms queued behind
// other ops on their devices (3,887 ops), 138 ms in transfers".
std::string DescribeStepChain(const StepChain& chain);

// The share of the GPUs' memory a suggested batch or preset leaves the
// step: ops come in uneven sizes, so a placement needs room to spare (a
// batch whose step fills the GPUs exactly fits on none of them).
inline constexpr double kFitShare = 0.8;

// A change that would let the model fit in memory.
struct FitFix {
  std::string change;  // What to give: "--batch 16", "--cluster h100x8", ...
  std::string reason;  // The figures that say it fits.
};

// What would make a model fit that placed nowhere: computed from the peak
// memory of the whole step on one device (the simulator's, ops on the
// first GPU where they may run), the weights and optimizer slots, and the
// devices' capacities:
// - spilling to the CPU (Baechi's use_cpu=true), when the GPUs together
//   hold less than the peak but the GPUs and the CPU hold it;
// - a smaller batch, when the model's batch is known (`batch` > 0): the
//   largest at which the weights plus the activations, scaled with the
//   batch, fill kFitShare of the GPUs' memory together;
// - a preset whose GPUs hold the peak in kFitShare of their memory, and
//   each the largest op.
// Empty when none applies.
std::vector<FitFix> FixesToFit(const CostModel& cost, int64_t batch);

}  // namespace dplace

#endif  // DPLACE_REPORT_WHAT_NEXT_H_
