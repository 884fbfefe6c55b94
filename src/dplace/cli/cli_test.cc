// Runs the `dplace` command in-process: exit codes, what goes to stdout, and
// the one-line errors on stderr (`place` in place_command_test.cc).
#include "dplace/cli/cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/io/file.h"
#include "dplace/io/graph_json.h"
#include "dplace/search/search_log.h"
#include "dplace/testing/cli_test_util.h"
#include "dplace/testing/xml_check.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using json = nlohmann::json;

const std::string kSourceDir = DPLACE_SOURCE_DIR;
const std::string kGraph = kSourceDir + "/examples/mlp_training.json";
const std::string kOneGpu = kSourceDir + "/examples/mlp_one_gpu.placement.json";
const std::string kTwoGpus =
    kSourceDir + "/examples/mlp_two_gpus.placement.json";

class CliTest : public CliDirTest {};

std::string ExampleHash() {
  StatusOr<Graph> g = ReadGraphJson(kGraph);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? g->hash() : "";
}

// ------------------------------------------------------- bench and report

TEST_F(CliTest, PlaceReportIsOneWellFormedPage) {
  const std::string report = dir_ + "/r.html";
  const CliResult r = Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                              "--method", "m-etf", "--report", report});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("report: " + report + "\n"));
  StatusOr<std::string> html = ReadTextFile(report);
  ASSERT_TRUE(html.ok());
  const testing_xml::XmlCheck check = testing_xml::CheckXml(*html);
  ASSERT_TRUE(check.ok()) << check.error;
  EXPECT_GE(check.elements.at("svg"), 5);
  EXPECT_THAT(*html, HasSubstr("class=\"chart gantt\""));
  EXPECT_THAT(*html, HasSubstr("dplace place --graph"));
  EXPECT_THAT(*html, ::testing::Not(HasSubstr("Learning curve")));

  const CliResult learned =
      Dplace({"place", "--graph", kGraph, "--cluster", "k80x2", "--method",
              "post", "--budget-samples", "24", "--report", report});
  ASSERT_EQ(learned.code, kExitOk) << learned.out << learned.err;
  html = ReadTextFile(report);
  ASSERT_TRUE(testing_xml::CheckXml(*html).ok());
  EXPECT_THAT(*html, HasSubstr("Learning curve"));
  EXPECT_THAT(BadInput(Dplace({"place", "--graph", kGraph, "--cluster", "k80x2",
                               "--method", "all", "--report", report})),
              HasSubstr("--report need one method"));
}

// One lower bound: the terminal, simulate and the report print the same
// text, and say which bound binds.
TEST_F(CliTest, PlaceSimulateAndReportShowOneLowerBound) {
  const std::string report = dir_ + "/r.html";
  const std::string placement = dir_ + "/p.json";
  const CliResult r =
      Dplace({"place", "--graph", kGraph, "--cluster", "k80x4", "--method",
              "m-sct", "--report", report, "--out", placement});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  const std::string prefix = "lower bound: ";
  const size_t at = r.out.find(prefix);
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string bound = r.out.substr(
      at + prefix.size(), r.out.find(';', at) - at - prefix.size());
  EXPECT_THAT(bound,
              ::testing::MatchesRegex("[0-9.]+ s \\((critical path|total work|"
                                      "forced-transfer path)\\)"));
  StatusOr<std::string> html = ReadTextFile(report);
  ASSERT_TRUE(html.ok());
  EXPECT_THAT(*html, HasSubstr("<td>" + bound + "; step time is "));
  const CliResult simulated =
      Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x4",
              "--placement", placement});
  ASSERT_EQ(simulated.code, kExitOk) << simulated.err;
  EXPECT_THAT(simulated.out, HasSubstr(prefix + bound + ";"));
  EXPECT_THAT(simulated.out, ::testing::ContainsRegex(
                                 "\nthe step's last chain: [0-9,]+ ops, .* "
                                 "computing, .* queued behind other ops on "
                                 "their devices \\([0-9,]+ ops\\), .* in "
                                 "transfers\n"));
}

