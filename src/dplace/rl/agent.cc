#include "dplace/rl/agent.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "dplace/io/file.h"
#include "dplace/io/pickle_check.h"
#include "dplace/io/zip_records.h"
#include "dplace/placers/placer_util.h"
#include "dplace/rl/agent_parts.h"

namespace dplace {
namespace {

using nlohmann::json;

constexpr const char* kCheckpointFormat = "dplace-rl-checkpoint";
constexpr int kCheckpointVersion = 1;

StatusOr<Grouping> MakeSearchGrouping(const PlacementProblem& problem,
                                      const SearchSettings& settings) {
  const Graph& graph = *problem.graph;
  switch (settings.grouping) {
    case OpGrouping::kColocation: {
      ColocationOptions options;
      options.scope_marker = settings.scope_marker;
      return ColocationGrouping(graph, options);
    }
    case OpGrouping::kHints: {
      // Only the graph's hard co-location constraints.
      ColocationOptions options;
      options.absorb_single_consumer = false;
      return ColocationGrouping(graph, options);
    }
    case OpGrouping::kOps: {
      std::vector<int32_t> labels(graph.num_ops());
      for (OpId op = 0; op < graph.num_ops(); ++op) labels[op] = op;
      return MakeGrouping(graph, labels);
    }
    case OpGrouping::kMetis: {
      MetisGroupingOptions options;
      options.num_groups = settings.num_groups;
      options.seed = problem.seed;
      options.cost_model = problem.cost;
      return MetisGrouping(graph, options);
    }
    case OpGrouping::kFluid: {
      FluidGroupingOptions options;
      options.num_groups = settings.num_groups;
      options.seed = problem.seed;
      return FluidGrouping(graph, options);
    }
  }
  return InternalError("unknown grouping");
}

StatusOr<AgentSetup> MakeSetup(const PlacementProblem& problem,
                               const SearchSettings& settings,
                               const SearchBudget& budget) {
  AgentSetup setup;
  setup.problem = &problem;
  setup.budget = budget;
  StatusOr<Grouping> grouping = MakeSearchGrouping(problem, settings);
  if (!grouping.ok()) {
    return grouping.status().WithPrefix("grouping " +
                                        OpGroupingName(settings.grouping));
  }
  setup.grouping = std::move(grouping).value();
  setup.groups = CoarsenGraph(*problem.graph, setup.grouping);
  const Cluster& cluster = *problem.cluster;
  const int num_devices = cluster.num_devices();
  setup.num_devices = num_devices;
  setup.allowed.assign(
      static_cast<size_t>(setup.groups.num_groups) * num_devices, 0);
  for (GroupId g = 0; g < setup.groups.num_groups; ++g) {
    const DeviceKindSet kinds = setup.groups.allowed_devices[g];
    int count = 0;
    for (DeviceId d = 0; d < num_devices; ++d) {
      const bool ok = kinds.Contains(cluster.device(d).kind);
      setup.allowed[static_cast<size_t>(g) * num_devices + d] = ok;
      count += ok;
    }
    // A group whose ops allow no common kind may go anywhere; expanding the
    // placement moves the ops its device forbids.
    if (count == 0) {
      std::fill_n(setup.allowed.begin() + static_cast<size_t>(g) * num_devices,
                  num_devices, 1);
    }
  }
  return setup;
}

// Everything the loop owns, as a checkpoint holds it.
struct LoopState {
  int64_t samples = 0;
  int64_t updates = 0;
  double wall_seconds = 0;  // Of the runs before this one.
  double baseline = 0;
  bool baseline_set = false;
  std::mt19937_64 rng;
  bool has_best = false;
  std::vector<DeviceId> best_groups;
  double best_step_time = 0;
  bool best_feasible = false;
};

bool Better(bool feasible, double step_time, const LoopState& s) {
  if (!s.has_best) return true;
  if (feasible != s.best_feasible) return feasible;
  return step_time < s.best_step_time;
}

torch::Tensor StringTensor(const std::string& text) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(text.size())},
                                 torch::TensorOptions().dtype(torch::kUInt8));
  std::copy(text.begin(), text.end(), t.data_ptr<uint8_t>());
  return t;
}

std::string TensorString(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kUInt8).contiguous();
  const uint8_t* p = c.data_ptr<uint8_t>();
  return std::string(p, p + c.numel());
}

