#include "dplace/io/onnx/onnx_import.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "dplace/graph/training.h"
#include "dplace/io/file.h"
#include "dplace/io/onnx/batch_change.h"
#include "dplace/io/onnx/constant_folding.h"
#include "dplace/io/onnx/onnx_costs.h"
#include "dplace/io/onnx/onnx_types.h"

namespace dplace {
namespace {

using ::onnx::AttributeProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;
using ::onnx::TypeProto;
using ::onnx::ValueInfoProto;
using onnx_internal::BytesAccessed;
using onnx_internal::ConstFromProto;
using onnx_internal::ConstTensor;
using onnx_internal::ConstToProto;
using onnx_internal::EinsumDims;
using onnx_internal::EinsumOutputShape;
using onnx_internal::Evaluate;
using onnx_internal::FindAttribute;
using onnx_internal::FlopsFormulas;
using onnx_internal::FromOnnxType;
using onnx_internal::HasParameterName;
using onnx_internal::InfoFromType;
using onnx_internal::IntAttribute;
using onnx_internal::IsFloatingPoint;
using onnx_internal::IsParameterSlot;
using onnx_internal::IsShapeOnlyPath;
using onnx_internal::IsStateSlot;
using onnx_internal::kMaxFoldedElements;
using onnx_internal::NodeTensors;
using onnx_internal::ParseEinsum;
using onnx_internal::Representable;
using onnx_internal::StringAttribute;
using onnx_internal::WithBytes;

constexpr char kDataInputOpType[] = "IteratorGetNext";
constexpr char kConstantOpType[] = "Const";

// "[16, 8, 128]".
std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  return text + "]";
}

std::string Stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const std::string ext = ".onnx";
  if (name.size() > ext.size() &&
      name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    name.resize(name.size() - ext.size());
  }
  return name.empty() ? "onnx" : name;
}

// --- The importer ----------------------------------------------------------

class Importer {
 public:
  Importer(std::string source, const OnnxImportOptions& options)
      : source_(std::move(source)),
        options_(options),
        builder_(Stem(source_)) {}

  StatusOr<OnnxImport> Import(const std::string& bytes) {
    DPLACE_RETURN_IF_ERROR(Parse(bytes));
    DPLACE_RETURN_IF_ERROR(CheckOpsets());
    WarnAboutFunctions();
    FindConsumers();
    ClassifyInputs();
    DropWeightData();
    DPLACE_RETURN_IF_ERROR(CheckInputsAreDefined());
    SpellOutKernelShapes();
    DPLACE_RETURN_IF_ERROR(SetBatch());
    DPLACE_RETURN_IF_ERROR(InferShapesAndFold());
    DPLACE_RETURN_IF_ERROR(CheckBatchChange());
    DPLACE_RETURN_IF_ERROR(AddOps());
    DPLACE_RETURN_IF_ERROR(AddEdges());
    WarnAboutUncostedOps();
    WarnAboutFoldedBatchNorm();
    WarnAboutAliasedParameters();
    StatusOr<Graph> graph = std::move(builder_).Build();
    if (!graph.ok()) return graph.status().WithPrefix(source_);
    return OnnxImport{std::move(graph).value(), std::move(warnings_)};
  }

 private:
  Status Error(const std::string& message) const {
    return InvalidArgumentError(source_ + ": " + message);
  }
  static std::string Describe(const NodeProto& node, int index) {
    return "node '" +
           (node.name().empty() ? "#" + std::to_string(index) : node.name()) +
           "' (" + node.op_type() + ")";
  }
  const ::onnx::GraphProto& graph() const { return model_.graph(); }
  // Why `node`'s outputs have no shape when libonnx has no schema for its
  // op type in its domain (and the model defines no such function): names
  // the type and the domain. Empty for an operator libonnx knows.
  std::string UnknownOperator(const NodeProto& node) const {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    if (functions_.count(node.domain() + ":" + node.op_type()) > 0 ||
        ::onnx::OpSchemaRegistry::Schema(node.op_type(), domain) != nullptr) {
      return "";
    }
    return "op type '" + node.op_type() + "' of domain '" +
           (domain.empty() ? "ai.onnx" : domain) +
           "' is unknown to libonnx, so the shapes of its outputs cannot be "
           "inferred; declare them in the model's value_info";
  }