TEST_F(CliTest, BenchWritesJsonMarkdownAndReport) {
  const std::string results = dir_ + "/smoke.json";
  const std::string md = dir_ + "/smoke.md";
  const std::string html = dir_ + "/smoke.html";
  const CliResult r = Dplace({"bench", "--suite", "smoke", "--methods",
                              "expert,m-etf,post", "--budget-samples", "12",
                              "--seeds", "1", "-o", results, "--markdown", md});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("dplace: bench [1/"));
  const json doc = json::parse(*ReadTextFile(results));
  EXPECT_EQ(doc.at("command"),
            "dplace bench --suite smoke --methods expert,m-etf,post "
            "--budget-samples 12 --seeds 1 -o " +
                results + " --markdown " + md);
  const json& methods = doc.at("tables")[0].at("benchmarks")[0].at("methods");
  ASSERT_EQ(methods.size(), 3u);
  EXPECT_EQ(methods[2].at("runs").size(), 1u);
  EXPECT_EQ(methods[2].at("runs")[0].at("samples"), 12);
  EXPECT_THAT(*ReadTextFile(md), HasSubstr("| benchmark | GPUs | expert |"));

  const CliResult rendered = Dplace({"report", results, "-o", html});
  ASSERT_EQ(rendered.code, kExitOk) << rendered.err;
  const testing_xml::XmlCheck check =
      testing_xml::CheckXml(*ReadTextFile(html));
  ASSERT_TRUE(check.ok()) << check.error;
  EXPECT_GE(check.elements.at("polyline"), 1);
}

TEST_F(CliTest, BenchRunsInPartsWithResume) {
  const std::string results = dir_ + "/parts.json";
  auto bench = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"bench",
                                     "--suite",
                                     "smoke",
                                     "--methods",
                                     "expert,m-etf,post",
                                     "--budget-samples",
                                     "12",
                                     "--seeds",
                                     "1",
                                     "-o",
                                     results};
    args.insert(args.end(), extra.begin(), extra.end());
    return Dplace(args);
  };
  const CliResult first = bench({"--max-runs", "2"});
  ASSERT_EQ(first.code, kExitOk) << first.err;
  EXPECT_THAT(first.out, HasSubstr("stopped after 2 of 5 runs (--resume "
                                   "continues)"));
  EXPECT_FALSE(json::parse(*ReadTextFile(results)).at("complete").get<bool>());

  // Starting over would lose the two runs.
  EXPECT_THAT(BadInput(bench({})),
              HasSubstr(results + ": holds an unfinished run (2 of 5 runs); "
                                  "--resume continues it"));
  // Another budget is another run.
  EXPECT_THAT(BadInput(Dplace({"bench", "--suite", "smoke", "--methods",
                               "expert,m-etf,post", "--budget-samples", "24",
                               "--seeds", "1", "-o", results, "--resume"})),
              AllOf(HasSubstr(results + ": holds the results of another run"),
                    HasSubstr("budget_samples is 12, this run's is 24")));
  EXPECT_THAT(BadInput(Dplace({"bench", "--suite", "smoke", "--resume"})),
              HasSubstr("--resume needs -o FILE"));

  const CliResult rest = bench({"--resume"});
  ASSERT_EQ(rest.code, kExitOk) << rest.err;
  EXPECT_THAT(rest.err, HasSubstr("dplace: bench continues " + results +
                                  ": 2 of 5 runs done"));
  EXPECT_THAT(rest.err, HasSubstr("dplace: bench [3/5]"));
  EXPECT_THAT(rest.err, ::testing::Not(HasSubstr("[1/5]")));
  const json doc = json::parse(*ReadTextFile(results));
  EXPECT_TRUE(doc.at("complete").get<bool>());
  EXPECT_EQ(doc.at("runs_done"), 5);
  EXPECT_EQ(doc.at("resumed_commands").size(), 1u);
  EXPECT_EQ(doc.at("tables")[0].at("benchmarks")[0].at("methods").size(), 3u);
  // The search's state beside the results file (post's checkpoint, log and
  // run) is gone once its run is in the file.
  for (const char* ext : {".ckpt", ".jsonl", ".run"}) {
    EXPECT_FALSE(ReadTextFile(results + ".search" + ext).ok()) << ext;
  }
}

