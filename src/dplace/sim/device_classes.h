// Devices that are interchangeable for a problem: the same kind and memory,
// and every op taking the same time on them. The problem-level bounds
// (path_bound.h, work_bound.h) reason about classes instead of devices, so
// that eight identical GPUs cost what one does.
#ifndef DPLACE_SIM_DEVICE_CLASSES_H_
#define DPLACE_SIM_DEVICE_CLASSES_H_

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

}  // namespace dplace

#endif  // DPLACE_SIM_DEVICE_CLASSES_H_
