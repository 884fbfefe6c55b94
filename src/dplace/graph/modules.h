// Modules: the nested parts of a model, as its framework names them. An
// op's scope path ("layer1/layer1.0/conv1", as the ONNX exporter names
// nodes) spells the modules it runs in; PyTorch calls the innermost one
// "layer1.0.conv1". The module paths here are PyTorch's, so a placement by
// module can be applied to the model it came from.
//
//   ModulePath("features/features.0")         // "features.0"
//   ModulePath("layers.0/self_attn")          // "layers.0.self_attn"
//   ModulePath("layer1/layer1.0/conv1", 2)    // "layer1.0"
#ifndef DPLACE_GRAPH_MODULES_H_
#define DPLACE_GRAPH_MODULES_H_

#include <string>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/util/status.h"

namespace dplace {

// The module path of the first `depth` parts of `scope` (every part when
// depth <= 0): parts joined by '.', except that a part which already
// starts with the path so far and a '.' ("layer1.0" under "layer1", as the
// exporter names a container's children) replaces it. "" for an empty
// scope.
std::string ModulePath(const std::string& scope, int depth = 0);

// The number of parts of `scope` (0 for an empty one).
int ScopeDepth(const std::string& scope);

// The module paths of `scope` from the outermost to the innermost, one per
// part: "layer1/layer1.0/conv1" -> {"layer1", "layer1.0", "layer1.0.conv1"}.
std::vector<std::string> ModulePaths(const std::string& scope);

// `graph` with colocation groups that keep every module at `depth` whole:
// the ops in one module at that depth (its own and its descendants') join
// one group, merged with the groups the graph already has (an op with its
// gradients, a parameter with its update). Ops in no module that deep keep
// their groups. Placers place colocation groups whole, so a placement of
// the result puts each such module on one device. Op ids and names are
// those of `graph`. REQUIRES: depth >= 1.
StatusOr<Graph> ColocateModules(const Graph& graph, int depth);

// Moves every colocation group of `graph` that `placement` splits onto one
// device: the one its ops' `weight` (e.g. their op times) sums highest on,
// among the devices every op of the group may run on (`kinds`: each
// device's kind). For placers that do not keep groups whole. Returns how
// many ops moved. REQUIRES: placement and weight have an entry per op.
int KeepGroupsWhole(const Graph& graph, const std::vector<DeviceKind>& kinds,
                    const std::vector<double>& weight,
                    std::vector<int32_t>* placement);

}  // namespace dplace

#endif  // DPLACE_GRAPH_MODULES_H_
