#include "dplace/exec/measured_environment.h"

#include <chrono>

namespace dplace {

MeasuredEnvironment::MeasuredEnvironment(const Graph& graph,
                                         const Cluster& cluster,
                                         std::unique_ptr<Executor> executor)
    : Environment(graph, cluster), executor_(std::move(executor)) {}

MeasuredEnvironment::~MeasuredEnvironment() = default;

std::vector<Measurement> MeasuredEnvironment::DoEvaluate(
    const std::vector<Placement>& batch) {
  std::vector<Measurement> out;
  out.reserve(batch.size());
  for (const Placement& placement : batch) {
    const auto start = std::chrono::steady_clock::now();
    StatusOr<ExecResult> r = executor_->Measure(placement);
    Measurement m;
    if (r.ok()) {
      m.step_time = r->step_time;
      m.feasible = r->feasible;
      m.infeasible_reason = r->infeasible_reason;
      m.peak_memory_bytes = r->peak_memory_bytes;
      m.wall_seconds = r->wall_seconds;
      m.op_seconds = r->op_seconds;
      m.step_times = r->step_times;
    } else {
      // Evaluate() validated the placement, so the executor has no reason
      // to refuse it; if it does, the placement counts as failed rather
      // than stopping a search.
      m.feasible = false;
      m.infeasible_reason = r.status().message();
      m.peak_memory_bytes.assign(cluster().num_devices(), 0);
      m.wall_seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    }
    out.push_back(std::move(m));
  }
  return out;
}

StatusOr<std::unique_ptr<Environment>> NewMeasuredEnvironment(
    const Graph& graph, const Cluster& cluster, const ExecOptions& options) {
  StatusOr<std::vector<ExecDevice>> devices = ExecDevicesOfCluster(cluster);
  if (!devices.ok()) {
    return devices.status().WithPrefix("cluster " + cluster.name());
  }
  DPLACE_ASSIGN_OR_RETURN(
      std::unique_ptr<Executor> executor,
      Executor::Create(graph, std::move(devices).value(), options));
  return std::unique_ptr<Environment>(
      new MeasuredEnvironment(graph, cluster, std::move(executor)));
}

}  // namespace dplace
