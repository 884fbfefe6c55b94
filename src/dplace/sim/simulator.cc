// The simulator's event loop (simulator.h). Over 800 lines, kept as one
// file: the loop, its memory accounting and the snapshots incremental runs
// resume from share one state and read as one algorithm. The queues it
// drains are in event_queues.h, the device pairs' routes in route_table.h.
#include "dplace/sim/simulator.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "dplace/sim/event_queues.h"
#include "dplace/sim/path_bound.h"
#include "dplace/sim/queue_bound.h"
#include "dplace/sim/route_table.h"
#include "dplace/sim/work_bound.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

using sim_detail::Event;
using sim_detail::EventQueue;
using sim_detail::EventType;
using sim_detail::Fifo;
using sim_detail::kControlArrival;
using sim_detail::kHopDone;
using sim_detail::kHopHandedOff;
using sim_detail::kOpDone;
using sim_detail::PairRoute;
using sim_detail::RouteTable;

// Snapshot positions per run (incremental runs), and how often later runs
// must reach one for it to be taken (see Scratch::reach).
constexpr int kSnapshotPositions = 16;
constexpr double kWorthSaving = 0.15;

// One tensor on its way to one destination device.
struct Transfer {
  TensorId tensor;
  int32_t route;  // Its first link in RouteTable's links.
  DeviceId destination;
  int16_t hop;  // Index of the current link in the route.
  int16_t num_hops;
  int32_t consumer_refs;  // Consumer edges on the destination not yet done.
  int32_t slot;  // The compute slot making the current hop's copy, or -1.
  // The out arcs to the consumers waiting for it, in arc order: a list
  // through Scratch::next_waiter, -1 for none.
  int32_t first_waiter;
  int32_t last_waiter;
};

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
         FormatBytes(result.device_peak_bytes[d]) + " > capacity " +
         FormatBytes(cluster.device(d).memory_bytes);
}

namespace {

// A device slows by its shared_host_slowdown when the placement also uses
// another device of its host: `scale` is that factor per device (1 or
// 1 + slowdown). Clusters without one (the presets) skip the pass over the
// ops.
void HostScales(const Cluster& c, const Placement& placement,
                std::vector<uint8_t>* used, std::vector<double>* scale) {
  const int num_devices = c.num_devices();
  scale->assign(num_devices, 1.0);
  bool slowdowns = false;
  for (DeviceId d = 0; d < num_devices; ++d) {
    slowdowns = slowdowns || c.device(d).shared_host_slowdown > 0;
  }
  if (!slowdowns) return;
  used->assign(num_devices, 0);
  for (DeviceId d : placement) (*used)[d] = 1;
  for (DeviceId d = 0; d < num_devices; ++d) {
    const Device& dev = c.device(d);
    if (!(*used)[d] || dev.shared_host_slowdown == 0) continue;
    for (DeviceId e = 0; e < num_devices; ++e) {
      if (e != d && (*used)[e] && c.device(e).host == dev.host) {
        (*scale)[d] = 1 + dev.shared_host_slowdown;
        break;
      }
    }
  }
}

}  // namespace

// The graph's adjacency flattened for the event loop: arcs carry their
// tensor inline, so a finishing op touches contiguous memory only.
struct Simulator::Topology {
  struct Arc {
    OpId op;          // Consumer (out arcs) or producer (in arcs).
    TensorId tensor;  // kControlEdge for a control edge.
    int32_t in_arc;   // Out arcs: index of the same edge among in arcs.
  };
  std::vector<int32_t> out_begin, in_begin;  // num_ops + 1 each.
  std::vector<Arc> out_arcs, in_arcs;
  std::vector<int32_t> output_begin;  // num_ops + 1: tensors of each op.
  std::vector<int64_t> tensor_bytes;
  std::vector<OpId> producer;
  std::vector<int64_t> start_bytes;  // Outputs plus scratch, at op start.
  std::vector<int64_t> temporary_bytes;
  std::vector<int64_t> persistent_bytes;
  std::vector<OpId> sources;     // Ops without inputs, in id order.
  std::vector<OpId> persistent;  // Ops with persistent bytes, in id order.

