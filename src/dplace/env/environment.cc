#include "dplace/env/environment.h"

#include <chrono>
#include <thread>

#include "dplace/sim/simulator.h"
#include "dplace/util/thread_pool.h"

namespace dplace {

StatusOr<std::vector<Measurement>> Environment::Evaluate(
    const std::vector<Placement>& batch) {
  for (size_t i = 0; i < batch.size(); ++i) {
    // The prefix is built only on error: this runs for every evaluation.
    Status s = ValidatePlacement(*graph_, *cluster_, batch[i]);
    if (!s.ok()) return s.WithPrefix("placement " + std::to_string(i));
  }
  return DoEvaluate(batch);
}

namespace {

class SimulatedEnvironment : public Environment {
 public:
  SimulatedEnvironment(const CostModel& cost, int num_threads,
                       double added_delay_seconds)
      : Environment(cost.graph(), cost.cluster()),
        pool_(num_threads),
        added_delay_seconds_(added_delay_seconds) {
    for (int w = 0; w < pool_.num_threads(); ++w)
      simulators_.emplace_back(cost);
  }

 protected:
  std::vector<Measurement> DoEvaluate(
      const std::vector<Placement>& batch) override {
    std::vector<Measurement> out(batch.size());
    SimOptions options;
    options.compute_bounds = false;
    options.validated = true;  // By Evaluate().
    pool_.ParallelFor(static_cast<int>(batch.size()), [&](int worker, int i) {
      const auto start = std::chrono::steady_clock::now();
      const SimResult r = *simulators_[worker].Simulate(batch[i], options);
      if (added_delay_seconds_ > 0) {
        std::this_thread::sleep_for(
            std::chrono::duration<double>(added_delay_seconds_));
      }
      Measurement& m = out[i];
      m.step_time = r.step_time;
      m.feasible = r.feasible;
      m.infeasible_reason = DescribeInfeasibility(cluster(), r);
      m.peak_memory_bytes = r.device_peak_bytes;
      m.wall_seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    });
    return out;
  }

 private:
  ThreadPool pool_;
  std::vector<Simulator> simulators_;  // One per worker.
  double added_delay_seconds_;
};

}  // namespace

std::unique_ptr<Environment> NewSimulatedEnvironment(
    const CostModel& cost, int num_threads, double added_delay_seconds) {
  return std::make_unique<SimulatedEnvironment>(cost, num_threads,
                                                added_delay_seconds);
}

}  // namespace dplace