  Status Parse(const std::string& bytes) {
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

  Status CheckOpsets() {
    const auto& known =
        ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    bool has_default = false;
    for (const auto& opset : model_.opset_import()) {
      const std::string domain =
          opset.domain() == "ai.onnx" ? "" : opset.domain();
      has_default = has_default || domain.empty();
      auto it = known.find(domain);
      if (it != known.end() && opset.version() > it->second.second) {
        warnings_.push_back(
            source_ + ": opset " + std::to_string(opset.version()) +
            " of domain '" + (domain.empty() ? "ai.onnx" : domain) +
            "' is newer than this build's libonnx knows (" +
            std::to_string(it->second.second) +
            "): shapes are inferred with the newest operator definitions it "
            "has, which may differ");
      }
    }
    if (!has_default) {
      return Error("opset_import: no version for the default domain ai.onnx");
    }
    return CheckRecurrentOpset();
  }

  // libonnx 1.12's shape inference for the LSTM, GRU and RNN of opsets 1
  // to 6 reads X's dims without checking its rank (a SEGV found by
  // onnx_import_fuzzer); opset 7's checks it. No exporter in use writes
  // those opsets.
  Status CheckRecurrentOpset() const {
    int64_t version = 0;
    for (const auto& opset : model_.opset_import()) {
      if (opset.domain().empty() || opset.domain() == "ai.onnx") {
        version = std::max<int64_t>(version, opset.version());
      }
    }
    // Below 1 libonnx has no schema for them, so it infers nothing.
    if (version < 1 || version >= 7) return Status::Ok();
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      const std::string& type = node.op_type();
      if ((type == "LSTM" || type == "GRU" || type == "RNN") &&
          (node.domain().empty() || node.domain() == "ai.onnx")) {
        return Error(Describe(node, i) + ": " + type + " of opset " +
                     std::to_string(version) +
                     " is not supported (opset 7 or newer is; re-export "
                     "with a newer opset_version)");
      }
    }
    return Status::Ok();
  }

