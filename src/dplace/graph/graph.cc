#include "dplace/graph/graph.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <queue>

namespace dplace {
namespace {

constexpr std::string_view kPhaseNames[] = {"forward", "backward", "update"};

struct DataTypeEntry {
  std::string_view name;
  int size;
};
constexpr DataTypeEntry kDataTypes[] = {
    {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8},
    {"int8", 1},    {"int32", 4},   {"int64", 8},    {"bool", 1},
};

// 64-bit FNV-1a: stable across runs and platforms, unlike std::hash.
class Fnv1a {
 public:
  void Add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      state_ = (state_ ^ bytes[i]) * 0x100000001b3ULL;
    }
  }
  void AddString(std::string_view s) {
    Add(s.data(), s.size());
    Add(static_cast<uint64_t>(s.size()));
  }
  template <typename T>
  void Add(T value) {
    static_assert(std::is_arithmetic_v<T>);
    Add(&value, sizeof(value));
  }
  std::string Hex() const {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx",
                  static_cast<unsigned long long>(state_));
    return buf;
  }

 private:
  uint64_t state_ = 0xcbf29ce484222325ULL;
};

std::string HashGraph(const Graph& g) {
  Fnv1a h;
  h.Add(static_cast<int64_t>(g.num_ops()));
  for (OpId op = 0; op < g.num_ops(); ++op) {
    h.AddString(g.op_name(op));
    h.AddString(g.op_type(op));
    h.Add(static_cast<int>(g.phase(op)));
    h.Add(g.flops(op));
    h.Add(g.bytes_accessed(op));
    h.Add(g.persistent_bytes(op));
    h.Add(g.temporary_bytes(op));
    h.AddString(g.colocation_group(op));
    h.Add(g.allowed_devices(op).bits());
    for (int i = 0; i < g.num_outputs(op); ++i) {
      h.Add(g.tensor_bytes(g.output(op, i)));
    }
  }
  // Edges by consumer, in input order: the order graph JSON keeps, so a
  // graph's hash survives a write and a read.
  for (OpId op = 0; op < g.num_ops(); ++op) {
    for (EdgeId e : g.in_edges(op)) {
      h.Add(g.edge_src(e));
      h.Add(op);
      h.Add(g.edge_tensor(e));
    }
  }
  return h.Hex();
}

// The offset of the first byte that breaks UTF-8 in `s`, or npos. Names
// end up in JSON files, which must be UTF-8.
size_t InvalidUtf8At(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, min = 0x10000;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // Truncated sequence.
    uint32_t code = c & (0x3F >> n);
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return i;
      code = (code << 6) | (b & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

// Builds CSR offsets and ids from per-edge keys (the op each edge hangs on).
void BuildCsr(int num_ops, const std::vector<OpId>& key,
              std::vector<int32_t>* offsets, std::vector<EdgeId>* ids) {
  offsets->assign(num_ops + 1, 0);
  for (OpId k : key) ++(*offsets)[k + 1];
  for (int i = 0; i < num_ops; ++i) (*offsets)[i + 1] += (*offsets)[i];
  ids->resize(key.size());
  std::vector<int32_t> next(offsets->begin(), offsets->end() - 1);
  for (EdgeId e = 0; e < static_cast<EdgeId>(key.size()); ++e) {
    (*ids)[next[key[e]]++] = e;
  }
}

}  // namespace

namespace graph_internal {

int32_t StringTable::Append(std::string s, bool* existing) {
  *existing = !slots_.empty() && slots_[SlotOf(s)] >= 0;
  const auto id = static_cast<int32_t>(strings_.size());
  strings_.push_back(std::move(s));
  if (!*existing) Index(id);
  return id;
}

int32_t StringTable::Intern(std::string_view s) {
  if (std::optional<int32_t> id = Find(s)) return *id;
  const auto id = static_cast<int32_t>(strings_.size());
  strings_.emplace_back(s);
  Index(id);
  return id;
}

std::optional<int32_t> StringTable::Find(std::string_view s) const {
  if (slots_.empty()) return std::nullopt;
  const int32_t id = slots_[SlotOf(s)];
  if (id < 0) return std::nullopt;
  return id;
}

void StringTable::ShrinkToFit() { strings_.shrink_to_fit(); }

size_t StringTable::SlotOf(std::string_view s) const {
  const size_t mask = slots_.size() - 1;
  size_t slot = std::hash<std::string_view>()(s) & mask;
  while (slots_[slot] >= 0 && strings_[slots_[slot]] != s) {
    slot = (slot + 1) & mask;
  }
  return slot;
}

void StringTable::Index(int32_t id) {
  // Ids indexed so far: those below `id`, but for equal strings appended
  // after the first; at most id + 1 of them, so half full stays true.
  if (2 * (static_cast<size_t>(id) + 1) > slots_.size()) {
    std::vector<int32_t> old = std::move(slots_);
    slots_.assign(std::max<size_t>(16, 2 * old.size()), -1);
    for (int32_t indexed : old) {
      if (indexed >= 0) slots_[SlotOf(strings_[indexed])] = indexed;
    }
  }
  slots_[SlotOf(strings_[id])] = id;
}

}  // namespace graph_internal

std::string_view PhaseName(Phase phase) {
  return kPhaseNames[static_cast<int>(phase)];
}

std::optional<Phase> ParsePhase(std::string_view name) {
  for (int i = 0; i < 3; ++i) {
    if (kPhaseNames[i] == name) return static_cast<Phase>(i);
  }
  return std::nullopt;
}

std::string_view DataTypeName(DataType type) {
  return kDataTypes[static_cast<int>(type)].name;
}

std::optional<DataType> ParseDataType(std::string_view name) {
  for (size_t i = 0; i < std::size(kDataTypes); ++i) {
    if (kDataTypes[i].name == name) return static_cast<DataType>(i);
  }
  return std::nullopt;
}

int DataTypeSize(DataType type) {
  return kDataTypes[static_cast<int>(type)].size;
}

std::optional<int64_t> CheckedShapeBytes(const std::vector<int64_t>& shape,
                                         DataType dtype) {
  int64_t bytes = DataTypeSize(dtype);
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    // A zero dim makes the tensor empty however large the others are.
    if (d == 0) return 0;
    overflow = overflow || __builtin_mul_overflow(bytes, d, &bytes);
  }
  if (overflow) return std::nullopt;
  return bytes;
}

