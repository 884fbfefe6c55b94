// The environment of real execution: each placement runs training steps on
// this machine's devices (executor.h) and its measured step time is the
// reward. Placements are measured one after another, never at once: real
// devices cannot be shared without disturbing each other's timings.
//
//   StatusOr<std::unique_ptr<Environment>> env =
//       NewMeasuredEnvironment(graph, local_cluster, {});
//   context.environment = env->get();  // As with any Environment.
//   agent->Place(problem, context);
#ifndef DPLACE_EXEC_MEASURED_ENVIRONMENT_H_
#define DPLACE_EXEC_MEASURED_ENVIRONMENT_H_

#include <memory>
#include <vector>

#include "dplace/env/environment.h"
#include "dplace/exec/executor.h"

namespace dplace {

// An Environment whose measurements are real: step_time is the median of
// options.measured_steps timed steps; a placement that runs out of memory
// (accounted against each device's memory_bytes, or a real allocation
// failure) or times out is infeasible with the executor's reason.
// Thread safety: one Evaluate at a time.
class MeasuredEnvironment : public Environment {
 public:
  // REQUIRES: `graph` and `cluster` outlive the environment.
  MeasuredEnvironment(const Graph& graph, const Cluster& cluster,
                      std::unique_ptr<Executor> executor);
  ~MeasuredEnvironment() override;

  Executor& executor() { return *executor_; }

 protected:
  std::vector<Measurement> DoEvaluate(
      const std::vector<Placement>& batch) override;

 private:
  std::unique_ptr<Executor> executor_;
};

// An executor on the real devices the cluster names (ExecDevicesOfCluster:
// "cpu:N", "cuda:N", as `dplace cluster detect` writes them) wrapped in a
// MeasuredEnvironment. Errors: a device name that is no real device, a
// device this machine lacks (cuda:0 without a GPU), bad options.
StatusOr<std::unique_ptr<Environment>> NewMeasuredEnvironment(
    const Graph& graph, const Cluster& cluster, const ExecOptions& options);

}  // namespace dplace

#endif  // DPLACE_EXEC_MEASURED_ENVIRONMENT_H_
