// Runs `dplace place` in-process: its listing, one method, every method in
// a table, a search's log, checkpoint and resume, --refine, and the
// one-line errors of bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/commands/place_output.h"
#include "dplace/cluster/cluster.h"
#include "dplace/io/file.h"
#include "dplace/method/method.h"
#include "dplace/search/search_log.h"
#include "dplace/sim/simulator.h"
#include "dplace/testing/cli_test_util.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

const std::string kSourceDir = DPLACE_SOURCE_DIR;
const std::string kGraph = kSourceDir + "/examples/mlp_training.json";
const std::string kOneGpu = kSourceDir + "/examples/mlp_one_gpu.placement.json";

class PlaceCommandTest : public CliDirTest {};

// ------------------------------------------------------------------ place

TEST_F(PlaceCommandTest, PlaceListNamesEveryMethod) {
  const CliResult r = Dplace({"place", "--list"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* method :
       {"single-cpu", "single-gpu", "expert", "random", "round-robin"}) {
    EXPECT_THAT("\n" + r.out, HasSubstr(std::string("\n") + method + " "))
        << method;
  }
}

TEST_F(PlaceCommandTest, PlaceWritesAPlacementThatSimulateAccepts) {
  const std::string out = dir_ + "/p.json";
  const CliResult r = Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                              "--method", "single-gpu", "--out", out});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  // The example's one-GPU placement, simulated in the demo.
  EXPECT_THAT(r.out, HasSubstr("step time: 0.207971 s\nfeasible: yes\n"));
  EXPECT_THAT(r.out, HasSubstr("method single-gpu: placed in "));
  EXPECT_THAT(r.out, HasSubstr("x the lower bound"));
  const CliResult sim = Dplace({"simulate", "--graph", kGraph, "--cluster",
                                "k80x2", "--placement", out});
  ASSERT_EQ(sim.code, kExitOk) << sim.err;
  EXPECT_THAT(sim.out, HasSubstr("step time: 0.207971 s"));
}

TEST_F(PlaceCommandTest, PlaceAllComparesEveryMethodInOneTable) {
  const CliResult r = Dplace({"place", "--model", "zoo:rnnlm:steps=4",
                              "--cluster", "k40x4", "--method", "all"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("| method | step time (s) | vs single-gpu |"));
  EXPECT_THAT(r.out, HasSubstr("| single-gpu | "));
  EXPECT_THAT(r.out, HasSubstr("| expert | "));
  EXPECT_THAT(r.out, HasSubstr("(best)"));
  EXPECT_THAT(r.out, HasSubstr("lower bound: "));
  EXPECT_THAT(r.err, HasSubstr("placing with round-robin"));
  // The one search, with its budget stated.
  EXPECT_THAT(r.out, HasSubstr("| mcmc | "));
  EXPECT_THAT(r.out, HasSubstr("(budget: 2000 samples or 10 s)"));
  EXPECT_THAT(r.out, Not(HasSubstr("| post | ")));
}

TEST_F(PlaceCommandTest, PlaceRefineSearchesFromTheMethodsPlacement) {
  const CliResult r =
      Dplace({"place", "--model", "zoo:rnnlm:steps=4", "--cluster", "k40x4",
              "--method", "round-robin", "--refine", "1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("method round-robin: placed in "));
  EXPECT_THAT(r.out, ContainsRegex("refined: [0-9.]+ s -> [0-9.]+ s \\(mcmc "
                                   "from the placement, [0-9]+ samples"));
  EXPECT_THAT(BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                               "--method", "m-etf", "--refine", "0"})),
              HasSubstr("--refine must be > 0 seconds"));
  EXPECT_THAT(BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                               "--method", "all", "--refine", "5"})),
              HasSubstr("not with --method all"));
}

