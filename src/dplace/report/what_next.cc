#include "dplace/report/what_next.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dplace/report/svg.h"
#include "dplace/sim/step_chain.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

// Sums of the GPUs' and the CPUs' memory, and the largest GPU's.
struct Capacity {
  int64_t gpus = 0;
  int64_t cpus = 0;
  int64_t largest_gpu = 0;
  int num_gpus = 0;
};

Capacity CapacityOf(const Cluster& cluster) {
  Capacity c;
  for (const Device& d : cluster.devices()) {
    if (d.kind == DeviceKind::kGpu) {
      c.gpus += d.memory_bytes;
      c.largest_gpu = std::max(c.largest_gpu, d.memory_bytes);
      ++c.num_gpus;
    } else {
      c.cpus += d.memory_bytes;
    }
  }
  return c;
}

// The peak memory of the whole step on one device: every op on the first
// GPU where it may run (the CPU otherwise), the peaks summed.
int64_t OneDevicePeak(const CostModel& cost) {
  const Graph& graph = cost.graph();
  const Cluster& cluster = cost.cluster();
  const std::vector<DeviceId> gpus = cluster.DevicesOfKind(DeviceKind::kGpu);
  const std::vector<DeviceId> cpus = cluster.DevicesOfKind(DeviceKind::kCpu);
  Placement placement(graph.num_ops(), 0);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const bool gpu =
        !gpus.empty() && graph.allowed_devices(op).Contains(DeviceKind::kGpu);
    placement[op] = gpu ? gpus[0] : (cpus.empty() ? 0 : cpus[0]);
  }
  SimOptions options;
  options.compute_bounds = false;
  StatusOr<SimResult> sim = Simulator(cost).Simulate(placement, options);
  if (!sim.ok()) return 0;
  int64_t peak = 0;
  for (int64_t p : sim->device_peak_bytes) peak += p;
  return peak;
}

int64_t LargestOp(const Graph& graph) {
  int64_t largest = 0;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    largest = std::max(largest, OpMemoryEstimate(graph, op));
  }
  return largest;
}

// The preset with the least GPU memory in total whose GPUs together hold
// `peak` in kFitShare of their memory, and `largest_op` each; "" when none
// does.
std::string PresetThatHolds(int64_t peak, int64_t largest_op,
                            int64_t more_than) {
  std::string best;
  int64_t best_total = std::numeric_limits<int64_t>::max();
  for (const std::string& name : ClusterPresetNames()) {
    StatusOr<Cluster> preset = MakeClusterPreset(name);
    if (!preset.ok()) continue;
    const Capacity c = CapacityOf(*preset);
    if (c.gpus <= more_than || kFitShare * static_cast<double>(c.gpus) < peak ||
        c.largest_gpu < largest_op) {
      continue;
    }
    if (c.gpus < best_total) {
      best_total = c.gpus;
      best = name;
    }
  }
  return best;
}

}  // namespace

Bottleneck FindBottleneck(const CostModel& cost, const SimResult& sim) {
  const Cluster& cluster = cost.cluster();
  Bottleneck b;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const double busy =
        sim.device_busy_seconds[d] / cluster.device(d).compute_slots;
    b.idle_seconds.push_back(std::max(0.0, sim.step_time - busy));
    const double share = sim.step_time > 0 ? busy / sim.step_time : 0;
    if (b.busiest < 0 || share > b.busiest_share) {
      b.busiest = d;
      b.busiest_share = share;
    }
  }
  for (LinkId l = 0; l < cluster.num_links(); ++l) {
    if (sim.link_bytes[l] == 0) continue;
    b.transfer_bytes += sim.link_bytes[l];
    b.largest_transfers.push_back(
        {l, sim.link_bytes[l], cost.LinkTime(sim.link_bytes[l], l)});
  }
  std::stable_sort(
      b.largest_transfers.begin(), b.largest_transfers.end(),
      [](const Bottleneck::Transfer& x, const Bottleneck::Transfer& y) {
        return x.bytes > y.bytes;
      });
  if (b.largest_transfers.size() > 3) b.largest_transfers.resize(3);
  return b;
}