TEST_F(CliTest, BenchClaimsFromAResultsFile) {
  // Post's Table 1 on NMT: post beats policy gradient and the expert but
  // not Spotlight.
  const std::string results = Write("claims.json", R"json({
    "format": "dplace.bench-results", "suite": "paper", "tables": [
    {"title": "Post, Table 1", "benchmarks": [{"name": "nmt-2@k80x2",
     "methods": [
      {"method": "expert", "runs": [{"step_time": 1.3}]},
      {"method": "post-pg", "runs": [{"step_time": 1.5}]},
      {"method": "post-ce", "runs": [{"step_time": 1.2}]},
      {"method": "spotlight", "runs": [{"step_time": 0.9}]},
      {"method": "post", "runs": [{"step_time": 1.0}]}]}]}]})json");
  const std::string md = dir_ + "/claims.md";
  const CliResult r = Dplace({"bench", "--claims", results});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("### Claims: Post (Gao et al., NeurIPS 2018)"));
  EXPECT_THAT(r.out, HasSubstr("| Table 1: on NMT (2 layers, 2 GPUs) Post "
                               "beats the policy gradient method | "
                               "`nmt-2@k80x2` | 1.22 s vs 2.30 s (policy "
                               "gradient): 47.0% faster | post 1.0000 s vs "
                               "post-pg 1.5000 s: 33.3% faster | at least "
                               "0.1% faster | **holds** |"));
  EXPECT_THAT(r.out, HasSubstr("post 1.0000 s vs spotlight 0.9000 s: 11.1% "
                               "slower | at least 0.1% faster | **does not "
                               "hold** |"));
  EXPECT_THAT(r.out, HasSubstr("2 of 6 claims hold on dplace's simulator (3 "
                               "not run)."));
  EXPECT_THAT(r.out, HasSubstr("### Claims: Hierarchical Planner"));
  ASSERT_EQ(Dplace({"bench", "--claims", results, "--markdown", md}).code,
            kExitOk);
  EXPECT_EQ(*ReadTextFile(md), r.out);

  const std::string other = Write("other.json", R"({
    "format": "dplace.bench-results", "suite": "nosuch", "tables": []})");
  EXPECT_THAT(BadInput(Dplace({"bench", "--claims", other})),
              HasSubstr(other + ": suite nosuch: unknown suite \"nosuch\""));
  EXPECT_THAT(BadInput(Dplace({"bench", "--claims", dir_ + "/none.json"})),
              HasSubstr("none.json"));
}

// A view of a results file: the columns named (a label with a comma is one
// column), the claims about them, judged on the whole file.
TEST_F(CliTest, BenchShowsPartOfAResultsFile) {
  const std::string results = Write("eagle.json", R"json({
    "format": "dplace.bench-results", "suite": "paper", "tables": [
    {"title": "EAGLE, Tables I-IV", "benchmarks": [{"name": "gnmt@p100x4",
     "methods": [
      {"method": "expert", "runs": [{"step_time": 1.4}]},
      {"method": "hierarchical", "runs": [{"step_time": 1.5}]},
      {"method": "hierarchical", "label": "hierarchical (metis grouper)",
       "runs": [{"step_time": 1.6}]},
      {"method": "hierarchical",
       "label": "hierarchical (metis, attention before)",
       "runs": [{"step_time": 1.3}]},
      {"method": "hierarchical", "label": "hierarchical (metis, gcn placer)",
       "runs": [{"step_time": 2.0}]}]}]}]})json");
  const CliResult r = Dplace(
      {"bench", "--show", results, "--no-details", "--methods",
       "expert,hierarchical (metis, attention before),hierarchical (metis, "
       "gcn placer)"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("| expert | hierarchical (metis, attention "
                               "before) | hierarchical (metis, gcn placer) "
                               "| best learned vs best baseline |"));
  EXPECT_THAT(r.out, Not(HasSubstr("### `gnmt@p100x4`")));
  EXPECT_THAT(r.out, HasSubstr("| Table II: with METIS groups, the seq2seq "
                               "placer (attention before) beats the GCN "
                               "placer | `gnmt@p100x4` |"));
  EXPECT_THAT(r.out, HasSubstr("35.0% faster"));
  // The grouper's claim is about the plain planner, not shown here.
  EXPECT_THAT(r.out, Not(HasSubstr("Table I:")));
  const CliResult details =
      Dplace({"bench", "--show", results, "--methods", "hierarchical"});
  ASSERT_EQ(details.code, kExitOk) << details.err;
  EXPECT_THAT(details.out, HasSubstr("### `gnmt@p100x4`"));
  // Judged against the metis grouper's column, though it is not shown.
  EXPECT_THAT(details.out, HasSubstr("Table I: the learned feed-forward "
                                     "grouper beats the METIS"));
  EXPECT_THAT(details.out, HasSubstr("vs hierarchical (metis grouper) "
                                     "1.6000 s: 6.2% faster"));
  const CliResult claims =
      Dplace({"bench", "--claims", results, "--methods", "hierarchical"});
  ASSERT_EQ(claims.code, kExitOk) << claims.err;
  EXPECT_THAT(claims.out, Not(HasSubstr("## EAGLE, Tables I-IV")));
  EXPECT_THAT(claims.out, HasSubstr("Table I: the learned feed-forward"));

  EXPECT_THAT(BadInput(Dplace({"bench", "--show", results, "--methods",
                               "hierarchical (metis)"})),
              HasSubstr(results + ": --methods hierarchical (metis): not in "
                                  "the results (there: expert, "));
  EXPECT_THAT(
      BadInput(Dplace({"bench", "--show", results, "--suite", "paper"})),
      HasSubstr("read a results file and run nothing"));
  EXPECT_THAT(BadInput(Dplace({"bench", "--suite", "smoke", "--no-details"})),
              HasSubstr("--no-details is for --show"));
}

