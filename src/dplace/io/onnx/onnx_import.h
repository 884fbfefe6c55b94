// ONNX import: an ONNX model file becomes a forward Graph that
// ExpandForTraining (dplace/graph/training.h) turns into a training graph.
//
// Shapes come from ONNX shape inference (Debian's libonnx) over the model,
// with the shapes the file declares (graph inputs, outputs, value_info,
// initializer dims) as its starting point. Weight data is never read: only
// names, element types and dims, so models exported with
// export_params=False (weights as graph inputs without data) import like
// models that carry their weights.
//
// What becomes what:
// - Each node becomes one op of the node's ONNX op type ("Conv", "Gemm",
//   "MatMul", ...), named after the node (a leading '/' dropped; a node
//   without a name gets "<OpType>_<index>"), with one output per node output
//   that is consumed or is a graph output (the first output when none is).
//   Its scope is the node name's path: "/layer1/layer1.0/conv1/Conv" ->
//   "layer1/layer1.0/conv1".
// - Parameters the exporter merged are un-merged (keep_merged_parameters
//   below): each Identity output named like a state_dict entry (or with a
//   name of the exporter's own, "onnx::MatMul_431", for a weight constant
//   folding made) and read from a weight becomes a weight of its own, and
//   the Identity no op.
// - Each weight becomes a source op named after the weight, with its size as
//   persistent bytes and the op's output shaped like the weight, in the scope
//   of its first consumer. A weight is trainable, of type "VariableV2", when
//   it is a floating-point tensor not consumed only as BatchNormalization's
//   running mean or variance; else it is "Const" (no gradient, no update).
//   Weights are the initializers, and the graph inputs that (a) are consumed
//   as a parameter operand (Conv and ConvTranspose W and B; Gemm B and C;
//   BatchNormalization, InstanceNormalization, LayerNormalization and
//   GroupNormalization scale, bias, mean and variance; LSTM, GRU and RNN W,
//   R and B; PRelu slope), directly or through nodes that only rearrange
//   them (Slice, Concat, Unsqueeze, Reshape, Transpose, ...: how PyTorch
//   feeds an nn.LSTM's weights to the LSTM node), or (b) are named like a
//   state_dict entry (a dotted path whose last part is an identifier:
//   "layer1.0.conv1.weight", "enc.weight_ih_l0", "blocks.0.attn.mask").
//   A buffer that reaches no loss through differentiable ops (a causal
//   mask) gets no gradient and no update. Every other graph input is data: a
//   source op of type "IteratorGetNext" named after the input. Graph inputs
//   no node consumes are left out.
// - Shape arithmetic is folded away: small tensors whose value is known at
//   import (Constant nodes, integer and scalar initializers, Shape and Size
//   of statically shaped tensors, and Gather, Concat, Unsqueeze, Slice,
//   Cast, Add, Mul, Div, ... on those) are evaluated, the nodes computing
//   them become no ops, and their consumers read them as constants (no
//   edge). This is what lets shape inference resolve the Reshape and Slice
//   bounds that exporters compute from Shape ops for dynamic dims. A Shape
//   or Size node that does not fold depends on its input by a control edge:
//   it reads only the shape, so no data and no gradient flow through it.
// - Where libonnx 1.12 infers only an output's rank (Einsum), the importer
//   computes its dims from the operands.
// - FLOPs count 2 per multiply-add; bytes accessed are the bytes of the
//   inputs read plus the outputs written (views such as Reshape access none;
//   Gather reads only the rows it gathers). Operators without a cost formula
//   get zero FLOPs and their bytes accessed ("memory-only cost"); one
//   warning lists them all.
#ifndef DPLACE_IO_ONNX_ONNX_IMPORT_H_
#define DPLACE_IO_ONNX_ONNX_IMPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/util/status.h"

namespace dplace {

struct OnnxImportOptions {
  // Batch size: the first dim of every data input. 0 keeps the model's;
  // > 0 overrides it (required when the model's is symbolic, e.g. an export
  // with dynamic_axes). A model exported at a fixed batch has it baked into
  // constants (Reshape and Expand targets, zero initial states): those are
  // rescaled where the batch can be followed to them with certainty
  // (batch_change.h), and every shape is then checked to be its export
  // shape with the batch dim scaled; otherwise the import fails naming the
  // node. Data inputs must share their first dim. Default: 0.
  int64_t batch = 0;
  // An exporter merges parameters with equal values (an untrained model's
  // deep-copied layers, an eval-mode export's ones and zeros) into one
  // tensor that the others read through Identity nodes named after them.
  // false: each such name is a parameter of its own again, with its own
  // bytes, gradient and update, as PyTorch's model.parameters() counts it;
  // true: the merged tensor is one parameter, as the file has it. A true
  // tie (GPT-2's LM head sharing the token embedding: one parameter) is
  // one tensor in the file and stays one either way. Default: false.
  bool keep_merged_parameters = false;
};

struct OnnxImport {
  Graph forward;  // Every op in Phase::kForward.
  // The batch in effect: options.batch, else the data inputs' first dim in
  // the file; 0 when neither says.
  int64_t batch = 0;
  // One line each, for the user: operators imported without FLOPs, an opset
  // newer than libonnx knows, model-local functions not expanded, an
  // eval-mode export (BatchNorm folded into the convs or in inference form,
  // Dropout removed), parameters the exporter merged (and the reading
  // taken: un-merged or kept).
  std::vector<std::string> warnings;
};

// Imports the ONNX model at `path`. The graph is named after the file
// (without folder and ".onnx"). Errors are one line naming the file and the
// node or tensor at fault: not an ONNX model, a truncated file, a tensor
// without a shape, a symbolic dim (other than the batch of a data input
// overridden by `options.batch`), an unsupported element type.
StatusOr<OnnxImport> ImportOnnxFile(const std::string& path,
                                    const OnnxImportOptions& options = {});

// As ImportOnnxFile, from the serialized model `bytes`; `source` names it in
// errors and, without folder and ".onnx", names the graph.
StatusOr<OnnxImport> ImportOnnxBytes(const std::string& bytes,
                                     const std::string& source,
                                     const OnnxImportOptions& options = {});

}  // namespace dplace

#endif  // DPLACE_IO_ONNX_ONNX_IMPORT_H_
