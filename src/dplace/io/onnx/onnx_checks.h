// Checks an ONNX model passes before libonnx's shape inference reads it.
// libonnx 1.12 guards against none of these: each was a crash found by
// onnx_import_fuzzer. Internal to the importer (onnx_model.cc), not a
// public API. Errors are one line: "SOURCE: " and the node or tensor at
// fault.
#ifndef DPLACE_IO_ONNX_ONNX_CHECKS_H_
#define DPLACE_IO_ONNX_ONNX_CHECKS_H_

#include <onnx/onnx_pb.h>

#include <string>

#include "dplace/util/status.h"

namespace dplace::onnx_internal {

// Every node input names a graph input, an initializer or an earlier
// node's output (an undefined input of Shape gets a null type); each tensor
// is assigned once; window attributes (strides, dilations, kernel_shape,
// group) are >= 1 (a stride of 0 divides by zero); and every tensor's
// raw_data holds the bytes its dims and type need (a few bytes short of one
// element are written through a null pointer).
Status CheckNodeInputs(const ::onnx::GraphProto& graph,
                       const std::string& source);

}  // namespace dplace::onnx_internal

#endif  // DPLACE_IO_ONNX_ONNX_CHECKS_H_
