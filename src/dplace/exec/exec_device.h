// This machine's devices as real execution names them: `cpu:N`, a worker
// thread with its own intra-op threads, and `cuda:N`, a GPU when the
// LibTorch in use has CUDA. Keeps LibTorch out of its includers.
#ifndef DPLACE_EXEC_EXEC_DEVICE_H_
#define DPLACE_EXEC_EXEC_DEVICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/util/status.h"

namespace dplace {

struct ExecDevice {
  std::string name;  // "cpu:0", "cuda:1".
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // N of cpu:N / cuda:N.
  // Intra-op threads of a CPU device's worker. Default: 1.
  int threads = 1;
  // Capacity accounted against; 0 means unlimited. Default: 0.
  int64_t memory_bytes = 0;
};

// Parses one device name ("cpu:0", "cuda:1"). Errors name the device and
// what was expected; a cuda device needs a LibTorch with CUDA and a GPU of
// that index on this machine.
StatusOr<ExecDevice> ParseExecDevice(const std::string& name);
// A comma-separated list ("cpu:0,cpu:1"); names must be distinct.
StatusOr<std::vector<ExecDevice>> ParseExecDevices(const std::string& list);
// True when the LibTorch in use was built with CUDA and sees a GPU.
bool CudaAvailable();
int CudaDeviceCount();

// The real devices behind a cluster: each cluster device's name must name
// one ("cpu:N" or "cuda:N", as `dplace cluster detect` writes them); its
// memory_bytes becomes the capacity. A CPU device gets the hardware threads
// split evenly between the cluster's CPU devices as its intra-op threads
// (what detection gives it): the executor runs one op at a time per
// device, the simulator's single compute slot.
StatusOr<std::vector<ExecDevice>> ExecDevicesOfCluster(const Cluster& cluster);

}  // namespace dplace

#endif  // DPLACE_EXEC_EXEC_DEVICE_H_
