// The kernel of every op type real execution runs (kernels.h): one table
// from op type to a LibTorch call of the op's shapes. Over 800 lines, kept
// as one file: a kernel per op type, each a few lines, found by its type.
#include "dplace/exec/kernels.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace dplace {
namespace exec_internal {
namespace {

using at::Tensor;
using Outputs = std::vector<Tensor>;

[[noreturn]] void Refuse(const std::string& why) {
  throw std::invalid_argument(why);
}

const TensorInfo& Out(const KernelArgs& args, size_t i = 0) {
  if (args.outputs->size() <= i) Refuse("no output " + std::to_string(i));
  return (*args.outputs)[i];
}

Tensor Input(const KernelArgs& args, size_t i) {
  if (args.inputs.size() <= i) Refuse("no input " + std::to_string(i));
  return args.inputs[i];
}

bool IsFloating(const Tensor& t) { return at::isFloatingType(t.scalar_type()); }

// Inputs that carry data rather than shapes or indices: floating point
// tensors.
std::vector<Tensor> FloatInputs(const KernelArgs& args) {
  std::vector<Tensor> result;
  for (const Tensor& t : args.inputs) {
    if (IsFloating(t)) result.push_back(t);
  }
  return result;
}

Tensor NewOutput(const KernelArgs& args, size_t i = 0) {
  return at::empty(DeclaredSizes(Out(args, i)),
                   args.options.dtype(ScalarTypeOf(Out(args, i).dtype)));
}

// ---- Element-wise -------------------------------------------------------

template <Tensor (*F)(const Tensor&)>
Outputs Unary(const KernelArgs& args) {
  return {F(Input(args, 0))};
}

Tensor Square(const Tensor& x) { return at::mul(x, x); }
Tensor Copy(const Tensor& x) { return x.clone(); }
Tensor View(const Tensor& x) { return x; }
Tensor Relu(const Tensor& x) { return at::relu(x); }
Tensor Sigmoid(const Tensor& x) { return at::sigmoid(x); }
Tensor Tanh(const Tensor& x) { return at::tanh(x); }
Tensor Exp(const Tensor& x) { return at::exp(x); }
Tensor Log(const Tensor& x) { return at::log(x); }
Tensor Neg(const Tensor& x) { return at::neg(x); }
Tensor Sqrt(const Tensor& x) { return at::sqrt(x); }
Tensor Rsqrt(const Tensor& x) { return at::rsqrt(x); }
Tensor Floor(const Tensor& x) { return at::floor(x); }
Tensor Abs(const Tensor& x) { return at::abs(x); }
Tensor Reciprocal(const Tensor& x) { return at::reciprocal(x); }
Tensor Erf(const Tensor& x) { return at::erf(x); }
Tensor Cast(const Tensor& x) { return x.to(at::kFloat); }
Tensor Zeros(const Tensor& x) { return at::zeros_like(x); }
Tensor Ones(const Tensor& x) { return at::ones_like(x); }

// With one input (a constant operand folded away), the input twice.
template <Tensor (*F)(const Tensor&, const Tensor&)>
Outputs Binary(const KernelArgs& args) {
  const Tensor a = Input(args, 0);
  Tensor c = F(a, args.inputs.size() > 1 ? args.inputs[1] : a);
  if (c.numel() == 1 && args.outputs->size() == 1) {  // A broadcast scalar.
    c = c.expand(DeclaredSizes(Out(args))).contiguous();
  }
  return {c};
}

Tensor Add(const Tensor& a, const Tensor& b) { return at::add(a, b); }
Tensor Sub(const Tensor& a, const Tensor& b) { return at::sub(a, b); }
Tensor Mul(const Tensor& a, const Tensor& b) { return at::mul(a, b); }
// Integer operands are shapes and indices of random values: divisors are
// kept away from zero.
Tensor Divisor(const Tensor& b) {
  return IsFloating(b) ? b : at::abs(b).add_(1);
}
Tensor Div(const Tensor& a, const Tensor& b) { return at::div(a, Divisor(b)); }
Tensor Maximum(const Tensor& a, const Tensor& b) { return at::maximum(a, b); }
Tensor Minimum(const Tensor& a, const Tensor& b) { return at::minimum(a, b); }
Tensor Pow(const Tensor& a, const Tensor& b) { return at::pow(a, b); }
Tensor Less(const Tensor& a, const Tensor& b) { return at::lt(a, b); }
Tensor Greater(const Tensor& a, const Tensor& b) { return at::gt(a, b); }
Tensor Equal(const Tensor& a, const Tensor& b) { return at::eq(a, b); }
Tensor FloorDiv(const Tensor& a, const Tensor& b) {
  return at::div(a, Divisor(b), "floor");
}
Tensor FloorMod(const Tensor& a, const Tensor& b) {
  return at::remainder(a, Divisor(b));
}
Tensor SquaredDifference(const Tensor& a, const Tensor& b) {
  Tensor d = at::sub(a, b);
  return d.mul_(d);
}
// Gradients of y = f(x), given y (or x) and dy, as TensorFlow orders them.
Tensor SigmoidGrad(const Tensor& y, const Tensor& dy) {
  return at::sigmoid_backward(dy, y);
}
Tensor TanhGrad(const Tensor& y, const Tensor& dy) {
  return at::tanh_backward(dy, y);
}
Tensor ReluGrad(const Tensor& dy, const Tensor& x) {
  return at::threshold_backward(dy, x, 0);
}
Tensor RsqrtGrad(const Tensor& y, const Tensor& dy) {
  return at::mul(dy, at::pow(y, 3)).mul_(-0.5);
}
Tensor SqrtGrad(const Tensor& y, const Tensor& dy) {
  return at::div(dy, y).mul_(0.5);
}

Outputs AddN(const KernelArgs& args) {
  std::vector<Tensor> in = FloatInputs(args);
  if (in.empty()) Refuse("no floating-point input");
  Tensor sum = in[0].clone();
  for (size_t i = 1; i < in.size(); ++i) sum.add_(in[i]);
  return {sum};
}

Outputs Select(const KernelArgs& args) {
  Tensor cond = Input(args, 0);
  Tensor t = Input(args, 1);
  Tensor e = Input(args, 2);
  if (cond.dim() == 1 && t.dim() > 1) {  // TF1: selects rows.
    std::vector<int64_t> shape(t.dim(), 1);
    shape[0] = cond.size(0);
    cond = cond.view(shape);
  }
  return {at::where(cond.to(at::kBool), t, e)};
}

// ---- Dense linear algebra ----------------------------------------------

// Orients `a` and `b` (transposed or not, in either order: graphs keep
// neither the flags nor always the operand order) so that the product has
// the declared [..., m, n].
Outputs MatMul(const KernelArgs& args) {
  const Tensor a = Input(args, 0);
  const Tensor b = Input(args, 1);
  const std::vector<int64_t>& out = Out(args).shape;
  if (a.dim() < 2 || b.dim() < 2 || out.size() < 2) Refuse("not a matmul");
  const int64_t m = out[out.size() - 2];
  const int64_t n = out.back();
  for (int flags = 0; flags < 8; ++flags) {  // Operand order as well.
    const Tensor& p = flags & 4 ? b : a;
    const Tensor& q = flags & 4 ? a : b;
    const Tensor x = flags & 1 ? p.transpose(-1, -2) : p;
    const Tensor y = flags & 2 ? q.transpose(-1, -2) : q;
    if (x.size(-2) != m || y.size(-1) != n || x.size(-1) != y.size(-2)) {
      continue;
    }
    Tensor c = at::matmul(x, y);
    if (args.inputs.size() > 2 && IsFloating(args.inputs[2])) {
      c.add_(args.inputs[2]);  // Gemm's C.
    }
    return {c};
  }
  Refuse("operand shapes do not give the output");
}

// ---- Convolutions (TensorFlow's NHWC activations, HWIO filters) --------

struct Window {
  int64_t stride[2];
  int64_t pad[2];
};

// The stride and symmetric padding that take `in` to `out` with `kernel`:
// stride from the ratio, padding as SAME (or none, VALID) would need.
Window WindowOf(const int64_t in[2], const int64_t out[2],
                const int64_t kernel[2]) {
  Window w;
  for (int i = 0; i < 2; ++i) {
    w.stride[i] = std::max<int64_t>(1, (in[i] + out[i] - 1) / out[i]);
    const int64_t need = (out[i] - 1) * w.stride[i] + kernel[i] - in[i];
    w.pad[i] = std::max<int64_t>(0, (need + 1) / 2);
  }
  return w;
}

Tensor Nchw(const Tensor& nhwc) { return nhwc.permute({0, 3, 1, 2}); }
Tensor Nhwc(const Tensor& nchw) { return nchw.permute({0, 2, 3, 1}); }
// HWIO -> OIHW.
Tensor Oihw(const Tensor& hwio) { return hwio.permute({3, 2, 0, 1}); }

void Require4d(const Tensor& t, const char* what) {
  if (t.dim() != 4) Refuse(std::string(what) + " is not 4-D");
}

Outputs Conv2D(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  Tensor f = Input(args, 1);
  Require4d(x, "input");
  Require4d(f, "filter");
  const std::vector<int64_t>& out = Out(args).shape;
  if (out.size() != 4) Refuse("output is not 4-D");
  const int64_t in_hw[2] = {x.size(1), x.size(2)};
  const int64_t out_hw[2] = {out[1], out[2]};
  const int64_t k[2] = {f.size(0), f.size(1)};
  const Window w = WindowOf(in_hw, out_hw, k);
  Tensor y =
      at::convolution(Nchw(x).contiguous(at::MemoryFormat::ChannelsLast),
                      Oihw(f), {}, w.stride, w.pad, {1, 1}, false, {0, 0}, 1);
  return {Nhwc(y)};
}

// Inputs: input sizes, filter, output gradient.
Outputs Conv2DBackpropInput(const KernelArgs& args) {
  Tensor f = Input(args, 1);
  Tensor dy = Input(args, 2);
  Require4d(f, "filter");
  Require4d(dy, "output gradient");
  const std::vector<int64_t>& dx = Out(args).shape;
  if (dx.size() != 4) Refuse("output is not 4-D");
  const int64_t in_hw[2] = {dx[1], dx[2]};
  const int64_t out_hw[2] = {dy.size(1), dy.size(2)};
  const int64_t k[2] = {f.size(0), f.size(1)};
  const Window w = WindowOf(in_hw, out_hw, k);
  Tensor input =
      at::empty({dx[0], dx[3], dx[1], dx[2]},
                dy.options().memory_format(at::MemoryFormat::ChannelsLast));
  auto grads = at::convolution_backward(
      Nchw(dy).contiguous(at::MemoryFormat::ChannelsLast), input, Oihw(f),
      c10::nullopt, w.stride, w.pad, {1, 1}, false, {0, 0}, 1,
      {true, false, false});
  return {Nhwc(std::get<0>(grads))};
}

// Inputs: input, filter sizes, output gradient.
Outputs Conv2DBackpropFilter(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  Tensor dy = Input(args, 2);
  Require4d(x, "input");
  Require4d(dy, "output gradient");
  const std::vector<int64_t>& df = Out(args).shape;  // HWIO.
  if (df.size() != 4) Refuse("output is not 4-D");
  const int64_t in_hw[2] = {x.size(1), x.size(2)};
  const int64_t out_hw[2] = {dy.size(1), dy.size(2)};
  const int64_t k[2] = {df[0], df[1]};
  const Window w = WindowOf(in_hw, out_hw, k);
  Tensor weight = at::empty({df[3], df[2], df[0], df[1]}, dy.options());
  auto grads = at::convolution_backward(
      Nchw(dy).contiguous(at::MemoryFormat::ChannelsLast),
      Nchw(x).contiguous(at::MemoryFormat::ChannelsLast), weight, c10::nullopt,
      w.stride, w.pad, {1, 1}, false, {0, 0}, 1, {false, true, false});
  return {std::get<1>(grads).permute({2, 3, 1, 0})};
}

// Pooling windows from the shapes: stride from the ratio, the kernel that
// covers the input without padding (VALID), at least the stride.
Window PoolWindow(const int64_t in[2], const int64_t out[2],
                  int64_t kernel[2]) {
  Window w;
  for (int i = 0; i < 2; ++i) {
    w.stride[i] = std::max<int64_t>(1, in[i] / std::max<int64_t>(out[i], 1));
    kernel[i] =
        std::max<int64_t>(w.stride[i], in[i] - (out[i] - 1) * w.stride[i]);
    w.pad[i] = 0;
  }
  return w;
}

template <bool kMax>
Outputs Pool(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  Require4d(x, "input");
  const std::vector<int64_t>& out = Out(args).shape;
  if (out.size() != 4) Refuse("output is not 4-D");
  const int64_t in_hw[2] = {x.size(1), x.size(2)};
  const int64_t out_hw[2] = {out[1], out[2]};
  int64_t k[2];
  const Window w = PoolWindow(in_hw, out_hw, k);
  Tensor xn = Nchw(x).contiguous(at::MemoryFormat::ChannelsLast);
  Tensor y = kMax ? at::max_pool2d(xn, k, w.stride, w.pad)
                  : at::avg_pool2d(xn, k, w.stride, w.pad);
  return {Nhwc(y)};
}

// Inputs: original input, original output, output gradient.
Outputs MaxPoolGrad(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  Tensor dy = Input(args, 2);
  Require4d(x, "input");
  Require4d(dy, "output gradient");
  const int64_t in_hw[2] = {x.size(1), x.size(2)};
  const int64_t out_hw[2] = {dy.size(1), dy.size(2)};
  int64_t k[2];
  const Window w = PoolWindow(in_hw, out_hw, k);
  Tensor xn = Nchw(x).contiguous(at::MemoryFormat::ChannelsLast);
  auto pooled = at::max_pool2d_with_indices(xn, k, w.stride, w.pad);
  Tensor dx = at::max_pool2d_with_indices_backward(
      Nchw(dy).contiguous(at::MemoryFormat::ChannelsLast), xn, k, w.stride,
      w.pad, {1, 1}, false, std::get<1>(pooled));
  return {Nhwc(dx)};
}

// Inputs: original input sizes, output gradient.
Outputs AvgPoolGrad(const KernelArgs& args) {
  Tensor dy = Input(args, 1);
  Require4d(dy, "output gradient");
  const std::vector<int64_t>& dx = Out(args).shape;
  if (dx.size() != 4) Refuse("output is not 4-D");
  const int64_t in_hw[2] = {dx[1], dx[2]};
  const int64_t out_hw[2] = {dy.size(1), dy.size(2)};
  int64_t k[2];
  const Window w = PoolWindow(in_hw, out_hw, k);
  Tensor input =
      at::empty({dx[0], dx[3], dx[1], dx[2]},
                dy.options().memory_format(at::MemoryFormat::ChannelsLast));
  Tensor grad = at::avg_pool2d_backward(
      Nchw(dy).contiguous(at::MemoryFormat::ChannelsLast), input, k, w.stride,
      w.pad, false, true, c10::nullopt);
  return {Nhwc(grad)};
}

// ---- Reductions ---------------------------------------------------------

// The input dims the declared output drops, matching kept dims in order
// (size-1 dims of the output, kept by keep_dims, are ignored).
std::vector<int64_t> ReducedDims(const Tensor& x, const TensorInfo& out) {
  std::vector<int64_t> kept;
  for (int64_t d : out.shape) {
    if (d != 1) kept.push_back(d);
  }
  std::vector<int64_t> reduced;
  size_t next = 0;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (next < kept.size() && x.size(i) == kept[next]) {
      ++next;
    } else {
      reduced.push_back(i);
    }
  }
  if (next != kept.size()) Refuse("output dims are not input dims");
  return reduced;
}

template <bool kMean>
Outputs Reduce(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  std::vector<int64_t> dims = ReducedDims(x, Out(args));
  if (dims.empty()) return {x.clone()};
  return {kMean ? at::mean(x, dims) : at::sum(x, dims)};
}

Outputs L2Loss(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  return {at::mul(x, x).sum().mul_(0.5)};
}

// ---- Softmax and losses -------------------------------------------------

Outputs Softmax(const KernelArgs& args) {
  return {at::softmax(Input(args, 0), -1)};
}

Outputs LogSoftmax(const KernelArgs& args) {
  return {at::log_softmax(Input(args, 0), -1)};
}

// Outputs: loss [N], gradient [N, C]. Labels are dense (one-hot) or
// class ids.
Outputs SoftmaxCrossEntropy(const KernelArgs& args) {
  Tensor logits = Input(args, 0);
  Tensor labels = Input(args, 1);
  if (logits.dim() != 2) Refuse("logits are not 2-D");
  Tensor log_p = at::log_softmax(logits, -1);
  Tensor p = at::exp(log_p);
  if (IsFloating(labels)) {
    Tensor loss = at::mul(labels, log_p).sum(-1).neg_();
    return {loss, p.sub_(labels)};
  }
  Tensor ids = labels.to(at::kLong).remainder(logits.size(1));
  Tensor loss = at::nll_loss(log_p, ids, {}, at::Reduction::None);
  p.scatter_add_(1, ids.unsqueeze(1),
                 at::full({ids.size(0), 1}, -1.0, p.options()));
  return {loss, p};
}

// ---- Gathers and scatters -----------------------------------------------

Tensor Rows(const Tensor& ids, int64_t rows) {
  return ids.to(at::kLong).remainder(rows).flatten();
}

// Inputs: params, indices, axis.
Outputs Gather(const KernelArgs& args) {
  Tensor params = Input(args, 0);
  Tensor ids = Input(args, 1);
  if (params.dim() < 1) Refuse("params is a scalar");
  return {at::index_select(params, 0, Rows(ids, params.size(0)))};
}

// Inputs: data, segment ids, number of segments.
Outputs UnsortedSegmentSum(const KernelArgs& args) {
  Tensor data = Input(args, 0);
  Tensor ids = Input(args, 1);
  Tensor out = NewOutput(args).zero_();
  if (out.dim() < 1) Refuse("output is a scalar");
  Tensor rows = Rows(ids, out.size(0));
  std::vector<int64_t> sizes = DeclaredSizes(Out(args));
  sizes[0] = rows.size(0);
  return {out.index_add_(0, rows, data.reshape(sizes))};
}

// ---- Data movement -------------------------------------------------------

// The axis along which `shape` differs from `out`, or -1.
int64_t DifferingAxis(const Tensor& t, const std::vector<int64_t>& out) {
  if (t.dim() != static_cast<int64_t>(out.size())) return -1;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (t.size(i) != out[i]) return i;
  }
  return -1;
}