  explicit Topology(const Graph& g) {
    const int n = g.num_ops();
    std::vector<int32_t> in_arc_of_edge(g.num_edges());
    in_begin.push_back(0);
    for (OpId op = 0; op < n; ++op) {
      for (EdgeId e : g.in_edges(op)) {
        in_arc_of_edge[e] = static_cast<int32_t>(in_arcs.size());
        in_arcs.push_back({g.edge_src(e), g.edge_tensor(e), 0});
      }
      in_begin.push_back(static_cast<int32_t>(in_arcs.size()));
    }
    out_begin.push_back(0);
    output_begin.push_back(0);
    for (OpId op = 0; op < n; ++op) {
      for (EdgeId e : g.out_edges(op)) {
        out_arcs.push_back(
            {g.edge_dst(e), g.edge_tensor(e), in_arc_of_edge[e]});
      }
      out_begin.push_back(static_cast<int32_t>(out_arcs.size()));
      int64_t bytes = g.temporary_bytes(op);
      for (int i = 0; i < g.num_outputs(op); ++i) {
        const TensorId t = g.output(op, i);
        tensor_bytes.push_back(g.tensor_bytes(t));
        producer.push_back(op);
        bytes += g.tensor_bytes(t);
      }
      output_begin.push_back(static_cast<int32_t>(tensor_bytes.size()));
      start_bytes.push_back(bytes);
      temporary_bytes.push_back(g.temporary_bytes(op));
      persistent_bytes.push_back(g.persistent_bytes(op));
      if (in_begin[op] == in_begin[op + 1]) sources.push_back(op);
      if (g.persistent_bytes(op) > 0) persistent.push_back(op);
    }
  }
};

struct Simulator::Scratch {
  explicit Scratch(const Cluster& c) : routes(c) {}

  std::vector<double> op_time;       // Per op: time on its device.
  std::vector<double> op_scale;      // Per device: its shared-host factor.
  std::vector<uint8_t> device_used;  // Per device: has ops.
  std::vector<int32_t> pending;      // Per op: inputs not yet there.
  std::vector<int32_t> slot_of_op;   // Per op: compute slot it ran on.
  // Per tensor: holders of the source copy (local consumers and first hops),
  // counted when its producer finishes.
  std::vector<int32_t> tensor_refs;
  std::vector<int32_t> arc_transfer;  // Per in arc: its Transfer, if remote.
  std::vector<int32_t> next_waiter;   // Per out arc (see Transfer).
  std::vector<Transfer> transfers;
  std::vector<Fifo> link_queues;
  std::vector<char> link_busy;
  std::vector<double> link_seconds;
  std::vector<Fifo> ready;          // Per device.
  std::vector<int32_t> slot_begin;  // Per device, into slot_busy.
  std::vector<char> slot_busy;
  std::vector<int64_t> memory;  // Per device, current bytes.
  std::vector<std::pair<TensorId, DeviceId>> sends;  // Of one finishing op.
  std::vector<int32_t> sends_transfer;
  // Per finished op: its finish on the placed critical path (see
  // Run::paths_).
  std::vector<double> path_finish;
  std::vector<double> device_load;  // Per device: op and copy seconds.
  EventQueue heap;

  // Incremental runs (SimOptions::incremental). `base` is the placement of
  // the last incremental run; its snapshots are checkpoints[0, num_checkpoints)
  // in event order, and finish_event[op] is the index of op's kOpDone event.
  bool have_base = false;
  Placement base;
  std::vector<Checkpoint> checkpoints;
  int num_checkpoints = 0;
  int64_t checkpoint_every = 0;  // Events between snapshot positions.
  // Per snapshot position k: a moving average of how often the first event
  // that reads a moved op's device came at or after it (k * every). A
  // snapshot costs a copy of the state; one that later runs rarely reach
  // saves less than that, so positions below kWorthSaving are skipped.
  std::vector<double> reach;
  std::vector<int64_t> finish_event;
  std::vector<OpId> changed;  // Ops placed differently from `base`.

  // Routes of device pairs, kept from run to run (transfers of snapshots
  // refer to their links).
  RouteTable routes;
};

// What changes during the event loop, copied at an event boundary.
struct Simulator::Checkpoint {
  int64_t event = 0;  // Taken before this event was popped.
  uint64_t seq = 0;
  int finished = 0;
  bool paths = false;  // Every op finished so far has its path_finish.
  std::vector<int32_t> pending, slot_of_op, tensor_refs, arc_transfer,
      next_waiter;
  std::vector<Transfer> transfers;
  std::vector<Fifo> link_queues, ready;
  std::vector<char> link_busy, slot_busy;
  std::vector<double> link_seconds;
  std::vector<int64_t> memory;
  EventQueue heap;
  SimResult result;  // So far: step time, busy seconds, memory, bytes.
};

