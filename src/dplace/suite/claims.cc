#include "dplace/suite/claims.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dplace/report/markdown.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

const MethodResults* FindMethod(const BenchResults& results,
                                const SuiteClaim& claim,
                                const std::string& label) {
  for (const TableResults& t : results.tables) {
    if (t.title != claim.table) continue;
    for (const BenchmarkResults& b : t.benchmarks) {
      if (b.name != claim.benchmark) continue;
      for (const MethodResults& m : b.methods) {
        if (m.label == label) return &m;
      }
    }
  }
  return nullptr;
}

bool SamplesMeasure(const SuiteClaim& claim) {
  return claim.measure != "step_time";
}

bool CommonMeasure(const SuiteClaim& claim) {
  return claim.measure == "samples_to_common";
}

double MedianOrNaN(std::vector<double> values) {
  return values.empty() ? std::nan("") : SpreadOf(std::move(values)).median;
}

// The samples `run`'s best so far took to reach `level`: the end of the
// first stretch of its learning curve at or below it; NaN when none is.
double SamplesToLevel(const RunRecord& run, double level) {
  const LearningCurve& c = run.curve;
  for (size_t i = 0; i < c.best_step_time.size(); ++i) {
    if (c.best_step_time[i] <= level * (1 + 1e-12)) {
      return static_cast<double>(c.samples[i]);
    }
  }
  return std::nan("");
}

const RunRecord* FeasibleRun(const MethodResults* m, uint64_t seed) {
  if (!m) return nullptr;
  for (const RunRecord& r : m->runs) {
    if (r.seed == seed && r.placed && r.feasible) return &r;
  }
  return nullptr;
}

// "samples_to_common" for each of `compared` (the method, then the
// references; null: not in the results): on each seed where the method and
// a reference have a feasible run, the common level is the slowest of the
// compared runs' bests, and each run counts the samples its curve took to
// reach it. The median over those seeds; NaN when there is none.
std::vector<double> SamplesToCommonLevel(
    const std::vector<const MethodResults*>& compared) {
  std::vector<std::vector<double>> samples(compared.size());
  for (const RunRecord& own : compared[0]->runs) {
    std::vector<const RunRecord*> runs;
    double level = -1;
    for (const MethodResults* m : compared) {
      runs.push_back(FeasibleRun(m, own.seed));
      if (runs.back()) level = std::max(level, runs.back()->step_time);
    }
    const bool reference = std::any_of(runs.begin() + 1, runs.end(),
                                       [](auto* r) { return r != nullptr; });
    if (!runs[0] || !reference) continue;
    for (size_t i = 0; i < runs.size(); ++i) {
      const double s = runs[i] ? SamplesToLevel(*runs[i], level) : std::nan("");
      if (std::isfinite(s)) samples[i].push_back(s);
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& s : samples) {
    medians.push_back(MedianOrNaN(std::move(s)));
  }
  return medians;
}

// The claim's measure of each of `compared` (as above), the median over
// seeds; NaN when it has no feasible run.
std::vector<double> ValuesOf(
    const SuiteClaim& claim,
    const std::vector<const MethodResults*>& compared) {
  if (CommonMeasure(claim)) return SamplesToCommonLevel(compared);
  std::vector<double> values;
  for (const MethodResults* m : compared) {
    const Spread* s = !m                      ? nullptr
                      : SamplesMeasure(claim) ? &m->samples_to_best
                                              : &m->step_time;
    values.push_back(s && s->count ? s->median : std::nan(""));
  }
  return values;
}

std::string Quantity(const SuiteClaim& claim, double value) {
  return SamplesMeasure(claim) ? Format("%.0f samples", value)
                               : Format("%.4f s", value);
}

// "24.9% faster", "3.1% slower", "as fast" (under 0.05%); samples: "fewer",
// "more", "as many".
std::string Comparison(const SuiteClaim& claim, double reduction) {
  const bool samples = SamplesMeasure(claim);
  if (std::abs(reduction) < 5e-4) return samples ? "as many" : "as fast";
  const std::string amount = Format("%.1f%% ", 100 * std::abs(reduction));
  if (reduction > 0) return amount + (samples ? "fewer" : "faster");
  return amount + (samples ? "more" : "slower");
}

// The condition in words: "≥ 0.1% faster", "≤ 1.0% slower or faster",
// "not faster".
std::string Condition(const SuiteClaim& claim) {
  const bool samples = SamplesMeasure(claim);
  const std::string better = samples ? "fewer" : "faster";
  const std::string worse = samples ? "more" : "slower";
  std::string low;
  if (claim.min_reduction > 0) {
    low = Format("at least %.1f%% ", 100 * claim.min_reduction) + better;
  } else if (claim.min_reduction > -1) {
    low = Format("at most %.1f%% ", -100 * claim.min_reduction) + worse +
          ", or " + better;
  }
  std::string high;
  if (claim.max_reduction <= 0) {
    high = Format("at least %.1f%% ", -100 * claim.max_reduction) + worse;
    if (claim.max_reduction == 0) high = "not " + better;
  } else if (claim.max_reduction < 1) {
    high = Format("at most %.1f%% ", 100 * claim.max_reduction) + better;
  }
  if (low.empty()) return high.empty() ? "always" : high;
  return high.empty() ? low : low + "; " + high;
}

ClaimCheck Check(const SuiteClaim& claim, const BenchResults& results) {
  ClaimCheck c;
  c.claim = claim;
  const MethodResults* method = FindMethod(results, claim, claim.method);
  if (!method || method->runs.empty()) {
    c.figure = "not run: the results have no " + claim.method + " on " +
               claim.benchmark;
    return c;
  }
  std::vector<const MethodResults*> compared = {method};
  bool any_reference = false;  // Whether any reference ran.
  for (const std::string& label : claim.versus) {
    const MethodResults* m = FindMethod(results, claim, label);
    if (m && m->runs.empty()) m = nullptr;
    any_reference = any_reference || m;
    compared.push_back(m);
  }
  if (!any_reference) {
    c.figure = "not run: the results have none of the references on " +
               claim.benchmark;
    return c;
  }
  const std::vector<double> values = ValuesOf(claim, compared);
  // The fastest reference with a feasible run.
  for (size_t i = 1; i < values.size(); ++i) {
    const double v = values[i];
    if (std::isfinite(v) && (c.reference.empty() || v < c.reference_value)) {
      c.reference = claim.versus[i - 1];
      c.reference_value = v;
    }
  }
  c.value = values[0];
  const bool has_value = std::isfinite(c.value);
  const bool has_reference = !c.reference.empty();
  if (has_value && has_reference) {
    c.reduction = 1 - c.value / c.reference_value;
    c.figure = claim.method + " " + Quantity(claim, c.value) + " vs " +
               c.reference + " " + Quantity(claim, c.reference_value) +
               (CommonMeasure(claim) ? " to the slower one's best" : "") +
               ": " + Comparison(claim, c.reduction);
    const bool holds = c.reduction >= claim.min_reduction &&
                       c.reduction <= claim.max_reduction;
    c.verdict = holds ? ClaimVerdict::kHolds : ClaimVerdict::kDoesNotHold;
    return c;
  }
  if (SamplesMeasure(claim)) {
    c.figure = "not run: no feasible run of " +
               (has_value ? std::string("the references") : claim.method);
    return c;
  }
  if (has_value) {  // Every reference out of memory, the method not.
    c.figure = claim.method + " " + Quantity(claim, c.value) +
               "; every reference out of memory";
    c.verdict = claim.max_reduction >= 1 ? ClaimVerdict::kHolds
                                         : ClaimVerdict::kDoesNotHold;
    return c;
  }
  c.figure = claim.method + ": no run fits in memory" +
             (has_reference ? "; " + c.reference + " " +
                                  Quantity(claim, c.reference_value)
                            : std::string("; nor any reference's"));
  c.verdict = ClaimVerdict::kDoesNotHold;
  return c;
}

std::string VerdictCell(ClaimVerdict v) {
  switch (v) {
    case ClaimVerdict::kHolds:
      return "**holds**";
    case ClaimVerdict::kDoesNotHold:
      return "**does not hold**";
    case ClaimVerdict::kNotRun:
      return "not run";
  }
  return "";
}

}  // namespace

