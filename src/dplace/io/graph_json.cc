#include "dplace/io/graph_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <istream>
#include <limits>
#include <optional>
#include <streambuf>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dplace/io/file.h"
#include "dplace/io/json_fields.h"

namespace dplace {
namespace {

using io_internal::DescribeJson;
using io_internal::FieldReader;
using io_internal::json;

constexpr char kFormat[] = "dplace.graph";

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

void ReadTensor(const json& value, const std::string& path, TensorInfo* t,
                FieldReader& parent) {
  FieldReader f(value, path);
  const std::string dtype = f.String("dtype", "float32");
  if (auto parsed = ParseDataType(dtype)) {
    t->dtype = *parsed;
  } else if (f.status().ok()) {
    f.Fail(f.PathOf("dtype") + ": unknown data type \"" + dtype + "\"");
  }
  if (const json* shape = f.Array("shape", false)) {
    for (size_t i = 0; i < shape->size(); ++i) {
      const json& d = (*shape)[i];
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        f.Fail(Index(f.PathOf("shape"), i) +
               ": expected an integer >= 0, got " + DescribeJson(d));
        break;
      }
      t->shape.push_back(d.get<int64_t>());
    }
  }
  const std::optional<int64_t> shape_bytes =
      CheckedShapeBytes(t->shape, t->dtype);
  if (f.status().ok() && !shape_bytes) {
    f.Fail(f.PathOf("shape") + ": " + DescribeShape(t->shape, t->dtype) +
           " has more than 2^63-1 bytes");
  }
  t->bytes = f.Int("bytes", t->shape.empty() ? 0 : shape_bytes.value_or(0), 0);
  if (!f.Finish().ok()) parent.Fail(f.status().message());
}

Status ReadOp(const json& value, const std::string& path, OpSpec* op) {
  FieldReader f(value, path);
  op->name = f.String("name");
  if (f.status().ok() && !op->name.empty() && op->name[0] == '^') {
    f.Fail(f.PathOf("name") + ": an op name may not start with '^' (it " +
           "marks a control input), got \"" + op->name + "\"");
  }
  op->type = f.String("type");
  const std::string phase = f.String("phase", "forward");
  if (auto parsed = ParsePhase(phase)) {
    op->phase = *parsed;
  } else if (f.status().ok()) {
    f.Fail(f.PathOf("phase") +
           ": expected \"forward\", \"backward\" or \"update\", got \"" +
           phase + "\"");
  }
  op->scope = f.String("scope", "");
  op->flops = f.Number("flops", 0.0, 0.0);
  op->bytes_accessed = f.Int("bytes_accessed", 0, 0);
  op->persistent_bytes = f.Int("persistent_bytes", 0, 0);
  op->temporary_bytes = f.Int("temporary_bytes", 0, 0);
  op->colocation_group = f.String("colocation_group", "");
  if (const json* devices = f.Array("devices", false)) {
    op->allowed_devices = DeviceKindSet();
    for (size_t i = 0; i < devices->size(); ++i) {
      const json& d = (*devices)[i];
      auto kind =
          d.is_string() ? ParseDeviceKind(d.get<std::string>()) : std::nullopt;
      if (!kind) {
        f.Fail(Index(f.PathOf("devices"), i) +
               ": expected \"cpu\" or \"gpu\", got " + DescribeJson(d));
        break;
      }
      op->allowed_devices.Add(*kind);
    }
  }
  if (const json* outputs = f.Array("outputs", false)) {
    op->outputs.resize(outputs->size());
    for (size_t i = 0; i < outputs->size(); ++i) {
      ReadTensor((*outputs)[i], Index(f.PathOf("outputs"), i), &op->outputs[i],
                 f);
    }
  }
  f.Array("inputs", false);  // Read in a second pass, once all ops exist.
  return f.Finish();
}

// The output index of an input reference ending in ":<digits>", else
// nullopt (also when the index does not fit in an int).
std::optional<int> OutputSuffix(const std::string& name) {
  const size_t colon = name.rfind(':');
  if (colon == std::string::npos || colon + 1 == name.size()) {
    return std::nullopt;
  }
  int64_t index = 0;
  for (size_t i = colon + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    index = index * 10 + (name[i] - '0');
    if (index > std::numeric_limits<int>::max()) return std::nullopt;
  }
  return static_cast<int>(index);
}

// Keys of one JSON object, to find a repeated one (nlohmann keeps the
// last). A scan while there are few, a hash set beyond.
class KeySet {
 public:
  void Clear() {
    few_.clear();
    many_.clear();
  }
  // False when `key` was inserted before.
  bool Insert(const std::string& key) {
    if (many_.empty()) {
      for (const std::string& k : few_) {
        if (k == key) return false;
      }
      few_.push_back(key);
      if (few_.size() > 32) many_.insert(few_.begin(), few_.end());
      return true;
    }
    return many_.insert(key).second;
  }

