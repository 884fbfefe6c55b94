// Runs a benchmark suite (suite.h) and summarises it: per method and
// benchmark the median and spread of the best step time over seeds, the
// reduction against the best classical baseline, samples and wall time to
// reach the best, the gap to the lower bound; learning curves of the
// learned placers; the scale study's simulator and placer costs. Results go
// out as JSON ("dplace.bench-results", docs/formats.md) and as Markdown
// tables in the papers' layout.
#ifndef DPLACE_SUITE_BENCH_H_
#define DPLACE_SUITE_BENCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dplace/method/search.h"
#include "dplace/suite/suite.h"

namespace dplace {

// Median and range of some values.
struct Spread {
  int count = 0;
  double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
};
Spread SpreadOf(std::vector<double> values);

// A learning curve cut into at most `max_points` buckets of samples.
struct LearningCurve {
  std::vector<int64_t> samples;        // Samples so far at each bucket's end.
  std::vector<double> wall_seconds;    // Search time at each bucket's end.
  std::vector<double> mean_step_time;  // Feasible samples of the bucket;
                                       // NaN when none was feasible.
  std::vector<double> best_step_time;  // Best feasible so far; NaN: none.
  std::vector<double> oom_share;       // Infeasible share of the bucket.
};
LearningCurve CurveOf(const std::vector<SampleRecord>& history,
                      int max_points = 100);

// One method, one seed, one benchmark.
struct RunRecord {
  uint64_t seed = 1;
  bool placed = false;
  std::string error;  // When not placed.
  double step_time = 0;
  bool feasible = false;
  std::string infeasible;                  // Why, when placed but infeasible.
  std::vector<int64_t> peak_memory_bytes;  // Per device.
  double wall_seconds = 0;                 // Placing or searching.
  // The lower bound the method proved (PlaceResult::lower_bound); 0: none.
  double proven_bound = 0;
  // The bound of placements that keep every colocation group whole, when
  // this run's placement does (WholeGroupsLowerBound); 0: not one of
  // those.
  double whole_groups_bound = 0;
  // Which bound that is.
  std::string whole_groups_binding;
  // Learned placers.
  int64_t samples = 0;
  int64_t samples_to_best = 0;  // 1-based sample that found the best.
  double seconds_to_best = 0;   // Search time when it was found.
  int num_groups = 0;
  LearningCurve curve;
};

struct MethodResults {
  std::string method;
  std::string label;      // Its column (SuiteMethod::label); often `method`.
  bool searched = false;  // A search: its runs carry samples and curves.
  bool learned = false;   // A learned agent, for the "best learned" column.
  std::vector<std::string> options;
  int64_t budget_samples = 0;
  double budget_seconds = 0;
  std::vector<RunRecord> runs;
  // Over feasible runs.
  Spread step_time, samples_to_best, seconds_to_best;
  Spread wall_seconds;  // Over all runs.
  // 1 - median / best baseline (> 0: faster than every classical placer);
  // NaN when there is no feasible run or baseline.
  double reduction_vs_best_baseline = 0;
  // The bound its gap is over: the benchmark's, or the larger bound of
  // placements that keep colocation groups whole when every run's does.
  double lower_bound = 0;
  std::string lower_bound_binding;
  double vs_lower_bound = 0;  // median / lower_bound; NaN when none.
};

struct BenchmarkResults {
  std::string name, model, cluster;
  std::string graph_name, graph_hash;
  int ops = 0;
  int devices = 0;
  int gpus = 0;
  double lower_bound = 0;           // ProblemLowerBound (sim/lower_bound.h).
  std::string lower_bound_binding;  // Which bound binds.
  // The classical method with the fastest median (empty when none fits).
  std::string best_baseline;
  double best_baseline_step_time = 0;
  std::vector<MethodResults> methods;
};

struct TableResults {
  std::string title, source;
  std::vector<BenchmarkResults> benchmarks;
};

struct ScalePlacerCost {
  std::string method;
  bool placed = false;
  std::string error;
  double seconds = 0;
  double step_time = 0;
  bool feasible = false;
};

struct ScaleRow {
  std::string model;
  int ops = 0;
  int64_t edges = 0;
  double build_seconds = 0;     // Generating or reading the graph.
  double simulate_seconds = 0;  // Median of the repeats, one step.
  int simulate_repeats = 0;
  int64_t rss_bytes = 0;       // Resident memory with the graph loaded.
  int64_t peak_rss_bytes = 0;  // Process peak so far.
  std::vector<ScalePlacerCost> placers;
};

struct BenchResults {
  std::string suite, description;
  std::string command;      // How it was run, for the record.
  std::string started_utc;  // ISO 8601.
  // Over every session that ran it, when it was resumed.
  double wall_seconds = 0;
  // The suite that ran, after filters (SuiteDefinitionJson): a resumed run
  // must have the same.
  std::string definition;
  // Runs of the suite (a method on a benchmark with one seed, or a row of
  // the scale study): how many the suite has and how many these results
  // hold. complete: all of them.
  int runs_total = 0;
  int runs_done = 0;
  bool complete = true;
  // The commands that continued an unfinished run (bench --resume).
  std::vector<std::string> resumed_commands;
  int hardware_threads = 0;
  std::vector<uint64_t> seeds;
  std::vector<TableResults> tables;
  std::string scale_cluster;
  std::vector<ScaleRow> scale;
};

// One line of progress per run, e.g. "[3/20] nmt@k40x2 post seed 2".
using BenchProgress = std::function<void(const std::string& line)>;

struct BenchRunOptions {
  // One line per run as it starts. Default: none.
  BenchProgress progress;
  // A search's progress after each of its batches (learned placers, mcmc),
  // from the searching thread. Default: none.
  std::function<void(const SearchProgress&)> search_progress;
  // Path prefix of the search in flight's state: its checkpoint
  // (PREFIX.ckpt, every `search_checkpoint_every` updates; mcmc's at most
  // once a second), its log
  // (PREFIX.jsonl) and which run they belong to (PREFIX.run). A bench
  // killed mid-search continues that search from its last checkpoint when
  // the same run starts again (the search resumes exactly: same samples,
  // same result). The files are removed when the run ends. Default: none.
  std::string search_state;
  int search_checkpoint_every = 50;
  // Results of an earlier, unfinished run of the same suite, which
  // CheckResumable accepted: its runs are kept, not run again, and only the
  // others run. Not owned. Default: none (run everything).
  const BenchResults* resume = nullptr;
  // Called with the results so far after every run; the CLI writes them to
  // the results file, so that a bench killed at any point loses only the
  // run in flight. An error stops the suite and is returned. Default: none.
  std::function<Status(const BenchResults&)> checkpoint;
  // > 0: stop after this many runs (not counting the kept ones), leaving
  // the results unfinished (complete false). Default: 0 (run to the end).
  int max_runs = 0;
  // Asked before every run: true stops the suite there, as max_runs does
  // (SIGINT, SIGTERM: util/stop_signals.h); the run in flight ends first.
  // Default: none.
  std::function<bool()> stop_requested;
};

// Runs every table and the scale study of `suite`. Errors: unknown methods
// (before anything runs), models or clusters that do not load, options a
// method rejects, a kept benchmark whose graph changed since, a checkpoint
// that fails. A placer that cannot place is a result, not an error.
StatusOr<BenchResults> RunSuite(const Suite& suite, const std::string& command,
                                const BenchRunOptions& options);
StatusOr<BenchResults> RunSuite(const Suite& suite, const std::string& command,
                                const BenchProgress& progress = nullptr);

// Reads a "dplace.bench-results" document (BenchResultsToJson's) back; the
// spreads and comparisons are recomputed from the runs (SummariseBenchmark),
// so a file needs only what describes the runs. Errors name `source` and
// the JSON path of the bad field.
StatusOr<BenchResults> ParseBenchResults(const std::string& text,
                                         const std::string& source);

// OK when `previous` (read from `source`) is an unfinished or finished run
// of `suite` with the same definition, so RunSuite may continue it; a
// suite whose seed lists extend the file's (seeds 1, 2, 3 after a run with
// --seeds 1) continues it too, running the new seeds. Otherwise an error
// naming `source` and the first field that differs.
Status CheckResumable(const BenchResults& previous, const Suite& suite,
                      const std::string& source);

// Recomputes every method's spreads, vs_lower_bound and the comparison
// with the best classical baseline from the runs.
void SummariseBenchmark(BenchmarkResults* benchmark);

// The results as a "dplace.bench-results" JSON document.
std::string BenchResultsToJson(const BenchResults& results);
// The results as Markdown: one table per paper table in its layout (a row
// per benchmark, a column per method), then (`details`) a detail table per
// benchmark, then the scale study.
std::string BenchResultsToMarkdown(const BenchResults& results,
                                   bool details = true);

// The part of `results` on the benchmarks `models` names (benchmark name
// or model spec) and the columns `labels` names (a method's label: the
// plain "hierarchical", or one of its ablations such as "hierarchical
// (metis grouper)"); an empty list keeps all. Tables left without a
// benchmark or a column are dropped, and the scale study unless both lists
// are empty; the comparisons with the best classical baseline are
// recomputed among the columns kept. Errors: a name that matches nothing,
// listing what there is.
StatusOr<BenchResults> SelectResults(const BenchResults& results,
                                     const std::vector<std::string>& models,
                                     const std::vector<std::string>& labels);

}  // namespace dplace

#endif  // DPLACE_SUITE_BENCH_H_