TEST_F(CliTest, BenchBadInput) {
  EXPECT_THAT(BadInput(Dplace({"bench", "--suite", "smok"})),
              HasSubstr("unknown suite \"smok\" (suites: smoke, paper, peer, "
                        "local-search, scale)"));
  EXPECT_THAT(
      BadInput(Dplace({"bench", "--suite", "smoke", "--methods", "eagel"})),
      HasSubstr("--methods eagel: suite smoke has no such method"));
  const std::string suites = Write("s.json", R"({"format": "dplace.suites",
    "version": 1, "suites": [{"name": "s", "tables": [{"title": "T",
    "benchmarks": [{"model": "zoo:rnnlm", "cluster": "k40x2"}],
    "methods": [{"method": "eagel"}]}]}]})");
  EXPECT_THAT(
      BadInput(Dplace({"bench", "--suites", suites, "--suite", "s"})),
      AllOf(HasSubstr("suite s, T: unknown method \"eagel\" (methods: "),
            HasSubstr("post")));
  EXPECT_THAT(BadInput(Dplace(
                  {"report", dir_ + "/missing.json", "-o", dir_ + "/r.html"})),
              HasSubstr("missing.json"));
  const CliResult list = Dplace({"bench", "--list"});
  EXPECT_EQ(list.code, kExitOk);
  EXPECT_THAT(list.out, AllOf(HasSubstr("smoke "), HasSubstr("paper "),
                              HasSubstr("scale ")));
}

TEST_F(CliTest, RandomModelSpec) {
  const CliResult r = Dplace({"inspect", "--model", "random:ops=300,seed=4"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ops:              300 "));
  EXPECT_THAT(BadInput(Dplace({"inspect", "--model", "random:ops=0"})),
              HasSubstr("ops: expected an integer in [1, 10000000]"));
}

// --------------------------------------------------------------- simulate

TEST_F(CliTest, SimulateExampleSucceeds) {
  for (const std::string& placement : {kOneGpu, kTwoGpus}) {
    SCOPED_TRACE(placement);
    const CliResult r = Dplace({"simulate", "--graph", kGraph, "--cluster",
                                "k80x2", "--placement", placement});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.err, "");
    bool step_line = false;
    for (const std::string& line : Lines(r.out)) {
      if (line.rfind("step time: ", 0) == 0) {
        step_line = true;
        EXPECT_GT(std::stod(line.substr(11)), 0) << line;
      }
    }
    EXPECT_TRUE(step_line) << r.out;
    EXPECT_THAT(r.out, HasSubstr("feasible: yes"));
    EXPECT_THAT(r.out, HasSubstr("hash " + ExampleHash()));
  }
}

TEST_F(CliTest, ModelIsASynonymOfGraph) {
  const CliResult r = Dplace({"simulate", "--model", kGraph, "--cluster",
                              "k80x2", "--placement", kOneGpu});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("step time: "));
}

