// The event-driven simulator of one training step.
//
// Semantics (DESIGN.md, "Simulator"):
// - Each device is a set of serial compute slots fed by one FIFO of ready
//   ops; an op is ready when all its inputs are on its device.
// - Each directed link is a serial channel with a FIFO of transfers. A tensor
//   needed on another device is sent once per destination device; every
//   consumer there uses that copy. A route of several hops is store and
//   forward: each hop is paid in full. A control edge across devices pays
//   the route's latency and occupies no channel. A link whose copier is its
//   destination has no channel: after the link's hand-off (a wait that
//   holds nothing) the hop joins the front of the destination's ready FIFO
//   and takes a compute slot for its time.
// - Memory per device: persistent bytes for the whole step; an op's outputs
//   from its start until the last local consumer and every outgoing first hop
//   finished; a received copy from the start of its last hop until its last
//   consumer finished; temporary bytes while the op runs. Peak over capacity
//   makes the placement infeasible (the simulation still runs to the end).
// - Deterministic: ties are broken by event order, which depends only on the
//   inputs.
#ifndef DPLACE_SIM_SIMULATOR_H_
#define DPLACE_SIM_SIMULATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/placement.h"

namespace dplace {

// Times the step can never beat. Each is a valid lower bound on the
// simulated step time of any placement (the first two) or of the simulated
// placement (the others).
struct LowerBounds {
  // Longest dependency path with every op on its fastest allowed device and
  // free communication.
  double critical_path = 0;
  // The work over the devices' compute slots, each op on the devices that
  // run it fastest for the balance (WorkBound, work_bound.h): at least
  // every op's fastest time summed over all slots.
  double total_work = 0;
  // Any placement that fits in memory: the longest path with the transfers
  // that memory forces (MemoryPathBound, path_bound.h); infinity when no
  // placement fits. Not in Max(): an out-of-memory placement may beat it.
  double memory_path = 0;
  // This placement keeps every colocation group on one device (as every
  // placer's does), and it fits: the forced-transfer path of such
  // placements (PathBoundOptions::whole_groups), at least memory_path.
  // 0 for a placement that splits a group, and where no group has two ops.
  // Not in Max().
  double memory_path_whole_groups = 0;
  // The same placements: the critical path with the queues that a group's
  // ops ready at once force on a one-slot device (GroupQueuePathBound,
  // queue_bound.h), fitting or not. 0 as above. Not in Max().
  double queued_path_whole_groups = 0;
  // The same placements: the total work in windows (WorkBound, work_bound.h)
  // with each op starting no earlier than its queued path
  // (GroupQueueHeads), at least total_work. 0 as above. Not in Max().
  double queued_work_whole_groups = 0;
  // Any placement that fits: a bound the placing method proved (the MILP's
  // dual bound, set by RunMethod); 0: none. Not in Max().
  double proven = 0;
  // Placement: the most loaded device's op time (and time copying for links
  // it is the copier of) over its slots.
  double device_load = 0;
  // Placement: the busiest channel's transfer time (links copied by their
  // destination count in device_load instead).
  double link_volume = 0;
  // Placement: longest path with ops on their devices and transfers
  // uncontended.
  double placed_critical_path = 0;

