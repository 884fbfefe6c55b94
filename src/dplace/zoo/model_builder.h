// ModelBuilder: writes forward graphs at TensorFlow granularity, the way the
// papers' benchmark graphs were built (an LSTM cell is its MatMul, BiasAdd,
// Split, Sigmoid, Tanh, Mul and Add ops; a conv layer its Conv2D, batch norm
// and Relu). Tracks scopes, unique names, shapes, FLOPs and bytes, so
// generators read like model code. ExpandForTraining() turns the result
// into the training graph.
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
  int64_t dim(int i) const {  // Negative i counts from the end.
    return shape[i < 0 ? static_cast<int>(shape.size()) + i : i];
  }
};

class ModelBuilder {
 public:
  explicit ModelBuilder(std::string graph_name);

  // Ops created while a ScopeGuard lives are named "<scope>/<name>" and carry
  // the scope path.
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
  std::string scope() const;

  // The input pipeline's output (runs on the CPU, as TF's iterators do).
  Tensor Input(const std::string& name, std::vector<int64_t> shape,
               DataType dtype = DataType::kFloat32);
  // A trainable parameter: a VariableV2 op holding its bytes.
  Tensor Parameter(const std::string& name, std::vector<int64_t> shape);
  // A constant (TF's Const op): scalar operands, fixed masks, ones.
  Tensor Const(const std::string& name, std::vector<int64_t> shape,
               DataType dtype = DataType::kFloat32);

  // A generic op. Bytes accessed are its inputs plus its outputs.
  Tensor Op(const std::string& type, const std::vector<Tensor>& inputs,
            std::vector<int64_t> shape, double flops,
            const std::string& name = "");
  std::vector<Tensor> MultiOp(const std::string& type,
                              const std::vector<Tensor>& inputs,
                              const std::vector<std::vector<int64_t>>& shapes,
                              double flops, const std::string& name = "");

  // Layers, each a few TF ops. Shapes follow TF: a MatMul multiplies
  // [..., m, k] by [k, n]; images are NHWC.
  Tensor MatMul(const Tensor& a, const Tensor& b);
  Tensor BatchMatMul(const Tensor& a, const Tensor& b, bool transpose_b);
  Tensor BiasAdd(const Tensor& x, const Tensor& bias);
  Tensor Unary(const std::string& type, const Tensor& x,
               double flops_per_element = 1);
  // Element-wise with broadcasting; the result has the larger shape.
  Tensor Binary(const std::string& type, const Tensor& a, const Tensor& b);
  // MatMul + BiasAdd (+ activation when non-empty), with its parameters.
  Tensor Dense(const Tensor& x, int64_t units, const std::string& activation,
               const std::string& name);
  // Conv2D with a [k, k, in, out] filter (no bias; batch norm follows).
  Tensor Conv2D(const Tensor& x, int64_t filters, int64_t kernel_h,
                int64_t kernel_w, int64_t stride, bool same_padding);
  // Conv2D with a given [kernel_h, kernel_w, in, out] filter.
  Tensor Conv2D(const Tensor& x, const Tensor& filter, int64_t stride,
                bool same_padding);
  // FusedBatchNorm with an offset parameter and a scale parameter, or, when
  // `scale` is false (TF-slim's default), a constant scale of ones.
  Tensor BatchNorm(const Tensor& x, bool scale = true);
  Tensor LayerNorm(const Tensor& x);
  Tensor Pool(const std::string& type, const Tensor& x, int64_t kernel,
              int64_t stride, bool same_padding);
  Tensor Concat(const std::vector<Tensor>& inputs, int axis);
  std::vector<Tensor> Split(const Tensor& x, int axis, int parts);
  Tensor Reshape(const Tensor& x, std::vector<int64_t> shape);
  Tensor Softmax(const Tensor& x);
  // TF 1.x tf.nn.dropout: RandomUniform, Add keep_prob, Floor (the mask),
  // RealDiv by keep_prob, Mul by the mask. The mask stays alive until the
  // gradient uses it. (The keep probability is a value, which graphs here do
  // not carry.)
  Tensor Dropout(const Tensor& x);
  // Embedding lookup of `ids` in a [vocab, dim] table.
  Tensor Embedding(const Tensor& ids, int64_t vocab, int64_t dim,
                   const std::string& name);

  int num_ops() const { return builder_.num_ops(); }
  StatusOr<Graph> Build() &&;

 private:
  std::string UniqueName(const std::string& base);
  OpId AddOp(OpSpec spec, const std::vector<Tensor>& inputs);

  GraphBuilder builder_;
  std::vector<std::string> scopes_;
  std::unordered_map<std::string, int> name_counts_;
};

}  // namespace dplace

#endif  // DPLACE_ZOO_MODEL_BUILDER_H_