TEST_F(CliTest, TraceWritesChromeTraceJson) {
  const std::string trace = dir_ + "/trace.json";
  const CliResult r =
      Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x2",
              "--placement", kTwoGpus, "--trace", trace});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("trace: " + trace));
  StatusOr<std::string> text = ReadTextFile(trace);
  ASSERT_TRUE(text.ok()) << text.status().message();
  const json root = json::parse(*text);  // Throws (fails) when malformed.
  ASSERT_TRUE(root.contains("traceEvents"));
  ASSERT_TRUE(root["traceEvents"].is_array());
  int compute = 0, transfers = 0;
  for (const json& e : root["traceEvents"]) {
    if (e["ph"] != "X") continue;
    (e["cat"] == "transfer" ? transfers : compute)++;
  }
  EXPECT_EQ(compute, 43);   // One per op of the example.
  EXPECT_GT(transfers, 0);  // Two GPUs and a CPU exchange tensors.
}

// ------------------------------------------------------------- bad inputs

TEST_F(CliTest, MalformedGraphJson) {
  const std::string graph = Write(
      "broken.json", "{\n  \"format\": \"dplace.graph\",\n  \"ops\": [\n");
  const std::string line =
      BadInput(Dplace({"simulate", "--graph", graph, "--cluster", "k80x2",
                       "--placement", kOneGpu}));
  EXPECT_THAT(line, AllOf(HasSubstr(graph), HasSubstr("malformed JSON"),
                          HasSubstr("line")));
}

TEST_F(CliTest, UnknownDeviceInPlacement) {
  StatusOr<std::string> text = ReadTextFile(kOneGpu);
  ASSERT_TRUE(text.ok());
  json placement = json::parse(*text);
  placement["placement"]["layer_2/matmul"] = "gpu:9";
  const std::string path = Write("bad.placement.json", placement.dump(1));
  const std::string line =
      BadInput(Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x2",
                       "--placement", path}));
  EXPECT_THAT(line,
              AllOf(HasSubstr(path), HasSubstr("placement[\"layer_2/matmul\"]"),
                    HasSubstr("unknown device \"gpu:9\"")));
}

TEST_F(CliTest, CycleInGraph) {
  const std::string graph = Write("cycle.json", R"({
  "format": "dplace.graph", "version": 1, "name": "loop",
  "ops": [
    {"name": "a", "type": "Add", "inputs": ["c"], "outputs": [{"bytes": 4}]},
    {"name": "b", "type": "Neg", "inputs": ["a"], "outputs": [{"bytes": 4}]},
    {"name": "c", "type": "Neg", "inputs": ["b"], "outputs": [{"bytes": 4}]}
  ]})");
  const std::string line = BadInput(Dplace({"inspect", "--graph", graph}));
  EXPECT_THAT(line,
              AllOf(HasSubstr(graph), HasSubstr("cycle"), HasSubstr("\"a\""),
                    HasSubstr("\"b\""), HasSubstr("\"c\"")));
}

TEST_F(CliTest, NegativeBytes) {
  const std::string graph = Write("negative.json", R"({
  "format": "dplace.graph", "version": 1, "name": "neg",
  "ops": [
    {"name": "a", "type": "Const", "outputs": [{"bytes": 4}]},
    {"name": "b", "type": "Neg", "inputs": ["a"], "outputs": [{"bytes": -8}]}
  ]})");
  const std::string line =
      BadInput(Dplace({"simulate", "--graph", graph, "--cluster", "k80x2",
                       "--placement", kOneGpu}));
  EXPECT_THAT(line,
              AllOf(HasSubstr(graph), HasSubstr("ops[1].outputs[0].bytes"),
                    HasSubstr("expected an integer >= 0, got -8")));
}

TEST_F(CliTest, GraphHashMismatch) {
  // The example graph with one op's FLOPs changed: same op names, so only
  // the hash tells the placement does not belong to it.
  StatusOr<std::string> text = ReadTextFile(kGraph);
  ASSERT_TRUE(text.ok());
  json graph = json::parse(*text);
  graph["ops"][3]["flops"] = 1.0;
  const std::string path = Write("changed.json", graph.dump(1));
  StatusOr<Graph> changed = ReadGraphJson(path);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  const std::string example_hash = ExampleHash();
  ASSERT_NE(changed->hash(), example_hash);

  const std::string line =
      BadInput(Dplace({"simulate", "--graph", path, "--cluster", "k80x2",
                       "--placement", kOneGpu}));
  EXPECT_THAT(line, AllOf(HasSubstr(kOneGpu), HasSubstr("graph_hash"),
                          HasSubstr(example_hash), HasSubstr(changed->hash())));
}

