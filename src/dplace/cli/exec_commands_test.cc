// Runs the real-execution commands in-process: cluster detect, profile,
// measure, fidelity and place --env measured, on this machine's CPUs, with
// a small model so each takes seconds; and their one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/exec/executor.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/io/placement_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/method/run.h"
#include "dplace/model/load_model.h"
#include "dplace/testing/cli_test_util.h"
#include "dplace/testing/xml_check.h"

namespace dplace {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Small enough that a step takes milliseconds.
const char kModel[] = "zoo:rnnlm:layers=2,batch=4,steps=3,units=32,vocab=100";

class ExecCommandsTest : public CliDirTest {
 protected:
  // A local cluster (cpu:0, cpu:1) and a profile of kModel.
  void Profile() {
    const CliResult r =
        Dplace({"profile", "--model", kModel, "--devices", "cpu:0,cpu:1",
                "--steps", "1", "-o", profile(), "--cluster-out", cluster()});
    ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("copy cpu:0 -> cpu:1: latency "));
    EXPECT_THAT(r.err,
                HasSubstr("ops sum to the mean of its fastest quarter of "
                          "steps) ..."));
    EXPECT_THAT(r.out, HasSubstr("profile: " + profile() + "\n"));
    EXPECT_THAT(r.out, HasSubstr("cluster: " + cluster() + "\n"));
  }
  std::string profile() const { return dir_ + "/profile.json"; }
  std::string cluster() const { return dir_ + "/local.json"; }
};

TEST_F(ExecCommandsTest, ClusterDetectDescribesThisMachinesCpus) {
  const std::string path = dir_ + "/detected.json";
  const CliResult r =
      Dplace({"cluster", "detect", "--cpu-devices", "2", "-o", path});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("cpu:0: "));
  EXPECT_THAT(r.out, HasSubstr("cpu:1 -> cpu:0: "));
  EXPECT_THAT(r.err, HasSubstr("dplace: timing"));  // Progress.
  StatusOr<Cluster> c = LoadCluster(path);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_devices(), CudaAvailable() ? 2 + CudaDeviceCount() : 2);
  EXPECT_EQ(c->device(1).name, "cpu:1");
  EXPECT_GT(c->device(0).peak_flops, 0);
  EXPECT_THAT(BadInput(Dplace({"cluster", "detect", "--cpu-devices", "0"})),
              HasSubstr("--cpu-devices: expected an integer >= 1"));
  EXPECT_THAT(BadInput(Dplace({"cluster", "detect", "--gpu-memory", "-1"})),
              HasSubstr("--gpu-memory: expected GB in (0, 1e6], got -1"));
}