json CheckpointMeta(const Agent& agent, const AgentSetup& setup,
                    const LoopState& s) {
  std::ostringstream rng;
  rng << s.rng;
  return json{{"format", kCheckpointFormat},
              {"version", kCheckpointVersion},
              {"agent", agent.name()},
              {"graph_hash", setup.problem->graph->hash()},
              {"cluster", setup.problem->cluster->name()},
              {"num_groups", setup.groups.num_groups},
              {"num_devices", setup.num_devices},
              {"samples", s.samples},
              {"updates", s.updates},
              {"wall_seconds", s.wall_seconds},
              {"baseline", s.baseline},
              {"baseline_set", s.baseline_set},
              {"rng", rng.str()},
              {"has_best", s.has_best},
              {"best_groups", s.best_groups},
              {"best_step_time", s.best_step_time},
              {"best_feasible", s.best_feasible}};
}

std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// Writes to a temporary file first, so a search killed while writing
// leaves the previous checkpoint intact.
Status WriteCheckpoint(
    const std::string& path, const json& meta,
    const std::function<void(torch::serialize::OutputArchive*)>& save_agent) {
  const std::string tmp = path + ".tmp";
  try {
    torch::serialize::OutputArchive archive;
    archive.write("meta", StringTensor(meta.dump()));
    torch::serialize::OutputArchive agent_archive;
    save_agent(&agent_archive);
    archive.write("agent", agent_archive);
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    return InvalidArgumentError("checkpoint " + path +
                                ": cannot write: " + FirstLine(e.what()));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return InvalidArgumentError("checkpoint " + path + ": cannot write");
  }
  return Status::Ok();
}

Status CheckMeta(const std::string& path, const json& meta,
                 const json& expected) {
  for (const char* key : {"format", "version", "agent", "graph_hash", "cluster",
                          "num_groups", "num_devices"}) {
    if (!meta.contains(key)) {
      return InvalidArgumentError("checkpoint " + path + ": no field \"" + key +
                                  "\"; not a dplace checkpoint");
    }
    if (meta[key] != expected[key]) {
      return InvalidArgumentError(
          "checkpoint " + path + ": " + key + " is " + meta[key].dump() +
          ", but this search has " + expected[key].dump() +
          " (resume with the same method, model, cluster and options)");
    }
  }
  return Status::Ok();
}

// The loop state's fields of a checkpoint's meta, each checked for its type
// and range: a count beyond 2^53 or a step time that is not finite is
// refused (nlohmann would convert 1e300 to an integer with undefined
// behaviour).
class MetaReader {
 public:
  MetaReader(const std::string& path, const json& meta)
      : path_(path), meta_(meta) {}

  Status Count(const char* key, int64_t* out) const {
    const json* v = Find(key);
    if (!v || !v->is_number_integer() ||
        (v->is_number_unsigned()
             ? v->get<uint64_t>() > kMaxCount
             : v->get<int64_t>() < 0 ||
                   v->get<int64_t>() > int64_t{kMaxCount})) {
      return Bad(key, "an integer in [0, 2^53]");
    }
    *out = v->get<int64_t>();
    return Status::Ok();
  }
  Status Number(const char* key, double* out, double min) const {
    const json* v = Find(key);
    if (!v || !v->is_number() || !std::isfinite(v->get<double>()) ||
        v->get<double>() < min) {
      return Bad(key,
                 min == -HUGE_VAL ? "a finite number" : "a finite number >= 0");
    }
    *out = v->get<double>();
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) const {
    const json* v = Find(key);
    if (!v || !v->is_boolean()) return Bad(key, "true or false");
    *out = v->get<bool>();
    return Status::Ok();
  }
  Status String(const char* key, std::string* out) const {
    const json* v = Find(key);
    if (!v || !v->is_string()) return Bad(key, "a string");
    *out = v->get<std::string>();
    return Status::Ok();
  }
  // Devices in [0, num_devices).
  Status Devices(const char* key, int num_devices,
                 std::vector<DeviceId>* out) const {
    const json* v = Find(key);
    if (!v || !v->is_array()) return Bad(key, "an array of devices");
    out->clear();
    for (const json& d : *v) {
      if (!d.is_number_integer() ||
          (d.is_number_unsigned()
               ? d.get<uint64_t>() >= uint64_t(num_devices)
               : d.get<int64_t>() < 0 || d.get<int64_t>() >= num_devices)) {
        return Bad(key, "an array of devices in [0, " +
                            std::to_string(num_devices) + ")");
      }
      out->push_back(static_cast<DeviceId>(d.get<int64_t>()));
    }
    return Status::Ok();
  }

 private:
  static constexpr uint64_t kMaxCount = uint64_t{1} << 53;

