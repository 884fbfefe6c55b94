#include "dplace/io/onnx/onnx_model.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <set>

#include "dplace/io/onnx/batch_change.h"
#include "dplace/io/onnx/onnx_checks.h"
#include "dplace/io/onnx/onnx_costs.h"
#include "dplace/io/onnx/onnx_types.h"

namespace dplace::onnx_internal {
namespace {

using ::onnx::AttributeProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::TypeProto;
using ::onnx::ValueInfoProto;

// "[16, 8, 128]".
std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace

Status OnnxModel::Prepare(const std::string& bytes) {
  DPLACE_RETURN_IF_ERROR(Parse(bytes));
  DPLACE_RETURN_IF_ERROR(CheckOpsets());
  WarnAboutFunctions();
  FindConsumers();
  ClassifyInputs();
  DropWeightData();
  DPLACE_RETURN_IF_ERROR(CheckNodeInputs(graph(), source_));
  SpellOutKernelShapes();
  DPLACE_RETURN_IF_ERROR(CheckRequiredInputs());
  DPLACE_RETURN_IF_ERROR(SetBatch());
  DPLACE_RETURN_IF_ERROR(InferShapesAndFold());
  DPLACE_RETURN_IF_ERROR(CheckBatchChange());
  FindAliases();
  return Status::Ok();
}

// The exporter merges parameters with equal values (or one storage) into
// the first and feeds the others to their layers through Identity nodes
// that carry their state_dict names, or, for a weight constant folding made
// (a transposed matrix, "onnx::MatMul_409"), names of the exporter's own
// ("onnx::MatMul_431"). Each was a parameter of its own in the model (an
// entry of PyTorch's model.parameters()), so each becomes a weight again,
// its Identity no op. A true tie (one parameter under two module paths, as
// GPT-2's LM head and token embedding) is one graph input from the start
// and never reaches here.
void OnnxModel::FindAliases() {
  for (int i = 0; i < graph().node_size(); ++i) {
    const NodeProto& node = graph().node(i);
    if (node.op_type() != "Identity" || node.input_size() != 1 ||
        node.output_size() != 1 || folded_nodes_.count(i) ||
        !IsWeight(node.input(0)) || IsWeight(node.output(0)) ||
        !(HasParameterName(node.output(0)) ||
          node.output(0).rfind("onnx::", 0) == 0)) {
      continue;
    }
    Alias alias{node.output(0), node.input(0), false};
    if (!options_.keep_merged_parameters) {
      alias.unmerged = true;
      weights_.push_back(alias.name);
      weight_set_.insert(alias.name);
      merged_into_[alias.name] = alias.merged_into;
      folded_nodes_.insert(i);
    }
    aliases_.push_back(std::move(alias));
  }
}

const std::vector<std::pair<int, int>>& OnnxModel::Consumers(
    const std::string& tensor) const {
  static const std::vector<std::pair<int, int>> kNone;
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? kNone : it->second;
}

bool OnnxModel::HasLiveConsumer(const std::string& tensor) const {
  for (const auto& [node, slot] : Consumers(tensor)) {
    if (!folded_nodes_.count(node)) return true;
  }
  return false;
}

Status OnnxModel::Parse(const std::string& bytes) {
  if (!model_.ParseFromString(bytes)) {
    return Error(
        "not a valid ONNX model: the protobuf does not parse (not an ONNX "
        "file, or a truncated or corrupt one)");
  }
  if (model_.ir_version() <= 0 || !model_.has_graph() ||
      model_.opset_import_size() == 0) {
    return Error(
        "not an ONNX model: no IR version, graph or opset_import (not an "
        "ONNX file, or a truncated one)");
  }
  return Status::Ok();
}

Status OnnxModel::CheckOpsets() {
  const auto& known =
      ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  std::unordered_map<std::string, int64_t> imported;
  for (const auto& opset : model_.opset_import()) {
    const std::string domain =
        opset.domain() == "ai.onnx" ? "" : opset.domain();
    const std::string shown = domain.empty() ? "ai.onnx" : domain;
    // Two versions of one domain: libonnx's inference keeps the last, the
    // checks here would read another.
    auto [it_imported, added] = imported.try_emplace(domain, opset.version());
    if (!added && it_imported->second != opset.version()) {
      return Error("opset_import: domain " + shown +
                   " is imported at two opsets (" +
                   std::to_string(it_imported->second) + " and " +
                   std::to_string(opset.version()) +
                   "); a model imports each domain at one opset");
    }
    auto it = known.find(domain);
    if (it != known.end() && opset.version() > it->second.second) {
      warnings_.push_back(
          source_ + ": opset " + std::to_string(opset.version()) +
          " of domain '" + shown +
          "' is newer than this build's libonnx knows (" +
          std::to_string(it->second.second) +
          "): shapes are inferred with the newest operator definitions it "
          "has, which may differ");
    }
  }
  const auto it = imported.find("");
  if (it == imported.end()) {
    return Error("opset_import: no version for the default domain ai.onnx");
  }
  // libonnx 1.12's shape inference of operator versions before opset 7
  // crashes on some models (found by onnx_import_fuzzer: the LSTM, GRU and
  // RNN of opsets 1 to 6 read X's dims unchecked; a chain of opset-6
  // operators read through a bad pointer). No exporter in use writes them.
  if (it->second < 7) {
    return Error("opset_import: ai.onnx opset " + std::to_string(it->second) +
                 " is not supported (opset 7 or newer is; re-export with a "
                 "newer opset_version)");
  }
  return Status::Ok();
}

// Every node of an operator libonnx knows has what its schema at the
// model's opset requires: at least its least number of inputs, and none of
// the required ones (neither optional nor variadic) empty. The batch
// change and libonnx's inference read them unchecked (an LSTM without
// inputs, found by onnx_import_fuzzer).
Status OnnxModel::CheckRequiredInputs() const {
  std::unordered_map<std::string, int> versions;
  for (const auto& opset : model_.opset_import()) {
    versions[opset.domain() == "ai.onnx" ? "" : opset.domain()] =
        static_cast<int>(std::clamp<int64_t>(opset.version(), 0,
                                             std::numeric_limits<int>::max()));
  }
  for (int i = 0; i < graph().node_size(); ++i) {
    const NodeProto& node = graph().node(i);
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    const auto version = versions.find(domain);
    if (version == versions.end()) continue;
    const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(
        node.op_type(), version->second, domain);
    if (schema == nullptr) continue;
    const std::string op = node.op_type() + " (opset " +
                           std::to_string(schema->since_version()) + ")";
    if (node.input_size() < schema->min_input()) {
      return Error(DescribeNode(node, i) + ": " +
                   std::to_string(node.input_size()) +
                   (node.input_size() == 1 ? " input; " : " inputs; ") + op +
                   " needs at least " + std::to_string(schema->min_input()));
    }
    const auto& formal = schema->inputs();
    for (int k = 0;
         k < node.input_size() && k < static_cast<int>(formal.size()); ++k) {
      if (formal[k].GetOption() == ::onnx::OpSchema::Single &&
          node.input(k).empty()) {
        return Error(DescribeNode(node, i) + ": its input " +
                     std::to_string(k) + " (" + formal[k].GetName() +
                     ") is empty; " + op + " needs it");
      }
    }
  }
  return Status::Ok();
}

void OnnxModel::WarnAboutFunctions() {
  if (model_.functions_size() == 0) return;
  std::string names;
  for (const auto& f : model_.functions()) {
    functions_.insert(f.domain() + ":" + f.name());
    names += (names.empty() ? "" : ", ") + f.name();
  }
  int calls = 0;
  for (const NodeProto& node : graph().node()) {
    calls += functions_.count(node.domain() + ":" + node.op_type()) > 0;
  }
  warnings_.push_back(source_ + ": model-local functions are not expanded (" +
                      names + "): their " + std::to_string(calls) +
                      " calls are imported as single ops with memory-only "
                      "cost (no FLOPs)");
}

void OnnxModel::FindConsumers() {
  consumers_.clear();
  for (int i = 0; i < graph().node_size(); ++i) {
    const NodeProto& node = graph().node(i);
    for (int k = 0; k < node.input_size(); ++k) {
      if (!node.input(k).empty()) consumers_[node.input(k)].push_back({i, k});
    }
  }
  for (const ValueInfoProto& out : graph().output()) {
    graph_outputs_.insert(out.name());
  }
}

// Weights: initializers, and graph inputs in a parameter slot or with a
// parameter's name; data: every other consumed graph input.
void OnnxModel::ClassifyInputs() {
  for (const TensorProto& t : graph().initializer()) {
    // Integer tensors (shapes, indices, axes) and scalars are constants
    // of the computation, not weights.
    if (!IsFloatingPoint(t.data_type()) || t.dims_size() == 0) {
      std::optional<ConstTensor> c = ConstFromProto(t);
      if (c && Representable(*c)) {
        folded_[t.name()] = std::move(*c);
        continue;
      }
    }
    weights_.push_back(t.name());
    weight_set_.insert(t.name());
  }
  initial_folded_ = folded_;
  for (const auto& t : graph().sparse_initializer()) {
    weights_.push_back(t.values().name());
    weight_set_.insert(t.values().name());
  }
  for (const ValueInfoProto& input : graph().input()) {
    const std::string& name = input.name();
    if (weight_set_.count(name) || folded_.count(name) ||
        !consumers_.count(name)) {
      continue;
    }
    if (HasParameterName(name) || ReachesParameterSlot(name)) {
      weights_.push_back(name);
      weight_set_.insert(name);
    } else {
      data_inputs_.push_back(name);
    }
  }
}

// Whether `tensor` is consumed as a parameter operand, directly or
// through a chain of nodes that only rearrange it (PyTorch slices,
// concatenates and unsqueezes an nn.LSTM's weight_ih_l0 into the LSTM
// node's W).
bool OnnxModel::ReachesParameterSlot(const std::string& tensor) const {
  std::vector<std::string> pending = {tensor};
  std::unordered_set<std::string> seen = {tensor};
  while (!pending.empty()) {
    const std::string name = std::move(pending.back());
    pending.pop_back();
    auto it = consumers_.find(name);
    if (it == consumers_.end()) continue;
    for (const auto& [index, slot] : it->second) {
      const NodeProto& node = graph().node(index);
      if (IsParameterSlot(node.op_type(), slot)) return true;
      if (!IsShapeOnlyPath(node.op_type(), slot)) continue;
      for (const std::string& out : node.output()) {
        if (!out.empty() && seen.insert(out).second) pending.push_back(out);
      }
    }
  }
  return false;
}

// Weight values are never needed (constants keep theirs: shape inference
// reads them).
void OnnxModel::DropWeightData() {
  for (TensorProto& t : *model_.mutable_graph()->mutable_initializer()) {
    if (folded_.count(t.name())) continue;
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_double_data();
    t.clear_int32_data();  // float16 and bfloat16 values live here.
  }
}

// A convolution without kernel_shape takes it from W's dims; libonnx
// 1.12 then reads past the input's dims when W has more spatial dims than
// the input (a SEGV found by onnx_import_fuzzer), but checks an explicit
// kernel_shape. So spell it out where W's shape is declared: the same
// model, per the ONNX spec. (Where W is computed, the risk remains.)
void OnnxModel::SpellOutKernelShapes() {
  for (NodeProto& node : *model_.mutable_graph()->mutable_node()) {
    const std::string& op = node.op_type();
    const int w = op == "QLinearConv" ? 3 : 1;
    if ((op != "Conv" && op != "ConvInteger" && op != "ConvTranspose" &&
         op != "QLinearConv") ||
        node.input_size() <= w || FindAttribute(node, "kernel_shape")) {
      continue;
    }
    const std::optional<std::vector<int64_t>> dims =
        DeclaredDims(node.input(w));
    if (!dims || dims->size() < 2) continue;
    AttributeProto* a = node.add_attribute();
    a->set_name("kernel_shape");
    a->set_type(AttributeProto::INTS);
    for (size_t i = 2; i < dims->size(); ++i) a->add_ints((*dims)[i]);
  }
}

// The dims of an initializer or of a graph input with a fully known
// shape; nullopt otherwise.
std::optional<std::vector<int64_t>> OnnxModel::DeclaredDims(
    const std::string& name) const {
  for (const TensorProto& t : graph().initializer()) {
    if (t.name() == name) {
      return std::vector<int64_t>(t.dims().begin(), t.dims().end());
    }
  }
  for (const ValueInfoProto& v : graph().input()) {
    if (v.name() != name || !v.type().tensor_type().has_shape()) continue;
    std::vector<int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return std::nullopt;
      dims.push_back(d.dim_value());
    }
    return dims;
  }
  return std::nullopt;
}

::onnx::TensorShapeProto* OnnxModel::DataInputShape(const std::string& name) {
  for (ValueInfoProto& input : *model_.mutable_graph()->mutable_input()) {
    if (input.name() == name && input.type().has_tensor_type() &&
        input.type().tensor_type().has_shape()) {
      return input.mutable_type()->mutable_tensor_type()->mutable_shape();
    }
  }
  return nullptr;
}

// Sets the first dim of every data input to options_.batch: a symbolic
// batch is replaced by name wherever the model uses it; a numeric one
// makes the declared intermediate and output shapes stale, so they are
// dropped and inferred anew.
Status OnnxModel::SetBatch() {
  std::set<std::string> symbols;
  bool numeric_change = false;
  DPLACE_RETURN_IF_ERROR(FindExportBatch());
  if (export_batch_ > 0 && options_.batch > 0 &&
      export_batch_ != options_.batch) {
    DPLACE_RETURN_IF_ERROR(PlanFixedBatchChange());
  }
  for (const std::string& name : data_inputs_) {
    ::onnx::TensorShapeProto* shape = DataInputShape(name);
    if (!shape) continue;  // Reported when its op is built.
    for (int i = 0; i < shape->dim_size(); ++i) {
      const auto& dim = shape->dim(i);
      if (dim.has_dim_value()) continue;
      const std::string what =
          "input '" + name + "': dim " + std::to_string(i) + " is " +
          (dim.has_dim_param() ? "symbolic ('" + dim.dim_param() + "')"
                               : std::string("unknown"));
      if (i != 0) {
        return Error(what + "; only the first (batch) dim can be set");
      }
      if (options_.batch <= 0) {
        return Error(what + "; give the batch size (--batch N)");
      }
    }
    if (options_.batch <= 0 || shape->dim_size() == 0) continue;
    auto* batch = shape->mutable_dim(0);
    if (batch->has_dim_param()) symbols.insert(batch->dim_param());
    if (batch->has_dim_value() && batch->dim_value() != options_.batch) {
      numeric_change = true;
    }
    batch->set_dim_value(options_.batch);
  }
  auto* g = model_.mutable_graph();
  if (numeric_change) {
    g->clear_value_info();
    for (ValueInfoProto& out : *g->mutable_output()) {
      if (out.type().has_tensor_type()) {
        out.mutable_type()->mutable_tensor_type()->clear_shape();
      }
    }
  }
  if (symbols.empty()) return Status::Ok();
  auto substitute = [&](ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) {
      return;
    }
    auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (auto& dim : *shape->mutable_dim()) {
      if (dim.has_dim_param() && symbols.count(dim.dim_param())) {
        dim.set_dim_value(options_.batch);
      }
    }
  };
  for (ValueInfoProto& v : *g->mutable_input()) substitute(v);
  for (ValueInfoProto& v : *g->mutable_value_info()) substitute(v);
  for (ValueInfoProto& v : *g->mutable_output()) substitute(v);
  return Status::Ok();
}