// Copies the event loop's state, the fields a Scratch and a Checkpoint
// share (a device's ready queue and a link's FIFO without their consumed
// items).
template <typename From, typename To>
void CopyLoopState(const From& from, To* to) {
  to->pending = from.pending;
  to->slot_of_op = from.slot_of_op;
  to->tensor_refs = from.tensor_refs;
  to->arc_transfer = from.arc_transfer;
  to->next_waiter = from.next_waiter;
  to->transfers = from.transfers;
  to->link_queues.resize(from.link_queues.size());
  for (size_t i = 0; i < from.link_queues.size(); ++i) {
    to->link_queues[i].CopyFrom(from.link_queues[i]);
  }
  to->ready.resize(from.ready.size());
  for (size_t i = 0; i < from.ready.size(); ++i) {
    to->ready[i].CopyFrom(from.ready[i]);
  }
  to->link_busy = from.link_busy;
  to->slot_busy = from.slot_busy;
  to->link_seconds = from.link_seconds;
  to->memory = from.memory;
  to->heap = from.heap;
}

// One simulation: the event loop over a Scratch.
class Simulator::Run {
 public:
  Run(const CostModel& cost, const Topology& topology,
      const Placement& placement, const SimOptions& options, Scratch* s,
      SimResult* result)
      : c_(cost.cluster()),
        cost_(cost),
        t_(topology),
        device_(placement),
        options_(options),
        s_(*s),
        r_(*result),
        paths_(options.compute_bounds),
        prefix_paths_(paths_),
        num_devices_(c_.num_devices()),
        dense_routes_(s_.routes.dense_routes()),
        dense_links_(s_.routes.dense_links()) {}

  // A full run: from the initial state.
  void Start() {
    Reset();
    for (OpId op : t_.sources) s_.ready[device_[op]].Push(op);
    for (DeviceId d = 0; d < c_.num_devices(); ++d) StartReady(d, 0.0);
  }

  // An incremental run: from snapshot `c` of a run of `s_.base`, taken
  // before any event read the device of an op in `s_.changed`. What depends
  // on those devices is patched: their op times, and the persistent bytes
  // of the devices they left and joined. (The holders of a tensor are
  // counted when its producer finishes, and no producer of a changed op
  // has.) The snapshots up to `c` are patched alike and kept; the later
  // ones are replaced as the run goes. The placed critical path of the ops
  // finished before `c` is the one the run that finished them computed
  // (when `c` says they have one).
  void Resume(int checkpoint) {
    for (int i = 0; i <= checkpoint; ++i) Patch(&s_.checkpoints[i]);
    s_.num_checkpoints = checkpoint + 1;
    const Checkpoint& c = s_.checkpoints[checkpoint];
    CopyLoopState(c, &s_);
    seq_ = c.seq;
    finished_ = c.finished;
    events_ = c.event;
    r_ = c.result;
    r_.reused_events = c.event;
    for (OpId op : s_.changed) {
      s_.op_time[op] = cost_.OpTime(op, device_[op]) * s_.op_scale[device_[op]];
    }
    prefix_paths_ = paths_ && c.paths;
    next_checkpoint_ = c.event + s_.checkpoint_every;
  }

  // Runs the events to the end. `record`: keep snapshots for later
  // incremental runs.
  void Loop(bool record) {
    if (record && events_ == 0) {
      s_.num_checkpoints = 0;
      next_checkpoint_ = 0;
    }
    while (!s_.heap.empty()) {
      if (record && events_ == next_checkpoint_) {
        const size_t k = static_cast<size_t>(events_ / s_.checkpoint_every);
        if (k >= s_.reach.size() || s_.reach[k] >= kWorthSaving) Save();
        next_checkpoint_ += s_.checkpoint_every;
      }
      const Event e = s_.heap.Pop();
      switch (e.type()) {
        case kOpDone:
          if (record) s_.finish_event[e.id()] = events_;
          FinishOp(e.id(), e.time);
          break;
        case kHopDone:
          FinishHop(e.id(), e.time);
          break;
        case kControlArrival:
          Satisfy(e.id());
          StartReady(device_[e.id()], e.time);
          break;
        case kHopHandedOff:
          QueueCopy(e.id(), e.time);
          break;
      }
      ++events_;
    }
    r_.events = events_;
    for (DeviceId d = 0; d < c_.num_devices(); ++d) {
      if (r_.device_peak_bytes[d] > c_.device(d).memory_bytes) {
        r_.feasible = false;
        r_.oom_device = d;
        break;
      }
    }
  }

  int finished_ops() const { return finished_; }

  // After the step only persistent bytes remain; anything else is a leak in
  // the accounting. Returns the first device that breaks this, or -1.
  DeviceId FirstLeakingDevice() const {
    std::vector<int64_t> persistent(c_.num_devices(), 0);
    for (OpId op : t_.persistent) {
      persistent[device_[op]] += t_.persistent_bytes[op];
    }
    for (DeviceId d = 0; d < c_.num_devices(); ++d) {
      if (s_.memory[d] != persistent[d]) return d;
    }
    return -1;
  }