 private:
  std::vector<std::string> few_;
  std::unordered_set<std::string> many_;
};

// The optional fields of GraphFileInfo.
GraphFileInfo ReadInfo(FieldReader& f) {
  GraphFileInfo info;
  info.batch = f.Int("batch", 0, 0);
  info.optimizer = f.String("optimizer", "");
  const json* warnings = f.Array("warnings", false);
  if (warnings == nullptr) return info;
  for (size_t i = 0; i < warnings->size(); ++i) {
    if (!(*warnings)[i].is_string()) {
      f.Fail(Index("warnings", i) + ": expected a string, got " +
             DescribeJson((*warnings)[i]));
      break;
    }
    info.warnings.push_back((*warnings)[i].get<std::string>());
  }
  return info;
}

// Reads a graph document event by event (nlohmann's parser callback): each
// element of "ops" is read and added to the builder as soon as it is
// complete, then dropped, so memory holds the graph and one op's JSON tree,
// never the file's whole tree. Errors are reported in the order a reader of
// the whole tree would find them: syntax (and repeated keys), the top-level
// fields, the ops' fields in order, their inputs in order, the graph.
class GraphReader {
 public:
  explicit GraphReader(const FileLimits& limits) : limits_(limits) {}

  // The parser's callback; false drops the value just parsed.
  bool Event(int depth, json::parse_event_t event, json& parsed) {
    using Event = json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        Open(depth, event == Event::array_start);
        return true;
      case Event::key:
        Key(depth, parsed.get_ref<const std::string&>());
        return true;
      case Event::value:
        Element(depth);
        if (!IsOp(depth)) return true;
        ReadOpElement(parsed);
        return false;
      case Event::object_end:
      case Event::array_end: {
        const bool op = IsOp(depth);
        if (op) ReadOpElement(parsed);
        levels_used_ = depth;
        return !op;
      }
    }
    return true;
  }

  // After the parse: the graph, or the first error. `root` is the document
  // without the elements of "ops".
  // The file's GraphFileInfo goes to *info when given and the top-level
  // fields are valid.
  StatusOr<Graph> Finish(const json& root, GraphFileInfo* info) {
    DPLACE_RETURN_IF_ERROR(repeated_key_);
    io_internal::FieldReader f(root, "");
    io_internal::CheckFormat(f, kFormat);
    builder_.set_name(f.String("name", ""));
    f.Array("ops", true);
    GraphFileInfo read = ReadInfo(f);
    DPLACE_RETURN_IF_ERROR(f.Finish());
    if (info) *info = std::move(read);
    DPLACE_RETURN_IF_ERROR(limit_);
    DPLACE_RETURN_IF_ERROR(op_error_);
    DPLACE_RETURN_IF_ERROR(ResolveDeferredInputs());
    return std::move(builder_).Build();
  }

 private:
  // A container being parsed: its JSON path, and for an array the index of
  // its current element, for an object its keys so far.
  struct Level {
    bool array = false;
    bool ops = false;  // The top-level "ops" array.
    int64_t index = -1;
    std::string key;
    KeySet keys;
  };

  // An input naming an op not added yet: resolved once all ops are.
  struct DeferredInput {
    EdgeId edge;
    int64_t op, input;             // Its place: ops[op].inputs[input].
    size_t name_begin, name_size;  // In deferred_names_.
    bool control;
  };

