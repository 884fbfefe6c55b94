// ModelBuilder: writes forward graphs op by op as TensorFlow 1.x builds
// them, the graphs the papers placed: an LSTM cell is its ConcatV2,
// MatMul, BiasAdd, Split, Sigmoid, Tanh, Mul and Add ops with their axis
// constants; a TF-slim conv layer its Conv2D and a non-fused batch norm
// (moments, normalisation arithmetic, moving-average updates); every
// variable is read through an Identity. Tracks scopes, unique names, shapes,
// FLOPs and bytes, so generators read like model code. ExpandForTraining()
// turns the result into the training graph.
#ifndef DPLACE_ZOO_MODEL_BUILDER_H_
#define DPLACE_ZOO_MODEL_BUILDER_H_

#include <string>
#include <unordered_map>
#include <vector>

#include "dplace/graph/graph.h"

namespace dplace {

// A tensor being built: output `output` of op `op`, with its shape.
struct Tensor {
  OpId op = -1;
  int output = 0;
  std::vector<int64_t> shape;
  DataType dtype = DataType::kFloat32;

  int64_t elements() const;
  int64_t bytes() const { return elements() * DataTypeSize(dtype); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t dim(int i) const {  // Negative i counts from the end.
    return shape[i < 0 ? static_cast<int>(shape.size()) + i : i];
  }
};

// A variable: its VariableV2 op (`ref`, what assignments write) and the
// Identity that reads it (`value`, what computations consume).
struct Variable {
  Tensor ref, value;
  std::string name;  // The VariableV2 op's.
};

class ModelBuilder {
 public:
  explicit ModelBuilder(std::string graph_name);

  // Ops created while a ScopeGuard lives are named "<scope>/<name>" and carry
  // the scope path. A name-only guard prefixes names but leaves the scope
  // path alone (a sub-block that belongs to its enclosing group, like the
  // dropout of an LSTM cell).
  class ScopeGuard {
   public:
    explicit ScopeGuard(ModelBuilder* b) : b_(b) {}
    ~ScopeGuard() { b_->scopes_.pop_back(); }
    ScopeGuard(const ScopeGuard&) = delete;
    ScopeGuard& operator=(const ScopeGuard&) = delete;

   private:
    ModelBuilder* b_;
  };
  [[nodiscard]] ScopeGuard Scope(const std::string& name);
  [[nodiscard]] ScopeGuard NameScope(const std::string& name);
  std::string scope() const;

  // The input pipeline's output (runs on the CPU, as TF's iterators do).
  Tensor Input(const std::string& name, std::vector<int64_t> shape,
               DataType dtype = DataType::kFloat32);
  // A trainable parameter, returning its read ("<name>/read"). Its
  // VariableV2 holds the bytes as persistent memory.
  Tensor Parameter(const std::string& name, std::vector<int64_t> shape);
  // A variable that is not trained (batch norm's moving statistics).
  Variable StateVariable(const std::string& name, std::vector<int64_t> shape);
  // A constant (TF's Const op): scalar operands, axes, shapes, masks.
  Tensor Const(const std::string& name, std::vector<int64_t> shape,
               DataType dtype = DataType::kFloat32);
  // An int32 constant of `n` elements (an axis, a shape, a permutation).
  Tensor IntConst(const std::string& name, int64_t n = 0);

  // A generic op. Bytes accessed are its inputs plus its outputs.
  Tensor Op(const std::string& type, const std::vector<Tensor>& inputs,
            std::vector<int64_t> shape, double flops,
            const std::string& name = "", DataType dtype = DataType::kFloat32);
  std::vector<Tensor> MultiOp(const std::string& type,
                              const std::vector<Tensor>& inputs,
                              const std::vector<std::vector<int64_t>>& shapes,
                              double flops, const std::string& name = "",
                              DataType dtype = DataType::kFloat32);

