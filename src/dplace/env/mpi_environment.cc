#include "dplace/env/mpi_environment.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <utility>

namespace dplace {
namespace {

// Message tags of the controller-worker protocol (within a group).
constexpr int kEvaluateTag = 1;  // Controller -> worker: id, placement.
constexpr int kResultTag = 2;    // Worker -> controller: id, measurement.
constexpr int kStopTag = 3;      // Controller -> worker: no more work.

// How long an idle rank sleeps between polls: polling without a pause
// would take a core from the workers on an oversubscribed host.
constexpr std::chrono::microseconds kPollPause(100);

using Clock = std::chrono::steady_clock;

// Messages are flat byte buffers of fixed-width fields.
class Writer {
 public:
  template <typename T>
  void Put(const T& value) {
    const char* p = reinterpret_cast<const char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<int64_t>(static_cast<int64_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  const std::vector<char>& bytes() const { return bytes_; }

 private:
  std::vector<char> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <typename T>
  bool Get(T* value) {
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    int64_t n = 0;
    if (!Get(&n) || n < 0 || static_cast<uint64_t>(n) > bytes_.size() - pos_) {
      return false;
    }
    s->assign(bytes_.data() + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  const std::vector<char>& bytes_;
  size_t pos_ = 0;
};

std::vector<char> EncodePlacement(int64_t id, const Placement& placement) {
  Writer w;
  w.Put(id);
  w.Put<int64_t>(static_cast<int64_t>(placement.size()));
  for (DeviceId d : placement) w.Put(d);
  return w.bytes();
}

bool DecodePlacement(const std::vector<char>& bytes, int64_t* id,
                     Placement* placement) {
  Reader r(bytes);
  int64_t n = 0;
  if (!r.Get(id) || !r.Get(&n) || n < 0 ||
      static_cast<uint64_t>(n) > bytes.size() / sizeof(DeviceId)) {
    return false;
  }
  placement->resize(static_cast<size_t>(n));
  for (DeviceId& d : *placement) {
    if (!r.Get(&d)) return false;
  }
  return r.done();
}

std::vector<char> EncodeMeasurement(int64_t id, const Measurement& m) {
  Writer w;
  w.Put(id);
  w.Put(m.step_time);
  w.Put(m.wall_seconds);
  w.Put<uint8_t>(m.feasible ? 1 : 0);
  w.PutString(m.infeasible_reason);
  w.Put<int64_t>(static_cast<int64_t>(m.peak_memory_bytes.size()));
  for (int64_t b : m.peak_memory_bytes) w.Put(b);
  return w.bytes();
}

bool DecodeMeasurement(const std::vector<char>& bytes, int64_t* id,
                       Measurement* m) {
  Reader r(bytes);
  uint8_t feasible = 0;
  int64_t n = 0;
  if (!r.Get(id) || !r.Get(&m->step_time) || !r.Get(&m->wall_seconds) ||
      !r.Get(&feasible) || !r.GetString(&m->infeasible_reason) || !r.Get(&n) ||
      n < 0 || static_cast<uint64_t>(n) > bytes.size() / sizeof(int64_t)) {
    return false;
  }
  m->feasible = feasible != 0;
  m->peak_memory_bytes.resize(static_cast<size_t>(n));
  for (int64_t& b : m->peak_memory_bytes) {
    if (!r.Get(&b)) return false;
  }
  return r.done();
}

// Receives the message `status` announced (from MPI_Iprobe).
std::vector<char> Receive(MPI_Comm comm, const MPI_Status& status) {
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::vector<char> bytes(static_cast<size_t>(count));
  MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG,
           comm, MPI_STATUS_IGNORE);
  return bytes;
}

void Send(MPI_Comm comm, int to, int tag, const std::vector<char>& bytes) {
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag,
           comm);
}

}  // namespace

// A worker of the group, as the controller sees it; index = group rank.
struct WorkerSlot {
  bool busy = false;
  int64_t request = -1;  // Request id of what it evaluates.
  Clock::time_point sent;
  bool timed_out = false;  // Its request was re-issued to another worker.
};

// What a rank knows of the job (MpiContext::State, visible to the
// environment).
struct MpiRankState {
  MpiOptions options;
  int world_rank = 0;
  int world_size = 0;
  int group = 0;
  MPI_Comm group_comm = MPI_COMM_NULL;       // Controller = group rank 0.
  MPI_Comm controller_comm = MPI_COMM_NULL;  // Controllers only.
  int group_size = 0;
  bool stopped = false;
  int64_t next_request = 0;
  std::vector<WorkerSlot> slots;  // Controllers: one per group rank.
  MpiEvaluationStats stats;
};

struct MpiContext::State : MpiRankState {};

namespace {

class MpiEnvironment : public Environment {
 public:
  MpiEnvironment(const Graph& graph, const Cluster& cluster,
                 MpiRankState* state)
      : Environment(graph, cluster), state_(state) {}

