#include "dplace/cluster/device_kind.h"

namespace dplace {

std::string_view DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kCpu ? "cpu" : "gpu";
}

std::optional<DeviceKind> ParseDeviceKind(std::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "gpu") return DeviceKind::kGpu;
  return std::nullopt;
}

}  // namespace dplace
