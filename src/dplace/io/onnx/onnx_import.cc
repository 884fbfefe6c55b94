#include "dplace/io/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "dplace/graph/training.h"
#include "dplace/io/file.h"
#include "dplace/io/onnx/onnx_costs.h"
#include "dplace/io/onnx/onnx_model.h"
#include "dplace/io/onnx/onnx_types.h"

namespace dplace {
namespace {

using ::onnx::NodeProto;
using onnx_internal::BytesAccessed;
using onnx_internal::DescribeNode;
using onnx_internal::FindAttribute;
using onnx_internal::FlopsFormulas;
using onnx_internal::HasParameterName;
using onnx_internal::IntAttribute;
using onnx_internal::IsStateSlot;
using onnx_internal::NodeTensors;
using onnx_internal::OnnxModel;

constexpr char kDataInputOpType[] = "IteratorGetNext";
constexpr char kConstantOpType[] = "Const";

std::string Stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const std::string ext = ".onnx";
  if (name.size() > ext.size() &&
      name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    name.resize(name.size() - ext.size());
  }
  return name.empty() ? "onnx" : name;
}

// Translates a prepared model (onnx_model.h) into ops and edges: a source
// op per weight and data input, an op per node that did not fold, an edge
// per tensor a node reads from another op.
class Importer {
 public:
  Importer(std::string source, const OnnxImportOptions& options)
      : model_(std::move(source), options), builder_(Stem(model_.source())) {}

  StatusOr<OnnxImport> Import(const std::string& bytes) {
    DPLACE_RETURN_IF_ERROR(model_.Prepare(bytes));
    warnings_ = model_.warnings();
    DPLACE_RETURN_IF_ERROR(AddOps());
    DPLACE_RETURN_IF_ERROR(AddEdges());
    WarnAboutUncostedOps();
    WarnAboutEvalModeExport();
    WarnAboutAliasedParameters();
    StatusOr<Graph> graph = std::move(builder_).Build();
    if (!graph.ok()) return graph.status().WithPrefix(model_.source());
    return OnnxImport{std::move(graph).value(), model_.batch(),
                      std::move(warnings_)};
  }

 private:
  bool WeightIsTrainable(const std::string& name, const TensorInfo& info) {
    if (info.dtype != DataType::kFloat32 && info.dtype != DataType::kFloat16 &&
        info.dtype != DataType::kBFloat16 && info.dtype != DataType::kFloat64) {
      return false;
    }
    for (const auto& [node, slot] : model_.Consumers(name)) {
      if (!IsStateSlot(model_.graph().node(node).op_type(), slot)) return true;
    }
    return false;
  }

  std::string UniqueName(std::string name) {
    if (name.empty()) name = "unnamed";
    std::string candidate = name;
    for (int i = 1; !used_names_.insert(candidate).second; ++i) {
      candidate = name + "_" + std::to_string(i);
    }
    return candidate;
  }

  static std::string ScopeOf(const NodeProto& node) {
    std::string name = node.name();
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
    const size_t slash = name.rfind('/');
    return slash == std::string::npos ? "" : name.substr(0, slash);
  }

  // The node index of the first consumer of `tensor` that stays an op (an
  // un-merged parameter's original is read first by Identity nodes that
  // become none). REQUIRES: model_.HasLiveConsumer(tensor).
  int FirstLiveConsumer(const std::string& tensor) const {
    for (const auto& [node, slot] : model_.Consumers(tensor)) {
      if (!model_.IsFoldedNode(node)) return node;
    }
    return model_.Consumers(tensor).front().first;
  }

  struct Producer {
    OpId op;
    int output;
  };

