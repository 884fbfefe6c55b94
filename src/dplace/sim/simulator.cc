#include "dplace/sim/simulator.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <queue>

namespace dplace {
namespace {

enum class EventType : uint8_t { kOpDone, kHopDone, kControlArrival };

struct Event {
  double time;
  uint64_t seq;  // Insertion order: breaks ties deterministically.
  int32_t id;    // OpId, transfer index or EdgeId, by type.
  EventType type;

  bool operator>(const Event& o) const {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

// One tensor on its way to one destination device.
struct Transfer {
  TensorId tensor;
  DeviceId source;
  DeviceId destination;
  int16_t hop;  // Index of the current link in the route.
  int16_t num_hops;
  int32_t consumer_refs;  // Consumer edges on the destination not yet done.
};

// A serial resource fed by a FIFO: a link channel or a device's ready queue.
struct Fifo {
  std::vector<int32_t> items;
  size_t head = 0;
  bool empty() const { return head == items.size(); }
  int32_t Pop() { return items[head++]; }
  void Push(int32_t x) { items.push_back(x); }
  void Clear() {
    items.clear();
    head = 0;
  }
};

std::string FormatGigabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GB", bytes / 1e9);
  return buf;
}

}  // namespace

double LowerBounds::Max() const {
  return std::max({critical_path, total_work, device_load, link_volume,
                   placed_critical_path});
}

const char* LowerBounds::MaxName() const {
  const double m = Max();
  if (m == placed_critical_path) return "placed critical path";
  if (m == device_load) return "device load";
  if (m == link_volume) return "link volume";
  if (m == critical_path) return "critical path";
  return "total work";
}

std::string DescribeInfeasibility(const Cluster& cluster,
                                  const SimResult& result) {
  if (result.feasible) return "";
  const DeviceId d = result.oom_device;
  return "out of memory on " + cluster.device(d).name + ": peak " +
         FormatGigabytes(result.device_peak_bytes[d]) + " > capacity " +
         FormatGigabytes(cluster.device(d).memory_bytes);
}

struct Simulator::Scratch {
  std::vector<int32_t> pending;      // Per op: inputs not yet on its device.
  std::vector<int32_t> slot_of_op;   // Per op: compute slot it ran on.
  std::vector<int32_t> tensor_refs;  // Per tensor: holders of the source.
  std::vector<int32_t> edge_transfer;  // Per edge: its Transfer, if remote.
  std::vector<Transfer> transfers;
  std::vector<Fifo> link_queues;
  std::vector<char> link_busy;
  std::vector<double> link_seconds;
  std::vector<Fifo> ready;              // Per device.
  std::vector<int32_t> slot_begin;      // Per device, into slot_busy.
  std::vector<char> slot_busy;
  std::vector<int64_t> memory;          // Per device, current bytes.
  std::vector<std::pair<TensorId, DeviceId>> sends;  // Of one finishing op.
  std::vector<int32_t> sends_transfer;
  std::vector<double> path_finish;      // For the placed critical path.
  std::vector<Event> heap;
};

// One simulation: the event loop over a Scratch.
class Simulator::Run {
 public:
  Run(const CostModel& cost, const Placement& placement,
      const SimOptions& options, Scratch* s, SimResult* result)
      : g_(cost.graph()),
        c_(cost.cluster()),
        cost_(cost),
        device_(placement),
        options_(options),
        s_(*s),
        r_(*result) {}

  void Execute() {
    Reset();
    for (OpId op = 0; op < g_.num_ops(); ++op) {
      if (s_.pending[op] == 0) s_.ready[device_[op]].Push(op);
    }
    for (DeviceId d = 0; d < c_.num_devices(); ++d) StartReady(d, 0.0);
    while (!s_.heap.empty()) {
      std::pop_heap(s_.heap.begin(), s_.heap.end(), std::greater<Event>());
      const Event e = s_.heap.back();
      s_.heap.pop_back();
      switch (e.type) {
        case EventType::kOpDone:
          FinishOp(e.id, e.time);
          break;
        case EventType::kHopDone:
          FinishHop(e.id, e.time);
          break;
        case EventType::kControlArrival: {
          const OpId dst = g_.edge_dst(e.id);
          Satisfy(dst);
          StartReady(device_[dst], e.time);
          break;
        }
      }
    }
    for (DeviceId d = 0; d < c_.num_devices(); ++d) {
      if (r_.device_peak_bytes[d] > c_.device(d).memory_bytes) {
        r_.feasible = false;
        r_.oom_device = d;
        break;
      }
    }
  }