  const json* Find(const char* key) const {
    auto it = meta_.find(key);
    return it == meta_.end() ? nullptr : &*it;
  }
  Status Bad(const char* key, const std::string& expected) const {
    const json* v = Find(key);
    return InvalidArgumentError(
        "checkpoint " + path_ + ": " + key + " is " +
        (v ? v->dump().substr(0, 80) : std::string("missing")) + ", expected " +
        expected);
  }

  const std::string& path_;
  const json& meta_;
};

// A LibTorch archive in memory, for PyTorchStreamReader.
class BytesReadAdapter : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BytesReadAdapter(const std::string& bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n,
              const char* what = "") const override {
    if (pos >= bytes_.size()) return 0;
    n = std::min<size_t>(n, bytes_.size() - pos);
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  const std::string& bytes_;
};

// One TorchScript type of the code an OutputArchive writes; a class type
// must have a number above `number` (classes are numbered depth first), so
// no class contains itself.
bool IsArchiveType(const std::string& type, long number) {
  static const std::regex plain(
      "Tensor|str|int|float|bool|Tuple\\[float, float\\]");
  static const std::regex module(
      "__torch__\\.___torch_mangle_([0-9]{1,6})\\.Module");
  std::smatch m;
  if (std::regex_match(type, plain)) return true;
  return std::regex_match(type, m, module) && std::stol(m[1].str()) > number;
}

// Checks that every TorchScript source of a LibTorch archive (code/*.py)
// holds only what an OutputArchive writes: one `class Module(Module):` of
// __parameters__, __buffers__, __annotations__ and typed attributes; and
// that every pickle is one an OutputArchive could have written
// (PickleProblem). Throws c10::Error on a corrupt zip.
Status CheckArchiveCode(const std::string& bytes, const std::string& path) {
  static const std::regex names(
      "  __(parameters|buffers)__ = \\[(\"[A-Za-z0-9_./]+\", )*\\]");
  static const std::regex annotation(
      "  __annotations__\\[\"[A-Za-z0-9_./]+\"\\] = (.+)");
  static const std::regex attribute("  [A-Za-z_][A-Za-z0-9_]* : (.+)");
  static const std::regex file(
      "code/__torch__(/___torch_mangle_([0-9]{1,6}))?\\.py");
  // Sizes first: LibTorch's reader allocates what a record claims.
  StatusOr<std::vector<ZipRecord>> listed = ListZipRecords(bytes);
  if (!listed.ok()) {
    return InvalidArgumentError(
        "checkpoint " + path +
        ": cannot read a dplace checkpoint from it (corrupt or not a "
        "checkpoint): " +
        listed.status().message());
  }
  // By name inside the archive's folder, as the reader names them; two
  // folders holding one name would leave a size in doubt.
  std::map<std::string, uint64_t> sizes;
  for (const ZipRecord& record : *listed) {
    const size_t slash = record.name.find('/');
    if (slash != std::string::npos &&
        !sizes.emplace(record.name.substr(slash + 1), record.size).second) {
      return InvalidArgumentError("checkpoint " + path + ": record " +
                                  record.name.substr(0, 80) +
                                  " repeats a name in another folder (a "
                                  "corrupt archive)");
    }
  }
  caffe2::serialize::PyTorchStreamReader reader(
      std::make_shared<BytesReadAdapter>(bytes));
  const std::vector<std::string> names_read = reader.getAllRecords();
  for (const std::string& name : names_read) {
    if (sizes.count(name) == 0) {
      return InvalidArgumentError(
          "checkpoint " + path + ": record " + name.substr(0, 80) +
          " is not in the ZIP directory as minizip lists it (a corrupt "
          "archive)");
    }
  }
  for (const std::string& name : names_read) {
    auto ends_with = [&name](const std::string& end) {
      return name.size() >= end.size() &&
             name.compare(name.size() - end.size(), end.size(), end) == 0;
    };
    if (ends_with(".pkl") || ends_with(".debug_pkl")) {
      // The records its tensors load: data.pkl's are data/<key>.
      RecordSizes records;
      if (ends_with(".pkl")) {
        const std::string dir = name.substr(0, name.size() - 4) + "/";
        for (auto it = sizes.lower_bound(dir);
             it != sizes.end() && it->first.rfind(dir, 0) == 0; ++it) {
          records[it->first.substr(dir.size())] = it->second;
        }
      }
      auto [data, size] = reader.getRecord(name);
      const std::string problem = PickleProblem(
          std::string_view(static_cast<const char*>(data.get()), size),
          records);
      if (!problem.empty()) {
        return InvalidArgumentError("checkpoint " + path + ": " +
                                    name.substr(0, 80) + ": " + problem +
                                    " (a corrupt pickle)");
      }
    }
    if (name.rfind("code/", 0) != 0) continue;
    if (name.size() > 10 &&
        name.compare(name.size() - 10, 10, ".debug_pkl") == 0) {
      continue;
    }
    auto bad = [&](const std::string& why) {
      return InvalidArgumentError("checkpoint " + path + ": " +
                                  name.substr(0, 80) + ": " + why +
                                  " (not the code of a dplace checkpoint)");
    };
    std::smatch m;
    if (!std::regex_match(name, m, file)) return bad("unexpected file");
    const long number = m[2].matched ? std::stol(m[2].str()) : -1;
    auto [data, size] = reader.getRecord(name);
    std::istringstream code(
        std::string(static_cast<const char*>(data.get()), size));
    std::string line;
    int line_number = 0;
    while (std::getline(code, line)) {
      ++line_number;
      const std::string where = "line " + std::to_string(line_number);
      // libstdc++'s std::regex recurses per character.
      if (line.size() > 1000) return bad(where + " is too long");
      if (line_number == 1) {
        if (line != "class Module(Module):") return bad(where);
        continue;
      }
      if (line.empty() || line == "  __annotations__ = []" ||
          std::regex_match(line, names)) {
        continue;
      }
      if ((std::regex_match(line, m, annotation) ||
           std::regex_match(line, m, attribute)) &&
          IsArchiveType(m[1].str(), number)) {
        continue;
      }
      return bad(where);
    }
    if (line_number == 0) return bad("empty");
  }
  return Status::Ok();
}

