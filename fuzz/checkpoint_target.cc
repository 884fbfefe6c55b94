#include "fuzz/checkpoint_target.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "c10/util/Logging.h"
#include "dplace/cluster/cluster.h"
#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/io/file.h"
#include "dplace/io/graph_json.h"
#include "dplace/rl/agent.h"
#include "fuzz/fuzz_util.h"

namespace dplace {
namespace fuzz {
namespace {

// The problem the seeds were written for:
//   dplace place --model examples/mlp_training.json --cluster k80x2 ...
struct Fixture {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  PlacementProblem problem;
  std::unique_ptr<Environment> environment;
  std::string resume_path;  // Where an accepted input is written to resume.
};

const Fixture& GetFixture() {
  static const Fixture* const fixture = [] {
    // Every c10::Error LibTorch throws on a bad archive (most inputs) would
    // otherwise capture and symbolize its stack: half the time per input.
    // The message, which is what the agent reports, does not need it.
    c10::SetStackTraceFetcher([] { return std::string(); });
    StatusOr<Graph> graph = ReadGraphJson(std::string(DPLACE_SOURCE_DIR) +
                                          "/examples/mlp_training.json");
    Check(graph.ok(), "cannot read examples/mlp_training.json");
    StatusOr<Cluster> cluster = MakeClusterPreset("k80x2");
    Check(cluster.ok(), "no k80x2 preset");
    auto* f = new Fixture{std::move(graph).value(),
                          std::move(cluster).value(),
                          nullptr,
                          {},
                          nullptr,
                          ""};
    f->cost = std::make_unique<CostModel>(f->graph, f->cluster);
    f->problem.graph = &f->graph;
    f->problem.cluster = &f->cluster;
    f->problem.cost = f->cost.get();
    f->problem.seed = 1;  // dplace place's default --seed.
    f->environment = NewSimulatedEnvironment(*f->cost, 1);
    f->resume_path =
        (std::filesystem::temp_directory_path() /
         ("dplace-checkpoint-fuzz-" + std::to_string(getpid()) + ".ckpt"))
            .string();
    return f;
  }();
  return *fixture;
}

// The agent named in the input's meta, with the seeds' options.
std::unique_ptr<Agent> AgentFor(std::string_view bytes) {
  const bool colocrl =
      bytes.find("\"agent\":\"colocrl\"") != std::string_view::npos;
  StatusOr<MethodOptions> options =
      colocrl ? MethodOptions::Parse({"hidden=2", "embedding=2"})
              : MethodOptions::Parse({});
  Check(options.ok(), "bad agent options");
  StatusOr<std::unique_ptr<Agent>> agent =
      MakeAgent(colocrl ? "colocrl" : "post", *options);
  Check(agent.ok(), "cannot make the agent");
  return std::move(agent).value();
}

}  // namespace

void FuzzCheckpoint(const uint8_t* data, size_t size) {
  const Fixture& f = GetFixture();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<Agent> agent = AgentFor(bytes);
  StatusOr<CheckpointInfo> info =
      agent->CheckCheckpoint(f.problem, bytes, "fuzz.ckpt");
  if (!info.ok()) return;
  // Accepted: `--resume` must continue from it. One more sample exercises
  // sampling from the loaded policy, an update with its optimizer state,
  // and the best placement kept. The input is the archive: as a file it
  // carries its checksum, which `--resume` verifies before reading it.
  Check(WriteChecksummedFile(f.resume_path, bytes).ok(),
        "cannot write " + f.resume_path);
  PlaceContext context;
  context.environment = f.environment.get();
  context.search.resume_path = f.resume_path;
  context.search.budget.samples = info->samples + 1;
  StatusOr<PlaceResult> resumed = agent->Place(f.problem, context);
  std::remove(f.resume_path.c_str());
  Check(resumed.ok(), "an accepted checkpoint does not resume: " +
                          (resumed.ok() ? "" : resumed.status().message()));
  Check(resumed->search.samples == info->samples + 1,
        "the resumed search did not continue from the checkpoint's samples");
}

}  // namespace fuzz
}  // namespace dplace
