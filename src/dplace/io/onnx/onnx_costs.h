// The ONNX importer's parts, not a public API: FLOPs and bytes accessed of
// a node, and which inputs are a layer's weights.
#ifndef DPLACE_IO_ONNX_ONNX_COSTS_H_
#define DPLACE_IO_ONNX_ONNX_COSTS_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/io/onnx/onnx_types.h"

namespace dplace::onnx_internal {

// --- Costs -----------------------------------------------------------------

// The tensors one node reads and writes; null for an absent optional input.
struct NodeTensors {
  std::vector<const TensorInfo*> inputs;
  std::vector<bool> constant;  // Per input: folded at import, not read.
  std::vector<TensorInfo> outputs;

  const TensorInfo* input(size_t i) const {
    return i < inputs.size() ? inputs[i] : nullptr;
  }
  int64_t OutputElements() const {
    return outputs.empty() ? 0 : Elements(outputs[0]);
  }
  int64_t InputElements() const {
    return inputs.empty() || !inputs[0] ? 0 : Elements(*inputs[0]);
  }
};

// FLOPs of one run (2 per multiply-add), or nullopt when the operator has
// no formula here or its operands do not fit it.
using FlopsFormula = std::function<std::optional<double>(
    const ::onnx::NodeProto&, const NodeTensors&)>;

// By operator type, of the default domain.
const std::unordered_map<std::string, FlopsFormula>& FlopsFormulas();

int64_t BytesAccessed(const ::onnx::NodeProto& node, const NodeTensors& t);

// --- Weights ---------------------------------------------------------------

// Input slots that hold a layer's parameters, by operator.
bool IsParameterSlot(const std::string& type, int slot);

// Slots whose tensor is state, not a trainable parameter.
bool IsStateSlot(const std::string& type, int slot);

// A state_dict key, as PyTorch names the parameters and buffers it exports:
// a dotted path whose last part is an identifier ("layer1.0.bn1.weight",
// "enc.weight_ih_l0", "encoder.layers.0.self_attn.in_proj_bias",
// "blocks.0.attn.mask"), not an exporter's value name ("input.1").
bool HasParameterName(const std::string& name);

// Whether input `slot` of a `type` node only rearranges that input's
// elements (Slice, Concat, Unsqueeze, Reshape, Transpose, Gather's table,
// ...): the chain of such nodes PyTorch puts between an nn.LSTM's weights
// and the LSTM node keeps them parameters.
bool IsShapeOnlyPath(const std::string& type, int slot);

}  // namespace dplace::onnx_internal

#endif  // DPLACE_IO_ONNX_ONNX_COSTS_H_
