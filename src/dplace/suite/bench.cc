#include "dplace/suite/bench.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/method/run.h"
#include "dplace/model/load_model.h"
#include "dplace/report/markdown.h"
#include "dplace/search/search_log.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

using nlohmann::json;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int64_t CurrentRssBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * sysconf(_SC_PAGESIZE);
}

// The files of the search in flight (BenchRunOptions::search_state): its
// checkpoint, its log and which run they belong to.
struct InFlightFiles {
  explicit InFlightFiles(const std::string& prefix)
      : checkpoint(prefix + ".ckpt"),
        log(prefix + ".jsonl"),
        run(prefix + ".run") {}
  void Remove() const {
    for (const std::string* f : {&checkpoint, &log, &run}) {
      std::remove(f->c_str());
    }
  }
  std::string checkpoint, log, run;
};

// Points `search` at the in-flight files. When they belong to `run_id` (a
// killed bench's search of the same run), the search resumes from them and
// this returns true; files of another run are removed first.
StatusOr<bool> UseInFlightFiles(const InFlightFiles& files,
                                const std::string& run_id, int checkpoint_every,
                                SearchOptions* search) {
  StatusOr<std::string> owner = ReadTextFile(files.run);
  const bool resume =
      owner.ok() && *owner == run_id && std::ifstream(files.checkpoint).good();
  if (!resume) {
    files.Remove();
    DPLACE_RETURN_IF_ERROR(WriteTextFile(files.run, run_id));
  }
  search->checkpoint_path = files.checkpoint;
  search->checkpoint_every = checkpoint_every;
  search->log_path = files.log;
  if (resume) search->resume_path = files.checkpoint;
  return resume;
}

// A resumed search's history holds only the samples after its checkpoint;
// its log holds them all.
Status TakeWholeHistory(const std::string& log, SearchTrace* trace) {
  DPLACE_ASSIGN_OR_RETURN(std::vector<SampleRecord> history,
                          ReadSearchLog(log));
  if (static_cast<int64_t>(history.size()) != trace->samples) {
    return InternalError(log + " holds " + std::to_string(history.size()) +
                         " samples, the search " +
                         std::to_string(trace->samples));
  }
  trace->history = std::move(history);
  return Status::Ok();
}

int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kB.
}

RunRecord RecordOf(uint64_t seed, const Cluster& cluster, const MethodRun& r) {
  RunRecord rec;
  rec.seed = seed;
  rec.placed = r.placed;
  rec.wall_seconds = r.wall_seconds;
  if (!r.placed) {
    rec.error = r.error;
    return rec;
  }
  rec.step_time = r.sim.step_time;
  rec.feasible = r.sim.feasible;
  rec.infeasible = DescribeInfeasibility(cluster, r.sim);
  rec.peak_memory_bytes = r.sim.device_peak_bytes;
  rec.proven_bound = r.sim.bounds.proven;
  const StepLowerBound whole = WholeGroupsLowerBound(r.sim.bounds);
  rec.whole_groups_bound = whole.seconds;
  rec.whole_groups_binding = whole.binding;
  if (r.searched) {
    rec.samples = r.search.samples;
    rec.num_groups = r.search.num_groups;
    for (const SampleRecord& s : r.search.history) {
      if (s.feasible && s.step_time == r.search.best_step_time) {
        rec.samples_to_best = s.index + 1;
        rec.seconds_to_best = s.wall_seconds;
        break;
      }
    }
    rec.curve = CurveOf(r.search.history);
  }
  return rec;
}

std::vector<uint64_t> SeedsOf(const Suite& suite, const SuiteMethod& m) {
  if (!m.seeds.empty()) return m.seeds;
  if (IsSearchMethod(m.method)) return suite.seeds;
  return {suite.seeds.front()};
}

StatusOr<MethodOptions> OptionsOf(const SuiteMethod& m,
                                  const SuiteBenchmark& b) {
  std::vector<std::string> items = m.options;
  auto it = b.method_options.find(m.method);
  if (it != b.method_options.end()) {
    items.insert(items.end(), it->second.begin(), it->second.end());
  }
  StatusOr<MethodOptions> options = MethodOptions::Parse(items);
  if (!options.ok()) {
    return options.status().WithPrefix(b.name + ", method " + m.method);
  }
  return options;
}