  // Placement-dependent bounds; needs the run's link times (the placed
  // critical path is computed as ops finish).
  void ComputeBounds() {
    LowerBounds& b = r_.bounds;
    // Copies made by a destination load its slots, not a serial channel.
    std::vector<double>& load = s_.device_load;
    load = r_.device_busy_seconds;
    for (LinkId l = 0; l < c_.num_links(); ++l) {
      if (c_.link(l).copier == Copier::kDestination) {
        load[c_.link(l).to] += s_.link_seconds[l];
      } else {
        b.link_volume = std::max(b.link_volume, s_.link_seconds[l]);
      }
    }
    for (DeviceId d = 0; d < c_.num_devices(); ++d) {
      b.device_load =
          std::max(b.device_load, load[d] / c_.device(d).compute_slots);
    }
  }

 private:
  void Save() {
    if (s_.num_checkpoints == static_cast<int>(s_.checkpoints.size())) {
      s_.checkpoints.emplace_back();
    }
    Checkpoint& c = s_.checkpoints[s_.num_checkpoints++];
    c.event = events_;
    c.seq = seq_;
    c.finished = finished_;
    c.paths = prefix_paths_ || finished_ == 0;
    CopyLoopState(s_, &c);
    c.result = r_;
  }

  // Makes snapshot `c` of a run of s_.base one of a run of device_ (see
  // Resume). Before `c`, no changed op and none of their producers has
  // finished, so no holder of their tensors is counted yet, and the
  // persistent bytes are the only memory that moved: peak and current bytes
  // shift by the same amount.
  void Patch(Checkpoint* c) const {
    const Placement& old = s_.base;
    for (OpId op : s_.changed) {
      const int64_t bytes = t_.persistent_bytes[op];
      c->memory[old[op]] -= bytes;
      c->result.device_peak_bytes[old[op]] -= bytes;
      c->memory[device_[op]] += bytes;
      c->result.device_peak_bytes[device_[op]] += bytes;
    }
  }

  void Reset() {
    const int n = static_cast<int>(device_.size());
    const int num_devices = c_.num_devices();
    s_.pending.resize(n);
    for (OpId op = 0; op < n; ++op) {
      s_.pending[op] = t_.in_begin[op + 1] - t_.in_begin[op];
    }
    s_.slot_of_op.resize(n);
    s_.op_time.resize(n);
    s_.path_finish.resize(n);
    HostScales(c_, device_, &s_.device_used, &s_.op_scale);
    s_.tensor_refs.assign(t_.tensor_bytes.size(), 0);
    s_.memory.assign(num_devices, 0);
    for (OpId op = 0; op < n; ++op) {
      const DeviceId d = device_[op];
      s_.op_time[op] = cost_.OpTime(op, d) * s_.op_scale[d];
    }
    for (OpId op : t_.persistent) {
      s_.memory[device_[op]] += t_.persistent_bytes[op];
    }
    s_.arc_transfer.assign(t_.in_arcs.size(), -1);
    s_.next_waiter.resize(t_.out_arcs.size());
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
    s_.heap.clear();

    r_.device_busy_seconds.assign(num_devices, 0.0);
    r_.device_op_count.assign(num_devices, 0);
    r_.device_peak_bytes.assign(num_devices, 0);
    r_.link_bytes.assign(c_.num_links(), 0);
    r_.device_peak_bytes = s_.memory;
  }

  void Push(double time, int32_t id, EventType type) {
    s_.heap.Push({time, seq_++ << 32 | uint64_t{type} << 30 |
                            static_cast<uint32_t>(id)});
  }

  void Allocate(DeviceId d, int64_t bytes) {
    s_.memory[d] += bytes;
    r_.device_peak_bytes[d] = std::max(r_.device_peak_bytes[d], s_.memory[d]);
  }
  void Free(DeviceId d, int64_t bytes) { s_.memory[d] -= bytes; }

  // One more input of `op` is on its device; queue it when it has them all.
  void Satisfy(OpId op) {
    if (--s_.pending[op] == 0) {
      s_.ready[device_[op]].Push(op);
      // Its start reads these.
      __builtin_prefetch(t_.in_begin.data() + op);
      __builtin_prefetch(t_.out_begin.data() + op);
      __builtin_prefetch(s_.op_time.data() + op);
    }
  }

