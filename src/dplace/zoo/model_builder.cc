#include "dplace/zoo/model_builder.h"

#include <algorithm>

namespace dplace {
namespace {

// Output size of a convolution or pooling window along one dimension.
int64_t WindowOutput(int64_t in, int64_t kernel, int64_t stride, bool same) {
  return same ? (in + stride - 1) / stride : (in - kernel) / stride + 1;
}

// Numpy broadcasting of two shapes.
std::vector<int64_t> BroadcastShape(const std::vector<int64_t>& a,
                                    const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

int64_t Tensor::elements() const { return Elements(shape); }

ModelBuilder::ModelBuilder(std::string graph_name)
    : builder_(std::move(graph_name)) {}

ModelBuilder::ScopeGuard ModelBuilder::Scope(const std::string& name) {
  scopes_.push_back({name, true});
  return ScopeGuard(this);
}

ModelBuilder::ScopeGuard ModelBuilder::NameScope(const std::string& name) {
  scopes_.push_back({name, false});
  return ScopeGuard(this);
}

std::string ModelBuilder::scope() const {
  std::string s;
  for (const ScopePart& part : scopes_) {
    if (part.in_scope_path) s += (s.empty() ? "" : "/") + part.name;
  }
  return s;
}

std::string ModelBuilder::UniqueName(const std::string& base) {
  std::string name;
  for (const ScopePart& part : scopes_) name += part.name + "/";
  name += base;
  const int count = name_counts_[name]++;
  if (count > 0) name += "_" + std::to_string(count);
  return name;
}

OpId ModelBuilder::AddOp(OpSpec spec, const std::vector<Tensor>& inputs) {
  spec.scope = scope();
  if (spec.colocation_group.empty()) spec.colocation_group = colocation_;
  for (const Tensor& t : inputs) spec.bytes_accessed += t.bytes();
  for (TensorInfo& t : spec.outputs) {
    if (t.bytes == 0) t.bytes = ShapeBytes(t.shape, t.dtype);
    spec.bytes_accessed += t.bytes;
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

Variable ModelBuilder::StateVariable(const std::string& name,
                                     std::vector<int64_t> shape) {
  OpSpec s;
  s.name = UniqueName(name);
  s.type = "VariableV2";
  s.persistent_bytes = ShapeBytes(shape, DataType::kFloat32);
  s.outputs.push_back({shape, DataType::kFloat32, 0});
  // TF colocates a variable's read with it ("<variable>/read").
  OpSpec read;
  read.name = s.name + "/read";
  read.type = "Identity";
  read.colocation_group = s.name;
  read.outputs.push_back({shape, DataType::kFloat32, 0});
  s.colocation_group = s.name;
  std::string variable_name = s.name;
  const Tensor ref{AddOp(std::move(s), {}), 0, shape};
  const Tensor value{AddOp(std::move(read), {ref}), 0, std::move(shape)};
  return {ref, value, std::move(variable_name)};
}

Tensor ModelBuilder::Parameter(const std::string& name,
                               std::vector<int64_t> shape) {
  return StateVariable(name, std::move(shape)).value;
}

Tensor ModelBuilder::Const(const std::string& name, std::vector<int64_t> shape,
                           DataType dtype) {
  OpSpec s;
  s.name = UniqueName(name);
  s.type = "Const";
  s.outputs.push_back({shape, dtype, 0});
  return {AddOp(std::move(s), {}), 0, std::move(shape), dtype};
}

Tensor ModelBuilder::IntConst(const std::string& name, int64_t n) {
  return Const(name, n == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{n},
               DataType::kInt32);
}

std::vector<Tensor> ModelBuilder::MultiOp(
    const std::string& type, const std::vector<Tensor>& inputs,
    const std::vector<std::vector<int64_t>>& shapes, double flops,
    const std::string& name, DataType dtype) {
  OpSpec s;
  s.name = UniqueName(name.empty() ? type : name);
  s.type = type;
  s.flops = flops;
  for (const auto& shape : shapes) s.outputs.push_back({shape, dtype, 0});
  const OpId op = AddOp(std::move(s), inputs);
  std::vector<Tensor> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    out.push_back({op, static_cast<int>(i), shapes[i], dtype});
  }
  return out;
}

Tensor ModelBuilder::Op(const std::string& type,
                        const std::vector<Tensor>& inputs,
                        std::vector<int64_t> shape, double flops,
                        const std::string& name, DataType dtype) {
  return MultiOp(type, inputs, {std::move(shape)}, flops, name, dtype)[0];
}

Tensor ModelBuilder::MatMul(const Tensor& a, const Tensor& b) {
  const double flops = 2.0 * a.dim(0) * a.dim(1) * b.dim(1);
  return Op("MatMul", {a, b}, {a.dim(0), b.dim(1)}, flops);
}

Tensor ModelBuilder::BatchMatMul(const Tensor& a, const Tensor& b,
                                 bool transpose_b) {
  std::vector<int64_t> shape = a.shape;
  shape.back() = transpose_b ? b.dim(-2) : b.dim(-1);
  const double flops =
      2.0 * (a.elements() / a.dim(-1)) * a.dim(-1) * shape.back();
  return Op("BatchMatMul", {a, b}, std::move(shape), flops);
}

Tensor ModelBuilder::BiasAdd(const Tensor& x, const Tensor& bias) {
  return Op("BiasAdd", {x, bias}, x.shape, static_cast<double>(x.elements()));
}

Tensor ModelBuilder::Unary(const std::string& type, const Tensor& x,
                           double flops_per_element) {
  return Op(type, {x}, x.shape, flops_per_element * x.elements());
}

Tensor ModelBuilder::Binary(const std::string& type, const Tensor& a,
                            const Tensor& b, const std::string& name) {
  std::vector<int64_t> shape = BroadcastShape(a.shape, b.shape);
  const double flops = static_cast<double>(Elements(shape));
  return Op(type, {a, b}, std::move(shape), flops, name);
}

Tensor ModelBuilder::WithScalar(const std::string& type, const Tensor& x,
                                const std::string& name) {
  return Binary(type, x, Const(name, {}));
}

Tensor ModelBuilder::Dense(const Tensor& x, int64_t units,
                           const std::string& activation,
                           const std::string& name, bool bias) {
  auto scope = Scope(name);
  const Tensor w = Parameter("kernel", {x.dim(-1), units});
  Tensor y = MatMul(x, w);
  if (bias) y = BiasAdd(y, Parameter("bias", {units}));
  return activation.empty() ? y : Unary(activation, y);
}

Tensor ModelBuilder::Dense3D(const Tensor& x, int64_t units,
                             const std::string& name) {
  auto scope = Scope(name);
  const Tensor w = Parameter("kernel", {x.dim(-1), units});
  auto dot = NameScope("Tensordot");
  const Tensor flat = Reshape(x, {x.elements() / x.dim(-1), x.dim(-1)});
  std::vector<int64_t> shape = x.shape;
  shape.back() = units;
  return Reshape(MatMul(flat, w), std::move(shape));
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

Tensor ModelBuilder::Reduce(const std::string& type, const Tensor& x,
                            const std::vector<int>& axes, bool keep_dims,
                            const std::string& name) {
  const std::string base = name.empty() ? type : name;
  const Tensor indices =
      IntConst(base + "/reduction_indices", static_cast<int64_t>(axes.size()));
  std::vector<int64_t> shape;
  for (int i = 0; i < x.rank(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) {
      shape.push_back(x.dim(i));
    } else if (keep_dims) {
      shape.push_back(1);
    }
  }
  return Op(type, {x, indices}, std::move(shape),
            static_cast<double>(x.elements()), base);
}

std::pair<Tensor, Tensor> ModelBuilder::Moments(const Tensor& x,
                                                const std::vector<int>& axes,
                                                bool keep_dims) {
  auto scope = Scope("moments");
  Tensor mean = Reduce("Mean", x, axes, true, "mean");
  const Tensor stopped = Unary("StopGradient", mean, 0);
  const Tensor squared = Op("SquaredDifference", {x, stopped}, x.shape,
                            2.0 * x.elements(), "SquaredDifference");
  Tensor variance = Reduce("Mean", squared, axes, true, "variance");
  if (!keep_dims) {
    mean = Squeeze(mean, axes);
    variance = Squeeze(variance, axes);
  }
  return {mean, variance};
}

Tensor ModelBuilder::Normalize(const Tensor& x, const Tensor& mean,
                               const Tensor& variance, const Tensor& offset,
                               const Tensor* scale) {
  auto s = Scope("batchnorm");
  Tensor inv = Unary("Rsqrt", WithScalar("Add", variance, "add/y"), 2);
  if (scale) inv = Binary("Mul", inv, *scale, "mul");
  const Tensor scaled = Binary("Mul", x, inv, "mul_1");
  const Tensor shift =
      Binary("Sub", offset, Binary("Mul", mean, inv, "mul_2"), "sub");
  return Binary("Add", scaled, shift, "add_1");
}

Tensor ModelBuilder::BatchNorm(const Tensor& x, bool scale) {
  auto s = Scope("BatchNorm");
  const int64_t channels = x.dim(-1);
  const Tensor beta = Parameter("beta", {channels});
  Tensor gamma;
  if (scale) gamma = Parameter("gamma", {channels});
  const Variable moving_mean = StateVariable("moving_mean", {channels});
  const Variable moving_variance = StateVariable("moving_variance", {channels});
  std::vector<int> axes;
  for (int i = 0; i + 1 < x.rank(); ++i) axes.push_back(i);
  const auto [mean, variance] = Moments(x, axes, /*keep_dims=*/false);
  // assign_moving_average(variable, value, decay), colocated with the
  // variable: variable -= (variable - value) * (1 - decay).
  const std::pair<const Variable*, const Tensor*> averages[] = {
      {&moving_mean, &mean}, {&moving_variance, &variance}};
  for (const auto& [variable, value] : averages) {
    auto average = NameScope(variable == &moving_mean ? "AssignMovingAvg"
                                                      : "AssignMovingAvg_1");
    colocation_ = variable->name;
    const Tensor delta =
        Binary("Mul", Binary("Sub", variable->value, *value, "sub"),
               Const("decay", {}), "mul");
    Op("AssignSub", {variable->ref, delta}, {channels},
       static_cast<double>(channels), "AssignSub");
    colocation_.clear();
  }
  return Normalize(x, mean, variance, beta, scale ? &gamma : nullptr);
}

Tensor ModelBuilder::LayerNorm(const Tensor& x) {
  auto s = Scope("LayerNorm");
  const Tensor beta = Parameter("beta", {x.dim(-1)});
  const Tensor gamma = Parameter("gamma", {x.dim(-1)});
  const int last = static_cast<int>(x.rank()) - 1;
  const auto [mean, variance] = Moments(x, {last}, /*keep_dims=*/true);
  return Normalize(x, mean, variance, beta, &gamma);
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
  std::vector<Tensor> operands = inputs;
  operands.push_back(IntConst("concat/axis"));
  return Op("ConcatV2", operands, std::move(shape), 0, "concat");
}

std::vector<Tensor> ModelBuilder::Split(const Tensor& x, int axis, int parts) {
  std::vector<int64_t> shape = x.shape;
  const size_t a = axis < 0 ? shape.size() + axis : axis;
  shape[a] /= parts;
  const Tensor split_dim = IntConst("split/split_dim");
  return MultiOp("Split", {split_dim, x},
                 std::vector<std::vector<int64_t>>(parts, shape), 0, "split");
}

Tensor ModelBuilder::Pack(const std::vector<Tensor>& inputs, int axis) {
  std::vector<int64_t> shape = inputs[0].shape;
  const size_t a = axis < 0 ? shape.size() + 1 + axis : axis;
  shape.insert(shape.begin() + a, static_cast<int64_t>(inputs.size()));
  return Op("Pack", inputs, std::move(shape), 0, "stack");
}

std::vector<Tensor> ModelBuilder::Unpack(const Tensor& x, int axis) {
  std::vector<int64_t> shape = x.shape;
  const size_t a = axis < 0 ? shape.size() + axis : axis;
  const int64_t n = shape[a];
  shape.erase(shape.begin() + a);
  return MultiOp("Unpack", {x}, std::vector<std::vector<int64_t>>(n, shape), 0,
                 "unstack", x.dtype);
}

Tensor ModelBuilder::Reshape(const Tensor& x, std::vector<int64_t> shape) {
  const Tensor target =
      IntConst("Reshape/shape", static_cast<int64_t>(shape.size()));
  return Op("Reshape", {x, target}, std::move(shape), 0, "Reshape", x.dtype);
}

Tensor ModelBuilder::Transpose(const Tensor& x, const std::vector<int>& perm) {
  std::vector<int64_t> shape;
  for (int p : perm) shape.push_back(x.dim(p));
  const Tensor permutation =
      IntConst("transpose/perm", static_cast<int64_t>(perm.size()));
  return Op("Transpose", {x, permutation}, std::move(shape), 0, "transpose",
            x.dtype);
}

Tensor ModelBuilder::ExpandDims(const Tensor& x, int axis) {
  std::vector<int64_t> shape = x.shape;
  const size_t a = axis < 0 ? shape.size() + 1 + axis : axis;
  shape.insert(shape.begin() + a, 1);
  const Tensor dim = IntConst("ExpandDims/dim");
  return Op("ExpandDims", {x, dim}, std::move(shape), 0, "ExpandDims", x.dtype);
}

Tensor ModelBuilder::Squeeze(const Tensor& x, const std::vector<int>& axes) {
  std::vector<int64_t> shape;
  for (int i = 0; i < x.rank(); ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      shape.push_back(x.dim(i));
    }
  }
  return Op("Squeeze", {x}, std::move(shape), 0, "Squeeze", x.dtype);
}

Tensor ModelBuilder::Softmax(const Tensor& x) { return Unary("Softmax", x, 5); }

Tensor ModelBuilder::Dropout(const Tensor& x) {
  auto name = NameScope("dropout");
  const Tensor keep = Const("keep_prob", {});
  const Tensor shape =
      Op("Shape", {x}, {x.rank()}, 0, "Shape", DataType::kInt32);
  // random_uniform(shape, 0, 1): RandomUniform * (max - min) + min.
  const Tensor min = Const("random_uniform/min", {});
  const Tensor max = Const("random_uniform/max", {});
  const Tensor raw =
      Op("RandomUniform", {shape}, x.shape, static_cast<double>(x.elements()),
         "random_uniform/RandomUniform");
  const Tensor random =
      Binary("Add",
             Binary("Mul", raw, Binary("Sub", max, min, "random_uniform/sub"),
                    "random_uniform/mul"),
             min, "random_uniform");
  const Tensor mask = Unary("Floor", Binary("Add", keep, random, "add"));
  return Binary("Mul", Binary("RealDiv", x, keep, "div"), mask, "mul");
}

Tensor ModelBuilder::Embedding(const Tensor& ids, int64_t vocab, int64_t dim,
                               const std::string& name) {
  auto scope = Scope(name);
  const Tensor table = Parameter("embedding", {vocab, dim});
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(dim);
  return Op("GatherV2", {table, ids, IntConst("embedding_lookup/axis")},
            std::move(shape), 0, "embedding_lookup");
}

Tensor ModelBuilder::SparseSoftmaxCrossEntropy(const Tensor& logits,
                                               const Tensor& labels) {
  const int64_t batch = logits.dim(0);
  return MultiOp("SparseSoftmaxCrossEntropyWithLogits", {logits, labels},
                 {{batch}, logits.shape}, 5.0 * logits.elements())[0];
}

StatusOr<Graph> ModelBuilder::Build() && { return std::move(builder_).Build(); }

}  // namespace dplace