Outputs Concat(const KernelArgs& args) {
  std::vector<Tensor> parts;
  for (const Tensor& t : args.inputs) {
    if (t.dim() == static_cast<int64_t>(Out(args).shape.size())) {
      parts.push_back(t);
    }
  }
  if (parts.empty()) Refuse("no input of the output's rank");
  int64_t axis = 0;
  for (const Tensor& t : parts) {
    const int64_t a = DifferingAxis(t, Out(args).shape);
    if (a >= 0) axis = a;
  }
  return {at::cat(parts, axis)};
}

Outputs Pack(const KernelArgs& args) {
  std::vector<Tensor> parts = FloatInputs(args);
  if (parts.empty()) parts = args.inputs;
  return {at::stack(parts, 0)};
}

// Split, SplitV and Unpack: the input of the most elements, cut along the
// axis where the first output differs from it.
Outputs Split(const KernelArgs& args) {
  Tensor x;
  for (const Tensor& t : args.inputs) {
    if (!x.defined() || t.numel() > x.numel()) x = t;
  }
  if (!x.defined()) Refuse("no input");
  const std::vector<int64_t>& first = Out(args).shape;
  const bool unpack = static_cast<int64_t>(first.size()) == x.dim() - 1;
  if (unpack) {
    int64_t axis = 0;
    while (axis < static_cast<int64_t>(first.size()) &&
           first[axis] == x.size(axis)) {
      ++axis;
    }
    Outputs parts = at::unbind(x, axis);
    for (Tensor& p : parts) p = p.contiguous();
    return parts;
  }
  const int64_t axis = std::max<int64_t>(0, DifferingAxis(x, first));
  std::vector<int64_t> sizes;
  for (const TensorInfo& o : *args.outputs) {
    if (static_cast<int64_t>(o.shape.size()) != x.dim()) Refuse("rank differs");
    sizes.push_back(o.shape[axis]);
  }
  Outputs parts = at::split_with_sizes(x, sizes, axis);
  for (Tensor& p : parts) p = p.contiguous();
  return parts;
}