// What RunSuite needs of one loaded benchmark. Not movable: the problem
// points into it.
struct LoadedBenchmark {
  LoadedBenchmark(LoadedModel m, Cluster c, const ProfileTable& profile)
      : model(std::move(m)),
        cluster(std::move(c)),
        cost(model.graph, cluster, profile),
        problem(ProblemOf(model, cost, /*seed=*/1)) {}  // Runs set theirs.
  LoadedBenchmark(const LoadedBenchmark&) = delete;
  LoadedBenchmark& operator=(const LoadedBenchmark&) = delete;
  LoadedModel model;
  Cluster cluster;
  CostModel cost;
  PlacementProblem problem;
};

StatusOr<std::unique_ptr<LoadedBenchmark>> Load(const std::string& model,
                                                const std::string& cluster) {
  DPLACE_ASSIGN_OR_RETURN(LoadedModel m, LoadModel(model));
  DPLACE_ASSIGN_OR_RETURN(Cluster c, ClusterFor(m, cluster));
  DPLACE_ASSIGN_OR_RETURN(ProfileTable profile, ProfileFor(m, ""));
  return std::make_unique<LoadedBenchmark>(std::move(m), std::move(c), profile);
}

int CountRuns(const Suite& suite) {
  int runs = 0;
  for (const SuiteTable& t : suite.tables) {
    for (const SuiteMethod& m : t.methods) {
      runs += static_cast<int>(t.benchmarks.size() * SeedsOf(suite, m).size());
    }
  }
  return runs + static_cast<int>(suite.scale.models.size());
}

// Runs that `kept` holds.
int KeptRuns(const BenchResults& kept) {
  int runs = static_cast<int>(kept.scale.size());
  for (const TableResults& t : kept.tables) {
    for (const BenchmarkResults& b : t.benchmarks) {
      for (const MethodResults& m : b.methods) {
        runs += static_cast<int>(m.runs.size());
      }
    }
  }
  return runs;
}

MethodResults MethodResultsOf(const SuiteMethod& m, const SuiteBenchmark& b) {
  MethodResults mr;
  mr.method = m.method;
  mr.label = m.label.empty() ? m.method : m.label;
  mr.searched = IsSearchMethod(m.method);
  mr.learned = IsLearnedMethod(m.method);
  mr.options = m.options;
  auto extra = b.method_options.find(m.method);
  if (extra != b.method_options.end()) {
    mr.options.insert(mr.options.end(), extra->second.begin(),
                      extra->second.end());
  }
  mr.budget_samples = m.budget_samples;
  mr.budget_seconds = m.budget_seconds;
  return mr;
}

// Fills what a benchmark's results say about the benchmark itself.
void DescribeBenchmark(const SuiteBenchmark& b, const LoadedBenchmark& lb,
                       BenchmarkResults* br) {
  br->name = b.name;
  br->model = b.model;
  br->cluster = b.cluster;
  br->graph_name = lb.model.graph.name();
  br->graph_hash = lb.model.graph.hash();
  br->ops = lb.model.graph.num_ops();
  br->devices = lb.cluster.num_devices();
  br->gpus =
      static_cast<int>(lb.cluster.DevicesOfKind(DeviceKind::kGpu).size());
  const StepLowerBound bound = ProblemLowerBound(Simulator(lb.cost));
  br->lower_bound = bound.seconds;
  br->lower_bound_binding = bound.binding;
}

StatusOr<ScaleRow> RunScaleRow(const ScaleStudy& scale,
                               const std::string& model);

// Runs a suite into `results`, run by run, checkpointing after each. The
// results start as a copy of an earlier results file's (options.resume),
// whose runs are kept: the runner adds the runs they lack, in the suite's
// order, so that a checkpoint always holds every finished run.
class SuiteRunner {
 public:
  SuiteRunner(const Suite& suite, const BenchRunOptions& options,
              BenchResults* results)
      : suite_(suite), options_(options), results_(*results) {}

  Status Run() {
    for (size_t t = 0; t < suite_.tables.size() && !Exhausted(); ++t) {
      const SuiteTable& table = suite_.tables[t];
      if (t == results_.tables.size()) {
        TableResults& out = results_.tables.emplace_back();
        out.title = table.title;
        out.source = table.source;
      }
      for (size_t b = 0; b < table.benchmarks.size() && !Exhausted(); ++b) {
        DPLACE_RETURN_IF_ERROR(RunBenchmark(t, b));
      }
    }
    results_.scale_cluster = suite_.scale.cluster;
    for (size_t i = results_.scale.size();
         i < suite_.scale.models.size() && !Exhausted(); ++i) {
      const std::string& model = suite_.scale.models[i];
      StartRun("scale " + model);
      StatusOr<ScaleRow> row = RunScaleRow(suite_.scale, model);
      if (!row.ok()) return row.status().WithPrefix("scale " + model);
      results_.scale.push_back(std::move(row).value());
      DPLACE_RETURN_IF_ERROR(FinishRun());
    }
    results_.wall_seconds = kept_seconds_ + SecondsSince(start_);
    results_.complete = results_.runs_done == results_.runs_total;
    return Status::Ok();
  }