  Status AddSourceOps() {
    for (const std::string& name : model_.weights()) {
      if (!model_.HasLiveConsumer(name) || producers_.count(name)) continue;
      StatusOr<TensorInfo> info = model_.WeightInfo(name);
      if (!info.ok()) {
        return model_.Error("weight '" + name +
                            "': " + info.status().message());
      }
      OpSpec spec;
      spec.name = UniqueName(name);
      spec.type = WeightIsTrainable(name, *info) ? std::string(kParameterOpType)
                                                 : kConstantOpType;
      spec.scope = ScopeOf(model_.graph().node(FirstLiveConsumer(name)));
      spec.persistent_bytes = info->bytes;
      spec.outputs.push_back(*info);
      producers_[name] = {builder_.AddOp(std::move(spec)), 0};
      producer_infos_[name] = *info;
    }
    for (const std::string& name : model_.data_inputs()) {
      if (!model_.HasLiveConsumer(name)) continue;
      StatusOr<TensorInfo> info = model_.InfoOf(name);
      if (!info.ok()) {
        return model_.Error("input '" + name + "': " + info.status().message());
      }
      OpSpec spec;
      spec.name = UniqueName(name);
      spec.type = kDataInputOpType;
      spec.bytes_accessed = info->bytes;
      spec.outputs.push_back(*info);
      producers_[name] = {builder_.AddOp(std::move(spec)), 0};
      producer_infos_[name] = *info;
    }
    return Status::Ok();
  }

  // The node's outputs that become op outputs: those consumed or returned
  // by the graph (the first when none is).
  std::vector<int> KeptOutputs(const NodeProto& node) const {
    std::vector<int> kept;
    int first = -1;
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& name = node.output(k);
      if (name.empty()) continue;
      if (first < 0) first = k;
      if (model_.IsConsumedOrOutput(name)) {
        kept.push_back(k);
      }
    }
    if (kept.empty() && first >= 0) kept.push_back(first);
    return kept;
  }

  Status AddNodeOp(int index) {
    const NodeProto& node = model_.graph().node(index);
    if (model_.IsFoldedNode(index)) {
      node_ops_.push_back(-1);
      return Status::Ok();
    }
    NodeTensors tensors;
    for (int k = 0; k < node.input_size(); ++k) {
      const bool constant = model_.IsFolded(node.input(k));
      tensors.constant.push_back(constant);
      if (node.input(k).empty()) {
        tensors.inputs.push_back(nullptr);
        continue;
      }
      if (constant) {
        producer_infos_[node.input(k)] = *model_.InfoOf(node.input(k));
      }
      auto it = producer_infos_.find(node.input(k));
      if (it == producer_infos_.end()) {
        return model_.Error(
            DescribeNode(node, index) + ": input '" + node.input(k) +
            "' is produced by no node and is no graph input or "
            "initializer (is the file truncated, or the graph not "
            "in topological order?)");
      }
      tensors.inputs.push_back(&it->second);
    }
    const std::vector<int> kept = KeptOutputs(node);
    for (int k : kept) {
      StatusOr<TensorInfo> info = model_.InfoOf(node.output(k));
      if (!info.ok()) {
        return model_.Error(DescribeNode(node, index) + ": output '" +
                            node.output(k) + "': " + info.status().message());
      }
      tensors.outputs.push_back(*info);
    }
    OpSpec spec;
    std::string name = node.name();
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
    if (name.empty()) name = node.op_type() + "_" + std::to_string(index);
    spec.name = UniqueName(name);
    spec.type = node.op_type();
    spec.scope = ScopeOf(node);
    spec.bytes_accessed = BytesAccessed(node, tensors);
    std::optional<double> flops;
    const bool is_function = model_.CallsFunction(node);
    const bool default_domain =
        node.domain().empty() || node.domain() == "ai.onnx";
    auto formula = FlopsFormulas().find(node.op_type());
    if (default_domain && formula != FlopsFormulas().end()) {
      flops = formula->second(node, tensors);
    }
    if (!flops && !is_function) {
      ++uncosted_[(default_domain ? "" : node.domain() + ":") + node.op_type()];
    }
    spec.flops = flops.value_or(0);
    spec.outputs = tensors.outputs;
    const OpId op = builder_.AddOp(std::move(spec));
    node_ops_.push_back(op);
    for (size_t i = 0; i < kept.size(); ++i) {
      producers_[node.output(kept[i])] = {op, static_cast<int>(i)};
      producer_infos_[node.output(kept[i])] = tensors.outputs[i];
    }
    return Status::Ok();
  }

