// The machines a graph is placed on: devices, directed links, routes.
//
// A Cluster is built once by ClusterBuilder and then only read. Every link
// is a directed, serial channel (a bidirectional link is two of them). A
// route between two devices is the sequence of links a tensor crosses; each
// hop is paid in full (store and forward), which is how TensorFlow's
// send/recv pairs move tensors through a host between devices without a
// direct path.
#ifndef DPLACE_CLUSTER_CLUSTER_H_
#define DPLACE_CLUSTER_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/cluster/device_kind.h"
#include "dplace/util/status.h"

namespace dplace {

using DeviceId = int32_t;
using LinkId = int32_t;

struct Device {
  std::string name;  // Unique, e.g. "gpu:0" or "h1/gpu:3".
  DeviceKind kind = DeviceKind::kGpu;
  std::string host;       // Devices on one host share its host-level links.
  std::string model;      // Informational, e.g. "Tesla K80".
  double peak_flops = 0;  // FLOP/s of the whole device (fp32).
  double memory_bandwidth = 0;  // Bytes/s of the device's own memory.
  int64_t memory_bytes = 0;     // Capacity available to the step.
  double launch_overhead = 0;   // Seconds added to every op run here.
  // Ops that run at once. Each slot gets 1/compute_slots of the device's
  // FLOP/s and bandwidth, so the device never exceeds its peak.
  // Default: 1 (GPUs); CPUs usually have several.
  int compute_slots = 1;
  // The factor - 1 on this device's op times in a placement that also puts
  // ops on another device of its host: logical CPU devices on one machine
  // share its cores' caches and memory bandwidth, and each device's thread
  // stays active through a step that uses it (dplace's executor spins
  // between ops), so on a 2-core virtual machine splitting a graph between
  // the two slowed every op (docs/execution.md). Default: 0.
  double shared_host_slowdown = 0;
};

// What makes the copies over a link.
enum class Copier : uint8_t {
  // The channel itself (a DMA engine, a NIC): copies run beside compute.
  kLink,
  // The destination device's compute, as when a CPU core copies between
  // logical CPU devices (dplace's executor): a copy waits in the
  // destination's ready queue with its ops and takes one of its compute
  // slots for its time.
  kDestination,
};

// The JSON names, "link" and "destination"; ParseCopier gives nullopt for
// any other.
const char* CopierName(Copier copier);
std::optional<Copier> ParseCopier(std::string_view name);

// A directed channel between two devices.
struct Link {
  DeviceId from = 0;
  DeviceId to = 0;
  double bandwidth = 0;  // Bytes/s.
  double latency = 0;    // Seconds per transfer.
  Copier copier = Copier::kLink;
  // kDestination only: seconds from a tensor being ready until the
  // destination can take its copy (handing it to the device's thread),
  // a wait that holds no slot; the copy then takes latency + bytes /
  // bandwidth of a slot. Default: 0.
  double hand_off = 0;
};

// The links of a route, in order: a value (routes are computed when asked
// for, see Cluster::route), without an allocation for up to six hops.
class Route {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  LinkId operator[](size_t i) const { return begin()[i]; }
  const LinkId* begin() const {
    return size_ <= kInline ? inline_ : heap_.data();
  }
  const LinkId* end() const { return begin() + size_; }

 private:
  friend class Cluster;
  static constexpr size_t kInline = 6;
  void Reserve(size_t size);  // Room for `size` links; sets size().
  LinkId* data() { return size_ <= kInline ? inline_ : heap_.data(); }

  size_t size_ = 0;
  LinkId inline_[kInline] = {};
  std::vector<LinkId> heap_;
};

class Cluster {
 public:
  // Clusters of up to this many devices keep their routes' trees (route()).
  static constexpr int kRouteTreeDevices = 64;

  const std::string& name() const { return name_; }
  int num_devices() const { return static_cast<int>(devices_.size()); }
  const Device& device(DeviceId d) const { return devices_[d]; }
  const std::vector<Device>& devices() const { return devices_; }
  std::optional<DeviceId> FindDevice(std::string_view name) const;
  std::vector<DeviceId> DevicesOfKind(DeviceKind kind) const;
  int total_compute_slots() const;

  int num_links() const { return static_cast<int>(links_.size()); }
  const Link& link(LinkId l) const { return links_[l]; }

  // The links from `from` to `to`, in order; empty when from == to.
  // Every pair of distinct devices has a route (Build() checks): the path of
  // least time for a 1 MiB tensor, fewest hops on ties. Routes are computed
  // when asked for, never for every pair up front (a ring of 1,024 devices
  // held 3.2 GB of them): up to kRouteTreeDevices devices, each source's
  // shortest-path tree on the first route from it, kept (4 bytes a device),
  // so later routes cost O(hops); beyond, a search from `from` that stops
  // at `to`, each call (the simulator keeps the routes it uses). The two
  // give the same routes. Thread-safe.
  Route route(DeviceId from, DeviceId to) const;

 private:
  friend class ClusterBuilder;
  // Up to kRouteTreeDevices devices (else null): per source device, the
  // link by which its shortest-path tree reaches each device (-1 for the
  // source), filled on first use. Shared by copies of the cluster, which
  // have the same links.
  class RouteTrees;

  std::string name_;
  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<int32_t> out_offsets_;  // num_devices + 1, into out_links_.
  std::vector<LinkId> out_links_;     // Links by source device.
  std::shared_ptr<RouteTrees> trees_;
};

// What a cluster's figures may be, so that every time and byte sum formed
// from them stays finite and in range (with the graph's bounds,
// kMaxGraphBytes and kMaxGraphFlops): rates of at least 1 per second
// (peak_flops, memory_bandwidth, a link's bandwidth), at most 1e6 seconds
// (11.6 days) for a latency, hand-off or launch overhead, a
// shared_host_slowdown of at most 100, and devices' memory_bytes summing to
// at most 2^60 (1 EiB).
constexpr double kMinClusterRate = 1;
constexpr double kMaxClusterSeconds = 1e6;
constexpr double kMaxSharedHostSlowdown = 100;
constexpr int64_t kMaxClusterMemoryBytes = int64_t{1} << 60;
// At most this many devices (the simulator counts a route's hops in 16
// bits); the presets have at most 18.
constexpr int kMaxClusterDevices = 1 << 15;

class ClusterBuilder {
 public:
  explicit ClusterBuilder(std::string name);

  DeviceId AddDevice(Device device);
  // Adds a channel from -> to, and one to -> from when `bidirectional`.
  // Devices are named; unknown names are reported by Build().
  void AddLink(std::string_view from, std::string_view to, double bandwidth,
               double latency, bool bidirectional = true,
               Copier copier = Copier::kLink, double hand_off = 0);

  // Validates: unique names, figures within the bounds above, known link
  // ends, every device reachable from every other. Routes are computed when
  // asked for (Cluster::route).
  StatusOr<Cluster> Build() &&;

 private:
  struct PendingLink {
    std::string from, to;
    double bandwidth, latency;
    Copier copier;
    double hand_off;
  };
  std::string name_;
  std::vector<Device> devices_;
  std::vector<PendingLink> links_;
};

// Names of the built-in presets, in a stable order.
std::vector<std::string> ClusterPresetNames();
// A one-line description of a preset, for `dplace cluster list`.
std::string ClusterPresetDescription(std::string_view name);
// REQUIRES: nothing; unknown names give NotFound listing the presets.
StatusOr<Cluster> MakeClusterPreset(std::string_view name);

}  // namespace dplace

#endif  // DPLACE_CLUSTER_CLUSTER_H_