  // A holder of the source copy of `t` let go.
  void ReleaseSource(TensorId t) {
    if (--s_.tensor_refs[t] == 0) {
      Free(device_[t_.producer[t]], t_.tensor_bytes[t]);
    }
  }

  // Most calls find nothing ready: that check is inlined, the loop is not.
  void StartReady(DeviceId d, double now) {
    if (!s_.ready[d].empty()) StartReadyOps(d, now);
  }

  __attribute__((noinline)) void StartReadyOps(DeviceId d, double now) {
    const int32_t end = s_.slot_begin[d + 1];
    Fifo& ready = s_.ready[d];
    for (int32_t slot = s_.slot_begin[d]; slot < end && !ready.empty();
         ++slot) {
      if (s_.slot_busy[slot]) continue;
      const int32_t item = ready.Pop();
      if (item >= 0) {
        StartOp(item, slot, now);
      } else {
        const int32_t tr = -item - 1;
        BeginHop(tr, CurrentLink(s_.transfers[tr]), slot, now);
      }
    }
  }

  void StartOp(OpId op, int32_t slot, double now) {
    const DeviceId d = device_[op];
    const double time = s_.op_time[op];
    // FinishOp reads these; other events come between, so fetch them now.
    // (Addresses, not elements: an op without inputs or outputs points one
    // past the end, which a prefetch may name.)
    __builtin_prefetch(t_.in_arcs.data() + t_.in_begin[op]);
    __builtin_prefetch(t_.out_arcs.data() + t_.out_begin[op]);
    __builtin_prefetch(s_.arc_transfer.data() + t_.in_begin[op]);
    __builtin_prefetch(s_.tensor_refs.data() + t_.output_begin[op]);
    s_.slot_busy[slot] = 1;
    s_.slot_of_op[op] = slot;
    r_.device_busy_seconds[d] += time;
    ++r_.device_op_count[d];
    Allocate(d, t_.start_bytes[op]);
    Push(now + time, op, kOpDone);
    if (options_.record_timeline) {
      r_.timeline.push_back({TimelineEvent::Kind::kCompute, op,
                             slot - s_.slot_begin[d], d, now, now + time});
    }
  }

  void FinishOp(OpId op, double now) {
    const DeviceId d = device_[op];
    ++finished_;
    r_.step_time = std::max(r_.step_time, now);
    Free(d, t_.temporary_bytes[op]);
    s_.slot_busy[s_.slot_of_op[op]] = 0;

    // Inputs: this op no longer holds them.
    double path_start = 0;
    for (int32_t a = t_.in_begin[op]; a < t_.in_begin[op + 1]; ++a) {
      const Topology::Arc& arc = t_.in_arcs[a];
      if (paths_) path_start = std::max(path_start, PathArrival(arc, d));
      const TensorId t = arc.tensor;
      if (t == kControlEdge) continue;
      const int32_t tr = s_.arc_transfer[a];
      if (tr < 0) {
        ReleaseSource(t);
      } else if (--s_.transfers[tr].consumer_refs == 0) {
        Free(d, t_.tensor_bytes[t]);
      }
    }
    if (paths_) {
      const double finish = path_start + s_.op_time[op];
      s_.path_finish[op] = finish;
      r_.bounds.placed_critical_path =
          std::max(r_.bounds.placed_critical_path, finish);
    }

    // Outputs: wake local consumers (they hold the tensor), send once per
    // remote device.
    s_.sends.clear();
    s_.sends_transfer.clear();
    for (int32_t a = t_.out_begin[op]; a < t_.out_begin[op + 1]; ++a) {
      const Topology::Arc& arc = t_.out_arcs[a];
      const DeviceId to = device_[arc.op];
      if (to == d) {
        Satisfy(arc.op);
        if (arc.tensor != kControlEdge) ++s_.tensor_refs[arc.tensor];
      } else if (arc.tensor == kControlEdge) {
        Push(now + RouteOf(d, to).latency, arc.op, kControlArrival);
      } else {
        const int32_t index = SendOnce(arc.tensor, d, to, now);
        s_.arc_transfer[arc.in_arc] = index;
        Transfer& tr = s_.transfers[index];
        ++tr.consumer_refs;
        s_.next_waiter[a] = -1;
        if (tr.last_waiter < 0) {
          tr.first_waiter = a;
        } else {
          s_.next_waiter[tr.last_waiter] = a;
        }
        tr.last_waiter = a;
      }
    }
    for (TensorId t = t_.output_begin[op]; t < t_.output_begin[op + 1]; ++t) {
      if (s_.tensor_refs[t] == 0) Free(d, t_.tensor_bytes[t]);
    }
    StartReady(d, now);
  }

