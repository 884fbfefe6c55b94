#include "dplace/suite/suite.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "dplace/io/file.h"
#include "dplace/io/json_fields.h"
#include "dplace/method/run.h"

namespace dplace {

// Defined in the file CMake generates from src/dplace/suite/suites.json.
extern const char* const kBuiltinSuitesJson;

namespace {

using io_internal::DescribeJson;
using io_internal::FieldReader;
using io_internal::json;

std::vector<std::string> ReadStrings(FieldReader& fields, const char* key,
                                     bool required) {
  std::vector<std::string> out;
  const json* array = fields.Array(key, required);
  if (!array) return out;
  for (size_t i = 0; i < array->size(); ++i) {
    const json& item = (*array)[i];
    if (!item.is_string() || item.get<std::string>().empty()) {
      fields.Fail(fields.PathOf(key) + "[" + std::to_string(i) +
                  "]: expected a non-empty string, got " + DescribeJson(item));
      return out;
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<uint64_t> ReadSeeds(FieldReader& fields) {
  std::vector<uint64_t> out;
  const json* array = fields.Array("seeds", false);
  if (!array) return out;
  for (size_t i = 0; i < array->size(); ++i) {
    const json& item = (*array)[i];
    if (!item.is_number_unsigned()) {
      fields.Fail(fields.PathOf("seeds") + "[" + std::to_string(i) +
                  "]: expected an integer >= 0, got " + DescribeJson(item));
      return out;
    }
    out.push_back(item.get<uint64_t>());
  }
  if (out.empty()) fields.Fail(fields.PathOf("seeds") + ": empty");
  return out;
}

Status ParseMethod(const json& value, const std::string& path,
                   SuiteMethod* method) {
  FieldReader fields(value, path);
  method->method = fields.String("method");
  method->label = fields.String("label", method->method);
  method->options = ReadStrings(fields, "options", false);
  method->budget_samples = fields.Int("budget_samples", 0, 0);
  method->budget_seconds = fields.Number("budget_seconds", 0, 0);
  method->seeds = ReadSeeds(fields);
  return fields.Finish();
}

Status ParseBenchmark(const json& value, const std::string& path,
                      SuiteBenchmark* benchmark) {
  FieldReader fields(value, path);
  benchmark->model = fields.String("model");
  // Empty: the machine the model brings (a Tarnawski et al. input).
  benchmark->cluster = fields.String("cluster", "");
  benchmark->name = fields.String(
      "name",
      benchmark->model.substr(benchmark->model.rfind("zoo:", 0) == 0 ? 4 : 0) +
          (benchmark->cluster.empty() ? "" : "@" + benchmark->cluster));
  if (const json* options = fields.Object("method_options", false)) {
    for (const auto& [method, list] : options->items()) {
      std::vector<std::string>& out = benchmark->method_options[method];
      const std::string list_path =
          fields.PathOf("method_options") + "[\"" + method + "\"]";
      if (!list.is_array()) {
        fields.Fail(list_path + ": expected an array of key=value strings");
        break;
      }
      for (const json& item : list) {
        if (!item.is_string()) {
          fields.Fail(list_path + ": expected key=value strings, got " +
                      DescribeJson(item));
          break;
        }
        out.push_back(item.get<std::string>());
      }
    }
  }
  return fields.Finish();
}

Status ParseTable(const json& value, const std::string& path,
                  SuiteTable* table) {
  FieldReader fields(value, path);
  table->title = fields.String("title");
  table->source = fields.String("source", "");
  const json* benchmarks = fields.Array("benchmarks", true);
  const json* methods = fields.Array("methods", true);
  DPLACE_RETURN_IF_ERROR(fields.Finish());
  std::set<std::string> names;
  for (size_t i = 0; i < benchmarks->size(); ++i) {
    SuiteBenchmark b;
    DPLACE_RETURN_IF_ERROR(ParseBenchmark(
        (*benchmarks)[i], path + ".benchmarks[" + std::to_string(i) + "]", &b));
    if (!names.insert(b.name).second) {
      return InvalidArgumentError(path + ".benchmarks[" + std::to_string(i) +
                                  "]: benchmark \"" + b.name +
                                  "\" appears twice");
    }
    table->benchmarks.push_back(std::move(b));
  }
  for (size_t i = 0; i < methods->size(); ++i) {
    SuiteMethod m;
    DPLACE_RETURN_IF_ERROR(ParseMethod(
        (*methods)[i], path + ".methods[" + std::to_string(i) + "]", &m));
    for (const SuiteMethod& other : table->methods) {
      if (other.label == m.label) {
        return InvalidArgumentError(
            path + ".methods[" + std::to_string(i) + "]: label \"" + m.label +
            "\" appears twice (give one of them another \"label\")");
      }
    }
    table->methods.push_back(std::move(m));
  }
  return Status::Ok();
}

Status ParseClaim(const json& value, const std::string& path,
                  SuiteClaim* claim) {
  FieldReader fields(value, path);
  claim->paper = fields.String("paper");
  claim->claim = fields.String("claim");
  claim->table = fields.String("table");
  claim->benchmark = fields.String("benchmark");
  claim->method = fields.String("method");
  claim->versus = ReadStrings(fields, "versus", true);
  claim->measure = fields.String("measure", "step_time");
  claim->paper_figure = fields.String("paper_figure");
  claim->min_reduction = fields.Number("min_reduction", 0.001, -1e300);
  claim->max_reduction = fields.Number("max_reduction", 1e300, -1e300);
  DPLACE_RETURN_IF_ERROR(fields.Finish());
  if (claim->measure != "step_time" && claim->measure != "samples_to_best" &&
      claim->measure != "samples_to_common") {
    return InvalidArgumentError(path +
                                ".measure: expected \"step_time\", "
                                "\"samples_to_best\" or \"samples_to_common\", "
                                "got \"" +
                                claim->measure + "\"");
  }
  if (claim->versus.empty()) {
    return InvalidArgumentError(path + ".versus: empty");
  }
  return Status::Ok();
}

// A claim must name a table, benchmark and methods of its suite, so a typo
// is an error rather than a claim that never runs.
Status CheckClaim(const Suite& suite, const SuiteClaim& claim,
                  const std::string& path) {
  for (const SuiteTable& t : suite.tables) {
    if (t.title != claim.table) continue;
    const bool has_benchmark = std::any_of(
        t.benchmarks.begin(), t.benchmarks.end(),
        [&](const SuiteBenchmark& b) { return b.name == claim.benchmark; });
    if (!has_benchmark) {
      return InvalidArgumentError(path + ".benchmark: table \"" + t.title +
                                  "\" has no benchmark \"" + claim.benchmark +
                                  "\"");
    }
    std::vector<std::string> labels = claim.versus;
    labels.push_back(claim.method);
    for (const std::string& label : labels) {
      const bool has_method =
          std::any_of(t.methods.begin(), t.methods.end(),
                      [&](const SuiteMethod& m) { return m.label == label; });
      if (!has_method) {
        return InvalidArgumentError(path + ": table \"" + t.title +
                                    "\" has no method labelled \"" + label +
                                    "\"");
      }
    }
    return Status::Ok();
  }
  return InvalidArgumentError(path + ".table: the suite has no table \"" +
                              claim.table + "\"");
}

Status ParseScale(const json& value, const std::string& path,
                  ScaleStudy* scale) {
  FieldReader fields(value, path);
  scale->cluster = fields.String("cluster");
  scale->models = ReadStrings(fields, "models", true);
  scale->methods = ReadStrings(fields, "methods", false);
  scale->simulate_repeats =
      static_cast<int>(fields.Int("simulate_repeats", 3, 1));
  return fields.Finish();
}

StatusOr<Suite> ParseSuite(const json& value, const std::string& path) {
  FieldReader fields(value, path);
  Suite suite;
  suite.name = fields.String("name");
  suite.description = fields.String("description", "");
  suite.seeds = ReadSeeds(fields);
  if (suite.seeds.empty()) suite.seeds = {1};
  const json* tables = fields.Array("tables", false);
  const json* scale = fields.Object("scale", false);
  const json* claims = fields.Array("claims", false);
  DPLACE_RETURN_IF_ERROR(fields.Finish());
  for (size_t i = 0; tables && i < tables->size(); ++i) {
    SuiteTable table;
    DPLACE_RETURN_IF_ERROR(ParseTable(
        (*tables)[i], path + ".tables[" + std::to_string(i) + "]", &table));
    suite.tables.push_back(std::move(table));
  }
  if (scale) {
    DPLACE_RETURN_IF_ERROR(ParseScale(*scale, path + ".scale", &suite.scale));
  }
  if (suite.tables.empty() && suite.scale.models.empty()) {
    return InvalidArgumentError(path + ": a suite needs tables or a scale");
  }
  for (size_t i = 0; claims && i < claims->size(); ++i) {
    const std::string claim_path = path + ".claims[" + std::to_string(i) + "]";
    SuiteClaim claim;
    DPLACE_RETURN_IF_ERROR(ParseClaim((*claims)[i], claim_path, &claim));
    DPLACE_RETURN_IF_ERROR(CheckClaim(suite, claim, claim_path));
    suite.claims.push_back(std::move(claim));
  }
  return suite;
}

bool Contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

}  // namespace

const std::string& BuiltinSuitesJson() {
  static const std::string* text = new std::string(kBuiltinSuitesJson);
  return *text;
}

StatusOr<std::vector<Suite>> ParseSuites(const std::string& text,
                                         const std::string& source) {
  return io_internal::ParseDocument<std::vector<Suite>>(
      text, source, [](const json& root) -> StatusOr<std::vector<Suite>> {
        FieldReader fields(root, "");
        io_internal::CheckFormat(fields, "dplace.suites");
        const json* suites = fields.Array("suites", true);
        DPLACE_RETURN_IF_ERROR(fields.Finish());
        std::vector<Suite> out;
        std::set<std::string> names;
        for (size_t i = 0; i < suites->size(); ++i) {
          const std::string path = "suites[" + std::to_string(i) + "]";
          DPLACE_ASSIGN_OR_RETURN(Suite suite, ParseSuite((*suites)[i], path));
          if (!names.insert(suite.name).second) {
            return InvalidArgumentError(path + ": suite \"" + suite.name +
                                        "\" appears twice");
          }
          out.push_back(std::move(suite));
        }
        return out;
      });
}

StatusOr<std::vector<Suite>> LoadSuites(const std::string& path) {
  if (path.empty())
    return ParseSuites(BuiltinSuitesJson(), "src/dplace/suite/suites.json");
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseSuites(text, path);
}

StatusOr<Suite> FindSuite(const std::vector<Suite>& suites,
                          const std::string& name) {
  std::string known;
  for (const Suite& s : suites) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  return NotFoundError("unknown suite \"" + name + "\" (suites: " + known +
                       ")");
}

StatusOr<Suite> FilterSuite(const Suite& suite, const SuiteFilter& filter) {
  Suite out = suite;
  out.tables.clear();
  std::set<std::string> methods_seen, models_seen;
  for (const SuiteTable& table : suite.tables) {
    SuiteTable t = table;
    t.benchmarks.clear();
    t.methods.clear();
    for (const SuiteBenchmark& b : table.benchmarks) {
      if (!filter.models.empty() && !Contains(filter.models, b.name) &&
          !Contains(filter.models, b.model)) {
        continue;
      }
      models_seen.insert(b.name);
      models_seen.insert(b.model);
      t.benchmarks.push_back(b);
    }
    for (SuiteMethod m : table.methods) {
      if (!filter.methods.empty() && !Contains(filter.methods, m.method) &&
          !Contains(filter.methods, m.label)) {
        continue;
      }
      methods_seen.insert(m.method);
      methods_seen.insert(m.label);
      if (filter.budget_samples > 0) {
        m.budget_samples = filter.budget_samples;
      } else if (filter.budget_scale != 1 && m.budget_samples > 0) {
        m.budget_samples = std::max<int64_t>(
            1, std::llround(m.budget_samples * filter.budget_scale));
      }
      if (filter.budget_seconds > 0) m.budget_seconds = filter.budget_seconds;
      if (filter.max_seeds > 0 &&
          m.seeds.size() > static_cast<size_t>(filter.max_seeds)) {
        m.seeds.resize(filter.max_seeds);
      }
      t.methods.push_back(std::move(m));
    }
    if (!t.benchmarks.empty() && !t.methods.empty()) {
      out.tables.push_back(std::move(t));
    }
  }
  if (filter.max_seeds > 0 &&
      out.seeds.size() > static_cast<size_t>(filter.max_seeds)) {
    out.seeds.resize(filter.max_seeds);
  }
  // The scale study has models and placers too; the filters apply to it.
  if (!filter.models.empty()) {
    std::vector<std::string> models;
    for (const std::string& m : suite.scale.models) {
      if (Contains(filter.models, m)) {
        models.push_back(m);
        models_seen.insert(m);
      }
    }
    out.scale.models = models;
  }
  if (!filter.methods.empty()) {
    std::vector<std::string> methods;
    for (const std::string& m : suite.scale.methods) {
      if (Contains(filter.methods, m)) {
        methods.push_back(m);
        methods_seen.insert(m);
      }
    }
    out.scale.methods = methods;
  }
  for (const std::string& m : filter.methods) {
    if (!methods_seen.count(m)) {
      return InvalidArgumentError("--methods " + m + ": suite " + suite.name +
                                  " has no such method");
    }
  }
  for (const std::string& m : filter.models) {
    if (!models_seen.count(m)) {
      return InvalidArgumentError("--models " + m + ": suite " + suite.name +
                                  " has no such benchmark or model");
    }
  }
  if (out.tables.empty() && out.scale.models.empty()) {
    return InvalidArgumentError("suite " + suite.name +
                                ": nothing left to run after --methods and "
                                "--models");
  }
  return out;
}

std::string SuiteDefinitionJson(const Suite& suite) {
  json tables = json::array();
  for (const SuiteTable& t : suite.tables) {
    json benchmarks = json::array();
    for (const SuiteBenchmark& b : t.benchmarks) {
      benchmarks.push_back({{"name", b.name},
                            {"model", b.model},
                            {"cluster", b.cluster},
                            {"method_options", b.method_options}});
    }
    json methods = json::array();
    for (const SuiteMethod& m : t.methods) {
      methods.push_back({{"method", m.method},
                         {"label", m.label},
                         {"options", m.options},
                         {"budget_samples", m.budget_samples},
                         {"budget_seconds", m.budget_seconds},
                         {"seeds", m.seeds}});
    }
    tables.push_back(
        {{"title", t.title}, {"benchmarks", benchmarks}, {"methods", methods}});
  }
  const json scale{{"cluster", suite.scale.cluster},
                   {"models", suite.scale.models},
                   {"methods", suite.scale.methods},
                   {"simulate_repeats", suite.scale.simulate_repeats}};
  return json{{"name", suite.name},
              {"seeds", suite.seeds},
              {"tables", tables},
              {"scale", scale}}
      .dump();
}

Status CheckSuiteMethods(const Suite& suite) {
  auto unknown = [&](const std::string& method, const std::string& where) {
    return NotFoundError("suite " + suite.name + ", " + where +
                         ": unknown method \"" + method +
                         "\" (methods: " + MethodNames() + ")");
  };
  for (const SuiteTable& table : suite.tables) {
    for (const SuiteMethod& m : table.methods) {
      if (!FindMethod(m.method)) return unknown(m.method, table.title);
    }
  }
  for (const std::string& m : suite.scale.methods) {
    if (!FindMethod(m)) return unknown(m, "scale");
    if (IsSearchMethod(m)) {
      return InvalidArgumentError("suite " + suite.name + ", scale: method " +
                                  m +
                                  " is a search; the scale study times "
                                  "classical placers");
    }
  }
  return Status::Ok();
}

}  // namespace dplace
