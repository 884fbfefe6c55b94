#include "dplace/report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace dplace {
namespace report {
namespace {

constexpr int kLeft = 72, kRight = 16, kTop = 28, kBottom = 44;
constexpr int kLegendWidth = 230;

std::string Fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// Maps data to pixels on one axis.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double px_lo = 0, px_hi = 1;
  double Map(double v) const {
    double a = log ? std::log10(std::max(v, 1e-300)) : v;
    double l = log ? std::log10(lo) : lo, h = log ? std::log10(hi) : hi;
    if (h <= l) h = l + 1;
    return px_lo + (a - l) / (h - l) * (px_hi - px_lo);
  }
  std::vector<double> Ticks() const {
    std::vector<double> ticks;
    if (log) {
      for (double p = std::floor(std::log10(lo)); p <= std::log10(hi) + 1e-9;
           p += 1) {
        const double t = std::pow(10.0, p);
        if (t >= lo * 0.999 && t <= hi * 1.001) ticks.push_back(t);
      }
      if (ticks.size() < 2) ticks = {lo, hi};
      return ticks;
    }
    return NiceTicks(lo, hi);
  }
};

// Rounds a log axis out to decades.
void Widen(Axis* axis) {
  if (axis->log) {
    axis->lo = std::pow(10.0, std::floor(std::log10(axis->lo)));
    axis->hi = std::pow(10.0, std::ceil(std::log10(axis->hi)));
    if (axis->hi <= axis->lo) axis->hi = axis->lo * 10;
  } else if (axis->hi <= axis->lo) {
    axis->hi = axis->lo + (axis->lo == 0 ? 1 : std::abs(axis->lo));
  }
}

std::string Text(double x, double y, const std::string& text,
                 const char* anchor = "start", const char* extra = "") {
  return "<text x=\"" + Fixed(x) + "\" y=\"" + Fixed(y) + "\" text-anchor=\"" +
         anchor + "\"" + extra + ">" + Escape(text) + "</text>";
}

}  // namespace

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control characters are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string Number(double value, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

TimeUnit TimeUnitFor(double max_seconds) {
  if (max_seconds >= 1 || max_seconds <= 0) return {"s", 1};
  if (max_seconds >= 1e-3) return {"ms", 1e3};
  return {"\u00b5s", 1e6};
}

std::string FormatSeconds(double seconds) {
  const TimeUnit unit = TimeUnitFor(seconds);
  return Number(seconds * unit.per_second, "%.3g") + " " + unit.name;
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag * 10;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (mag * m >= raw) {
      step = mag * m;
      break;
    }
  }
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9;
       t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

std::string Title(const std::string& text) {
  return "<title>" + Escape(text) + "</title>";
}

std::string DeviceColour(int gpu_index, bool is_cpu) {
  static const char* const kPalette[] = {
      "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
      "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79"};
  if (is_cpu) return "#9a9a9a";
  return kPalette[std::max(gpu_index, 0) % 10];
}

std::string SeriesColour(int index) {
  static const char* const kPalette[] = {
      "#e6550d", "#3182bd", "#31a354", "#756bb1", "#d6616b",
      "#8c6d31", "#de9ed6", "#17becf", "#636363", "#bcbd22"};
  return kPalette[std::max(index, 0) % 10];
}

std::string Plot(const std::vector<Series>& series,
                 const std::vector<ReferenceLine>& references,
                 const PlotOptions& o) {
  // The legend sits right of the plot area, so it never hides a curve.
  bool has_legend = !references.empty();
  for (const Series& s : series) has_legend |= s.in_legend && !s.label.empty();
  const int right = has_legend ? kLegendWidth : kRight;
  const double inf = std::numeric_limits<double>::infinity();
  Axis x{inf, -inf, o.log_x, static_cast<double>(kLeft),
         static_cast<double>(o.width - right)};
  Axis y{inf, -inf, o.log_y, static_cast<double>(o.height - kBottom),
         static_cast<double>(kTop)};
  auto usable = [](double v, bool log) {
    return std::isfinite(v) && (!log || v > 0);
  };
  for (const Series& s : series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], o.log_x) || !usable(s.y[i], o.log_y)) continue;
      x.lo = std::min(x.lo, s.x[i]);
      x.hi = std::max(x.hi, s.x[i]);
      y.lo = std::min(y.lo, s.y[i]);
      y.hi = std::max(y.hi, s.y[i]);
    }
  }
  for (const ReferenceLine& r : references) {
    if (!usable(r.y, o.log_y)) continue;
    y.lo = std::min(y.lo, r.y);
    y.hi = std::max(y.hi, r.y);
  }
  if (!std::isfinite(x.lo)) x.lo = o.log_x ? 1 : 0, x.hi = o.log_x ? 10 : 1;
  if (!std::isfinite(y.lo)) y.lo = o.log_y ? 1 : 0, y.hi = o.log_y ? 10 : 1;
  if (o.y_max > 0 && y.hi > o.y_max) y.hi = o.y_max;
  if (!o.log_y && o.y_min_zero) y.lo = std::min(0.0, y.lo);
  if (!o.log_y) y.hi += (y.hi - y.lo) * 0.05;
  Widen(&x);
  Widen(&y);

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(o.width) + "\" height=\"" +
                    std::to_string(o.height) + "\" viewBox=\"0 0 " +
                    std::to_string(o.width) + " " + std::to_string(o.height) +
                    "\" class=\"chart plot\">";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(o.width) +
         "\" height=\"" + std::to_string(o.height) + "\" fill=\"#fff\"/>";
  if (!o.title.empty()) {
    svg += Text(kLeft, 18, o.title, "start", " font-weight=\"bold\"");
  }
  // Grid and ticks.
  svg += "<g font-size=\"11\" fill=\"#333\">";
  for (double t : x.Ticks()) {
    const double px = x.Map(t);
    svg += "<line x1=\"" + Fixed(px) + "\" y1=\"" + Fixed(y.px_lo) +
           "\" x2=\"" + Fixed(px) + "\" y2=\"" + Fixed(y.px_hi) +
           "\" stroke=\"#e5e5e5\"/>";
    // The last label ends at the edge rather than past it; the first
    // starts at the y axis rather than under the y axis' lowest label.
    const char* anchor = px > o.width - 28   ? "end"
                         : px < x.px_lo + 12 ? "start"
                                             : "middle";
    svg += Text(px, y.px_lo + 14, Number(t, "%.4g"), anchor);
  }
  for (double t : y.Ticks()) {
    const double py = y.Map(t);
    svg += "<line x1=\"" + Fixed(x.px_lo) + "\" y1=\"" + Fixed(py) +
           "\" x2=\"" + Fixed(x.px_hi) + "\" y2=\"" + Fixed(py) +
           "\" stroke=\"#e5e5e5\"/>";
    svg += Text(x.px_lo - 6, py + 4, Number(t, "%.4g"), "end");
  }
  svg += "<rect x=\"" + Fixed(x.px_lo) + "\" y=\"" + Fixed(y.px_hi) +
         "\" width=\"" + Fixed(x.px_hi - x.px_lo) + "\" height=\"" +
         Fixed(y.px_lo - y.px_hi) + "\" fill=\"none\" stroke=\"#888\"/>";
  svg += Text((x.px_lo + x.px_hi) / 2, o.height - 8, o.x_label, "middle",
              " class=\"axis-label\"");
  svg += "<text class=\"axis-label\" transform=\"translate(14," +
         Fixed((y.px_lo + y.px_hi) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + Escape(o.y_label) +
         "</text></g>";

  auto clamp_y = [&](double v) {
    const double lo = std::min(y.px_lo, y.px_hi),
                 hi = std::max(y.px_lo, y.px_hi);
    return std::min(std::max(y.Map(v), lo), hi);
  };
  for (const ReferenceLine& r : references) {
    if (!usable(r.y, o.log_y)) continue;
    const double py = clamp_y(r.y);
    svg +=
        "<line x1=\"" + Fixed(x.px_lo) + "\" y1=\"" + Fixed(py) + "\" x2=\"" +
        Fixed(x.px_hi) + "\" y2=\"" + Fixed(py) + "\" stroke=\"" + r.colour +
        "\" stroke-width=\"1.2\"" +
        (r.dotted ? " stroke-dasharray=\"2,3\"" : " stroke-dasharray=\"6,4\"") +
        ">" + Title(r.label) + "</line>";
  }
  for (const Series& s : series) {
    std::string line, dots;
    std::string points;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], o.log_x) || !usable(s.y[i], o.log_y)) {
        if (!points.empty()) {
          line += "<polyline points=\"" + points + "\"/>";
          points.clear();
        }
        continue;
      }
      const double mx = x.Map(s.x[i]), my = clamp_y(s.y[i]);
      const std::string px = Fixed(mx), py = Fixed(my);
      points += (points.empty() ? "" : " ") + px + "," + py;
      if (s.points && s.crosses) {
        dots += "M" + Fixed(mx - 3) + " " + Fixed(my - 3) + "l6 6M" +
                Fixed(mx - 3) + " " + Fixed(my + 3) + "l6 -6";
      } else if (s.points) {
        dots += "M" + px + " " + py + "h0";
      }
    }
    if (!points.empty()) line += "<polyline points=\"" + points + "\"/>";
    if (s.line && !line.empty()) {
      svg += "<g fill=\"none\" stroke=\"" + s.colour + "\" stroke-width=\"" +
             Number(s.width, "%.2g") + "\"" +
             (s.dashed ? " stroke-dasharray=\"5,3\"" : "") + ">" +
             Title(s.label) + line + "</g>";
    }
    if (s.points && !dots.empty()) {
      svg += "<path d=\"" + dots + "\" stroke=\"" + s.colour +
             "\" stroke-width=\"" + (s.crosses ? "1.5" : "3") +
             "\" stroke-linecap=\"round\" fill=\"none\" opacity=\"" +
             (s.crosses ? "0.8" : "0.55") + "\">" + Title(s.label) + "</path>";
    }
  }
  // Legend, top right, one row per series and reference line.
  int row = 0;
  std::string legend;
  const double lx = x.px_hi + 12;
  for (const Series& s : series) {
    if (!s.in_legend || s.label.empty()) continue;
    const double ly = kTop + 10 + 16 * row++;
    if (s.points && s.crosses) {
      legend += "<path d=\"M" + Fixed(lx + 6) + " " + Fixed(ly - 7) + "l6 6M" +
                Fixed(lx + 6) + " " + Fixed(ly - 1) + "l6 -6\" stroke=\"" +
                s.colour + "\" stroke-width=\"1.5\" fill=\"none\"/>";
    } else {
      legend += "<line x1=\"" + Fixed(lx) + "\" y1=\"" + Fixed(ly - 4) +
                "\" x2=\"" + Fixed(lx + 18) + "\" y2=\"" + Fixed(ly - 4) +
                "\" stroke=\"" + s.colour + "\" stroke-width=\"3\"" +
                (s.dashed ? " stroke-dasharray=\"5,3\"" : "") + "/>";
    }
    legend += Text(lx + 24, ly, s.label);
  }
  for (const ReferenceLine& r : references) {
    const double ly = kTop + 10 + 16 * row++;
    legend +=
        "<line x1=\"" + Fixed(lx) + "\" y1=\"" + Fixed(ly - 4) + "\" x2=\"" +
        Fixed(lx + 18) + "\" y2=\"" + Fixed(ly - 4) + "\" stroke=\"" +
        r.colour + "\" stroke-width=\"1.2\"" +
        (r.dotted ? " stroke-dasharray=\"2,3\"" : " stroke-dasharray=\"6,4\"") +
        "/>";
    legend += Text(lx + 24, ly, r.label);
  }
  if (!legend.empty()) {
    svg += "<g font-size=\"11\" fill=\"#222\">" + legend + "</g>";
  }
  svg += "</svg>";
  return svg;
}

