#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "dplace/method/run.h"
#include "dplace/model/load_model.h"
#include "dplace/sim/lower_bound.h"
#ifdef DPLACE_WITH_MPI
#include "dplace/method/mpi_run.h"
#endif
#include "dplace/cli/cli.h"
#include "dplace/cli/cli_util.h"
#include "dplace/cli/commands/commands.h"
#include "dplace/cli/commands/exec_util.h"
#include "dplace/cli/commands/place_output.h"
#include "dplace/cost/cost_model.h"
#include "dplace/env/environment.h"
#include "dplace/exec/measured_environment.h"
#include "dplace/graph/modules.h"
#include "dplace/io/chrome_trace.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/file.h"
#include "dplace/io/placement_json.h"
#include "dplace/io/profile_json.h"
#include "dplace/method/method.h"
#include "dplace/report/device_map.h"
#include "dplace/report/html_report.h"
#include "dplace/report/module_tree.h"
#include "dplace/search/mcmc.h"
#include "dplace/search/search_log.h"
#include "dplace/sim/simulator.h"
#include "dplace/util/format.h"
#include "dplace/util/stop_signals.h"

namespace dplace {
namespace {

int PlaceList(std::ostream& out) {
  size_t width = 0;  // The longest name, plus two spaces.
  for (const MethodEntry* e : Methods())
    width = std::max(width, e->name.size());
  width += 2;
  for (const MethodEntry* e : Methods()) {
    const MethodTraits traits = TraitsOf(*e);
    out << PadRight(e->name, width)
        << (traits.learns     ? "(learned) "
            : traits.searches ? "(search) "
                              : "")
        << e->description << "\n";
  }
  return kExitOk;
}

// Whether any flag only a search reads was given.
bool HasSearchFlags(const PlaceFlags& place) {
  return place.budget_samples >= 0 || place.budget_seconds >= 0 ||
         !place.log.empty() || !place.checkpoint.empty() ||
         place.checkpoint_seconds >= 0 || !place.resume.empty();
}

// Where the search checkpoints: --checkpoint, else beside --log
// (L.jsonl -> L.ckpt), else over the checkpoint it resumed from.
std::string CheckpointPath(const PlaceFlags& place) {
  if (!place.checkpoint.empty()) return place.checkpoint;
  if (!place.log.empty()) {
    const std::string& log = place.log;
    const size_t dot = log.rfind('.');
    const size_t slash = log.rfind('/');
    const bool has_ext =
        dot != std::string::npos && (slash == std::string::npos || dot > slash);
    return (has_ext ? log.substr(0, dot) : log) + ".ckpt";
  }
  return place.resume;
}

// Checks and locks every file `place` writes (ClaimOutputs), before any
// work: a bad path fails at once, not after a search.
StatusOr<std::vector<OutputLock>> ClaimPlaceOutputs(const PlaceFlags& place) {
  const bool searches = IsSearchMethod(place.method);
  return ClaimOutputs(
      {{"--out", place.out},
       {"--trace", place.trace},
       {"--report", place.report},
       {"--log", place.log},
       {place.checkpoint.empty() ? "checkpoint" : "--checkpoint",
        searches ? CheckpointPath(place) : ""}});
}

// A resumed search drops a last log line that a crash or a full disk cut
// short (TornLastLogLine); says so on `err`.
void WarnOfATornLog(const PlaceFlags& place, std::ostream& err) {
  if (place.resume.empty() || place.log.empty()) return;
  const std::string torn = TornLastLogLine(place.log);
  if (torn.empty()) return;
  err << "dplace: warning: log " << place.log
      << ": its last line was cut short by an interrupted write ("
      << torn.substr(0, 40) << (torn.size() > 40 ? "..." : "")
      << "); dropped, as the checkpoint does not hold its sample\n";
}

// Writes the --report page of one placement.
Status WritePlacementReport(const PlacementProblem& problem,
                            const MethodRun& run, const std::string& command,
                            const LoadedModel* model, const std::string& path) {
  PlacementReportInput input;
  if (model) input.warnings = model->warnings;
  input.cost = problem.cost;
  input.graph = problem.graph;
  input.cluster = problem.cluster;
  input.placement = &run.placement;
  input.sim = &run.sim;
  input.method = run.method;
  input.command = command;
  input.wall_seconds = run.wall_seconds;
  // The bound `place` printed: its placement's (with the MILP's, and the
  // bound of placements that keep colocation groups whole where it does).
  input.lower_bound = ProblemLowerBound(run.sim.bounds);
  for (const SampleRecord& s : run.search.history) {
    input.history.push_back({s.step_time, s.feasible, s.best_step_time});
  }
  return WriteTextFile(path, PlacementReportHtml(input));
}

// Where PlaceOne's search evaluates and what it does around it: in
// process by default; --env measured fills these in.
struct PlaceHooks {
  Environment* environment = nullptr;  // Default: the simulated one.
  // After a successful search: returns a line to print after the method's.
  std::function<StatusOr<std::string>(MethodRun*)> after_search;
  // The model placed, for what is printed of it (RunPlace sets it).
  const LoadedModel* model = nullptr;
  // --whole-modules: the problem the method solves, whose graph keeps each
  // module whole (ColocateModules); the placement is the same op by op,
  // and files name the user's graph. Null: the problem itself.
  const PlacementProblem* constrained = nullptr;
};

// The modules at `depth` that `placement` splits over devices.
std::vector<std::string> SplitModules(const Graph& graph,
                                      const Placement& placement, int depth,
                                      int num_devices) {
  std::vector<std::string> split;
  for (const ModuleRow& row :
       ModuleRows(graph, placement, nullptr, depth, num_devices)) {
    if (row.depth == depth && row.device < 0) split.push_back(row.path);
  }
  return split;
}

// What place prints after the step: the placement by module, what next,
// and the device map written.
Status PrintModulesAndNext(const PlacementProblem& problem,
                           const PlaceFlags& place, const PlaceHooks& hooks,
                           const MethodRun& run, std::ostream& out) {
  const Graph& graph = *problem.graph;
  const Cluster& cluster = *problem.cluster;
  if (place.whole_modules > 0) {
    const std::vector<std::string> split = SplitModules(
        graph, run.placement, place.whole_modules, cluster.num_devices());
    out << "whole modules at depth " << place.whole_modules << ": "
        << (split.empty() ? std::string("each on one device")
                          : std::to_string(split.size()) +
                                " split (no device runs all of their ops), "
                                "first " +
                                split[0])
        << "\n";
  }
  if (place.by_module >= 0) {
    out << "placement by module (depth " << place.by_module
        << ", model order; compute time and memory of each module's "
           "forward, backward and update ops; weights+outputs: the bytes "
           "they hold at some point in the step):\n"
        << ModuleTable(cluster,
                       ModuleRows(graph, run.placement, problem.cost,
                                  place.by_module, cluster.num_devices()));
  }
  if (hooks.model) {
    const std::vector<std::string> lines = WhatNextLines(
        *problem.cost, *hooks.model, &run, ProblemLowerBound(run.sim.bounds));
    if (!lines.empty()) out << "what next:\n";
    for (const std::string& line : lines) out << "  " << line << "\n";
  }
  if (!place.device_map.empty()) {
    DPLACE_RETURN_IF_ERROR(WriteTextFile(
        place.device_map, DeviceMapJson(graph, cluster, run.placement)));
    out << "device map: " << place.device_map << "\n";
  }
  return Status::Ok();
}

// The options of the method's run: the timeline when --trace or --report
// wants it, and for a search its budget, log, checkpoint, resume, and a
// progress line when `err` is a terminal. Errors: a zero budget.
StatusOr<MethodRunOptions> PlaceRunOptions(const PlaceFlags& place,
                                           bool searches,
                                           const std::string& trace,
                                           std::ostream& err) {
  MethodRunOptions run_options;
  run_options.record_timeline = !trace.empty() || !place.report.empty();
  SearchOptions& search = run_options.context.search;
  if (searches) {
    if (place.budget_samples == 0 || place.budget_seconds == 0) {
      return InvalidArgumentError(
          "--budget-samples and --budget-seconds must be > 0");
    }
    if (place.budget_samples > 0) search.budget.samples = place.budget_samples;
    if (place.budget_seconds > 0) search.budget.seconds = place.budget_seconds;
    search.log_path = place.log;
    search.checkpoint_path = CheckpointPath(place);
    search.checkpoint_min_seconds =
        place.checkpoint_seconds >= 0 ? place.checkpoint_seconds
                                      : DefaultCheckpointSeconds(place.method);
    search.resume_path = place.resume;
  }
  const bool terminal =
      searches && &err == &std::cerr && ::isatty(STDERR_FILENO);
  if (terminal) {
    search.progress = [&err](const SearchProgress& p) {
      PrintSearchProgress(p, err);
    };
  }
  return run_options;
}

// Prints the placement `run` chose (`note` after the method's line) and
// writes --out, --trace, --report and --device-map; with --json, prints
// the "dplace.place" document instead.
int PrintPlacement(const PlacementProblem& problem, const PlaceFlags& place,
                   bool searches, const MethodRunOptions& run_options,
                   const MethodRun& run, const std::string& note,
                   const std::string& header, const std::string& trace,
                   std::ostream& out, std::ostream& err,
                   const PlaceHooks& hooks = {}) {
  if (place.json && hooks.model) {
    std::ostringstream text;
    const int code = PrintPlacement(problem, place, searches, run_options, run,
                                    note, header, trace, text, err);
    if (code == kExitBadInput) return code;
    out << PlaceJson(*problem.cost, *hooks.model, {run},
                     run.placed ? AnyPlacementLowerBound(run.sim.bounds)
                                : ProblemLowerBound(Simulator(*problem.cost)));
    return code;
  }
  const SearchOptions& search = run_options.context.search;
  if (!run.placed) {
    const Status status(run.error_code, run.error);
    if (status.code() == StatusCode::kInfeasible) {
      out << header << "infeasible: " << status.message() << "\n";
      if (hooks.model) {
        const std::vector<std::string> lines =
            WhatNextLines(*problem.cost, *hooks.model, &run,
                          ProblemLowerBound(Simulator(*problem.cost)));
        out << "what next:\n";
        for (const std::string& line : lines) out << "  " << line << "\n";
      }
      return kExitInfeasible;
    }
    return Fail(err, status);
  }
  const Graph& graph = *problem.graph;
  const Cluster& cluster = *problem.cluster;
  const SimResult& sim = run.sim;
  out << header << "method " << place.method << ": ";
  if (searches) {
    const SearchTrace& result = run.search;
    out << "searched " << result.samples << " samples ("
        << (result.first_sample_of_this_run > 0
                ? "resumed at " +
                      std::to_string(result.first_sample_of_this_run) + ", "
                : "")
        << result.updates << " updates, " << result.num_groups << " groups) in "
        << Format("%.3f", result.wall_seconds) << " s"
        << (result.stopped ? ", stopped by a signal: the best so far" : "")
        << "\n";
  } else {
    out << "placed in " << Format("%.3f", run.wall_seconds) << " s\n";
  }
  if (!note.empty()) out << note << "\n";
  if (!run.note.empty()) out << run.note << "\n";
  PrintSimResult(cluster, sim, out);
  if (Status s = PrintModulesAndNext(problem, place, hooks, run, out);
      !s.ok()) {
    return Fail(err, s);
  }
  if (!place.log.empty()) out << "log: " << place.log << "\n";
  if (searches && !search.checkpoint_path.empty()) {
    out << "checkpoint: " << search.checkpoint_path << "\n";
  }
  if (!place.out.empty()) {
    Status s = WriteTextFile(place.out,
                             PlacementToJson(graph, cluster, run.placement));
    if (!s.ok()) return Fail(err, s);
    out << "placement: " << place.out << "\n";
  }
  if (!trace.empty()) {
    Status s = WriteChromeTrace(graph, cluster, sim, trace);
    if (!s.ok()) return Fail(err, s);
    out << "trace: " << trace << " (open in Perfetto)\n";
  }
  if (!place.report.empty()) {
    Status s = WritePlacementReport(problem, run, place.command, hooks.model,
                                    place.report);
    if (!s.ok()) return Fail(err, s);
    out << "report: " << place.report << "\n";
  }
  return sim.feasible ? kExitOk : kExitInfeasible;
}

std::string StepTimeText(const SimResult& sim) {
  return sim.feasible ? Format("%.4f s", sim.step_time) : std::string("OOM");
}

// --refine: an mcmc search from `run`'s placement for `seconds`, through
// `environment` (the simulated one when null). Replaces the run's placement
// and simulation (never worse: the walk's start is its first best) and
// returns the line saying both step times.
StatusOr<std::string> Refine(const PlacementProblem& problem, double seconds,
                             Environment* environment,
                             const MethodRunOptions& run_options,
                             MethodRun* run) {
  std::unique_ptr<Environment> simulated;
  if (environment == nullptr) {
    simulated = NewSimulatedEnvironment(*problem.cost);
    environment = simulated.get();
  }
  DPLACE_ASSIGN_OR_RETURN(McmcSettings settings, ReadMcmcSettings({}));
  PlaceContext context;
  context.environment = environment;
  context.search.budget.seconds = seconds;
  context.search.stop_requested = run_options.context.search.stop_requested;
  StatusOr<PlaceResult> refined =
      RefinePlacement(problem, run->placement, settings, context);
  if (!refined.ok()) return refined.status().WithPrefix("--refine");
  SimOptions sim_options;
  sim_options.record_timeline = run_options.record_timeline;
  DPLACE_ASSIGN_OR_RETURN(
      SimResult sim,
      Simulator(*problem.cost).Simulate(refined->placement, sim_options));
  const std::string line =
      "refined: " + StepTimeText(run->sim) + " -> " + StepTimeText(sim) +
      " (mcmc from the placement, " + std::to_string(refined->search.samples) +
      " samples in " + Format("%.1f", refined->search.wall_seconds) + " s)";
  run->placement = std::move(refined->placement);
  run->sim = std::move(sim);
  return line;
}

// The command that continues the search `place` ran from `checkpoint`:
// its command line with --resume CHECKPOINT instead of any --resume.
std::string ResumeCommand(const PlaceFlags& place,
                          const std::string& checkpoint) {
  std::vector<std::string> args;
  for (size_t i = 0; i < place.args.size(); ++i) {
    const std::string& arg = place.args[i];
    if (arg == "--resume") {
      ++i;  // And its value.
    } else if (arg.rfind("--resume=", 0) != 0) {
      args.push_back(arg);
    }
  }
  args.push_back("--resume");
  args.push_back(checkpoint);
  return CommandLine(args);
}

// The line a search stopped by `signal` ends with: how far it got and how
// to continue it, or that it cannot be continued without a checkpoint.
std::string StoppedLine(const PlaceFlags& place, const SearchOptions& search,
                        const SearchTrace& trace, int signal) {
  std::string line = "dplace: " + StopSignals::Name(signal) +
                     ": the search stopped after " +
                     std::to_string(trace.samples) + " samples";
  if (search.budget.samples > 0) {
    line += " of " + std::to_string(search.budget.samples);
  }
  if (search.checkpoint_path.empty()) {
    return line +
           "; no checkpoint (--checkpoint or --log), so it cannot be "
           "resumed";
  }
  return line + "; checkpoint " + search.checkpoint_path +
         " written; to continue it: " +
         ResumeCommand(place, search.checkpoint_path);
}

// --whole-modules: a method that does not keep colocation groups whole
// leaves modules split; their ops move to the device most of each module's
// op time is on (KeepGroupsWhole) and the step is simulated again. Returns
// the line saying so; empty when nothing moved.
StatusOr<std::string> KeepModulesWhole(const PlacementProblem& solved,
                                       const PlaceFlags& place,
                                       const MethodRunOptions& run_options,
                                       MethodRun* run) {
  const Graph& graph = *solved.graph;
  std::vector<double> seconds(graph.num_ops());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    seconds[op] = solved.cost->OpTime(op, run->placement[op]);
  }
  std::vector<DeviceKind> kinds;
  for (const Device& d : solved.cluster->devices()) kinds.push_back(d.kind);
  const int moved = KeepGroupsWhole(graph, kinds, seconds, &run->placement);
  if (moved == 0) return std::string();
  SimOptions sim_options;
  sim_options.record_timeline = run_options.record_timeline;
  const std::string before = StepTimeText(run->sim);
  DPLACE_ASSIGN_OR_RETURN(
      run->sim, Simulator(*solved.cost).Simulate(run->placement, sim_options));
  return "whole modules: method " + place.method + " put " +
         std::to_string(moved) +
         " ops apart from their module; moved to it: " + before + " -> " +
         StepTimeText(run->sim);
}

// dplace place --method NAME: one placer, or a search through the
// simulated environment; prints the chosen placement. SIGINT and SIGTERM
// stop a search after its batch in flight (StopSignals): it prints and
// writes the best placement so far, then how to resume, and exits 128 +
// the signal.
int PlaceOne(const PlacementProblem& problem, const PlaceFlags& place,
             Method* method, const std::string& header,
             const std::string& trace, std::ostream& out, std::ostream& err,
             const PlaceHooks& hooks = {}) {
  const bool searches = method->traits().searches;
  StatusOr<MethodRunOptions> made =
      PlaceRunOptions(place, searches, trace, err);
  if (!made.ok()) return Fail(err, made.status());
  MethodRunOptions run_options = std::move(made).value();
  run_options.context.environment = hooks.environment;
  const PlacementProblem& solved =
      hooks.constrained ? *hooks.constrained : problem;
  std::optional<StopSignals> stop;
  if (searches) {
    stop.emplace();
    run_options.context.search.stop_requested = stop->Request();
  }
  StatusOr<MethodRun> run = RunMethod(method, solved, run_options);
  if (run_options.context.search.progress) err << "\n";
  // Once stopped, the best so far as it is: neither refined nor measured.
  auto stopped = [&stop] { return stop && stop->signal() != 0; };
  std::string note;
  if (run.ok() && run->placed && place.refine > 0 && !stopped()) {
    StatusOr<std::string> line =
        Refine(solved, place.refine, hooks.environment, run_options, &*run);
    if (line.ok()) note = *line;
    if (!line.ok()) run = line.status();
  }
  if (run.ok() && run->placed && hooks.constrained) {
    StatusOr<std::string> line =
        KeepModulesWhole(solved, place, run_options, &*run);
    if (line.ok() && !line->empty()) {
      note += (note.empty() ? "" : "\n") + *line;
    }
    if (!line.ok()) run = line.status();
  }
  if (run.ok() && run->placed && hooks.after_search && !stopped()) {
    StatusOr<std::string> line = hooks.after_search(&*run);
    if (line.ok()) note += (note.empty() ? "" : "\n") + *line;
    if (!line.ok()) run = line.status();
  }
  if (!run.ok()) return Fail(err, run.status());
  const int code = PrintPlacement(problem, place, searches, run_options, *run,
                                  note, header, trace, out, err, hooks);
  // A file that could not be written is the error it is.
  if (!stopped() || code == kExitBadInput) return code;
  err << StoppedLine(place, run_options.context.search, run->search,
                     stop->signal())
      << "\n";
  return 128 + stop->signal();
}

bool IsMpiEnv(const std::string& env) {
  return env == "mpi" || env == "mpi:simulated" || env == "mpi:measured";
}

// --env: simulated, measured (one method, on a detected cluster), or
// mpi[:simulated|:measured] (searches only). `searches`: the method's
// traits (false for --method all).
Status CheckEnv(const PlaceFlags& place, bool searches) {
  if (place.env == "simulated") return Status::Ok();
  if (place.env == "measured") {
    if (place.method == "all") {
      return InvalidArgumentError(
          "--env measured runs one method; to measure many placements "
          "against the simulator use dplace fidelity");
    }
    return Status::Ok();
  }
  if (!IsMpiEnv(place.env)) {
    return InvalidArgumentError("--env " + place.env +
                                ": expected simulated, measured or "
                                "mpi[:simulated|:measured]");
  }
#ifndef DPLACE_WITH_MPI
  return InvalidArgumentError(
      "--env " + place.env +
      ": this dplace was built without MPI; install Open MPI (apt-get "
      "install libopenmpi-dev openmpi-bin), rebuild with "
      "-DDPLACE_WITH_MPI=ON and start it with mpirun (docs/mpi.md)");
#else
  if (place.method == "all" || !searches) {
    return InvalidArgumentError("--env " + place.env +
                                " spreads a search's evaluations over MPI "
                                "ranks; method " +
                                place.method +
                                " is not a learned placer or mcmc (see "
                                "--list)");
  }
  if (place.controllers > 1 &&
      (place.budget_samples <= 0 || place.budget_seconds >= 0 ||
       !place.resume.empty())) {
    return InvalidArgumentError(
        "--controllers " + std::to_string(place.controllers) +
        ": controllers step together, so they need --budget-samples and no "
        "--budget-seconds or --resume");
  }
  return Status::Ok();
#endif
}

#ifdef DPLACE_WITH_MPI
// "RANK:VALUE" of the MPI test hooks.
Status ParseRankValue(const std::string& flag, const std::string& text,
                      int* rank, double* value) {
  const size_t colon = text.find(':');
  try {
    size_t end = 0;
    if (colon == std::string::npos) throw std::invalid_argument(text);
    *rank = std::stoi(text.substr(0, colon), &end);
    if (end != colon) throw std::invalid_argument(text);
    *value = std::stod(text.substr(colon + 1), &end);
    if (end != text.size() - colon - 1) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    return InvalidArgumentError(flag + " " + text + ": expected RANK:NUMBER");
  }
  return Status::Ok();
}

// dplace place --env mpi under mpirun: controllers search, the other ranks
// evaluate their placements (see mpi_run.h). Only controller 0 prints and
// writes files.
int PlaceWithMpi(const PlacementProblem& problem, PlaceFlags place,
                 const MethodOptions& options, const std::string& header,
                 std::string trace, std::ostream& out, std::ostream& err) {
  MpiRunOptions mpi_run;
  MpiOptions& mpi = mpi_run.mpi;
  mpi.controllers = place.controllers;
  mpi.evaluation_timeout_seconds = place.mpi_timeout;
  if (!place.mpi_slow_worker.empty()) {
    Status s = ParseRankValue("--mpi-slow-worker", place.mpi_slow_worker,
                              &mpi.slow_rank, &mpi.slow_seconds);
    if (!s.ok()) return Fail(err, s);
  }
  if (!place.mpi_exit_worker.empty()) {
    double after = 0;
    Status s = ParseRankValue("--mpi-exit-worker", place.mpi_exit_worker,
                              &mpi.exit_rank, &after);
    if (!s.ok()) return Fail(err, s);
    mpi.exit_after = static_cast<int64_t>(after);
  }
  if (place.env == "mpi:measured") {
    // Each worker measures on this host's devices, as the cluster names
    // them.
    mpi_run.worker_environment = [](const PlacementProblem& p) {
      return NewMeasuredEnvironment(*p.graph, *p.cluster, {});
    };
  }
  StatusOr<std::unique_ptr<MpiMethodRun>> started =
      MpiMethodRun::Start(mpi_run);
  if (!started.ok()) return Fail(err, started.status());
  MpiMethodRun& ranks = **started;
  std::ostringstream discarded;
  std::ostream* shown = &out;
  if (ranks.role() == MpiRole::kSilentController) {
    // The other controllers search and share their best, silently.
    place.log.clear();
    place.checkpoint.clear();
    place.out.clear();
    place.report.clear();
    trace.clear();
    shown = &discarded;
  }
  // CheckEnv let only searches through.
  const bool searches = true;
  StatusOr<std::vector<OutputLock>> claims = std::vector<OutputLock>();
  if (ranks.role() == MpiRole::kPrintingController) {
    claims = ClaimPlaceOutputs(place);
    WarnOfATornLog(place, err);
  }
  if (!claims.ok()) {
    Fail(err, claims.status());
    ranks.Abort(kExitBadInput);
  }
  MethodRunOptions run_options;  // A worker's are not used.
  if (ranks.role() != MpiRole::kWorker) {
    StatusOr<MethodRunOptions> made =
        PlaceRunOptions(place, searches, trace, err);
    if (!made.ok()) return Fail(err, made.status());
    run_options = std::move(made).value();
  }
  StatusOr<MpiRunResult> result =
      ranks.Run(place.method, options, problem, run_options);
  if (run_options.context.search.progress) err << "\n";
  if (!result.ok()) {
    const int code = Fail(err, result.status());
    if (ranks.ErrorStrandsOtherRanks()) ranks.Abort(kExitBadInput);
    return code;
  }
  if (result->role == MpiRole::kWorker) return kExitOk;
  std::string note;
  if (result->run.placed) {
    const MpiEvaluationStats& stats = result->stats;
    note = "mpi: " + std::to_string(result->world_size) + " ranks, " +
           std::to_string(result->num_controllers) + " controller(s), " +
           std::to_string(result->num_workers) +
           " worker(s) for controller 0; " + std::to_string(stats.issued) +
           " evaluations issued, " + std::to_string(stats.reissued) +
           " re-issued after a " + Format("%g", place.mpi_timeout) +
           " s timeout, " + std::to_string(stats.late_replies) +
           " late replies ignored; best from controller " +
           std::to_string(result->best_controller);
  }
  return PrintPlacement(problem, place, searches, run_options, result->run,
                        note, header, trace, *shown, err);
}
#endif  // DPLACE_WITH_MPI

// dplace place --env measured: a search's samples are measured on this
// machine's devices (the cluster must be a detected one); the chosen
// placement, from any method, is measured too.
int PlaceMeasured(const PlacementProblem& problem, const PlaceFlags& place,
                  Method* method, const std::string& header,
                  const std::string& trace, std::ostream& out,
                  std::ostream& err, PlaceHooks hooks) {
  StatusOr<std::unique_ptr<Environment>> env =
      MeasuredEnvironmentForPlace(*problem.graph, *problem.cluster);
  if (!env.ok()) return Fail(err, env.status());
  hooks.environment = env->get();
  hooks.after_search = [&](MethodRun* run) -> StatusOr<std::string> {
    err << "dplace: measuring the chosen placement ...\n";
    DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> m,
                            (*env)->Evaluate({run->placement}));
    const Measurement& r = m[0];
    if (!r.feasible) return "measured: infeasible: " + r.infeasible_reason;
    return "measured step time: " + Format("%.6f", r.step_time) +
           " s (simulated below)";
  };
  return PlaceOne(problem, place, method, header, trace, out, err, hooks);
}

}  // namespace

