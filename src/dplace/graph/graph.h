// The graph IR: a frozen computation graph of one training step.
//
// Ops, tensors and edges are dense integer ids; attributes live in side
// arrays; adjacency is CSR. A Graph is built once by GraphBuilder, validated
// (acyclic, no dangling edges, unique names, non-negative sizes), and then
// only read, so it is safe to share between threads.
#ifndef DPLACE_GRAPH_GRAPH_H_
#define DPLACE_GRAPH_GRAPH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dplace/cluster/device_kind.h"
#include "dplace/util/span.h"
#include "dplace/util/status.h"

namespace dplace {

using OpId = int32_t;
using TensorId = int32_t;  // An output of an op; global over the graph.
using EdgeId = int32_t;
constexpr TensorId kControlEdge = -1;  // edge_tensor() of a control edge.

enum class Phase : uint8_t { kForward = 0, kBackward = 1, kUpdate = 2 };
std::string_view PhaseName(Phase phase);  // "forward", "backward", "update".
std::optional<Phase> ParsePhase(std::string_view name);

enum class DataType : uint8_t {
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kInt32,
  kInt64,
  kBool,
};
std::string_view DataTypeName(DataType type);  // "float32", ...
std::optional<DataType> ParseDataType(std::string_view name);
int DataTypeSize(DataType type);  // Bytes per element.

struct TensorInfo {
  std::vector<int64_t> shape;
  DataType dtype = DataType::kFloat32;
  int64_t bytes = 0;
};

// The most a graph may hold, summed over all its ops: persistent, temporary
// and output bytes together (what a device's memory can ever hold), bytes
// accessed, and FLOPs. Every sum the library forms from a graph's sizes
// (a device's memory, a link's bytes over a step, a device's load) then
// stays in range: byte sums far from int64_t's 2^63, times finite on any
// cluster. 2^60 bytes is 1 EiB; 1e30 FLOPs take 30,000 years at 1 EFLOP/s.
// GraphBuilder::Build refuses a graph past them, naming the op and field.
constexpr int64_t kMaxGraphBytes = int64_t{1} << 60;
constexpr double kMaxGraphFlops = 1e30;

// Bytes of a dense tensor of `shape` and `dtype` (1 element for a scalar);
// nullopt when a dim is negative or the count does not fit in int64_t.
std::optional<int64_t> CheckedShapeBytes(const std::vector<int64_t>& shape,
                                         DataType dtype);
// As CheckedShapeBytes, but INT64_MAX where that gives nullopt, never a
// wrapped count (GraphBuilder::Build refuses such a shape, naming the op).
int64_t ShapeBytes(const std::vector<int64_t>& shape, DataType dtype);
// "[2,3] float32", for messages.
std::string DescribeShape(const std::vector<int64_t>& shape, DataType dtype);

// Everything GraphBuilder needs to know about one op.
struct OpSpec {
  std::string name;  // Unique in the graph.
  std::string type;  // "MatMul", "Conv2D", "ApplyAdam", ...
  Phase phase = Phase::kForward;
  std::string scope;  // Scope path, e.g. "encoder/layer_2/lstm".
  std::vector<TensorInfo> outputs;
  double flops = 0;              // Floating-point operations of one run.
  int64_t bytes_accessed = 0;    // Bytes read plus written by one run.
  int64_t persistent_bytes = 0;  // Weights, optimizer slots: whole step.
  int64_t temporary_bytes = 0;   // Scratch memory while the op runs.
  std::string colocation_group;  // Empty: none.
  DeviceKindSet allowed_devices = DeviceKindSet::All();
};

namespace graph_internal {

// Strings with dense ids, found by content without a second copy: the index
// is an open-addressing table of ids. The graph keeps op names, types,
// scopes and colocation groups in these (one copy of a scope shared by many
// ops). Not thread-safe to modify; const access is.
class StringTable {
 public:
  int32_t size() const { return static_cast<int32_t>(strings_.size()); }
  const std::string& operator[](int32_t id) const { return strings_[id]; }
  const std::vector<std::string>& strings() const { return strings_; }