TEST_F(CliTest, PlacementForAnotherCluster) {
  const std::string line =
      BadInput(Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x4",
                       "--placement", kOneGpu}));
  EXPECT_THAT(line, AllOf(HasSubstr(kOneGpu), HasSubstr("cluster"),
                          HasSubstr("\"k80x2\""), HasSubstr("\"k80x4\"")));
}

TEST_F(CliTest, UnknownClusterPreset) {
  const std::string line =
      BadInput(Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x3",
                       "--placement", kOneGpu}));
  EXPECT_THAT(line, AllOf(HasSubstr("unknown cluster preset \"k80x3\""),
                          HasSubstr("k80x2"), HasSubstr("h100x8x2")));
  const std::string show = BadInput(Dplace({"cluster", "show", "k80x3"}));
  EXPECT_THAT(show, HasSubstr("unknown cluster preset \"k80x3\""));
}

TEST_F(CliTest, MissingFile) {
  const std::string missing = dir_ + "/no_such_graph.json";
  const std::string line =
      BadInput(Dplace({"simulate", "--graph", missing, "--cluster", "k80x2",
                       "--placement", kOneGpu}));
  EXPECT_THAT(line, AllOf(HasSubstr(missing), HasSubstr("cannot open")));
  const std::string placement = dir_ + "/no_such.placement.json";
  const std::string line2 =
      BadInput(Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x2",
                       "--placement", placement}));
  EXPECT_THAT(line2, AllOf(HasSubstr(placement), HasSubstr("cannot open")));
}

TEST_F(CliTest, BadProfile) {
  const std::string profile = Write("profile.json", R"({
  "format": "dplace.profile", "version": 1,
  "by_type": {"MatMul": {"gpu": -1}}})");
  const std::string line =
      BadInput(Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x2",
                       "--placement", kOneGpu, "--profile", profile}));
  EXPECT_THAT(line,
              AllOf(HasSubstr(profile), HasSubstr("by_type[\"MatMul\"].gpu"),
                    HasSubstr("expected a number >= 0")));
}

TEST_F(CliTest, ProfileChangesTheStepTime) {
  auto step_time = [](const CliResult& r) {
    for (const std::string& line : Lines(r.out)) {
      if (line.rfind("step time: ", 0) == 0) return std::stod(line.substr(11));
    }
    ADD_FAILURE() << "no step time in " << r.out;
    return 0.0;
  };
  const CliResult base = Dplace({"simulate", "--graph", kGraph, "--cluster",
                                 "k80x2", "--placement", kOneGpu});
  ASSERT_EQ(base.code, kExitOk) << base.err;
  // Every MatMul takes a whole second on a GPU: the step gets much longer.
  const std::string profile = Write("slow.json", R"({
  "format": "dplace.profile", "version": 1,
  "by_type": {"MatMul": {"gpu": 1.0}}})");
  const CliResult slow =
      Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x2",
              "--placement", kOneGpu, "--profile", profile});
  ASSERT_EQ(slow.code, kExitOk) << slow.err;
  // The MatMuls all sit on gpu:0, which runs one op at a time.
  StatusOr<Graph> g = ReadGraphJson(kGraph);
  ASSERT_TRUE(g.ok());
  int matmuls = 0;
  for (OpId op = 0; op < g->num_ops(); ++op)
    matmuls += g->op_type(op) == "MatMul";
  ASSERT_GT(matmuls, 0);
  EXPECT_GE(step_time(slow), matmuls * 1.0);
  EXPECT_LT(step_time(slow), matmuls * 1.0 + step_time(base));
  EXPECT_LT(step_time(base), 1.0);
}

// ------------------------------------------------------------ infeasible

