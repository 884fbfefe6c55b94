#include "dplace/cluster/cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <queue>
#include <tuple>
#include <unordered_map>

namespace dplace {

std::optional<DeviceId> Cluster::FindDevice(std::string_view name) const {
  for (DeviceId d = 0; d < num_devices(); ++d) {
    if (devices_[d].name == name) return d;
  }
  return std::nullopt;
}

std::vector<DeviceId> Cluster::DevicesOfKind(DeviceKind kind) const {
  std::vector<DeviceId> out;
  for (DeviceId d = 0; d < num_devices(); ++d) {
    if (devices_[d].kind == kind) out.push_back(d);
  }
  return out;
}

int Cluster::total_compute_slots() const {
  int total = 0;
  for (const Device& d : devices_) total += d.compute_slots;
  return total;
}

ClusterBuilder::ClusterBuilder(std::string name) : name_(std::move(name)) {}

DeviceId ClusterBuilder::AddDevice(Device device) {
  devices_.push_back(std::move(device));
  return static_cast<DeviceId>(devices_.size() - 1);
}

void ClusterBuilder::AddLink(std::string_view from, std::string_view to,
                             double bandwidth, double latency,
                             bool bidirectional, Copier copier,
                             double hand_off) {
  links_.push_back({std::string(from), std::string(to), bandwidth, latency,
                    copier, hand_off});
  if (bidirectional) {
    links_.push_back({std::string(to), std::string(from), bandwidth, latency,
                      copier, hand_off});
  }
}

const char* CopierName(Copier copier) {
  return copier == Copier::kLink ? "link" : "destination";
}

std::optional<Copier> ParseCopier(std::string_view name) {
  if (name == "link") return Copier::kLink;
  if (name == "destination") return Copier::kDestination;
  return std::nullopt;
}

namespace {

bool Positive(double x) { return std::isfinite(x) && x > 0; }

std::string Shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

// Bounds beyond sign (cluster.h): an error message naming `where` and
// `field`, or "" when `value` is within them.
std::string AboveMin(const std::string& where, const char* field, double value,
                     const char* unit) {
  if (value >= kMinClusterRate) return "";
  return where + ": " + field + " must be at least 1 " + unit + ", got " +
         Shortest(value);
}
std::string BelowMax(const std::string& where, const char* field, double value,
                     double max, const char* unit) {
  if (value <= max) return "";
  return where + ": " + field + " must be at most " + Shortest(max) + unit +
         ", got " + Shortest(value);
}

Status ValidateDevice(const Device& d) {
  const std::string where = "device \"" + d.name + "\"";
  if (d.name.empty()) return InvalidArgumentError("a device has no name");
  if (!Positive(d.peak_flops)) {
    return InvalidArgumentError(where + ": peak_flops must be > 0");
  }
  if (!Positive(d.memory_bandwidth)) {
    return InvalidArgumentError(where + ": memory_bandwidth must be > 0");
  }
  if (d.memory_bytes <= 0) {
    return InvalidArgumentError(where + ": memory_bytes must be > 0");
  }
  if (!(d.launch_overhead >= 0) || !std::isfinite(d.launch_overhead)) {
    return InvalidArgumentError(where + ": launch_overhead must be >= 0");
  }
  if (d.compute_slots < 1) {
    return InvalidArgumentError(where + ": compute_slots must be >= 1");
  }
  if (!(d.shared_host_slowdown >= 0) ||
      !std::isfinite(d.shared_host_slowdown)) {
    return InvalidArgumentError(where + ": shared_host_slowdown must be >= 0");
  }
  for (const std::string& error :
       {AboveMin(where, "peak_flops", d.peak_flops, "FLOP/s"),
        AboveMin(where, "memory_bandwidth", d.memory_bandwidth, "byte/s"),
        BelowMax(where, "launch_overhead", d.launch_overhead,
                 kMaxClusterSeconds, " s"),
        BelowMax(where, "shared_host_slowdown", d.shared_host_slowdown,
                 kMaxSharedHostSlowdown, "")}) {
    if (!error.empty()) return InvalidArgumentError(error);
  }
  return Status::Ok();
}

constexpr double kProbeBytes = 1 << 20;

// What a route's choice weighs a link by: the time of a 1 MiB transfer.
double ProbeTime(const Link& link) {
  return link.hand_off + link.latency + kProbeBytes / link.bandwidth;
}

// Dijkstra from `source` over links, weighed by ProbeTime; ties broken by
// hop count, then by link id (deterministic). Returns, per device, the link
// by which the tree reaches it (-1: the source, or none).
// With `stop_at`, it stops once that device is settled: its path, and those
// of the devices on it, are then final, the same as in the whole tree. Such
// a search also skips the links that reach past the best time to `stop_at`
// found so far (out links come sorted by ProbeTime, so it stops scanning a
// device's links at the first): in a fat tree whose devices have hundreds
// of links, it scans a few of each.
std::vector<LinkId> ShortestPathTree(const std::vector<Link>& links,
                                     const std::vector<int32_t>& out_offsets,
                                     const std::vector<LinkId>& out_links,
                                     DeviceId source, DeviceId stop_at = -1) {
  const int num_devices = static_cast<int>(out_offsets.size()) - 1;
  using Key = std::tuple<double, int, DeviceId>;  // time, hops, device.
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  std::vector<Key> best(num_devices, {kInfinity, 0, 0});
  std::vector<LinkId> via(num_devices, -1);
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> queue;
  best[source] = {0.0, 0, source};
  queue.push(best[source]);
  while (!queue.empty()) {
    const Key top = queue.top();
    queue.pop();
    const DeviceId d = std::get<2>(top);
    if (top != best[d]) continue;
    if (d == stop_at) break;
    // Past this, a link cannot be on the path to `stop_at` nor tie with it
    // (the margin is far above rounding, far below any link's time).
    const double bound =
        stop_at < 0 ? kInfinity : std::get<0>(best[stop_at]) * (1 + 1e-9);
    for (int32_t i = out_offsets[d]; i < out_offsets[d + 1]; ++i) {
      const LinkId l = out_links[i];
      const Link& link = links[l];
      const Key next{std::get<0>(top) + link.hand_off + link.latency +
                         kProbeBytes / link.bandwidth,
                     std::get<1>(top) + 1, link.to};
      if (std::get<0>(next) > bound) break;
      if (next < best[link.to]) {
        best[link.to] = next;
        via[link.to] = l;
        queue.push(next);
      }
    }
  }
  return via;
}

// Devices reachable from `source` over links (forward) or against them.
std::vector<char> Reachable(const std::vector<Link>& links,
                            const std::vector<int32_t>& offsets,
                            const std::vector<LinkId>& by_device, bool forward,
                            DeviceId source) {
  std::vector<char> seen(offsets.size() - 1, 0);
  std::vector<DeviceId> stack = {source};
  seen[source] = 1;
  while (!stack.empty()) {
    const DeviceId d = stack.back();
    stack.pop_back();
    for (int32_t i = offsets[d]; i < offsets[d + 1]; ++i) {
      const Link& l = links[by_device[i]];
      const DeviceId next = forward ? l.to : l.from;
      if (!seen[next]) {
        seen[next] = 1;
        stack.push_back(next);
      }
    }
  }
  return seen;
}

// Links grouped by their source (or destination) device, as CSR.
void GroupLinks(int num_devices, const std::vector<Link>& links, bool by_from,
                std::vector<int32_t>* offsets, std::vector<LinkId>* ids) {
  offsets->assign(num_devices + 1, 0);
  for (const Link& l : links) ++(*offsets)[(by_from ? l.from : l.to) + 1];
  for (int d = 0; d < num_devices; ++d) (*offsets)[d + 1] += (*offsets)[d];
  ids->resize(links.size());
  std::vector<int32_t> next(offsets->begin(), offsets->end() - 1);
  for (LinkId l = 0; l < static_cast<LinkId>(links.size()); ++l) {
    (*ids)[next[by_from ? links[l].from : links[l].to]++] = l;
  }
}

// The error for a cluster some device cannot reach another in: the first
// such pair, sources in order, then destinations.
Status NoRouteError(const Cluster& c, const std::vector<Link>& links,
                    const std::vector<int32_t>& out_offsets,
                    const std::vector<LinkId>& out_links) {
  for (DeviceId s = 0; s < c.num_devices(); ++s) {
    const std::vector<char> seen =
        Reachable(links, out_offsets, out_links, true, s);
    for (DeviceId t = 0; t < c.num_devices(); ++t) {
      if (!seen[t]) {
        return InvalidArgumentError("no route from device \"" +
                                    c.device(s).name + "\" to \"" +
                                    c.device(t).name + "\"");
      }
    }
  }
  return InternalError("a cluster without routes has a route everywhere");
}

}  // namespace

void Route::Reserve(size_t size) {
  size_ = size;
  if (size > kInline) heap_.resize(size);
}

class Cluster::RouteTrees {
 public:
  explicit RouteTrees(int num_devices)
      : once_(std::make_unique<std::once_flag[]>(num_devices)),
        via_(num_devices) {}

