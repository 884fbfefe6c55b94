#include "dplace/zoo/model_builder.h"

#include <algorithm>

namespace dplace {
namespace {

// Output size of a convolution or pooling window along one dimension.
int64_t WindowOutput(int64_t in, int64_t kernel, int64_t stride, bool same) {
  return same ? (in + stride - 1) / stride : (in - kernel) / stride + 1;
}

}  // namespace

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

ModelBuilder::ModelBuilder(std::string graph_name)
    : builder_(std::move(graph_name)) {}

ModelBuilder::ScopeGuard ModelBuilder::Scope(const std::string& name) {
  scopes_.push_back(name);
  return ScopeGuard(this);
}

std::string ModelBuilder::scope() const {
  std::string s;
  for (const std::string& part : scopes_) s += (s.empty() ? "" : "/") + part;
  return s;
}

std::string ModelBuilder::UniqueName(const std::string& base) {
  const std::string prefix = scope();
  std::string name = prefix.empty() ? base : prefix + "/" + base;
  const int count = name_counts_[name]++;
  if (count > 0) name += "_" + std::to_string(count);
  return name;
}

OpId ModelBuilder::AddOp(OpSpec spec, const std::vector<Tensor>& inputs) {
  spec.scope = scope();
  for (const Tensor& t : inputs) spec.bytes_accessed += t.bytes();
  for (const TensorInfo& t : spec.outputs) {
    spec.bytes_accessed += ShapeBytes(t.shape, t.dtype);
  }
  const OpId op = builder_.AddOp(std::move(spec));
  for (const Tensor& t : inputs) builder_.AddEdge(t.op, t.output, op);
  return op;
}

Tensor ModelBuilder::Input(const std::string& name, std::vector<int64_t> shape,
                           DataType dtype) {
  OpSpec s;
  s.name = UniqueName(name);
  s.type = "IteratorGetNext";
  s.allowed_devices = DeviceKindSet::Only(DeviceKind::kCpu);
  s.outputs.push_back({shape, dtype, 0});
  return {AddOp(std::move(s), {}), 0, std::move(shape), dtype};
}

Tensor ModelBuilder::Parameter(const std::string& name,
                               std::vector<int64_t> shape) {
  OpSpec s;
  s.name = UniqueName(name);
  s.type = "VariableV2";
  s.persistent_bytes = ShapeBytes(shape, DataType::kFloat32);
  s.outputs.push_back({shape, DataType::kFloat32, 0});
  return {AddOp(std::move(s), {}), 0, std::move(shape)};
}

Tensor ModelBuilder::Const(const std::string& name, std::vector<int64_t> shape,
                           DataType dtype) {
  OpSpec s;
  s.name = UniqueName(name);
  s.type = "Const";
  s.outputs.push_back({shape, dtype, 0});
  return {AddOp(std::move(s), {}), 0, std::move(shape), dtype};
}

std::vector<Tensor> ModelBuilder::MultiOp(
    const std::string& type, const std::vector<Tensor>& inputs,
    const std::vector<std::vector<int64_t>>& shapes, double flops,
    const std::string& name) {
  OpSpec s;
  s.name = UniqueName(name.empty() ? type : name);
  s.type = type;
  s.flops = flops;
  for (const auto& shape : shapes) {
    s.outputs.push_back({shape, DataType::kFloat32, 0});
  }
  const OpId op = AddOp(std::move(s), inputs);
  std::vector<Tensor> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    out.push_back({op, static_cast<int>(i), shapes[i]});
  }
  return out;
}

Tensor ModelBuilder::Op(const std::string& type,
                        const std::vector<Tensor>& inputs,
                        std::vector<int64_t> shape, double flops,
                        const std::string& name) {
  return MultiOp(type, inputs, {std::move(shape)}, flops, name)[0];
}

Tensor ModelBuilder::MatMul(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> shape = a.shape;
  shape.back() = b.dim(-1);
  const double flops = 2.0 * (a.elements() / a.dim(-1)) * a.dim(-1) * b.dim(-1);
  return Op("MatMul", {a, b}, std::move(shape), flops);
}

Tensor ModelBuilder::BatchMatMul(const Tensor& a, const Tensor& b,
                                 bool transpose_b) {
  std::vector<int64_t> shape = a.shape;
  shape.back() = transpose_b ? b.dim(-2) : b.dim(-1);
  const double flops =
      2.0 * (a.elements() / a.dim(-1)) * a.dim(-1) * shape.back();
  return Op("BatchMatMulV2", {a, b}, std::move(shape), flops);
}

Tensor ModelBuilder::BiasAdd(const Tensor& x, const Tensor& bias) {
  return Op("BiasAdd", {x, bias}, x.shape, static_cast<double>(x.elements()));
}

Tensor ModelBuilder::Unary(const std::string& type, const Tensor& x,
                           double flops_per_element) {
  return Op(type, {x}, x.shape, flops_per_element * x.elements());
}