// The batch the model was exported at: the first dim of its data inputs
// where it is a number (0 when every one is symbolic). With --batch they
// must agree, or the first dim is no batch.
Status OnnxModel::FindExportBatch() {
  std::string first;
  for (const std::string& name : data_inputs_) {
    const ::onnx::TensorShapeProto* shape = DataInputShape(name);
    if (!shape || shape->dim_size() == 0 || !shape->dim(0).has_dim_value()) {
      continue;
    }
    const int64_t batch = shape->dim(0).dim_value();
    if (batch <= 0) continue;  // An empty input: no batch to follow.
    if (export_batch_ == 0) {
      export_batch_ = batch;
      first = name;
    } else if (batch != export_batch_ && options_.batch > 0) {
      return Error("--batch " + std::to_string(options_.batch) +
                   ": data inputs '" + first + "' and '" + name +
                   "' have first dims " + std::to_string(export_batch_) +
                   " and " + std::to_string(batch) +
                   ", so the first dim is no batch they share (is one of "
                   "them a parameter or buffer not named as one?); " +
                   kBatchFix);
    }
  }
  return Status::Ok();
}

// A model exported at a fixed batch: shapes are inferred at that batch,
// the batch is followed through the graph (batch_change.h), and the
// constants baked at it are rescaled; CheckBatchChange then checks every
// shape at the new batch against the plan.
Status OnnxModel::PlanFixedBatchChange() {
  DPLACE_RETURN_IF_ERROR(InferShapesAndFold());
  for (int i = 0; i < graph().node_size(); ++i) {
    for (const std::string& out : graph().node(i).output()) {
      if (std::optional<std::vector<int64_t>> shape = StaticShape(out)) {
        export_shapes_[out] = std::move(*shape);
      }
    }
  }
  for (const std::string& name : weights_) {
    if (StatusOr<TensorInfo> info = WeightInfo(name); info.ok()) {
      export_shapes_[name] = info->shape;
    }
  }
  const std::unordered_map<std::string, ConstTensor> values = folded_;
  ExportView view;
  view.shape = [this](const std::string& name) {
    auto it = export_shapes_.find(name);
    if (it != export_shapes_.end()) return std::optional(it->second);
    return DeclaredDims(name);
  };
  view.value = [&values](const std::string& name) -> const ConstTensor* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  StatusOr<BatchChangePlan> plan = PlanBatchChange(
      graph(), data_inputs_, export_batch_, options_.batch, view);
  if (!plan.ok()) return Error(plan.status().message());
  folded_ = initial_folded_;
  for (const ShapeOverride& o : plan->overrides) {
    NodeProto* node = model_.mutable_graph()->mutable_node(o.node);
    const std::string name = node->output(0) + "/batch_" +
                             std::to_string(options_.batch) + "_" +
                             std::to_string(o.input);
    node->set_input(o.input, name);
    folded_[name] = o.value;
  }
  for (const ConstantResize& r : plan->resizes) {
    NodeProto* node = model_.mutable_graph()->mutable_node(r.node);
    for (AttributeProto& a : *node->mutable_attribute()) {
      if (a.name() == "value") {
        ResizeFilledTensor(a.mutable_t(), r.axis, export_batch_,
                           options_.batch);
      }
    }
  }
  folded_nodes_.clear();
  completed_.clear();
  batch_axis_ = std::move(plan->batch_axis);
  batch_changed_ = true;
  FindConsumers();
  return Status::Ok();
}

