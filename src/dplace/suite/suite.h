// Benchmark suites: which models, on which clusters, with which methods,
// budgets and seeds `dplace bench --suite NAME` runs. Suites are data, read
// from a JSON file (src/dplace/suite/suites.json, compiled into dplace;
// `--suites FILE` reads another); docs/formats.md describes the format and
// docs/bench.md the suites.
#ifndef DPLACE_SUITE_SUITE_H_
#define DPLACE_SUITE_SUITE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dplace/util/status.h"

namespace dplace {

// One method of a table: a placer or learned placer with its settings.
struct SuiteMethod {
  std::string method;  // Registered name, e.g. "post".
  // The method's column in its table, unique there, so that one method can
  // run with several settings (an ablation). Default: `method`.
  std::string label;
  std::vector<std::string> options;  // key=value, as --option takes them.
  // Searches: samples per search (0 with budget_seconds 0: the
  // method's own budget) and wall seconds per search (0: none).
  int64_t budget_samples = 0;
  double budget_seconds = 0;
  // Seeds to run; empty: the suite's seeds for searches, the first
  // of them for classical placers (deterministic but for `random`).
  std::vector<uint64_t> seeds;
};

// A model on a cluster.
struct SuiteBenchmark {
  std::string name;     // Unique in its table, e.g. "nmt-4@k40x4".
  std::string model;    // Model spec: zoo:..., random:..., a file.
  std::string cluster;  // Preset name or cluster JSON.
  // Extra options of a method on this benchmark only, by method name
  // (e.g. ColocRL reads Inception-V3 as METIS groups).
  std::map<std::string, std::vector<std::string>> method_options;
};

// One table of a paper: every method on every benchmark.
struct SuiteTable {
  std::string title;   // "Hierarchical Planner, Table 1".
  std::string source;  // What it reproduces, one line.
  std::vector<SuiteBenchmark> benchmarks;
  std::vector<SuiteMethod> methods;
};

// How placer and simulator cost grow with graph size.
struct ScaleStudy {
  std::string cluster;
  std::vector<std::string> models;   // Increasing size, for the RSS column.
  std::vector<std::string> methods;  // Classical placers to time.
  int simulate_repeats = 3;          // Median of this many simulations.
};

// A headline claim of a paper, checked against a suite's results
// (claims.h): a method's step time (or samples to its best) against the
// fastest of some reference methods on one benchmark of one table.
struct SuiteClaim {
  std::string paper;  // "Hierarchical Planner (Mirhoseini et al., 2018)".
  std::string claim;  // What the paper says, in one sentence.
  std::string table;  // Title of the suite's table.
  std::string benchmark;
  std::string method;               // A label of the table's methods.
  std::vector<std::string> versus;  // Labels; the fastest is the reference.
  // "step_time" (Default), "samples_to_best" (how soon a search found its
  // own best) or "samples_to_common" (how soon it reached the slower of the
  // compared searches' bests on the same seed, read from their curves), each
  // the median over seeds.
  std::string measure = "step_time";
  std::string paper_figure;  // The paper's numbers, as it gives them.
  // The claim holds when dplace's reduction (1 - method / reference) is at
  // least min_reduction and at most max_reduction. Default: > 0.1%, no
  // upper end (the method is faster).
  double min_reduction = 0.001;
  double max_reduction = 1e300;
};

struct Suite {
  std::string name;
  std::string description;
  std::vector<uint64_t> seeds;  // Default: {1}.
  std::vector<SuiteTable> tables;
  ScaleStudy scale;  // Empty models: none.
  // The papers' claims these tables can check; not part of what runs.
  std::vector<SuiteClaim> claims;
};

// The suites of src/dplace/suite/suites.json as compiled into dplace.
const std::string& BuiltinSuitesJson();

// Parses a suites file ("format": "dplace.suites"). Errors name `source`
// and the JSON path of the bad field. Method names are checked when a suite
// runs (CheckSuiteMethods), so a file may name methods this build lacks.
StatusOr<std::vector<Suite>> ParseSuites(const std::string& text,
                                         const std::string& source);
// Reads a suites file, or the built-in suites when `path` is empty.
StatusOr<std::vector<Suite>> LoadSuites(const std::string& path);
// The suite called `name`; unknown names are errors listing the known ones.
StatusOr<Suite> FindSuite(const std::vector<Suite>& suites,
                          const std::string& name);

// What to run of a suite, so a reduced run fits a small machine.
struct SuiteFilter {
  // Only these methods / benchmarks (benchmark name or model spec); empty:
  // all. Names matching nothing are errors.
  std::vector<std::string> methods;
  std::vector<std::string> models;
  // Searches: replace every budget with this many samples (> 0), or
  // scale the suite's budgets by this factor (at least 1 sample).
  int64_t budget_samples = 0;
  double budget_scale = 1;
  double budget_seconds = 0;  // > 0: replaces the seconds budget.
  int max_seeds = 0;          // > 0: only the first this many seeds.
};

// Applies `filter` to `suite`; tables left without a benchmark or method
// are dropped. Errors: a filter name that matches nothing.
StatusOr<Suite> FilterSuite(const Suite& suite, const SuiteFilter& filter);

// What a run of `suite` is, as JSON: every table's title, benchmarks and
// methods with their options, budgets and seeds, the suite's seeds and the
// scale study, but not the prose (description, sources). Two runs with the
// same definition run the same things, so a results file written by one can
// be continued by the other (bench.h, CheckResumable).
std::string SuiteDefinitionJson(const Suite& suite);

// OK when every method of `suite` is registered; otherwise names the first
// unknown one, its table, and every known method.
Status CheckSuiteMethods(const Suite& suite);

}  // namespace dplace

#endif  // DPLACE_SUITE_SUITE_H_