  double Max() const;
  const char* MaxName() const;  // Which bound is the largest.
};

struct TimelineEvent {
  enum class Kind : uint8_t { kCompute, kTransfer };
  Kind kind;
  int32_t id;       // OpId (compute) or TensorId (transfer).
  int32_t lane;     // Compute slot (compute) or LinkId (transfer).
  DeviceId device;  // Where it ran; for a transfer, the link's source.
  double start;
  double end;
};

struct SimResult {
  double step_time = 0;  // Seconds until the last op finished.
  bool feasible = true;
  DeviceId oom_device = -1;  // When infeasible: first device over capacity.
  std::vector<double> device_busy_seconds;  // Summed op time per device.
  std::vector<int32_t> device_op_count;
  std::vector<int64_t> device_peak_bytes;
  // Bytes moved over each directed link (saturating at INT64_MAX: a link
  // carries a tensor once per destination beyond it).
  std::vector<int64_t> link_bytes;
  LowerBounds bounds;
  std::vector<TimelineEvent> timeline;  // When SimOptions asks for it.
  // Events of the step's event loop (op completions, hops, arrivals), and
  // how many of them an incremental run took over from the previous run
  // instead of processing them (SimOptions::incremental).
  int64_t events = 0;
  int64_t reused_events = 0;
};

struct SimOptions {
  // Record every compute and transfer interval. Default: false.
  bool record_timeline = false;
  // Compute the lower bounds: the placement's, and the placement-independent
  // ones the simulator computes on first use. Without them, every field of
  // SimResult::bounds is 0. Default: true.
  bool compute_bounds = true;
  // Incremental simulation, for searches whose consecutive placements differ
  // in a few ops (local search). The run keeps snapshots of its event loop;
  // the next incremental run, when its placement differs from this one,
  // resumes from the last snapshot taken before the first event that reads
  // a changed op's device, and simulates only the rest. Results are exactly
  // those of a full simulation. Costs a few copies of the run's state in
  // memory and some time per run (the snapshots). Not with record_timeline.
  // Default: false.
  bool incremental = false;
  // The caller has checked the placement with ValidatePlacement (an
  // Environment does, for every batch): do not check it again. Default:
  // false.
  bool validated = false;
};

// One line saying why a result is infeasible, e.g. "out of memory on gpu:0:
// peak 13.2 GB > capacity 12.0 GB"; empty when feasible.
std::string DescribeInfeasibility(const Cluster& cluster,
                                  const SimResult& result);

// Simulates placements of one graph on one cluster.
// Thread safety: Simulate() reuses scratch buffers, so use one Simulator per
// thread; the CostModel may be shared.
class Simulator {
 public:
  // REQUIRES: `cost` outlives the simulator.
  explicit Simulator(const CostModel& cost);
  ~Simulator();
  Simulator(Simulator&&) noexcept;

  // Errors only for an invalid placement (see ValidatePlacement; with
  // SimOptions::validated, REQUIRES a valid one).
  StatusOr<SimResult> Simulate(const Placement& placement,
                               const SimOptions& options = {});

  // Placement-independent bounds (also in every SimResult that computes
  // bounds). The first call, or the first Simulate() with compute_bounds,
  // computes them all (about 0.2 s for gnmt's 54k ops: simulate_benchmark's
  // BM_ProblemBounds); a simulator that never needs them (a search's
  // workers, a placer's memory repair) never pays for them.
  double critical_path_bound() const;
  double total_work_bound() const;
  double memory_path_bound() const;
  // The forced-transfer path of placements that keep every colocation
  // group whole; memory_path_bound() where no group has two ops.
  double memory_path_whole_groups_bound() const;
  // Their critical path with the queues of ops a tensor makes ready
  // together (GroupQueuePathBound); the critical path where no group has
  // two ops.
  double queued_path_whole_groups_bound() const;
  // Their total work in windows, each op starting no earlier than its
  // queued path; the total work where no group has two ops.
  double queued_work_whole_groups_bound() const;

 private:
  class Run;
  struct Topology;    // Placement-independent arrays for the event loop.
  struct Scratch;     // Per-run state, reused between runs.
  struct Checkpoint;  // A snapshot of a run's state (incremental runs).
  // The snapshot an incremental run of `placement` can resume from, or -1.
  // `paths`: the run computes the bounds, so the snapshot must hold the
  // placed critical path of the ops finished before it.
  int ResumePoint(const Placement& placement, bool paths);
  struct ProblemBounds;  // The placement-independent bounds.
  struct LazyBounds;     // ProblemBounds, computed once, on first use.
  const ProblemBounds& problem_bounds() const;
  // Every colocation group of the graph (bounds.group_of) on one device.
  bool KeepsGroupsWhole(const Placement& placement,
                        const ProblemBounds& bounds);
  const CostModel* cost_;
  std::unique_ptr<LazyBounds> bounds_;
  std::vector<DeviceId> group_device_;  // Per group: KeepsGroupsWhole's.
  std::unique_ptr<const Topology> topology_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace dplace

#endif  // DPLACE_SIM_SIMULATOR_H_