 private:
  // Whether this session has run options.max_runs runs, or was asked to
  // stop.
  bool Exhausted() const {
    return (options_.max_runs > 0 && new_runs_ >= options_.max_runs) ||
           (options_.stop_requested && options_.stop_requested());
  }

  // Whether `br` holds every run of `table` on its benchmark.
  bool HoldsEveryRun(const SuiteTable& table,
                     const BenchmarkResults& br) const {
    if (br.methods.size() != table.methods.size()) return false;
    for (size_t k = 0; k < table.methods.size(); ++k) {
      if (br.methods[k].runs.size() !=
          SeedsOf(suite_, table.methods[k]).size()) {
        return false;
      }
    }
    return true;
  }

  Status RunBenchmark(size_t t, size_t b) {
    const SuiteTable& table = suite_.tables[t];
    const SuiteBenchmark& bench = table.benchmarks[b];
    TableResults& out = results_.tables[t];
    const bool kept = b < out.benchmarks.size();
    if (kept && HoldsEveryRun(table, out.benchmarks[b])) return Status::Ok();
    StatusOr<std::unique_ptr<LoadedBenchmark>> loaded =
        Load(bench.model, bench.cluster);
    if (!loaded.ok()) return loaded.status().WithPrefix(bench.name);
    LoadedBenchmark& lb = **loaded;
    BenchmarkResults described;
    DescribeBenchmark(bench, lb, &described);
    if (!kept) out.benchmarks.push_back(described);
    BenchmarkResults& br = out.benchmarks[b];
    if (br.graph_hash != described.graph_hash) {
      return InvalidArgumentError(
          bench.name +
          ": the graph differs from the one of the kept runs (hash " +
          described.graph_hash + ", kept " + br.graph_hash +
          "): the model changed since they ran; start a new results file");
    }
    for (size_t k = 0; k < table.methods.size() && !Exhausted(); ++k) {
      const SuiteMethod& m = table.methods[k];
      DPLACE_ASSIGN_OR_RETURN(MethodOptions options, OptionsOf(m, bench));
      if (k == br.methods.size()) {
        br.methods.push_back(MethodResultsOf(m, bench));
      }
      MethodResults& mr = br.methods[k];
      const std::vector<uint64_t> seeds = SeedsOf(suite_, m);
      for (size_t i = mr.runs.size(); i < seeds.size() && !Exhausted(); ++i) {
        lb.problem.seed = seeds[i];
        MethodRunOptions run_options;
        SearchOptions& search = run_options.context.search;
        search.budget.samples = m.budget_samples;
        search.budget.seconds = m.budget_seconds;
        search.progress = options_.search_progress;
        const std::string what =
            bench.name + " " + mr.label + " seed " + std::to_string(seeds[i]);
        const InFlightFiles in_flight(options_.search_state);
        const bool keep_state = mr.searched && !options_.search_state.empty();
        bool resumed = false;
        if (keep_state) {
          const json id = {{"table", table.title},
                           {"benchmark", bench.name},
                           {"graph_hash", br.graph_hash},
                           {"cluster", bench.cluster},
                           {"label", mr.label},
                           {"method", m.method},
                           {"options", m.options},
                           {"budget_samples", m.budget_samples},
                           {"budget_seconds", m.budget_seconds},
                           {"seed", seeds[i]}};
          DPLACE_ASSIGN_OR_RETURN(
              resumed,
              UseInFlightFiles(in_flight, id.dump(),
                               options_.search_checkpoint_every, &search));
          search.checkpoint_min_seconds = DefaultCheckpointSeconds(m.method);
        }
        StartRun(what + (resumed ? " (continues its search from the last "
                                   "checkpoint)"
                                 : ""));
        StatusOr<MethodRun> run =
            RunMethod(m.method, options, lb.problem, run_options);
        if (!run.ok()) return run.status().WithPrefix(bench.name);
        if (run->search.first_sample_of_this_run > 0) {
          Status s = TakeWholeHistory(in_flight.log, &run->search);
          if (!s.ok()) return s.WithPrefix(bench.name);
        }
        if (mr.searched && mr.budget_samples == 0 && mr.budget_seconds == 0) {
          mr.budget_samples = run->search.samples;
        }
        mr.runs.push_back(RecordOf(seeds[i], lb.cluster, *run));
        SummariseBenchmark(&br);
        DPLACE_RETURN_IF_ERROR(FinishRun());
        if (keep_state) in_flight.Remove();
      }
    }
    return Status::Ok();
  }