int64_t ShapeBytes(const std::vector<int64_t>& shape, DataType dtype) {
  return CheckedShapeBytes(shape, dtype)
      .value_or(std::numeric_limits<int64_t>::max());
}

std::string DescribeShape(const std::vector<int64_t>& shape, DataType dtype) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(shape[i]);
  }
  return text + "] " + std::string(DataTypeName(dtype));
}

OpSpec Graph::SpecOf(OpId op) const {
  OpSpec s;
  s.name = op_name(op);
  s.type = op_type(op);
  s.phase = phase(op);
  s.scope = scope(op);
  for (int i = 0; i < num_outputs(op); ++i) {
    s.outputs.push_back(tensor(output(op, i)));
  }
  s.flops = flops(op);
  s.bytes_accessed = bytes_accessed(op);
  s.persistent_bytes = persistent_bytes(op);
  s.temporary_bytes = temporary_bytes(op);
  s.colocation_group = colocation_group(op);
  s.allowed_devices = allowed_devices(op);
  return s;
}

std::optional<OpId> Graph::FindOp(std::string_view name) const {
  return op_names_.Find(name);
}

double Graph::total_flops() const {
  double total = 0;
  for (double f : flops_) total += f;
  return total;
}

int64_t Graph::total_persistent_bytes() const {
  int64_t total = 0;
  for (int64_t b : persistent_bytes_) total += b;
  return total;
}

int64_t Graph::total_output_bytes() const {
  int64_t total = 0;
  for (const TensorInfo& t : tensors_) total += t.bytes;
  return total;
}

int64_t OpMemoryEstimate(const Graph& graph, OpId op) {
  int64_t bytes = graph.persistent_bytes(op) + graph.temporary_bytes(op);
  for (int i = 0; i < graph.num_outputs(op); ++i) {
    bytes += graph.tensor_bytes(graph.output(op, i));
  }
  return bytes;
}

std::vector<int> OpTypesByFrequency(const Graph& graph) {
  const int num_types = static_cast<int>(graph.op_types().size());
  std::vector<int64_t> count(num_types, 0);
  for (OpId op = 0; op < graph.num_ops(); ++op) ++count[graph.op_type_id(op)];
  std::vector<int> types(num_types);
  std::iota(types.begin(), types.end(), 0);
  std::stable_sort(types.begin(), types.end(),
                   [&](int a, int b) { return count[a] > count[b]; });
  return types;
}

GraphBuilder::GraphBuilder(std::string graph_name) {
  graph_.name_ = std::move(graph_name);
  graph_.output_offsets_.assign(1, 0);
}