TEST_F(PlaceCommandTest, PlaceBadInput) {
  EXPECT_THAT(BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                               "--method", "m-etff"})),
              AllOf(HasSubstr("unknown method \"m-etff\" (methods: single-cpu"),
                    HasSubstr("m-sct, tarnawski-dp, ")));
  EXPECT_THAT(BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                               "--method", "expert"})),
              HasSubstr("no human-expert placement"));
  EXPECT_THAT(
      BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                       "--method", "round-robin", "--option", "depht=2"})),
      HasSubstr("unknown option \"depht\" (options: depth)"));
  EXPECT_THAT(
      BadInput(Dplace({"place", "--graph", kGraph, "--method", "single-gpu"})),
      HasSubstr("give --cluster (a preset"));
}

TEST_F(PlaceCommandTest, PlaceWithoutAGpuIsInfeasible) {
  const std::string cluster = Write("cpus.json", R"({
  "format": "dplace.cluster", "version": 1, "name": "cpus",
  "devices": [{"name": "cpu:0", "kind": "cpu", "peak_flops": 1e11,
               "memory_bandwidth": 1e10, "memory_bytes": 17179869184}]})");
  const CliResult r = Dplace({"place", "--graph", kGraph, "--cluster", cluster,
                              "--method", "single-gpu"});
  EXPECT_EQ(r.code, kExitInfeasible) << r.out << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("infeasible: method single-gpu: cluster cpus has no "
                        "gpu"));
}

// ------------------------------------------------- place with an agent

TEST_F(PlaceCommandTest, PlaceListNamesEveryAgent) {
  const CliResult r = Dplace({"place", "--list"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* agent :
       {"post", "post-ce", "post-pg", "spotlight", "colocrl"}) {
    EXPECT_THAT("\n" + r.out, HasSubstr(std::string("\n") + agent + " "))
        << agent;
  }
}

TEST_F(PlaceCommandTest, PlaceWithAnAgentSearchesLogsAndResumes) {
  const std::string log = dir_ + "/search.jsonl";
  const std::string out = dir_ + "/p.json";
  const CliResult r =
      Dplace({"place", "--graph", kGraph, "--cluster", "k80x2", "--method",
              "post", "--budget-samples", "36", "--log", log, "--out", out});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("method post: searched 36 samples (3 updates"));
  EXPECT_THAT(r.out, HasSubstr("step time: "));
  EXPECT_THAT(r.out, HasSubstr("checkpoint: " + dir_ + "/search.ckpt\n"));
  EXPECT_EQ(Lines(*ReadTextFile(log)).size(), 36u);
  const json first = json::parse(Lines(*ReadTextFile(log))[0]);
  for (const char* key : {"sample", "wall_s", "step_time", "feasible", "reward",
                          "best_step_time"}) {
    EXPECT_TRUE(first.contains(key)) << key;
  }
  const CliResult sim = Dplace({"simulate", "--graph", kGraph, "--cluster",
                                "k80x2", "--placement", out});
  EXPECT_EQ(sim.code, kExitOk) << sim.err;

  const CliResult resumed =
      Dplace({"place", "--graph", kGraph, "--cluster", "k80x2", "--method",
              "post", "--budget-samples", "60", "--log", log, "--resume",
              dir_ + "/search.ckpt"});
  ASSERT_EQ(resumed.code, kExitOk) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out,
              HasSubstr("searched 60 samples (resumed at 36, 5 updates"));
  EXPECT_EQ(Lines(*ReadTextFile(log)).size(), 60u);
}

