// How long an op takes on a device, and a tensor on a route.
//
// By default a roofline: an op's time on one compute slot is the larger of
// its FLOPs over the slot's effective FLOP/s and its bytes accessed over the
// slot's effective bandwidth, plus the device's launch overhead. Effective
// means peak times a per-op-type efficiency. A ProfileTable of measured
// times overrides the roofline for the ops it names.
#ifndef DPLACE_COST_COST_MODEL_H_
#define DPLACE_COST_COST_MODEL_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"

namespace dplace {

// A value for each device kind.
struct PerKind {
  double cpu = 0;
  double gpu = 0;
  double operator[](DeviceKind kind) const {
    return kind == DeviceKind::kCpu ? cpu : gpu;
  }
};

struct RooflineOptions {
  // Fraction of peak FLOP/s reached by dense linear algebra (the types in
  // `dense_op_types`). Default: 0.5 on CPUs, 0.7 on GPUs.
  PerKind dense_compute_efficiency{0.5, 0.7};
  // Fraction of peak FLOP/s reached by every other op. Default: 0.25, 0.5.
  PerKind other_compute_efficiency{0.25, 0.5};
  // Fraction of peak memory bandwidth reached. Default: 0.6, 0.8.
  PerKind memory_efficiency{0.6, 0.8};
  // Default: the MatMul and convolution families of TensorFlow and ONNX.
  std::vector<std::string> dense_op_types = {
      "MatMul", "BatchMatMul",          "BatchMatMulV2",
      "Conv2D", "Conv2DBackpropInput",  "Conv2DBackpropFilter",
      "Conv",   "ConvTranspose",        "Gemm",
      "Einsum", "DepthwiseConv2dNative"};
};

// Measured op times (seconds, launch overhead included) per device kind,
// keyed by op name or by op type; a name entry wins over a type entry.
struct ProfileTable {
  std::unordered_map<std::string, std::unordered_map<DeviceKind, double>>
      by_name;
  std::unordered_map<std::string, std::unordered_map<DeviceKind, double>>
      by_type;
  bool empty() const { return by_name.empty() && by_type.empty(); }
};

// Precomputes every op's time on every class of device (devices of one
// kind with the same FLOP/s, bandwidth, slots and launch overhead: a
// 1,024-GPU cluster has one or two classes, so the table grows with the
// classes, not the devices). Immutable after construction, so one instance
// can serve many threads.
class CostModel {
 public:
  CostModel(const Graph& graph, const Cluster& cluster,
            const ProfileTable& profile = {},
            const RooflineOptions& options = {});

  // Seconds op `op` runs on one compute slot of `device`; infinity where the
  // op may not run on that kind of device.
  double OpTime(OpId op, DeviceId device) const {
    return op_times_[static_cast<size_t>(op) * num_classes_ +
                     class_of_[device]];
  }
  // The op's smallest time over the devices it may run on.
  double FastestOpTime(OpId op) const { return fastest_[op]; }

  // Seconds `bytes` occupy one link: latency + bytes / bandwidth.
  double LinkTime(int64_t bytes, LinkId link) const;
  // Sum of LinkTime over the route's hops; 0 when from == to.
  double TransferTime(int64_t bytes, DeviceId from, DeviceId to) const;
  // Sum of the route's latencies (what a control edge pays).
  double RouteLatency(DeviceId from, DeviceId to) const;

  const Graph& graph() const { return *graph_; }
  const Cluster& cluster() const { return *cluster_; }

 private:
  const Graph* graph_;
  const Cluster* cluster_;
  int num_classes_ = 0;
  std::vector<int32_t> class_of_;  // Per device.
  std::vector<double> op_times_;   // num_ops x num_classes.
  std::vector<double> fastest_;
};

}  // namespace dplace

#endif  // DPLACE_COST_COST_MODEL_H_
