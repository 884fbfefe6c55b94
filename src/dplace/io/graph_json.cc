#include "dplace/io/graph_json.h"

#include <cstdint>
#include <limits>
#include <optional>

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

// Adds the edges of op `dst` from its "inputs": "a" (output 0 of a), "a:1"
// (output 1), "^a" (control edge).
Status ReadInputs(const json& op, const std::string& path, OpId dst,
                  GraphBuilder& builder) {
  auto it = op.find("inputs");
  if (it == op.end()) return Status::Ok();
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string where = Index(path + ".inputs", i);
    const json& input = (*it)[i];
    if (!input.is_string()) {
      return InvalidArgumentError(where +
                                  ": expected a string like \"op\", "
                                  "\"op:1\" or \"^op\", got " +
                                  DescribeJson(input));
    }
    std::string name = input.get<std::string>();
    const bool control = !name.empty() && name[0] == '^';
    if (control) name.erase(0, 1);
    int output = 0;
    // "a:1" is output 1 of op "a" when there is an op "a"; else it names
    // an op "a:1" (GraphToJson writes "a:1:0" when both exist).
    if (std::optional<int> index = OutputSuffix(name); !control && index) {
      const std::string op = name.substr(0, name.rfind(':'));
      if (builder.FindOp(op)) {
        output = *index;
        name = op;
      }
    }
    const std::optional<OpId> src = builder.FindOp(name);
    if (!src) {
      return InvalidArgumentError(where + ": unknown op \"" + name + "\"");
    }
    if (control) {
      builder.AddControlEdge(*src, dst);
    } else {
      builder.AddEdge(*src, output, dst);
    }
  }
  return Status::Ok();
}

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
             io_internal::DescribeJson((*warnings)[i]));
      break;
    }
    info.warnings.push_back((*warnings)[i].get<std::string>());
  }
  return info;
}

StatusOr<Graph> ParseGraph(const json& root, GraphFileInfo* info) {
  FieldReader f(root, "");
  io_internal::CheckFormat(f, kFormat);
  GraphBuilder builder(f.String("name", ""));
  const json* ops = f.Array("ops", true);
  GraphFileInfo read = ReadInfo(f);
  DPLACE_RETURN_IF_ERROR(f.Finish());
  if (info) *info = std::move(read);
  for (size_t i = 0; i < ops->size(); ++i) {
    OpSpec spec;
    DPLACE_RETURN_IF_ERROR(ReadOp((*ops)[i], Index("ops", i), &spec));
    if (builder.FindOp(spec.name)) {
      return InvalidArgumentError(
          Index("ops", i) + ".name: duplicate op name \"" + spec.name + "\"");
    }
    builder.AddOp(std::move(spec));
  }
  for (size_t i = 0; i < ops->size(); ++i) {
    DPLACE_RETURN_IF_ERROR(
        ReadInputs((*ops)[i], Index("ops", i), static_cast<OpId>(i), builder));
  }
  return std::move(builder).Build();
}

}  // namespace

StatusOr<Graph> ParseGraphJson(const std::string& text,
                               const std::string& source, GraphFileInfo* info) {
  return io_internal::ParseDocument<Graph>(
      text, source,
      [info](const json& root) { return ParseGraph(root, info); });
}

StatusOr<Graph> ReadGraphJson(const std::string& path, const FileLimits& limits,
                              GraphFileInfo* info) {
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, limits));
  return ParseGraphJson(text, path, info);
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