TEST_F(PlaceCommandTest, PlaceWithAnAgentBadInput) {
  const std::string one_device = Write("cpus.json", R"({
  "format": "dplace.cluster", "version": 1, "name": "cpus",
  "devices": [{"name": "cpu:0", "kind": "cpu", "peak_flops": 1e11,
               "memory_bandwidth": 1e10, "memory_bytes": 17179869184}]})");
  const std::vector<std::string> base = {
      "place", "--graph", kGraph, "--cluster", "k80x2", "--method", "post"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return Dplace(args);
  };
  EXPECT_THAT(
      BadInput(Dplace({"place", "--graph", kGraph, "--cluster", one_device,
                       "--method", "post", "--budget-samples", "12"})),
      HasSubstr("method post: a search needs a cluster of at "
                "least two devices; cluster cpus has 1"));
  EXPECT_THAT(BadInput(with({"--budget-samples", "0"})),
              HasSubstr("--budget-samples and --budget-seconds must be > 0"));
  EXPECT_THAT(BadInput(with({"--budget-seconds", "-3"})),
              HasSubstr("--budget-samples and --budget-seconds must be > 0"));
  const std::string corrupt = Write("corrupt.ckpt", "garbage");
  EXPECT_THAT(BadInput(with({"--budget-samples", "12", "--resume", corrupt})),
              HasSubstr("corrupt.ckpt: no dplace checksum line at its end: "
                        "the file was cut short, or was not written by this "
                        "version of dplace"));
  // A seed that would wrap around, with what is allowed.
  EXPECT_THAT(BadInput(with({"--seed", "-1"})),
              HasSubstr("--seed: -1 is not allowed: expected a whole number "
                        "from 0 to 18446744073709551615"));
  // Measured runs need this machine's devices, not a preset's.
  EXPECT_THAT(BadInput(with({"--env", "measured"})),
              AllOf(HasSubstr("--env measured: cluster k80x2: "),
                    HasSubstr("dplace cluster detect")));
  EXPECT_THAT(BadInput(with({"--env", "measurd"})),
              HasSubstr("--env measurd: expected simulated, measured or "
                        "mpi[:simulated|:measured]"));
#ifdef DPLACE_WITH_MPI
  EXPECT_THAT(BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                               "--method", "m-etf", "--env", "mpi"})),
              HasSubstr("method m-etf is not a learned placer"));
  EXPECT_THAT(BadInput(with({"--env", "mpi", "--controllers", "2"})),
              HasSubstr("controllers step together, so they need "
                        "--budget-samples"));
#else
  EXPECT_THAT(BadInput(with({"--env", "mpi"})),
              HasSubstr("built without MPI; install Open MPI (apt-get "
                        "install libopenmpi-dev openmpi-bin), rebuild with "
                        "-DDPLACE_WITH_MPI=ON"));
#endif
  EXPECT_THAT(BadInput(with({"--option", "ce_evry=6"})),
              HasSubstr("method post: unknown option \"ce_evry\""));
  EXPECT_THAT(BadInput(with({"--option", "workers=0"})),
              HasSubstr("method post: option workers must be in [1, 64]"));
  EXPECT_THAT(
      BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                       "--method", "single-gpu", "--budget-samples", "5"})),
      HasSubstr("are for searches, the learned placers and mcmc (see "
                "--list); method single-gpu is not one"));
}

