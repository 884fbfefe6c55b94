// The executor's kernels: a real ATen computation of each op type's
// shapes, chosen by type name. Internal to src/dplace/exec (includes ATen).
//
// Graphs carry types and shapes, not attributes, so kernels infer what
// they need from the shapes: a convolution's stride from input over output
// size and its padding as TensorFlow's SAME or VALID would give, a
// MatMul's transposes from which operand dims match the output, a
// reduction's axes from which input dims the output keeps. A kernel that
// cannot make sense of its shapes throws; the executor then runs the
// op's stand-in and lists it.
#ifndef DPLACE_EXEC_KERNELS_H_
#define DPLACE_EXEC_KERNELS_H_

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "dplace/graph/graph.h"

namespace dplace {
namespace exec_internal {

struct KernelArgs {
  std::vector<at::Tensor> inputs;  // Data inputs in the op's input order.
  const std::vector<TensorInfo>* outputs = nullptr;  // Declared outputs.
  at::TensorOptions options;                         // The op's device.
  at::Tensor state;  // Persistent bytes of the op (slots), or none.
};

// Returns the op's outputs, one per declared output (any shape with the
// declared number of elements; the executor views it as declared).
using Kernel = std::vector<at::Tensor> (*)(const KernelArgs& args);

// The kernel of an op type; nullptr when the type has no mapping.
Kernel FindKernel(const std::string& op_type);

// Reads every input and writes every output: what an op with no kernel
// costs at least.
std::vector<at::Tensor> StandInKernel(const KernelArgs& args);

// Declared shape as ATen sizes.
std::vector<int64_t> DeclaredSizes(const TensorInfo& info);
at::ScalarType ScalarTypeOf(DataType type);

}  // namespace exec_internal
}  // namespace dplace

#endif  // DPLACE_EXEC_KERNELS_H_