// Slice, StridedSlice: the leading corner of the declared size.
Outputs Slice(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  const std::vector<int64_t>& out = Out(args).shape;
  if (x.dim() != static_cast<int64_t>(out.size())) {  // Reshaped by the graph.
    const std::vector<int64_t> sizes = DeclaredSizes(Out(args));
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    if (x.numel() < n) Refuse("input smaller than the output");
    return {x.flatten().narrow(0, 0, n).clone()};
  }
  for (int64_t i = 0; i < x.dim(); ++i) {
    x = x.narrow(i, 0, std::min(out[i], x.size(i)));
  }
  return {x.contiguous()};
}

// The input repeated to the output's size (as a flat run: the same bytes
// whatever the multiples).
Outputs Tile(const KernelArgs& args) {
  Tensor x = Input(args, 0).flatten();
  int64_t n = 1;
  for (int64_t d : DeclaredSizes(Out(args))) n *= d;
  if (x.numel() == 0) Refuse("empty input");
  return {x.repeat({(n + x.numel() - 1) / x.numel()}).narrow(0, 0, n)};
}

// The permutation that takes x's dims to the declared ones (the first
// unused dim of each size).
Outputs Transpose(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  const std::vector<int64_t>& out = Out(args).shape;
  if (x.dim() != static_cast<int64_t>(out.size())) Refuse("rank differs");
  std::vector<int64_t> perm;
  std::vector<bool> used(x.dim(), false);
  for (int64_t d : out) {
    int64_t found = -1;
    for (int64_t i = 0; i < x.dim() && found < 0; ++i) {
      if (!used[i] && x.size(i) == d) found = i;
    }
    if (found < 0) Refuse("output dims are not a permutation of the input's");
    used[found] = true;
    perm.push_back(found);
  }
  return {x.permute(perm).contiguous()};
}