// --by-module prints the module tree in model order; --whole-modules keeps
// each module at its depth on one device, so the device map lists modules
// only (and the model's top-level ops); the placement file still fits the
// user's graph.
TEST_F(PlaceCommandTest, PlaceByModuleWithWholeModulesAndADeviceMap) {
  const std::string model =
      kSourceDir + "/testdata/onnx/transformer_untrained.onnx";
  const std::string map = dir_ + "/map.json";
  const std::string placement = dir_ + "/p.json";
  const CliResult r =
      Dplace({"place", "--model", model, "--cluster", "k80x2", "--method",
              "m-etf", "--by-module", "1", "--whole-modules", "1",
              "--device-map", map, "--out", placement});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("whole modules at depth 1: each on one "
                                     "device"),
                           HasSubstr("placement by module (depth 1"),
                           ContainsRegex("layers\\.0 .*\n.*layers\\.1 .*\n"
                                         ".*layers\\.2 .*\n.*layers\\.3 "),
                           HasSubstr("what next:\n  busiest device: "),
                           HasSubstr("\n  the step's last chain: "),
                           HasSubstr("device map: " + map)));
  StatusOr<std::string> text = ReadTextFile(map);
  ASSERT_TRUE(text.ok());
  const json m = json::parse(*text);
  EXPECT_EQ(m.at("format"), "dplace.device-map");
  std::vector<std::string> modules;
  for (const auto& [name, device] : m.at("modules").items()) {
    modules.push_back(name);
  }
  EXPECT_EQ(modules, std::vector<std::string>(
                         {"layers.0", "layers.1", "layers.2", "layers.3"}));
  for (const auto& [op, device] : m.at("ops").items()) {
    EXPECT_EQ(op.find("layers."), std::string::npos) << op;
  }
  const CliResult simulated = Dplace({"simulate", "--model", model, "--cluster",
                                      "k80x2", "--placement", placement});
  EXPECT_EQ(simulated.code, kExitOk) << simulated.err;
  // A search starts from placers that split modules: they are moved whole.
  const CliResult searched = Dplace(
      {"place", "--model", model, "--batch", "256", "--cluster", "k80x2",
       "--method", "mcmc", "--budget-samples", "200", "--whole-modules", "2"});
  ASSERT_EQ(searched.code, kExitOk) << searched.err;
  EXPECT_THAT(searched.out,
              HasSubstr("whole modules at depth 2: each on one device"));
  EXPECT_THAT(BadInput(Dplace({"place", "--model", model, "--cluster", "k80x2",
                               "--method", "all", "--by-module"})),
              HasSubstr("not with --method all"));
}

// A model that fits nowhere: what would make it fit, computed.
TEST_F(PlaceCommandTest, InfeasiblePlaceSaysWhatWouldFit) {
  const std::string model =
      kSourceDir + "/testdata/onnx/transformer_untrained.onnx";
  const CliResult r = Dplace({"place", "--model", model, "--batch", "400000",
                              "--cluster", "k80x2", "--method", "single-gpu"});
  ASSERT_EQ(r.code, kExitInfeasible) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("what next:\n"),
                           ContainsRegex("to fit: --batch [0-9]+: weights"),
                           HasSubstr("to fit: --cluster ")));
}

// Spilling to the CPU is suggested only with a placer that was tried and
// fits: the transformer fits with m-etf and use_cpu=true, the CNN with
// none of the spilling placers (each strands a 5 GB op), and its what next
// says so instead.
TEST_F(PlaceCommandTest, CpuSpillIsSuggestedOnlyWhereItWasTriedAndFits) {
  const std::string transformer =
      kSourceDir + "/testdata/onnx/transformer_untrained.onnx";
  CliResult r = Dplace({"place", "--model", transformer, "--batch", "160000",
                        "--cluster", "k80x2", "--method", "single-gpu"});
  ASSERT_EQ(r.code, kExitInfeasible) << r.err;
  EXPECT_THAT(r.out, HasSubstr("to fit: --method m-etf --option use_cpu=true"));
  EXPECT_THAT(r.out, HasSubstr("placed so, it fits (tried)"));
  r = Dplace({"place", "--model", transformer, "--batch", "160000", "--cluster",
              "k80x2", "--method", "m-etf", "--option", "use_cpu=true"});
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;

  const std::string cnn = kSourceDir + "/testdata/onnx/cnn_eval_bn.onnx";
  r = Dplace({"place", "--model", cnn, "--batch", "40000", "--cluster", "k80x2",
              "--method", "m-etf"});
  ASSERT_EQ(r.code, kExitInfeasible) << r.err;
  EXPECT_THAT(r.out, HasSubstr("spilling to the CPU does not do it: m-etf, "
                               "m-sct and m-topo with use_cpu=true were "
                               "tried"));
  EXPECT_THAT(r.out, Not(HasSubstr("--option use_cpu=true")));
  EXPECT_THAT(r.out, HasSubstr("to fit: --cluster k80x4"));
}