  int finished_ops() const { return finished_; }

 private:
  void Reset() {
    const int n = g_.num_ops();
    const int num_devices = c_.num_devices();
    s_.pending.resize(n);
    s_.slot_of_op.resize(n);
    for (OpId op = 0; op < n; ++op) {
      s_.pending[op] = static_cast<int32_t>(g_.in_edges(op).size());
    }
    s_.tensor_refs.assign(g_.num_tensors(), 0);
    s_.edge_transfer.assign(g_.num_edges(), -1);
    for (EdgeId e = 0; e < g_.num_edges(); ++e) {
      if (!g_.is_control(e) &&
          device_[g_.edge_src(e)] == device_[g_.edge_dst(e)]) {
        ++s_.tensor_refs[g_.edge_tensor(e)];
      }
    }
    s_.transfers.clear();
    s_.link_queues.resize(c_.num_links());
    for (Fifo& f : s_.link_queues) f.Clear();
    s_.link_busy.assign(c_.num_links(), 0);
    s_.link_seconds.assign(c_.num_links(), 0.0);
    s_.ready.resize(num_devices);
    for (Fifo& f : s_.ready) f.Clear();
    s_.slot_begin.assign(1, 0);
    for (const Device& d : c_.devices()) {
      s_.slot_begin.push_back(s_.slot_begin.back() + d.compute_slots);
    }
    s_.slot_busy.assign(s_.slot_begin.back(), 0);
    s_.memory.assign(num_devices, 0);
    s_.heap.clear();

    r_.device_busy_seconds.assign(num_devices, 0.0);
    r_.device_op_count.assign(num_devices, 0);
    r_.device_peak_bytes.assign(num_devices, 0);
    r_.link_bytes.assign(c_.num_links(), 0);
    for (OpId op = 0; op < n; ++op) {
      Allocate(device_[op], g_.persistent_bytes(op));
    }
  }

  void Push(double time, int32_t id, EventType type) {
    s_.heap.push_back({time, seq_++, id, type});
    std::push_heap(s_.heap.begin(), s_.heap.end(), std::greater<Event>());
  }

  void Allocate(DeviceId d, int64_t bytes) {
    s_.memory[d] += bytes;
    r_.device_peak_bytes[d] = std::max(r_.device_peak_bytes[d], s_.memory[d]);
  }
  void Free(DeviceId d, int64_t bytes) { s_.memory[d] -= bytes; }

  // One more input of `op` is on its device; queue it when it has them all.
  void Satisfy(OpId op) {
    if (--s_.pending[op] == 0) s_.ready[device_[op]].Push(op);
  }

  // A holder of the source copy of `t` let go.
  void ReleaseSource(TensorId t) {
    if (--s_.tensor_refs[t] == 0) {
      Free(device_[g_.producer(t)], g_.tensor_bytes(t));
    }
  }

  void StartReady(DeviceId d, double now) {
    const int32_t begin = s_.slot_begin[d];
    const int32_t end = s_.slot_begin[d + 1];
    Fifo& ready = s_.ready[d];
    for (int32_t slot = begin; slot < end && !ready.empty(); ++slot) {
      if (s_.slot_busy[slot]) continue;
      StartOp(ready.Pop(), slot, now);
    }
  }