  static std::string OpPath(int64_t op) {
    return "ops[" + std::to_string(op) + "]";
  }
  static std::string InputPath(int64_t op, int64_t input) {
    return OpPath(op) + ".inputs[" + std::to_string(input) + "]";
  }

  std::string Path(int depth) const {
    std::string path;
    for (int d = 0; d < depth; ++d) {
      const Level& l = levels_[d];
      if (l.array) {
        path += "[" + std::to_string(l.index) + "]";
      } else {
        path += (path.empty() ? "" : ".") + l.key;
      }
    }
    return path;
  }

  // A value, object or array starts at `depth`: the next element of the
  // container around it.
  void Element(int depth) {
    levels_used_ = depth;
    if (depth > 0 && levels_[depth - 1].array) ++levels_[depth - 1].index;
  }

  void Open(int depth, bool array) {
    Element(depth);
    if (static_cast<int>(levels_.size()) <= depth) levels_.resize(depth + 1);
    Level& l = levels_[depth];
    l.array = array;
    l.ops = array && depth == 1 && !levels_[0].array && levels_[0].key == "ops";
    l.index = -1;
    l.key.clear();
    l.keys.Clear();
    levels_used_ = depth + 1;
  }

  void Key(int depth, const std::string& key) {
    Level& l = levels_[depth - 1];
    l.key = key;
    if (!l.keys.Insert(key) && repeated_key_.ok()) {
      const std::string path = Path(depth - 1);
      repeated_key_ = InvalidArgumentError(
          (path.empty() ? std::string("top level") : path) + ": the key \"" +
          key.substr(0, 80) +
          "\" appears twice (each key may appear once in an object)");
    }
  }

  // Whether the value ending at `depth` is an element of "ops".
  bool IsOp(int depth) const {
    return depth == 2 && levels_used_ >= 2 && levels_[1].ops;
  }

  void ReadOpElement(const json& value) {
    const int64_t i = levels_[1].index;
    if (!limit_.ok() || !op_error_.ok()) return;
    if (i >= limits_.max_graph_ops) {
      limit_ = InvalidArgumentError(
          "ops: more than " + std::to_string(limits_.max_graph_ops) +
          " ops, the most a graph file may hold (FileLimits::max_graph_ops)");
      return;
    }
    const std::string path = OpPath(i);
    OpSpec spec;
    op_error_ = ReadOp(value, path, &spec);
    if (!op_error_.ok()) return;
    if (builder_.FindOp(spec.name)) {
      op_error_ = InvalidArgumentError(path + ".name: duplicate op name \"" +
                                       spec.name + "\"");
      return;
    }
    const OpId op = builder_.AddOp(std::move(spec));
    ReadInputs(value, i, op);
  }

  // Adds the edges of op `dst` from its "inputs": "a" (output 0 of a), "a:1"
  // (output 1), "^a" (control edge), in order. An input naming an op not
  // added yet gets its edge now and its source once all ops are added.
  void ReadInputs(const json& op, int64_t index, OpId dst) {
    auto it = op.find("inputs");
    if (it == op.end()) return;
    for (size_t i = 0; i < it->size(); ++i) {
      const json& input = (*it)[i];
      if (!input.is_string()) {
        if (!first_bad_input_) {
          first_bad_input_ = {index, static_cast<int64_t>(i)};
          bad_input_ = InvalidArgumentError(
              InputPath(index, static_cast<int64_t>(i)) +
              ": expected a string like \"op\", \"op:1\" or \"^op\", got " +
              DescribeJson(input));
        }
        continue;
      }
      if (builder_.num_edges() >= limits_.max_graph_edges) {
        limit_ = InvalidArgumentError(
            InputPath(index, static_cast<int64_t>(i)) + ": more than " +
            std::to_string(limits_.max_graph_edges) +
            " edges in all, the most a graph file may hold "
            "(FileLimits::max_graph_edges)");
        return;
      }
      const std::string& name = input.get_ref<const std::string&>();
      const bool control = !name.empty() && name[0] == '^';
      const EdgeId e = control ? builder_.AddControlEdge(-1, dst)
                               : builder_.AddEdge(-1, 0, dst);
      // Resolved now when no op added later can change the answer.
      std::optional<OpId> src;
      int output = 0;
      if (control) {
        src = builder_.FindOp(std::string_view(name).substr(1));
      } else if (std::optional<int> suffix = OutputSuffix(name)) {
        src =
            builder_.FindOp(std::string_view(name).substr(0, name.rfind(':')));
        output = *suffix;
      } else {
        src = builder_.FindOp(name);
      }
      if (src) {
        builder_.SetEdgeSource(e, *src, output);
        continue;
      }
      deferred_.push_back({e, index, static_cast<int64_t>(i),
                           deferred_names_.size(), name.size(), control});
      deferred_names_ += name;
    }
  }

