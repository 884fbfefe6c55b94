// Internal to zoo: the model families, and helpers they share.
//
// Models are listed explicitly in zoo.cc rather than registered from static
// initialisers: dplace_core is a static library, and a linker drops object
// files nobody references, registrations included.
#ifndef DPLACE_ZOO_MODELS_H_
#define DPLACE_ZOO_MODELS_H_

#include <functional>
#include <string>

#include "dplace/zoo/model_builder.h"
#include "dplace/zoo/zoo.h"

namespace dplace {
namespace zoo_internal {

ZooModel RnnlmModel();
ZooModel NmtModel();
ZooModel GnmtModel();
ZooModel InceptionV3Model();
ZooModel ResNetModel();
ZooModel BertModel();

// Places every op by the first matching rule on its scope; an op no rule
// claims goes to `fallback`. Ops that may not run on the chosen device's
// kind go to the first CPU.
Placement PlaceByScope(
    const Graph& graph, const Cluster& cluster,
    const std::function<DeviceId(const std::string& scope)>& rule);

// Every op on the first GPU; ops that may not run there (the input
// pipeline) on the first CPU. The expert placement of CNNs (Hierarchical
// Planner, Post) and BERT (EAGLE).
Placement OneGpuPlacement(const Graph& graph, const Cluster& cluster,
                          const ZooParams& params);

// The GPU of layer `layer` out of `layers`: GPU i for layer i while there
// are enough GPUs, otherwise contiguous blocks of layers per GPU.
DeviceId LayerGpu(const Cluster& cluster, int64_t layer, int64_t layers);

}  // namespace zoo_internal
}  // namespace dplace

#endif  // DPLACE_ZOO_MODELS_H_