OpId GraphBuilder::AddOp(OpSpec spec) {
  Graph& g = graph_;
  bool existing = false;
  const OpId id = g.op_names_.Append(std::move(spec.name), &existing);
  if (existing && !duplicate_) {
    duplicate_ = true;
    first_duplicate_ = g.op_names_[id];
  }
  g.type_ids_.push_back(g.types_.Intern(spec.type));
  g.phases_.push_back(spec.phase);
  g.scope_ids_.push_back(g.scopes_.Intern(spec.scope));
  g.flops_.push_back(spec.flops);
  g.bytes_accessed_.push_back(spec.bytes_accessed);
  g.persistent_bytes_.push_back(spec.persistent_bytes);
  g.temporary_bytes_.push_back(spec.temporary_bytes);
  g.group_ids_.push_back(g.groups_.Intern(spec.colocation_group));
  g.allowed_.push_back(spec.allowed_devices);
  for (TensorInfo& t : spec.outputs) {
    if (t.bytes == 0 && !t.shape.empty()) {
      t.bytes = ShapeBytes(t.shape, t.dtype);
    }
    g.tensors_.push_back(std::move(t));
    g.tensor_producers_.push_back(id);
  }
  num_outputs_ += static_cast<int64_t>(spec.outputs.size());
  // Wraps only past 2^31 tensors, which Build() refuses before reading it.
  g.output_offsets_.push_back(static_cast<int32_t>(num_outputs_));
  return id;
}

EdgeId GraphBuilder::AddEdge(OpId src, int output, OpId dst) {
  edge_src_.push_back(src);
  edge_dst_.push_back(dst);
  edge_output_.push_back(output);
  edge_control_.push_back(false);
  return static_cast<EdgeId>(edge_src_.size() - 1);
}

EdgeId GraphBuilder::AddControlEdge(OpId src, OpId dst) {
  const EdgeId e = AddEdge(src, -1, dst);
  edge_control_[e] = true;
  return e;
}

void GraphBuilder::SetEdgeSource(EdgeId edge, OpId src, int output) {
  edge_src_[edge] = src;
  if (!edge_control_[edge]) edge_output_[edge] = output;
}

std::optional<OpId> GraphBuilder::FindOp(std::string_view name) const {
  return graph_.FindOp(name);
}

Status GraphBuilder::ValidateOps() const {
  const Graph& g = graph_;
  // Ids are int32: refuse what would wrap rather than corrupt the graph.
  constexpr size_t kMaxIds = std::numeric_limits<int32_t>::max();
  const size_t num_ops = g.op_names_.strings().size();
  if (num_ops > kMaxIds || edge_src_.size() > kMaxIds ||
      g.tensors_.size() > kMaxIds) {
    return InvalidArgumentError(
        "graph has " + std::to_string(num_ops) + " ops, " +
        std::to_string(g.tensors_.size()) + " tensors and " +
        std::to_string(edge_src_.size()) +
        " edges; dplace supports at most 2^31-1 of each");
  }
  if (InvalidUtf8At(g.name_) != std::string_view::npos) {
    return InvalidArgumentError("the graph's name is not valid UTF-8");
  }
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const std::pair<const char*, const std::string*> texts[] = {
        {"name", &g.op_name(op)},
        {"type", &g.op_type(op)},
        {"scope", &g.scope(op)},
        {"colocation group", &g.colocation_group(op)}};
    for (const auto& [field, text] : texts) {
      const size_t at = InvalidUtf8At(*text);
      if (at == std::string_view::npos) continue;
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02x",
                    static_cast<unsigned char>((*text)[at]));
      return InvalidArgumentError("op " + std::to_string(op) + ": " + field +
                                  " is not valid UTF-8 (byte " + byte +
                                  " at offset " + std::to_string(at) + ")");
    }
  }
  if (duplicate_) {
    return InvalidArgumentError("duplicate op name \"" + first_duplicate_ +
                                "\"");
  }
  for (OpId op = 0; op < g.num_ops(); ++op) {
    DPLACE_RETURN_IF_ERROR(ValidateOp(op));
  }
  return Status::Ok();
}