  // The inputs that named ops not added when they were read, resolved as
  // GraphToJson writes them: "a:1" is output 1 of op "a" when there is an
  // op "a"; else it names an op "a:1".
  Status ResolveDeferredInputs() {
    for (const DeferredInput& d : deferred_) {
      if (first_bad_input_ &&
          *first_bad_input_ < std::make_pair(d.op, d.input)) {
        break;
      }
      std::string name = deferred_names_.substr(d.name_begin, d.name_size);
      if (d.control) name.erase(0, 1);
      int output = 0;
      if (std::optional<int> index = OutputSuffix(name); !d.control && index) {
        const std::string op = name.substr(0, name.rfind(':'));
        if (builder_.FindOp(op)) {
          output = *index;
          name = op;
        }
      }
      const std::optional<OpId> src = builder_.FindOp(name);
      if (!src) {
        return InvalidArgumentError(InputPath(d.op, d.input) +
                                    ": unknown op \"" + name + "\"");
      }
      builder_.SetEdgeSource(d.edge, *src, output);
    }
    return bad_input_;
  }

  const FileLimits limits_;
  GraphBuilder builder_;
  std::vector<Level> levels_;  // [0, levels_used_) are open.
  int levels_used_ = 0;
  Status repeated_key_, limit_, op_error_, bad_input_;
  std::optional<std::pair<int64_t, int64_t>> first_bad_input_;
  std::vector<DeferredInput> deferred_;
  std::string deferred_names_;
};

// nlohmann's message without its id: "parse error at line 3, column 5:
// ...". A number too large for a double is out_of_range.406, not a
// parse_error.
Status MalformedJson(const json::exception& e, const std::string& source) {
  std::string what = e.what();
  const size_t pos = what.find("] ");
  if (pos != std::string::npos) what = what.substr(pos + 2);
  return InvalidArgumentError(source + ": malformed JSON: " + what);
}

// Parses `input` (a string or an istream) with a GraphReader.
template <typename Input>
StatusOr<Graph> ParseGraph(Input&& input, const std::string& source,
                           const FileLimits& limits, GraphFileInfo* info) {
  GraphReader reader(limits);
  json root;
  try {
    root = json::parse(
        std::forward<Input>(input),
        [&reader](int depth, json::parse_event_t event, json& parsed) {
          return reader.Event(depth, event, parsed);
        });
  } catch (const json::exception& e) {
    return MalformedJson(e, source);
  }
  StatusOr<Graph> graph = reader.Finish(root, info);
  if (!graph.ok()) return graph.status().WithPrefix(source);
  return graph;
}

// A file's bytes for the parser, read with read(2) into a buffer; past
// `limit` bytes it ends the input and says so (pipes have no size to check
// first).
class BoundedFileBuffer : public std::streambuf {
 public:
  BoundedFileBuffer(int fd, int64_t limit) : fd_(fd), limit_(limit) {}
  bool over_limit() const { return over_limit_; }
  bool failed() const { return failed_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (over_limit_ || failed_) return traits_type::eof();
    ssize_t n;
    do {
      n = read(fd_, buffer_.data(), buffer_.size());
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      failed_ = n < 0;
      return traits_type::eof();
    }
    read_ += n;
    if (read_ > limit_) {
      over_limit_ = true;
      return traits_type::eof();
    }
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  const int fd_;
  const int64_t limit_;
  int64_t read_ = 0;
  bool over_limit_ = false, failed_ = false;
  std::vector<char> buffer_ = std::vector<char>(1 << 20);
};

}  // namespace

