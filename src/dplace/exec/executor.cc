// The executor (executor.h): a Session runs one step of a placed graph on
// the devices' worker threads (ready queues, copies, memory accounting,
// aborts), and the Executor measures, profiles and times copies with it.
// Over 800 lines, kept as one file: the session's threads and the
// executor's loops over them are one mechanism.
#include "dplace/exec/executor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <torch/cuda.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "dplace/exec/caching_allocator.h"
#include "dplace/exec/kernels.h"
#include "dplace/util/format.h"
#include "dplace/util/median.h"

namespace dplace {
namespace {

using exec_internal::DeclaredSizes;
using exec_internal::Kernel;
using exec_internal::KernelArgs;
using exec_internal::ScalarTypeOf;

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Ops whose outputs live for the whole run, made once: variables and
// constants.
bool IsResident(const std::string& type) {
  return type == "VariableV2" || type == "Variable" || type == "VarHandleOp" ||
         type == "Const" || type == "Constant" || type == "Initializer";
}

bool IsAllocationFailure(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  std::string what = FirstLine(e.what());
  std::transform(what.begin(), what.end(), what.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return what.find("alloc") != std::string::npos ||
         what.find("out of memory") != std::string::npos ||
         what.find("not enough memory") != std::string::npos;
}

// OpenBLAS runs its own threads beside OpenMP's; a device's worker would
// otherwise use every core for a MatMul. Found at run time: the BLAS behind
// libblas.so.3 is Debian's choice.
void SetBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  static auto* set = reinterpret_cast<SetThreads>(
      dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set != nullptr) set(threads);
}

at::Device TorchDevice(const ExecDevice& device) {
  return device.kind == DeviceKind::kCpu
             ? at::Device(at::kCPU)
             : at::Device(at::kCUDA, static_cast<int8_t>(device.index));
}

void SynchronizeIfCuda(const ExecDevice& device) {
  if (device.kind == DeviceKind::kGpu) torch::cuda::synchronize(device.index);
}

// A FIFO of work items served by one thread, which spins before it
// sleeps: waking a sleeping thread costs tens of microseconds, which every
// cross-device edge reaching an idle device would pay. It spins 200 us, or
// as long as `*spin` holds when `spin` is given (a step running on devices
// that each have hardware threads of their own, for a device with ops).
class WorkQueue {
 public:
  explicit WorkQueue(const std::atomic<bool>* spin) : spin_(spin) {}

  void Push(int64_t item, bool front = false) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (front) {
        items_.push_front(item);
      } else {
        items_.push_back(item);
      }
      size_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_one();
  }
  // False once stopped and drained.
  bool Pop(int64_t* item) {
    const auto spin_until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    for (int i = 0; size_.load(std::memory_order_acquire) == 0 && !stop_flag_;
         ++i) {
      if (i % 64 == 0 && !(spin_ && spin_->load(std::memory_order_relaxed)) &&
          std::chrono::steady_clock::now() > spin_until) {
        break;
      }
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_flag_ || !items_.empty(); });
    if (items_.empty()) return false;
    *item = items_.front();
    items_.pop_front();
    size_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_flag_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int64_t> items_;
  std::atomic<int64_t> size_{0};
  std::atomic<bool> stop_flag_{false};
  const std::atomic<bool>* spin_;
};

constexpr int64_t kPetabyte = int64_t{1} << 50;

}  // namespace

// Everything about the graph that does not depend on a placement.
struct Executor::Impl {
  const Graph* graph = nullptr;
  std::vector<ExecDevice> devices;
  ExecOptions options;
  std::vector<Kernel> kernels;                   // Per op; null: stand-in.
  std::vector<std::vector<TensorInfo>> outputs;  // Per op, declared.
  std::vector<std::vector<TensorId>> inputs;     // Per op, data inputs.
  std::vector<char> resident;                    // Per op.
  std::vector<char> stand_in;                    // Per op, decided so far.

  mutable std::mutex stand_in_mu;
  std::map<std::string, StandIn> stand_ins;  // By op type.

