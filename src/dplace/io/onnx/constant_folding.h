// The ONNX importer's parts, not a public API: constant folding of shape
// arithmetic.
//
// Exporters compute Reshape targets and Slice bounds at run time from Shape
// ops (PyTorch does whenever a dim is dynamic). Once the batch is fixed
// these are constants, but libonnx's shape inference does not evaluate
// them, so the importer does: small tensors whose value is known (Constant
// nodes, small integer initializers, Shape of a tensor with a static shape,
// and arithmetic on those) are evaluated, and the nodes that compute them
// become no ops. Values are kept as doubles: exact for the integers of
// shapes.
#ifndef DPLACE_IO_ONNX_CONSTANT_FOLDING_H_
#define DPLACE_IO_ONNX_CONSTANT_FOLDING_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dplace::onnx_internal {

inline constexpr int64_t kMaxFoldedElements = 1024;

struct ConstTensor {
  int32_t elem_type = ::onnx::TensorProto::INT64;
  std::vector<int64_t> dims;
  std::vector<double> values;
};

// The value of an initializer or tensor attribute; nullopt when its type is
// not folded, its data is external, it has more than kMaxFoldedElements
// elements or its data does not match its dims.
std::optional<ConstTensor> ConstFromProto(const ::onnx::TensorProto& t);

// `c` as the tensor `name`, its values in the typed field.
::onnx::TensorProto ConstToProto(const ConstTensor& c, const std::string& name);

// Whether every value of `c` converts to its element type: integral
// values exact in a double (and int32 ones in int32's range). A fold
// that leaves this range is not folded.
bool Representable(const ConstTensor& c);

// The value of a node's single output from constant inputs (null: not
// constant), or nullopt. `static_shape` is the input's shape when Shape and
// Size need it and it is fully known.
std::optional<ConstTensor> Evaluate(
    const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in,
    const std::optional<std::vector<int64_t>>& static_shape);

}  // namespace dplace::onnx_internal

#endif  // DPLACE_IO_ONNX_CONSTANT_FOLDING_H_