  // When an input along `arc` reaches `d` on the placed critical path: its
  // producer's finish, plus the route's latency and bytes when the producer
  // is elsewhere (transfers uncontended).
  double PathArrival(const Topology::Arc& arc, DeviceId d) const {
    double arrival = s_.path_finish[arc.op];
    const DeviceId from = device_[arc.op];
    if (from != d) {
      const PairRoute& route = RouteOf(from, d);
      arrival += route.latency;
      if (arc.tensor != kControlEdge) {
        arrival += t_.tensor_bytes[arc.tensor] * route.seconds_per_byte;
      }
    }
    return arrival;
  }

  // The transfer of `t` to `to`, started on the first request.
  int32_t SendOnce(TensorId t, DeviceId from, DeviceId to, double now) {
    const std::pair<TensorId, DeviceId> key{t, to};
    for (size_t i = 0; i < s_.sends.size(); ++i) {
      if (s_.sends[i] == key) return s_.sends_transfer[i];
    }
    const int32_t tr = static_cast<int32_t>(s_.transfers.size());
    const PairRoute& route = RouteOf(from, to);
    s_.transfers.push_back({t, route.begin, to, 0,
                            static_cast<int16_t>(route.hops), 0, -1, -1, -1});
    s_.sends.push_back(key);
    s_.sends_transfer.push_back(tr);
    ++s_.tensor_refs[t];  // The first hop reads the source copy.
    EnqueueHop(tr, now);
    return tr;
  }

  // The route from `from` to `to`; the reference lasts until the next call.
  const PairRoute& RouteOf(DeviceId from, DeviceId to) const {
    if (dense_routes_) {
      return dense_routes_[static_cast<size_t>(from) * num_devices_ + to];
    }
    return s_.routes.Get(from, to);
  }

  LinkId CurrentLink(const Transfer& tr) const {
    const int32_t i = tr.route + tr.hop;
    return dense_links_ ? dense_links_[i] : s_.routes.link(i);
  }

  void EnqueueHop(int32_t tr, double now) {
    const LinkId link = CurrentLink(s_.transfers[tr]);
    if (c_.link(link).copier == Copier::kDestination) {
      if (c_.link(link).hand_off > 0) {
        Push(now + c_.link(link).hand_off, tr, kHopHandedOff);
      } else {
        QueueCopy(tr, now);
      }
    } else if (s_.link_busy[link]) {
      s_.link_queues[link].Push(tr);
    } else {
      BeginHop(tr, link, -1, now);
    }
  }

  // Queues the current hop of transfer `tr`, on a link its destination
  // copies, as the executor does: ahead of the destination's ops.
  void QueueCopy(int32_t tr, double now) {
    const DeviceId to = c_.link(CurrentLink(s_.transfers[tr])).to;
    s_.ready[to].PushFront(-tr - 1);
    StartReady(to, now);
  }

  // Starts the current hop of transfer `index` on its link's channel (slot
  // -1) or on a compute slot of the link's destination.
  void BeginHop(int32_t index, LinkId link, int32_t slot, double now) {
    Transfer& tr = s_.transfers[index];
    // The arrival reads its waiters.
    if (tr.first_waiter >= 0) {
      __builtin_prefetch(t_.out_arcs.data() + tr.first_waiter);
    }
    const int64_t bytes = t_.tensor_bytes[tr.tensor];
    // CostModel::LinkTime, inline.
    const Link& l = c_.link(link);
    const double time = l.latency + static_cast<double>(bytes) / l.bandwidth;
    if (slot >= 0) {
      s_.slot_busy[slot] = 1;
      tr.slot = slot;
    } else {
      s_.link_busy[link] = 1;
    }
    s_.link_seconds[link] += time;
    // A link may carry a tensor once per destination beyond it, so its sum
    // can pass the graph's bounded total: saturate rather than wrap.
    int64_t& moved = r_.link_bytes[link];
    moved = bytes > std::numeric_limits<int64_t>::max() - moved
                ? std::numeric_limits<int64_t>::max()
                : moved + bytes;
    if (tr.hop + 1 == tr.num_hops) Allocate(tr.destination, bytes);
    Push(now + time, index, kHopDone);
    if (options_.record_timeline) {
      r_.timeline.push_back({TimelineEvent::Kind::kTransfer, tr.tensor, link,
                             c_.link(link).from, now, now + time});
    }
  }