  void MarkStandIn(OpId op, const std::string& reason) {
    std::lock_guard<std::mutex> lock(stand_in_mu);
    if (stand_in[op]) return;
    stand_in[op] = 1;
    StandIn& entry = stand_ins[graph->op_type(op)];
    entry.op_type = graph->op_type(op);
    ++entry.count;
    if (entry.reason.empty()) entry.reason = reason;
  }
};

namespace {

// One placement's run: the threads and the state of its steps.
class Session {
 public:
  Session(Executor::Impl& impl, const Placement& placement, bool record_times)
      : impl_(impl),
        graph_(*impl.graph),
        placement_(placement),
        num_devices_(static_cast<int>(impl.devices.size())),
        record_times_(record_times),
        record_timeline_(impl.options.record_timeline) {}

  ~Session() { StopThreads(); }

  // Allocates the resident tensors and optimizer slots; false (with
  // `reason`) when they do not fit.
  bool Setup(std::string* reason);
  // One step; false (with `reason`) when it is infeasible.
  bool RunStep(double* seconds, std::string* reason);

  const std::vector<int64_t>& peak() const { return peak_; }
  // Per device, this step's seconds of ops and copies, each written by the
  // device's thread only, on a cache line of its own.
  struct alignas(64) DeviceWork {
    double ops = 0;
    double copies = 0;
  };
  // Of the last step.
  const std::vector<DeviceWork>& work() const { return work_; }
  // Seconds each op took in each recorded step.
  const std::vector<std::vector<double>>& op_times() const { return op_times_; }
  // With record_timeline: what the devices' threads did in the last step,
  // ordered by device (ExecResult::timeline).
  std::vector<TimelineEvent> TakeTimeline();

 private:
  size_t Slot(TensorId t, int d) const {
    return static_cast<size_t>(t) * num_devices_ + d;
  }
  void StartThreads();
  void StopThreads();
  void DeviceLoop(int d);
  void CopyIn(TensorId t, int d);
  void RunOp(OpId op, int d);
  std::vector<at::Tensor> Compute(OpId op, int d);
  void Store(TensorId t, int d, at::Tensor value);
  void Release(TensorId t, int d);
  void Available(TensorId t, int d);
  void Ready(OpId op);
  void Abort(const std::string& reason);
  void FinishTask();

  Executor::Impl& impl_;
  const Graph& graph_;
  const Placement& placement_;
  const int num_devices_;
  const bool record_times_;
  const bool record_timeline_;

  // Per placement.
  std::vector<int32_t> uses0_;            // Per slot: reads before freeing.
  std::vector<std::vector<int>> remote_;  // Per tensor: devices to copy to.
  std::vector<at::Tensor> resident_;      // Per op output slot 0.
  std::vector<at::Tensor> state_;         // Per op: optimizer slots.
  std::vector<int64_t> persistent_;       // Per device.
  std::vector<int64_t> capacity_;         // Per device; 0: unlimited.

  // Per step.
  std::vector<std::atomic<int32_t>> pending_;  // Per op: edges not yet met.
  std::vector<std::atomic<int32_t>> uses_;     // Per slot.
  std::vector<at::Tensor> slots_;              // Per slot.
  std::vector<std::atomic<int64_t>> live_;     // Per device.
  std::vector<int64_t> peak_;  // Per device; written by its thread only.
  std::vector<double> times_;  // Per op, this step.
  std::vector<std::vector<double>> op_times_;  // Per recorded step.
  double step_start_ = 0;
  std::vector<DeviceWork> work_;  // Per device.
  // Per device, written by its thread only (record_timeline_).
  std::vector<std::vector<TimelineEvent>> events_;
  std::atomic<int> ops_done_{0};
  std::atomic<int64_t> outstanding_{0};  // Tasks queued or running.
  std::atomic<bool> aborted_{false};
  // Idle device threads spin rather than sleep while a step runs, when
  // the CPU devices' threads fit in the machine's (spin_in_steps_).
  bool spin_in_steps_ = false;
  std::atomic<bool> spinning_{false};
  std::mutex mu_;  // Guards reason_ and the wake-ups below.
  std::condition_variable done_cv_;
  std::string reason_;

