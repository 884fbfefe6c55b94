#include "dplace/io/cluster_json.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "dplace/io/file.h"
#include "dplace/io/json_fields.h"

namespace dplace {
namespace {

using io_internal::FieldReader;
using io_internal::json;

constexpr char kFormat[] = "dplace.cluster";

std::string Index(const char* key, size_t i) {
  return std::string(key) + "[" + std::to_string(i) + "]";
}

Status ReadDevice(const json& value, const std::string& path,
                  ClusterBuilder& builder) {
  FieldReader f(value, path);
  Device d;
  d.name = f.String("name");
  const std::string kind = f.String("kind");
  if (auto parsed = ParseDeviceKind(kind)) {
    d.kind = *parsed;
  } else if (f.status().ok()) {
    f.Fail(f.PathOf("kind") + ": expected \"cpu\" or \"gpu\", got \"" + kind +
           "\"");
  }
  d.host = f.String("host", "host0");
  d.model = f.String("model", "");
  d.peak_flops = f.Number("peak_flops", 1.0);
  d.memory_bandwidth = f.Number("memory_bandwidth", 1.0);
  d.memory_bytes = f.Int("memory_bytes", 1);
  d.launch_overhead = f.Number("launch_overhead", 0.0, 0.0);
  // Bounded so the simulator's per-slot queues stay small and sums of
  // slots fit in an int.
  constexpr int64_t kMaxComputeSlots = 4096;
  const int64_t slots = f.Int("compute_slots", 1, 1);
  if (f.status().ok() && slots > kMaxComputeSlots) {
    f.Fail(f.PathOf("compute_slots") + ": expected at most " +
           std::to_string(kMaxComputeSlots) + ", got " + std::to_string(slots));
  }
  d.compute_slots = static_cast<int>(std::min(slots, kMaxComputeSlots));
  d.shared_host_slowdown = f.Number("shared_host_slowdown", 0.0, 0.0);
  DPLACE_RETURN_IF_ERROR(f.Finish());
  builder.AddDevice(std::move(d));
  return Status::Ok();
}

Status ReadLink(const json& value, const std::string& path,
                const std::set<std::string>& device_names,
                ClusterBuilder& builder) {
  FieldReader f(value, path);
  const std::string from = f.String("from");
  const std::string to = f.String("to");
  if (f.status().ok() && !device_names.count(from)) {
    f.Fail(f.PathOf("from") + ": unknown device \"" + from + "\"");
  }
  if (f.status().ok() && !device_names.count(to)) {
    f.Fail(f.PathOf("to") + ": unknown device \"" + to + "\"");
  }
  const double bandwidth = f.Number("bandwidth", 1.0);
  const double latency = f.Number("latency", 0.0, 0.0);
  const double hand_off = f.Number("hand_off", 0.0, 0.0);
  const bool bidirectional = f.Bool("bidirectional", true);
  const std::string copier_name = f.String("copier", "link");
  const std::optional<Copier> copier = ParseCopier(copier_name);
  if (f.status().ok() && !copier) {
    f.Fail(f.PathOf("copier") +
           ": expected \"link\" or \"destination\", got \"" + copier_name +
           "\"");
  }
  DPLACE_RETURN_IF_ERROR(f.Finish());
  builder.AddLink(from, to, bandwidth, latency, bidirectional,
                  copier.value_or(Copier::kLink), hand_off);
  return Status::Ok();
}

StatusOr<Cluster> ParseCluster(const json& root) {
  FieldReader f(root, "");
  io_internal::CheckFormat(f, kFormat);
  ClusterBuilder builder(f.String("name"));
  const json* devices = f.Array("devices", true);
  const json* links = f.Array("links", false);
  DPLACE_RETURN_IF_ERROR(f.Finish());
  // Link ends are checked here, where the JSON path is known.
  std::set<std::string> device_names;
  for (size_t i = 0; i < devices->size(); ++i) {
    DPLACE_RETURN_IF_ERROR(
        ReadDevice((*devices)[i], Index("devices", i), builder));
    device_names.insert((*devices)[i].at("name").get<std::string>());
  }
  for (size_t i = 0; links && i < links->size(); ++i) {
    DPLACE_RETURN_IF_ERROR(
        ReadLink((*links)[i], Index("links", i), device_names, builder));
  }
  return std::move(builder).Build();
}

}  // namespace

StatusOr<Cluster> ParseClusterJson(const std::string& text,
                                   const std::string& source) {
  return io_internal::ParseDocument<Cluster>(text, source, ParseCluster);
}

StatusOr<Cluster> ReadClusterJson(const std::string& path,
                                  const FileLimits& limits) {
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, limits));
  return ParseClusterJson(text, path);
}

std::string ClusterToJson(const Cluster& c) {
  json devices = json::array();
  for (const Device& d : c.devices()) {
    devices.push_back({{"name", d.name},
                       {"kind", DeviceKindName(d.kind)},
                       {"host", d.host},
                       {"model", d.model},
                       {"peak_flops", d.peak_flops},
                       {"memory_bandwidth", d.memory_bandwidth},
                       {"memory_bytes", d.memory_bytes},
                       {"launch_overhead", d.launch_overhead},
                       {"compute_slots", d.compute_slots}});
    if (d.shared_host_slowdown > 0) {
      devices.back()["shared_host_slowdown"] = d.shared_host_slowdown;
    }
  }
  // A pair of opposite channels with the same figures is written once: a
  // link takes the first unwritten opposite one after it. Links by their
  // ends, so a cluster of 100,000 links does not compare every pair.
  std::map<std::pair<DeviceId, DeviceId>, std::vector<LinkId>> by_ends;
  for (LinkId l = 0; l < c.num_links(); ++l) {
    by_ends[{c.link(l).from, c.link(l).to}].push_back(l);
  }
  json links = json::array();
  std::vector<bool> written(c.num_links(), false);
  for (LinkId l = 0; l < c.num_links(); ++l) {
    if (written[l]) continue;
    const Link& a = c.link(l);
    bool both = false;
    for (LinkId m : by_ends[{a.to, a.from}]) {
      const Link& b = c.link(m);
      if (m > l && !written[m] && b.bandwidth == a.bandwidth &&
          b.latency == a.latency && b.copier == a.copier &&
          b.hand_off == a.hand_off) {
        written[m] = both = true;
        break;
      }
    }
    links.push_back({{"from", c.device(a.from).name},
                     {"to", c.device(a.to).name},
                     {"bandwidth", a.bandwidth},
                     {"latency", a.latency},
                     {"bidirectional", both}});
    if (a.copier != Copier::kLink)
      links.back()["copier"] = CopierName(a.copier);
    if (a.hand_off > 0) links.back()["hand_off"] = a.hand_off;
  }
  json root = {{"format", kFormat},
               {"version", 1},
               {"name", c.name()},
               {"devices", devices},
               {"links", links}};
  return root.dump(2) + "\n";
}

StatusOr<Cluster> LoadCluster(const std::string& name_or_path,
                              const FileLimits& limits) {
  const bool is_file =
      name_or_path.size() > 5 &&
      name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0;
  if (is_file) return ReadClusterJson(name_or_path, limits);
  return MakeClusterPreset(name_or_path);
}

}  // namespace dplace
