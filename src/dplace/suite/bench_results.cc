// What a bench's results say: spreads over seeds, learning curves, the
// comparison with the best classical baseline, and the part of the results
// a --models / --methods selection keeps (bench.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "dplace/sim/lower_bound.h"
#include "dplace/suite/bench.h"

namespace dplace {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The bound a method's gap is over: the benchmark's, or the bound of
// placements that keep their colocation groups whole where it is larger
// and every feasible run's placement keeps them whole.
void ChooseBound(const BenchmarkResults& b, MethodResults* m) {
  m->lower_bound = b.lower_bound;
  m->lower_bound_binding = b.lower_bound_binding;
  double whole = kNaN;
  std::string binding;
  for (const RunRecord& r : m->runs) {
    if (!r.placed || !r.feasible) continue;
    if (!(r.whole_groups_bound > 0)) return;
    if (std::isnan(whole) || r.whole_groups_bound < whole) {
      whole = r.whole_groups_bound;
      binding = r.whole_groups_binding;
    }
  }
  if (whole > m->lower_bound) {
    m->lower_bound = whole;
    m->lower_bound_binding = binding;
  }
}

void Summarise(MethodResults* m) {
  const double lower_bound = m->lower_bound;
  std::vector<double> times, samples, seconds, walls;
  for (const RunRecord& r : m->runs) {
    walls.push_back(r.wall_seconds);
    if (!r.placed || !r.feasible) continue;
    times.push_back(r.step_time);
    if (m->searched) {
      samples.push_back(r.samples_to_best);
      seconds.push_back(r.seconds_to_best);
    }
  }
  m->step_time = SpreadOf(times);
  m->samples_to_best = SpreadOf(samples);
  m->seconds_to_best = SpreadOf(seconds);
  m->wall_seconds = SpreadOf(walls);
  m->vs_lower_bound = m->step_time.count && lower_bound > 0
                          ? m->step_time.median / lower_bound
                          : kNaN;
}

void CompareWithBaselines(BenchmarkResults* b) {
  b->best_baseline.clear();
  b->best_baseline_step_time = 0;
  for (const MethodResults& m : b->methods) {
    if (m.searched || m.step_time.count == 0) continue;
    if (b->best_baseline.empty() ||
        m.step_time.median < b->best_baseline_step_time) {
      b->best_baseline = m.label;
      b->best_baseline_step_time = m.step_time.median;
    }
  }
  for (MethodResults& m : b->methods) {
    m.reduction_vs_best_baseline =
        m.step_time.count && !b->best_baseline.empty()
            ? 1 - m.step_time.median / b->best_baseline_step_time
            : kNaN;
  }
}

}  // namespace

Spread SpreadOf(std::vector<double> values) {
  Spread s;
  s.count = static_cast<int>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  // Linear interpolation between order statistics.
  auto quantile = [&](double q) {
    const double pos = q * (values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (pos - lo) * (values[hi] - values[lo]);
  };
  s.min = values.front();
  s.max = values.back();
  s.median = quantile(0.5);
  s.q1 = quantile(0.25);
  s.q3 = quantile(0.75);
  return s;
}

LearningCurve CurveOf(const std::vector<SampleRecord>& history,
                      int max_points) {
  LearningCurve c;
  if (history.empty() || max_points <= 0) return c;
  const size_t bucket =
      (history.size() + max_points - 1) / static_cast<size_t>(max_points);
  for (size_t begin = 0; begin < history.size(); begin += bucket) {
    const size_t end = std::min(begin + bucket, history.size());
    double sum = 0;
    int feasible = 0;
    for (size_t i = begin; i < end; ++i) {
      if (!history[i].feasible) continue;
      sum += history[i].step_time;
      ++feasible;
    }
    const SampleRecord& last = history[end - 1];
    c.samples.push_back(last.index + 1);
    c.wall_seconds.push_back(last.wall_seconds);
    c.mean_step_time.push_back(feasible ? sum / feasible : kNaN);
    c.best_step_time.push_back(last.best_step_time > 0 ? last.best_step_time
                                                       : kNaN);
    c.oom_share.push_back(1.0 - static_cast<double>(feasible) / (end - begin));
  }
  return c;
}

void SummariseBenchmark(BenchmarkResults* benchmark) {
  // A bound a method proved (the MILP's) holds for every method's
  // placement: the benchmark's bound is the largest.
  for (const MethodResults& m : benchmark->methods) {
    for (const RunRecord& r : m.runs) {
      if (r.proven_bound > benchmark->lower_bound) {
        benchmark->lower_bound = r.proven_bound;
        benchmark->lower_bound_binding = kProvenBoundName;
      }
    }
  }
  for (MethodResults& m : benchmark->methods) {
    ChooseBound(*benchmark, &m);
    Summarise(&m);
  }
  CompareWithBaselines(benchmark);
}

StatusOr<BenchResults> SelectResults(const BenchResults& results,
                                     const std::vector<std::string>& models,
                                     const std::vector<std::string>& labels) {
  auto named = [](const std::vector<std::string>& names,
                  const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  BenchResults out = results;
  out.tables.clear();
  std::set<std::string> models_there, labels_there, models_seen, labels_seen;
  for (const TableResults& table : results.tables) {
    TableResults t = table;
    t.benchmarks.clear();
    for (BenchmarkResults b : table.benchmarks) {
      models_there.insert(b.name);
      models_there.insert(b.model);
      for (const MethodResults& m : b.methods) labels_there.insert(m.label);
      if (!models.empty() && !named(models, b.name) &&
          !named(models, b.model)) {
        continue;
      }
      models_seen.insert(b.name);
      models_seen.insert(b.model);
      std::vector<MethodResults> methods;
      for (MethodResults& m : b.methods) {
        if (!labels.empty() && !named(labels, m.label)) continue;
        labels_seen.insert(m.label);
        methods.push_back(std::move(m));
      }
      if (methods.empty()) continue;
      b.methods = std::move(methods);
      SummariseBenchmark(&b);
      t.benchmarks.push_back(std::move(b));
    }
    if (!t.benchmarks.empty()) out.tables.push_back(std::move(t));
  }
  if (!models.empty() || !labels.empty()) out.scale.clear();
  auto missing = [](const std::vector<std::string>& wanted,
                    const std::set<std::string>& seen,
                    const std::set<std::string>& there,
                    const std::string& what) -> Status {
    for (const std::string& w : wanted) {
      if (seen.count(w)) continue;
      std::string known;
      for (const std::string& t : there) {
        known += (known.empty() ? "" : ", ") + t;
      }
      return InvalidArgumentError(
          what + " " + w + ": " +
          (there.count(w) ? "not with the others" : "not in the results") +
          " (there: " + known + ")");
    }
    return Status::Ok();
  };
  DPLACE_RETURN_IF_ERROR(
      missing(models, models_seen, models_there, "--models"));
  DPLACE_RETURN_IF_ERROR(
      missing(labels, labels_seen, labels_there, "--methods"));
  return out;
}

}  // namespace dplace