  void FinishHop(int32_t index, double now) {
    Transfer& tr = s_.transfers[index];
    const LinkId link = CurrentLink(tr);
    const bool on_slot = tr.slot >= 0;
    if (on_slot) {
      s_.slot_busy[tr.slot] = 0;
      tr.slot = -1;
    } else {
      s_.link_busy[link] = 0;
      if (!s_.link_queues[link].empty()) {
        BeginHop(s_.link_queues[link].Pop(), link, -1, now);
      }
    }
    if (tr.hop == 0) ReleaseSource(tr.tensor);
    if (++tr.hop < tr.num_hops) {
      EnqueueHop(index, now);
      if (on_slot) StartReady(c_.link(link).to, now);
      return;
    }
    // Arrived: every consumer of the tensor on the destination has it.
    for (int32_t a = tr.first_waiter; a >= 0; a = s_.next_waiter[a]) {
      Satisfy(t_.out_arcs[a].op);
    }
    StartReady(tr.destination, now);
  }

  const Cluster& c_;
  const CostModel& cost_;
  const Topology& t_;
  const Placement& device_;
  const SimOptions& options_;
  Scratch& s_;
  SimResult& r_;
  // Compute the placed critical path as ops finish (for the bounds).
  const bool paths_;
  // Every finished op has its path_finish: a full run that computes paths,
  // or one resumed from a snapshot that had them.
  bool prefix_paths_;
  // The route table's, read in the event loop's hottest paths: kept here,
  // where no store in the loop can change them.
  const int num_devices_;
  const PairRoute* const dense_routes_;
  const LinkId* const dense_links_;
  uint64_t seq_ = 0;
  int finished_ = 0;
  int64_t events_ = 0;  // Index of the event being processed.
  int64_t next_checkpoint_ = 0;
};

struct Simulator::ProblemBounds {
  double critical_path = 0;
  double total_work = 0;
  double memory_path = 0;
  double memory_path_whole_groups = 0;
  double queued_path_whole_groups = 0;
  double queued_work_whole_groups = 0;
  // Per op, its colocation group's index; empty where no group has two ops.
  std::vector<int32_t> group_of;
  int num_groups = 0;

  explicit ProblemBounds(const CostModel& cost) {
    const Graph& g = cost.graph();
    std::vector<double> finish(g.num_ops(), 0.0);
    for (OpId op : g.topological_order()) {
      double start = 0;
      for (EdgeId e : g.in_edges(op)) {
        start = std::max(start, finish[g.edge_src(e)]);
      }
      finish[op] = start + cost.FastestOpTime(op);
      critical_path = std::max(critical_path, finish[op]);
    }
    total_work = WorkBound(cost);
    memory_path = MemoryPathBound(cost);
    memory_path_whole_groups = memory_path;
    queued_path_whole_groups = critical_path;
    queued_work_whole_groups = total_work;
    HintGroups groups = ColocationHintGroups(g);
    if (groups.num_groups < g.num_ops()) {
      PathBoundOptions whole;
      whole.whole_groups = true;
      memory_path_whole_groups =
          std::max(memory_path, MemoryPathBound(cost, whole));
      const std::vector<double> heads = GroupQueueHeads(cost, groups.group);
      queued_path_whole_groups = LatestEnd(cost, heads);
      queued_work_whole_groups = std::max(total_work, WorkBound(cost, heads));
      group_of = std::move(groups.group);
      num_groups = groups.num_groups;
    }
  }
};

struct Simulator::LazyBounds {
  std::once_flag once;
  std::unique_ptr<const ProblemBounds> value;
};

Simulator::Simulator(const CostModel& cost)
    : cost_(&cost),
      bounds_(std::make_unique<LazyBounds>()),
      topology_(std::make_unique<Topology>(cost.graph())),
      scratch_(std::make_unique<Scratch>(cost.cluster())) {}

Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;

const Simulator::ProblemBounds& Simulator::problem_bounds() const {
  std::call_once(bounds_->once, [this] {
    bounds_->value = std::make_unique<const ProblemBounds>(*cost_);
  });
  return *bounds_->value;
}

double Simulator::critical_path_bound() const {
  return problem_bounds().critical_path;
}
double Simulator::total_work_bound() const {
  return problem_bounds().total_work;
}
double Simulator::memory_path_bound() const {
  return problem_bounds().memory_path;
}
double Simulator::memory_path_whole_groups_bound() const {
  return problem_bounds().memory_path_whole_groups;
}
double Simulator::queued_path_whole_groups_bound() const {
  return problem_bounds().queued_path_whole_groups;
}
double Simulator::queued_work_whole_groups_bound() const {
  return problem_bounds().queued_work_whole_groups;
}

