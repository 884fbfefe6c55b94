// A bench's results as Markdown (bench.h): a table per paper table in its
// layout, a detail table per benchmark, and the scale study.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dplace/report/markdown.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/suite/bench.h"
#include "dplace/util/format.h"

namespace dplace {
namespace {

// "0.9105" or "0.9105 (0.9001–0.9302)" for several runs; "OOM" when no run
// fits; "-" when the placer refused.
std::string StepTimeCell(const MethodResults& m) {
  if (m.step_time.count == 0) {
    for (const RunRecord& r : m.runs) {
      if (r.placed) return "OOM";
    }
    return "-";
  }
  std::string cell = Format("%.4f", m.step_time.median);
  if (m.runs.size() > 1) {
    cell += " (" + Format("%.4f", m.step_time.min) + "–" +
            Format("%.4f", m.step_time.max) + ")";
  }
  if (m.step_time.count < static_cast<int>(m.runs.size())) {
    cell += " [" + std::to_string(m.runs.size() - m.step_time.count) + " OOM]";
  }
  return cell;
}

// "+2.9%"; "0.0%" for what rounds to zero, so a tie reads as one.
std::string Percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  if (std::abs(fraction) < 5e-4) return "0.0%";
  return Format("%+.1f%%", 100 * fraction);
}

std::string PaperTable(const TableResults& t) {
  std::vector<std::string> methods;
  for (const BenchmarkResults& b : t.benchmarks) {
    for (const MethodResults& m : b.methods) {
      if (std::find(methods.begin(), methods.end(), m.label) == methods.end()) {
        methods.push_back(m.label);
      }
    }
  }
  MarkdownTable table({{"benchmark"}, {"GPUs", Align::kRight}});
  for (const std::string& m : methods) table.AddColumn({m, Align::kRight});
  table.AddColumn({"best learned vs best baseline"});
  for (const BenchmarkResults& b : t.benchmarks) {
    std::vector<std::string> row = {"`" + b.name + "`", std::to_string(b.gpus)};
    const MethodResults* best_learned = nullptr;
    for (const std::string& name : methods) {
      const MethodResults* m = nullptr;
      for (const MethodResults& x : b.methods) {
        if (x.label == name) m = &x;
      }
      row.push_back(m ? StepTimeCell(*m) : "");
      if (m && m->learned && m->step_time.count &&
          (!best_learned ||
           m->step_time.median < best_learned->step_time.median)) {
        best_learned = m;
      }
    }
    row.push_back(best_learned && !b.best_baseline.empty()
                      ? best_learned->label + " " +
                            Percent(best_learned->reduction_vs_best_baseline) +
                            " vs " + b.best_baseline
                      : "-");
    table.AddRow(std::move(row));
  }
  return table.ToString();
}

// Median samples a search ran: the budget, or fewer when a seconds budget
// stopped it first.
double SamplesRun(const MethodResults& m) {
  std::vector<double> samples;
  for (const RunRecord& r : m.runs) samples.push_back(r.samples);
  return SpreadOf(samples).median;
}

// The median's certified gap, "1.07x", or "1.00x optimal" when the bound
// proves the median optimal.
std::string GapCell(const MethodResults& m) {
  if (!std::isfinite(m.vs_lower_bound)) return "-";
  const bool optimal =
      ProvenOptimal(m.step_time.median, {m.lower_bound, m.lower_bound_binding});
  return Format("%.2fx", m.vs_lower_bound) + (optimal ? " optimal" : "");
}

// ", 0.403501 s for placements that keep their colocation groups whole
// (the gap of a method whose every placement does)", or empty when no
// method's gap is over that bound.
std::string WholeGroupsBound(const BenchmarkResults& b) {
  double whole = 0;
  for (const MethodResults& m : b.methods) {
    if (m.lower_bound_binding == kWholeGroupsBoundName ||
        m.lower_bound_binding == kQueuedPathBoundName) {
      whole = std::max(whole, m.lower_bound);
    }
  }
  if (!(whole > 0)) return "";
  return ", " + Format("%.6f", whole) +
         " s for placements that keep their colocation groups whole (the "
         "gap of a method whose every placement does)";
}

std::string DetailTable(const BenchmarkResults& b) {
  std::string out =
      "`" + b.model + "` on " +
      (b.cluster.empty() ? "the cluster it brings" : "`" + b.cluster + "`") +
      ": graph " + b.graph_name + ", " + std::to_string(b.ops) + " ops, " +
      std::to_string(b.devices) + " devices; lower bound " +
      DescribeLowerBound({b.lower_bound, b.lower_bound_binding}) +
      WholeGroupsBound(b) + "; best baseline " +
      (b.best_baseline.empty()
           ? std::string("none (every classical placer OOM or refused)")
           : b.best_baseline + " " + Format("%.4f", b.best_baseline_step_time) +
                 " s") +
      ".\n\n";
  MarkdownTable table({{"method"},
                       {"runs", Align::kRight},
                       {"step time (s), median (min–max)", Align::kRight},
                       {"reduction vs best baseline", Align::kRight},
                       {"vs lower bound", Align::kRight},
                       {"samples to best", Align::kRight},
                       {"wall time to best (s)", Align::kRight},
                       {"wall time (s)", Align::kRight},
                       {"note"}});
  for (const MethodResults& m : b.methods) {
    std::string name = m.label;
    if (m.label != m.method) name += ": " + m.method;
    if (!m.options.empty()) {
      std::string opts;
      for (const std::string& o : m.options)
        opts += (opts.empty() ? "" : ",") + o;
      name += " (" + opts + ")";
    }
    std::string note;
    for (const RunRecord& r : m.runs) {
      if (!r.placed) {
        note = r.error;
        break;
      }
      if (!r.feasible) {
        note = r.infeasible;
        break;
      }
    }
    if (note.size() > 160) note = note.substr(0, 157) + "...";
    const bool searched = m.searched && m.step_time.count;
    table.AddRow({name, std::to_string(m.runs.size()), StepTimeCell(m),
                  Percent(m.reduction_vs_best_baseline), GapCell(m),
                  searched ? Format("%.0f", m.samples_to_best.median) + " / " +
                                 Format("%.0f", SamplesRun(m))
                           : "-",
                  searched ? Format("%.2f", m.seconds_to_best.median) : "-",
                  Format(m.searched ? "%.2f" : "%.3f", m.wall_seconds.median),
                  MarkdownCell(note)});
  }
  return out + table.ToString();
}

std::string ScaleTable(const BenchResults& r) {
  std::vector<std::string> methods;
  for (const ScaleRow& row : r.scale) {
    for (const ScalePlacerCost& p : row.placers) {
      if (std::find(methods.begin(), methods.end(), p.method) ==
          methods.end()) {
        methods.push_back(p.method);
      }
    }
  }
  MarkdownTable table({{"model"},
                       {"ops", Align::kRight},
                       {"edges", Align::kRight},
                       {"build (s)", Align::kRight},
                       {"simulate one step (ms)", Align::kRight}});
  for (const std::string& m : methods) {
    table.AddColumn({m + " (s)", Align::kRight});
  }
  table.AddColumn({"RSS", Align::kRight});
  table.AddColumn({"peak RSS", Align::kRight});
  for (const ScaleRow& row : r.scale) {
    std::vector<std::string> cells = {
        "`" + row.model + "`", std::to_string(row.ops),
        std::to_string(row.edges), Format("%.3f", row.build_seconds),
        Format("%.2f", row.simulate_seconds * 1e3)};
    for (const std::string& m : methods) {
      std::string cell = "-";
      for (const ScalePlacerCost& p : row.placers) {
        if (p.method == m)
          cell = Format("%.3f", p.seconds) + (p.placed ? "" : " (refused)");
      }
      cells.push_back(cell);
    }
    cells.push_back(Format("%.0f MB", row.rss_bytes / 1e6));
    cells.push_back(Format("%.0f MB", row.peak_rss_bytes / 1e6));
    table.AddRow(std::move(cells));
  }
  return table.ToString();
}

}  // namespace

