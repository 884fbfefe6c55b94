#include "dplace/io/onnx/onnx_checks.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "dplace/io/onnx/onnx_types.h"

namespace dplace::onnx_internal {

using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::ValueInfoProto;

namespace {

Status Error(const std::string& source, const std::string& message) {
  return InvalidArgumentError(source + ": " + message);
}

// libonnx 1.12 copies raw_data into a vector sized by the bytes'
// whole elements, so a few bytes fewer than one element are written
// through a null pointer (a SEGV found by onnx_import_fuzzer in a
// Constant's int64 value). The bytes must be what the dims say.
Status CheckRawData(const std::string& source, const TensorProto& t,
                    const std::string& where) {
  if (!t.has_raw_data()) return Status::Ok();
  static const std::unordered_map<int, int64_t> kElementBytes = {
      {TensorProto::FLOAT, 4},     {TensorProto::UINT8, 1},
      {TensorProto::INT8, 1},      {TensorProto::UINT16, 2},
      {TensorProto::INT16, 2},     {TensorProto::INT32, 4},
      {TensorProto::INT64, 8},     {TensorProto::BOOL, 1},
      {TensorProto::FLOAT16, 2},   {TensorProto::DOUBLE, 8},
      {TensorProto::UINT32, 4},    {TensorProto::UINT64, 8},
      {TensorProto::COMPLEX64, 8}, {TensorProto::COMPLEX128, 16},
      {TensorProto::BFLOAT16, 2}};
  auto it = kElementBytes.find(t.data_type());
  if (it == kElementBytes.end()) return Status::Ok();
  int64_t bytes = it->second;
  for (int64_t d : t.dims()) {
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) {
      return Error(source, where + ": dims are negative or overflow");
    }
  }
  if (static_cast<uint64_t>(bytes) != t.raw_data().size()) {
    return Error(source, where + ": raw_data holds " +
                             std::to_string(t.raw_data().size()) +
                             " bytes, its dims and type need " +
                             std::to_string(bytes));
  }
  return Status::Ok();
}

}  // namespace

Status CheckNodeInputs(const GraphProto& graph, const std::string& source) {
  std::unordered_set<std::string> defined;
  for (const ValueInfoProto& v : graph.input()) defined.insert(v.name());
  for (const TensorProto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& t : graph.sparse_initializer()) {
    defined.insert(t.values().name());
  }
  std::unordered_set<std::string> produced;
  for (const NodeProto& node : graph.node()) {
    for (const std::string& out : node.output()) produced.insert(out);
  }
  for (const TensorProto& t : graph.initializer()) {
    DPLACE_RETURN_IF_ERROR(
        CheckRawData(source, t, "initializer '" + t.name() + "'"));
  }
  // In node order: libonnx infers in that order and reads an input of a
  // later node as undefined.
  for (int i = 0; i < graph.node_size(); ++i) {
    const NodeProto& node = graph.node(i);
    for (const ::onnx::AttributeProto& a : node.attribute()) {
      const std::string where =
          DescribeNode(node, i) + ": attribute " + a.name() + "'s tensor";
      if (a.has_t()) DPLACE_RETURN_IF_ERROR(CheckRawData(source, a.t(), where));
      for (const TensorProto& t : a.tensors()) {
        DPLACE_RETURN_IF_ERROR(CheckRawData(source, t, where));
      }
    }
    for (const std::string& in : node.input()) {
      if (in.empty() || defined.count(in)) continue;
      if (produced.count(in)) {
        return Error(source,
                     DescribeNode(node, i) + ": input '" + in +
                         "' is produced by a later node (the graph is not in "
                         "topological order)");
      }
      return Error(source,
                   DescribeNode(node, i) + ": input '" + in +
                       "' is produced by no node and is no graph input or "
                       "initializer (is the file truncated?)");
    }
    // libonnx 1.12 divides by these in its Conv and pooling inference
    // (a SIGFPE for strides of 0, found by onnx_import_fuzzer).
    for (const ::onnx::AttributeProto& a : node.attribute()) {
      const std::string& n = a.name();
      if (n != "strides" && n != "dilations" && n != "kernel_shape" &&
          n != "group") {
        continue;
      }
      for (int64_t v : a.ints()) {
        if (v < 1) {
          return Error(source, DescribeNode(node, i) + ": attribute " + n +
                                   " must be >= 1, got " + std::to_string(v));
        }
      }
      if (n == "group" && a.has_i() && a.i() < 1) {
        return Error(source, DescribeNode(node, i) +
                                 ": attribute group must be >= 1, " + "got " +
                                 std::to_string(a.i()));
      }
    }
    // ONNX assigns each tensor once; a second producer would let the
    // tensor's type differ between nodes (another libonnx SEGV).
    for (const std::string& out : node.output()) {
      if (!out.empty() && !defined.insert(out).second) {
        return Error(
            source,
            DescribeNode(node, i) + ": output '" + out +
                "' is already a graph input, an initializer or an "
                "earlier node's output (ONNX assigns each tensor once)");
      }
    }
  }
  return Status::Ok();
}

}  // namespace dplace::onnx_internal
