// Profiling this machine for the cost model: measured op times (a
// ProfileTable), copy times between devices fitted to latency + bytes /
// bandwidth, and a cluster description of the local devices that `dplace
// cluster detect` writes and real execution reads back.
//
//   StatusOr<std::unique_ptr<Executor>> exec = Executor::Create(graph, devs);
//   StatusOr<ProfileTable> table = ProfileGraph(graph, **exec, {});
//   StatusOr<std::vector<CopyFit>> links = BenchmarkCopies(**exec, {});
//   StatusOr<Cluster> local = DetectLocalCluster({});
#ifndef DPLACE_EXEC_PROFILE_H_
#define DPLACE_EXEC_PROFILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/exec/executor.h"
#include "dplace/util/median.h"
#include "dplace/util/status.h"

namespace dplace {

struct ProfileOptions {
  // Measured steps per device (after one warm-up); each op's time is its
  // median. Default: 3.
  int steps = 3;
  // 0: a device's ops sum to its median step. k >= 1: they are scaled to
  // sum to `statistic` of its runs of k consecutive steps
  // (Executor::ProfileOps); 1, `statistic` of its steps, is what `dplace
  // fidelity --statistic S` measures (over the steps of all its rounds),
  // so a one-device placement simulates at the time fidelity compares it
  // with. Default: 1.
  int window = 1;
  // Default: the mean of the fastest quarter of the runs.
  RoundStatistic statistic = RoundStatistic::kFastestQuarter;
};

// Every op's measured time on each kind of device the executor has, by op
// name: what CostModel(graph, cluster, table) takes. The cost model keeps
// one time per kind, so each device of the kind is profiled in turn and an
// op's time is the mean of its devices' medians (two logical CPU devices on
// one machine differ by several percent). Ops a kind may not run are left
// out for it. REQUIRES: `executor` runs `graph`.
StatusOr<ProfileTable> ProfileGraph(const Graph& graph, Executor& executor,
                                    const ProfileOptions& options);

// Copy times between two devices and the line fitted through them.
struct CopyFit {
  int from = 0, to = 0;  // Executor device indices.
  std::string from_name, to_name;
  std::vector<int64_t> bytes;   // Sizes timed.
  std::vector<double> seconds;  // Median copy time of each size.
  double latency = 0;           // Seconds, the fit's intercept (>= 0).
  double bandwidth = 0;         // Bytes/s, 1 / the fit's slope.
  // TimeHandOff's seconds per edge, and what of it the copy does not
  // account for (>= 0); 0 without the chain.
  double edge_seconds = 0;
  double hand_off = 0;
};

// Fits seconds = latency + bytes / bandwidth: the bandwidth by least
// squares over the larger half of the sizes (through the origin when the
// intercept comes out negative; a slope <= 0, no measurable cost per byte,
// gives the largest size over its time), the latency as the median of
// what each of the smaller half of the sizes took beyond its bytes /
// bandwidth, at least 0.
// REQUIRES: equal sizes, at least one point.
void FitCopyLine(const std::vector<int64_t>& bytes,
                 const std::vector<double>& seconds, double* latency,
                 double* bandwidth);

struct CopyBenchmarkOptions {
  // Sizes copied. Default: 256 bytes to 64 MiB, powers of 4.
  std::vector<int64_t> bytes = {int64_t{256},      int64_t{1} << 10,
                                int64_t{4} << 10,  int64_t{16} << 10,
                                int64_t{64} << 10, int64_t{256} << 10,
                                int64_t{1} << 20,  int64_t{4} << 20,
                                int64_t{16} << 20, int64_t{64} << 20};
  // Copies per size; the median counts. Default: 5.
  int repeats = 5;
  // Time both directions of each pair (else from the lower index only,
  // the reverse assumed equal). Default: false.
  bool both_directions = false;
  // Ops of the hand-off chain: 1-element Relus alternating between the two
  // devices, timed against the same chain on one device. The difference
  // per edge is what a cross-device edge delays a step when nothing else
  // runs: the copy of 4 bytes and the wait until the consumer's thread has
  // it; beyond the fitted copy, that wait is the link's hand-off. 0: no
  // chain (hand-off 0). Default: 2000.
  int hand_off_ops = 2000;
};

// A chain of `ops` ops on 1-element float tensors: a VariableV2, then
// Relus, each reading the one before. Kernels of about a microsecond, so
// running it times the executor's own cost per op and per edge.
// REQUIRES: ops >= 1.
StatusOr<Graph> ReluChain(int ops);

// Seconds a cross-device edge between devices `a` and `b` adds to a step
// in which it is all that happens: (chain alternating a, b - chain on a) /
// edges, for a chain of `ops` 1-element Relus, each placement measured
// `repeats` steps (the fastest: other work on the machine only slows a
// step). At least 0. REQUIRES: ops >= 2, repeats >= 1.
StatusOr<double> TimeHandOff(const std::vector<ExecDevice>& devices, int a,
                             int b, int ops, int repeats);

// One fit per pair of the executor's devices (from < to, and to > from
// when both_directions): the copy line of Executor::TimeCopy's times (what
// a copy costs its consumer's thread inside a step) and, with
// hand_off_ops, the hand-off of TimeHandOff.
StatusOr<std::vector<CopyFit>> BenchmarkCopies(
    Executor& executor, const CopyBenchmarkOptions& options);

// What a quick benchmark says about one device.
struct DeviceSpeed {
  double peak_flops = 0;        // FLOP/s of a large matrix product.
  double memory_bandwidth = 0;  // Bytes/s of a large element-wise add.
  double launch_overhead = 0;   // Seconds of an op on a few elements.
};

struct LocalClusterOptions {
  // Logical CPU devices cpu:0..N-1, each with hardware threads / N
  // intra-op threads (at least 1). Default: 2.
  int cpu_devices = 2;
  // Add cuda:0..K-1 when LibTorch has CUDA and sees GPUs. Default: true.
  bool use_gpus = true;
  // Share of physical memory split between the CPU devices. Default: 0.75.
  double memory_fraction = 0.75;
  // Capacity of each GPU (the executor's API does not report it); 0 means
  // 16 GiB. Default: 0.
  int64_t gpu_memory_bytes = 0;
  // Side of the square matrices multiplied. Default: 1024.
  int64_t matmul_size = 1024;
  // Elements of the vectors added. Default: 16 Mi.
  int64_t add_elements = int64_t{16} << 20;
  // Timed steps of the speed benchmark. Default: 3.
  int steps = 3;
  // The copy benchmark behind the links. Default: its own defaults.
  CopyBenchmarkOptions copies;
  // The cluster's name. Default: "local".
  std::string name = "local";
};

// The executor devices LocalClusterOptions describes on this machine.
std::vector<ExecDevice> LocalExecDevices(const LocalClusterOptions& options);
// Gives each CPU device hardware threads / (CPU devices) intra-op threads
// and its share of physical memory, each GPU options.gpu_memory_bytes:
// what LocalExecDevices does to the devices it names.
void SizeLocalDevices(std::vector<ExecDevice>* devices,
                      const LocalClusterOptions& options);

// Times a matrix product, a large add and a tiny op on each device.
StatusOr<std::vector<DeviceSpeed>> MeasureDeviceSpeeds(
    const std::vector<ExecDevice>& devices, const LocalClusterOptions& options);

// A cluster of `devices` (names as the executor's, so ExecDevicesOfCluster
// reads it back) with the speeds given and a link per fitted pair
// (bidirectional unless both directions were fitted). Every device has
// one compute slot: the executor runs one op at a time per device (a CPU's
// threads work inside the op). Errors: sizes that disagree, a pair with
// no fit.
StatusOr<Cluster> MakeLocalCluster(const std::string& name,
                                   const std::vector<ExecDevice>& devices,
                                   const std::vector<DeviceSpeed>& speeds,
                                   const std::vector<CopyFit>& copies);

// LocalExecDevices, MeasureDeviceSpeeds, BenchmarkCopies, MakeLocalCluster:
// what `dplace cluster detect` writes. Takes seconds.
StatusOr<Cluster> DetectLocalCluster(const LocalClusterOptions& options);

// Bytes of physical memory (from /proc/meminfo, else sysconf); 0 when
// neither says.
int64_t PhysicalMemoryBytes();

}  // namespace dplace

#endif  // DPLACE_EXEC_PROFILE_H_