  std::vector<std::unique_ptr<WorkQueue>> device_queues_;
  std::vector<std::thread> threads_;
};

bool Session::Setup(std::string* reason) {
  const int n = graph_.num_ops();
  const int num_tensors = graph_.num_tensors();
  uses0_.assign(static_cast<size_t>(num_tensors) * num_devices_, 0);
  remote_.assign(num_tensors, {});
  for (EdgeId e = 0; e < graph_.num_edges(); ++e) {
    if (graph_.is_control(e)) continue;
    ++uses0_[Slot(graph_.edge_tensor(e), placement_[graph_.edge_dst(e)])];
  }
  for (TensorId t = 0; t < num_tensors; ++t) {
    const int src = placement_[graph_.producer(t)];
    for (int d = 0; d < num_devices_; ++d) {
      if (d != src && uses0_[Slot(t, d)] > 0) {
        remote_[t].push_back(d);
        ++uses0_[Slot(t, src)];  // The copy reads it.
      }
    }
  }
  capacity_.assign(num_devices_, 0);
  persistent_.assign(num_devices_, 0);
  for (int d = 0; d < num_devices_; ++d) {
    capacity_[d] = impl_.devices[d].memory_bytes;
  }
  for (OpId op = 0; op < n; ++op) {
    persistent_[placement_[op]] += graph_.persistent_bytes(op);
  }
  for (int d = 0; d < num_devices_; ++d) {
    if (capacity_[d] > 0 && persistent_[d] > capacity_[d]) {
      *reason = "out of memory on " + impl_.devices[d].name + ": " +
                std::to_string(persistent_[d]) +
                " persistent bytes (weights, optimizer slots) over its " +
                std::to_string(capacity_[d]);
      return false;
    }
  }
  resident_.assign(n, at::Tensor());
  state_.assign(n, at::Tensor());
  try {
    for (OpId op = 0; op < n; ++op) {
      const ExecDevice& device = impl_.devices[placement_[op]];
      const auto options = at::TensorOptions().device(TorchDevice(device));
      if (impl_.resident[op] && !impl_.outputs[op].empty()) {
        const TensorInfo& info = impl_.outputs[op][0];
        at::Tensor t = at::empty(DeclaredSizes(info),
                                 options.dtype(ScalarTypeOf(info.dtype)));
        if (at::isFloatingType(t.scalar_type())) {
          t.uniform_(-0.05, 0.05);
        } else {
          t.zero_();
        }
        resident_[op] = t;
      } else if (graph_.persistent_bytes(op) > 0) {
        state_[op] = at::zeros({graph_.persistent_bytes(op) / 4},
                               options.dtype(at::kFloat));
      }
    }
  } catch (const std::exception& e) {
    *reason = "allocation failed setting up weights and optimizer slots: " +
              FirstLine(e.what());
    return false;
  }
  pending_ = std::vector<std::atomic<int32_t>>(n);
  uses_ = std::vector<std::atomic<int32_t>>(uses0_.size());
  slots_.assign(uses0_.size(), at::Tensor());
  live_ = std::vector<std::atomic<int64_t>>(num_devices_);
  times_.assign(n, 0);
  events_.assign(num_devices_, {});
  StartThreads();
  return true;
}

void Session::StartThreads() {
  // A device without ops waits without spinning: a spinning thread slows
  // the one beside it when the two share a core.
  std::vector<bool> has_ops(num_devices_, false);
  for (const DeviceId d : placement_) has_ops[d] = true;
  for (int d = 0; d < num_devices_; ++d) {
    device_queues_.push_back(
        std::make_unique<WorkQueue>(has_ops[d] ? &spinning_ : nullptr));
  }
  int min_threads = 1 << 20, cpu_threads = 0;
  for (const ExecDevice& device : impl_.devices) {
    if (device.kind == DeviceKind::kCpu) {
      min_threads = std::min(min_threads, device.threads);
      cpu_threads += device.threads;
    }
  }
  spin_in_steps_ =
      cpu_threads <= static_cast<int>(std::thread::hardware_concurrency());
  if (min_threads < (1 << 20)) SetBlasThreads(min_threads);
  for (int d = 0; d < num_devices_; ++d) {
    threads_.emplace_back([this, d] { DeviceLoop(d); });
  }
}

void Session::StopThreads() {
  for (auto& queue : device_queues_) queue->Stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

bool Session::RunStep(double* seconds, std::string* reason) {
  const int n = graph_.num_ops();
  for (OpId op = 0; op < n; ++op) {
    pending_[op].store(static_cast<int32_t>(graph_.in_edges(op).size()));
  }
  for (size_t s = 0; s < uses0_.size(); ++s) uses_[s].store(uses0_[s]);
  peak_.assign(num_devices_, 0);
  for (int d = 0; d < num_devices_; ++d) {
    live_[d].store(persistent_[d]);
    peak_[d] = persistent_[d];
  }
  ops_done_.store(0);
  aborted_.store(false);
  reason_.clear();

  for (auto& events : events_) events.clear();
  work_.assign(num_devices_, DeviceWork());
  spinning_.store(spin_in_steps_);
  const double start = Now();
  step_start_ = start;
  for (OpId op = 0; op < n; ++op) {
    if (graph_.in_edges(op).size() == 0) Ready(op);
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(impl_.options.step_timeout_seconds));
    const bool finished = done_cv_.wait_until(lock, deadline, [&] {
      return ops_done_.load() == n || aborted_.load();
    });
    if (!finished) {
      aborted_.store(true);
      reason_ = "timeout: the step took more than " +
                std::to_string(impl_.options.step_timeout_seconds) + " s";
    }
    // Running kernels cannot be interrupted: wait for them to end.
    done_cv_.wait(lock, [&] { return outstanding_.load() == 0; });
  }
  *seconds = Now() - start;
  spinning_.store(false);
  if (record_times_ && !aborted_.load()) op_times_.push_back(times_);
  for (at::Tensor& slot : slots_) slot.reset();
  if (aborted_.load()) {
    *reason = reason_;
    return false;
  }
  return true;
}

std::vector<TimelineEvent> Session::TakeTimeline() {
  std::vector<TimelineEvent> timeline;
  for (auto& events : events_) {
    timeline.insert(timeline.end(), events.begin(), events.end());
    events.clear();
  }
  return timeline;
}

void Session::Ready(OpId op) {
  outstanding_.fetch_add(1);
  device_queues_[placement_[op]]->Push(op);
}

void Session::FinishTask() {
  if (outstanding_.fetch_sub(1) == 1) {
    std::lock_guard<std::mutex> lock(mu_);
    done_cv_.notify_all();
  }
}

void Session::Abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_.exchange(true)) reason_ = reason;
  done_cv_.notify_all();
}