  // ONNX requires nodes in topological order, so one pass sees every
  // input's producer before its consumer.
  Status AddOps() {
    DPLACE_RETURN_IF_ERROR(AddSourceOps());
    for (int i = 0; i < model_.graph().node_size(); ++i) {
      DPLACE_RETURN_IF_ERROR(AddNodeOp(i));
    }
    return Status::Ok();
  }

  // Constants folded at import are no edges: their values are part of the
  // op, like attributes.
  Status AddEdges() {
    for (int i = 0; i < model_.graph().node_size(); ++i) {
      const NodeProto& node = model_.graph().node(i);
      const OpId op = node_ops_[i];
      if (op < 0) continue;
      const bool reads_shape_only =
          node.op_type() == "Shape" || node.op_type() == "Size";
      for (const std::string& input : node.input()) {
        if (input.empty() || model_.IsFolded(input)) continue;
        const Producer& p = producers_.at(input);
        if (reads_shape_only) {
          builder_.AddControlEdge(p.op, op);
        } else {
          builder_.AddEdge(p.op, p.output, op);
        }
      }
    }
    return Status::Ok();
  }

  // Up to three names, quoted, and how many more.
  static std::string Examples(const std::vector<std::string>& names) {
    std::string text;
    for (size_t i = 0; i < names.size() && i < 3; ++i) {
      text += (i ? ", " : "") + ("'" + names[i] + "'");
    }
    if (names.size() > 3) {
      text += " and " + std::to_string(names.size() - 3) + " more";
    }
    return text;
  }

  // Whether every consumer of `tensor` reads it as state (BatchNorm's
  // running statistics): a buffer, not a parameter.
  bool ReadAsStateOnly(const std::string& tensor) const {
    const auto& consumers = model_.Consumers(tensor);
    for (const auto& [node, slot] : consumers) {
      if (!IsStateSlot(model_.graph().node(node).op_type(), slot)) return false;
    }
    return !consumers.empty();
  }

  // An eval-mode export differs from the training step in three ways the
  // graph shows: BatchNormalization in inference form (one output, the
  // running statistics as inputs; opset 13 has no training_mode to say
  // so), BatchNorm folded into the conv before it (whose weights are then
  // tensors the exporter names itself, "onnx::Conv_25", not the model's),
  // and Dropout removed (no trace of it is left, so it is named only when
  // the rest shows an eval-mode export). Parameters merged by value (only
  // an eval-mode export compares values) in a graph without Dropout are
  // evidence too.
  void WarnAboutEvalModeExport() {
    std::vector<std::string> folded;
    int batch_norms = 0, inference_form = 0, dropouts = 0;
    for (const NodeProto& node : model_.graph().node()) {
      if (node.op_type() == "Dropout") ++dropouts;
      if (node.op_type() == "BatchNormalization") {
        ++batch_norms;
        int outputs = 0;
        for (const std::string& out : node.output()) outputs += !out.empty();
        const bool training_attribute =
            FindAttribute(node, "training_mode") &&
            IntAttribute(node, "training_mode", 0) != 0;
        inference_form += outputs == 1 && !training_attribute;
      }
      if (node.op_type() != "Conv" || node.input_size() < 2) continue;
      const std::string& w = node.input(1);
      if (model_.IsWeight(w) && w.rfind("onnx::", 0) == 0) {
        folded.push_back(w);
      }
    }
    std::vector<std::string> findings;
    if (inference_form > 0) {
      findings.push_back(
          std::to_string(inference_form) + " of " +
          std::to_string(batch_norms) +
          " BatchNormalization nodes are in inference form (one output, the "
          "running statistics as inputs: no batch statistics, no update of "
          "the running ones)");
    }
    if (!folded.empty()) {
      findings.push_back(std::to_string(folded.size()) + " Conv weight" +
                         (folded.size() == 1 ? " is" : "s are") +
                         " the exporter's own tensors (" + Examples(folded) +
                         "), so a BatchNorm was folded into " +
                         (folded.size() == 1 ? "it" : "each") +
                         " and its ops, gradients and parameters are missing");
    }
    if (!model_.aliases().empty() && dropouts == 0) {
      findings.push_back(
          "parameters of equal value were merged, which an eval-mode "
          "export does");
    }
    if (findings.empty()) return;
    if (dropouts == 0) {
      findings.push_back(
          "the graph has no Dropout, which an eval-mode export removes");
    }
    std::string text;
    for (size_t i = 0; i < findings.size(); ++i) {
      text += (i == 0 ? "" : "; ") + findings[i];
    }
    warnings_.push_back(
        model_.source() + ": looks like an eval-mode export: " + text +
        ". The training graph is not the model's training step: re-export in "
        "training mode (model.train(); torch.onnx.export(..., "
        "training=torch.onnx.TrainingMode.TRAINING, "
        "do_constant_folding=False))");
  }