  void StartOp(OpId op, int32_t slot, double now) {
    const DeviceId d = device_[op];
    const double time = cost_.OpTime(op, d);
    s_.slot_busy[slot] = 1;
    s_.slot_of_op[op] = slot;
    r_.device_busy_seconds[d] += time;
    ++r_.device_op_count[d];
    int64_t bytes = g_.temporary_bytes(op);
    for (int i = 0; i < g_.num_outputs(op); ++i) {
      bytes += g_.tensor_bytes(g_.output(op, i));
    }
    Allocate(d, bytes);
    Push(now + time, op, EventType::kOpDone);
    if (options_.record_timeline) {
      r_.timeline.push_back({TimelineEvent::Kind::kCompute, op,
                             slot - s_.slot_begin[d], d, now, now + time});
    }
  }

  void FinishOp(OpId op, double now) {
    const DeviceId d = device_[op];
    ++finished_;
    r_.step_time = std::max(r_.step_time, now);
    Free(d, g_.temporary_bytes(op));
    s_.slot_busy[s_.slot_of_op[op]] = 0;

    // Inputs: this op no longer holds them.
    for (EdgeId e : g_.in_edges(op)) {
      if (g_.is_control(e)) continue;
      const int32_t tr = s_.edge_transfer[e];
      if (tr < 0) {
        ReleaseSource(g_.edge_tensor(e));
      } else if (--s_.transfers[tr].consumer_refs == 0) {
        Free(d, g_.tensor_bytes(s_.transfers[tr].tensor));
      }
    }

    // Outputs: wake local consumers, send once per remote device.
    s_.sends.clear();
    s_.sends_transfer.clear();
    for (EdgeId e : g_.out_edges(op)) {
      const OpId dst = g_.edge_dst(e);
      const DeviceId dst_device = device_[dst];
      if (dst_device == d) {
        Satisfy(dst);
      } else if (g_.is_control(e)) {
        Push(now + cost_.RouteLatency(d, dst_device), e,
             EventType::kControlArrival);
      } else {
        s_.edge_transfer[e] = SendOnce(g_.edge_tensor(e), d, dst_device, now);
        ++s_.transfers[s_.edge_transfer[e]].consumer_refs;
      }
    }
    for (int i = 0; i < g_.num_outputs(op); ++i) {
      const TensorId t = g_.output(op, i);
      if (s_.tensor_refs[t] == 0) Free(d, g_.tensor_bytes(t));
    }
    StartReady(d, now);
  }

  // The transfer of `t` to `to`, started on the first request.
  int32_t SendOnce(TensorId t, DeviceId from, DeviceId to, double now) {
    const std::pair<TensorId, DeviceId> key{t, to};
    for (size_t i = 0; i < s_.sends.size(); ++i) {
      if (s_.sends[i] == key) return s_.sends_transfer[i];
    }
    const int32_t tr = static_cast<int32_t>(s_.transfers.size());
    s_.transfers.push_back(
        {t, from, to, 0, static_cast<int16_t>(c_.route(from, to).size()), 0});
    s_.sends.push_back(key);
    s_.sends_transfer.push_back(tr);
    ++s_.tensor_refs[t];  // The first hop reads the source copy.
    EnqueueHop(tr, now);
    return tr;
  }

  LinkId CurrentLink(const Transfer& tr) const {
    return c_.route(tr.source, tr.destination)[tr.hop];
  }

  void EnqueueHop(int32_t tr, double now) {
    const LinkId link = CurrentLink(s_.transfers[tr]);
    if (s_.link_busy[link]) {
      s_.link_queues[link].Push(tr);
    } else {
      BeginHop(tr, link, now);
    }
  }

  void BeginHop(int32_t index, LinkId link, double now) {
    const Transfer& tr = s_.transfers[index];
    const int64_t bytes = g_.tensor_bytes(tr.tensor);
    const double time = cost_.LinkTime(bytes, link);
    s_.link_busy[link] = 1;
    s_.link_seconds[link] += time;
    r_.link_bytes[link] += bytes;
    if (tr.hop + 1 == tr.num_hops) Allocate(tr.destination, bytes);
    Push(now + time, index, EventType::kHopDone);
    if (options_.record_timeline) {
      r_.timeline.push_back({TimelineEvent::Kind::kTransfer, tr.tensor, link,
                             c_.link(link).from, now, now + time});
    }
  }

