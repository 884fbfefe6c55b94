// The reward source seen by placers and agents: placements in, measurements
// out, a batch at a time so threads, MPI ranks and real devices slot in
// unchanged.
#ifndef DPLACE_ENV_ENVIRONMENT_H_
#define DPLACE_ENV_ENVIRONMENT_H_

#include <memory>
#include <string>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/placement.h"

namespace dplace {

struct Measurement {
  double step_time = 0;  // Seconds per training step.
  bool feasible = true;
  std::string infeasible_reason;           // Empty when feasible.
  std::vector<int64_t> peak_memory_bytes;  // Per device.
  double wall_seconds = 0;  // What this evaluation cost to obtain.
  // Per device, seconds of ops per step (ExecResult::op_seconds): real
  // execution only, empty elsewhere (the simulator, MPI ranks).
  std::vector<double> op_seconds;
  // Every timed step, in order, seconds (ExecResult::step_times, of which
  // step_time is the median): real execution only, empty elsewhere.
  std::vector<double> step_times;
};

// A measurement's timings: its timed steps, or where it has none (the
// simulator, MPI ranks), its step time alone.
inline std::vector<double> StepTimings(const Measurement& m) {
  return m.step_times.empty() ? std::vector<double>{m.step_time} : m.step_times;
}

class Environment {
 public:
  virtual ~Environment() = default;

  const Graph& graph() const { return *graph_; }
  const Cluster& cluster() const { return *cluster_; }

  // One measurement per placement, in order. Errors only for invalid
  // placements (checked here for every implementation).
  StatusOr<std::vector<Measurement>> Evaluate(
      const std::vector<Placement>& batch);

 protected:
  Environment(const Graph& graph, const Cluster& cluster)
      : graph_(&graph), cluster_(&cluster) {}
  // REQUIRES: every placement is valid.
  virtual std::vector<Measurement> DoEvaluate(
      const std::vector<Placement>& batch) = 0;

 private:
  const Graph* graph_;
  const Cluster* cluster_;
};

// Evaluates with the simulator, a batch spread over a thread pool.
// REQUIRES: `cost` (and its graph and cluster) outlive the environment.
// `num_threads` <= 0 means one per hardware thread. Default: 0.
// `added_delay_seconds`: every evaluation also sleeps this long, standing in
// for the cost of a real measurement (benchmarks of the MPI environment).
// Default: 0.
std::unique_ptr<Environment> NewSimulatedEnvironment(
    const CostModel& cost, int num_threads = 0, double added_delay_seconds = 0);

}  // namespace dplace

#endif  // DPLACE_ENV_ENVIRONMENT_H_