CLI::App* AddPlaceCommand(CLI::App* parent, PlaceFlags* flags) {
  auto* place = parent->add_subcommand(
      "place",
      "place a model on a cluster with a method, simulate the placement and "
      "print step time, feasibility, per-device load and peak memory, the "
      "gap to the lower bound and the time placing took");
  AddGraphFlags(place, &flags->graph, /*required=*/false);
  AddModelOptionFlags(place, &flags->model_options);
  place->add_option("--cluster", flags->cluster,
                    "preset name (see `dplace cluster list`) or cluster "
                    ".json; a Tarnawski et al. input brings its own");
  place->add_option("--method", flags->method,
                    "method name (see --list), or `all` "
                    "for a table comparing every classical placer");
  place->add_option("--option", flags->options,
                    "key=value setting of the method (repeatable)");
  place
      ->add_option("--seed", flags->seed,
                   "seed of randomised methods (default: 1)")
      ->check(WholeNumber(0, std::numeric_limits<uint64_t>::max()));
  place->add_option("--out", flags->out, "write the placement JSON");
  place->add_option("--trace", flags->trace,
                    "write the placement's Chrome trace (open in Perfetto)");
  place->add_option("--profile", flags->profile,
                    "profile JSON of measured op times (overrides the "
                    "roofline cost model)");
  place->add_flag("--list", flags->list, "list every method, one line each");
  place->add_option("--budget-samples", flags->budget_samples,
                    "searches (learned placers, mcmc): placements to "
                    "evaluate (default, when no budget is given: the "
                    "method's own, an agent's paper budget or mcmc's 2000)");
  place->add_option("--budget-seconds", flags->budget_seconds,
                    "searches: wall seconds to search");
  place->add_option("--log", flags->log,
                    "searches: write one JSON line per evaluated placement "
                    "(sample, wall_s, step_time, feasible, reward, "
                    "best_step_time)");
  place->add_option("--checkpoint", flags->checkpoint,
                    "searches: checkpoint file, written every 10 updates "
                    "(at most every --checkpoint-seconds) and at the end "
                    "(default: beside --log as .ckpt)");
  place
      ->add_option("--checkpoint-seconds", flags->checkpoint_seconds,
                   "searches: least wall seconds between two checkpoints "
                   "(default: 1 for mcmc and auto, whose updates come "
                   "thousands a second; 0 for the learned placers)")
      ->check(CLI::NonNegativeNumber);
  place->add_option("--resume", flags->resume,
                    "searches: continue the search saved in this checkpoint "
                    "(same method, model, cluster, options)");
  place->add_option("--env", flags->env,
                    "where a search's placements are evaluated: "
                    "simulated (default, in process), measured (run on this "
                    "machine's devices; --cluster from `cluster detect`), "
                    "or mpi[:simulated|:measured] "
                    "under mpirun: rank 0 searches, the other ranks evaluate "
                    "(docs/mpi.md)");
  place
      ->add_option("--controllers", flags->controllers,
                   "--env mpi: controller ranks training one policy, each "
                   "with its own workers and baseline, gradients averaged "
                   "(default: 1)")
      ->check(WholeNumber(1, std::numeric_limits<int>::max()));
  place
      ->add_option("--mpi-timeout", flags->mpi_timeout,
                   "--env mpi: seconds one evaluation may take before the "
                   "placement goes to another worker; 0: never (default: "
                   "60)")
      ->check(NumberAtLeast(0));
  // Test hooks of the MPI environment, hidden from --help.
  place->add_option("--mpi-slow-worker", flags->mpi_slow_worker)->group("");
  place->add_option("--mpi-exit-worker", flags->mpi_exit_worker)->group("");
  place->add_option("--report", flags->report,
                    "write a self-contained HTML report: placement by layer "
                    "and op, per-device load and memory, the step's "
                    "timeline, and a search's learning curve");
  place->add_option("--encoder", flags->encoder,
                    "mars: start from this pre-trained encoder (see `dplace "
                    "pretrain`); the same as --option encoder=FILE");
  place->add_option("--refine", flags->refine,
                    "after the method places, search from its placement "
                    "with mcmc for SECONDS and print both step times");
  place
      ->add_option("--by-module", flags->by_module,
                   "print the placement by module, in model order, down to "
                   "DEPTH (default: 2): each module's ops, compute time, "
                   "memory and their share on each device")
      ->expected(0, 1)
      ->default_str("2")
      ->check(CLI::NonNegativeNumber);
  place->add_option("--device-map", flags->device_map,
                    "write the device map, JSON: each module whose ops run "
                    "on one device -> that device, and the other ops one by "
                    "one (docs/formats.md; applied to a PyTorch model in "
                    "docs/onnx.md)");
  place
      ->add_option("--whole-modules", flags->whole_modules,
                   "keep every module at DEPTH on one device (its ops join "
                   "one colocation group), so the device map is modules "
                   "only down to DEPTH")
      ->check(CLI::PositiveNumber);
  place->add_flag("--json", flags->json,
                  "print the results as one JSON document (docs/formats.md, "
                  "\"dplace.place\"), also for --method all");
  place->callback([place, flags] {
    // A negative budget is as wrong as zero (negative means "not given").
    if (place->count("--budget-samples") && flags->budget_samples < 0) {
      flags->budget_samples = 0;
    }
    if (place->count("--budget-seconds") && flags->budget_seconds < 0) {
      flags->budget_seconds = 0;
    }
    if (place->count("--refine") && !(flags->refine > 0)) flags->refine = 0;
    if (!flags->encoder.empty()) {
      flags->options.push_back("encoder=" + flags->encoder);
    }
  });
  return place;
}