Outputs Pad(const KernelArgs& args) {
  Tensor x = Input(args, 0);
  const std::vector<int64_t>& out = Out(args).shape;
  if (x.dim() != static_cast<int64_t>(out.size())) Refuse("rank differs");
  std::vector<int64_t> pad;  // Last dim first, (before, after) pairs.
  for (int64_t i = x.dim() - 1; i >= 0; --i) {
    const int64_t extra = out[i] - x.size(i);
    pad.push_back(extra / 2);
    pad.push_back(extra - extra / 2);
  }
  return {at::constant_pad_nd(x, pad, 0)};
}

// ---- Outputs made, not computed ------------------------------------------

// Shapes, ranges, constants: tiny integer outputs, allocated.
Outputs Metadata(const KernelArgs& args) {
  Outputs outs;
  for (size_t i = 0; i < args.outputs->size(); ++i) {
    outs.push_back(NewOutput(args, i));
  }
  return outs;
}

Outputs Fill(const KernelArgs& args) {
  Outputs outs;
  for (size_t i = 0; i < args.outputs->size(); ++i) {
    outs.push_back(NewOutput(args, i).fill_(1));
  }
  return outs;
}

// Random values (dropout masks) and input batches: written whole.
Outputs Random(const KernelArgs& args) {
  Outputs outs;
  for (size_t i = 0; i < args.outputs->size(); ++i) {
    Tensor t = NewOutput(args, i);
    if (IsFloating(t)) {
      t.uniform_();
    } else {
      t.random_(0, 1000);
    }
    outs.push_back(t);
  }
  return outs;
}