// The loop state of a checkpoint's meta, `expected` giving the search's
// number of groups and devices.
Status ReadLoopState(const std::string& path, const json& meta,
                     const json& expected, LoopState* s) {
  const MetaReader r(path, meta);
  DPLACE_RETURN_IF_ERROR(r.Count("samples", &s->samples));
  DPLACE_RETURN_IF_ERROR(r.Count("updates", &s->updates));
  DPLACE_RETURN_IF_ERROR(r.Number("wall_seconds", &s->wall_seconds, 0));
  DPLACE_RETURN_IF_ERROR(r.Number("baseline", &s->baseline, -HUGE_VAL));
  DPLACE_RETURN_IF_ERROR(r.Bool("baseline_set", &s->baseline_set));
  std::string rng_state;
  DPLACE_RETURN_IF_ERROR(r.String("rng", &rng_state));
  std::istringstream rng(rng_state);
  rng >> s->rng;
  if (rng.fail()) {
    return InvalidArgumentError("checkpoint " + path +
                                ": rng: not a generator state");
  }
  DPLACE_RETURN_IF_ERROR(r.Bool("has_best", &s->has_best));
  DPLACE_RETURN_IF_ERROR(r.Devices(
      "best_groups", expected["num_devices"].get<int>(), &s->best_groups));
  DPLACE_RETURN_IF_ERROR(r.Number("best_step_time", &s->best_step_time, 0));
  DPLACE_RETURN_IF_ERROR(r.Bool("best_feasible", &s->best_feasible));
  if (s->has_best && static_cast<int>(s->best_groups.size()) !=
                         expected["num_groups"].get<int>()) {
    return InvalidArgumentError("checkpoint " + path +
                                ": best_groups has the wrong size");
  }
  return Status::Ok();
}