  void StartRun(const std::string& what) const {
    if (!options_.progress) return;
    options_.progress("[" + std::to_string(results_.runs_done + 1) + "/" +
                      std::to_string(results_.runs_total) + "] " + what);
  }

  Status FinishRun() {
    ++new_runs_;
    ++results_.runs_done;
    results_.wall_seconds = kept_seconds_ + SecondsSince(start_);
    results_.complete = results_.runs_done == results_.runs_total;
    if (!options_.checkpoint) return Status::Ok();
    return options_.checkpoint(results_);
  }

  const Suite& suite_;
  const BenchRunOptions& options_;
  BenchResults& results_;
  const std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
  const double kept_seconds_ = results_.wall_seconds;
  int new_runs_ = 0;
};

StatusOr<ScaleRow> RunScaleRow(const ScaleStudy& scale,
                               const std::string& model) {
  ScaleRow row;
  row.model = model;
  const auto start = std::chrono::steady_clock::now();
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<LoadedBenchmark> loaded,
                          Load(model, scale.cluster));
  row.build_seconds = SecondsSince(start);
  LoadedBenchmark& lb = *loaded;
  row.ops = lb.model.graph.num_ops();
  row.edges = lb.model.graph.num_edges();
  // The simulated placement: round-robin over the GPUs (CPU-only ops on the
  // CPU), the same work whatever placers are timed.
  DPLACE_ASSIGN_OR_RETURN(
      MethodRun reference,
      RunMethod("round-robin", {}, lb.problem, MethodRunOptions{}));
  if (reference.placed) {
    Simulator simulator(lb.cost);
    std::vector<double> times;
    for (int i = 0; i < scale.simulate_repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      StatusOr<SimResult> sim = simulator.Simulate(reference.placement);
      times.push_back(SecondsSince(t0));
      if (!sim.ok()) return sim.status();
    }
    row.simulate_seconds = SpreadOf(times).median;
    row.simulate_repeats = scale.simulate_repeats;
  }
  for (const std::string& method : scale.methods) {
    DPLACE_ASSIGN_OR_RETURN(MethodRun run,
                            RunMethod(method, {}, lb.problem, {}));
    ScalePlacerCost cost;
    cost.method = method;
    cost.placed = run.placed;
    cost.error = run.error;
    cost.seconds = run.wall_seconds;
    cost.step_time = run.sim.step_time;
    cost.feasible = run.placed && run.sim.feasible;
    row.placers.push_back(cost);
  }
  row.rss_bytes = CurrentRssBytes();
  row.peak_rss_bytes = PeakRssBytes();
  return row;
}

}  // namespace

StatusOr<BenchResults> RunSuite(const Suite& suite, const std::string& command,
                                const BenchRunOptions& options) {
  DPLACE_RETURN_IF_ERROR(CheckSuiteMethods(suite));
  BenchResults results;
  results.command = command;
  results.started_utc = UtcNow();
  if (options.resume) {
    results = *options.resume;
    results.resumed_commands.push_back(command);
    results.runs_done = KeptRuns(*options.resume);
  }
  results.suite = suite.name;
  results.description = suite.description;
  results.hardware_threads =
      static_cast<int>(std::thread::hardware_concurrency());
  results.seeds = suite.seeds;
  results.definition = SuiteDefinitionJson(suite);
  results.runs_total = CountRuns(suite);
  SuiteRunner runner(suite, options, &results);
  DPLACE_RETURN_IF_ERROR(runner.Run());
  return results;
}

StatusOr<BenchResults> RunSuite(const Suite& suite, const std::string& command,
                                const BenchProgress& progress) {
  BenchRunOptions options;
  options.progress = progress;
  return RunSuite(suite, command, options);
}

}  // namespace dplace