Status GraphBuilder::ValidateOp(OpId op) const {
  const Graph& g = graph_;
  const std::string& name = g.op_name(op);
  const std::string where = "op \"" + name + "\"";
  if (name.empty()) return InvalidArgumentError("an op has an empty name");
  // Graph JSON marks a control input with '^' (GraphToJson must be able
  // to write every graph it is given).
  if (name[0] == '^') {
    return InvalidArgumentError(where + ": an op name may not start with '^'");
  }
  if (g.op_type(op).empty()) {
    return InvalidArgumentError(where + ": empty type");
  }
  if (!(g.flops(op) >= 0)) {
    return InvalidArgumentError(where + ": flops must be >= 0");
  }
  if (g.bytes_accessed(op) < 0 || g.persistent_bytes(op) < 0 ||
      g.temporary_bytes(op) < 0) {
    return InvalidArgumentError(where + ": byte counts must be >= 0");
  }
  if (g.allowed_devices(op).empty()) {
    return InvalidArgumentError(where + ": no allowed device kind");
  }
  for (int i = 0; i < g.num_outputs(op); ++i) {
    const TensorInfo& t = g.tensor(g.output(op, i));
    const std::string out = where + " output " + std::to_string(i);
    if (t.bytes < 0) return InvalidArgumentError(out + ": negative bytes");
    for (int64_t d : t.shape) {
      if (d < 0) return InvalidArgumentError(out + ": negative dimension");
    }
    if (!CheckedShapeBytes(t.shape, t.dtype)) {
      return InvalidArgumentError(out + ": shape " +
                                  DescribeShape(t.shape, t.dtype) +
                                  " has more than 2^63-1 bytes");
    }
  }
  return Status::Ok();
}

namespace {

// Adds `bytes` to `*total`; false when the total passes kMaxGraphBytes.
// REQUIRES: 0 <= bytes, 0 <= *total <= kMaxGraphBytes (so no overflow).
bool AddBytes(int64_t bytes, int64_t* total) {
  if (bytes > kMaxGraphBytes - *total) return false;
  *total += bytes;
  return true;
}

}  // namespace

// REQUIRES: ValidateOps() passed (no negative size, no NaN).
Status GraphBuilder::ValidateTotals() const {
  const Graph& g = graph_;
  int64_t memory = 0, accessed = 0;
  double flops = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    std::string field;
    if (!AddBytes(g.persistent_bytes(op), &memory)) {
      field = "persistent_bytes";
    } else if (!AddBytes(g.temporary_bytes(op), &memory)) {
      field = "temporary_bytes";
    }
    for (int i = 0; field.empty() && i < g.num_outputs(op); ++i) {
      if (!AddBytes(g.tensor_bytes(g.output(op, i)), &memory)) {
        field = "outputs[" + std::to_string(i) + "].bytes";
      }
    }
    const std::string where = "op \"" + g.op_name(op) + "\": ";
    if (!field.empty()) {
      return InvalidArgumentError(
          where + field +
          ": the graph's persistent, temporary and output bytes, summed over "
          "its ops, pass 2^60 (1 EiB) here; dplace accepts at most 2^60");
    }
    if (!AddBytes(g.bytes_accessed(op), &accessed)) {
      return InvalidArgumentError(
          where +
          "bytes_accessed: the graph's bytes accessed, summed over its "
          "ops, pass 2^60 (1 EiB) here; dplace accepts at most 2^60");
    }
    flops += g.flops(op);
    if (!(flops <= kMaxGraphFlops)) {
      return InvalidArgumentError(
          where +
          "flops: the graph's FLOPs, summed over its ops, pass 1e30 "
          "here; dplace accepts at most 1e30");
    }
  }
  return Status::Ok();
}

Status GraphBuilder::ValidateEdges() const {
  const Graph& g = graph_;
  const int n = num_ops();
  for (size_t e = 0; e < edge_src_.size(); ++e) {
    const OpId src = edge_src_[e], dst = edge_dst_[e];
    if (src < 0 || src >= n || dst < 0 || dst >= n) {
      return InvalidArgumentError("edge " + std::to_string(src) + " -> " +
                                  std::to_string(dst) +
                                  " names an op that does not exist");
    }
    const int output = edge_output_[e];
    if (!edge_control_[e] && (output < 0 || output >= g.num_outputs(src))) {
      return InvalidArgumentError(
          "edge \"" + g.op_name(src) + "\" -> \"" + g.op_name(dst) +
          "\" uses output " + std::to_string(output) + " but the op has " +
          std::to_string(g.num_outputs(src)) + " outputs");
    }
    if (src == dst) {
      return InvalidArgumentError("cycle: \"" + g.op_name(src) + "\" -> \"" +
                                  g.op_name(src) + "\"");
    }
  }
  return Status::Ok();
}