// ---- Variables and optimizer updates -------------------------------------

// Assign(ref, value) and friends update the variable in place.
// With one input the value was a constant folded away: the variable is
// rewritten in place all the same.
Outputs Assign(const KernelArgs& args) {
  Tensor ref = Input(args, 0);
  if (args.inputs.size() < 2) return {ref.mul_(0.9)};
  return {ref.copy_(args.inputs[1])};
}

Outputs AssignSub(const KernelArgs& args) {
  Tensor ref = Input(args, 0);
  if (args.inputs.size() < 2) return {ref.sub_(0.1)};
  return {ref.sub_(args.inputs[1])};
}

// `count` optimizer slots of the variable's size, cut from the op's
// persistent state (allocated by the executor, persistent_bytes long).
std::vector<Tensor> Slots(const KernelArgs& args, const Tensor& var,
                          int count) {
  std::vector<Tensor> slots;
  Tensor flat = args.state.defined() ? args.state.flatten() : Tensor();
  const int64_t n = var.numel();
  for (int i = 0; i < count; ++i) {
    if (flat.defined() && flat.numel() >= (i + 1) * n) {
      slots.push_back(flat.narrow(0, i * n, n).view(var.sizes()));
    } else {
      slots.push_back(at::zeros_like(var));
    }
  }
  return slots;
}

