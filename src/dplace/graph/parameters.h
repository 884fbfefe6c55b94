// The parameters of a graph as a person counts them: how many, how many
// numbers, how many bytes; trained ones apart from the rest.
//
//   const ParameterCounts p = CountParameters(graph);
//   p.trained.elements  // PyTorch's sum(p.numel() for p in model.parameters())
#ifndef DPLACE_GRAPH_PARAMETERS_H_
#define DPLACE_GRAPH_PARAMETERS_H_

#include <cstdint>

#include "dplace/graph/graph.h"

namespace dplace {

struct ParameterCounts {
  struct Tally {
    int tensors = 0;
    int64_t elements = 0;
    int64_t bytes = 0;
  };
  // Variables (kParameterOpType) updated by an op of the update phase
  // (training expansion colocates each update with its variable).
  Tally trained;
  // Variables no update op writes (a forward graph's, buffers, moving
  // statistics) and floating-point constants with persistent bytes (an
  // ONNX import's buffers: running statistics).
  Tally untrained;
};

ParameterCounts CountParameters(const Graph& graph);

}  // namespace dplace

#endif  // DPLACE_GRAPH_PARAMETERS_H_
