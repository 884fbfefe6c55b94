// Kinds of devices, and sets of them (the kinds an op may run on).
#ifndef DPLACE_CLUSTER_DEVICE_KIND_H_
#define DPLACE_CLUSTER_DEVICE_KIND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dplace {

enum class DeviceKind : uint8_t { kCpu = 0, kGpu = 1 };

std::string_view DeviceKindName(DeviceKind kind);  // "cpu", "gpu".
std::optional<DeviceKind> ParseDeviceKind(std::string_view name);

// A small set of device kinds, as a bit mask.
class DeviceKindSet {
 public:
  constexpr DeviceKindSet() = default;
  static constexpr DeviceKindSet All() { return DeviceKindSet(0b11); }
  static constexpr DeviceKindSet Only(DeviceKind kind) {
    return DeviceKindSet(uint8_t{1} << static_cast<int>(kind));
  }

  bool Contains(DeviceKind kind) const {
    return bits_ & (uint8_t{1} << static_cast<int>(kind));
  }
  void Add(DeviceKind kind) { bits_ |= uint8_t{1} << static_cast<int>(kind); }
  bool empty() const { return bits_ == 0; }
  bool operator==(DeviceKindSet other) const { return bits_ == other.bits_; }
  uint8_t bits() const { return bits_; }

 private:
  constexpr explicit DeviceKindSet(uint8_t bits) : bits_(bits) {}
  uint8_t bits_ = 0;
};

}  // namespace dplace

#endif  // DPLACE_CLUSTER_DEVICE_KIND_H_
