#include "dplace/suite/claims.h"

#include <algorithm>
#include <cmath>

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
  return claim.measure == "samples_to_best";
}

// The claim's measure of `m`: NaN when no run is feasible.
double ValueOf(const SuiteClaim& claim, const MethodResults& m) {
  const Spread& s = SamplesMeasure(claim) ? m.samples_to_best : m.step_time;
  return s.count ? s.median : std::nan("");
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
  // The fastest reference with a feasible run; whether any reference ran.
  bool any_reference = false;
  for (const std::string& label : claim.versus) {
    const MethodResults* m = FindMethod(results, claim, label);
    if (!m || m->runs.empty()) continue;
    any_reference = true;
    const double v = ValueOf(claim, *m);
    if (std::isfinite(v) && (c.reference.empty() || v < c.reference_value)) {
      c.reference = label;
      c.reference_value = v;
    }
  }
  if (!any_reference) {
    c.figure = "not run: the results have none of the references on " +
               claim.benchmark;
    return c;
  }
  c.value = ValueOf(claim, *method);
  const bool has_value = std::isfinite(c.value);
  const bool has_reference = !c.reference.empty();
  if (has_value && has_reference) {
    c.reduction = 1 - c.value / c.reference_value;
    c.figure = claim.method + " " + Quantity(claim, c.value) + " vs " +
               c.reference + " " + Quantity(claim, c.reference_value) + ": " +
               Comparison(claim, c.reduction);
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

std::string TableCell(std::string text) {
  std::replace(text.begin(), text.end(), '|', '/');
  return text;
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
    out += "\n### Claims: " + paper +
           "\n\n| claim | benchmark | paper | dplace | holds when | holds |\n"
           "|---|---|---|---|---|---|\n";
    int holds = 0, total = 0, not_run = 0;
    for (const ClaimCheck& c : checks) {
      if (c.claim.paper != paper) continue;
      ++total;
      holds += c.verdict == ClaimVerdict::kHolds;
      not_run += c.verdict == ClaimVerdict::kNotRun;
      out += "| " + TableCell(c.claim.claim) + " | `" + c.claim.benchmark +
             "` | " + TableCell(c.claim.paper_figure) + " | " +
             TableCell(c.figure) + " | " + Condition(c.claim) + " | " +
             VerdictCell(c.verdict) + " |\n";
    }
    out += "\n" + std::to_string(holds) + " of " + std::to_string(total) +
           " claims hold on dplace's simulator";
    if (not_run) out += " (" + std::to_string(not_run) + " not run)";
    out += ".\n";
  }
  return out;
}

}  // namespace dplace