  // Parameters the exporter merged (onnx_model.h: OnnxModel::Alias), and
  // which reading was taken: un-merged (the default) or kept merged.
  void WarnAboutAliasedParameters() {
    const auto& aliases = model_.aliases();
    if (aliases.empty()) return;
    // Examples named like state_dict entries first: the ones a user knows.
    std::vector<std::string> pairs, exporter_named;
    int buffers = 0;
    for (const auto& alias : aliases) {
      (HasParameterName(alias.name) ? pairs : exporter_named)
          .push_back(alias.name + "' = '" + alias.merged_into);
      buffers +=
          ReadAsStateOnly(alias.name) != ReadAsStateOnly(alias.merged_into);
    }
    pairs.insert(pairs.end(), exporter_named.begin(), exporter_named.end());
    const std::string n = std::to_string(aliases.size());
    const std::string buffer_note =
        buffers == 0
            ? std::string()
            : "; " + std::to_string(buffers) +
                  " of them pair a buffer "
                  "(running statistics) with a weight of equal value: buffers "
                  "are state, not parameters, and share no gradient";
    const bool unmerged = aliases.front().unmerged;
    if (unmerged) {
      warnings_.push_back(
          model_.source() + ": the exporter merged " + n +
          " parameters into others of equal value, which it reads through "
          "Identity (" +
          Examples(pairs) +
          "); each is imported as a parameter of its own, as the model has "
          "it (its own bytes, gradient and update: PyTorch's "
          "model.parameters() lists each)" +
          buffer_note +
          ". A tie (one parameter under two names) is one tensor in the "
          "file and stays one. --keep-merged-parameters reads the file as "
          "it is, one parameter per merged tensor");
      return;
    }
    warnings_.push_back(
        model_.source() + ": " + n + " parameter" +
        (aliases.size() == 1 ? " is an alias" : "s are aliases") +
        " of another through Identity (" + Examples(pairs) +
        "), read as the file has them (--keep-merged-parameters): they share "
        "one gradient and one update and their bytes count once" +
        buffer_note +
        ". Without the option each is a parameter of its own, as in the "
        "model");
  }

  void WarnAboutUncostedOps() {
    if (uncosted_.empty()) return;
    int total = 0;
    std::string list;
    for (const auto& [type, count] : uncosted_) {
      total += count;
      list += (list.empty() ? "" : ", ") + type + " (" + std::to_string(count) +
              (count == 1 ? " op)" : " ops)");
    }
    warnings_.push_back(model_.source() + ": " + std::to_string(total) + " op" +
                        (total == 1 ? "" : "s") +
                        " of operators without a cost formula imported with "
                        "memory-only cost (bytes, no FLOPs): " +
                        list);
  }

  OnnxModel model_;
  GraphBuilder builder_;
  std::vector<std::string> warnings_;
  std::vector<OpId> node_ops_;  // Per node; -1 when folded.
  std::unordered_map<std::string, Producer> producers_;
  std::unordered_map<std::string, TensorInfo> producer_infos_;
  std::unordered_set<std::string> used_names_;
  std::map<std::string, int> uncosted_;  // Operator -> op count.
};

}  // namespace

StatusOr<OnnxImport> ImportOnnxBytes(const std::string& bytes,
                                     const std::string& source,
                                     const OnnxImportOptions& options) {
  return Importer(source, options).Import(bytes);
}

StatusOr<OnnxImport> ImportOnnxFile(const std::string& path,
                                    const OnnxImportOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(std::string bytes, ReadTextFile(path));
  return ImportOnnxBytes(bytes, path, options);
}

}  // namespace dplace