// Loads the loop state and the agent's state from `bytes`, the contents of
// checkpoint `path`: the path of `--resume`, and what the checkpoint fuzz
// target feeds (fuzz/fuzz_checkpoint.cc). Every error is a Status.
Status LoadCheckpointBytes(
    const std::string& bytes, const std::string& path, const json& expected,
    const std::function<void(torch::serialize::InputArchive*)>& load_agent,
    LoopState* s) {
  try {
    // torch::jit::load compiles the archive's TorchScript code, and LibTorch
    // 1.13's compiler crashes on some malformed code (a SEGV in
    // ScriptTypeParser::parseClassConstant on `__buffess__ = []`, found by
    // the checkpoint fuzzer): only the declarations an OutputArchive
    // writes get to it.
    DPLACE_RETURN_IF_ERROR(CheckArchiveCode(bytes, path));
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size());
    torch::Tensor meta_tensor;
    if (!archive.try_read("meta", meta_tensor)) {
      return InvalidArgumentError("checkpoint " + path +
                                  ": not a dplace checkpoint (no meta)");
    }
    CheckLoadedTensor(meta_tensor, "meta");
    if (meta_tensor.dim() != 1 || meta_tensor.scalar_type() != torch::kUInt8) {
      return InvalidArgumentError("checkpoint " + path +
                                  ": meta is not a byte string");
    }
    const json meta = json::parse(TensorString(meta_tensor), nullptr,
                                  /*allow_exceptions=*/false);
    if (!meta.is_object()) {
      return InvalidArgumentError("checkpoint " + path +
                                  ": meta is not a JSON object");
    }
    DPLACE_RETURN_IF_ERROR(CheckMeta(path, meta, expected));
    DPLACE_RETURN_IF_ERROR(ReadLoopState(path, meta, expected, s));
    torch::serialize::InputArchive agent_archive;
    archive.read("agent", agent_archive);
    load_agent(&agent_archive);
  } catch (const std::exception& e) {
    // c10::Error, LoadPolicy's checks: a truncated or foreign file.
    return InvalidArgumentError(
        "checkpoint " + path +
        ": cannot read a dplace checkpoint from it (corrupt or not a "
        "checkpoint): " +
        FirstLine(e.what()));
  }
  return Status::Ok();
}

// Loads the loop state and the agent's state from the file `path`.
Status LoadCheckpoint(
    const std::string& path, const json& expected,
    const std::function<void(torch::serialize::InputArchive*)>& load_agent,
    LoopState* s) {
  StatusOr<std::string> bytes = ReadTextFile(path);
  if (!bytes.ok()) return bytes.status().WithPrefix("checkpoint");
  return LoadCheckpointBytes(*bytes, path, expected, load_agent, s);
}

json RecordJson(const SampleRecord& r) {
  json line{{"sample", r.index},
            {"wall_s", r.wall_seconds},
            {"step_time", r.step_time},
            {"feasible", r.feasible},
            {"reward", r.reward}};
  line["best_step_time"] =
      r.best_step_time > 0 ? json(r.best_step_time) : json(nullptr);
  return line;
}

// On resume, keeps the log's lines of samples before the checkpoint (a
// killed search may have logged samples it never learned from).
Status TruncateLog(const std::string& path, int64_t samples) {
  std::ifstream in(path);
  if (!in) return Status::Ok();  // No log yet: start one.
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("sample") ||
        !j["sample"].is_number_integer()) {
      return InvalidArgumentError(
          "log " + path +
          ": a line that is not a sample record: " + line.substr(0, 80));
    }
    if (j["sample"].get<int64_t>() < samples) kept += line + "\n";
  }
  in.close();
  return WriteTextFile(path, kept);
}

}  // namespace

Agent::~Agent() = default;

StatusOr<Grouping> SearchGrouping(const PlacementProblem& problem,
                                  const SearchSettings& settings) {
  return MakeSearchGrouping(problem, settings);
}

const std::vector<std::pair<std::string, OpGrouping>>& OpGroupingNames() {
  static const auto* names =
      new std::vector<std::pair<std::string, OpGrouping>>{
          {"colocation", OpGrouping::kColocation},
          {"hints", OpGrouping::kHints},
          {"ops", OpGrouping::kOps},
          {"metis", OpGrouping::kMetis},
          {"fluid", OpGrouping::kFluid}};
  return *names;
}

const std::string& OpGroupingName(OpGrouping grouping) {
  return EnumName(OpGroupingNames(), grouping);
}

void ReadSearchSettings(OptionReader* reader, SearchSettings* s) {
  reader->Double("failing_step_time", &s->failing_step_time);
  reader->Double("baseline_decay", &s->baseline_decay);
  reader->Bool("baseline_starts_failing", &s->baseline_starts_failing);
  reader->Int("feasible_only_after", &s->feasible_only_after);
  reader->Enum("grouping", OpGroupingNames(), &s->grouping);
  reader->Int("groups", &s->num_groups);
  reader->String("scope_marker", &s->scope_marker);
}

Status ValidateSearchSettings(const std::string& method,
                              const SearchSettings& s) {
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError("method " + method + ": option " + what);
  };
  if (!(s.failing_step_time > 0)) {
    return bad("failing_step_time must be > 0");
  }
  if (!(s.baseline_decay >= 0 && s.baseline_decay < 1)) {
    return bad("baseline_decay must be in [0, 1)");
  }
  if (s.num_groups < 1) return bad("groups must be >= 1");
  return Status::Ok();
}