TEST_F(ExecCommandsTest, ProfileMeasureAndFidelityEndToEnd) {
  ASSERT_NO_FATAL_FAILURE(Profile());
  StatusOr<ProfileTable> table = ReadProfileJson(profile());
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_FALSE(table->by_name.empty());

  // A placement found on the local cluster, measured for real.
  const std::string placement = dir_ + "/p.json";
  CliResult r =
      Dplace({"place", "--model", kModel, "--cluster", cluster(), "--profile",
              profile(), "--method", "m-etf", "--out", placement});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  const std::string trace = dir_ + "/trace.json";
  r = Dplace({"measure", "--model", kModel, "--cluster", cluster(),
              "--placement", placement, "--steps", "2", "--trace", trace});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nstep time: "));
  EXPECT_THAT(r.out, HasSubstr("measured steps (s): "));
  EXPECT_THAT(r.out, HasSubstr("per step on cpu:1: ops "));
  EXPECT_THAT(r.out, HasSubstr("traced step, cpu:1: "));
  EXPECT_THAT(r.out, HasSubstr("trace: " + trace + " (open in Perfetto)"));
  // The real step in the simulator's trace layout: every op once.
  StatusOr<std::string> trace_text = ReadTextFile(trace);
  ASSERT_TRUE(trace_text.ok());
  StatusOr<LoadedModel> model = LoadModel(kModel);
  ASSERT_TRUE(model.ok());
  const nlohmann::json events =
      nlohmann::json::parse(*trace_text)["traceEvents"];
  int computed = 0;
  for (const nlohmann::json& e : events) {
    computed += e["ph"] == "X" && e["cat"] != "transfer";
  }
  EXPECT_EQ(computed, model->graph.num_ops());

  const std::string svg = dir_ + "/scatter.svg";
  const std::string md = dir_ + "/fidelity.md";
  const std::string placements = dir_ + "/placements";
  r = Dplace({"fidelity", "--model", kModel, "--cluster", cluster(),
              "--profile", profile(), "--samples", "6", "--steps", "1", "--svg",
              svg, "--markdown", md, "--placements", placements});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("| single cpu:0 | "));
  EXPECT_THAT(r.out, HasSubstr("| m-etf | "));
  EXPECT_THAT(r.out, HasSubstr("MAPE "));
  EXPECT_THAT(r.out, HasSubstr(", Spearman "));
  EXPECT_THAT(r.out, HasSubstr(", Kendall "));
  EXPECT_THAT(r.out, HasSubstr("op time, measured over simulated: x"));
  EXPECT_THAT(r.err, HasSubstr("dplace: measuring 1/"));
  StatusOr<std::string> plot = ReadTextFile(svg);
  ASSERT_TRUE(plot.ok());
  EXPECT_TRUE(testing_xml::CheckXml(*plot).ok());
  StatusOr<std::string> markdown = ReadTextFile(md);
  ASSERT_TRUE(markdown.ok());
  EXPECT_THAT(*markdown, HasSubstr("| placement | simulated (s) |"));
  EXPECT_THAT(*markdown, HasSubstr("| op time, measured / simulated |"));
  EXPECT_THAT(*markdown,
              HasSubstr("\nThe devices' op time, measured over simulated: x"));
  // Each placement, to measure again: every op on cpu:1 in the second.
  EXPECT_THAT(r.out, HasSubstr("files in " + placements));
  StatusOr<Cluster> local = LoadCluster(cluster());
  ASSERT_TRUE(local.ok());
  StatusOr<Placement> single = ReadPlacementJson(
      placements + "/single-cpu-1.json", model->graph, *local);
  ASSERT_TRUE(single.ok()) << single.status().message();
  EXPECT_EQ(std::count(single->begin(), single->end(), 1),
            model->graph.num_ops());

  // Link latencies fitted to real runs, written as a cluster the
  // simulator reads.
  const std::string calibrated = dir_ + "/calibrated.json";
  r = Dplace({"cluster", "calibrate", "--model", kModel, "--cluster", cluster(),
              "--profile", profile(), "--rounds", "2", "--steps", "1", "-o",
              calibrated});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("reference (every op on cpu:0): measured "));
  EXPECT_THAT(r.out, HasSubstr("random per op (seed 2000005): measured "));
  EXPECT_THAT(r.out, HasSubstr("link latencies scaled by "));
  EXPECT_THAT(r.out, HasSubstr("rounds (s), split (cut at 40% of the ops): "));
  EXPECT_THAT(r.out, HasSubstr("ops on a device where a placement also uses "
                               "another of its host's: x"));
  EXPECT_THAT(r.err, HasSubstr("dplace: calibrating, measurement 6/6"));
  StatusOr<Cluster> recalibrated = LoadCluster(calibrated);
  ASSERT_TRUE(recalibrated.ok()) << recalibrated.status().message();
  EXPECT_EQ(recalibrated->num_devices(), local->num_devices());
  EXPECT_EQ(recalibrated->link(0).bandwidth, local->link(0).bandwidth);
  // The same measurements against both clusters.
  r = Dplace({"fidelity", "--model", kModel, "--cluster", cluster(),
              "--profile", profile(), "--samples", "4", "--steps", "1",
              "--rounds", "1", "--compare-cluster", calibrated});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("simulated with cluster " + calibrated +
                               " instead: MAPE "));
  // Links calibrated in the fidelity's own rounds.
  r = Dplace({"fidelity", "--model", kModel, "--cluster", cluster(),
              "--profile", profile(), "--samples", "4", "--steps", "1",
              "--rounds", "2", "--calibrate-links"});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("links calibrated in the same rounds: every "
                               "latency x"));
  EXPECT_THAT(r.out, HasSubstr("simulated with the cluster's own link "
                               "latencies instead: MAPE "));
  EXPECT_THAT(r.err, HasSubstr(": calibration: the reference placement"));
  EXPECT_THAT(BadInput(Dplace({"fidelity", "--model", kModel, "--cluster",
                               cluster(), "--calibrate-links"})),
              HasSubstr("--calibrate-links: needs --profile"));
  EXPECT_THAT(BadInput(Dplace({"fidelity", "--model", kModel, "--cluster",
                               cluster(), "--compare-cluster", "k80x2"})),
              HasSubstr("--compare-cluster: k80x2: expected the devices of "
                        "--cluster"));
  StatusOr<Placement> etf =
      ReadPlacementJson(placements + "/m-etf.json", model->graph, *local);
  EXPECT_TRUE(etf.ok()) << etf.status().message();
}