// Runs the device's ops and the copies into its memory (items < 0: the
// tensor -item - 1), a thread per device.
void Session::DeviceLoop(int d) {
  const ExecDevice& device = impl_.devices[d];
  if (device.kind == DeviceKind::kCpu) at::set_num_threads(device.threads);
  at::globalContext().setFlushDenormal(true);
  int64_t item;
  while (device_queues_[d]->Pop(&item)) {
    if (!aborted_.load()) {
      if (item >= 0) {
        RunOp(static_cast<OpId>(item), d);
      } else {
        CopyIn(static_cast<TensorId>(-item - 1), d);
      }
    }
    FinishTask();
  }
}

// The consumer's device fetches the tensor from its producer's: a CPU
// copies with its own core, as a memcpy between logical devices costs.
void Session::CopyIn(TensorId t, int d) {
  const int from = placement_[graph_.producer(t)];
  const double start = Now();
  try {
    at::Tensor copy = slots_[Slot(t, from)].to(
        TorchDevice(impl_.devices[d]), /*non_blocking=*/false, /*copy=*/true);
    SynchronizeIfCuda(impl_.devices[d]);
    Store(t, d, std::move(copy));
    const double end = Now();
    work_[d].copies += end - start;
    if (record_timeline_) {
      events_[d].push_back({TimelineEvent::Kind::kTransfer, t, d, from,
                            start - step_start_, end - step_start_});
    }
    Release(t, from);
    Available(t, d);
  } catch (const std::exception& e) {
    Abort("copy of " + graph_.op_name(graph_.producer(t)) + " to " +
          impl_.devices[d].name + " failed: " + FirstLine(e.what()));
  }
}

