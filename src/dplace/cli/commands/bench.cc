#include "dplace/suite/bench.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <limits>
#include <optional>
#include <vector>

#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/io/file.h"
#include "dplace/report/html_report.h"
#include "dplace/suite/claims.h"
#include "dplace/suite/suite.h"
#include "dplace/util/format.h"
#include "dplace/util/stop_signals.h"

namespace dplace {
namespace {

// Splits at the commas outside parentheses: a label such as
// "hierarchical (metis, gcn placer)" is one item.
std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  int depth = 0;
  for (char c : text) {
    depth += (c == '(') - (c == ')');
    if (c == ',' && depth <= 0) {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  if (!item.empty()) items.push_back(item);
  return items;
}

// The results in --output that this run continues: none without --resume
// or when the file does not exist yet. Errors: a file that does not parse
// or belongs to another run; without --resume, an unfinished run there
// (overwriting it would lose its runs).
StatusOr<std::optional<BenchResults>> PreviousResults(const BenchFlags& flags,
                                                      const Suite& suite) {
  if (flags.output.empty()) {
    if (!flags.resume) return std::optional<BenchResults>();
    return InvalidArgumentError(
        "bench --resume needs -o FILE: the results "
        "file to continue");
  }
  if (access(flags.output.c_str(), F_OK) != 0) {
    return std::optional<BenchResults>();
  }
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(flags.output));
  StatusOr<BenchResults> previous = ParseBenchResults(text, flags.output);
  if (!flags.resume) {
    if (previous.ok() && !previous->complete) {
      return InvalidArgumentError(
          flags.output + ": holds an unfinished run (" +
          std::to_string(previous->runs_done) + " of " +
          std::to_string(previous->runs_total) +
          " runs); --resume continues it, or remove the file to start over");
    }
    return std::optional<BenchResults>();  // Overwritten, as before.
  }
  if (!previous.ok()) return previous.status();
  DPLACE_RETURN_IF_ERROR(CheckResumable(*previous, suite, flags.output));
  return std::optional<BenchResults>(std::move(previous).value());
}

// The claims whose table and benchmark `results` hold, and with
// `method_too` whose method too: a reduced run checks what it ran, and
// says "not run" for the methods it left out; a view (--show, --claims
// with filters) keeps the claims about the columns it shows.
std::vector<SuiteClaim> ClaimsIn(const std::vector<SuiteClaim>& claims,
                                 const BenchResults& results, bool method_too) {
  std::vector<SuiteClaim> out;
  for (const SuiteClaim& claim : claims) {
    bool there = false;
    for (const TableResults& t : results.tables) {
      for (const BenchmarkResults& b : t.benchmarks) {
        if (t.title != claim.table || b.name != claim.benchmark) continue;
        there = there || !method_too ||
                std::any_of(b.methods.begin(), b.methods.end(),
                            [&](const MethodResults& m) {
                              return m.label == claim.method;
                            });
      }
    }
    if (there) out.push_back(claim);
  }
  return out;
}

Status WriteOrPrint(const std::string& path, const std::string& text,
                    std::ostream& out) {
  if (path.empty()) {
    out << text;
    return Status::Ok();
  }
  return WriteTextFile(path, text);
}

// dplace bench --claims RESULTS or --show RESULTS: the claims sections of
// the results' suite (and with --show the tables first), from the file
// alone: every claim (those the file lacks "not run"), or with --models or
// --methods the tables of those benchmarks and columns and the claims about
// them. Claims are checked against the whole file, so a comparison with a
// column left out still counts.
int PrintResults(const BenchFlags& flags, const std::vector<Suite>& suites,
                 std::ostream& out, std::ostream& err) {
  const bool show = !flags.show.empty();
  const std::string& path = show ? flags.show : flags.claims;
  StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return Fail(err, text.status());
  StatusOr<BenchResults> results = ParseBenchResults(*text, path);
  if (!results.ok()) return Fail(err, results.status());
  StatusOr<BenchResults> selected =
      SelectResults(*results, flags.models, SplitList(flags.methods));
  if (!selected.ok()) return Fail(err, selected.status().WithPrefix(path));
  StatusOr<Suite> suite = FindSuite(suites, results->suite);
  if (!suite.ok() && !show) {
    return Fail(err,
                suite.status().WithPrefix(path + ": suite " + results->suite));
  }
  if (!show && suite->claims.empty()) {
    return Fail(err, InvalidArgumentError(
                         path + ": suite " + suite->name +
                         " has no claims (see \"claims\" in docs/formats.md)"));
  }
  std::string markdown =
      show ? BenchResultsToMarkdown(*selected, !flags.no_details) : "";
  if (suite.ok()) {
    const bool everything = flags.models.empty() && flags.methods.empty();
    markdown += ClaimsToMarkdown(
        CheckClaims(everything ? suite->claims
                               : ClaimsIn(suite->claims, *selected,
                                          /*method_too=*/true),
                    *results));
  }
  Status s = WriteOrPrint(flags.markdown, markdown, out);
  if (!s.ok()) return Fail(err, s);
  return kExitOk;
}

// dplace bench: runs a suite, writes its JSON, Markdown and HTML report.
int Bench(BenchFlags flags, const std::string& command, std::ostream& out,
          std::ostream& err) {
  StatusOr<std::vector<Suite>> suites = LoadSuites(flags.suites);
  if (!suites.ok()) return Fail(err, suites.status());
  if (flags.list ||
      (flags.suite.empty() && flags.claims.empty() && flags.show.empty())) {
    if (!flags.list) {
      return Fail(err, InvalidArgumentError("bench needs --suite NAME (or "
                                            "--list, --show, --claims)"));
    }
    size_t width = 0;  // The longest name, plus two spaces.
    for (const Suite& s : *suites) width = std::max(width, s.name.size() + 2);
    for (const Suite& s : *suites) {
      out << PadRight(s.name, width) << s.description << "\n";
    }
    return kExitOk;
  }
  if (flags.no_details && flags.show.empty()) {
    return Fail(err, InvalidArgumentError("--no-details is for --show"));
  }
  if (!flags.claims.empty() || !flags.show.empty()) {
    if (!flags.claims.empty() && !flags.show.empty()) {
      return Fail(err, InvalidArgumentError(
                           "--show prints the claims too: give --show or "
                           "--claims, not both"));
    }
    if (!flags.suite.empty() || flags.resume || !flags.output.empty()) {
      return Fail(err, InvalidArgumentError(
                           "--show and --claims read a results file and run "
                           "nothing: without --suite, --resume and -o"));
    }
    StatusOr<std::vector<OutputLock>> claims =
        ClaimOutputs({{"--markdown", flags.markdown}});
    if (!claims.ok()) return Fail(err, claims.status());
    return PrintResults(flags, *suites, out, err);
  }
  StatusOr<Suite> suite = FindSuite(*suites, flags.suite);
  if (!suite.ok()) return Fail(err, suite.status());
  StatusOr<std::vector<OutputLock>> claims =
      ClaimOutputs({{"-o", flags.output},
                    {"--markdown", flags.markdown},
                    {"--report", flags.report}});
  if (!claims.ok()) return Fail(err, claims.status());
  flags.filter.methods = SplitList(flags.methods);
  flags.filter.models = flags.models;
  StatusOr<Suite> filtered = FilterSuite(*suite, flags.filter);
  if (!filtered.ok()) return Fail(err, filtered.status());
  StatusOr<std::optional<BenchResults>> previous =
      PreviousResults(flags, *filtered);
  if (!previous.ok()) return Fail(err, previous.status());
  BenchRunOptions options;
  // On a terminal, the search in flight shows its progress on a line of its
  // own, rewritten after each batch and ended when the next run starts.
  bool search_line = false;
  options.progress = [&err, &search_line](const std::string& line) {
    if (search_line) err << "\n";
    search_line = false;
    err << "dplace: bench " << line << "\n";
  };
  if (&err == &std::cerr && ::isatty(STDERR_FILENO)) {
    options.search_progress = [&err, &search_line](const SearchProgress& p) {
      PrintSearchProgress(p, err);
      search_line = true;
    };
  }
  if (previous->has_value()) {
    options.resume = &**previous;
    err << "dplace: bench continues " << flags.output << ": "
        << (*previous)->runs_done << " of " << (*previous)->runs_total
        << " runs done\n";
  }
  if (!flags.output.empty()) {
    options.search_state = flags.output + ".search";
    options.checkpoint = [&flags](const BenchResults& so_far) {
      return WriteTextFile(flags.output, BenchResultsToJson(so_far));
    };
  }
  options.max_runs = flags.max_runs;
  // SIGINT and SIGTERM stop the suite after the run in flight.
  const StopSignals stop;
  options.stop_requested = stop.Request();
  StatusOr<BenchResults> results = RunSuite(*filtered, command, options);
  if (search_line) err << "\n";
  if (!results.ok()) return Fail(err, results.status());
  const std::string json = BenchResultsToJson(*results);
  const std::string markdown =
      BenchResultsToMarkdown(*results) +
      ClaimsToMarkdown(CheckClaims(
          ClaimsIn(filtered->claims, *results, /*method_too=*/false),
          *results));
  if (!flags.output.empty()) {
    Status s = WriteTextFile(flags.output, json);
    if (!s.ok()) return Fail(err, s);
  }
  if (!flags.markdown.empty()) {
    Status s = WriteTextFile(flags.markdown, markdown);
    if (!s.ok()) return Fail(err, s);
  } else {
    out << markdown;
  }
  if (!flags.report.empty()) {
    StatusOr<std::string> html = BenchReportHtml(json, "results");
    if (!html.ok()) return Fail(err, html.status());
    Status s = WriteTextFile(flags.report, *html);
    if (!s.ok()) return Fail(err, s);
  }
  out << "suite " << results->suite << ": "
      << Format("%.1f", results->wall_seconds) << " s";
  if (!results->complete) {
    out << "; stopped after " << results->runs_done << " of "
        << results->runs_total << " runs (--resume continues)";
  }
  if (!flags.output.empty()) out << "; results: " << flags.output;
  if (!flags.markdown.empty()) out << "; markdown: " << flags.markdown;
  if (!flags.report.empty()) out << "; report: " << flags.report;
  out << "\n";
  // A signal after the last run stopped nothing.
  if (stop.signal() == 0 || results->complete) return kExitOk;
  err << "dplace: " << StopSignals::Name(stop.signal())
      << ": bench stopped after the run in flight, " << results->runs_done
      << " of " << results->runs_total << " runs done; "
      << (flags.output.empty()
              ? std::string("no -o FILE, so it cannot be resumed")
              : "to continue it: " + command +
                    (flags.resume ? "" : " --resume"))
      << "\n";
  return 128 + stop.signal();
}

}  // namespace

CLI::App* AddBenchCommand(CLI::App* parent, BenchFlags* flags) {
  auto* bench = parent->add_subcommand(
      "bench",
      "run a benchmark suite (models x clusters x methods x budgets x "
      "seeds) and print its tables in the papers' layout; see docs/bench.md");
  bench->add_option("--suite", flags->suite,
                    "suite name: smoke, paper, scale (see --list)");
  bench->add_flag("--list", flags->list, "list the suites");
  bench->add_option(
      "--claims", flags->claims,
      "print the claims sections of a results file (-o of an earlier "
      "bench; --markdown FILE writes them there): each headline claim of "
      "the papers its suite checks, the paper's figure, dplace's and "
      "whether the claim holds; runs nothing. With --models and --methods, "
      "the claims about those benchmarks and columns");
  bench->add_option(
      "--show", flags->show,
      "print the tables and claims of a results file (-o of an earlier "
      "bench; --markdown FILE writes them there), only the benchmarks of "
      "--models and the columns of --methods (by their titles: "
      "hierarchical is the plain planner, \"hierarchical (metis grouper)\" "
      "one ablation); runs nothing");
  bench->add_flag("--no-details", flags->no_details,
                  "with --show: the papers' tables only, not the detail "
                  "table of each benchmark");
  bench->add_option(
      "--suites", flags->suites,
      "suites JSON file (default: src/dplace/suite/suites.json, built "
      "into dplace)");
  bench->add_option("-o,--output", flags->output,
                    "write the results as JSON (dplace.bench-results)");
  bench->add_option("--markdown", flags->markdown,
                    "write the Markdown tables to this file instead of "
                    "stdout");
  bench->add_option("--report", flags->report,
                    "write the HTML report of the results");
  bench->add_option("--methods", flags->methods,
                    "only these methods (comma-separated names; a name keeps "
                    "every labelled variant of the method, e.g. "
                    "hierarchical its ablations)");
  bench->add_option("--models", flags->models,
                    "only these benchmarks, by name (nmt-4@k40x4) or model "
                    "spec (zoo:nmt:layers=4); several after one --models, "
                    "or repeat it");
  bench
      ->add_option("--budget-samples", flags->filter.budget_samples,
                   "searches (learned placers, mcmc): samples per search, "
                   "replacing the suite's budgets")
      ->check(WholeNumber(1, std::numeric_limits<int64_t>::max()));
  bench
      ->add_option("--budget-scale", flags->filter.budget_scale,
                   "searches: multiply the suite's sample budgets")
      ->check(NumberAbove(0));
  bench
      ->add_option("--budget-seconds", flags->filter.budget_seconds,
                   "searches: wall seconds per search (with the "
                   "sample budget, whichever ends first)")
      ->check(NumberAbove(0));
  bench
      ->add_option("--seeds", flags->filter.max_seeds,
                   "only the first N seeds of each method")
      ->check(WholeNumber(1, std::numeric_limits<int>::max()));
  bench->add_flag(
      "--resume", flags->resume,
      "continue the run whose results are in -o FILE: its finished runs are "
      "kept, the others run (the file is rewritten after every run, so a "
      "killed bench loses only the run in flight); the suite, filters and "
      "budgets must be the same, except that more --seeds continue a run of "
      "fewer. Without the file, starts it. Without "
      "--resume, bench refuses to overwrite an unfinished run");
  bench
      ->add_option("--max-runs", flags->max_runs,
                   "stop after this many runs, leaving -o FILE unfinished "
                   "for --resume (runs the suite in parts)")
      ->check(WholeNumber(1, std::numeric_limits<int>::max()));
  return bench;
}

int RunBench(const BenchFlags& flags, std::ostream& out, std::ostream& err) {
  return Bench(flags, flags.command, out, err);
}

}  // namespace dplace
