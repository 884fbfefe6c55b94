#include "dplace/io/chrome_trace.h"

#include <set>

#include "dplace/io/file.h"
#include "dplace/io/json_fields.h"

namespace dplace {
namespace {

using io_internal::json;

// Link lanes come after the compute slots of the source device.
constexpr int kLinkLaneBase = 1000;

}  // namespace

std::string ChromeTraceJson(const Graph& graph, const Cluster& cluster,
                            const SimResult& result) {
  json events = json::array();
  auto metadata = [&](const char* what, int pid, int tid,
                      const std::string& name) {
    json e = {
        {"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
    if (tid >= 0) e["tid"] = tid;
    events.push_back(std::move(e));
  };
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const Device& dev = cluster.device(d);
    metadata("process_name", d, -1, dev.name + " (" + dev.model + ")");
    for (int s = 0; s < dev.compute_slots; ++s) {
      metadata("thread_name", d, s, "compute " + std::to_string(s));
    }
  }
  std::set<LinkId> used_links;
  for (const TimelineEvent& t : result.timeline) {
    json e = {{"ph", "X"},
              {"pid", t.device},
              {"ts", t.start * 1e6},
              {"dur", (t.end - t.start) * 1e6}};
    if (t.kind == TimelineEvent::Kind::kCompute) {
      e["name"] = graph.op_name(t.id);
      e["cat"] = std::string(PhaseName(graph.phase(t.id)));
      e["tid"] = t.lane;
      e["args"] = {{"type", graph.op_type(t.id)}, {"scope", graph.scope(t.id)}};
    } else {
      const OpId producer = graph.producer(t.id);
      const int index = t.id - graph.output(producer, 0);
      e["name"] = graph.op_name(producer) + ":" + std::to_string(index);
      e["cat"] = "transfer";
      e["tid"] = kLinkLaneBase + t.lane;
      e["args"] = {{"bytes", graph.tensor_bytes(t.id)}};
      used_links.insert(t.lane);
    }
    events.push_back(std::move(e));
  }
  for (LinkId l : used_links) {
    const Link& link = cluster.link(l);
    metadata("thread_name", link.from, kLinkLaneBase + l,
             "send to " + cluster.device(link.to).name);
  }
  json root = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return root.dump() + "\n";
}

Status WriteChromeTrace(const Graph& graph, const Cluster& cluster,
                        const SimResult& result, const std::string& path) {
  return WriteTextFile(path, ChromeTraceJson(graph, cluster, result));
}

}  // namespace dplace