std::vector<at::Tensor> Session::Compute(OpId op, int d) {
  const ExecDevice& device = impl_.devices[d];
  KernelArgs args;
  args.outputs = &impl_.outputs[op];
  args.options = at::TensorOptions().device(TorchDevice(device));
  args.state = state_[op];
  for (TensorId t : impl_.inputs[op]) args.inputs.push_back(slots_[Slot(t, d)]);
  if (impl_.resident[op]) return {resident_[op]};
  if (!impl_.options.fail_allocation_in_op.empty() &&
      graph_.op_name(op) == impl_.options.fail_allocation_in_op) {
    at::empty({kPetabyte}, args.options.dtype(at::kByte));
  }
  const Kernel kernel = impl_.kernels[op];
  if (kernel != nullptr && !impl_.stand_in[op]) {
    try {
      std::vector<at::Tensor> outs = kernel(args);
      if (outs.size() != args.outputs->size()) {
        throw std::invalid_argument("gave " + std::to_string(outs.size()) +
                                    " outputs, the graph declares " +
                                    std::to_string(args.outputs->size()));
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        const std::vector<int64_t> sizes = DeclaredSizes((*args.outputs)[i]);
        int64_t numel = 1;
        for (int64_t s : sizes) numel *= s;
        if (outs[i].numel() != numel) {
          throw std::invalid_argument("output " + std::to_string(i) + " has " +
                                      std::to_string(outs[i].numel()) +
                                      " elements, the graph " +
                                      DescribeShape((*args.outputs)[i].shape,
                                                    (*args.outputs)[i].dtype));
        }
        outs[i] = outs[i].reshape(sizes);
      }
      return outs;
    } catch (const std::exception& e) {
      if (IsAllocationFailure(e)) throw;
      impl_.MarkStandIn(op, graph_.op_name(op) + ": " + FirstLine(e.what()));
    }
  }
  return exec_internal::StandInKernel(args);
}

void Session::RunOp(OpId op, int d) {
  const double start = Now();
  std::vector<at::Tensor> outs;
  try {
    outs = Compute(op, d);
    SynchronizeIfCuda(impl_.devices[d]);
  } catch (const std::exception& e) {
    Abort((IsAllocationFailure(e) ? "allocation failed on "
                                  : "kernel failed on ") +
          impl_.devices[d].name + " in op " + graph_.op_name(op) + " (" +
          graph_.op_type(op) + "): " + FirstLine(e.what()));
    return;
  }
  if (record_timeline_) {
    events_[d].push_back({TimelineEvent::Kind::kCompute, op, 0, d,
                          start - step_start_, Now() - step_start_});
  }
  const int num_outputs = graph_.num_outputs(op);
  for (int i = 0; i < num_outputs; ++i) {
    const TensorId t = graph_.output(op, i);
    Store(t, d, i < static_cast<int>(outs.size()) ? outs[i] : at::Tensor());
    if (uses0_[Slot(t, d)] == 0) {
      Release(t, d);
      continue;
    }
    for (int to : remote_[t]) {  // Ahead of the ops waiting there.
      outstanding_.fetch_add(1);
      device_queues_[to]->Push(-static_cast<int64_t>(t) - 1, /*front=*/true);
    }
    Available(t, d);
  }
  outs.clear();
  for (EdgeId e : graph_.out_edges(op)) {
    if (graph_.is_control(e) &&
        pending_[graph_.edge_dst(e)].fetch_sub(1) == 1) {
      Ready(graph_.edge_dst(e));
    }
  }
  for (TensorId t : impl_.inputs[op]) Release(t, d);
  const double seconds = Now() - start;  // Its outputs handed on.
  work_[d].ops += seconds;
  if (record_times_) times_[op] = seconds;
  if (ops_done_.fetch_add(1) + 1 == graph_.num_ops()) {
    std::lock_guard<std::mutex> lock(mu_);
    done_cv_.notify_all();
  }
}

