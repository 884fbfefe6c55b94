#include "dplace/rl/checkpoint.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>

#include "dplace/io/file.h"
#include "dplace/io/json_parse.h"
#include "dplace/io/pickle_check.h"
#include "dplace/io/zip_records.h"
#include "dplace/rl/policy_agent.h"

namespace dplace {
namespace {

using nlohmann::json;

constexpr const char* kCheckpointFormat = "dplace-rl-checkpoint";
// 2: the meta holds the agent's options and the seed; the file ends with
// a checksum.
constexpr int kCheckpointVersion = 2;

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

Status CheckMeta(const std::string& path, const json& meta,
                 const json& expected) {
  for (const char* key :
       {"format", "version", "agent", "options", "seed", "graph_hash",
        "cluster", "num_groups", "num_devices"}) {
    if (!meta.contains(key)) {
      return InvalidArgumentError("checkpoint " + path + ": no field \"" + key +
                                  "\"; not a dplace checkpoint");
    }
    if (meta[key] != expected[key]) {
      return InvalidArgumentError(
          "checkpoint " + path + ": " + key + " is " +
          meta[key].dump().substr(0, 200) + ", but this search has " +
          expected[key].dump() +
          " (resume with the same method, model, cluster, --option and "
          "--seed)");
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
    // LibTorch reads an empty record into a null buffer: memcpy may not
    // be given one, even for no bytes.
    if (n > 0) std::memcpy(buf, bytes_.data() + pos, n);
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

// The search's states in a checkpoint's meta, `expected` giving the
// search's number of groups and devices.
Status ReadSearchStates(const std::string& path, const json& meta,
                        const json& expected, SearchState* loop,
                        AgentSearchState* s) {
  const MetaReader r(path, meta);
  DPLACE_RETURN_IF_ERROR(r.Count("samples", &loop->samples));
  DPLACE_RETURN_IF_ERROR(r.Count("updates", &loop->updates));
  DPLACE_RETURN_IF_ERROR(r.Number("wall_seconds", &loop->wall_seconds, 0));
  DPLACE_RETURN_IF_ERROR(r.Number("baseline", &s->baseline, -HUGE_VAL));
  DPLACE_RETURN_IF_ERROR(r.Bool("baseline_set", &s->baseline_set));
  std::string rng_state;
  DPLACE_RETURN_IF_ERROR(r.String("rng", &rng_state));
  std::istringstream rng(rng_state);
  rng >> loop->rng;
  if (rng.fail()) {
    return InvalidArgumentError("checkpoint " + path +
                                ": rng: not a generator state");
  }
  DPLACE_RETURN_IF_ERROR(r.Bool("has_best", &loop->has_best));
  DPLACE_RETURN_IF_ERROR(r.Devices(
      "best_groups", expected["num_devices"].get<int>(), &s->best_groups));
  DPLACE_RETURN_IF_ERROR(r.Number("best_step_time", &loop->best_step_time, 0));
  DPLACE_RETURN_IF_ERROR(r.Bool("best_feasible", &loop->best_feasible));
  if (loop->has_best && static_cast<int>(s->best_groups.size()) !=
                            expected["num_groups"].get<int>()) {
    return InvalidArgumentError("checkpoint " + path +
                                ": best_groups has the wrong size");
  }
  return Status::Ok();
}

}  // namespace

json CheckpointMeta(const Method& agent, const AgentSetup& setup,
                    const SearchState& loop, const AgentSearchState& s) {
  std::ostringstream rng;
  rng << loop.rng;
  return json{{"format", kCheckpointFormat},
              {"version", kCheckpointVersion},
              {"agent", agent.name()},
              {"options", agent.options().values()},
              {"seed", setup.problem->seed},
              {"graph_hash", setup.problem->graph->hash()},
              {"cluster", setup.problem->cluster->name()},
              {"num_groups", setup.groups.num_groups},
              {"num_devices", setup.num_devices},
              {"samples", loop.samples},
              {"updates", loop.updates},
              {"wall_seconds", loop.wall_seconds},
              {"baseline", s.baseline},
              {"baseline_set", s.baseline_set},
              {"rng", rng.str()},
              {"has_best", loop.has_best},
              {"best_groups", s.best_groups},
              {"best_step_time", loop.best_step_time},
              {"best_feasible", loop.best_feasible}};
}

Status WriteCheckpoint(const std::string& path, const json& meta,
                       const SaveAgentState& save_agent) {
  // In memory: LibTorch's writer reports a failed write from its
  // destructor, where an exception ends the process.
  std::ostringstream bytes;
  try {
    torch::serialize::OutputArchive archive;
    archive.write("meta", StringTensor(meta.dump()));
    torch::serialize::OutputArchive agent_archive;
    save_agent(&agent_archive);
    archive.write("agent", agent_archive);
    archive.save_to(bytes);
  } catch (const std::exception& e) {
    return InvalidArgumentError("checkpoint " + path +
                                ": cannot write: " + FirstLine(e.what()));
  }
  return WriteChecksummedFile(path, bytes.str()).WithPrefix("checkpoint");
}

Status LoadCheckpointBytes(const std::string& bytes, const std::string& path,
                           const json& expected,
                           const LoadAgentState& load_agent, SearchState* loop,
                           AgentSearchState* s) {
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
    StatusOr<json> parsed =
        ParseJson(TensorString(meta_tensor), "checkpoint " + path + ": meta");
    if (!parsed.ok()) return parsed.status();
    const json& meta = *parsed;
    if (!meta.is_object()) {
      return InvalidArgumentError("checkpoint " + path +
                                  ": meta is not a JSON object");
    }
    DPLACE_RETURN_IF_ERROR(CheckMeta(path, meta, expected));
    DPLACE_RETURN_IF_ERROR(ReadSearchStates(path, meta, expected, loop, s));
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

Status LoadCheckpoint(const std::string& path, const json& expected,
                      const LoadAgentState& load_agent, SearchState* loop,
                      AgentSearchState* s) {
  StatusOr<std::string> bytes = ReadChecksummedFile(path);
  if (!bytes.ok()) return bytes.status().WithPrefix("checkpoint");
  return LoadCheckpointBytes(*bytes, path, expected, load_agent, loop, s);
}

}  // namespace dplace
