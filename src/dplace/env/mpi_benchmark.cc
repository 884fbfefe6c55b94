// Evaluations per second of the MPI environment against the thread-pool
// (simulated) environment, on the simulator with an added per-evaluation
// delay standing in for a real measurement (docs/performance.md).
//
//   mpi_benchmark --threads 4 --delay-ms 20             # thread pool
//   mpirun -np 5 mpi_benchmark --delay-ms 20            # 4 MPI workers
//
// Under mpirun with more than one rank, rank 0 evaluates batches through
// the MPI environment and every other rank is a worker with a one-thread
// simulated environment and the same delay; otherwise it evaluates through
// a thread pool of --threads. Prints one line: mode, workers, evaluations/s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/env/mpi_environment.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

struct Flags {
  std::string model = "nmt:layers=2";
  std::string cluster = "k80x4";
  int threads = 1;
  double delay_ms = 20;
  int batches = 10;
  int batch = 16;
  bool mpi = false;
};

int Run(const Flags& flags) {
  StatusOr<Graph> graph = MakeZooModel(flags.model);
  StatusOr<Cluster> cluster = MakeClusterPreset(flags.cluster);
  if (!graph.ok() || !cluster.ok()) {
    std::fprintf(
        stderr, "mpi_benchmark: %s\n",
        (!graph.ok() ? graph.status() : cluster.status()).message().c_str());
    return 2;
  }
  const CostModel cost(*graph, *cluster);
  const double delay = flags.delay_ms / 1e3;
  std::unique_ptr<MpiContext> context;
  std::unique_ptr<Environment> env;
  std::string mode = "thread-pool";
  int workers = flags.threads;
  if (flags.mpi) {
    StatusOr<std::unique_ptr<MpiContext>> started = MpiContext::Start({});
    if (!started.ok()) {
      std::fprintf(stderr, "mpi_benchmark: %s\n",
                   started.status().message().c_str());
      return 2;
    }
    context = std::move(started).value();
    if (!context->is_controller()) {
      env = NewSimulatedEnvironment(cost, 1, delay);
      Status s = context->RunWorker(env.get());
      return s.ok() ? 0 : 1;
    }
    env = context->NewEnvironment(*graph, *cluster);
    mode = "mpi";
    workers = context->num_workers();
  } else {
    env = NewSimulatedEnvironment(cost, flags.threads, delay);
  }
  // Every op on one device, for each device that can run them all.
  std::vector<Placement> kinds;
  for (int d = 0; d < cluster->num_devices(); ++d) {
    Placement p(graph->num_ops(), d);
    if (ValidatePlacement(*graph, *cluster, p).ok()) kinds.push_back(p);
  }
  if (kinds.empty()) {
    std::fprintf(stderr, "mpi_benchmark: no single device runs every op\n");
    return 2;
  }
  std::vector<Placement> batch;
  for (int i = 0; i < flags.batch; ++i)
    batch.push_back(kinds[i % kinds.size()]);
  if (!env->Evaluate(batch).ok()) return 1;  // Warm-up.
  const auto start = std::chrono::steady_clock::now();
  for (int b = 0; b < flags.batches; ++b) {
    StatusOr<std::vector<Measurement>> m = env->Evaluate(batch);
    if (!m.ok()) {
      std::fprintf(stderr, "mpi_benchmark: %s\n", m.status().message().c_str());
      return 1;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double evaluations = static_cast<double>(flags.batches) * flags.batch;
  std::printf(
      "%s workers=%d delay_ms=%g evaluations=%.0f seconds=%.3f "
      "evaluations_per_second=%.1f\n",
      mode.c_str(), workers, flags.delay_ms, evaluations, seconds,
      evaluations / seconds);
  return 0;
}

}  // namespace
}  // namespace dplace

int main(int argc, char** argv) {
  dplace::Flags flags;
  // Under mpirun, Open MPI tells each rank the size of its job.
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  flags.mpi = size != nullptr && std::atoi(size) > 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--model") {
      flags.model = value;
    } else if (key == "--cluster") {
      flags.cluster = value;
    } else if (key == "--threads") {
      flags.threads = std::atoi(value);
    } else if (key == "--delay-ms") {
      flags.delay_ms = std::atof(value);
    } else if (key == "--batches") {
      flags.batches = std::atoi(value);
    } else if (key == "--batch") {
      flags.batch = std::atoi(value);
    } else {
      std::fprintf(stderr, "mpi_benchmark: unknown flag %s\n", key.c_str());
      return 2;
    }
  }
  return dplace::Run(flags);
}
