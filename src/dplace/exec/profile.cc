#include "dplace/exec/profile.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "dplace/zoo/model_builder.h"

namespace dplace {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// The cost model's default roofline efficiencies: a detected device's
// peaks are the measured rates over them, so the roofline reproduces what
// was measured.
const RooflineOptions& Roofline() {
  static const RooflineOptions options;
  return options;
}

constexpr int kTinyAdds = 7;

// The graph of the speed benchmark: a square matrix product, a large
// element-wise add and a few adds of two scalars, each on constants. The
// scalar adds come first, away from the large tensors' allocation and
// release, and their median is the cost of an op itself.
StatusOr<Graph> SpeedGraph(const LocalClusterOptions& options) {
  ModelBuilder b("device_speed");
  const int64_t n = options.matmul_size;
  const int64_t m = options.add_elements;
  for (int i = 0; i < kTinyAdds; ++i) {
    b.Binary("Add", b.Const("s", {1}), b.Const("t", {1}),
             "tiny_add_" + std::to_string(i));
  }
  b.MatMul(b.Const("a", {n, n}), b.Const("b", {n, n}));
  b.Binary("Add", b.Const("x", {m}), b.Const("y", {m}), "large_add");
  return std::move(b).Build();
}

OpId OpOfType(const Graph& graph, const std::string& type) {
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (graph.op_type(op) == type) return op;
  }
  return -1;
}

}  // namespace

StatusOr<ProfileTable> ProfileGraph(const Graph& graph, Executor& executor,
                                    const ProfileOptions& options) {
  if (options.steps < 1) {
    return InvalidArgumentError("profile: steps must be >= 1, got " +
                                std::to_string(options.steps));
  }
  if (options.window < 0) {
    return InvalidArgumentError("profile: window must be >= 0, got " +
                                std::to_string(options.window));
  }
  ProfileTable table;
  const std::vector<ExecDevice>& devices = executor.devices();
  for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kGpu}) {
    std::vector<double> sum(graph.num_ops(), 0);
    std::vector<int> count(graph.num_ops(), 0);
    for (size_t device = 0; device < devices.size(); ++device) {
      if (devices[device].kind != kind) continue;
      const std::string& name = devices[device].name;
      StatusOr<std::vector<double>> times = executor.ProfileOps(
          static_cast<int>(device), options.steps,
          /*step_total=*/nullptr, options.window, options.statistic);
      if (!times.ok()) return times.status().WithPrefix("profile " + name);
      if (static_cast<int>(times->size()) != graph.num_ops()) {
        return InternalError("profile " + name + ": " +
                             std::to_string(times->size()) + " times for " +
                             std::to_string(graph.num_ops()) + " ops");
      }
      for (OpId op = 0; op < graph.num_ops(); ++op) {
        const double t = (*times)[op];
        if (std::isfinite(t) && t >= 0) {
          sum[op] += t;
          ++count[op];
        }
      }
    }
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      if (count[op] > 0 && graph.allowed_devices(op).Contains(kind)) {
        table.by_name[graph.op_name(op)][kind] = sum[op] / count[op];
      }
    }
  }
  return table;
}

void FitCopyLine(const std::vector<int64_t>& bytes,
                 const std::vector<double>& seconds, double* latency,
                 double* bandwidth) {
  // The cost per byte from the larger half of the sizes (plain least
  // squares: small copies are hand-over noise, and weighting them by their
  // relative error let a copy timed at ~0 dictate the line); the latency
  // is the median of what each of the smaller half took beyond its bytes
  // (beside a large copy's, its noise is larger than the latency).
  std::vector<size_t> order(bytes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return bytes[a] < bytes[b]; });
  const size_t first = order.size() > 2 ? order.size() / 2 : 0;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t k = first; k < order.size(); ++k) {
    const double x = static_cast<double>(bytes[order[k]]);
    const double y = seconds[order[k]];
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double det = n * sxx - sx * sx;
  double slope = det > 0 ? (n * sxy - sx * sy) / det : 0;
  if (det > 0 && (sy - slope * sx) / n < 0) {  // Through the origin.
    slope = sxx > 0 ? sxy / sxx : 0;
  }
  if (!(slope > 0)) {  // No measurable cost per byte: the best rate seen.
    const size_t largest = order.back();
    slope = seconds[largest] / static_cast<double>(bytes[largest]);
  }
  std::vector<double> beyond;
  for (size_t k = 0; k < std::max<size_t>(1, (order.size() + 1) / 2); ++k) {
    beyond.push_back(seconds[order[k]] -
                     slope * static_cast<double>(bytes[order[k]]));
  }
  std::nth_element(beyond.begin(), beyond.begin() + beyond.size() / 2,
                   beyond.end());
  *latency = std::max(0.0, beyond[beyond.size() / 2]);
  *bandwidth = 1 / slope;
}