  // The tree of `source`, computed by the first caller.
  const std::vector<LinkId>& Of(const Cluster& c, DeviceId source) {
    std::call_once(once_[source], [&] {
      via_[source] =
          ShortestPathTree(c.links_, c.out_offsets_, c.out_links_, source);
    });
    return via_[source];
  }

 private:
  std::unique_ptr<std::once_flag[]> once_;
  std::vector<std::vector<LinkId>> via_;
};

Route Cluster::route(DeviceId from, DeviceId to) const {
  Route route;
  if (from == to) return route;
  std::vector<LinkId> searched;
  if (!trees_) {
    searched = ShortestPathTree(links_, out_offsets_, out_links_, from, to);
  }
  const std::vector<LinkId>& via = trees_ ? trees_->Of(*this, from) : searched;
  size_t hops = 0;
  for (DeviceId v = to; v != from; v = links_[via[v]].from) ++hops;
  route.Reserve(hops);
  LinkId* out = route.data() + hops;
  for (DeviceId v = to; v != from; v = links_[via[v]].from) *--out = via[v];
  return route;
}

StatusOr<Cluster> ClusterBuilder::Build() && {
  Cluster c;
  c.name_ = std::move(name_);
  if (devices_.empty()) {
    return InvalidArgumentError("cluster \"" + c.name_ + "\" has no devices");
  }
  if (devices_.size() > static_cast<size_t>(kMaxClusterDevices)) {
    return InvalidArgumentError("cluster \"" + c.name_ + "\" has " +
                                std::to_string(devices_.size()) +
                                " devices; dplace supports at most " +
                                std::to_string(kMaxClusterDevices));
  }
  std::unordered_map<std::string, DeviceId> index;
  int64_t memory = 0;
  for (const Device& d : devices_) {
    DPLACE_RETURN_IF_ERROR(ValidateDevice(d));
    if (d.memory_bytes > kMaxClusterMemoryBytes - memory) {
      return InvalidArgumentError(
          "device \"" + d.name +
          "\": memory_bytes: the devices' memory_bytes sum past 2^60 (1 EiB) "
          "here; dplace accepts at most 2^60");
    }
    memory += d.memory_bytes;
    if (!index.emplace(d.name, static_cast<DeviceId>(index.size())).second) {
      return InvalidArgumentError("duplicate device name \"" + d.name + "\"");
    }
  }
  c.devices_ = std::move(devices_);
  const int n = c.num_devices();

  for (const PendingLink& p : links_) {
    const std::string where = "link \"" + p.from + "\" -> \"" + p.to + "\"";
    auto from = index.find(p.from);
    auto to = index.find(p.to);
    if (from == index.end() || to == index.end()) {
      const std::string& missing = from == index.end() ? p.from : p.to;
      return InvalidArgumentError(where + ": unknown device \"" + missing +
                                  "\"");
    }
    if (from->second == to->second) {
      return InvalidArgumentError(where + ": a link joins two devices");
    }
    if (!Positive(p.bandwidth)) {
      return InvalidArgumentError(where + ": bandwidth must be > 0");
    }
    if (!(p.latency >= 0) || !std::isfinite(p.latency)) {
      return InvalidArgumentError(where + ": latency must be >= 0");
    }
    if (!(p.hand_off >= 0) || !std::isfinite(p.hand_off)) {
      return InvalidArgumentError(where + ": hand_off must be >= 0");
    }
    for (const std::string& error :
         {AboveMin(where, "bandwidth", p.bandwidth, "byte/s"),
          BelowMax(where, "latency", p.latency, kMaxClusterSeconds, " s"),
          BelowMax(where, "hand_off", p.hand_off, kMaxClusterSeconds, " s")}) {
      if (!error.empty()) return InvalidArgumentError(error);
    }
    if (p.hand_off > 0 && p.copier != Copier::kDestination) {
      return InvalidArgumentError(
          where +
          ": hand_off is for links whose destination makes the copies "
          "(copier \"destination\")");
    }
    c.links_.push_back({from->second, to->second, p.bandwidth, p.latency,
                        p.copier, p.hand_off});
  }

  GroupLinks(n, c.links_, true, &c.out_offsets_, &c.out_links_);
  // Each device's links by ProbeTime, ties by id (ShortestPathTree).
  for (DeviceId d = 0; d < n; ++d) {
    std::stable_sort(c.out_links_.begin() + c.out_offsets_[d],
                     c.out_links_.begin() + c.out_offsets_[d + 1],
                     [&](LinkId a, LinkId b) {
                       return ProbeTime(c.links_[a]) < ProbeTime(c.links_[b]);
                     });
  }
  // Every device reaches every other iff device 0 reaches all and all
  // reach it.
  std::vector<int32_t> in_offsets;
  std::vector<LinkId> in_links;
  GroupLinks(n, c.links_, false, &in_offsets, &in_links);
  const std::vector<char> from0 =
      Reachable(c.links_, c.out_offsets_, c.out_links_, true, 0);
  const std::vector<char> to0 =
      Reachable(c.links_, in_offsets, in_links, false, 0);
  for (DeviceId d = 0; d < n; ++d) {
    if (!from0[d] || !to0[d]) {
      return NoRouteError(c, c.links_, c.out_offsets_, c.out_links_);
    }
  }
  if (n <= Cluster::kRouteTreeDevices) {
    c.trees_ = std::make_shared<Cluster::RouteTrees>(n);
  }
  return c;
}

}  // namespace dplace
