// The training expansion's builder (training.h), internal to graph/: one
// Expander per ExpandForTraining call, its definitions split by concept:
// training.cc drives it (which ops need gradients, the forward copy, each
// op's output gradients and recipe in reverse topological order),
// training_gradients.cc holds TensorFlow's gradient recipes,
// training_onnx_gradients.cc the ONNX operators', and training_updates.cc
// the gradient clipping and the optimizers' updates.
#ifndef DPLACE_GRAPH_TRAINING_EXPANDER_H_
#define DPLACE_GRAPH_TRAINING_EXPANDER_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/graph/training.h"

namespace dplace::training_internal {

inline bool IsFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 ||
         t == DataType::kBFloat16 || t == DataType::kFloat64;
}

// One input of an op being added: output `output` of op `op` of the
// training graph (forward ops keep their ids).
struct Ref {
  OpId op;
  int output;
};

inline TensorInfo Info(std::vector<int64_t> shape,
                       DataType dtype = DataType::kFloat32) {
  TensorInfo t{std::move(shape), dtype, 0};
  t.bytes = ShapeBytes(t.shape, t.dtype);
  return t;
}

// A vector of int32 holding a shape of rank `rank`.
inline TensorInfo ShapeVector(size_t rank) {
  return Info({static_cast<int64_t>(rank)}, DataType::kInt32);
}

inline TensorInfo IntScalar() { return Info({}, DataType::kInt32); }

inline double Elements(const TensorInfo& t) {
  return static_cast<double>(t.bytes) / std::max(1, DataTypeSize(t.dtype));
}

class Expander {
 public:
  Expander(const Graph& forward, const TrainingOptions& options)
      : f_(forward), options_(options), b_(forward.name()) {}

  StatusOr<Graph> Expand();

 private:
  // A trained variable and its gradient (values and, when sparse, indices).
  struct ParameterGradient {
    OpId variable;
    Ref gradient;
    std::optional<Ref> indices;
  };

  // The forward op whose gradient is being built.
  struct Current {
    OpId op;
    std::vector<EdgeId> inputs;  // Data inputs in order.
    std::vector<std::optional<Ref>> dy;
    std::vector<std::optional<Ref>> grads;           // Per data input.
    std::vector<std::pair<std::string, int>> names;  // Base name, uses.
  };

  // A gradient recipe: builds the gradients of c_'s inputs.
  using Recipe = void (Expander::*)();

  // Shape of both inputs and their BroadcastGradientArgs, whose outputs 0
  // and 1 are the reduction axes of each input's gradient.
  struct BroadcastShapes {
    Ref sx, sy;
    OpId args;
  };

  // The driver, the forward copy, output gradients and the helpers the
  // recipes build with (training.cc).
  bool IsParameter(OpId op) const { return f_.op_type(op) == kParameterOpType; }
  bool HasConsumers(OpId op) const;
  bool CarriesGradient(EdgeId e) const;
  void MarkOpsNeedingGradients();
  void CopyForward();
  std::string GroupOf(OpId op) const;
  int64_t Bytes(Ref r) const;
  const TensorInfo& TensorOf(Ref r) const;
  OpId AddDerived(OpId source, std::string name, std::string type, Phase phase,
                  const std::vector<Ref>& inputs,
                  std::vector<TensorInfo> outputs, double flops,
                  const std::vector<OpId>& control_inputs = {});
  OpId AddSpec(OpSpec s, const std::vector<Ref>& inputs,
               std::vector<TensorInfo> outputs, double flops,
               const std::vector<OpId>& control_inputs = {});
  std::optional<Ref> OutputGradient(OpId op, int index);
  Ref ConcatSparse(OpId op, const std::string& prefix,
                   const std::string& suffix, const std::vector<Ref>& in);
  static int64_t Key(Ref r);
  int NumInputs() const { return static_cast<int>(c_.inputs.size()); }
  Ref X(int k) const;
  const TensorInfo& XInfo(int k) const;
  Ref Y(int i = 0) const { return {c_.op, i}; }
  const TensorInfo& YInfo(int i = 0) const;
  Ref Dy(int i = 0) const { return *c_.dy[i]; }
  bool Wants(int k) const;
  OpId EmitOp(const std::string& base, const std::string& type,
              const std::vector<Ref>& inputs, std::vector<TensorInfo> outputs,
              double flops, const std::vector<OpId>& control_inputs = {});
  Ref Emit(const std::string& base, const std::string& type,
           const std::vector<Ref>& inputs, const TensorInfo& output,
           double flops);
  Ref EmitAfterGradient(const std::string& base, const std::string& type,
                        const std::vector<Ref>& inputs,
                        const TensorInfo& output, double flops);
  Ref EmitConst(const std::string& base, TensorInfo t);
  Ref ShapeOf(Ref x);
  Ref ZerosLike(Ref x);
  Ref ReshapeTo(Ref x, Ref shape, const TensorInfo& like);
  void AddGradients(OpId op);
  Ref Densified(Ref g, TensorId t);
  void Gate();

  // TensorFlow 1.x's gradient functions (training_gradients.cc).
  static const std::unordered_map<std::string, Recipe>& Recipes();
  void GradIdentity();
  void GradAddN();
  BroadcastShapes EmitBroadcastGradientArgs();
  void GradBroadcast();
  void GradPow();
  void GradMatMul();
  void GradConv2D();
  void GradBiasAdd();
  void GradActivation();
  void GradUnaryMath();
  void GradSoftmax();
  void GradCrossEntropy();
  void GradReduction();
  void GradReshape();
  void GradTranspose();
  void GradConcat();
  Ref DyOrZeros(int i);
  void GradSplit();
  void GradPack();
  void GradUnpack();
  void GradGather();
  void GradSelect();
  void GradPad();
  void GradPool();
  void GradGeneric();

  // ONNX operators' gradients (training_onnx_gradients.cc).
  void GradOnnxConv();
  void GradOnnxGemm();
  void GradOnnxNormalization();
  void GradOnnxDiv();
  void GradOnnxErf();
  void GradOnnxWhere();
  void GradOnnxEinsum();
  void GradOnnxRecurrent();

  // Clipping and updates (training_updates.cc).
  void ClipByGlobalNorm();
  Ref VariableValue(OpId variable) const;
  void AddUpdate(const ParameterGradient& p);
  void AddAdamWeightDecay(OpId param, Ref gradient);

  Current c_;
  const Graph& f_;
  const TrainingOptions& options_;
  GraphBuilder b_;
  std::vector<char> needs_;
  bool any_parameter_ = false;
  std::vector<std::vector<Ref>> contributions_;         // Per forward tensor.
  std::vector<std::vector<TensorInfo>> added_outputs_;  // Per added op.
  std::unordered_map<int64_t, Ref> sparse_indices_;     // Values -> indices.
  std::vector<ParameterGradient> gradients_;
};

}  // namespace dplace::training_internal

#endif  // DPLACE_GRAPH_TRAINING_EXPANDER_H_