// After a fixed batch changed: every shape is its export shape with the
// batch dim scaled, and no parameter changed.
Status OnnxModel::CheckBatchChange() const {
  if (!batch_changed_) return Status::Ok();
  const int64_t from = export_batch_, to = options_.batch;
  for (const std::string& name : weights_) {
    auto before = export_shapes_.find(name);
    StatusOr<TensorInfo> info = WeightInfo(name);
    if (before != export_shapes_.end() && info.ok() &&
        info->shape != before->second) {
      return Error("parameter '" + name + "' is " +
                   DescribeShape(info->shape, info->dtype) + " at batch " +
                   std::to_string(to) + " but " +
                   DescribeShape(before->second, info->dtype) +
                   " at the export batch " + std::to_string(from) +
                   ": a parameter's shape cannot depend on the batch");
    }
  }
  for (int i = 0; i < graph().node_size(); ++i) {
    if (folded_nodes_.count(i)) continue;
    const NodeProto& node = graph().node(i);
    for (const std::string& out : node.output()) {
      auto before = export_shapes_.find(out);
      if (out.empty() || before == export_shapes_.end()) continue;
      std::vector<int64_t> expected = before->second;
      auto axis = batch_axis_.find(out);
      if (axis != batch_axis_.end() &&
          axis->second < static_cast<int>(expected.size())) {
        int64_t& d = expected[axis->second];
        d = d % from == 0 ? d / from * to : -1;
      }
      const std::optional<std::vector<int64_t>> now = StaticShape(out);
      if (now && *now == expected) continue;
      return Error(DescribeNode(node, i) + ": output '" + out + "' is " +
                   (now ? ShapeText(*now) : std::string("of unknown shape")) +
                   " at batch " + std::to_string(to) + " where its shape " +
                   ShapeText(before->second) + " at the export batch " +
                   std::to_string(from) + " says " + ShapeText(expected) +
                   ": a constant baked at the export batch feeds it; " +
                   kBatchFix);
    }
  }
  return Status::Ok();
}