Status Agent::InitPolicy(const PlacementProblem& problem,
                         const AgentSetup& setup) {
  try {
    torch::manual_seed(problem.seed);
    return DoInit(setup);
  } catch (const std::exception& e) {
    return InternalError("building the policy failed: " + FirstLine(e.what()));
  }
}

MethodTraits Agent::traits() const {
  MethodTraits traits;
  traits.learns = true;
  traits.can_resume = true;
  traits.default_budget_samples = PaperBudgetSamples();
  return traits;
}

StatusOr<CheckpointInfo> Agent::CheckCheckpoint(const PlacementProblem& problem,
                                                const std::string& bytes,
                                                const std::string& source) {
  const std::string method = "method " + name();
  if (!problem.graph || !problem.cluster || !problem.cost) {
    return InvalidArgumentError(method + ": incomplete problem");
  }
  DPLACE_RETURN_IF_ERROR(CheckPlaceable(problem).WithPrefix(method));
  SearchBudget budget;
  budget.samples = 1;
  DPLACE_ASSIGN_OR_RETURN(AgentSetup setup,
                          MakeSetup(problem, settings_, budget));
  setup.resuming = true;
  LoopState s;
  DPLACE_RETURN_IF_ERROR(InitPolicy(problem, setup).WithPrefix(method));
  DPLACE_RETURN_IF_ERROR(LoadCheckpointBytes(
      bytes, source, CheckpointMeta(*this, setup, s),
      [this](torch::serialize::InputArchive* a) { DoLoad(a); }, &s));
  CheckpointInfo info;
  info.samples = s.samples;
  info.updates = s.updates;
  info.has_best = s.has_best;
  return info;
}

// One search, step by step: Start, then RunBatch while BudgetLeft, then
// Finish. Owns what a checkpoint holds (LoopState), the log and the trace.
class SearchLoop {
 public:
  SearchLoop(Agent* agent, const PlacementProblem& problem,
             Environment* environment, const SearchOptions& options)
      : agent_(*agent),
        settings_(agent->settings_),
        problem_(problem),
        environment_(environment),
        options_(options),
        clock_(options.clock ? options.clock : SteadyClock()),
        failing_reward_(-std::sqrt(settings_.failing_step_time)) {}

  // Checks the request, builds the groups and the policy, resumes from the
  // checkpoint and opens the log.
  Status Start() {
    DPLACE_RETURN_IF_ERROR(CheckRequest());
    DPLACE_ASSIGN_OR_RETURN(setup_,
                            MakeSetup(problem_, settings_, options_.budget));
    setup_.resuming = !options_.resume_path.empty();
    s_.rng.seed(problem_.seed ^
                (options_.sampling_stream * 0x9E3779B97F4A7C15ull));
    agent_.average_gradients_ = options_.average_gradients;
    DPLACE_RETURN_IF_ERROR(agent_.InitPolicy(problem_, setup_));
    if (!options_.resume_path.empty()) {
      DPLACE_RETURN_IF_ERROR(LoadCheckpoint(
          options_.resume_path, CheckpointMeta(agent_, setup_, s_),
          [this](torch::serialize::InputArchive* a) { agent_.DoLoad(a); },
          &s_));
    }
    DPLACE_RETURN_IF_ERROR(OpenLog());
    trace_.num_groups = setup_.groups.num_groups;
    trace_.first_sample_of_this_run = s_.samples;
    start_ = clock_();
    if (settings_.baseline_starts_failing && !s_.baseline_set) {
      s_.baseline = failing_reward_;
      s_.baseline_set = true;
    }
    updates_at_checkpoint_ = s_.updates;
    return Status::Ok();
  }

  bool BudgetLeft() const {
    const SearchBudget& budget = options_.budget;
    return !(budget.samples > 0 && s_.samples >= budget.samples) &&
           !(budget.seconds > 0 && Wall() >= budget.seconds);
  }

  // Samples one batch, evaluates it, logs it and learns from it; then
  // checkpoints when due and reports progress.
  Status RunBatch() {
    int k = agent_.BatchSize();
    if (options_.budget.samples > 0) {
      k = static_cast<int>(
          std::min<int64_t>(k, options_.budget.samples - s_.samples));
    }
    EvaluatedBatch batch;
    batch.first_index = s_.samples;
    try {
      batch.group_devices = agent_.DoSample(k, &s_.rng);
    } catch (const std::exception& e) {
      return InternalError("sampling failed: " + FirstLine(e.what()));
    }
    const std::vector<std::pair<std::string, double>> stats =
        agent_.BatchStats();
    DPLACE_ASSIGN_OR_RETURN(std::vector<Measurement> measured,
                            Evaluate(batch.group_devices));
    DPLACE_RETURN_IF_ERROR(Record(measured, stats, &batch));
    MoveBaseline(&batch);
    s_.samples += k;
    try {
      s_.updates += agent_.DoUpdate(batch);
    } catch (const std::exception& e) {
      return InternalError("the policy update failed: " + FirstLine(e.what()));
    }
    DPLACE_RETURN_IF_ERROR(CheckpointWhenDue());
    ReportProgress(batch, stats);
    return Status::Ok();
  }

