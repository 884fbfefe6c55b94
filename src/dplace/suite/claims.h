// The papers' headline claims (SuiteClaim, from a suite's "claims"),
// checked against a bench's results: for each, the paper's figure,
// dplace's figure on its simulator and whether the claim holds there. The
// claims sections of docs/results.md are this module's Markdown.
#ifndef DPLACE_SUITE_CLAIMS_H_
#define DPLACE_SUITE_CLAIMS_H_

#include <limits>
#include <string>
#include <vector>

#include "dplace/suite/bench.h"
#include "dplace/suite/suite.h"

namespace dplace {

enum class ClaimVerdict {
  kHolds,
  kDoesNotHold,
  kNotRun,  // The results lack the method or the reference, or (samples to
            // best) a feasible run of either.
};

struct ClaimCheck {
  SuiteClaim claim;
  ClaimVerdict verdict = ClaimVerdict::kNotRun;
  // The fastest of claim.versus with a feasible run (its label); empty when
  // none has one.
  std::string reference;
  // Medians over seeds of claim.measure; NaN when there is none.
  double value = std::numeric_limits<double>::quiet_NaN();
  double reference_value = std::numeric_limits<double>::quiet_NaN();
  // 1 - value / reference_value (> 0: the method is faster, or needs fewer
  // samples); NaN when either is missing.
  double reduction = std::numeric_limits<double>::quiet_NaN();
  // dplace's figure in words ("hierarchical 0.9012 s vs expert 1.2000 s:
  // 24.9% faster"), or why the claim did not run.
  std::string figure;
};

// Checks every claim against `results`. A method with runs but none
// feasible does not hold against a feasible reference; a method with a
// feasible run holds against references that all ran out of memory (the
// papers' "OOM" baselines).
std::vector<ClaimCheck> CheckClaims(const std::vector<SuiteClaim>& claims,
                                    const BenchResults& results);

// A "## Claims" section: per paper (in the order of first appearance) a
// table of claim, benchmark, the paper's figure, dplace's figure, when it
// holds and whether it does, then the count that hold. Empty when `checks`
// is.
std::string ClaimsToMarkdown(const std::vector<ClaimCheck>& checks);

}  // namespace dplace

#endif  // DPLACE_SUITE_CLAIMS_H_
