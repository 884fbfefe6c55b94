// "auto": the one method a user runs. Within the search budget: every
// one-shot placer (start_placements.h's AutoStartMethods: the classical
// ones, Baechi's, Tarnawski et al.'s split DP and greedy, the path-guided
// placement), the MILP where the graph is small enough for its bound to
// hold op by op (milp_placer.h), then mcmc from the best of all of them
// (RefinePlacement) for what is left of the budget. Its result carries the
// MILP's bound when there was one, so the gap it prints is certified.
#include <algorithm>
#include <cmath>
#include <memory>

#include "dplace/placers/milp_placer.h"
#include "dplace/search/mcmc.h"
#include "dplace/search/search_loop.h"
#include "dplace/search/start_placements.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

struct AutoSettings {
  // Share of a seconds budget the MILP may take. Default: 0.25.
  double milp_share = 0.25;
  // The MILP runs on graphs of at most this many ops, every op a unit of
  // its program, so that its bound holds for every placement. Default: 200.
  int milp_max_ops = 200;
  // Seconds the MILP gets when the budget is in samples. Default: 10.
  double milp_seconds_without_clock = 10;
};

class AutoMethod : public Method {
 public:
  AutoMethod(AutoSettings settings, McmcSettings mcmc)
      : Method("auto"), settings_(settings), mcmc_(std::move(mcmc)) {}

  MethodTraits traits() const override {
    MethodTraits traits;
    traits.searches = true;
    traits.default_budget_samples = 2000;
    return traits;
  }

 protected:
  StatusOr<PlaceResult> DoPlace(const PlacementProblem& problem,
                                const PlaceContext& context) override {
    DPLACE_RETURN_IF_ERROR(
        CheckSearchRequest(problem, context.environment, context.search));
    const Clock clock =
        context.search.clock ? context.search.clock : SteadyClock();
    const double begin = clock();
    const SearchBudget& budget = context.search.budget;
    // Before the search samples, progress names what runs.
    const auto stage = [&](const std::string& what) {
      if (!context.search.progress) return;
      SearchProgress p;
      p.budget = budget;
      p.wall_seconds = clock() - begin;
      p.stage = what;
      context.search.progress(p);
    };
    // 1. Every one-shot placer, measured through the environment.
    DPLACE_ASSIGN_OR_RETURN(
        std::vector<Placement> starts,
        StartCandidates(
            problem, "auto",
            [&](int started, int n, const std::vector<std::string>& running) {
              stage(StartPlacerStage(started, n, running));
            }));
    DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> measured,
                            context.environment->Evaluate(starts));
    size_t best = 0;
    for (size_t i = 1; i < starts.size(); ++i) {
      if (Better(measured[i], measured[best])) best = i;
    }
    Placement start = starts[best];
    // What the placers took is what the search will not have.
    std::string note = "auto: best of " + std::to_string(starts.size()) +
                       " one-shot placers " +
                       Format("%.6f", measured[best].step_time) +
                       Format(" s (placed in %.2f s)", clock() - begin);
    // 2. The MILP, where its bound holds op by op.
    double proven = 0;
    if (problem.graph->num_ops() <= settings_.milp_max_ops) {
      MilpOptions milp;
      milp.max_units = settings_.milp_max_ops;
      milp.seconds = budget.seconds > 0 ? settings_.milp_share * budget.seconds
                                        : settings_.milp_seconds_without_clock;
      stage(Format("the MILP (CBC, at most %.0f s)", milp.seconds));
      DPLACE_ASSIGN_OR_RETURN(MilpResult solved,
                              SolveMilp(problem, start, milp));
      DPLACE_ASSIGN_OR_RETURN(
          std::vector<Measurement> m,
          context.environment->Evaluate({solved.placement}));
      if (Better(m[0], measured[best])) start = solved.placement;
      if (solved.op_level) proven = solved.bound;
      note += Format("; MILP %.6f s", m[0].step_time) +
              (solved.proven_optimal ? " (its program solved)" : "");
    }
    // 3. mcmc from the best, for the rest of the budget.
    PlaceContext rest = context;
    const double elapsed = clock() - begin;
    if (budget.seconds > 0) {
      rest.search.budget.seconds = std::max(1e-3, budget.seconds - elapsed);
    }
    if (context.search.progress) {  // Its wall time counted from auto's start.
      rest.search.progress = [&context, elapsed](SearchProgress p) {
        p.wall_seconds += elapsed;
        context.search.progress(p);
      };
    }
    DPLACE_ASSIGN_OR_RETURN(PlaceResult result,
                            RefinePlacement(problem, start, mcmc_, rest));
    result.lower_bound = std::max(result.lower_bound, proven);
    result.search.wall_seconds = clock() - begin;
    result.note = note + Format("; mcmc %.6f s", result.search.best_step_time);
    return result;
  }

 private:
  // Fits before does not; then faster.
  static bool Better(const Measurement& a, const Measurement& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.step_time < b.step_time;
  }

  AutoSettings settings_;
  McmcSettings mcmc_;
};

StatusOr<std::unique_ptr<Method>> MakeAuto(const MethodOptions& options) {
  AutoSettings s;
  // mcmc's options pass through to its walk; auto's own are read here.
  std::vector<std::string> walk, mine;
  for (const auto& [key, value] : options.values()) {
    (key == "milp_share" || key == "milp_max_ops" ? mine : walk)
        .push_back(key + "=" + value);
  }
  DPLACE_ASSIGN_OR_RETURN(MethodOptions own, MethodOptions::Parse(mine));
  OptionReader reader("auto", own);
  reader.Double("milp_share", &s.milp_share);
  reader.Int("milp_max_ops", &s.milp_max_ops);
  DPLACE_RETURN_IF_ERROR(reader.Finish());
  if (!(s.milp_share >= 0 && s.milp_share < 1)) {
    return InvalidArgumentError(
        "method auto: option milp_share must be in [0, 1)");
  }
  DPLACE_ASSIGN_OR_RETURN(MethodOptions walk_options,
                          MethodOptions::Parse(walk));
  StatusOr<McmcSettings> mcmc = ReadMcmcSettings(walk_options);
  if (!mcmc.ok()) {
    return InvalidArgumentError("method auto: " + mcmc.status().message());
  }
  return std::unique_ptr<Method>(new AutoMethod(s, *std::move(mcmc)));
}

}  // namespace

REGISTER_METHOD("auto", 45,
                "the portfolio: every one-shot placer, the MILP where the "
                "graph is small enough for its bound to hold (at most 200 "
                "ops), then mcmc from the best within the budget; prints the "
                "certified gap to the lower bound; options milp_share, "
                "milp_max_ops and mcmc's",
                MakeAuto);

}  // namespace dplace