std::string BenchResultsToMarkdown(const BenchResults& r, bool details) {
  std::string out;
  if (!r.complete) {
    out += "Unfinished: " + std::to_string(r.runs_done) + " of " +
           std::to_string(r.runs_total) +
           " runs (`dplace bench --resume` continues it).\n\n";
  }
  for (const TableResults& t : r.tables) {
    out += "## " + t.title + "\n\n";
    if (!t.source.empty()) out += t.source + "\n\n";
    out +=
        "Step time of the best placement in seconds (median over seeds, "
        "min–max in brackets when several); OOM: no run fit in memory; -: "
        "the placer refused.\n\n";
    out += PaperTable(t);
    for (const BenchmarkResults& b : t.benchmarks) {
      if (details) out += "\n### `" + b.name + "`\n\n" + DetailTable(b);
    }
    out += "\n";
  }
  if (!r.scale.empty()) {
    out +=
        "## Scale: simulator and placer cost against graph size\n\n"
        "On `" +
        r.scale_cluster +
        "`. Simulating one step of a round-robin placement (median of "
        "repeats); each placer's wall time to place; resident memory "
        "with the graph loaded, and the process's peak so far.\n\n";
    out += ScaleTable(r) + "\n";
  }
  return out;
}

}  // namespace dplace