std::vector<ClaimCheck> CheckClaims(const std::vector<SuiteClaim>& claims,
                                    const BenchResults& results) {
  std::vector<ClaimCheck> checks;
  for (const SuiteClaim& claim : claims) {
    checks.push_back(Check(claim, results));
  }
  return checks;
}

std::string ClaimsToMarkdown(const std::vector<ClaimCheck>& checks) {
  if (checks.empty()) return "";
  std::vector<std::string> papers;
  for (const ClaimCheck& c : checks) {
    if (std::find(papers.begin(), papers.end(), c.claim.paper) ==
        papers.end()) {
      papers.push_back(c.claim.paper);
    }
  }
  std::string out =
      "## Claims\n\n"
      "Each paper's headline claims, checked against these results: the "
      "paper's figure (measured on its machines), dplace's (simulated, "
      "median over seeds; the reference is the fastest of the methods the "
      "claim compares with), the condition under which dplace's figure "
      "bears the claim out, and whether it does.\n";
  for (const std::string& paper : papers) {
    out += "\n### Claims: " + paper + "\n\n";
    MarkdownTable table({{"claim"},
                         {"benchmark"},
                         {"paper"},
                         {"dplace"},
                         {"holds when"},
                         {"holds"}});
    int holds = 0, total = 0, not_run = 0;
    for (const ClaimCheck& c : checks) {
      if (c.claim.paper != paper) continue;
      ++total;
      holds += c.verdict == ClaimVerdict::kHolds;
      not_run += c.verdict == ClaimVerdict::kNotRun;
      table.AddRow({MarkdownCell(c.claim.claim), "`" + c.claim.benchmark + "`",
                    MarkdownCell(c.claim.paper_figure), MarkdownCell(c.figure),
                    Condition(c.claim), VerdictCell(c.verdict)});
    }
    out += table.ToString() + "\n" + std::to_string(holds) + " of " +
           std::to_string(total) + " claims hold on dplace's simulator";
    if (not_run) out += " (" + std::to_string(not_run) + " not run)";
    out += ".\n";
  }
  return out;
}

}  // namespace dplace
