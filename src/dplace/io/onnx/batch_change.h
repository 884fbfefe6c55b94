// The ONNX importer's parts, not a public API: changing the batch of a
// model exported at a fixed batch.
//
// An exporter that traces a model at batch B0 bakes B0 into constants:
// Reshape and Expand targets (attention's [seq, batch * heads, head_dim]),
// ConstantOfShape shapes, zero initial states of recurrent layers. Changing
// only the inputs' first dim leaves those stale. The plan follows the batch
// through the graph as the export shapes show it: which axis of each tensor
// holds the batch (possibly merged with neighbouring dims, as batch * heads)
// and which elements of each small integer tensor are batch sizes (values
// computed from Shape). From that it derives, with certainty or not at all,
// the constants to rescale: a Reshape or Expand target whose batch entry is
// a literal, a filled constant (all elements equal) whose batch-sized axis
// meets the batch. Anything it cannot attribute is an error naming the
// node. After the change the importer checks every shape against the plan.
#ifndef DPLACE_IO_ONNX_BATCH_CHANGE_H_
#define DPLACE_IO_ONNX_BATCH_CHANGE_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dplace/io/onnx/constant_folding.h"
#include "dplace/util/status.h"

namespace dplace::onnx_internal {

// What the importer knows at the export batch.
struct ExportView {
  // The static shape of a tensor; nullopt when not fully known.
  std::function<std::optional<std::vector<int64_t>>(const std::string&)> shape;
  // The folded value of a tensor; null when not folded.
  std::function<const ConstTensor*(const std::string&)> value;
};

// Input `input` of node `node` becomes `value` (a rescaled shape).
struct ShapeOverride {
  int node;
  int input;
  ConstTensor value;
};

// The Constant node `node`, whose value is a filled tensor, gets
// dims[axis] scaled by the batch ratio.
struct ConstantResize {
  int node;
  int axis;
};

struct BatchChangePlan {
  std::vector<ShapeOverride> overrides;
  std::vector<ConstantResize> resizes;
  // Per tensor that holds the batch: the axis; its dim scales by the ratio.
  // Tensors not listed keep their export shape.
  std::unordered_map<std::string, int> batch_axis;
};

// Plans changing the batch of `graph` from `from` to `to`, where the first
// dim of every tensor in `data_inputs` is the batch. Errors are one line
// naming the node (for the caller to prefix with the file) and the fix.
StatusOr<BatchChangePlan> PlanBatchChange(
    const ::onnx::GraphProto& graph,
    const std::vector<std::string>& data_inputs, int64_t from, int64_t to,
    const ExportView& view);

// Scales dims[axis] of the filled tensor `t` from `from` to `to` (a batch
// ratio), repeating its one value; false when it is not filled, its data is
// external or the dim does not divide.
bool ResizeFilledTensor(::onnx::TensorProto* t, int axis, int64_t from,
                        int64_t to);

// The fix suggested wherever a batch change cannot be made right.
inline constexpr char kBatchFix[] =
    "re-export the model with a dynamic batch axis (dynamic_axes in "
    "torch.onnx.export) or omit --batch";

}  // namespace dplace::onnx_internal

#endif  // DPLACE_IO_ONNX_BATCH_CHANGE_H_
