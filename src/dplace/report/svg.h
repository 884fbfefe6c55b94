// Inline SVG charts for the HTML reports: line and point plots (linear or
// log axes), horizontal bar charts. Each returns one <svg class="chart ...">
// element as text, well-formed XML, with no script and no external
// reference. Every chart labels its axes with their units (text of class
// "axis-label"), keeps its text labels apart (legends and reference-line
// labels sit right of the plot area, never on a curve), and gives its
// shapes a <title> that a browser shows on hover.
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

// The unit to show seconds in, so that `max_seconds` reads as a number of
// at least 1: "s", "ms" or "µs", and the factor from seconds to it.
struct TimeUnit {
  const char* name;
  double per_second;
};
TimeUnit TimeUnitFor(double max_seconds);

// "1.23 ms": `seconds` in the unit that suits it.
std::string FormatSeconds(double seconds);

// Tick positions for an axis from `lo` to `hi`: multiples of 1, 2 or 5
// times a power of ten, about `target` of them, all within [lo, hi].
std::vector<double> NiceTicks(double lo, double hi, int target = 5);

// "<title>text</title>": a shape's hover text.
std::string Title(const std::string& text);

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
  bool crosses = false;      // Points as crosses (x) instead of dots.
  bool dashed = false;
  double width = 1.5;
  bool in_legend = true;
};

// A horizontal reference line (a baseline, a bound); its label is a legend
// entry, right of the plot area.
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
  // Under the bars, with the unit of `value`: "busy (% of the step)".
  std::string axis_label;
  int width = 760;
  double max = 0;  // Axis maximum; 0: from the bars and capacities.
};

std::string BarChart(const std::vector<Bar>& bars,
                     const BarChartOptions& options);

}  // namespace report
}  // namespace dplace

#endif  // DPLACE_REPORT_SVG_H_