void Session::Store(TensorId t, int d, at::Tensor value) {
  slots_[Slot(t, d)] = std::move(value);
  const int64_t live =
      live_[d].fetch_add(graph_.tensor_bytes(t)) + graph_.tensor_bytes(t);
  peak_[d] = std::max(peak_[d], live);  // Only d's thread stores on d.
  if (capacity_[d] > 0 && live > capacity_[d]) {
    Abort("out of memory on " + impl_.devices[d].name + ": " +
          std::to_string(live) + " bytes live over its " +
          std::to_string(capacity_[d]) + " (at " +
          graph_.op_name(graph_.producer(t)) + ")");
  }
}

// One read of the tensor on `d` is done; the last frees it.
void Session::Release(TensorId t, int d) {
  const size_t s = Slot(t, d);
  if (uses_[s].load() > 0 && uses_[s].fetch_sub(1) != 1) return;
  slots_[s].reset();
  live_[d].fetch_sub(graph_.tensor_bytes(t));
}

void Session::Available(TensorId t, int d) {
  for (EdgeId e : graph_.out_edges(graph_.producer(t))) {
    if (graph_.edge_tensor(e) != t) continue;
    const OpId dst = graph_.edge_dst(e);
    if (placement_[dst] == d && pending_[dst].fetch_sub(1) == 1) Ready(dst);
  }
}

}  // namespace

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

