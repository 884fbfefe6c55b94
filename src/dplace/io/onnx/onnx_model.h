// The ONNX model as the importer translates it into ops (onnx_import.cc):
// parsed and checked, its graph inputs classified as weights or data, its
// batch set, its shapes inferred and its shape arithmetic folded away.
// Internal to the importer, not a public API.
//
//   onnx_internal::OnnxModel model(source, options);
//   DPLACE_RETURN_IF_ERROR(model.Prepare(bytes));
//   ... model.InfoOf(tensor), model.IsFoldedNode(i), model.weights() ...
#ifndef DPLACE_IO_ONNX_ONNX_MODEL_H_
#define DPLACE_IO_ONNX_ONNX_MODEL_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/io/onnx/constant_folding.h"
#include "dplace/io/onnx/onnx_import.h"
#include "dplace/util/status.h"

namespace dplace::onnx_internal {

class OnnxModel {
 public:
  // `source` names the model in errors and warnings.
  OnnxModel(std::string source, const OnnxImportOptions& options)
      : source_(std::move(source)), options_(options) {}
  OnnxModel(const OnnxModel&) = delete;
  OnnxModel& operator=(const OnnxModel&) = delete;

  // Parses the serialized model `bytes` and prepares it: checks, input
  // classification, the batch, shape inference and constant folding.
  // Errors are one line naming the source and the node or tensor at fault.
  Status Prepare(const std::string& bytes);

  // The rest reads a prepared model.
  const std::string& source() const { return source_; }
  const ::onnx::GraphProto& graph() const { return model_.graph(); }
  // "SOURCE: message", invalid input.
  Status Error(const std::string& message) const {
    return InvalidArgumentError(source_ + ": " + message);
  }

  // The shape and element type of `tensor`: a folded constant's, or what
  // shape inference found; otherwise an error saying it has none.
  StatusOr<TensorInfo> InfoOf(const std::string& tensor) const;
  // A weight's, from its initializer where it has one.
  StatusOr<TensorInfo> WeightInfo(const std::string& name) const;

  // Weights (initializers, and graph inputs in a parameter slot or with a
  // parameter's name), in the model's order; data inputs: every other
  // consumed graph input.
  const std::vector<std::string>& weights() const { return weights_; }
  const std::vector<std::string>& data_inputs() const { return data_inputs_; }
  bool IsWeight(const std::string& name) const {
    return weight_set_.count(name) > 0;
  }
  // (node index, input slot) of each consumer of `tensor`, in node order.
  const std::vector<std::pair<int, int>>& Consumers(
      const std::string& tensor) const;
  // Whether a node reads `tensor` or the graph returns it.
  bool IsConsumedOrOutput(const std::string& tensor) const {
    return consumers_.count(tensor) > 0 || graph_outputs_.count(tensor) > 0;
  }
  // Whether a node that stays an op reads `tensor` (not only folded ones).
  bool HasLiveConsumer(const std::string& tensor) const;
  // A tensor whose value was computed at import: no edge carries it.
  bool IsFolded(const std::string& tensor) const {
    return folded_.count(tensor) > 0;
  }
  // A node evaluated at import: it becomes no op.
  bool IsFoldedNode(int index) const { return folded_nodes_.count(index) > 0; }
  // Whether `node` calls one of the model's local functions.
  bool CallsFunction(const ::onnx::NodeProto& node) const {
    return functions_.count(node.domain() + ":" + node.op_type()) > 0;
  }
  // Why `node`'s outputs have no shape when libonnx has no schema for its
  // op type in its domain (and the model defines no such function): names
  // the type and the domain. Empty for an operator libonnx knows.
  std::string UnknownOperator(const ::onnx::NodeProto& node) const;
  // The batch in effect: --batch, else the data inputs' first dim in the
  // file; 0 when neither says (no data input with a numeric first dim).
  int64_t batch() const {
    return options_.batch > 0 ? options_.batch : export_batch_;
  }
  // A parameter the exporter merged into another: an Identity node's output
  // named like a state_dict entry, read from a weight (`merged_into`).
  struct Alias {
    std::string name;
    std::string merged_into;
    bool unmerged = false;  // A weight of its own; its Identity is no op.
  };
  // In node order.
  const std::vector<Alias>& aliases() const { return aliases_; }
  // What preparing found to warn about (opsets, functions), in order.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Status Parse(const std::string& bytes);
  Status CheckOpsets();
  void WarnAboutFunctions();
  void FindConsumers();
  void ClassifyInputs();
  bool ReachesParameterSlot(const std::string& tensor) const;
  void DropWeightData();
  void SpellOutKernelShapes();
  std::optional<std::vector<int64_t>> DeclaredDims(
      const std::string& name) const;
  ::onnx::TensorShapeProto* DataInputShape(const std::string& name);
  Status CheckRequiredInputs() const;
  Status SetBatch();
  Status FindExportBatch();
  Status PlanFixedBatchChange();
  Status CheckBatchChange() const;
  Status InferShapesAndFold();
  Status CheckShapeInputsHaveTypes() const;
  Status InferShapes(bool data_propagation);
  std::optional<std::vector<int64_t>> StaticShape(
      const std::string& tensor) const;
  bool CompleteShapes();
  bool FoldConstants();
  void FindAliases();

  const std::string source_;
  const OnnxImportOptions options_;
  ::onnx::ModelProto model_;
  ::onnx::ModelProto inferred_;  // With inferred shapes; types_ points in.
  std::vector<std::string> warnings_;

  // Tensor name -> (node index, input slot) of each consumer.
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> consumers_;
  std::unordered_set<std::string> graph_outputs_;
  std::vector<std::string> weights_;  // In the model's order.
  std::unordered_set<std::string> weight_set_;
  std::vector<std::string> data_inputs_;
  std::unordered_set<std::string> functions_;  // "domain:name".
  std::unordered_map<std::string, const ::onnx::ValueInfoProto*> types_;
  std::unordered_map<std::string, ConstTensor> folded_;  // By tensor name.
  // The integer initializers folded before any node is.
  std::unordered_map<std::string, ConstTensor> initial_folded_;
  // The first dim of the data inputs in the file; 0 when symbolic.
  int64_t export_batch_ = 0;
  // A fixed batch changed: the shapes at the export batch and the axis of
  // each tensor that holds the batch.
  bool batch_changed_ = false;
  std::unordered_map<std::string, std::vector<int64_t>> export_shapes_;
  std::unordered_map<std::string, int> batch_axis_;
  std::unordered_set<int> folded_nodes_;       // Node indices.
  std::unordered_set<std::string> completed_;  // Shapes CompleteShapes set.
  std::vector<Alias> aliases_;
  std::unordered_map<std::string, std::string> merged_into_;  // Unmerged.
};

}  // namespace dplace::onnx_internal

#endif  // DPLACE_IO_ONNX_ONNX_MODEL_H_