// Shape inference, then folding of what became constant, until nothing
// more folds: each round can resolve the shapes the next one's Shape ops
// read. Inference runs on a copy of the model in which folded tensors are
// initializers and the nodes that computed them are gone.
Status OnnxModel::InferShapesAndFold() {
  // libonnx 1.12's data propagation for Shape dereferences its input's
  // type unchecked (a SEGV found by onnx_import_fuzzer): infer types once
  // without it, and refuse a Shape node whose input got none.
  DPLACE_RETURN_IF_ERROR(InferShapes(/*data_propagation=*/false));
  DPLACE_RETURN_IF_ERROR(CheckShapeInputsHaveTypes());
  constexpr int kMaxRounds = 100;
  for (int round = 0; round < kMaxRounds; ++round) {
    DPLACE_RETURN_IF_ERROR(InferShapes(/*data_propagation=*/true));
    const bool folded = FoldConstants();
    const bool completed = CompleteShapes();
    if (!folded && !completed) return Status::Ok();
  }
  return Status::Ok();
}

std::string OnnxModel::UnknownOperator(const NodeProto& node) const {
  const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  if (CallsFunction(node) ||
      ::onnx::OpSchemaRegistry::Schema(node.op_type(), domain) != nullptr) {
    return "";
  }
  return "op type '" + node.op_type() + "' of domain '" +
         (domain.empty() ? "ai.onnx" : domain) +
         "' is unknown to libonnx, so the shapes of its outputs cannot be "
         "inferred; declare them in the model's value_info";
}