TEST_F(ExecCommandsTest, PlaceWithTheMeasuredEnvironment) {
  ASSERT_NO_FATAL_FAILURE(Profile());
  CliResult r = Dplace({"place", "--model", kModel, "--cluster", cluster(),
                        "--method", "m-etf", "--env", "measured"});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("measured step time: "));
  // A learned placer searches through real measurements.
  r = Dplace({"place", "--model", kModel, "--cluster", cluster(), "--method",
              "post", "--budget-samples", "4", "--env", "measured"});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("searched 4 samples"));
  EXPECT_THAT(r.out, HasSubstr("measured step time: "));
  // A preset is not this machine.
  EXPECT_THAT(BadInput(Dplace({"place", "--model", kModel, "--cluster", "k80x2",
                               "--method", "m-etf", "--env", "measured"})),
              HasSubstr("dplace cluster detect"));
  EXPECT_THAT(
      BadInput(Dplace({"place", "--model", kModel, "--cluster", cluster(),
                       "--method", "all", "--env", "measured"})),
      HasSubstr("--env measured"));
}

TEST_F(ExecCommandsTest, BadDevicesAndClustersAreOneLineErrors) {
  EXPECT_THAT(BadInput(Dplace({"profile", "--model", kModel, "--devices",
                               "cpu:0,tpu:1", "-o", profile()})),
              HasSubstr("tpu:1"));
  EXPECT_THAT(BadInput(Dplace(
                  {"profile", "--model", kModel, "--devices", "cpu:0,cpu:0"})),
              HasSubstr("cpu:0"));
  if (!CudaAvailable()) {
    EXPECT_THAT(BadInput(Dplace({"profile", "--model", kModel, "--devices",
                                 "cpu:0,cuda:0"})),
                HasSubstr("cuda:0"));
  }
  // A cluster of presets' device names, or one with a GPU this machine
  // lacks.
  EXPECT_THAT(BadInput(Dplace({"measure", "--model", kModel, "--cluster",
                               "k80x2", "--placement", "none.json"})),
              HasSubstr("none.json"));
  const std::string gpu_cluster = dir_ + "/gpu.json";
  ASSERT_TRUE(WriteTextFile(gpu_cluster, R"({
    "format": "dplace.cluster", "version": 1, "name": "gpu",
    "devices": [
      {"name": "cpu:0", "kind": "cpu", "peak_flops": 1e10,
       "memory_bandwidth": 1e10, "memory_bytes": 1000000000},
      {"name": "cuda:0", "kind": "gpu", "peak_flops": 1e12,
       "memory_bandwidth": 1e11, "memory_bytes": 1000000000}],
    "links": [{"from": "cpu:0", "to": "cuda:0", "bandwidth": 1e10,
               "latency": 1e-5}]})")
                  .ok());
  if (!CudaAvailable()) {
    EXPECT_THAT(BadInput(Dplace({"fidelity", "--model", kModel, "--cluster",
                                 gpu_cluster, "--samples", "4"})),
                HasSubstr("cuda:0"));
  }
  EXPECT_THAT(BadInput(Dplace({"fidelity", "--model", kModel, "--cluster",
                               "k80x2", "--samples", "4"})),
              HasSubstr("dplace cluster detect"));
  EXPECT_THAT(BadInput(Dplace({"fidelity", "--model", kModel, "--cluster",
                               "k80x2", "--samples", "1"})),
              HasSubstr("--samples: expected an integer >= 2"));
  // A directory under a file cannot be made: said before measuring.
  EXPECT_THAT(
      BadInput(Dplace({"fidelity", "--model", kModel, "--cluster", "k80x2",
                       "--placements", gpu_cluster + "/placements"})),
      HasSubstr("--placements: " + gpu_cluster + "/placements: cannot create"));
  EXPECT_THAT(BadInput(Dplace({"cluster", "calibrate", "--model", kModel,
                               "--cluster", "k80x2", "--rounds", "0"})),
              HasSubstr("--rounds: expected an integer >= 1, got 0"));
  EXPECT_THAT(BadInput(Dplace({"cluster", "calibrate", "--model", kModel,
                               "--cluster", "k80x2"})),
              HasSubstr("dplace cluster detect"));
  EXPECT_THAT(BadInput(Dplace({"profile", "--model", kModel, "--devices",
                               "cpu:0", "--round-steps", "0"})),
              HasSubstr("--round-steps: expected an integer >= 1, got 0"));
  EXPECT_THAT(
      BadInput(Dplace({"profile", "--model", kModel, "--devices", "cpu:0",
                       "--statistic", "min"})),
      HasSubstr("--statistic: expected fastest, fastest-quarter or median, got "
                "\"min\""));
  EXPECT_THAT(
      BadInput(Dplace({"fidelity", "--model", kModel, "--cluster", "k80x2",
                       "--statistic", "mean"})),
      HasSubstr("--statistic: expected fastest, fastest-quarter or median, got "
                "\"mean\""));
  EXPECT_THAT(
      BadInput(Dplace({"measure", "--model", kModel, "--cluster", "k80x2",
                       "--placement", "p.json", "--steps", "0"})),
      HasSubstr("--steps"));
}

}  // namespace
}  // namespace dplace