// Inputs: the variable (through an Identity) and its gradient; TF's scalar
// hyper-parameters are constants here.
std::pair<Tensor, Tensor> VarAndGrad(const KernelArgs& args) {
  std::vector<Tensor> in = FloatInputs(args);
  if (in.size() < 2) Refuse("needs a variable and a gradient");
  Tensor var = in[0];
  Tensor grad = in.back();
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].numel() == var.numel()) grad = in[i];
  }
  if (grad.numel() != var.numel())
    Refuse("gradient is not the variable's size");
  return {var, grad.view(var.sizes())};
}

Outputs ApplyGradientDescent(const KernelArgs& args) {
  auto [var, grad] = VarAndGrad(args);
  var.add_(grad, -0.01);
  return Metadata(args);
}

Outputs ApplyMomentum(const KernelArgs& args) {
  auto [var, grad] = VarAndGrad(args);
  Tensor accum = Slots(args, var, 1)[0];
  accum.mul_(0.9).add_(grad);
  var.add_(accum, -0.01);
  return Metadata(args);
}

Outputs ApplyAdam(const KernelArgs& args) {
  auto [var, grad] = VarAndGrad(args);
  std::vector<Tensor> slots = Slots(args, var, 2);
  slots[0].mul_(0.9).add_(grad, 0.1);
  slots[1].mul_(0.999).addcmul_(grad, grad, 0.001);
  var.addcdiv_(slots[0], slots[1].sqrt().add_(1e-8), -0.001);
  return Metadata(args);
}