namespace {

// Kahn's algorithm; on a cycle, returns an error listing the ops of one.
Status TopologicalOrder(const Graph& g, const std::vector<std::string>& names,
                        std::vector<OpId>* order) {
  const int n = static_cast<int>(names.size());
  std::vector<int32_t> indegree(n);
  for (OpId op = 0; op < n; ++op) {
    indegree[op] = static_cast<int32_t>(g.in_edges(op).size());
  }
  // A min-heap keeps ties by id, so the order is deterministic and close to
  // the order ops were added.
  std::priority_queue<OpId, std::vector<OpId>, std::greater<OpId>> ready;
  for (OpId op = 0; op < n; ++op) {
    if (indegree[op] == 0) ready.push(op);
  }
  order->clear();
  order->reserve(n);
  while (!ready.empty()) {
    const OpId op = ready.top();
    ready.pop();
    order->push_back(op);
    for (EdgeId e : g.out_edges(op)) {
      if (--indegree[g.edge_dst(e)] == 0) ready.push(g.edge_dst(e));
    }
  }
  if (static_cast<int>(order->size()) == n) return Status::Ok();

  // Every op left has an unfinished predecessor that is also left: walk
  // backwards until an op repeats, which closes a cycle.
  OpId start = 0;
  while (indegree[start] == 0) ++start;
  std::vector<int> seen_at(n, -1);
  std::vector<OpId> walk;
  OpId op = start;
  while (seen_at[op] < 0) {
    seen_at[op] = static_cast<int>(walk.size());
    walk.push_back(op);
    for (EdgeId e : g.in_edges(op)) {
      if (indegree[g.edge_src(e)] > 0) {
        op = g.edge_src(e);
        break;
      }
    }
  }
  std::vector<OpId> cycle(walk.begin() + seen_at[op], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start at the op added first, so the message reads in graph order.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()),
              cycle.end());
  std::string message = "cycle: ";
  constexpr size_t kMaxShown = 12;
  for (size_t i = 0; i < cycle.size() && i < kMaxShown; ++i) {
    message += "\"" + names[cycle[i]] + "\" -> ";
  }
  if (cycle.size() > kMaxShown) {
    message += "... (" + std::to_string(cycle.size()) + " ops) -> ";
  }
  message += "\"" + names[cycle[0]] + "\"";
  return InvalidArgumentError(message);
}

}  // namespace

namespace {

template <typename T>
void ShrinkToFit(std::vector<T>* v) {
  v->shrink_to_fit();
}

}  // namespace

StatusOr<Graph> GraphBuilder::Build() && {
  DPLACE_RETURN_IF_ERROR(ValidateOps());
  DPLACE_RETURN_IF_ERROR(ValidateTotals());
  DPLACE_RETURN_IF_ERROR(ValidateEdges());

  Graph g = std::move(graph_);
  const int n = g.num_ops();
  // The arrays grew by doubling: give back what they reserved beyond.
  for (graph_internal::StringTable* table :
       {&g.op_names_, &g.types_, &g.scopes_, &g.groups_}) {
    table->ShrinkToFit();
  }
  ShrinkToFit(&g.type_ids_);
  ShrinkToFit(&g.phases_);
  ShrinkToFit(&g.scope_ids_);
  ShrinkToFit(&g.flops_);
  ShrinkToFit(&g.bytes_accessed_);
  ShrinkToFit(&g.persistent_bytes_);
  ShrinkToFit(&g.temporary_bytes_);
  ShrinkToFit(&g.group_ids_);
  ShrinkToFit(&g.allowed_);
  ShrinkToFit(&g.output_offsets_);
  ShrinkToFit(&g.tensors_);
  ShrinkToFit(&g.tensor_producers_);

  // Each edge's output index becomes its tensor, in place.
  g.edge_src_ = std::move(edge_src_);
  g.edge_dst_ = std::move(edge_dst_);
  g.edge_tensor_ = std::move(edge_output_);
  for (size_t e = 0; e < g.edge_tensor_.size(); ++e) {
    g.edge_tensor_[e] = edge_control_[e] ? kControlEdge
                                         : g.output_offsets_[g.edge_src_[e]] +
                                               g.edge_tensor_[e];
  }
  std::vector<bool>().swap(edge_control_);
  ShrinkToFit(&g.edge_src_);
  ShrinkToFit(&g.edge_dst_);
  ShrinkToFit(&g.edge_tensor_);
  BuildCsr(n, g.edge_dst_, &g.in_offsets_, &g.in_edges_);
  BuildCsr(n, g.edge_src_, &g.out_offsets_, &g.out_edges_);
  DPLACE_RETURN_IF_ERROR(
      TopologicalOrder(g, g.op_names_.strings(), &g.topo_order_));
  g.hash_ = HashGraph(g);
  return g;
}

}  // namespace dplace
