// The bench results as JSON ("dplace.bench-results", docs/formats.md): the
// writer, the reader that continues an unfinished run or feeds the claims,
// and the check that a results file belongs to a suite.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "dplace/io/json_fields.h"
#include "dplace/method/method.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/suite/bench.h"

namespace dplace {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json NumberOrNull(double x) { return std::isfinite(x) ? json(x) : json(); }

json SpreadJson(const Spread& s) {
  if (s.count == 0) return json{{"count", 0}};
  return json{{"count", s.count}, {"median", s.median}, {"min", s.min},
              {"max", s.max},     {"q1", s.q1},         {"q3", s.q3}};
}

json CurveJson(const LearningCurve& c) {
  json mean = json::array(), best = json::array();
  for (double x : c.mean_step_time) mean.push_back(NumberOrNull(x));
  for (double x : c.best_step_time) best.push_back(NumberOrNull(x));
  return json{{"samples", c.samples},
              {"wall_seconds", c.wall_seconds},
              {"mean_step_time", mean},
              {"best_step_time", best},
              {"oom_share", c.oom_share}};
}

json RunJson(const RunRecord& r, bool searched) {
  json j{
      {"seed", r.seed}, {"placed", r.placed}, {"wall_seconds", r.wall_seconds}};
  if (!r.placed) {
    j["error"] = r.error;
    return j;
  }
  j["step_time"] = r.step_time;
  j["feasible"] = r.feasible;
  if (!r.feasible) j["infeasible"] = r.infeasible;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  if (r.proven_bound > 0) j["proven_bound"] = r.proven_bound;
  if (r.whole_groups_bound > 0) {
    j["whole_groups_bound"] = r.whole_groups_bound;
    j["whole_groups_binding"] = r.whole_groups_binding;
  }
  if (searched) {
    j["samples"] = r.samples;
    j["samples_to_best"] = r.samples_to_best;
    j["seconds_to_best"] = r.seconds_to_best;
    j["groups"] = r.num_groups;
    j["curve"] = CurveJson(r.curve);
  }
  return j;
}

json MethodJson(const MethodResults& m) {
  json runs = json::array();
  for (const RunRecord& r : m.runs) runs.push_back(RunJson(r, m.searched));
  json j{{"method", m.method},
         {"label", m.label},
         {"searched", m.searched},
         {"learned", m.learned},
         {"options", m.options},
         {"runs", runs},
         {"step_time", SpreadJson(m.step_time)},
         {"wall_seconds", SpreadJson(m.wall_seconds)},
         {"reduction_vs_best_baseline",
          NumberOrNull(m.reduction_vs_best_baseline)},
         {"vs_lower_bound", NumberOrNull(m.vs_lower_bound)}};
  if (m.lower_bound > 0) {
    j["lower_bound"] = NumberOrNull(m.lower_bound);
    j["lower_bound_binding"] = m.lower_bound_binding;
  }
  if (m.searched) {
    j["budget_samples"] = m.budget_samples;
    j["budget_seconds"] = m.budget_seconds;
    j["samples_to_best"] = SpreadJson(m.samples_to_best);
    j["seconds_to_best"] = SpreadJson(m.seconds_to_best);
  }
  return j;
}

json BenchmarkJson(const BenchmarkResults& b) {
  json methods = json::array();
  for (const MethodResults& m : b.methods) methods.push_back(MethodJson(m));
  return json{
      {"name", b.name},
      {"model", b.model},
      {"cluster", b.cluster},
      {"graph",
       {{"name", b.graph_name}, {"hash", b.graph_hash}, {"ops", b.ops}}},
      {"devices", b.devices},
      {"gpus", b.gpus},
      {"lower_bound", b.lower_bound},
      {"lower_bound_binding", b.lower_bound_binding},
      {"best_baseline",
       b.best_baseline.empty() ? json() : json(b.best_baseline)},
      {"best_baseline_step_time",
       b.best_baseline.empty() ? json() : json(b.best_baseline_step_time)},
      {"methods", methods}};
}

json ScaleJson(const ScaleRow& row) {
  json placers = json::array();
  for (const ScalePlacerCost& p : row.placers) {
    json j{{"method", p.method}, {"placed", p.placed}, {"seconds", p.seconds}};
    if (p.placed) {
      j["step_time"] = p.step_time;
      j["feasible"] = p.feasible;
    } else {
      j["error"] = p.error;
    }
    placers.push_back(j);
  }
  return json{{"model", row.model},
              {"ops", row.ops},
              {"edges", row.edges},
              {"build_seconds", row.build_seconds},
              {"simulate_seconds", row.simulate_seconds},
              {"simulate_repeats", row.simulate_repeats},
              {"rss_bytes", row.rss_bytes},
              {"peak_rss_bytes", row.peak_rss_bytes},
              {"placers", placers}};
}

// A field the reader cannot use; `what` starts with the field's JSON path.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The reader's view of one JSON object: typed fields, each error naming the
// field's path ("tables[0].benchmarks[1].methods[2].runs[0].step_time").
class Fields {
 public:
  Fields(const json& value, std::string path)
      : value_(value), path_(std::move(path)) {
    if (!value_.is_object()) {
      throw BadField(Where() + "expected an object, got " +
                     io_internal::DescribeJson(value_));
    }
  }
  std::string PathOf(const char* key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  bool Has(const char* key) const { return value_.contains(key); }
  const json& Required(const char* key) const {
    if (!Has(key)) throw BadField(PathOf(key) + ": missing");
    return value_.at(key);
  }
  const json& Array(const char* key) const {
    const json& v = Required(key);
    if (!v.is_array()) Bad(key, "an array", v);
    return v;
  }
  std::string String(const char* key, std::optional<std::string> fallback) {
    if (!Has(key) && fallback) return *fallback;
    const json& v = Required(key);
    if (!v.is_string()) Bad(key, "a string", v);
    return v.get<std::string>();
  }
  // null reads as NaN: the writer's "no such number".
  double Number(const char* key, std::optional<double> fallback) {
    if (!Has(key) && fallback) return *fallback;
    const json& v = Required(key);
    if (v.is_null()) return kNaN;
    if (!v.is_number()) Bad(key, "a number", v);
    return v.get<double>();
  }
  int64_t Int(const char* key, int64_t fallback) {
    if (!Has(key)) return fallback;
    const json& v = value_.at(key);
    if (!v.is_number_integer()) Bad(key, "an integer", v);
    return v.get<int64_t>();
  }
  bool Bool(const char* key, bool fallback) {
    if (!Has(key)) return fallback;
    const json& v = value_.at(key);
    if (!v.is_boolean()) Bad(key, "true or false", v);
    return v.get<bool>();
  }
  template <typename T>
  std::vector<T> List(const char* key) {
    std::vector<T> out;
    if (!Has(key)) return out;
    const json& v = value_.at(key);
    try {
      for (const json& item : v) {
        if constexpr (std::is_floating_point_v<T>) {
          if (item.is_null()) {
            out.push_back(kNaN);
            continue;
          }
        }
        out.push_back(item.get<T>());
      }
    } catch (const json::exception&) {
      Bad(key, "an array of numbers or strings of one kind", v);
    }
    return out;
  }

 private:
  std::string Where() const { return path_.empty() ? "" : path_ + ": "; }
  [[noreturn]] void Bad(const char* key, const char* expected,
                        const json& v) const {
    throw BadField(PathOf(key) + ": expected " + expected + ", got " +
                   io_internal::DescribeJson(v));
  }
  const json& value_;
  std::string path_;
};

template <>
std::vector<std::string> Fields::List<std::string>(const char* key) {
  std::vector<std::string> out;
  if (!Has(key)) return out;
  const json& v = value_.at(key);
  if (!v.is_array()) Bad(key, "an array of strings", v);
  for (const json& item : v) {
    if (!item.is_string()) Bad(key, "an array of strings", v);
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::string Item(const std::string& path, const char* key, size_t i) {
  return (path.empty() ? std::string(key) : path + "." + key) + "[" +
         std::to_string(i) + "]";
}

LearningCurve ReadCurve(const json& value, const std::string& path) {
  Fields f(value, path);
  LearningCurve c;
  c.samples = f.List<int64_t>("samples");
  c.wall_seconds = f.List<double>("wall_seconds");
  c.mean_step_time = f.List<double>("mean_step_time");
  c.best_step_time = f.List<double>("best_step_time");
  c.oom_share = f.List<double>("oom_share");
  return c;
}

RunRecord ReadRun(const json& value, const std::string& path) {
  Fields f(value, path);
  RunRecord r;
  r.seed = static_cast<uint64_t>(f.Int("seed", 1));
  r.placed = f.Bool("placed", true);
  r.wall_seconds = f.Number("wall_seconds", 0.0);
  if (!r.placed) {
    r.error = f.String("error", "");
    return r;
  }
  r.step_time = f.Number("step_time", std::nullopt);
  r.feasible = f.Bool("feasible", true);
  r.infeasible = f.String("infeasible", "");
  r.peak_memory_bytes = f.List<int64_t>("peak_memory_bytes");
  r.proven_bound = f.Number("proven_bound", 0.0);
  r.whole_groups_bound = f.Number("whole_groups_bound", 0.0);
  // Results written before the queued critical path hold the forced-
  // transfer path's.
  r.whole_groups_binding =
      f.String("whole_groups_binding", kWholeGroupsBoundName);
  r.samples = f.Int("samples", 0);
  r.samples_to_best = f.Int("samples_to_best", 0);
  r.seconds_to_best = f.Number("seconds_to_best", 0.0);
  r.num_groups = static_cast<int>(f.Int("groups", 0));
  if (f.Has("curve"))
    r.curve = ReadCurve(f.Required("curve"), f.PathOf("curve"));
  return r;
}

MethodResults ReadMethod(const json& value, const std::string& path) {
  Fields f(value, path);
  MethodResults m;
  m.method = f.String("method", std::nullopt);
  m.label = f.String("label", m.method);
  m.searched = f.Bool("searched", IsSearchMethod(m.method));
  m.learned = f.Bool("learned", IsLearnedMethod(m.method));
  m.options = f.List<std::string>("options");
  m.budget_samples = f.Int("budget_samples", 0);
  m.budget_seconds = f.Number("budget_seconds", 0.0);
  const json& runs = f.Array("runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    m.runs.push_back(ReadRun(runs[i], Item(path, "runs", i)));
  }
  return m;
}

BenchmarkResults ReadBenchmark(const json& value, const std::string& path) {
  Fields f(value, path);
  BenchmarkResults b;
  b.name = f.String("name", std::nullopt);
  b.model = f.String("model", "");
  b.cluster = f.String("cluster", "");
  if (f.Has("graph")) {
    Fields g(f.Required("graph"), f.PathOf("graph"));
    b.graph_name = g.String("name", "");
    b.graph_hash = g.String("hash", "");
    b.ops = static_cast<int>(g.Int("ops", 0));
  }
  b.devices = static_cast<int>(f.Int("devices", 0));
  b.gpus = static_cast<int>(f.Int("gpus", 0));
  b.lower_bound = f.Number("lower_bound", 0.0);
  b.lower_bound_binding = f.String("lower_bound_binding", "");
  const json& methods = f.Array("methods");
  for (size_t i = 0; i < methods.size(); ++i) {
    b.methods.push_back(ReadMethod(methods[i], Item(path, "methods", i)));
  }
  SummariseBenchmark(&b);
  return b;
}

ScaleRow ReadScaleRow(const json& value, const std::string& path) {
  Fields f(value, path);
  ScaleRow row;
  row.model = f.String("model", std::nullopt);
  row.ops = static_cast<int>(f.Int("ops", 0));
  row.edges = f.Int("edges", 0);
  row.build_seconds = f.Number("build_seconds", 0.0);
  row.simulate_seconds = f.Number("simulate_seconds", 0.0);
  row.simulate_repeats = static_cast<int>(f.Int("simulate_repeats", 0));
  row.rss_bytes = f.Int("rss_bytes", 0);
  row.peak_rss_bytes = f.Int("peak_rss_bytes", 0);
  const json& placers = f.Array("placers");
  for (size_t i = 0; i < placers.size(); ++i) {
    Fields p(placers[i], Item(path, "placers", i));
    ScalePlacerCost cost;
    cost.method = p.String("method", std::nullopt);
    cost.placed = p.Bool("placed", true);
    cost.error = p.String("error", "");
    cost.seconds = p.Number("seconds", 0.0);
    cost.step_time = p.Number("step_time", 0.0);
    cost.feasible = p.Bool("feasible", false);
    row.placers.push_back(cost);
  }
  return row;
}

BenchResults ReadResults(const json& root) {
  Fields f(root, "");
  const std::string format = f.String("format", std::nullopt);
  if (format != "dplace.bench-results") {
    throw BadField("format: expected \"dplace.bench-results\", got \"" +
                   format + "\"");
  }
  BenchResults r;
  r.suite = f.String("suite", "");
  r.description = f.String("description", "");
  r.command = f.String("command", "");
  r.started_utc = f.String("started_utc", "");
  r.wall_seconds = f.Number("wall_seconds", 0.0);
  r.hardware_threads = static_cast<int>(f.Int("hardware_threads", 0));
  r.seeds = f.List<uint64_t>("seeds");
  if (f.Has("definition")) r.definition = f.Required("definition").dump();
  r.resumed_commands = f.List<std::string>("resumed_commands");
  const json& tables = f.Array("tables");
  int runs = 0;
  for (size_t t = 0; t < tables.size(); ++t) {
    const std::string path = Item("", "tables", t);
    Fields tf(tables[t], path);
    TableResults table;
    table.title = tf.String("title", std::nullopt);
    table.source = tf.String("source", "");
    const json& benchmarks = tf.Array("benchmarks");
    for (size_t b = 0; b < benchmarks.size(); ++b) {
      table.benchmarks.push_back(
          ReadBenchmark(benchmarks[b], Item(path, "benchmarks", b)));
      for (const MethodResults& m : table.benchmarks.back().methods) {
        runs += static_cast<int>(m.runs.size());
      }
    }
    r.tables.push_back(std::move(table));
  }
  if (f.Has("scale")) {
    Fields s(f.Required("scale"), "scale");
    r.scale_cluster = s.String("cluster", "");
    const json& rows = s.Array("rows");
    for (size_t i = 0; i < rows.size(); ++i) {
      r.scale.push_back(ReadScaleRow(rows[i], Item("scale", "rows", i)));
    }
    runs += static_cast<int>(r.scale.size());
  }
  r.runs_done = static_cast<int>(f.Int("runs_done", runs));
  r.runs_total = static_cast<int>(f.Int("runs_total", r.runs_done));
  r.complete = f.Bool("complete", r.runs_done == r.runs_total);
  return r;
}

// Where two suite definitions first differ: the JSON path and each side's
// value, or nothing when they are the same.
struct Difference {
  std::string path, file, run;
};

std::optional<Difference> FirstDifference(const json& file, const json& run,
                                          const std::string& path) {
  if (file.is_number() && run.is_number()) {
    if (file == run) return std::nullopt;
  } else if (file.is_object() && run.is_object()) {
    for (const auto& [key, value] : file.items()) {
      const std::string sub = path.empty() ? key : path + "." + key;
      if (!run.contains(key)) return Difference{sub, value.dump(), "nothing"};
      if (auto d = FirstDifference(value, run.at(key), sub)) return d;
    }
    for (const auto& [key, value] : run.items()) {
      if (!file.contains(key)) {
        return Difference{path.empty() ? key : path + "." + key, "nothing",
                          value.dump()};
      }
    }
    return std::nullopt;
  } else if (file.is_array() && run.is_array()) {
    for (size_t i = 0; i < std::min(file.size(), run.size()); ++i) {
      if (auto d = FirstDifference(file[i], run[i],
                                   path + "[" + std::to_string(i) + "]")) {
        return d;
      }
    }
    if (file.size() == run.size()) return std::nullopt;
    return Difference{path, std::to_string(file.size()) + " entries",
                      std::to_string(run.size()) + " entries"};
  } else if (file == run) {
    return std::nullopt;
  }
  return Difference{path, file.dump(), run.dump()};
}

// Gives every seed list of `file` that is a prefix of the same list in
// `run` the run's list, so that a run with more seeds than the file's
// continues it (its runs add the new seeds) while any other difference
// remains one.
void ExtendSeeds(const json& run, json* file) {
  if (file->is_object() && run.is_object()) {
    for (auto& [key, value] : file->items()) {
      if (!run.contains(key)) continue;
      const json& other = run.at(key);
      if (key == "seeds" && value.is_array() && other.is_array() &&
          value.size() <= other.size() &&
          std::equal(value.begin(), value.end(), other.begin())) {
        value = other;
      } else {
        ExtendSeeds(other, &value);
      }
    }
  } else if (file->is_array() && run.is_array()) {
    for (size_t i = 0; i < std::min(file->size(), run.size()); ++i) {
      ExtendSeeds(run[i], &(*file)[i]);
    }
  }
}

}  // namespace

std::string BenchResultsToJson(const BenchResults& r) {
  json tables = json::array();
  for (const TableResults& t : r.tables) {
    json benchmarks = json::array();
    for (const BenchmarkResults& b : t.benchmarks) {
      benchmarks.push_back(BenchmarkJson(b));
    }
    tables.push_back(
        {{"title", t.title}, {"source", t.source}, {"benchmarks", benchmarks}});
  }
  json doc{{"format", "dplace.bench-results"},
           {"version", 1},
           {"suite", r.suite},
           {"description", r.description},
           {"command", r.command},
           {"started_utc", r.started_utc},
           {"wall_seconds", r.wall_seconds},
           {"hardware_threads", r.hardware_threads},
           {"seeds", r.seeds},
           {"runs_total", r.runs_total},
           {"runs_done", r.runs_done},
           {"complete", r.complete},
           {"tables", tables}};
  if (!r.definition.empty()) doc["definition"] = json::parse(r.definition);
  if (!r.resumed_commands.empty()) {
    doc["resumed_commands"] = r.resumed_commands;
  }
  if (!r.scale.empty()) {
    json rows = json::array();
    for (const ScaleRow& row : r.scale) rows.push_back(ScaleJson(row));
    doc["scale"] = {{"cluster", r.scale_cluster}, {"rows", rows}};
  }
  return doc.dump(1) + "\n";
}

StatusOr<BenchResults> ParseBenchResults(const std::string& text,
                                         const std::string& source) {
  return io_internal::ParseDocument<BenchResults>(
      text, source, [](const json& root) -> StatusOr<BenchResults> {
        try {
          return ReadResults(root);
        } catch (const BadField& e) {
          return InvalidArgumentError(e.what());
        }
      });
}

Status CheckResumable(const BenchResults& previous, const Suite& suite,
                      const std::string& source) {
  if (previous.definition.empty()) {
    return InvalidArgumentError(
        source +
        ": has no suite definition (written before bench could continue a "
        "run), so it cannot be continued; remove it or write the results "
        "elsewhere (-o)");
  }
  json file = json::parse(previous.definition);
  const json run = json::parse(SuiteDefinitionJson(suite));
  ExtendSeeds(run, &file);
  const std::optional<Difference> d = FirstDifference(file, run, "");
  if (!d) return Status::Ok();
  return InvalidArgumentError(
      source + ": holds the results of another run (suite " + previous.suite +
      "): its definition." + d->path + " is " + d->file + ", this run's is " +
      d->run +
      "; continue it with the same suite, filters and budgets, or write the "
      "results elsewhere (-o)");
}

}  // namespace dplace