  void WarnAboutFunctions() {
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

  void FindConsumers() {
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

  // Every node input must name a graph input, an initializer or some
  // node's output, and window attributes must be positive. Checked before
  // shape inference, which libonnx 1.12 does not guard against either: a
  // null type for an undefined input of Shape (a SEGV found by
  // onnx_import_fuzzer).
  // libonnx 1.12 copies raw_data into a vector sized by the bytes'
  // whole elements, so a few bytes fewer than one element are written
  // through a null pointer (a SEGV found by onnx_import_fuzzer in a
  // Constant's int64 value). The bytes must be what the dims say.
  Status CheckRawData(const TensorProto& t, const std::string& where) const {
    if (!t.has_raw_data()) return Status::Ok();
    static const std::unordered_map<int, int64_t> kElementBytes = {
        {TensorProto::FLOAT, 4},     {TensorProto::UINT8, 1},
        {TensorProto::INT8, 1},      {TensorProto::UINT16, 2},
        {TensorProto::INT16, 2},     {TensorProto::INT32, 4},
        {TensorProto::INT64, 8},     {TensorProto::BOOL, 1},
        {TensorProto::FLOAT16, 2},   {TensorProto::DOUBLE, 8},
        {TensorProto::UINT32, 4},    {TensorProto::UINT64, 8},
        {TensorProto::COMPLEX64, 8}, {TensorProto::COMPLEX128, 16},
        {TensorProto::BFLOAT16, 2}};
    auto it = kElementBytes.find(t.data_type());
    if (it == kElementBytes.end()) return Status::Ok();
    int64_t bytes = it->second;
    for (int64_t d : t.dims()) {
      if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) {
        return Error(where + ": dims are negative or overflow");
      }
    }
    if (static_cast<uint64_t>(bytes) != t.raw_data().size()) {
      return Error(where + ": raw_data holds " +
                   std::to_string(t.raw_data().size()) +
                   " bytes, its dims and type need " + std::to_string(bytes));
    }
    return Status::Ok();
  }

  Status CheckInputsAreDefined() const {
    std::unordered_set<std::string> defined;
    for (const ValueInfoProto& v : graph().input()) defined.insert(v.name());
    for (const TensorProto& t : graph().initializer()) defined.insert(t.name());
    for (const auto& t : graph().sparse_initializer()) {
      defined.insert(t.values().name());
    }
    std::unordered_set<std::string> produced;
    for (const NodeProto& node : graph().node()) {
      for (const std::string& out : node.output()) produced.insert(out);
    }
    for (const TensorProto& t : graph().initializer()) {
      DPLACE_RETURN_IF_ERROR(CheckRawData(t, "initializer '" + t.name() + "'"));
    }
    // In node order: libonnx infers in that order and reads an input of a
    // later node as undefined.
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      for (const ::onnx::AttributeProto& a : node.attribute()) {
        const std::string where =
            Describe(node, i) + ": attribute " + a.name() + "'s tensor";
        if (a.has_t()) DPLACE_RETURN_IF_ERROR(CheckRawData(a.t(), where));
        for (const TensorProto& t : a.tensors()) {
          DPLACE_RETURN_IF_ERROR(CheckRawData(t, where));
        }
      }
      for (const std::string& in : node.input()) {
        if (in.empty() || defined.count(in)) continue;
        if (produced.count(in)) {
          return Error(Describe(node, i) + ": input '" + in +
                       "' is produced by a later node (the graph is not in "
                       "topological order)");
        }
        return Error(Describe(node, i) + ": input '" + in +
                     "' is produced by no node and is no graph input or "
                     "initializer (is the file truncated?)");
      }
      // libonnx 1.12 divides by these in its Conv and pooling inference
      // (a SIGFPE for strides of 0, found by onnx_import_fuzzer).
      for (const ::onnx::AttributeProto& a : node.attribute()) {
        const std::string& n = a.name();
        if (n != "strides" && n != "dilations" && n != "kernel_shape" &&
            n != "group") {
          continue;
        }
        for (int64_t v : a.ints()) {
          if (v < 1) {
            return Error(Describe(node, i) + ": attribute " + n +
                         " must be >= 1, got " + std::to_string(v));
          }
        }
        if (n == "group" && a.has_i() && a.i() < 1) {
          return Error(Describe(node, i) + ": attribute group must be >= 1, " +
                       "got " + std::to_string(a.i()));
        }
      }
      // ONNX assigns each tensor once; a second producer would let the
      // tensor's type differ between nodes (another libonnx SEGV).
      for (const std::string& out : node.output()) {
        if (!out.empty() && !defined.insert(out).second) {
          return Error(Describe(node, i) + ": output '" + out +
                       "' is already a graph input, an initializer or an "
                       "earlier node's output (ONNX assigns each tensor once)");
        }
      }
    }
    return Status::Ok();
  }

