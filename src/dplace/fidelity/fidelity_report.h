// A fidelity run (fidelity.h) in words and pictures: its Markdown table,
// one-line summaries and scatter plot, for `dplace fidelity` and
// docs/fidelity.md.
#ifndef DPLACE_FIDELITY_FIDELITY_REPORT_H_
#define DPLACE_FIDELITY_FIDELITY_REPORT_H_

#include <string>

#include "dplace/fidelity/fidelity.h"

namespace dplace {

// A markdown table, one row per sample: label, simulated, measured, error.
std::string FidelityTableMarkdown(const FidelityReport& report);
// "MAPE 8.1%, max error 21.3%, Spearman 0.94, Kendall 0.83 (n = 20)".
std::string FidelitySummary(const FidelityStats& stats);
// "re-measured (even rounds against odd rounds): MAPE 3.0%, ..."; empty when
// the report has one round.
std::string RetestSummary(const FidelityReport& report);
// "with the median of the rounds instead of the mean of the fastest
// quarter of the rounds: MAPE 4.1%, ... (n = 20); re-measured Spearman
// 0.93".
std::string OtherStatisticSummary(const FidelityReport& report,
                                  const FidelityReport::OtherStatistic& other);
// "simulated with <what> instead: MAPE ..."; empty without a comparison.
std::string ComparedSummary(const FidelityReport& report,
                            const std::string& what);
// "op time, measured over simulated: x1.00 on 1 device (3 placements),
// x1.16 on 2 devices (17 placements)"; empty without measured op times.
std::string OpTimeSummary(const FidelityReport& report);
// "links calibrated in the same rounds: every latency x2.71 (fits to all
// rounds x2.71, to rounds 1, 3, ... x2.50, to rounds 2, 4, ... x3.10);
// ops x1.150 on a device where the placement also uses another of its
// host's (the split placement)"; empty without a calibration.
std::string CalibrationSummary(const FidelityReport& report);
// "simulated with the cluster's own link latencies instead: MAPE ...";
// empty without a calibration.
std::string UncalibratedSummary(const FidelityReport& report);
// A scatter plot of simulated against measured step time (log axes) with
// the y = x line, as one <svg> element.
std::string FidelityScatterSvg(const FidelityReport& report,
                               const std::string& title);

}  // namespace dplace

#endif  // DPLACE_FIDELITY_FIDELITY_REPORT_H_
