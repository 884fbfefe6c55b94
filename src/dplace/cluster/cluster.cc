#include "dplace/cluster/cluster.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
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
std::string AboveMin(const std::string& where, const char* field,
                     double value, const char* unit) {
  if (value >= kMinClusterRate) return "";
  return where + ": " + field + " must be at least 1 " + unit + ", got " +
         Shortest(value);
}
std::string BelowMax(const std::string& where, const char* field,
                     double value, double max, const char* unit) {
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

// Dijkstra from `source` over links; cost is the time of a 1 MiB transfer,
// ties broken by hop count, then by link id (deterministic).
std::vector<LinkId> ShortestPathTree(
    int num_devices, const std::vector<Link>& links,
    const std::vector<std::vector<LinkId>>& out, DeviceId source) {
  constexpr double kProbeBytes = 1 << 20;
  using Key = std::tuple<double, int, DeviceId>;  // time, hops, device.
  std::vector<Key> best(num_devices,
                        {std::numeric_limits<double>::infinity(), 0, 0});
  std::vector<LinkId> via(num_devices, -1);
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> queue;
  best[source] = {0.0, 0, source};
  queue.push(best[source]);
  while (!queue.empty()) {
    const Key top = queue.top();
    queue.pop();
    const DeviceId d = std::get<2>(top);
    if (top != best[d]) continue;
    for (LinkId l : out[d]) {
      const Link& link = links[l];
      const Key next{std::get<0>(top) + link.hand_off + link.latency +
                         kProbeBytes / link.bandwidth,
                     std::get<1>(top) + 1, link.to};
      if (next < best[link.to]) {
        best[link.to] = next;
        via[link.to] = l;
        queue.push(next);
      }
    }
  }
  return via;
}

}  // namespace

StatusOr<Cluster> ClusterBuilder::Build() && {
  Cluster c;
  c.name_ = std::move(name_);
  if (devices_.empty()) {
    return InvalidArgumentError("cluster \"" + c.name_ + "\" has no devices");
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

  std::vector<std::vector<LinkId>> out(n);
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
    out[from->second].push_back(static_cast<LinkId>(c.links_.size()));
    c.links_.push_back({from->second, to->second, p.bandwidth, p.latency,
                        p.copier, p.hand_off});
  }

  c.route_offsets_.assign(1, 0);
  for (DeviceId s = 0; s < n; ++s) {
    const std::vector<LinkId> via = ShortestPathTree(n, c.links_, out, s);
    for (DeviceId t = 0; t < n; ++t) {
      if (t != s && via[t] < 0) {
        return InvalidArgumentError("no route from device \"" +
                                    c.devices_[s].name + "\" to \"" +
                                    c.devices_[t].name + "\"");
      }
      std::vector<LinkId> path;
      for (DeviceId v = t; v != s; v = c.links_[via[v]].from) {
        path.push_back(via[v]);
      }
      c.route_links_.insert(c.route_links_.end(), path.rbegin(), path.rend());
      c.route_offsets_.push_back(static_cast<int32_t>(c.route_links_.size()));
    }
  }
  return c;
}

}  // namespace dplace