Outputs ApplyRMSProp(const KernelArgs& args) {
  auto [var, grad] = VarAndGrad(args);
  std::vector<Tensor> slots = Slots(args, var, 2);
  slots[0].mul_(0.9).addcmul_(grad, grad, 0.1);
  slots[1].mul_(0.9).addcdiv_(grad, slots[0].add(1e-10).sqrt(), 0.001);
  var.sub_(slots[1]);
  return Metadata(args);
}

// Inputs: variable, gradient rows, row ids. Updates only those rows (and
// their slot rows), as the sparse optimizer does.
Outputs SparseApplyAdam(const KernelArgs& args) {
  Tensor var = Input(args, 0);
  Tensor grad = Input(args, 1);
  Tensor ids = Input(args, 2);
  if (var.dim() < 1) Refuse("variable is a scalar");
  Tensor rows = Rows(ids, var.size(0));
  std::vector<Tensor> slots = Slots(args, var, 2);
  std::vector<int64_t> sizes = var.sizes().vec();
  sizes[0] = rows.size(0);
  Tensor g = grad.reshape(sizes);
  Tensor m = slots[0].index_select(0, rows).mul_(0.9).add_(g, 0.1);
  Tensor v = slots[1].index_select(0, rows).mul_(0.999).addcmul_(g, g, 0.001);
  slots[0].index_copy_(0, rows, m);
  slots[1].index_copy_(0, rows, v);
  var.index_add_(0, rows, m.div(v.sqrt().add_(1e-8)).mul_(-0.001));
  return Metadata(args);
}

