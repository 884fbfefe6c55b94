#include <CLI/CLI.hpp>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/cli/commands/exec_util.h"
#include "dplace/exec/executor.h"
#include "dplace/exec/profile.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/util/format.h"

namespace dplace {

CLI::App* AddClusterDetectCommand(CLI::App* cluster, ExecFlags* flags) {
  CLI::App* detect = cluster->add_subcommand(
      "detect",
      "describe this machine's devices as a cluster (cpu:0..N-1, cuda:K) "
      "from a quick matrix product, a large add and a copy benchmark");
  detect->add_option("--cpu-devices", flags->cpu_devices,
                     "logical CPU devices, sharing the hardware threads "
                     "(default: 2)");
  detect->add_option("--gpu-memory", flags->gpu_memory_gb,
                     "memory of each GPU in GB (10^9 bytes); LibTorch does "
                     "not report it (default: 16 GiB)");
  detect->add_option("-o,--output", flags->output, "cluster JSON to write");
  return detect;
}

int RunClusterDetect(const ExecFlags& flags, std::ostream& out,
                     std::ostream& err) {
  StatusOr<std::vector<OutputLock>> claims =
      ClaimOutputs({{"-o", flags.output}});
  if (!claims.ok()) return Fail(err, claims.status());
  LocalClusterOptions options;
  options.cpu_devices = flags.cpu_devices;
  if (flags.cpu_devices < 1) {
    return Fail(err, InvalidArgumentError(
                         "--cpu-devices: expected an integer >= 1, got " +
                         std::to_string(flags.cpu_devices)));
  }
  if (!(flags.gpu_memory_gb >= 0) || flags.gpu_memory_gb > 1e6) {
    return Fail(err, InvalidArgumentError(
                         "--gpu-memory: expected GB in (0, 1e6], got " +
                         Format("%g", flags.gpu_memory_gb)));
  }
  options.gpu_memory_bytes = static_cast<int64_t>(flags.gpu_memory_gb * 1e9);
  err << "dplace: timing a matrix product, a large add and copies ...\n";
  StatusOr<Cluster> cluster = DetectLocalCluster(options);
  if (!cluster.ok()) return Fail(err, cluster.status());
  out << "cluster " << cluster->name() << " (" << cluster->num_devices()
      << " devices" << (CudaAvailable() ? "" : "; no GPU: LibTorch sees none")
      << ")\n";
  PrintCluster(*cluster, out);
  if (!flags.output.empty()) {
    Status s = WriteTextFile(flags.output, ClusterToJson(*cluster));
    if (!s.ok()) return Fail(err, s);
    out << "cluster: " << flags.output << "\n";
  }
  return kExitOk;
}

}  // namespace dplace