 protected:
  std::vector<Measurement> DoEvaluate(
      const std::vector<Placement>& batch) override;

 private:
  MpiRankState* state_;
};

std::vector<Measurement> MpiEnvironment::DoEvaluate(
    const std::vector<Placement>& batch) {
  MpiRankState& s = *state_;
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t base = s.next_request;  // Request id of batch[0].
  s.next_request += n;
  std::vector<Measurement> out(batch.size());
  std::vector<bool> done(batch.size(), false);
  int64_t remaining = n;
  std::deque<int64_t> pending;
  for (int64_t i = 0; i < n; ++i) pending.push_back(i);
  const double timeout = s.options.evaluation_timeout_seconds;

  while (remaining > 0) {
    for (int w = 1; w < s.group_size && !pending.empty(); ++w) {
      WorkerSlot& slot = s.slots[w];
      if (slot.busy) continue;
      while (!pending.empty() && done[pending.front()]) pending.pop_front();
      if (pending.empty()) break;
      const int64_t i = pending.front();
      pending.pop_front();
      Send(s.group_comm, w, kEvaluateTag, EncodePlacement(base + i, batch[i]));
      slot = {true, base + i, Clock::now(), false};
      ++s.stats.issued;
    }
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kResultTag, s.group_comm, &flag, &status);
    if (flag) {
      const std::vector<char> bytes = Receive(s.group_comm, status);
      s.slots[status.MPI_SOURCE].busy = false;
      int64_t id = -1;
      Measurement m;
      // A malformed reply is treated as lost: its request times out.
      if (!DecodeMeasurement(bytes, &id, &m)) continue;
      if (id >= base && id < base + n && !done[id - base]) {
        out[id - base] = std::move(m);
        done[id - base] = true;
        --remaining;
      } else {
        ++s.stats.late_replies;
      }
      continue;
    }
    if (timeout > 0) {
      const Clock::time_point now = Clock::now();
      for (WorkerSlot& slot : s.slots) {
        if (!slot.busy || slot.timed_out ||
            std::chrono::duration<double>(now - slot.sent).count() < timeout) {
          continue;
        }
        slot.timed_out = true;
        const int64_t i = slot.request - base;
        if (i >= 0 && i < n && !done[i]) {
          pending.push_front(i);
          ++s.stats.reissued;
        }
      }
    }
    std::this_thread::sleep_for(kPollPause);
  }
  return out;
}

}  // namespace

MpiContext::MpiContext(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

StatusOr<std::unique_ptr<MpiContext>> MpiContext::Start(
    const MpiOptions& options) {
  if (options.controllers < 1) {
    return InvalidArgumentError("--controllers must be >= 1, not " +
                                std::to_string(options.controllers));
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  auto state = std::make_unique<State>();
  state->options = options;
  MPI_Comm_rank(MPI_COMM_WORLD, &state->world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &state->world_size);
  const int k = options.controllers;
  if (state->world_size < 2 * k) {
    MPI_Finalize();
    return InvalidArgumentError(
        "--env mpi with " + std::to_string(k) + " controller(s) needs at " +
        "least " + std::to_string(2 * k) +
        " ranks, a controller and a worker each (mpirun -np N); this job "
        "has " +
        std::to_string(state->world_size));
  }
  const int r = state->world_rank;
  state->group = r < k ? r : (r - k) % k;
  MPI_Comm_split(MPI_COMM_WORLD, state->group, r, &state->group_comm);
  MPI_Comm_split(MPI_COMM_WORLD, r < k ? 0 : MPI_UNDEFINED, r,
                 &state->controller_comm);
  MPI_Comm_size(state->group_comm, &state->group_size);
  if (r < k) state->slots.resize(state->group_size);
  return std::unique_ptr<MpiContext>(new MpiContext(std::move(state)));
}

MpiContext::~MpiContext() {
  if (is_controller()) StopWorkers();
  if (state_->controller_comm != MPI_COMM_NULL) {
    MPI_Comm_free(&state_->controller_comm);
  }
  MPI_Comm_free(&state_->group_comm);
  MPI_Finalize();
}

int MpiContext::world_rank() const { return state_->world_rank; }
int MpiContext::world_size() const { return state_->world_size; }
bool MpiContext::is_controller() const {
  return state_->world_rank < state_->options.controllers;
}
int MpiContext::controller() const { return state_->group; }
int MpiContext::num_controllers() const { return state_->options.controllers; }
int MpiContext::num_workers() const { return state_->group_size - 1; }
MpiEvaluationStats MpiContext::stats() const { return state_->stats; }

std::unique_ptr<Environment> MpiContext::NewEnvironment(
    const Graph& graph, const Cluster& cluster) {
  return std::make_unique<MpiEnvironment>(graph, cluster, state_.get());
}

void MpiContext::StopWorkers() {
  if (state_->stopped) return;
  state_->stopped = true;
  for (int w = 1; w < state_->group_size; ++w) {
    Send(state_->group_comm, w, kStopTag, {});
  }
}

Status MpiContext::RunWorker(Environment* local) {
  const MpiOptions& options = state_->options;
  const bool slow = options.slow_rank == state_->world_rank;
  const bool exits = options.exit_rank == state_->world_rank;
  for (;;) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(0, MPI_ANY_TAG, state_->group_comm, &flag, &status);
    if (!flag) {
      std::this_thread::sleep_for(kPollPause);
      continue;
    }
    const std::vector<char> bytes = Receive(state_->group_comm, status);
    if (status.MPI_TAG == kStopTag) return Status::Ok();
    int64_t id = -1;
    Placement placement;
    if (status.MPI_TAG != kEvaluateTag ||
        !DecodePlacement(bytes, &id, &placement)) {
      return InternalError(
          "mpi worker rank " + std::to_string(state_->world_rank) +
          ": malformed message (tag " + std::to_string(status.MPI_TAG) + ")");
    }
    if (exits && id >= options.exit_after) std::_Exit(3);
    if (slow) {
      std::this_thread::sleep_for(
          std::chrono::duration<double>(options.slow_seconds));
    }
    StatusOr<std::vector<Measurement>> m = local->Evaluate({placement});
    if (!m.ok()) {
      return m.status().WithPrefix("mpi worker rank " +
                                   std::to_string(state_->world_rank));
    }
    Send(state_->group_comm, 0, kResultTag, EncodeMeasurement(id, (*m)[0]));
  }
}

void MpiContext::Abort(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void MpiContext::AverageOverControllers(std::vector<float>* values) {
  MPI_Allreduce(MPI_IN_PLACE, values->data(), static_cast<int>(values->size()),
                MPI_FLOAT, MPI_SUM, state_->controller_comm);
  const float k = static_cast<float>(num_controllers());
  for (float& v : *values) v /= k;
}

int MpiContext::ShareBest(bool feasible, double step_time,
                          Placement* placement) {
  // Infeasible results rank after every feasible one.
  struct {
    double key;
    int rank;
  } mine{feasible ? step_time : 1e12 + step_time, state_->group}, best{};
  MPI_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MINLOC,
                state_->controller_comm);
  int64_t size = static_cast<int64_t>(placement->size());
  MPI_Bcast(&size, 1, MPI_INT64_T, best.rank, state_->controller_comm);
  placement->resize(static_cast<size_t>(size));
  MPI_Bcast(placement->data(), static_cast<int>(size), MPI_INT32_T, best.rank,
            state_->controller_comm);
  return best.rank;
}

}  // namespace dplace