Tensor ModelBuilder::Binary(const std::string& type, const Tensor& a,
                            const Tensor& b) {
  const Tensor& big = a.elements() >= b.elements() ? a : b;
  return Op(type, {a, b}, big.shape, static_cast<double>(big.elements()));
}

Tensor ModelBuilder::Dense(const Tensor& x, int64_t units,
                           const std::string& activation,
                           const std::string& name) {
  auto scope = Scope(name);
  const Tensor w = Parameter("kernel", {x.dim(-1), units});
  const Tensor b = Parameter("bias", {units});
  Tensor y = BiasAdd(MatMul(x, w), b);
  return activation.empty() ? y : Unary(activation, y);
}

Tensor ModelBuilder::Conv2D(const Tensor& x, int64_t filters, int64_t kernel_h,
                            int64_t kernel_w, int64_t stride,
                            bool same_padding) {
  return Conv2D(x,
                Parameter("weights", {kernel_h, kernel_w, x.dim(3), filters}),
                stride, same_padding);
}

Tensor ModelBuilder::Conv2D(const Tensor& x, const Tensor& filter,
                            int64_t stride, bool same_padding) {
  const int64_t kernel_h = filter.dim(0), kernel_w = filter.dim(1);
  const std::vector<int64_t> shape = {
      x.dim(0), WindowOutput(x.dim(1), kernel_h, stride, same_padding),
      WindowOutput(x.dim(2), kernel_w, stride, same_padding), filter.dim(3)};
  const double flops = 2.0 * shape[0] * shape[1] * shape[2] * shape[3] *
                       kernel_h * kernel_w * x.dim(3);
  return Op("Conv2D", {x, filter}, shape, flops);
}

Tensor ModelBuilder::BatchNorm(const Tensor& x, bool scale) {
  const Tensor gamma =
      scale ? Parameter("gamma", {x.dim(-1)}) : Const("ones", {x.dim(-1)});
  const Tensor beta = Parameter("beta", {x.dim(-1)});
  // Mean, variance, normalise, scale, shift: about 8 FLOPs per element.
  return Op("FusedBatchNorm", {x, gamma, beta}, x.shape, 8.0 * x.elements());
}

Tensor ModelBuilder::LayerNorm(const Tensor& x) {
  const Tensor gamma = Parameter("gamma", {x.dim(-1)});
  const Tensor beta = Parameter("beta", {x.dim(-1)});
  return Op("LayerNorm", {x, gamma, beta}, x.shape, 8.0 * x.elements());
}

Tensor ModelBuilder::Pool(const std::string& type, const Tensor& x,
                          int64_t kernel, int64_t stride, bool same_padding) {
  const std::vector<int64_t> shape = {
      x.dim(0), WindowOutput(x.dim(1), kernel, stride, same_padding),
      WindowOutput(x.dim(2), kernel, stride, same_padding), x.dim(3)};
  const double flops = static_cast<double>(shape[0]) * shape[1] * shape[2] *
                       shape[3] * kernel * kernel;
  return Op(type, {x}, shape, flops);
}

Tensor ModelBuilder::Concat(const std::vector<Tensor>& inputs, int axis) {
  std::vector<int64_t> shape = inputs[0].shape;
  const size_t a = axis < 0 ? shape.size() + axis : axis;
  shape[a] = 0;
  for (const Tensor& t : inputs) shape[a] += t.shape[a];
  return Op("ConcatV2", inputs, std::move(shape), 0);
}

std::vector<Tensor> ModelBuilder::Split(const Tensor& x, int axis, int parts) {
  std::vector<int64_t> shape = x.shape;
  const size_t a = axis < 0 ? shape.size() + axis : axis;
  shape[a] /= parts;
  return MultiOp("Split", {x}, std::vector<std::vector<int64_t>>(parts, shape),
                 0);
}

Tensor ModelBuilder::Reshape(const Tensor& x, std::vector<int64_t> shape) {
  return Op("Reshape", {x}, std::move(shape), 0);
}

Tensor ModelBuilder::Softmax(const Tensor& x) { return Unary("Softmax", x, 5); }

Tensor ModelBuilder::Dropout(const Tensor& x) {
  auto scope = Scope("dropout");
  // The random numbers do not depend on x (their shape is static), so no
  // gradient flows into them.
  const Tensor random = Op("RandomUniform", {}, x.shape,
                           static_cast<double>(x.elements()), "random_uniform");
  const Tensor keep = Const("keep_prob", {});
  const Tensor mask = Unary("Floor", Binary("Add", random, keep));
  return Binary("Mul", Binary("RealDiv", x, keep), mask);
}

Tensor ModelBuilder::Embedding(const Tensor& ids, int64_t vocab, int64_t dim,
                               const std::string& name) {
  auto scope = Scope(name);
  const Tensor table = Parameter("embedding", {vocab, dim});
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(dim);
  return Op("GatherV2", {table, ids}, std::move(shape), 0);
}

StatusOr<Graph> ModelBuilder::Build() && { return std::move(builder_).Build(); }

}  // namespace dplace
