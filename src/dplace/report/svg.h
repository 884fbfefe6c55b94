// Inline SVG charts for the HTML reports: line and point plots (linear or
// log axes), horizontal bar charts. Each returns one <svg> element as text,
// well-formed XML, with no script and no external reference.
#ifndef DPLACE_REPORT_SVG_H_
#define DPLACE_REPORT_SVG_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dplace {
namespace report {

// Text safe inside XML elements and attribute values.
std::string Escape(std::string_view text);

// "%.3g"-style number for labels.
std::string Number(double value, const char* format = "%.3g");

// A colour per device index: CPUs grey, GPUs from a qualitative palette.
std::string DeviceColour(int gpu_index, bool is_cpu);
// A colour per series (methods in a plot).
std::string SeriesColour(int index);

struct Series {
  Series() = default;
  Series(std::string label, std::string colour)
      : label(std::move(label)), colour(std::move(colour)) {}
  std::string label;
  std::string colour;
  std::vector<double> x, y;  // Non-finite y: a gap in the line.
  bool line = true;          // Polyline through the points.
  bool points = false;       // A dot at each point.
  bool dashed = false;
  double width = 1.5;
  bool in_legend = true;
};

// A horizontal reference line (a baseline, a bound).
struct ReferenceLine {
  ReferenceLine(std::string label, double y, std::string colour = "#444",
                bool dotted = false)
      : label(std::move(label)),
        y(y),
        colour(std::move(colour)),
        dotted(dotted) {}
  std::string label;
  double y = 0;
  std::string colour = "#444";
  bool dotted = false;
};

struct PlotOptions {
  std::string title;
  std::string x_label, y_label;
  bool log_x = false, log_y = false;
  int width = 760, height = 340;
  // Clip y to this range when finite (points above are drawn at the edge).
  double y_max = 0;        // 0: from the data.
  bool y_min_zero = true;  // Linear y axis starts at 0.
};

std::string Plot(const std::vector<Series>& series,
                 const std::vector<ReferenceLine>& references,
                 const PlotOptions& options);

struct Bar {
  std::string label;
  double value = 0;
  // Capacity marker (e.g. memory); <= 0: none. A value above it is drawn
  // red.
  double capacity = 0;
  std::string colour;
  std::string text;  // Shown at the end of the bar.
};

struct BarChartOptions {
  std::string title;
  int width = 760;
  double max = 0;  // Axis maximum; 0: from the bars and capacities.
};

std::string BarChart(const std::vector<Bar>& bars,
                     const BarChartOptions& options);

}  // namespace report
}  // namespace dplace

#endif  // DPLACE_REPORT_SVG_H_
