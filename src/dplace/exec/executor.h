// Real execution: one training step of a graph, under a placement, on the
// devices of this machine (LibTorch).
//
// Every op runs a real kernel of its shapes (convolutions and their
// gradients, MatMul, element-wise ops, reductions, pooling, softmax,
// gathers, optimizer updates on parameter-sized tensors, ...) on random
// values: timing is what matters, not the numbers. An op type with no
// kernel mapping, or whose shapes its kernel refuses, runs a stand-in that
// reads its inputs and writes its outputs, and is listed in `stand_ins()`.
// A tensor consumed on another device is copied there once per step, by
// the consumer device's thread ahead of its waiting ops (so a CPU device
// spends its own core on the memcpy; the simulator's link carries it).
//
// Devices are logical: `cpu:N` is a worker thread with its own intra-op
// thread count (so a 2-core machine hosts two real CPU devices), `cuda:N`
// a GPU when the LibTorch in use has CUDA. Memory is accounted per device
// against the capacity given (live op outputs, received copies and
// persistent tensors); going over it, or a real allocation failure, makes
// the step infeasible, never a crash.
//
// This header keeps LibTorch out of its includers.
#ifndef DPLACE_EXEC_EXECUTOR_H_
#define DPLACE_EXEC_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/placement.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/median.h"  // RoundStatistic
#include "dplace/util/status.h"

namespace dplace {

struct ExecDevice {
  std::string name;  // "cpu:0", "cuda:1".
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // N of cpu:N / cuda:N.
  // Intra-op threads of a CPU device's worker. Default: 1.
  int threads = 1;
  // Capacity accounted against; 0 means unlimited. Default: 0.
  int64_t memory_bytes = 0;
};

// Parses one device name ("cpu:0", "cuda:1"). Errors name the device and
// what was expected; a cuda device needs a LibTorch with CUDA and a GPU of
// that index on this machine.
StatusOr<ExecDevice> ParseExecDevice(const std::string& name);
// A comma-separated list ("cpu:0,cpu:1"); names must be distinct.
StatusOr<std::vector<ExecDevice>> ParseExecDevices(const std::string& list);
// True when the LibTorch in use was built with CUDA and sees a GPU.
bool CudaAvailable();
int CudaDeviceCount();

// The real devices behind a cluster: each cluster device's name must name
// one ("cpu:N" or "cuda:N", as `dplace cluster detect` writes them); its
// memory_bytes becomes the capacity. A CPU device gets the hardware threads
// split evenly between the cluster's CPU devices as its intra-op threads
// (what detection gives it): the executor runs one op at a time per
// device, the simulator's single compute slot.
StatusOr<std::vector<ExecDevice>> ExecDevicesOfCluster(const Cluster& cluster);

struct ExecOptions {
  // Steps run and discarded before timing. Default: 1.
  int warmup_steps = 1;
  // Steps timed; the step time is their median. Default: 5.
  int measured_steps = 5;
  // Seconds one step may take before it is abandoned as infeasible
  // ("timeout"). Default: 60.
  double step_timeout_seconds = 60;
  // Test hook: the op of this name allocates a petabyte when it runs, a
  // real allocation failure of the allocator. Default: none.
  std::string fail_allocation_in_op;
  // Keep the timeline of the measured step nearest the median in
  // ExecResult::timeline. Default: off.
  bool record_timeline = false;
};

struct ExecResult {
  bool feasible = true;
  std::string infeasible_reason;   // Empty when feasible.
  double step_time = 0;            // Median of the measured steps, seconds.
  std::vector<double> step_times;  // Every measured step, in order.
  std::vector<int64_t> peak_memory_bytes;  // Per device, accounted.
  // Per device, the mean over the measured steps: seconds its thread spent
  // running ops (each from its start until its outputs are handed on) and
  // copying tensors in. What the simulator's SimResult::device_busy_seconds
  // and its copies to the device are, measured.
  std::vector<double> op_seconds;
  std::vector<double> copy_seconds;
  double wall_seconds = 0;  // Everything the measurement took.
  // With ExecOptions::record_timeline: what each device's thread did in
  // the measured step nearest the median, seconds from the step's start,
  // in the simulator's form except for copies: a kTransfer event has the
  // producer's device as `device` and the consumer's, whose thread copied,
  // as `lane`. Compute events have lane 0.
  std::vector<TimelineEvent> timeline;
  double timeline_step_time = 0;  // The traced step's own time, seconds.
};

// An op type run as a stand-in, and why.
struct StandIn {
  std::string op_type;
  int count = 0;       // Ops of this type run as stand-ins.
  std::string reason;  // "no kernel mapping", or the kernel's error.
};

class Executor {
 public:
  // REQUIRES: `graph` outlives the executor. Errors: no devices, a device
  // named twice.
  static StatusOr<std::unique_ptr<Executor>> Create(
      const Graph& graph, std::vector<ExecDevice> devices,
      const ExecOptions& options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const std::vector<ExecDevice>& devices() const;

  // Runs warm-up and measured steps with op i on devices()[placement[i]].
  // Errors only for a placement of the wrong size or naming a device out of
  // range; out of memory, allocation failures and timeouts are infeasible
  // results.
  StatusOr<ExecResult> Measure(const Placement& placement);

  // Seconds each op takes on `device` (median over `steps` steps with
  // every op there, after one warm-up step) plus an equal share of the
  // median step's time that no op accounts for (taking the next op off the
  // device's queue, between ops), so the ops sum to the median step: what
  // the cost model's profile table holds. With `window` k >= 1 the times
  // are then scaled alike to sum to `statistic` of the medians of
  // consecutive runs of k steps (WindowMedians, OfRounds), which is what
  // `dplace fidelity --statistic S --steps k` measures a placement by.
  // `step_total`, when given, receives what the ops sum to (seconds).
  StatusOr<std::vector<double>> ProfileOps(
      int device, int steps, double* step_total = nullptr, int window = 0,
      RoundStatistic statistic = RoundStatistic::kFastest);

  // Seconds device `to`'s thread spends on each copy of a tensor of
  // `bytes` made on device `from`, in a step where it makes several such
  // copies back to back: the copy and handing it to its readers, what a
  // cross-device edge costs its consumer's device inside a step (the
  // median of `repeats` steps).
  StatusOr<double> TimeCopy(int from, int to, int64_t bytes, int repeats);

  // Op types run as stand-ins so far (sorted by type).
  std::vector<StandIn> stand_ins() const;

  struct Impl;  // The graph's kernels and stand-ins (executor.cc).

 private:
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dplace

#endif  // DPLACE_EXEC_EXECUTOR_H_
