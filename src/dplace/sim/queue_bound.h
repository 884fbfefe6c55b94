// A lower bound on the step of every placement that keeps each colocation
// group on one device, from the simulator's FIFO device queues.
//
// A group often holds ops that one tensor makes ready at once: TensorFlow
// colocates a MatMul's two gradients (dX = dY W^T and dW = X^T dY) with the
// MatMul, and both wait only for dY, since X and W reached the group's
// device before the MatMul ran. When dY arrives, both join the device's
// queue together. An op c that reads dX then joins it after dW, so on the
// same device (one compute slot) it starts no earlier than dY's arrival
// plus both gradients' times; on another device, no earlier than dX's end
// plus a hop of its tensor. The critical path with each such edge a -> c
// weighing t(a) + min(the siblings' time, the hop) instead of t(a) is a
// lower bound for these placements: docs/simulator.md says why in full.
#ifndef DPLACE_SIM_QUEUE_BOUND_H_
#define DPLACE_SIM_QUEUE_BOUND_H_

#include <cstdint>
#include <vector>

#include "dplace/cost/cost_model.h"

namespace dplace {

// `group_of`: each op's colocation group (ColocationHintGroups). Seconds,
// at least the critical path (every op on its fastest device, free
// transfers). Deterministic.
double GroupQueuePathBound(const CostModel& cost,
                           const std::vector<int32_t>& group_of);

// Per op v, the queued path to it: no placement that keeps the groups
// whole starts v earlier. GroupQueuePathBound is their LatestEnd.
std::vector<double> GroupQueueHeads(const CostModel& cost,
                                    const std::vector<int32_t>& group_of);

// The largest of heads[v] plus v's fastest time.
double LatestEnd(const CostModel& cost, const std::vector<double>& heads);

}  // namespace dplace

#endif  // DPLACE_SIM_QUEUE_BOUND_H_