std::string BarChart(const std::vector<Bar>& bars, const BarChartOptions& o) {
  const int label_width = 120, text_width = 200, row = 22, top = 26;
  const int axis = o.axis_label.empty() ? 0 : 22;
  const int height = top + row * static_cast<int>(bars.size()) + 8 + axis;
  double max = o.max;
  for (const Bar& b : bars) {
    max = std::max({max, b.value, b.capacity});
  }
  if (max <= 0) max = 1;
  const double plot_width = o.width - label_width - text_width;
  auto px = [&](double v) { return label_width + v / max * plot_width; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    std::to_string(o.width) + "\" height=\"" +
                    std::to_string(height) + "\" viewBox=\"0 0 " +
                    std::to_string(o.width) + " " + std::to_string(height) +
                    "\" class=\"chart bars\">";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(o.width) +
         "\" height=\"" + std::to_string(height) + "\" fill=\"#fff\"/>";
  if (!o.title.empty()) {
    svg += Text(4, 16, o.title, "start", " font-weight=\"bold\"");
  }
  svg += "<g font-size=\"12\" fill=\"#222\">";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    const bool over = b.capacity > 0 && b.value > b.capacity;
    svg += Text(label_width - 6, y + 14, b.label, "end");
    if (b.capacity > 0) {
      svg += "<rect x=\"" + Fixed(px(0)) + "\" y=\"" + Fixed(y + 2) +
             "\" width=\"" + Fixed(px(b.capacity) - px(0)) +
             "\" height=\"16\" fill=\"#f1f1f1\" stroke=\"#bbb\"/>";
    }
    svg += "<rect x=\"" + Fixed(px(0)) + "\" y=\"" + Fixed(y + 4) +
           "\" width=\"" + Fixed(std::max(0.0, px(b.value) - px(0))) +
           "\" height=\"12\" fill=\"" + (over ? "#d62728" : b.colour) + "\">" +
           Title(b.label + ": " + b.text) + "</rect>";
    if (b.capacity > 0) {
      svg += "<line x1=\"" + Fixed(px(b.capacity)) + "\" y1=\"" + Fixed(y) +
             "\" x2=\"" + Fixed(px(b.capacity)) + "\" y2=\"" + Fixed(y + 20) +
             "\" stroke=\"#333\" stroke-width=\"2\"/>";
    }
    svg += Text(px(std::max(b.value, b.capacity)) + 6, y + 14, b.text);
  }
  if (!o.axis_label.empty()) {
    svg += Text(label_width + plot_width / 2, height - 8, o.axis_label,
                "middle", " class=\"axis-label\"");
  }
  svg += "</g></svg>";
  return svg;
}

}  // namespace report
}  // namespace dplace