// On one device the step is the total work, so the bound proves it: what
// next says optimal instead of suggesting a search.
TEST_F(PlaceCommandTest, PlaceSaysOptimalWhereTheBoundMeetsTheStep) {
  const std::string one_device = Write("cpu.json", R"({
  "format": "dplace.cluster", "version": 1, "name": "cpu",
  "devices": [{"name": "cpu:0", "kind": "cpu", "peak_flops": 1e11,
               "memory_bandwidth": 1e10, "memory_bytes": 17179869184}]})");
  const CliResult r = Dplace({"place", "--graph", kGraph, "--cluster",
                              one_device, "--method", "single-cpu"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("the lower bound (total work): optimal, no "
                               "placement is faster"));
  EXPECT_THAT(r.out, Not(HasSubstr("a search may close")));
}

// The gap line after a search says whether a longer one would help, from
// what its last fifth (of its time) found; after a refined or one-shot
// placement it suggests a search.
TEST(WhatNextTest, TheGapLineSaysWhetherTheSearchWasStillImproving) {
  StatusOr<LoadedModel> model = LoadModel(kGraph);
  ASSERT_TRUE(model.ok()) << model.status().message();
  StatusOr<Cluster> cluster = MakeClusterPreset("k80x2");
  ASSERT_TRUE(cluster.ok());
  const CostModel cost(model->graph, *cluster);
  MethodRun run;
  run.method = "mcmc";
  run.placed = true;
  PlacementProblem problem;
  problem.graph = &model->graph;
  problem.cluster = &*cluster;
  problem.cost = &cost;
  StatusOr<std::unique_ptr<Method>> single_gpu = MakeMethod("single-gpu", {});
  ASSERT_TRUE(single_gpu.ok());
  StatusOr<PlaceResult> placed = (*single_gpu)->Place(problem);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  run.placement = placed->placement;
  run.sim = *Simulator(cost).Simulate(run.placement);
  ASSERT_TRUE(run.sim.feasible);
  const double step = run.sim.step_time;
  const StepLowerBound bound{step / 2, "critical path"};
  // 10 s of search; its best falls from 1.1x the step to the step at 9 s.
  run.searched = true;
  run.search.wall_seconds = 10;
  for (int i = 0; i <= 10; ++i) {
    SampleRecord s;
    s.index = i;
    s.wall_seconds = i;
    s.step_time = s.best_step_time = i < 9 ? 1.1 * step : step;
    s.feasible = true;
    run.search.history.push_back(s);
  }
  auto gap_line = [&] {
    for (const std::string& line : WhatNextLines(cost, *model, &run, bound)) {
      if (line.rfind("gap: ", 0) == 0) return line;
    }
    return std::string("(no gap line)");
  };
  EXPECT_THAT(gap_line(),
              HasSubstr("gap: 2.00x the lower bound (critical path); the "
                        "search was still improving, its best fell 9.1% in "
                        "its last fifth (2 s, 2 samples): a longer one may "
                        "close more of it (twice the budget, or --refine 10 "
                        "from this placement)"));
  // A gain under a thousandth is not worth doubling the budget for.
  for (int i = 0; i <= 10; ++i) {
    run.search.history[i].best_step_time = i < 9 ? 1.0005 * step : step;
  }
  EXPECT_THAT(gap_line(), HasSubstr("; the search's best fell only 0.05% in "
                                    "its last fifth (2 s, 2 samples): a "
                                    "longer one is unlikely to close much of "
                                    "it"));
  // The same best found at 7 s: nothing in the last 2 s.
  run.search.history[7].best_step_time = step;
  run.search.history[8].best_step_time = step;
  EXPECT_THAT(gap_line(), HasSubstr("; the search's last fifth (2 s, 2 "
                                    "samples) found nothing faster: a longer "
                                    "one is unlikely to close much of it"));
  // Refined since (the search's best is not the placement's step), or a
  // method that places once: a search is suggested.
  for (SampleRecord& s : run.search.history) s.best_step_time *= 1.01;
  EXPECT_THAT(gap_line(), HasSubstr("; a search may close part of it: "
                                    "--method auto --budget-seconds 60, or "
                                    "--refine 60 from this placement"));
  run.searched = false;
  run.search = {};
  EXPECT_THAT(gap_line(), HasSubstr("--method auto --budget-seconds 60"));
}