// The method of --method and --option, made once; null for --method all.
// Errors: an unknown method (listing the known ones), bad options.
StatusOr<std::unique_ptr<Method>> MakePlaceMethod(const PlaceFlags& place,
                                                  MethodOptions* options) {
  if (place.method == "all") return std::unique_ptr<Method>();
  DPLACE_ASSIGN_OR_RETURN(*options, MethodOptions::Parse(place.options));
  return MakeMethod(place.method, *options);
}

int RunPlace(const PlaceFlags& place, std::ostream& out, std::ostream& err) {
  if (place.list) return PlaceList(out);
  if (place.graph.empty() || place.method.empty()) {
    return Fail(err, InvalidArgumentError(
                         "place needs --model (or --graph), --cluster and "
                         "--method (or --list)"));
  }
  MethodOptions options;
  StatusOr<std::unique_ptr<Method>> made = MakePlaceMethod(place, &options);
  if (!made.ok()) return Fail(err, made.status());
  Method* method = made->get();
  const bool searches = method != nullptr && method->traits().searches;
  if (Status s = CheckEnv(place, searches); !s.ok()) return Fail(err, s);
  if (!searches && HasSearchFlags(place)) {
    return Fail(err, InvalidArgumentError(
                         "--budget-samples, --budget-seconds, --log, "
                         "--checkpoint(-seconds) and --resume are for "
                         "searches, the learned placers and mcmc (see "
                         "--list); " +
                         (place.method == "all"
                              ? std::string("--method all runs the classical "
                                            "placers")
                              : "method " + place.method + " is not one")));
  }
  if (place.refine == 0) {
    return Fail(err, InvalidArgumentError("--refine must be > 0 seconds"));
  }
  if (place.refine > 0 && (place.method == "all" || IsMpiEnv(place.env))) {
    return Fail(err, InvalidArgumentError(
                         "--refine searches from one method's placement; "
                         "not with --method all or --env mpi"));
  }
  const bool module_flags = place.by_module >= 0 || !place.device_map.empty() ||
                            place.whole_modules > 0;
  if (module_flags && (place.method == "all" || IsMpiEnv(place.env))) {
    return Fail(err, InvalidArgumentError(
                         "--by-module, --device-map and --whole-modules are "
                         "about one method's placement; not with --method "
                         "all or --env mpi"));
  }
  if (place.json && IsMpiEnv(place.env)) {
    return Fail(err, InvalidArgumentError("--json is not for --env mpi"));
  }
  // Under MPI, the rank that writes them claims them (PlaceWithMpi).
  StatusOr<std::vector<OutputLock>> claims = std::vector<OutputLock>();
  if (!IsMpiEnv(place.env)) {
    claims = ClaimPlaceOutputs(place);
    WarnOfATornLog(place, err);
  }
  if (!claims.ok()) return Fail(err, claims.status());
  StatusOr<LoadedModel> model = LoadModel(place.graph, place.model_options);
  if (!model.ok()) return Fail(err, model.status());
  PrintWarnings(model->warnings, err);
  StatusOr<Cluster> cluster = ClusterFor(*model, place.cluster);
  if (!cluster.ok()) return Fail(err, cluster.status());
  StatusOr<ProfileTable> profile = ProfileFor(*model, place.profile);
  if (!profile.ok()) return Fail(err, profile.status());
  const Graph& graph = model->graph;
  const CostModel cost(graph, *cluster, *profile);
  const PlacementProblem problem = ProblemOf(*model, cost, place.seed);
  PlaceHooks hooks;
  hooks.model = &*model;
  // --whole-modules: the method places a graph whose colocation groups keep
  // each module at that depth whole.
  std::optional<Graph> colocated;
  std::optional<CostModel> colocated_cost;
  std::optional<PlacementProblem> constrained;
  if (place.whole_modules > 0) {
    StatusOr<Graph> g = ColocateModules(graph, place.whole_modules);
    if (!g.ok()) return Fail(err, g.status());
    colocated.emplace(std::move(g).value());
    colocated_cost.emplace(*colocated, *cluster, *profile);
    constrained = ProblemOf(*model, *colocated_cost, place.seed);
    hooks.constrained = &*constrained;
  }
  const std::string header = "graph " + graph.name() + " (" +
                             std::to_string(graph.num_ops()) + " ops, hash " +
                             graph.hash() + ") on cluster " + cluster->name() +
                             " (" + std::to_string(cluster->num_devices()) +
                             " devices)\n" + DescribeModel(*model) + "\n";

  if (place.method == "all") {
    if (!place.options.empty() || !place.out.empty() || !place.trace.empty() ||
        !place.report.empty()) {
      return Fail(err, InvalidArgumentError(
                           "--method all compares the placers at their "
                           "defaults; --option, --out, --trace and --report "
                           "need one method"));
    }
    return PlaceAll(problem, *model, place.json, header, out, err);
  }
#ifdef DPLACE_WITH_MPI
  if (IsMpiEnv(place.env)) {
    return PlaceWithMpi(problem, place, options, header, place.trace, out, err);
  }
#endif
  if (place.env == "measured") {
    return PlaceMeasured(problem, place, method, header, place.trace, out, err,
                         hooks);
  }
  return PlaceOne(problem, place, method, header, place.trace, out, err, hooks);
}

}  // namespace dplace
