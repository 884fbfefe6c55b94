#include "dplace/fidelity/fidelity_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dplace/report/markdown.h"
#include "dplace/report/svg.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

std::string Percent(double fraction) {
  return std::isfinite(fraction) ? Format("%.1f%%", 100 * fraction) : "-";
}

std::string Correlation(double r) {
  return std::isfinite(r) ? Format("%.3f", r) : "undefined";
}

}  // namespace

std::string FidelityTableMarkdown(const FidelityReport& report) {
  bool rounds = false, op_times = false;
  for (const FidelitySample& s : report.samples) {
    rounds = rounds || s.round_step_times.size() > 1;
    op_times = op_times || std::isfinite(s.measured_op_seconds);
  }
  const std::string measured =
      "measured (s" +
      (rounds ? ", " + std::string(RoundStatisticPhrase(report.statistic,
                                                        report.pooled_steps))
              : std::string()) +
      ")";
  MarkdownTable table({{"placement"},
                       {"simulated (s)", Align::kRight},
                       {measured, Align::kRight},
                       {"error", Align::kRight}});
  if (op_times) {
    table.AddColumn({"op time, measured / simulated", Align::kRight});
  }
  if (rounds) table.AddColumn({"rounds (s)", Align::kRight});
  for (const FidelitySample& s : report.samples) {
    const bool both = s.simulated_feasible && s.measured.feasible;
    std::vector<std::string> cells = {
        s.label,
        s.simulated_feasible ? Format("%.4f", s.simulated) : "infeasible",
        s.measured.feasible ? Format("%.4f", s.measured.step_time)
                            : "infeasible: " + s.measured.infeasible_reason,
        both ? Format("%+.1f%%", 100 * (s.simulated - s.measured.step_time) /
                                     s.measured.step_time)
             : "-"};
    if (op_times) {
      const double ratio = s.measured_op_seconds / s.simulated_op_seconds;
      cells.push_back(std::isfinite(ratio) ? Format("x%.2f", ratio) : "-");
    }
    if (rounds) {
      std::string times;
      for (double t : s.round_step_times) {
        times += (times.empty() ? "" : " / ") + Format("%.4f", t);
      }
      cells.push_back(times.empty() ? std::string("-") : times);
    }
    table.AddRow(std::move(cells));
  }
  return table.ToString();
}

std::string FidelitySummary(const FidelityStats& stats) {
  return "MAPE " + Percent(stats.mape) + ", max error " +
         Percent(stats.max_ape) + ", Spearman " + Correlation(stats.spearman) +
         ", Kendall " + Correlation(stats.kendall) +
         " (n = " + std::to_string(stats.count) + ")";
}

std::string RetestSummary(const FidelityReport& report) {
  if (report.retest.count == 0) return "";
  return "re-measured (even rounds against odd rounds): " +
         FidelitySummary(report.retest);
}

std::string OtherStatisticSummary(const FidelityReport& report,
                                  const FidelityReport::OtherStatistic& other) {
  std::string line =
      "with " +
      std::string(RoundStatisticPhrase(other.statistic, report.pooled_steps)) +
      " instead of " +
      std::string(RoundStatisticPhrase(report.statistic, report.pooled_steps)) +
      ": " + FidelitySummary(other.stats);
  if (other.retest.count > 0) {
    line += "; re-measured Spearman " + Correlation(other.retest.spearman);
  }
  return line;
}

std::string ComparedSummary(const FidelityReport& report,
                            const std::string& what) {
  if (report.compared.count == 0) return "";
  return "simulated with " + what +
         " instead: " + FidelitySummary(report.compared);
}

std::string OpTimeSummary(const FidelityReport& report) {
  std::string line;
  for (const FidelityReport::OpTimeRatio& r : report.op_time_ratios) {
    line += (line.empty() ? "op time, measured over simulated: " : ", ") +
            Format("x%.2f", r.mean_ratio) + " on " + std::to_string(r.devices) +
            (r.devices == 1 ? " device (" : " devices (") +
            std::to_string(r.samples) +
            (r.samples == 1 ? " placement)" : " placements)");
  }
  return line;
}

std::string CalibrationSummary(const FidelityReport& report) {
  if (!report.calibration) return "";
  const LinkCalibration& c = *report.calibration;
  auto scale = [](double x) {
    return std::isfinite(x) ? Format("x%.2f", x) : std::string("out of reach");
  };
  std::string line = "links calibrated in the same rounds: every latency " +
                     scale(c.latency_scale) + " (fit to all rounds " +
                     scale(c.fitted_scale);
  if (c.reference_rounds.size() >= 2) {
    line += ", to rounds 1, 3, ... " + scale(c.half_scales[0]) +
            ", to rounds 2, 4, ... " + scale(c.half_scales[1]);
  }
  line += ")";
  if (c.op_time_scale != 1) {
    line += "; op times " + Format("x%.3f", c.op_time_scale) +
            " (the reference at its measured time)";
  }
  if (!c.split.empty()) {
    line += "; ops " + Format("x%.3f", 1 + c.shared_host_slowdown) +
            " on a device where the placement also uses another of its "
            "host's (the split placement)";
  }
  return line;
}

std::string UncalibratedSummary(const FidelityReport& report) {
  if (report.uncalibrated.count == 0) return "";
  return "simulated with the cluster's own link latencies instead: " +
         FidelitySummary(report.uncalibrated);
}

std::string FidelityScatterSvg(const FidelityReport& report,
                               const std::string& title) {
  report::Series points("placements", report::SeriesColour(0));
  points.line = false;
  points.points = true;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const FidelitySample& s : report.samples) {
    if (!s.simulated_feasible || !s.measured.feasible) continue;
    points.x.push_back(s.measured.step_time);
    points.y.push_back(s.simulated);
    lo = std::min({lo, s.measured.step_time, s.simulated});
    hi = std::max({hi, s.measured.step_time, s.simulated});
  }
  report::Series diagonal("simulated = measured", "#888");
  diagonal.dashed = true;
  diagonal.width = 1;
  if (hi > 0) {
    diagonal.x = {lo, hi};
    diagonal.y = {lo, hi};
  }
  report::PlotOptions options;
  options.title = title;
  options.x_label = "measured step time (s)";
  options.y_label = "simulated step time (s)";
  options.log_x = options.log_y = true;
  options.y_min_zero = false;
  options.height = 480;
  options.width = 640;
  return report::Plot({diagonal, points}, {}, options);
}

}  // namespace dplace