StatusOr<Graph> ReluChain(int ops) {
  GraphBuilder builder("relu_chain");
  OpId previous = -1;
  for (int i = 0; i < ops; ++i) {
    OpSpec spec;
    spec.name = "relu_" + std::to_string(i);
    spec.type = i == 0 ? "VariableV2" : "Relu";
    spec.outputs.push_back({{1}, DataType::kFloat32, 0});
    const OpId op = builder.AddOp(spec);
    if (previous >= 0) builder.AddEdge(previous, 0, op);
    previous = op;
  }
  return std::move(builder).Build();
}

StatusOr<double> TimeHandOff(const std::vector<ExecDevice>& devices, int a,
                             int b, int ops, int repeats) {
  if (ops < 2 || repeats < 1) {
    return InvalidArgumentError(
        "hand-off benchmark: expected ops >= 2 and repeats >= 1");
  }
  DPLACE_ASSIGN_OR_RETURN(Graph graph, ReluChain(ops));
  ExecOptions options;
  options.measured_steps = repeats;
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                          Executor::Create(graph, devices, options));
  Placement local(ops, a), alternating(ops, a);
  for (int i = 1; i < ops; i += 2) alternating[i] = b;
  DPLACE_ASSIGN_OR_RETURN(ExecResult one, executor->Measure(local));
  DPLACE_ASSIGN_OR_RETURN(ExecResult two, executor->Measure(alternating));
  if (!one.feasible || !two.feasible) {
    return InternalError("hand-off benchmark: " + one.infeasible_reason +
                         two.infeasible_reason);
  }
  const auto fastest = [](const ExecResult& r) {
    return *std::min_element(r.step_times.begin(), r.step_times.end());
  };
  return std::max(0.0, (fastest(two) - fastest(one)) / (ops - 1));
}

StatusOr<std::vector<CopyFit>> BenchmarkCopies(
    Executor& executor, const CopyBenchmarkOptions& options) {
  if (options.bytes.empty() || options.repeats < 1) {
    return InvalidArgumentError(
        "copy benchmark: expected at least one size and repeats >= 1");
  }
  const std::vector<ExecDevice>& devices = executor.devices();
  const int n = static_cast<int>(devices.size());
  std::vector<CopyFit> fits;
  for (int from = 0; from < n; ++from) {
    for (int to = 0; to < n; ++to) {
      if (from == to || (!options.both_directions && to < from)) continue;
      CopyFit fit;
      fit.from = from;
      fit.to = to;
      fit.from_name = devices[from].name;
      fit.to_name = devices[to].name;
      for (int64_t bytes : options.bytes) {
        StatusOr<double> t =
            executor.TimeCopy(from, to, bytes, options.repeats);
        if (!t.ok()) {
          return t.status().WithPrefix("copy " + fit.from_name + " -> " +
                                       fit.to_name);
        }
        fit.bytes.push_back(bytes);
        // A copy too quick for the clock still takes some time.
        fit.seconds.push_back(std::max(*t, 1e-9));
      }
      FitCopyLine(fit.bytes, fit.seconds, &fit.latency, &fit.bandwidth);
      if (options.hand_off_ops > 0) {
        StatusOr<double> edge = TimeHandOff(
            devices, from, to, options.hand_off_ops, options.repeats);
        if (!edge.ok()) {
          return edge.status().WithPrefix("copy " + fit.from_name + " -> " +
                                          fit.to_name);
        }
        // The chain's edge beyond its copy of 4 bytes.
        fit.edge_seconds = *edge;
        fit.hand_off = std::max(0.0, *edge - fit.latency - 4 / fit.bandwidth);
      }
      fits.push_back(std::move(fit));
    }
  }
  return fits;
}