Status OnnxModel::CheckShapeInputsHaveTypes() const {
  std::unordered_set<std::string> typed;
  for (const TensorProto& t : inferred_.graph().initializer()) {
    typed.insert(t.name());
  }
  for (const auto& [name, value] : types_) {
    if (value->has_type()) typed.insert(name);
  }
  // libonnx types an untyped graph input from its consumers in the pass
  // above, but data propagation looks it up untyped (another SEGV found
  // by onnx_import_fuzzer): such an input counts as untyped.
  for (const ValueInfoProto& v : model_.graph().input()) {
    if (!v.has_type()) typed.erase(v.name());
  }
  // An empty name is a missing input, whatever value carries that name
  // (a Shape of "" crashed libonnx's data propagation, found by
  // onnx_import_fuzzer; CheckRequiredInputs refuses it first).
  typed.erase("");
  for (int i = 0; i < graph().node_size(); ++i) {
    const NodeProto& node = graph().node(i);
    if (node.op_type() != "Shape" || node.input_size() == 0 ||
        folded_nodes_.count(i) || typed.count(node.input(0))) {
      continue;
    }
    for (int p = 0; p < graph().node_size(); ++p) {  // Its producer's fault?
      const NodeProto& producer = graph().node(p);
      const auto& outputs = producer.output();
      if (std::find(outputs.begin(), outputs.end(), node.input(0)) !=
              outputs.end() &&
          !UnknownOperator(producer).empty()) {
        return Error(DescribeNode(producer, p) + ": " +
                     UnknownOperator(producer));
      }
    }
    return Error(DescribeNode(node, i) + ": input '" + node.input(0) +
                 "' has no type (shape inference could not infer it)");
  }
  return Status::Ok();
}