std::vector<std::string> DescribeBottleneck(const Cluster& cluster,
                                            const SimResult& sim,
                                            const Bottleneck& b) {
  std::vector<std::string> lines;
  if (b.busiest < 0) return lines;
  lines.push_back("busiest device: " + cluster.device(b.busiest).name +
                  ", busy " + Format("%.0f%%", 100 * b.busiest_share) +
                  " of the step");
  std::string idle = "idle per device:";
  bool first = true;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    if (sim.device_op_count[d] == 0) continue;
    idle += std::string(first ? " " : ", ") + cluster.device(d).name + " " +
            report::FormatSeconds(b.idle_seconds[d]) + " (" +
            Format("%.0f%%", sim.step_time > 0
                                 ? 100 * b.idle_seconds[d] / sim.step_time
                                 : 0) +
            ")";
    first = false;
  }
  lines.push_back(idle);
  if (b.largest_transfers.empty()) {
    lines.push_back("transfers: none (every op on one device)");
    return lines;
  }
  std::string transfers = "largest transfers:";
  for (const Bottleneck::Transfer& t : b.largest_transfers) {
    const Link& link = cluster.link(t.link);
    transfers += (&t == &b.largest_transfers[0] ? " " : ", ") +
                 cluster.device(link.from).name + " -> " +
                 cluster.device(link.to).name + " " +
                 FormatBytesScaled(static_cast<double>(t.bytes)) + " (" +
                 report::FormatSeconds(t.seconds) + ")";
  }
  transfers += " of " +
               FormatBytesScaled(static_cast<double>(b.transfer_bytes)) +
               " moved in all";
  lines.push_back(transfers);
  return lines;
}

StepChain TraceStepChain(const CostModel& cost, const Placement& placement,
                         const SimResult& sim) {
  const std::vector<ChainLink> links = LastChain(cost, placement, sim);
  StepChain chain;
  for (size_t i = 0; i < links.size(); ++i) {
    const ChainLink& link = links[i];
    ++chain.ops;
    chain.compute_seconds += link.end - link.start;
    const double queued = link.start - link.ready;
    if (queued > 0) {
      chain.queued_seconds += queued;
      ++chain.queued_ops;
    }
    // The next link is the input it waited for.
    if (link.waited_for >= 0) {
      chain.transfer_seconds += link.ready - links[i + 1].end;
    }
  }
  return chain;
}

std::string DescribeStepChain(const StepChain& chain) {
  return "the step's last chain: " + FormatCount(chain.ops) + " ops, " +
         report::FormatSeconds(chain.compute_seconds) + " computing, " +
         report::FormatSeconds(chain.queued_seconds) +
         " queued behind other ops on their devices (" +
         FormatCount(chain.queued_ops) + " ops), " +
         report::FormatSeconds(chain.transfer_seconds) + " in transfers";
}

std::vector<FitFix> FixesToFit(const CostModel& cost, int64_t batch) {
  const Graph& graph = cost.graph();
  const Capacity c = CapacityOf(cost.cluster());
  const int64_t peak = OneDevicePeak(cost);
  const int64_t weights = graph.total_persistent_bytes();
  const int64_t largest_op = LargestOp(graph);
  std::vector<FitFix> fixes;
  if (peak <= 0) return fixes;
  const std::string need =
      "the whole step peaks at " + FormatBytesScaled(peak) + " on one device";
  if (c.num_gpus > 0 && peak > c.gpus && peak <= c.gpus + c.cpus) {
    fixes.push_back(
        {"--method m-etf --option use_cpu=true (or m-topo, m-sct)",
         need + "; the GPUs hold " + FormatBytesScaled(c.gpus) +
             " together and with the CPU " +
             FormatBytesScaled(static_cast<double>(c.gpus + c.cpus))});
  }
  const int64_t memory = c.num_gpus > 0 ? c.gpus : c.cpus;
  const double room = kFitShare * static_cast<double>(memory);
  const int64_t activations = peak - weights;
  if (batch > 1 && activations > 0 && weights < room) {
    const int64_t fits = static_cast<int64_t>(
        std::floor(static_cast<double>(batch) * (room - weights) /
                   static_cast<double>(activations)));
    if (fits >= 1 && fits < batch) {
      fixes.push_back({"--batch " + std::to_string(fits),
                       "weights and optimizer slots take " +
                           FormatBytesScaled(weights) +
                           " and the activations " +
                           FormatBytesScaled(static_cast<double>(activations)) +
                           " at batch " + std::to_string(batch) +
                           "; scaled with the batch they fill " +
                           Format("%.0f%%", 100 * kFitShare) + " of the " +
                           FormatBytesScaled(static_cast<double>(memory)) +
                           " of the " + (c.num_gpus > 0 ? "GPUs" : "CPUs") +
                           " at batch " + std::to_string(fits) +
                           ", room for an uneven split (an estimate: check "
                           "it with place)"});
    }
  }
  const std::string preset = PresetThatHolds(peak, largest_op, c.gpus);
  if (!preset.empty()) {
    const Capacity p = CapacityOf(*MakeClusterPreset(preset));
    fixes.push_back({"--cluster " + preset,
                     need + "; its " + std::to_string(p.num_gpus) +
                         " GPUs hold " +
                         FormatBytesScaled(static_cast<double>(p.gpus)) +
                         " together, room for an uneven split"});
  }
  return fixes;
}

}  // namespace dplace
