// Devices that are interchangeable for a problem: the same kind, memory and
// compute slots, and every op taking the same time on them. The problem-level
// bounds (path_bound.h, work_bound.h) reason about classes instead of devices,
// so that eight identical GPUs cost what one does.
#ifndef DPLACE_SIM_DEVICE_CLASSES_H_
#define DPLACE_SIM_DEVICE_CLASSES_H_

#include <cstdint>
#include <vector>

#include "dplace/cost/cost_model.h"

namespace dplace {

struct DeviceClasses {
  // Per class: its devices in id order (the first represents the class).
  std::vector<std::vector<DeviceId>> members;
  int num() const { return static_cast<int>(members.size()); }
  DeviceId representative(int c) const { return members[c][0]; }
};

// Classes in order of their first device. O(devices x classes x ops).
DeviceClasses ClassesOf(const CostModel& cost);

// The cheapest transfer between two distinct devices of two classes (of
// the same class: two of its devices), over every such pair of devices.
class ClassTransfers {
 public:
  // REQUIRES: `cost` outlives this.
  ClassTransfers(const CostModel& cost, const DeviceClasses& classes);
  // Seconds to move `bytes` (a control edge: the routes' latency);
  // infinity when the classes have no two distinct devices.
  double Seconds(int from, int to, bool control, int64_t bytes) const;

 private:
  struct Route {
    double latency;
    double per_byte;
    DeviceId from, to;
  };
  const CostModel& cost_;
  int num_classes_;
  // Per class pair: the device pairs on the lower envelope of latency +
  // bytes x seconds per byte.
  std::vector<std::vector<Route>> routes_;
};

}  // namespace dplace

#endif  // DPLACE_SIM_DEVICE_CLASSES_H_
