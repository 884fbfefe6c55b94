#include "dplace/sim/device_classes.h"

namespace dplace {
namespace {

bool Alike(const CostModel& cost, DeviceId a, DeviceId b) {
  const Device& da = cost.cluster().device(a);
  const Device& db = cost.cluster().device(b);
  if (da.kind != db.kind || da.memory_bytes != db.memory_bytes) return false;
  for (OpId op = 0; op < cost.graph().num_ops(); ++op) {
    if (cost.OpTime(op, a) != cost.OpTime(op, b)) return false;
  }
  return true;
}

}  // namespace

DeviceClasses ClassesOf(const CostModel& cost) {
  DeviceClasses classes;
  for (DeviceId d = 0; d < cost.cluster().num_devices(); ++d) {
    int found = -1;
    for (int c = 0; c < classes.num() && found < 0; ++c) {
      if (Alike(cost, classes.representative(c), d)) found = c;
    }
    if (found >= 0) {
      classes.members[found].push_back(d);
    } else {
      classes.members.push_back({d});
    }
  }
  return classes;
}

}  // namespace dplace
