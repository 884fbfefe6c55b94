// A lower bound on the step time of every placement that fits in memory:
// the longest dependency path, where memory forces ops apart and the
// transfers the split costs are paid.
//
// The critical path (every op on its fastest device, free transfers) is
// blind to memory: when no device holds the model, any placement must cut
// its long paths somewhere and pay a transfer there. This bound prices the
// cheapest such cuts. For each op v, device class c (devices alike in kind,
// memory and op times) and m bytes, it computes G(v, c, m): the earliest
// finish of v on a device of class c when the persistent bytes of v's run
// (the ops on v's device along a path ending at v, back to the last change
// of device on that path) are at most m:
//
//   G(v, c, m) = t(v, c) + max over inputs u of
//                min(G(u, c, m - s(v))                 u on v's device,
//                    min over c' of G*(u, c') + T(u, c', c))  or not,
//
// where t is v's time, s its persistent bytes, G* the minimum over m and
// T the uncontended transfer of u's tensor between distinct devices of the
// two classes. A run holds at most the device's capacity less v's outputs
// and temporary bytes. Each input chooses its own device: a relaxation of
// a placement (one device per op), so the bound holds for every placement;
// the simulator's queues and link contention only add. Where paths meet,
// regions pin their dominator's device and count the queues the simulator
// must form on links (PathBoundOptions). The bound is the largest min over c of
// G*(v, c). Without memory limits it equals the critical path.
// docs/simulator.md gives the argument in full.
#ifndef DPLACE_SIM_PATH_BOUND_H_
#define DPLACE_SIM_PATH_BOUND_H_

#include "dplace/cost/cost_model.h"
#include "dplace/graph/placement.h"

namespace dplace {

struct PathBoundOptions {
  // G(v, c, .) is a step function of m; beyond this many steps it is
  // rounded down (which keeps it a bound) to bound the work at
  // O(edges x classes^2 x max_steps). Default: 64.
  int max_steps = 64;
  // Where paths meet at an op v, the bound is computed again from the op w
  // that dominates v, every op between them knowing whether it shares w's
  // device, so that the paths cannot place w apart; over this many ops in
  // all, the rest is left to the first computation. Only when memory binds.
  // Default: 200000. A source op read by one op only (a weight) belongs to
  // its reader: it does not keep w from dominating (else every op past
  // the first weight of an operator graph would have no dominator).
  int64_t max_region_ops = 200000;
  // In such a region, where v sits apart from w and reads w's tensor,
  // that tensor is the first to leave w's device after w: each directed
  // link is a FIFO channel, so a tensor of the region that leaves w's
  // device later queues behind it (at every hop when it goes to v's
  // device, on the first when w's device has one outgoing link). A
  // residual block cut inside pays for its skip tensor. And where each
  // device of w's class has one outgoing link, an op of the region on
  // another device starts at least the least cut of tensors between w and
  // it (a maximum flow, each tensor weighing its first hop) after w
  // finishes: the tensors that leave w's device cross that link one after
  // another. Default: true.
  bool link_queues = true;
  // In such a region, the ops on w's device run after w, one at a time
  // per compute slot of that device: v there finishes no earlier than w
  // plus the times of those ops among its ancestors, over the slots
  // (branches kept on one GPU add their times, not the longest; branches
  // that share ops add them less the shared ops'). Their busy times are
  // kept beside memory and finish. Default: true.
  bool serial_devices = true;
  // With both of the above, where w's device has one outgoing link: an op
  // there that reads an op elsewhere waits for the tensors that left w's
  // device on the way to it (at least the least cut between w and that
  // op) and for one hop back into w's device; the cuts of branches that
  // share no op add up, for they share no tensor but w's. Default: true.
  bool excursions = true;
  // Only placements that keep every colocation group on one device (every
  // placer's do): a tensor between two ops of one group never moves, so a
  // path cannot leave a group's device between them (e.g. through a
  // group's zero-time output node on the CPU, one hop instead of two).
  // The bound then holds for those placements only. Default: false.
  bool whole_groups = false;
};

// The bound in seconds for the problem `cost` was built for: infinity when
// some op fits on no device (no placement fits). Deterministic.
// With options.whole_groups, for the placements that keep every colocation
// group whole; never below the bound without it.
double MemoryPathBound(const CostModel& cost,
                       const PathBoundOptions& options = {});

// A placement read off the bound: from the outputs back, each op takes the
// device class its most critical consumer's bound chose for it, and that
// consumer's device where the bound kept them together; the groups of ops
// that share a device then fill their class's devices in topological order
// while memory lasts. Where the bound's choices agree along every path,
// its step time is the bound. Needs the functions of every op at once:
// memory grows with ops x classes x max_steps.
Placement PathGuidedPlacement(const CostModel& cost,
                              const PathBoundOptions& options = {});

}  // namespace dplace

#endif  // DPLACE_SIM_PATH_BOUND_H_
