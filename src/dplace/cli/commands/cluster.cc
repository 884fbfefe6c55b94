#include "dplace/cluster/cluster.h"

#include <CLI/CLI.hpp>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/io/cluster_json.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

int ClusterShow(const std::string& name, bool as_json, std::ostream& out,
                std::ostream& err) {
  StatusOr<Cluster> cluster = LoadCluster(name);
  if (!cluster.ok()) return Fail(err, cluster.status());
  const Cluster& c = *cluster;
  if (as_json) {
    out << ClusterToJson(c);
    return kExitOk;
  }
  out << "cluster " << c.name() << ": " << c.num_devices() << " devices, "
      << c.num_links() << " directed links\n";
  out << PadRight("device", 12) << PadRight("kind", 5) << PadRight("host", 7)
      << PadRight("TFLOP/s", 9) << PadRight("GB/s", 8) << PadRight("memory", 12)
      << PadRight("slots", 6) << "model\n";
  for (const Device& d : c.devices()) {
    out << PadRight(d.name, 12)
        << PadRight(std::string(DeviceKindName(d.kind)), 5)
        << PadRight(d.host, 7)
        << PadRight(Format("%.2f", d.peak_flops / 1e12), 9)
        << PadRight(Format("%.0f", d.memory_bandwidth / 1e9), 8)
        << PadRight(FormatBytesScaled(d.memory_bytes), 12)
        << PadRight(std::to_string(d.compute_slots), 6) << d.model << "\n";
  }
  out << "routes (hops from the first device):\n";
  for (DeviceId d = 1; d < c.num_devices(); ++d) {
    out << "  " << c.device(0).name;
    for (LinkId l : c.route(0, d)) {
      const Link& link = c.link(l);
      out << " -> " << c.device(link.to).name << " ("
          << Format("%.0f GB/s", link.bandwidth / 1e9) << ", "
          << Format("%.0f us", link.latency * 1e6) << ")";
    }
    out << "\n";
  }
  return kExitOk;
}

}  // namespace

CLI::App* AddClusterCommand(CLI::App* parent) {
  auto* cluster = parent->add_subcommand("cluster", "hardware presets");
  cluster->require_subcommand(1);
  return cluster;
}

CLI::App* AddClusterListCommand(CLI::App* cluster) {
  return cluster->add_subcommand("list", "list the presets");
}

CLI::App* AddClusterShowCommand(CLI::App* cluster, ClusterShowFlags* flags) {
  auto* show = cluster->add_subcommand(
      "show", "devices, figures and routes of a preset or cluster JSON file");
  show->add_option("name", flags->name, "preset name or cluster .json file")
      ->required();
  show->add_flag("--json", flags->json, "print the cluster as JSON");
  return show;
}

int RunClusterList(std::ostream& out) {
  for (const std::string& name : ClusterPresetNames()) {
    out << PadRight(name, 10) << " " << ClusterPresetDescription(name) << "\n";
  }
  return kExitOk;
}

int RunClusterShow(const ClusterShowFlags& flags, std::ostream& out,
                   std::ostream& err) {
  return ClusterShow(flags.name, flags.json, out, err);
}

}  // namespace dplace