  // Layers, each the TF ops they are made of. Shapes follow TF: MatMul
  // multiplies [m, k] by [k, n]; BatchMatMul [..., m, k] by [..., k, n];
  // images are NHWC.
  Tensor MatMul(const Tensor& a, const Tensor& b);
  Tensor BatchMatMul(const Tensor& a, const Tensor& b, bool transpose_b);
  Tensor BiasAdd(const Tensor& x, const Tensor& bias);
  Tensor Unary(const std::string& type, const Tensor& x,
               double flops_per_element = 1);
  // Element-wise with numpy broadcasting.
  Tensor Binary(const std::string& type, const Tensor& a, const Tensor& b,
                const std::string& name = "");
  // `x` <type> a scalar constant named `name` (e.g. the forget bias).
  Tensor WithScalar(const std::string& type, const Tensor& x,
                    const std::string& name);
  // A tf.layers.Dense on a matrix: MatMul (+ BiasAdd) (+ activation).
  Tensor Dense(const Tensor& x, int64_t units, const std::string& activation,
               const std::string& name, bool bias = true);
  // A Dense on the last axis of a rank-3 tensor, as tensordot builds it:
  // Reshape to a matrix, MatMul, Reshape back (no bias).
  Tensor Dense3D(const Tensor& x, int64_t units, const std::string& name);
  // Conv2D with a given [kernel_h, kernel_w, in, out] filter.
  Tensor Conv2D(const Tensor& x, const Tensor& filter, int64_t stride,
                bool same_padding);
  // TF-slim batch_norm in training mode, not fused: beta (and gamma when
  // `scale`), moments over NHW, the normalisation arithmetic and the
  // moving-average updates of mean and variance (AssignSub).
  Tensor BatchNorm(const Tensor& x, bool scale);
  // tf.contrib.layers.layer_norm over the last axis: moments (kept dims)
  // and the same arithmetic with beta and gamma.
  Tensor LayerNorm(const Tensor& x);
  // Reduction ("Mean", "Sum") over `axes` with a reduction_indices Const.
  Tensor Reduce(const std::string& type, const Tensor& x,
                const std::vector<int>& axes, bool keep_dims,
                const std::string& name = "");
  Tensor Pool(const std::string& type, const Tensor& x, int64_t kernel,
              int64_t stride, bool same_padding);
  Tensor Concat(const std::vector<Tensor>& inputs, int axis);
  std::vector<Tensor> Split(const Tensor& x, int axis, int parts);
  Tensor Pack(const std::vector<Tensor>& inputs, int axis);
  std::vector<Tensor> Unpack(const Tensor& x, int axis);
  Tensor Reshape(const Tensor& x, std::vector<int64_t> shape);
  Tensor Transpose(const Tensor& x, const std::vector<int>& perm);
  Tensor ExpandDims(const Tensor& x, int axis);
  Tensor Squeeze(const Tensor& x, const std::vector<int>& axes);
  Tensor Softmax(const Tensor& x);
  // TF 1.x tf.nn.dropout: keep_prob, Shape(x), random_uniform (min, max,
  // RandomUniform, sub, mul, add), Add keep_prob, Floor (the mask), RealDiv
  // by keep_prob, Mul by the mask. Ops are named "dropout/..." in the
  // current scope path. The mask and the scaled input stay alive until the
  // gradient uses them.
  Tensor Dropout(const Tensor& x);
  // Embedding lookup of `ids` in a [vocab, dim] table (GatherV2).
  Tensor Embedding(const Tensor& ids, int64_t vocab, int64_t dim,
                   const std::string& name);
  // Sparse softmax cross-entropy of `logits` [batch, classes] against int
  // labels: returns the loss per example.
  Tensor SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels);

  int num_ops() const { return builder_.num_ops(); }
  StatusOr<Graph> Build() &&;

 private:
  struct ScopePart {
    std::string name;
    bool in_scope_path;
  };
  std::string UniqueName(const std::string& base);
  OpId AddOp(OpSpec spec, const std::vector<Tensor>& inputs);
  // Moments of `x` over `axes`: mean and variance (squeezed unless
  // `keep_dims`), as tf.nn.moments builds them.
  std::pair<Tensor, Tensor> Moments(const Tensor& x,
                                    const std::vector<int>& axes,
                                    bool keep_dims);
  // tf.nn.batch_normalization: x * inv + (offset - mean * inv) with
  // inv = rsqrt(variance + epsilon) [* scale].
  Tensor Normalize(const Tensor& x, const Tensor& mean, const Tensor& variance,
                   const Tensor& offset, const Tensor* scale);

  GraphBuilder builder_;
  std::vector<ScopePart> scopes_;
  std::unordered_map<std::string, int> name_counts_;
  std::string colocation_;  // Given to new ops without a group of their own.
};

}  // namespace dplace

#endif  // DPLACE_ZOO_MODEL_BUILDER_H_