  // Adds `s` under a new id, returned; `*existing` is set to whether an
  // equal string was already there (Find keeps giving the first id).
  int32_t Append(std::string s, bool* existing);
  // The id of a string equal to `s`, added when there is none.
  int32_t Intern(std::string_view s);
  std::optional<int32_t> Find(std::string_view s) const;

  // Frees what appending reserved beyond the strings held.
  void ShrinkToFit();

 private:
  // The slot holding the id of a string equal to `s`, or the empty slot
  // where it would go. REQUIRES: slots_ is not empty.
  size_t SlotOf(std::string_view s) const;
  void Index(int32_t id);  // Puts `id` in the table, growing it.

  std::vector<std::string> strings_;
  // Ids, -1 for empty; a power of two in size, at most half full.
  std::vector<int32_t> slots_;
};

}  // namespace graph_internal

class Graph {
 public:
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  const std::string& name() const { return name_; }
  int num_ops() const { return static_cast<int>(op_names_.size()); }
  int num_edges() const { return static_cast<int>(edge_src_.size()); }
  int num_tensors() const { return static_cast<int>(tensors_.size()); }

  // Op attributes. REQUIRES: 0 <= op < num_ops().
  const std::string& op_name(OpId op) const { return op_names_[op]; }
  const std::string& op_type(OpId op) const { return types_[type_ids_[op]]; }
  // Dense id of the op's type, for per-type tables; < num_op_types().
  int op_type_id(OpId op) const { return type_ids_[op]; }
  Phase phase(OpId op) const { return phases_[op]; }
  const std::string& scope(OpId op) const { return scopes_[scope_ids_[op]]; }
  double flops(OpId op) const { return flops_[op]; }
  int64_t bytes_accessed(OpId op) const { return bytes_accessed_[op]; }
  int64_t persistent_bytes(OpId op) const { return persistent_bytes_[op]; }
  int64_t temporary_bytes(OpId op) const { return temporary_bytes_[op]; }
  const std::string& colocation_group(OpId op) const {
    return groups_[group_ids_[op]];
  }
  DeviceKindSet allowed_devices(OpId op) const { return allowed_[op]; }
  std::optional<OpId> FindOp(std::string_view name) const;
  // Everything GraphBuilder::AddOp took for `op`: building a changed copy
  // of a graph starts from these.
  OpSpec SpecOf(OpId op) const;

  // Distinct op types; op_type_id() indexes this.
  const std::vector<std::string>& op_types() const { return types_.strings(); }

  // Outputs: op `op` produces tensors output(op, 0) .. output(op, n - 1),
  // n = num_outputs(op), with consecutive ids.
  int num_outputs(OpId op) const {
    return output_offsets_[op + 1] - output_offsets_[op];
  }
  TensorId output(OpId op, int index) const {
    return output_offsets_[op] + index;
  }
  const TensorInfo& tensor(TensorId t) const { return tensors_[t]; }
  int64_t tensor_bytes(TensorId t) const { return tensors_[t].bytes; }
  OpId producer(TensorId t) const { return tensor_producers_[t]; }

  // Edges. A data edge carries a tensor; a control edge only orders.
  OpId edge_src(EdgeId e) const { return edge_src_[e]; }
  OpId edge_dst(EdgeId e) const { return edge_dst_[e]; }
  TensorId edge_tensor(EdgeId e) const { return edge_tensor_[e]; }
  bool is_control(EdgeId e) const { return edge_tensor_[e] == kControlEdge; }
  Span<EdgeId> in_edges(OpId op) const {
    return {in_edges_.data() + in_offsets_[op],
            static_cast<size_t>(in_offsets_[op + 1] - in_offsets_[op])};
  }
  Span<EdgeId> out_edges(OpId op) const {
    return {out_edges_.data() + out_offsets_[op],
            static_cast<size_t>(out_offsets_[op + 1] - out_offsets_[op])};
  }

  // A topological order of all ops (sources first, ties by id).
  const std::vector<OpId>& topological_order() const { return topo_order_; }

  // A stable 64-bit hash of everything that affects simulation (names,
  // types, sizes, edges), as 16 hex digits. Placements embed it.
  const std::string& hash() const { return hash_; }

  // Totals, for reports.
  double total_flops() const;
  int64_t total_persistent_bytes() const;
  int64_t total_output_bytes() const;