StatusOr<std::unique_ptr<Executor>> Executor::Create(
    const Graph& graph, std::vector<ExecDevice> devices,
    const ExecOptions& options) {
  if (devices.empty()) return InvalidArgumentError("executor: no devices");
  std::unordered_set<std::string> names;
  for (const ExecDevice& d : devices) {
    if (!names.insert(d.name).second) {
      return InvalidArgumentError("executor: device \"" + d.name +
                                  "\" is named twice");
    }
    if (d.threads < 1) {
      return InvalidArgumentError("executor: device \"" + d.name +
                                  "\": threads must be >= 1");
    }
  }
  if (options.measured_steps < 1 || options.warmup_steps < 0) {
    return InvalidArgumentError(
        "executor: measured_steps must be >= 1 and warmup_steps >= 0");
  }
  if (!(options.step_timeout_seconds > 0)) {
    return InvalidArgumentError("executor: step_timeout_seconds must be > 0");
  }
  UseCachingCpuAllocator();
  auto impl = std::make_unique<Impl>();
  impl->graph = &graph;
  impl->devices = std::move(devices);
  impl->options = options;
  const int n = graph.num_ops();
  impl->kernels.resize(n);
  impl->outputs.resize(n);
  impl->inputs.resize(n);
  impl->resident.assign(n, 0);
  impl->stand_in.assign(n, 0);
  for (OpId op = 0; op < n; ++op) {
    impl->resident[op] = IsResident(graph.op_type(op));
    impl->kernels[op] = exec_internal::FindKernel(graph.op_type(op));
    for (int i = 0; i < graph.num_outputs(op); ++i) {
      impl->outputs[op].push_back(graph.tensor(graph.output(op, i)));
    }
    for (EdgeId e : graph.in_edges(op)) {
      if (!graph.is_control(e))
        impl->inputs[op].push_back(graph.edge_tensor(e));
    }
  }
  for (OpId op = 0; op < n; ++op) {
    if (impl->kernels[op] == nullptr && !impl->resident[op]) {
      impl->MarkStandIn(op, "no kernel mapping");
    }
  }
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

const std::vector<ExecDevice>& Executor::devices() const {
  return impl_->devices;
}

namespace {

Status CheckPlacement(const Graph& graph, int num_devices,
                      const Placement& placement) {
  if (static_cast<int>(placement.size()) != graph.num_ops()) {
    return InvalidArgumentError(
        "placement has " + std::to_string(placement.size()) +
        " devices, the graph " + std::to_string(graph.num_ops()) + " ops");
  }
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    if (placement[op] < 0 || placement[op] >= num_devices) {
      return InvalidArgumentError(
          "placement: op " + graph.op_name(op) + " on device " +
          std::to_string(placement[op]) + ", but there are " +
          std::to_string(num_devices) + " devices");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ExecResult> Executor::Measure(const Placement& placement) {
  DPLACE_RETURN_IF_ERROR(CheckPlacement(
      *impl_->graph, static_cast<int>(impl_->devices.size()), placement));
  const double start = Now();
  ExecResult result;
  Session session(*impl_, placement, /*record_times=*/false);
  std::string reason;
  bool ok = session.Setup(&reason);
  std::vector<std::vector<TimelineEvent>> timelines;  // Per measured step.
  const int steps = impl_->options.warmup_steps + impl_->options.measured_steps;
  const size_t num_devices = impl_->devices.size();
  result.op_seconds.assign(num_devices, 0);
  result.copy_seconds.assign(num_devices, 0);
  for (int step = 0; ok && step < steps; ++step) {
    double seconds = 0;
    ok = session.RunStep(&seconds, &reason);
    if (ok && step >= impl_->options.warmup_steps) {
      result.step_times.push_back(seconds);
      for (size_t d = 0; d < num_devices; ++d) {
        const auto& work = session.work()[d];
        result.op_seconds[d] += work.ops / impl_->options.measured_steps;
        result.copy_seconds[d] += work.copies / impl_->options.measured_steps;
      }
      if (impl_->options.record_timeline) {
        timelines.push_back(session.TakeTimeline());
      }
    }
  }
  result.feasible = ok;
  result.infeasible_reason = ok ? "" : reason;
  result.step_time = ok ? Median(result.step_times) : 0;
  if (ok && impl_->options.record_timeline) {
    size_t nearest = 0;
    for (size_t s = 1; s < result.step_times.size(); ++s) {
      if (std::abs(result.step_times[s] - result.step_time) <
          std::abs(result.step_times[nearest] - result.step_time)) {
        nearest = s;
      }
    }
    result.timeline = std::move(timelines[nearest]);
    result.timeline_step_time = result.step_times[nearest];
  }
  result.peak_memory_bytes = session.peak();
  result.wall_seconds = Now() - start;
  return result;
}

StatusOr<std::vector<double>> Executor::ProfileOps(int device, int steps,
                                                   double* step_total,
                                                   int window,
                                                   RoundStatistic statistic) {
  const int num_devices = static_cast<int>(impl_->devices.size());
  if (device < 0 || device >= num_devices || steps < 1 || window < 0) {
    return InvalidArgumentError("profile: device " + std::to_string(device) +
                                " of " + std::to_string(num_devices) +
                                ", steps " + std::to_string(steps) +
                                ", window " + std::to_string(window));
  }
  const Placement placement(impl_->graph->num_ops(), device);
  Session session(*impl_, placement, /*record_times=*/true);
  std::string reason;
  bool ok = session.Setup(&reason);
  std::vector<double> step_times;  // After the warm-up.
  for (int step = 0; ok && step < steps + 1; ++step) {
    double seconds = 0;
    ok = session.RunStep(&seconds, &reason);
    if (step > 0) step_times.push_back(seconds);
  }
  if (!ok) {
    return InvalidArgumentError("profile on " + impl_->devices[device].name +
                                ": " + reason);
  }
  const auto& recorded = session.op_times();  // Step 0 is the warm-up.
  std::vector<double> times(impl_->graph->num_ops());
  std::vector<double> samples;
  for (OpId op = 0; op < impl_->graph->num_ops(); ++op) {
    samples.clear();
    for (size_t s = 1; s < recorded.size(); ++s) {
      samples.push_back(recorded[s][op]);
    }
    times[op] = Median(samples);
  }
  // The step's time outside every op (the thread taking the next op off
  // its queue, between ops), in equal shares: the ops then sum to the
  // median step, as the simulator of a one-device placement needs.
  const int num_ops = impl_->graph->num_ops();
  const double step = Median(step_times);
  double inside = 0;
  for (double t : times) inside += t;
  const double share = num_ops > 0 ? std::max(0.0, step - inside) / num_ops : 0;
  for (double& t : times) t += share;
  double total = step;
  if (window > 0 && step > 0) {
    // Other work on the machine only ever adds time: scale every op alike
    // to the least disturbed stretches of steps.
    total = OfRounds(WindowMedians(step_times, window), statistic);
    for (double& t : times) t *= total / step;
  }
  if (step_total != nullptr) *step_total = total;
  return times;
}

StatusOr<double> Executor::TimeCopy(int from, int to, int64_t bytes,
                                    int repeats) {
  const int num_devices = static_cast<int>(impl_->devices.size());
  if (from < 0 || from >= num_devices || to < 0 || to >= num_devices ||
      from == to || bytes < 1 || repeats < 1) {
    return InvalidArgumentError(
        "copy benchmark: needs two distinct devices of the " +
        std::to_string(num_devices) + ", bytes >= 1 and repeats >= 1");
  }
  // `copies` tensors made on `from`, each read on `to`: `to`'s thread
  // copies them one after another, ahead of their readers, as it takes
  // the copies of a step between its ops. Its copy time per copy is what
  // the simulator charges a hop on its destination's compute slot. (The
  // step's time would add the hand-over of the first copy to an idle
  // thread, which a step with work on both devices mostly hides.)
  constexpr int64_t kBytesPerStep = int64_t{128} << 20;
  const int copies =
      static_cast<int>(std::clamp<int64_t>(kBytesPerStep / bytes, 4, 64));
  GraphBuilder builder("copy_benchmark");
  Placement placement;
  for (int i = 0; i < copies; ++i) {
    OpSpec source;
    source.name = "source_" + std::to_string(i);
    source.type = "VariableV2";
    source.outputs.push_back({{bytes}, DataType::kInt8, 0});
    OpSpec reader;
    reader.name = "reader_" + std::to_string(i);
    reader.type = "Identity";
    reader.outputs.push_back({{bytes}, DataType::kInt8, 0});
    const OpId src = builder.AddOp(source);
    builder.AddEdge(src, 0, builder.AddOp(reader));
    placement.push_back(from);
    placement.push_back(to);
  }
  DPLACE_ASSIGN_OR_RETURN(Graph graph, std::move(builder).Build());
  ExecOptions options;
  options.warmup_steps = 1;
  options.measured_steps = 1;
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                          Create(graph, impl_->devices, options));
  std::vector<double> per_copy;
  for (int r = 0; r < repeats; ++r) {
    DPLACE_ASSIGN_OR_RETURN(ExecResult result, executor->Measure(placement));
    if (!result.feasible) {
      return InvalidArgumentError("copy benchmark of " + std::to_string(bytes) +
                                  " bytes: " + result.infeasible_reason);
    }
    per_copy.push_back(result.copy_seconds[to] / copies);
  }
  return Median(per_copy);
}

std::vector<StandIn> Executor::stand_ins() const {
  std::lock_guard<std::mutex> lock(impl_->stand_in_mu);
  std::vector<StandIn> result;
  for (const auto& [type, entry] : impl_->stand_ins) result.push_back(entry);
  return result;
}

}  // namespace dplace