  // Saves the last checkpoint; the best placement and the trace.
  StatusOr<PlaceResult> Finish() {
    s_.wall_seconds = Wall();
    DPLACE_RETURN_IF_ERROR(Save());
    if (!s_.has_best) {
      return InternalError("the search evaluated no placement");
    }
    PlaceResult result;
    DPLACE_ASSIGN_OR_RETURN(
        result.placement,
        ExpandGroupPlacement(*problem_.graph, *problem_.cluster,
                             setup_.grouping, s_.best_groups));
    result.search = std::move(trace_);
    result.search.samples = s_.samples;
    result.search.updates = s_.updates;
    result.search.wall_seconds = s_.wall_seconds;
    result.search.best_step_time = s_.best_step_time;
    result.search.best_feasible = s_.best_feasible;
    return result;
  }

 private:
  Status CheckRequest() const {
    const PlacementProblem& problem = problem_;
    if (!problem.graph || !problem.cluster || !problem.cost || !environment_) {
      return InvalidArgumentError("incomplete problem");
    }
    const SearchBudget& budget = options_.budget;
    if (budget.samples < 0 || budget.seconds < 0 ||
        (budget.samples == 0 && budget.seconds == 0)) {
      return InvalidArgumentError(
          "the search needs a budget: samples > 0 or seconds > 0");
    }
    const Cluster& cluster = *problem.cluster;
    if (cluster.num_devices() < 2) {
      return InvalidArgumentError(
          "a learned placer needs a cluster of at least two devices; "
          "cluster " +
          cluster.name() + " has " + std::to_string(cluster.num_devices()));
    }
    if (environment_->graph().hash() != problem.graph->hash() ||
        environment_->cluster().name() != cluster.name()) {
      return InvalidArgumentError(
          "the environment evaluates another graph or cluster than the "
          "problem's");
    }
    if (options_.checkpoint_every < 1) {
      return InvalidArgumentError("checkpoint_every must be >= 1");
    }
    return CheckPlaceable(problem);
  }

  Status OpenLog() {
    if (options_.log_path.empty()) return Status::Ok();
    const bool resuming = !options_.resume_path.empty();
    if (resuming) {
      DPLACE_RETURN_IF_ERROR(TruncateLog(options_.log_path, s_.samples));
    }
    log_.open(options_.log_path, resuming ? std::ios::app : std::ios::trunc);
    if (!log_) {
      return InvalidArgumentError("log " + options_.log_path +
                                  ": cannot open for writing");
    }
    return Status::Ok();
  }

  double Wall() const { return s_.wall_seconds + (clock_() - start_); }

  StatusOr<std::vector<Measurement>> Evaluate(
      const std::vector<std::vector<DeviceId>>& group_devices) {
    std::vector<Placement> placements;
    for (const std::vector<DeviceId>& groups : group_devices) {
      DPLACE_ASSIGN_OR_RETURN(
          Placement p, ExpandGroupPlacement(*problem_.graph, *problem_.cluster,
                                            setup_.grouping, groups));
      placements.push_back(std::move(p));
    }
    return environment_->Evaluate(placements);
  }

  // The batch's rewards and use, the best so far, and a log line and a
  // trace record per sample.
  Status Record(const std::vector<Measurement>& measured,
                const std::vector<std::pair<std::string, double>>& stats,
                EvaluatedBatch* batch) {
    const bool drop_infeasible = settings_.feasible_only_after >= 0 &&
                                 s_.samples >= settings_.feasible_only_after;
    for (size_t i = 0; i < batch->group_devices.size(); ++i) {
      const Measurement& m = measured[i];
      const double reward =
          m.feasible ? -std::sqrt(m.step_time) : failing_reward_;
      batch->step_times.push_back(m.feasible ? m.step_time
                                             : settings_.failing_step_time);
      batch->feasible.push_back(m.feasible);
      batch->rewards.push_back(reward);
      batch->use.push_back(m.feasible || !drop_infeasible);
      if (Better(m.feasible, m.step_time, s_)) {
        s_.has_best = true;
        s_.best_groups = batch->group_devices[i];
        s_.best_step_time = m.step_time;
        s_.best_feasible = m.feasible;
      }
      SampleRecord r;
      r.index = s_.samples + static_cast<int64_t>(i);
      r.wall_seconds = Wall();
      r.step_time = m.step_time;
      r.feasible = m.feasible;
      r.reward = reward;
      r.best_step_time = s_.best_feasible ? s_.best_step_time : 0;
      if (log_.is_open()) {
        json line = RecordJson(r);
        for (const auto& [key, value] : stats) line[key] = value;
        log_ << line.dump() << "\n";
      }
      trace_.history.push_back(r);
    }
    if (log_.is_open()) {
      log_.flush();
      if (!log_) {
        return InvalidArgumentError("log " + options_.log_path +
                                    ": write failed");
      }
    }
    return Status::Ok();
  }