TEST_F(CliTest, OutOfMemoryIsInfeasible) {
  // 12 GiB of weights and optimizer slots, more than a K80's 11 GiB.
  const std::string graph = Write("huge.json", R"({
  "format": "dplace.graph", "version": 1, "name": "huge",
  "ops": [
    {"name": "weights", "type": "VariableV2", "persistent_bytes": 6442450944,
     "outputs": [{"shape": [1024], "bytes": 4096}]},
    {"name": "apply", "type": "ApplyAdam", "phase": "update",
     "persistent_bytes": 6442450944, "inputs": ["weights"]}
  ]})");
  StatusOr<Graph> g = ReadGraphJson(graph);
  ASSERT_TRUE(g.ok()) << g.status().message();

  // The hash `inspect` prints is the one a placement must carry.
  const CliResult inspect = Dplace({"inspect", "--graph", graph});
  ASSERT_EQ(inspect.code, kExitOk) << inspect.err;
  EXPECT_THAT(inspect.out, HasSubstr("hash:             " + g->hash() + "\n"));

  const std::string placement = Write("huge.placement.json", R"({
  "format": "dplace.placement", "version": 1, "graph": "huge",
  "graph_hash": ")" + g->hash() + R"(", "cluster": "k80x2",
  "placement": {"weights": "gpu:0", "apply": "gpu:0"}})");
  const CliResult r = Dplace({"simulate", "--graph", graph, "--cluster",
                              "k80x2", "--placement", placement});
  EXPECT_EQ(r.code, kExitInfeasible) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("infeasible: out of memory on gpu:0"));
  EXPECT_THAT(r.out, HasSubstr("OOM"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("feasible: yes")));

  // The same graph split over both GPUs fits.
  const std::string split = Write("split.placement.json", R"({
  "format": "dplace.placement", "version": 1, "graph": "huge",
  "graph_hash": ")" + g->hash() + R"(", "cluster": "k80x2",
  "placement": {"weights": "gpu:0", "apply": "gpu:1"}})");
  const CliResult ok = Dplace({"simulate", "--graph", graph, "--cluster",
                               "k80x2", "--placement", split});
  EXPECT_EQ(ok.code, kExitOk) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("feasible: yes"));
}

// Issue 50: three ops of 5e18 persistent bytes wrapped one GPU's memory sum
// to a negative peak and were placed as fitting (exit 0); flops of 1e308
// printed a 63-digit step time. Both are refused at load, exit 2.
TEST_F(CliTest, SizesSummingPastTheBoundsAreRefusedAtLoad) {
  const std::string bytes = Write("wrap.json", R"({
  "format": "dplace.graph", "version": 1, "name": "wrap",
  "ops": [
    {"name": "a", "type": "V", "persistent_bytes": 5000000000000000000},
    {"name": "b", "type": "V", "persistent_bytes": 5000000000000000000},
    {"name": "c", "type": "V", "persistent_bytes": 5000000000000000000}
  ]})");
  std::string line = BadInput(Dplace({"place", "--graph", bytes, "--cluster",
                                      "k80x2", "--method", "single-gpu"}));
  EXPECT_THAT(line, AllOf(HasSubstr(bytes), HasSubstr("persistent_bytes"),
                          HasSubstr("at most 2^60")));
  const std::string flops = Write("flops.json", R"({
  "format": "dplace.graph", "version": 1, "name": "flops",
  "ops": [{"name": "a", "type": "MatMul", "flops": 1e308}]})");
  line = BadInput(Dplace({"place", "--graph", flops, "--cluster", "k80x2",
                          "--method", "single-gpu"}));
  EXPECT_THAT(line, AllOf(HasSubstr(flops), HasSubstr("flops"),
                          HasSubstr("at most 1e30")));
}
// ------------------------------------------------------ help and commands

