// The ONNX importer's parts, not a public API: element types, shapes from
// TypeProto, Einsum shapes, attribute readers, and how messages name a node.
#ifndef DPLACE_IO_ONNX_ONNX_TYPES_H_
#define DPLACE_IO_ONNX_ONNX_TYPES_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/util/status.h"

namespace dplace::onnx_internal {

// --- Shapes and element types ---------------------------------------------

std::optional<DataType> FromOnnxType(int32_t elem_type);

bool IsFloatingPoint(int32_t elem_type);

// Fills in `info.bytes` from its shape; a negative dim or a byte count over
// 2^63-1 is an error (the caller names the tensor), never a wrapped size.
StatusOr<TensorInfo> WithBytes(TensorInfo info);

// The shape and element type of a value, or why there is none. The message
// says what is missing, for the caller to prefix with the tensor's name.
StatusOr<TensorInfo> InfoFromType(const ::onnx::TypeProto& type);

int64_t Elements(const TensorInfo& t);

int64_t Dim(const TensorInfo& t, int i);

// An Einsum equation applied to its operands' shapes: the size of every
// index letter, the broadcast dims of "...", and the output's indices.
struct EinsumDims {
  std::map<char, int64_t> sizes;
  std::vector<int64_t> ellipsis;  // Right-aligned broadcast of the "..."s.
  size_t operands = 0;
  std::string output;  // Explicit after "->", else the implicit one.
};

std::optional<EinsumDims> ParseEinsum(
    std::string equation, const std::vector<const TensorInfo*>& inputs);

std::optional<std::vector<int64_t>> EinsumOutputShape(const EinsumDims& e);

// --- Attributes ------------------------------------------------------------

const ::onnx::AttributeProto* FindAttribute(const ::onnx::NodeProto& node,
                                            const std::string& name);

int64_t IntAttribute(const ::onnx::NodeProto& node, const std::string& name,
                     int64_t fallback);

std::vector<int64_t> IntsAttribute(const ::onnx::NodeProto& node,
                                   const std::string& name);

// The dims [first, second) a Shape node of an input of rank `rank` returns:
// its start and end attributes (opset 15; default the whole shape),
// negative ones counted from the end, clamped to the shape.
std::pair<int64_t, int64_t> ShapeRange(const ::onnx::NodeProto& node,
                                       int64_t rank);

std::string StringAttribute(const ::onnx::NodeProto& node,
                            const std::string& name);

// --- Messages ----------------------------------------------------------------

// "node 'NAME' (TYPE)"; "node '#INDEX' (TYPE)" for a nameless one.
std::string DescribeNode(const ::onnx::NodeProto& node, int index);

}  // namespace dplace::onnx_internal

#endif  // DPLACE_IO_ONNX_ONNX_TYPES_H_