 private:
  friend class GraphBuilder;
  Graph() = default;

  // Per op, in side arrays. Scopes and colocation groups are interned (ids
  // into a table of distinct strings): many ops share one.
  std::string name_;
  graph_internal::StringTable op_names_;  // Ids are op ids.
  graph_internal::StringTable types_;
  std::vector<int32_t> type_ids_;
  std::vector<Phase> phases_;
  graph_internal::StringTable scopes_;
  std::vector<int32_t> scope_ids_;
  std::vector<double> flops_;
  std::vector<int64_t> bytes_accessed_;
  std::vector<int64_t> persistent_bytes_;
  std::vector<int64_t> temporary_bytes_;
  graph_internal::StringTable groups_;
  std::vector<int32_t> group_ids_;
  std::vector<DeviceKindSet> allowed_;

  std::vector<int32_t> output_offsets_;  // num_ops + 1.
  std::vector<TensorInfo> tensors_;
  std::vector<OpId> tensor_producers_;

  std::vector<OpId> edge_src_;
  std::vector<OpId> edge_dst_;
  std::vector<TensorId> edge_tensor_;
  std::vector<int32_t> in_offsets_, out_offsets_;  // num_ops + 1 each.
  std::vector<EdgeId> in_edges_, out_edges_;

  std::vector<OpId> topo_order_;
  std::string hash_;
};

// The memory op `op` needs on its device, conservatively: persistent +
// temporary + every output, as if outputs lived the whole step (Baechi's
// estimate). The simulator frees outputs earlier, so a placement within
// these estimates fits. Placers and the group graph use it.
int64_t OpMemoryEstimate(const Graph& graph, OpId op);

// Op type ids (op_type_id()) from the most frequent type to the least, ties
// by id. The learned placers embed the most frequent types one by one.
std::vector<int> OpTypesByFrequency(const Graph& graph);

// Builds a Graph. Errors found while adding (duplicate names, bad ids) are
// kept and reported by Build(), so callers check one Status. Ops go
// straight into the graph's side arrays as they are added, so building
// holds one copy of the graph (and 12 bytes per edge).
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name = "");

  // Returns the new op's id. Tensor bytes of 0 with a non-empty shape are
  // filled in from the shape.
  OpId AddOp(OpSpec spec);
  // A data edge: `dst` consumes output `output` of `src`. Returns its id.
  EdgeId AddEdge(OpId src, int output, OpId dst);
  // A control edge: `dst` starts only after `src` finished.
  EdgeId AddControlEdge(OpId src, OpId dst);
  // Sets the source of edge `edge` (and the output, for a data edge), for
  // readers whose inputs name ops added later: they add the edge in its
  // place with any source and set it once the op exists.
  // REQUIRES: `edge` was returned by AddEdge or AddControlEdge.
  void SetEdgeSource(EdgeId edge, OpId src, int output);
  void set_name(std::string name) { graph_.name_ = std::move(name); }

  std::optional<OpId> FindOp(std::string_view name) const;
  int num_ops() const { return graph_.num_ops(); }
  int64_t num_edges() const { return static_cast<int64_t>(edge_src_.size()); }

  // Validates and freezes. Errors name the offending ops: duplicate or empty
  // names, negative sizes, sizes that sum past kMaxGraphBytes or
  // kMaxGraphFlops, dangling edges, and cycles (listing the ops on one
  // cycle).
  StatusOr<Graph> Build() &&;

 private:
  Status ValidateOps() const;
  Status ValidateOp(OpId op) const;
  Status ValidateTotals() const;
  Status ValidateEdges() const;

  Graph graph_;              // The ops so far, in the graph's own arrays.
  int64_t num_outputs_ = 0;  // Outputs added, counted past int32.
  // Edges as added: src, dst, the source's output index (ignored for a
  // control edge) and whether it is one.
  std::vector<OpId> edge_src_, edge_dst_;
  std::vector<int32_t> edge_output_;
  std::vector<bool> edge_control_;
  bool duplicate_ = false;       // A name was added twice;
  std::string first_duplicate_;  // the first such.
};

}  // namespace dplace

#endif  // DPLACE_GRAPH_GRAPH_H_