StatusOr<Graph> ParseGraphJson(const std::string& text,
                               const std::string& source, GraphFileInfo* info,
                               const FileLimits& limits) {
  return ParseGraph(text, source, limits, info);
}

StatusOr<Graph> ReadGraphJson(const std::string& path, const FileLimits& limits,
                              GraphFileInfo* info) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return NotFoundError(path + ": cannot open: " + std::strerror(errno));
  }
  BoundedFileBuffer buffer(fd, limits.max_file_bytes);
  std::istream in(&buffer);
  StatusOr<Graph> graph = ParseGraph(in, path, limits, info);
  close(fd);
  // A cut input reads as malformed JSON: say why it was cut.
  if (buffer.over_limit()) {
    return InvalidArgumentError(path + ": file is larger than the limit of " +
                                std::to_string(limits.max_file_bytes) +
                                " bytes (FileLimits::max_file_bytes)");
  }
  if (buffer.failed()) return InvalidArgumentError(path + ": read failed");
  return graph;
}

std::string GraphToJson(const Graph& g, const GraphFileInfo& info) {
  json ops = json::array();
  for (OpId op = 0; op < g.num_ops(); ++op) {
    json o;
    o["name"] = g.op_name(op);
    o["type"] = g.op_type(op);
    if (g.phase(op) != Phase::kForward) o["phase"] = PhaseName(g.phase(op));
    if (!g.scope(op).empty()) o["scope"] = g.scope(op);
    if (g.flops(op) != 0) o["flops"] = g.flops(op);
    if (g.bytes_accessed(op) != 0) o["bytes_accessed"] = g.bytes_accessed(op);
    if (g.persistent_bytes(op) != 0) {
      o["persistent_bytes"] = g.persistent_bytes(op);
    }
    if (g.temporary_bytes(op) != 0)
      o["temporary_bytes"] = g.temporary_bytes(op);
    if (!g.colocation_group(op).empty()) {
      o["colocation_group"] = g.colocation_group(op);
    }
    if (!(g.allowed_devices(op) == DeviceKindSet::All())) {
      json kinds = json::array();
      for (DeviceKind k : {DeviceKind::kCpu, DeviceKind::kGpu}) {
        if (g.allowed_devices(op).Contains(k))
          kinds.push_back(DeviceKindName(k));
      }
      o["devices"] = kinds;
    }
    json outputs = json::array();
    for (int i = 0; i < g.num_outputs(op); ++i) {
      const TensorInfo& t = g.tensor(g.output(op, i));
      json out;
      if (!t.shape.empty()) out["shape"] = t.shape;
      if (t.dtype != DataType::kFloat32) out["dtype"] = DataTypeName(t.dtype);
      out["bytes"] = t.bytes;
      outputs.push_back(out);
    }
    if (!outputs.empty()) o["outputs"] = outputs;
    json inputs = json::array();
    for (EdgeId e : g.in_edges(op)) {
      const std::string& src = g.op_name(g.edge_src(e));
      if (g.is_control(e)) {
        inputs.push_back("^" + src);
      } else {
        const int index = g.edge_tensor(e) - g.output(g.edge_src(e), 0);
        // An op name that itself ends in ":<digits>" always gets its index,
        // so the reader cannot take the name's suffix for one.
        inputs.push_back(index == 0 && !OutputSuffix(src)
                             ? src
                             : src + ":" + std::to_string(index));
      }
    }
    if (!inputs.empty()) o["inputs"] = inputs;
    ops.push_back(std::move(o));
  }
  json root;
  root["format"] = kFormat;
  root["version"] = 1;
  root["name"] = g.name();
  if (info.batch > 0) root["batch"] = info.batch;
  if (!info.optimizer.empty()) root["optimizer"] = info.optimizer;
  if (!info.warnings.empty()) root["warnings"] = info.warnings;
  root["ops"] = std::move(ops);
  return root.dump(1) + "\n";
}

Status WriteGraphJson(const Graph& graph, const std::string& path,
                      const GraphFileInfo& info) {
  return WriteTextFile(path, GraphToJson(graph, info));
}

}  // namespace dplace
