// The model zoo: generators of the papers' benchmark training graphs, by
// name, with the papers' settings as defaults and a human-expert placement
// derived from scope paths.
//
//   MakeZooModel("nmt:layers=4,batch=64")  // the training graph
#ifndef DPLACE_ZOO_ZOO_H_
#define DPLACE_ZOO_ZOO_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/cluster/cluster.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/placement.h"
#include "dplace/graph/training.h"

namespace dplace {

// Parameter values of one model, keyed by name; every key has a default.
class ZooParams {
 public:
  explicit ZooParams(std::map<std::string, std::string> values)
      : values_(std::move(values)) {}
  // REQUIRES: the key exists (the registry fills in defaults) and, for
  // Int(), holds an integer (checked when parsing).
  int64_t Int(const std::string& key) const;
  const std::string& String(const std::string& key) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

struct ZooModel {
  std::string name;
  std::string description;
  // Every parameter with its default, as the paper set it. "optimizer" is
  // always among them.
  std::map<std::string, std::string> defaults;
  std::string paper_preset;  // The cluster the papers placed it on.
  int64_t paper_ops = 0;     // Training-graph op count in the papers; 0: none.
  // Other configurations the papers report, as parameter overrides
  // ("layers=4") with their op counts.
  std::vector<std::pair<std::string, int64_t>> paper_variants;
  // The forward graph (ExpandForTraining makes the training graph).
  std::function<StatusOr<Graph>(const ZooParams&)> forward;
  // How the model's TF training script builds the gradients (gating,
  // clipping); the optimizer comes from the "optimizer" parameter.
  TrainingOptions training;
  // The human expert's placement of the training graph (DESIGN.md: CNNs on
  // one GPU; RNNs one LSTM layer per GPU, embedding with the first layer,
  // attention and softmax with the last), from scope paths.
  std::function<Placement(const Graph&, const Cluster&, const ZooParams&)>
      expert;
};

// Every model, in a stable order.
const std::vector<ZooModel>& ZooModels();
const ZooModel* FindZooModel(std::string_view name);

// "name" or "name:key=value,key=value"; unknown models, unknown keys and
// non-integer values of integer parameters are errors naming them.
struct ZooSpec {
  const ZooModel* model;
  ZooParams params;
};
StatusOr<ZooSpec> ParseZooSpec(std::string_view spec);

// The training graph of `spec`, expanded with the "optimizer" parameter.
StatusOr<Graph> MakeZooModel(std::string_view spec);
StatusOr<Graph> MakeZooModel(const ZooSpec& spec);

}  // namespace dplace

#endif  // DPLACE_ZOO_ZOO_H_