const std::unordered_map<std::string, Kernel>& Kernels() {
  static const auto* kernels = new std::unordered_map<std::string, Kernel>{
      // Views: no work, as in TensorFlow.
      {"Identity", Unary<View>},
      {"StopGradient", Unary<View>},
      {"PreventGradient", Unary<View>},
      {"Snapshot", Unary<Copy>},
      {"Reshape", Unary<View>},
      {"Squeeze", Unary<View>},
      {"ExpandDims", Unary<View>},
      {"Flatten", Unary<View>},
      {"Unsqueeze", Unary<View>},
      // Element-wise.
      {"Add", Binary<Add>},
      {"AddV2", Binary<Add>},
      {"BiasAdd", Binary<Add>},
      {"Sub", Binary<Sub>},
      {"Mul", Binary<Mul>},
      {"RealDiv", Binary<Div>},
      {"Div", Binary<Div>},
      {"Maximum", Binary<Maximum>},
      {"Minimum", Binary<Minimum>},
      {"Max", Binary<Maximum>},
      {"Min", Binary<Minimum>},
      {"Pow", Binary<Pow>},
      {"Less", Binary<Less>},
      {"Greater", Binary<Greater>},
      {"Equal", Binary<Equal>},
      {"FloorDiv", Binary<FloorDiv>},
      {"FloorMod", Binary<FloorMod>},
      {"SquaredDifference", Binary<SquaredDifference>},
      {"SigmoidGrad", Binary<SigmoidGrad>},
      {"TanhGrad", Binary<TanhGrad>},
      {"ReluGrad", Binary<ReluGrad>},
      {"RsqrtGrad", Binary<RsqrtGrad>},
      {"SqrtGrad", Binary<SqrtGrad>},
      {"Relu", Unary<Relu>},
      {"Sigmoid", Unary<Sigmoid>},
      {"Tanh", Unary<Tanh>},
      {"Exp", Unary<Exp>},
      {"Log", Unary<Log>},
      {"Neg", Unary<Neg>},
      {"Sqrt", Unary<Sqrt>},
      {"Rsqrt", Unary<Rsqrt>},
      {"Square", Unary<Square>},
      {"Floor", Unary<Floor>},
      {"Abs", Unary<Abs>},
      {"Reciprocal", Unary<Reciprocal>},
      {"Erf", Unary<Erf>},
      {"Cast", Unary<Cast>},
      {"ZerosLike", Unary<Zeros>},
      {"OnesLike", Unary<Ones>},
      {"AddN", AddN},
      {"Select", Select},
      {"Where", Select},
      // Dense linear algebra.
      {"MatMul", MatMul},
      {"BatchMatMul", MatMul},
      {"BatchMatMulV2", MatMul},
      {"Gemm", MatMul},
      {"Conv2D", Conv2D},
      {"Conv2DBackpropInput", Conv2DBackpropInput},
      {"Conv2DBackpropFilter", Conv2DBackpropFilter},
      {"MaxPool", Pool<true>},
      {"AvgPool", Pool<false>},
      {"MaxPoolGrad", MaxPoolGrad},
      {"AvgPoolGrad", AvgPoolGrad},
      // Reductions.
      {"Sum", Reduce<false>},
      {"Mean", Reduce<true>},
      {"BiasAddGrad", Reduce<false>},
      {"ReduceSum", Reduce<false>},
      {"ReduceMean", Reduce<true>},
      {"L2Loss", L2Loss},
      // Softmax and losses.
      {"Softmax", Softmax},
      {"LogSoftmax", LogSoftmax},
      {"SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropy},
      {"SparseSoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropy},
      // Gathers and scatters.
      {"GatherV2", Gather},
      {"Gather", Gather},
      {"UnsortedSegmentSum", UnsortedSegmentSum},
      // Data movement.
      {"ConcatV2", Concat},
      {"Concat", Concat},
      {"Pack", Pack},
      {"Split", Split},
      {"SplitV", Split},
      {"Unpack", Split},
      {"Slice", Slice},
      {"StridedSlice", Slice},
      {"Tile", Tile},
      {"Transpose", Transpose},
      {"Pad", Pad},
      // Made, not computed.
      {"Shape", Metadata},
      {"ShapeN", Metadata},
      {"Size", Metadata},
      {"Rank", Metadata},
      {"Range", Metadata},
      {"BroadcastGradientArgs", Metadata},
      {"ConcatOffset", Metadata},
      {"InvertPermutation", Metadata},
      {"NoOp", Metadata},
      {"Fill", Fill},
      {"RandomUniform", Random},
      {"RandomStandardNormal", Random},
      {"IteratorGetNext", Random},
      // Variables and optimizer updates.
      {"Assign", Assign},
      {"AssignSub", AssignSub},
      {"ApplyGradientDescent", ApplyGradientDescent},
      {"ApplyMomentum", ApplyMomentum},
      {"ApplyAdam", ApplyAdam},
      {"ApplyRMSProp", ApplyRMSProp},
      {"SparseApplyAdam", SparseApplyAdam},
  };
  return *kernels;
}

}  // namespace

std::vector<int64_t> DeclaredSizes(const TensorInfo& info) {
  std::vector<int64_t> sizes;
  for (int64_t d : info.shape) sizes.push_back(std::max<int64_t>(d, 1));
  return sizes;
}

at::ScalarType ScalarTypeOf(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return at::kFloat;
    case DataType::kFloat16:
      return at::kHalf;
    case DataType::kBFloat16:
      return at::kBFloat16;
    case DataType::kFloat64:
      return at::kDouble;
    case DataType::kInt8:
      return at::kChar;
    case DataType::kInt32:
      return at::kInt;
    case DataType::kInt64:
      return at::kLong;
    case DataType::kBool:
      return at::kBool;
  }
  return at::kFloat;
}

Kernel FindKernel(const std::string& op_type) {
  auto it = Kernels().find(op_type);
  return it == Kernels().end() ? nullptr : it->second;
}

std::vector<at::Tensor> StandInKernel(const KernelArgs& args) {
  at::Tensor acc = at::zeros({}, args.options.dtype(at::kFloat));
  for (const at::Tensor& t : args.inputs) {
    if (t.numel() > 0) acc.add_(t.sum().to(at::kFloat));
  }
  Outputs outs;
  for (size_t i = 0; i < args.outputs->size(); ++i) {
    at::Tensor t = NewOutput(args, i);
    t.fill_(acc.to(t.scalar_type()));
    outs.push_back(t);
  }
  return outs;
}

}  // namespace exec_internal
}  // namespace dplace
