#include "dplace/exec/exec_device.h"

#include <torch/cuda.h>

#include <algorithm>
#include <cctype>
#include <thread>
#include <unordered_set>

namespace dplace {

bool CudaAvailable() { return torch::cuda::is_available(); }
int CudaDeviceCount() {
  return CudaAvailable() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

StatusOr<ExecDevice> ParseExecDevice(const std::string& name) {
  const size_t colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  const std::string index =
      colon == std::string::npos ? "" : name.substr(colon + 1);
  const std::string expected =
      "expected cpu:N (a logical CPU device) or cuda:N (a GPU)";
  if (kind != "cpu" && kind != "cuda") {
    return InvalidArgumentError("device \"" + name + "\": unknown kind \"" +
                                kind + "\"; " + expected);
  }
  if (index.empty() || index.size() > 6 ||
      !std::all_of(index.begin(), index.end(),
                   [](unsigned char c) { return std::isdigit(c); })) {
    return InvalidArgumentError("device \"" + name + "\": no device index; " +
                                expected);
  }
  ExecDevice device;
  device.name = name;
  device.index = std::stoi(index);
  device.kind = kind == "cpu" ? DeviceKind::kCpu : DeviceKind::kGpu;
  if (device.kind == DeviceKind::kGpu && device.index >= CudaDeviceCount()) {
    return InvalidArgumentError(
        "device \"" + name + "\": this machine has " +
        (CudaAvailable() ? std::to_string(CudaDeviceCount()) + " GPU(s)"
                         : std::string("no GPU usable by this LibTorch "
                                       "(built without CUDA, or no driver)")) +
        "; use cpu:N devices, or build against a CUDA LibTorch "
        "(CMAKE_PREFIX_PATH)");
  }
  return device;
}

StatusOr<std::vector<ExecDevice>> ParseExecDevices(const std::string& list) {
  std::vector<ExecDevice> devices;
  std::unordered_set<std::string> seen;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string name = list.substr(start, comma - start);
    DPLACE_ASSIGN_OR_RETURN(ExecDevice device, ParseExecDevice(name));
    if (!seen.insert(name).second) {
      return InvalidArgumentError("device \"" + name + "\" is named twice");
    }
    devices.push_back(std::move(device));
    start = comma + 1;
  }
  return devices;
}

StatusOr<std::vector<ExecDevice>> ExecDevicesOfCluster(const Cluster& cluster) {
  int cpus = 0;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    cpus += cluster.device(d).kind == DeviceKind::kCpu;
  }
  const int threads =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                      std::max(1, cpus));
  std::vector<ExecDevice> devices;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const Device& spec = cluster.device(d);
    StatusOr<ExecDevice> device = ParseExecDevice(spec.name);
    if (!device.ok()) {
      return InvalidArgumentError(
          "cluster " + cluster.name() + ", device " + std::to_string(d) +
          ": not a device of this machine (real execution needs a cluster "
          "whose devices are named cpu:N or cuda:N, as `dplace cluster "
          "detect` writes): " +
          device.status().message());
    }
    device->threads = device->kind == DeviceKind::kCpu ? threads : 1;
    device->memory_bytes = spec.memory_bytes;
    devices.push_back(*device);
  }
  return devices;
}

}  // namespace dplace