int64_t PhysicalMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream in(line);
    std::string key;
    int64_t kib = 0;
    if (in >> key >> kib && key == "MemTotal:" && kib > 0) return kib * 1024;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) return int64_t{pages} * page_size;
  return 0;
}

void SizeLocalDevices(std::vector<ExecDevice>* devices,
                      const LocalClusterOptions& options) {
  int cpus = 0;
  for (const ExecDevice& d : *devices) cpus += d.kind == DeviceKind::kCpu;
  const int hardware =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  int64_t physical = PhysicalMemoryBytes();
  if (physical <= 0) physical = 4 * kGiB;  // Unknown: a modest guess.
  for (ExecDevice& d : *devices) {
    if (d.kind == DeviceKind::kCpu) {
      d.threads = std::max(1, hardware / std::max(1, cpus));
      d.memory_bytes = std::max<int64_t>(
          1, static_cast<int64_t>(physical * options.memory_fraction) /
                 std::max(1, cpus));
    } else {
      d.threads = 1;
      d.memory_bytes =
          options.gpu_memory_bytes > 0 ? options.gpu_memory_bytes : 16 * kGiB;
    }
  }
}

std::vector<ExecDevice> LocalExecDevices(const LocalClusterOptions& options) {
  std::vector<ExecDevice> devices;
  for (int i = 0; i < std::max(1, options.cpu_devices); ++i) {
    ExecDevice d;
    d.name = "cpu:" + std::to_string(i);
    d.kind = DeviceKind::kCpu;
    d.index = i;
    devices.push_back(d);
  }
  if (options.use_gpus && CudaAvailable()) {
    for (int i = 0; i < CudaDeviceCount(); ++i) {
      ExecDevice d;
      d.name = "cuda:" + std::to_string(i);
      d.kind = DeviceKind::kGpu;
      d.index = i;
      devices.push_back(d);
    }
  }
  SizeLocalDevices(&devices, options);
  return devices;
}

StatusOr<std::vector<DeviceSpeed>> MeasureDeviceSpeeds(
    const std::vector<ExecDevice>& devices,
    const LocalClusterOptions& options) {
  if (options.matmul_size < 1 || options.add_elements < 1 ||
      options.steps < 1) {
    return InvalidArgumentError(
        "device speed: matmul_size, add_elements and steps must be >= 1");
  }
  DPLACE_ASSIGN_OR_RETURN(Graph graph, SpeedGraph(options));
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                          Executor::Create(graph, devices));
  const OpId matmul = OpOfType(graph, "MatMul");
  const OpId large_add = *graph.FindOp("large_add");
  std::vector<DeviceSpeed> speeds;
  for (size_t d = 0; d < devices.size(); ++d) {
    StatusOr<std::vector<double>> times =
        executor->ProfileOps(static_cast<int>(d), options.steps);
    if (!times.ok()) {
      return times.status().WithPrefix("device speed " + devices[d].name);
    }
    const DeviceKind kind = devices[d].kind;
    std::vector<double> tiny_times;
    for (int i = 0; i < kTinyAdds; ++i) {
      tiny_times.push_back(
          (*times)[*graph.FindOp("tiny_add_" + std::to_string(i))]);
    }
    std::nth_element(tiny_times.begin(), tiny_times.begin() + kTinyAdds / 2,
                     tiny_times.end());
    const double tiny = std::max(tiny_times[kTinyAdds / 2], 1e-9);
    // The rates of the work itself, the fixed cost of an op taken off.
    const double mm = std::max((*times)[matmul] - tiny, 1e-9);
    const double add = std::max((*times)[large_add] - tiny, 1e-9);
    DeviceSpeed s;
    s.peak_flops =
        graph.flops(matmul) / mm / Roofline().dense_compute_efficiency[kind];
    s.memory_bandwidth = static_cast<double>(graph.bytes_accessed(large_add)) /
                         add / Roofline().memory_efficiency[kind];
    s.launch_overhead = tiny;
    speeds.push_back(s);
  }
  return speeds;
}