// ------------------------------------------- outputs: checked, locked, whole

// An output that cannot be written fails before the search, not after:
// the search would have written its log first.
TEST_F(PlaceCommandTest, OutputsAreCheckedBeforeTheWorkStarts) {
  const std::string log = dir_ + "/search.jsonl";
  for (const char* flag : {"--out", "--trace", "--report"}) {
    SCOPED_TRACE(flag);
    EXPECT_THAT(
        BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                         "--method", "post", "--budget-samples", "24", "--log",
                         log, flag, "/nonexistent/dir/p.json"})),
        HasSubstr(std::string(flag) +
                  " /nonexistent/dir/p.json: cannot write there: No "
                  "such file or directory"));
    EXPECT_FALSE(std::filesystem::exists(log));
  }
  EXPECT_THAT(BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                               "--method", "m-etf", "--out", dir_ + "/x.json",
                               "--trace", dir_ + "/x.json"})),
              HasSubstr("--out and --trace both name " + dir_ + "/x.json"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"zoo", "export", "mlp", "-o", dir_},
        {"simulate", "--graph", kGraph, "--cluster", "k80x2", "--placement",
         kOneGpu, "--trace", dir_ + "/no/t.json"},
        {"report", dir_ + "/missing.json", "-o", dir_ + "/no/r.html"}}) {
    EXPECT_THAT(BadInput(Dplace(args)), AnyOf(HasSubstr("it is a folder"),
                                              HasSubstr("cannot write there")));
  }
}

// A second dplace writing the same log, checkpoint or placement is
// refused with one line; the first keeps the files to itself.
TEST_F(PlaceCommandTest, ASecondWriterOfAnOutputIsRefused) {
  const std::string log = dir_ + "/search.jsonl";
  const std::string out = dir_ + "/p.json";
  for (const std::string& path : {log, dir_ + "/search.ckpt", out}) {
    SCOPED_TRACE(path);
    StatusOr<OutputLock> first = OutputLock::Acquire(path);
    ASSERT_TRUE(first.ok()) << first.status().message();
    EXPECT_THAT(
        BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                         "--method", "post", "--budget-samples", "12", "--log",
                         log, "--out", out})),
        HasSubstr(path +
                  ": another process is writing it (it holds the lock "
                  "on " +
                  path + ".lock)"));
  }
  const CliResult r =
      Dplace({"place", "--graph", kGraph, "--cluster", "k80x2", "--method",
              "post", "--budget-samples", "12", "--log", log, "--out", out});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_FALSE(std::filesystem::exists(log + ".lock"));
}

// A crash or a full disk while a batch was logged leaves a torn last line
// after the checkpoint: the resume drops it and says so.
TEST_F(PlaceCommandTest, AResumeDropsATornLastLogLineAndSaysSo) {
  const std::string log = dir_ + "/search.jsonl";
  const std::vector<std::string> search = {
      "place", "--graph", kGraph, "--cluster", "k80x2", "--method",
      "post",  "--log",   log,    "--seed",    "3",     "--budget-samples"};
  std::vector<std::string> first = search;
  first.push_back("36");
  ASSERT_EQ(Dplace(first).code, kExitOk);
  std::string text = *ReadTextFile(log);
  text += Lines(text).back().substr(0, 5);
  ASSERT_TRUE(WriteTextFile(log, text).ok());
  std::vector<std::string> resume = search;
  resume.insert(resume.end(), {"48", "--resume", dir_ + "/search.ckpt"});
  const CliResult r = Dplace(resume);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "dplace: warning: log " + log +
                       ": its last line was cut short by an interrupted write "
                       "({\"bes); dropped, as the checkpoint does not hold "
                       "its sample\n");
  EXPECT_THAT(r.out, HasSubstr("searched 48 samples (resumed at 36"));
  EXPECT_EQ(ReadSearchLog(log)->size(), 48u);
}

}  // namespace
}  // namespace dplace