  // The baseline before this batch gives the advantages; then every used
  // sample moves it.
  void MoveBaseline(EvaluatedBatch* batch) {
    const size_t k = batch->rewards.size();
    int used = 0;
    double used_reward_sum = 0;
    for (size_t i = 0; i < k; ++i) {
      if (!batch->use[i]) continue;
      ++used;
      used_reward_sum += batch->rewards[i];
    }
    if (!s_.baseline_set && used > 0) {
      s_.baseline = used_reward_sum / used;
      s_.baseline_set = true;
    }
    for (size_t i = 0; i < k; ++i) {
      batch->advantages.push_back(batch->rewards[i] - s_.baseline);
    }
    for (size_t i = 0; i < k; ++i) {
      if (!batch->use[i]) continue;
      s_.baseline = settings_.baseline_decay * s_.baseline +
                    (1 - settings_.baseline_decay) * batch->rewards[i];
    }
  }

  Status CheckpointWhenDue() {
    if (s_.updates - updates_at_checkpoint_ < options_.checkpoint_every) {
      return Status::Ok();
    }
    updates_at_checkpoint_ = s_.updates;
    const double saved_wall = s_.wall_seconds;
    s_.wall_seconds = Wall();
    Status saved = Save();
    s_.wall_seconds = saved_wall;
    return saved;
  }

  Status Save() {
    if (options_.checkpoint_path.empty()) return Status::Ok();
    return WriteCheckpoint(
        options_.checkpoint_path, CheckpointMeta(agent_, setup_, s_),
        [this](torch::serialize::OutputArchive* a) { agent_.DoSave(a); });
  }

  void ReportProgress(
      const EvaluatedBatch& batch,
      const std::vector<std::pair<std::string, double>>& stats) const {
    if (!options_.progress) return;
    double feasible_sum = 0;
    int feasible = 0;
    for (size_t i = 0; i < batch.feasible.size(); ++i) {
      if (!batch.feasible[i]) continue;
      feasible_sum += batch.step_times[i];
      ++feasible;
    }
    SearchProgress p;
    p.samples = s_.samples;
    p.updates = s_.updates;
    p.wall_seconds = Wall();
    p.budget = options_.budget;
    p.batch_mean_step_time = feasible ? feasible_sum / feasible : 0;
    p.best_step_time = s_.best_feasible ? s_.best_step_time : 0;
    p.agent_stats = stats;
    options_.progress(p);
  }

  Agent& agent_;
  const SearchSettings& settings_;
  const PlacementProblem& problem_;
  Environment* environment_;
  const SearchOptions& options_;
  const Clock clock_;
  const double failing_reward_;
  AgentSetup setup_;
  LoopState s_;
  std::ofstream log_;
  SearchTrace trace_;
  double start_ = 0;  // clock_() when this run began.
  int64_t updates_at_checkpoint_ = 0;
};

StatusOr<std::unique_ptr<Agent>> MakeAgent(std::string_view name,
                                           const MethodOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> method,
                          MakeMethod(name, options));
  Agent* agent = dynamic_cast<Agent*>(method.get());
  if (agent == nullptr) {
    return InvalidArgumentError("method " + std::string(name) +
                                " is not a learned agent");
  }
  method.release();
  return std::unique_ptr<Agent>(agent);
}

StatusOr<PlaceResult> Agent::DoPlace(const PlacementProblem& problem,
                                     const PlaceContext& context) {
  SearchLoop loop(this, problem, context.environment, context.search);
  DPLACE_RETURN_IF_ERROR(loop.Start());
  while (loop.BudgetLeft()) DPLACE_RETURN_IF_ERROR(loop.RunBatch());
  return loop.Finish();
}

}  // namespace dplace