TEST_F(CliTest, HelpExitsZero) {
  const CliResult r = Dplace({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, AllOf(HasSubstr("inspect"), HasSubstr("cluster"),
                           HasSubstr("simulate")));
  const CliResult sub = Dplace({"simulate", "--help"});
  EXPECT_EQ(sub.code, kExitOk);
  EXPECT_THAT(sub.out, AllOf(HasSubstr("--placement"), HasSubstr("--trace")));
}

TEST_F(CliTest, UnknownSubcommand) {
  const std::string line = BadInput(Dplace({"frobnicate"}));
  EXPECT_THAT(line, HasSubstr("frobnicate"));
}

TEST_F(CliTest, BadFlags) {
  // No command at all, an unknown flag, a missing required flag.
  BadInput(Dplace({}));
  EXPECT_THAT(BadInput(Dplace({"inspect", "--graph", kGraph, "--verbose"})),
              HasSubstr("--verbose"));
  EXPECT_THAT(
      BadInput(Dplace({"simulate", "--graph", kGraph, "--cluster", "k80x2"})),
      HasSubstr("--placement"));
  EXPECT_THAT(BadInput(Dplace({"inspect"})), HasSubstr("--graph"));
}

TEST_F(CliTest, ClusterListNamesEveryPreset) {
  const CliResult r = Dplace({"cluster", "list"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::vector<std::string> names;
  for (const std::string& line : Lines(r.out)) {
    names.push_back(line.substr(0, line.find(' ')));
    EXPECT_GT(line.size(), names.back().size() + 1) << "no description";
  }
  const std::vector<std::string> expected = {"k80x2",  "k80x4",  "k80x8",
                                             "k40x2",  "k40x4",  "k40x8",
                                             "p100x4", "h100x8", "h100x8x2"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(names, ClusterPresetNames());
}

TEST_F(CliTest, ClusterShowK80x4) {
  const CliResult r = Dplace({"cluster", "show", "k80x4"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("cluster k80x4: 5 devices, "));
  int device_rows = 0;
  for (const std::string& line : Lines(r.out)) {
    for (const char* d : {"cpu:0 ", "gpu:0 ", "gpu:1 ", "gpu:2 ", "gpu:3 "}) {
      if (line.rfind(d, 0) == 0) ++device_rows;
    }
  }
  EXPECT_EQ(device_rows, 5);
  EXPECT_THAT(r.out, HasSubstr("Tesla K80"));
  EXPECT_THAT(r.out, HasSubstr("  cpu:0 -> gpu:3 ("));

  // --json prints a cluster file that reads back as the same cluster.
  const CliResult j = Dplace({"cluster", "show", "--json", "k80x4"});
  ASSERT_EQ(j.code, kExitOk) << j.err;
  const std::string path = Write("k80x4.json", j.out);
  const CliResult again = Dplace({"cluster", "show", path});
  ASSERT_EQ(again.code, kExitOk) << again.err;
  EXPECT_EQ(again.out, r.out);
}

TEST_F(CliTest, InspectExample) {
  const CliResult r = Dplace({"inspect", "--graph", kGraph});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string hash = ExampleHash();
  ASSERT_EQ(hash.size(), 16u);
  EXPECT_THAT(r.out, HasSubstr("hash:             " + hash + "\n"));
  EXPECT_THAT(r.out, HasSubstr("graph:            mlp_training\n"));
  EXPECT_THAT(r.out, HasSubstr("ops:              43 (forward 21, backward 14, "
                               "update 8)\n"));
  // The example placements were made for this graph.
  StatusOr<std::string> placement = ReadTextFile(kOneGpu);
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(json::parse(*placement)["graph_hash"], hash);
}

}  // namespace
}  // namespace dplace

namespace dplace {
namespace {

TEST(CliZooTest, ListNamesEveryModelWithItsDefaults) {
  const CliResult r = Dplace({"zoo", "list"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  for (const char* name : {"rnnlm", "nmt", "gnmt"}) {
    EXPECT_THAT(r.out, HasSubstr(name));
  }
  EXPECT_THAT(r.out, HasSubstr("layers=2"));
}

TEST(CliZooTest, ExportWritesTheTrainingGraphWithOverrides) {
  const std::string path = ::testing::TempDir() + "dplace_zoo_export.json";
  const CliResult r = Dplace({"zoo", "export", "rnnlm", "--param", "layers=1",
                              "--param", "steps=3", "-o", path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  StatusOr<Graph> written = ReadGraphJson(path);
  ASSERT_TRUE(written.ok()) << written.status().message();
  StatusOr<Graph> expected = MakeZooModel("rnnlm:layers=1,steps=3");
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(written->hash(), expected->hash());
  EXPECT_THAT(r.out, HasSubstr(expected->hash()));
  std::filesystem::remove(path);
}

TEST(CliZooTest, ModelFlagTakesZooSpecs) {
  const CliResult r =
      Dplace({"inspect", "--model", "zoo:rnnlm:layers=1,steps=2"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("graph:            rnnlm"));
  EXPECT_THAT(r.out, HasSubstr("hash:             " +
                               MakeZooModel("rnnlm:layers=1,steps=2")->hash()));
}

TEST(CliZooTest, UnknownModelOrParameterIsOneErrorLine) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"inspect", "--model", "zoo:alexnet"},
        std::vector<std::string>{"zoo", "export", "nmt", "--param", "depth=3",
                                 "-o", "/dev/null"}}) {
    const CliResult r = Dplace(args);
    EXPECT_EQ(r.code, kExitBadInput);
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_THAT(r.err, StartsWith("dplace: error: "));
    EXPECT_THAT(r.err, AnyOf(HasSubstr("unknown zoo model \"alexnet\""),
                             HasSubstr("unknown parameter \"depth\"")));
  }
}

}  // namespace
}  // namespace dplace