  void FinishHop(int32_t index, double now) {
    Transfer& tr = s_.transfers[index];
    const LinkId link = CurrentLink(tr);
    s_.link_busy[link] = 0;
    if (!s_.link_queues[link].empty()) {
      BeginHop(s_.link_queues[link].Pop(), link, now);
    }
    if (tr.hop == 0) ReleaseSource(tr.tensor);
    if (++tr.hop < tr.num_hops) {
      EnqueueHop(index, now);
      return;
    }
    // Arrived: every consumer of the tensor on the destination has it.
    const OpId producer = g_.producer(tr.tensor);
    for (EdgeId e : g_.out_edges(producer)) {
      if (g_.edge_tensor(e) == tr.tensor &&
          device_[g_.edge_dst(e)] == tr.destination) {
        Satisfy(g_.edge_dst(e));
      }
    }
    StartReady(tr.destination, now);
  }

  const Graph& g_;
  const Cluster& c_;
  const CostModel& cost_;
  const Placement& device_;
  const SimOptions& options_;
  Scratch& s_;
  SimResult& r_;
  uint64_t seq_ = 0;
  int finished_ = 0;

 public:
  // Placement-dependent bounds; needs the run's link times.
  void ComputeBounds() {
    LowerBounds& b = r_.bounds;
    for (DeviceId d = 0; d < c_.num_devices(); ++d) {
      b.device_load = std::max(
          b.device_load, r_.device_busy_seconds[d] / c_.device(d).compute_slots);
    }
    for (double t : s_.link_seconds) b.link_volume = std::max(b.link_volume, t);
    s_.path_finish.assign(g_.num_ops(), 0.0);
    for (OpId op : g_.topological_order()) {
      double start = 0;
      for (EdgeId e : g_.in_edges(op)) {
        const OpId src = g_.edge_src(e);
        double arrival = s_.path_finish[src];
        if (device_[src] != device_[op]) {
          arrival += g_.is_control(e)
                         ? cost_.RouteLatency(device_[src], device_[op])
                         : cost_.TransferTime(g_.tensor_bytes(g_.edge_tensor(e)),
                                              device_[src], device_[op]);
        }
        start = std::max(start, arrival);
      }
      s_.path_finish[op] = start + cost_.OpTime(op, device_[op]);
      b.placed_critical_path =
          std::max(b.placed_critical_path, s_.path_finish[op]);
    }
  }
};

Simulator::Simulator(const CostModel& cost)
    : cost_(&cost), scratch_(std::make_unique<Scratch>()) {
  const Graph& g = cost.graph();
  std::vector<double> finish(g.num_ops(), 0.0);
  double work = 0;
  for (OpId op : g.topological_order()) {
    double start = 0;
    for (EdgeId e : g.in_edges(op)) {
      start = std::max(start, finish[g.edge_src(e)]);
    }
    finish[op] = start + cost.FastestOpTime(op);
    critical_path_ = std::max(critical_path_, finish[op]);
    work += cost.FastestOpTime(op);
  }
  total_work_ = work / cost.cluster().total_compute_slots();
}

Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;

double Simulator::critical_path_bound() const { return critical_path_; }
double Simulator::total_work_bound() const { return total_work_; }

StatusOr<SimResult> Simulator::Simulate(const Placement& placement,
                                        const SimOptions& options) {
  DPLACE_RETURN_IF_ERROR(
      ValidatePlacement(cost_->graph(), cost_->cluster(), placement));
  SimResult result;
  Run run(*cost_, placement, options, scratch_.get(), &result);
  run.Execute();
  if (run.finished_ops() != cost_->graph().num_ops()) {
    return InternalError("simulation stopped with " +
                         std::to_string(run.finished_ops()) + " of " +
                         std::to_string(cost_->graph().num_ops()) +
                         " ops finished");
  }
  result.bounds.critical_path = critical_path_;
  result.bounds.total_work = total_work_;
  if (options.compute_bounds) run.ComputeBounds();
  return result;
}

}  // namespace dplace