Status OnnxModel::InferShapes(bool data_propagation) {
  inferred_ = model_;
  // libonnx 1.12's data propagation crashes on some models of IR versions
  // before 4 (a Size read by a Shape, found by onnx_import_fuzzer). IR 4
  // only relaxed a rule (initializers need not be graph inputs), so an
  // older model is inferred as one of IR 4.
  if (inferred_.ir_version() < 4) inferred_.set_ir_version(4);
  ::onnx::GraphProto* g = inferred_.mutable_graph();
  google::protobuf::RepeatedPtrField<NodeProto> kept;
  for (int i = 0; i < g->node_size(); ++i) {
    if (!folded_nodes_.count(i)) *kept.Add() = g->node(i);
  }
  g->mutable_node()->Swap(&kept);
  std::unordered_set<std::string> initializers;
  for (const TensorProto& t : g->initializer()) initializers.insert(t.name());
  for (const auto& [name, value] : folded_) {
    if (!initializers.count(name)) {
      *g->add_initializer() = ConstToProto(value, name);
    }
  }
  // Node-level inference errors are not fatal (error_mode 0): a node
  // whose outputs stay unknown is reported by name later.
  const ::onnx::ShapeInferenceOptions options(/*check_type_val=*/false,
                                              /*strict_mode_val=*/0,
                                              data_propagation);
  try {
    ::onnx::shape_inference::InferShapes(
        inferred_, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    return Error("shape inference failed: " + what);
  }
  types_.clear();
  for (const ValueInfoProto& v : g->input()) types_[v.name()] = &v;
  for (const ValueInfoProto& v : g->value_info()) types_[v.name()] = &v;
  for (const ValueInfoProto& v : g->output()) types_[v.name()] = &v;
  return Status::Ok();
}

// The static shape of `tensor`, when shape inference knows every dim.
std::optional<std::vector<int64_t>> OnnxModel::StaticShape(
    const std::string& tensor) const {
  StatusOr<TensorInfo> info = InfoOf(tensor);
  if (!info.ok()) return std::nullopt;
  return info->shape;
}

// Declares the output shapes libonnx 1.12 leaves unknown where the
// operands fix them (Einsum: it infers only the rank); returns whether it
// declared any, for the next round of inference to use.
bool OnnxModel::CompleteShapes() {
  bool progress = false;
  for (int i = 0; i < graph().node_size(); ++i) {
    const NodeProto& node = graph().node(i);
    if (node.op_type() != "Einsum" || node.output_size() != 1 ||
        node.input_size() == 0 || completed_.count(node.output(0)) ||
        InfoOf(node.output(0)).ok()) {
      continue;
    }
    std::vector<TensorInfo> infos;
    for (const std::string& input : node.input()) {
      StatusOr<TensorInfo> info = InfoOf(input);
      if (!info.ok()) break;
      infos.push_back(*info);
    }
    if (infos.size() != static_cast<size_t>(node.input_size())) continue;
    std::vector<const TensorInfo*> inputs;
    for (const TensorInfo& info : infos) inputs.push_back(&info);
    const std::optional<EinsumDims> e =
        ParseEinsum(StringAttribute(node, "equation"), inputs);
    const std::optional<std::vector<int64_t>> shape =
        e ? EinsumOutputShape(*e) : std::nullopt;
    auto input_type = types_.find(node.input(0));
    if (!shape || input_type == types_.end()) continue;
    ValueInfoProto* v = nullptr;  // A graph output's, else a new one.
    for (ValueInfoProto& out : *model_.mutable_graph()->mutable_output()) {
      if (out.name() == node.output(0)) v = &out;
    }
    if (!v) v = model_.mutable_graph()->add_value_info();
    v->set_name(node.output(0));
    auto* tensor = v->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(input_type->second->type().tensor_type().elem_type());
    tensor->clear_shape();
    for (int64_t d : *shape) {
      tensor->mutable_shape()->add_dim()->set_dim_value(d);
    }
    completed_.insert(node.output(0));
    progress = true;
  }
  return progress;
}

// Evaluates the nodes whose inputs are all known; returns whether any
// folded. Nodes with graph outputs, several outputs or subgraphs stay.
bool OnnxModel::FoldConstants() {
  bool progress = false;
  for (int i = 0; i < graph().node_size(); ++i) {
    const NodeProto& node = graph().node(i);
    if (folded_nodes_.count(i) || node.output_size() != 1 ||
        graph_outputs_.count(node.output(0)) ||
        !(node.domain().empty() || node.domain() == "ai.onnx")) {
      continue;
    }
    const bool reads_shape =
        node.op_type() == "Shape" || node.op_type() == "Size";
    std::vector<const ConstTensor*> inputs;
    bool known = true;
    for (const std::string& input : node.input()) {
      auto it = folded_.find(input);
      inputs.push_back(it == folded_.end() ? nullptr : &it->second);
      known = known && (input.empty() || it != folded_.end() || reads_shape);
    }
    if (!known) continue;
    std::optional<std::vector<int64_t>> shape;
    if (reads_shape && node.input_size() == 1) {
      shape = StaticShape(node.input(0));
    }
    std::optional<ConstTensor> value = Evaluate(node, inputs, shape);
    if (!value ||
        static_cast<int64_t>(value->values.size()) > kMaxFoldedElements ||
        !Representable(*value)) {
      continue;
    }
    folded_[node.output(0)] = std::move(*value);
    folded_nodes_.insert(i);
    progress = true;
  }
  return progress;
}

StatusOr<TensorInfo> OnnxModel::InfoOf(const std::string& tensor) const {
  if (auto c = folded_.find(tensor); c != folded_.end()) {
    TensorInfo info;
    info.dtype = FromOnnxType(c->second.elem_type).value_or(DataType::kFloat32);
    info.shape = c->second.dims;
    return WithBytes(std::move(info));
  }
  auto it = types_.find(tensor);
  if (it == types_.end()) {
    return InvalidArgumentError(
        "no shape (shape inference could not infer it and the model does "
        "not declare it)");
  }
  return InfoFromType(it->second->type());
}

StatusOr<TensorInfo> OnnxModel::WeightInfo(const std::string& name) const {
  auto merged = merged_into_.find(name);
  if (merged != merged_into_.end()) return WeightInfo(merged->second);
  for (const TensorProto& t : graph().initializer()) {
    if (t.name() != name) continue;
    const std::optional<DataType> dtype = FromOnnxType(t.data_type());
    if (!dtype) {
      return InvalidArgumentError(
          "element type " +
          TensorProto::DataType_Name(
              static_cast<TensorProto::DataType>(t.data_type())) +
          " is not supported");
    }
    TensorInfo info;
    info.dtype = *dtype;
    info.shape.assign(t.dims().begin(), t.dims().end());
    return WithBytes(std::move(info));
  }
  for (const auto& t : graph().sparse_initializer()) {
    if (t.values().name() != name) continue;
    TypeProto type;
    type.mutable_tensor_type()->set_elem_type(t.values().data_type());
    for (int64_t d : t.dims()) {
      type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    }
    return InfoFromType(type);
  }
  return InfoOf(name);
}

}  // namespace dplace::onnx_internal