StatusOr<Cluster> MakeLocalCluster(const std::string& name,
                                   const std::vector<ExecDevice>& devices,
                                   const std::vector<DeviceSpeed>& speeds,
                                   const std::vector<CopyFit>& copies) {
  if (devices.size() != speeds.size()) {
    return InvalidArgumentError(
        "local cluster: " + std::to_string(devices.size()) + " devices but " +
        std::to_string(speeds.size()) + " speeds");
  }
  ClusterBuilder builder(name);
  for (size_t i = 0; i < devices.size(); ++i) {
    const ExecDevice& e = devices[i];
    Device d;
    d.name = e.name;
    d.kind = e.kind;
    d.host = "host0";
    d.model = e.kind == DeviceKind::kCpu
                  ? "this machine's CPU, " + std::to_string(e.threads) +
                        (e.threads == 1 ? " thread" : " threads")
                  : "this machine's GPU " + std::to_string(e.index);
    d.peak_flops = speeds[i].peak_flops;
    d.memory_bandwidth = speeds[i].memory_bandwidth;
    d.memory_bytes = e.memory_bytes > 0 ? e.memory_bytes : 16 * kGiB;
    d.launch_overhead = speeds[i].launch_overhead;
    d.compute_slots = 1;  // One op at a time; threads work inside it.
    builder.AddDevice(std::move(d));
  }
  const int n = static_cast<int>(devices.size());
  std::vector<std::vector<bool>> linked(n, std::vector<bool>(n, false));
  for (const CopyFit& fit : copies) {
    if (fit.from < 0 || fit.from >= n || fit.to < 0 || fit.to >= n) {
      return InvalidArgumentError("local cluster: a copy fit names device " +
                                  std::to_string(std::max(fit.from, fit.to)) +
                                  " of " + std::to_string(n));
    }
    linked[fit.from][fit.to] = true;
  }
  for (const CopyFit& fit : copies) {
    // One direction fitted stands for both.
    const bool both = !linked[fit.to][fit.from];
    // The executor's consumer thread makes each copy (Executor::CopyIn).
    builder.AddLink(devices[fit.from].name, devices[fit.to].name, fit.bandwidth,
                    fit.latency, both, Copier::kDestination, fit.hand_off);
    if (both) linked[fit.to][fit.from] = true;
  }
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b && !linked[a][b]) {
        return InvalidArgumentError("local cluster: no copy fit for " +
                                    devices[a].name + " -> " + devices[b].name);
      }
    }
  }
  return std::move(builder).Build();
}

StatusOr<Cluster> DetectLocalCluster(const LocalClusterOptions& options) {
  if (options.cpu_devices < 1) {
    return InvalidArgumentError(
        "cluster detect: expected at least one CPU "
        "device, got " +
        std::to_string(options.cpu_devices));
  }
  const std::vector<ExecDevice> devices = LocalExecDevices(options);
  DPLACE_ASSIGN_OR_RETURN(std::vector<DeviceSpeed> speeds,
                          MeasureDeviceSpeeds(devices, options));
  std::vector<CopyFit> copies;
  if (devices.size() > 1) {
    // Copies need an executor; any graph will do.
    DPLACE_ASSIGN_OR_RETURN(Graph graph, SpeedGraph(options));
    DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                            Executor::Create(graph, devices));
    DPLACE_ASSIGN_OR_RETURN(copies, BenchmarkCopies(*executor, options.copies));
  }
  return MakeLocalCluster(options.name, devices, speeds, copies);
}

}  // namespace dplace