  // Weights: initializers, and graph inputs in a parameter slot or with a
  // parameter's name; data: every other consumed graph input.
  void ClassifyInputs() {
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
  bool ReachesParameterSlot(const std::string& tensor) const {
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
  void DropWeightData() {
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
  void SpellOutKernelShapes() {
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
  std::optional<std::vector<int64_t>> DeclaredDims(
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

  ::onnx::TensorShapeProto* DataInputShape(const std::string& name) {
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
  Status SetBatch() {
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
  Status FindExportBatch() {
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
                     onnx_internal::kBatchFix);
      }
    }
    return Status::Ok();
  }

  // A model exported at a fixed batch: shapes are inferred at that batch,
  // the batch is followed through the graph (batch_change.h), and the
  // constants baked at it are rescaled; CheckBatchChange then checks every
  // shape at the new batch against the plan.
  Status PlanFixedBatchChange() {
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
    onnx_internal::ExportView view;
    view.shape = [this](const std::string& name) {
      auto it = export_shapes_.find(name);
      if (it != export_shapes_.end()) return std::optional(it->second);
      return DeclaredDims(name);
    };
    view.value = [&values](const std::string& name) -> const ConstTensor* {
      auto it = values.find(name);
      return it == values.end() ? nullptr : &it->second;
    };
    StatusOr<onnx_internal::BatchChangePlan> plan =
        onnx_internal::PlanBatchChange(graph(), data_inputs_, export_batch_,
                                       options_.batch, view);
    if (!plan.ok()) return Error(plan.status().message());
    folded_ = initial_folded_;
    for (const onnx_internal::ShapeOverride& o : plan->overrides) {
      NodeProto* node = model_.mutable_graph()->mutable_node(o.node);
      const std::string name = node->output(0) + "/batch_" +
                               std::to_string(options_.batch) + "_" +
                               std::to_string(o.input);
      node->set_input(o.input, name);
      folded_[name] = o.value;
    }
    for (const onnx_internal::ConstantResize& r : plan->resizes) {
      NodeProto* node = model_.mutable_graph()->mutable_node(r.node);
      for (AttributeProto& a : *node->mutable_attribute()) {
        if (a.name() == "value") {
          onnx_internal::ResizeFilledTensor(a.mutable_t(), r.axis,
                                            export_batch_, options_.batch);
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
  Status CheckBatchChange() const {
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
        return Error(Describe(node, i) + ": output '" + out + "' is " +
                     (now ? ShapeText(*now) : std::string("of unknown shape")) +
                     " at batch " + std::to_string(to) + " where its shape " +
                     ShapeText(before->second) + " at the export batch " +
                     std::to_string(from) + " says " + ShapeText(expected) +
                     ": a constant baked at the export batch feeds it; " +
                     onnx_internal::kBatchFix);
      }
    }
    return Status::Ok();
  }

  // Shape inference, then folding of what became constant, until nothing
  // more folds: each round can resolve the shapes the next one's Shape ops
  // read. Inference runs on a copy of the model in which folded tensors are
  // initializers and the nodes that computed them are gone.
  Status InferShapesAndFold() {
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

  Status CheckShapeInputsHaveTypes() const {
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
          return Error(Describe(producer, p) + ": " +
                       UnknownOperator(producer));
        }
      }
      return Error(Describe(node, i) + ": input '" + node.input(0) +
                   "' has no type (shape inference could not infer it)");
    }
    return Status::Ok();
  }

  Status InferShapes(bool data_propagation) {
    inferred_ = model_;
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
  std::optional<std::vector<int64_t>> StaticShape(
      const std::string& tensor) const {
    StatusOr<TensorInfo> info = InfoOf(tensor);
    if (!info.ok()) return std::nullopt;
    return info->shape;
  }

  // Declares the output shapes libonnx 1.12 leaves unknown where the
  // operands fix them (Einsum: it infers only the rank); returns whether it
  // declared any, for the next round of inference to use.
  bool CompleteShapes() {
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
      tensor->set_elem_type(
          input_type->second->type().tensor_type().elem_type());
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
  bool FoldConstants() {
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

  StatusOr<TensorInfo> InfoOf(const std::string& tensor) const {
    if (auto c = folded_.find(tensor); c != folded_.end()) {
      TensorInfo info;
      info.dtype =
          FromOnnxType(c->second.elem_type).value_or(DataType::kFloat32);
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

  StatusOr<TensorInfo> WeightInfo(const std::string& name) const {
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
        type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(
            d);
      }
      return InfoFromType(type);
    }
    return InfoOf(name);
  }

  bool WeightIsTrainable(const std::string& name, const TensorInfo& info) {
    if (info.dtype != DataType::kFloat32 && info.dtype != DataType::kFloat16 &&
        info.dtype != DataType::kBFloat16 && info.dtype != DataType::kFloat64) {
      return false;
    }
    for (const auto& [node, slot] : consumers_[name]) {
      if (!IsStateSlot(graph().node(node).op_type(), slot)) return true;
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

  struct Producer {
    OpId op;
    int output;
  };

  // Whether a node that stays an op reads `tensor` (not only folded ones).
  bool HasLiveConsumer(const std::string& tensor) const {
    auto it = consumers_.find(tensor);
    if (it == consumers_.end()) return false;
    for (const auto& [node, slot] : it->second) {
      if (!folded_nodes_.count(node)) return true;
    }
    return false;
  }

  Status AddSourceOps() {
    for (const std::string& name : weights_) {
      if (!HasLiveConsumer(name) || producers_.count(name)) continue;
      StatusOr<TensorInfo> info = WeightInfo(name);
      if (!info.ok()) {
        return Error("weight '" + name + "': " + info.status().message());
      }
      OpSpec spec;
      spec.name = UniqueName(name);
      spec.type = WeightIsTrainable(name, *info) ? std::string(kParameterOpType)
                                                 : kConstantOpType;
      spec.scope = ScopeOf(graph().node(consumers_[name].front().first));
      spec.persistent_bytes = info->bytes;
      spec.outputs.push_back(*info);
      producers_[name] = {builder_.AddOp(std::move(spec)), 0};
      producer_infos_[name] = *info;
    }
    for (const std::string& name : data_inputs_) {
      if (!HasLiveConsumer(name)) continue;
      StatusOr<TensorInfo> info = InfoOf(name);
      if (!info.ok()) {
        return Error("input '" + name + "': " + info.status().message());
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
      if (consumers_.count(name) || graph_outputs_.count(name)) {
        kept.push_back(k);
      }
    }
    if (kept.empty() && first >= 0) kept.push_back(first);
    return kept;
  }

  Status AddNodeOp(int index) {
    const NodeProto& node = graph().node(index);
    if (folded_nodes_.count(index)) {
      node_ops_.push_back(-1);
      return Status::Ok();
    }
    NodeTensors tensors;
    for (int k = 0; k < node.input_size(); ++k) {
      const bool constant = folded_.count(node.input(k)) > 0;
      tensors.constant.push_back(constant);
      if (node.input(k).empty()) {
        tensors.inputs.push_back(nullptr);
        continue;
      }
      if (constant) {
        producer_infos_[node.input(k)] = *InfoOf(node.input(k));
      }
      auto it = producer_infos_.find(node.input(k));
      if (it == producer_infos_.end()) {
        return Error(Describe(node, index) + ": input '" + node.input(k) +
                     "' is produced by no node and is no graph input or "
                     "initializer (is the file truncated, or the graph not "
                     "in topological order?)");
      }
      tensors.inputs.push_back(&it->second);
    }
    const std::vector<int> kept = KeptOutputs(node);
    for (int k : kept) {
      StatusOr<TensorInfo> info = InfoOf(node.output(k));
      if (!info.ok()) {
        const std::string unknown = UnknownOperator(node);
        return Error(
            Describe(node, index) + ": output '" + node.output(k) +
            "': " + (unknown.empty() ? info.status().message() : unknown));
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
    const bool is_function =
        functions_.count(node.domain() + ":" + node.op_type()) > 0;
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
    for (int i = 0; i < graph().node_size(); ++i) {
      DPLACE_RETURN_IF_ERROR(AddNodeOp(i));
    }
    return Status::Ok();
  }

  // Constants folded at import are no edges: their values are part of the
  // op, like attributes.
  Status AddEdges() {
    for (int i = 0; i < graph().node_size(); ++i) {
      const NodeProto& node = graph().node(i);
      const OpId op = node_ops_[i];
      if (op < 0) continue;
      const bool reads_shape_only =
          node.op_type() == "Shape" || node.op_type() == "Size";
      for (const std::string& input : node.input()) {
        if (input.empty() || folded_.count(input)) continue;
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

  // An eval-mode export folds each BatchNorm into the conv before it: the
  // graph has no BatchNormalization, and the convs' weights are new tensors
  // the exporter names itself ("onnx::Conv_25"), not the model's. A
  // training step would run BatchNorm (and its gradient) on every conv.
  // Also an eval-mode export without folding: BatchNormalization in
  // inference mode (opset 14 and newer say which).
  void WarnAboutFoldedBatchNorm() {
    std::vector<std::string> folded;
    int batch_norms = 0, inference_mode = 0;
    for (const NodeProto& node : graph().node()) {
      if (node.op_type() == "BatchNormalization") {
        ++batch_norms;
        inference_mode += FindAttribute(node, "training_mode") &&
                          IntAttribute(node, "training_mode", 0) == 0;
      }
      if (node.op_type() != "Conv" || node.input_size() < 2) continue;
      const std::string& w = node.input(1);
      if (weight_set_.count(w) && w.rfind("onnx::", 0) == 0) {
        folded.push_back(w);
      }
    }
    if (batch_norms == 0 && !folded.empty()) {
      warnings_.push_back(
          source_ +
          ": looks like an eval-mode export: " + std::to_string(folded.size()) +
          " Conv weight" + (folded.size() == 1 ? " is" : "s are") +
          " the exporter's own tensors (" + Examples(folded) +
          ") and the graph has no BatchNormalization, so BatchNorm was "
          "folded into the convolutions; the training graph lacks its ops, "
          "gradients and parameters. Re-export in training mode "
          "(training=torch.onnx.TrainingMode.TRAINING)");
    } else if (batch_norms > 0 && inference_mode == batch_norms) {
      warnings_.push_back(
          source_ + ": looks like an eval-mode export: every " +
          "BatchNormalization runs in inference mode (training_mode 0), "
          "with running statistics instead of the batch's; re-export in "
          "training mode (training=torch.onnx.TrainingMode.TRAINING)");
    }
  }

  // An exporter keeps one of several parameters with equal values (layers
  // deep-copied and never trained, zero biases) and feeds the others
  // through Identity nodes named after them: the training graph then has
  // one parameter, one gradient and one update where the model has
  // several.
  void WarnAboutAliasedParameters() {
    std::vector<std::string> aliases;
    for (const NodeProto& node : graph().node()) {
      if (node.op_type() != "Identity" || node.input_size() != 1 ||
          node.output_size() != 1 || !weight_set_.count(node.input(0)) ||
          !HasParameterName(node.output(0))) {
        continue;
      }
      aliases.push_back(node.output(0) + "' = '" + node.input(0));
    }
    if (aliases.empty()) return;
    warnings_.push_back(
        source_ + ": " + std::to_string(aliases.size()) + " parameter" +
        (aliases.size() == 1 ? " is an alias" : "s are aliases") +
        " of another through Identity (" + Examples(aliases) +
        "): the exporter merged parameters with equal values, so they share "
        "one gradient and one update and their bytes count once. Re-export "
        "in training mode from a model whose parameters differ (trained, or "
        "each initialised randomly)");
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
    warnings_.push_back(source_ + ": " + std::to_string(total) + " op" +
                        (total == 1 ? "" : "s") +
                        " of operators without a cost formula imported with "
                        "memory-only cost (bytes, no FLOPs): " +
                        list);
  }

  const std::string source_;
  const OnnxImportOptions options_;
  ModelProto model_;
  ModelProto inferred_;  // With inferred shapes; types_ points into it.
  GraphBuilder builder_;
  std::vector<std::string> warnings_;

  // Tensor name -> (node index, input slot) of each consumer.
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> consumers_;
  std::unordered_set<std::string> graph_outputs_;
  std::vector<std::string> weights_;  // In the model's order.
  std::unordered_set<std::string> weight_set_;
  std::vector<std::string> data_inputs_;
  std::unordered_set<std::string> functions_;  // "domain:name".
  std::unordered_map<std::string, const ValueInfoProto*> types_;
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
  std::vector<OpId> node_ops_;                 // Per node; -1 when folded.
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