bool Simulator::KeepsGroupsWhole(const Placement& placement,
                                 const ProblemBounds& bounds) {
  const std::vector<int32_t>& group_of = bounds.group_of;
  group_device_.assign(bounds.num_groups, DeviceId{-1});
  for (size_t op = 0; op < group_of.size(); ++op) {
    DeviceId& d = group_device_[group_of[op]];
    if (d >= 0 && d != placement[op]) return false;
    d = placement[op];
  }
  return true;
}

int Simulator::ResumePoint(const Placement& placement, bool paths) {
  Scratch& s = *scratch_;
  if (!s.have_base) return -1;
  const Topology& t = *topology_;
  const int n = static_cast<int>(placement.size());
  s.changed.clear();
  // The first event that reads a changed op's device: its first producer's
  // completion (or the start, for an op without inputs).
  // The start queues the ops without inputs, before any snapshot.
  int64_t first = std::numeric_limits<int64_t>::max();
  bool source = false;
  for (OpId op = 0; op < n; ++op) {
    if (placement[op] == s.base[op]) continue;
    s.changed.push_back(op);
    if (t.in_begin[op] == t.in_begin[op + 1]) source = true;
    for (int32_t a = t.in_begin[op]; a < t.in_begin[op + 1]; ++a) {
      first = std::min(first, s.finish_event[t.in_arcs[a].op]);
    }
  }
  for (size_t k = 0; k < s.reach.size(); ++k) {
    const bool reached =
        !source && first >= static_cast<int64_t>(k) * s.checkpoint_every;
    s.reach[k] = 0.9 * s.reach[k] + (reached ? 0.1 : 0.0);
  }
  if (source) return -1;
  // Moving ops may change which devices share a host and so every op's time.
  std::vector<uint8_t> used;
  std::vector<double> scale;
  HostScales(cost_->cluster(), placement, &used, &scale);
  if (scale != s.op_scale) return -1;
  // The last snapshot taken no later than `first` (with the placed critical
  // path of its finished ops, when the bounds are asked for).
  int i = s.num_checkpoints - 1;
  while (i >= 0 && (s.checkpoints[i].event > first ||
                    (paths && !s.checkpoints[i].paths))) {
    --i;
  }
  return i;
}

StatusOr<SimResult> Simulator::Simulate(const Placement& placement,
                                        const SimOptions& options) {
  const Graph& graph = cost_->graph();
  if (!options.validated) {
    DPLACE_RETURN_IF_ERROR(
        ValidatePlacement(graph, cost_->cluster(), placement));
  }
  SimResult result;
  Scratch& s = *scratch_;
  const bool incremental = options.incremental && !options.record_timeline;
  Run run(*cost_, *topology_, placement, options, &s, &result);
  const int checkpoint =
      incremental ? ResumePoint(placement, options.compute_bounds) : -1;
  if (checkpoint >= 0) {
    run.Resume(checkpoint);
  } else {
    if (incremental) {
      // Snapshot positions about every 1/16 of the events (ops, hops,
      // arrivals); at first all are taken.
      s.checkpoint_every = std::max<int64_t>(
          8, (graph.num_ops() + graph.num_edges()) / kSnapshotPositions);
      if (s.reach.empty()) s.reach.assign(kSnapshotPositions, 1.0);
      s.finish_event.resize(graph.num_ops());
      s.changed.clear();
    }
    run.Start();
  }
  s.have_base = false;
  run.Loop(incremental);
  if (run.finished_ops() != graph.num_ops()) {
    return InternalError("simulation stopped with " +
                         std::to_string(run.finished_ops()) + " of " +
                         std::to_string(graph.num_ops()) + " ops finished");
  }
  if (const DeviceId d = run.FirstLeakingDevice(); d >= 0) {
    return InternalError("memory accounting of device \"" +
                         cost_->cluster().device(d).name +
                         "\" does not return to its persistent bytes");
  }
  if (incremental) {
    s.base = placement;
    s.have_base = true;
  }
  if (options.compute_bounds) {
    const ProblemBounds& b = problem_bounds();
    result.bounds.critical_path = b.critical_path;
    result.bounds.total_work = b.total_work;
    result.bounds.memory_path = b.memory_path;
    run.ComputeBounds();
    if (!b.group_of.empty() && KeepsGroupsWhole(placement, b)) {
      result.bounds.memory_path_whole_groups = b.memory_path_whole_groups;
      result.bounds.queued_path_whole_groups = b.queued_path_whole_groups;
      result.bounds.queued_work_whole_groups = b.queued_work_whole_groups;
    }
  } else {
    result.bounds.placed_critical_path = 0;
  }
  return result;
}

}  // namespace dplace
