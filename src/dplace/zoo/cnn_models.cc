// Convolutional benchmarks as TF-slim builds them for training (the
// graphs the papers placed): Inception-V3 (Szegedy et al. 2016) and ResNet
// v1 with bottleneck blocks (He et al. 2016), block by block. Every conv
// layer is slim.conv2d: Conv2D, a non-fused batch norm (moments,
// normalisation arithmetic, moving-average updates) and Relu; every conv
// kernel carries slim's L2 regularizer (Const, L2Loss, Mul).
#include <algorithm>
#include <string>
#include <vector>

#include "dplace/zoo/models.h"

namespace dplace {
namespace zoo_internal {
namespace {

// A network being built, with the regularization losses of its kernels.
struct Net {
  explicit Net(const std::string& name) : b(name) {}
  ModelBuilder b;
  std::vector<Tensor> l2_losses;
};

// slim.l2_regularizer(scale)(kernel): scale * L2Loss(kernel).
void Regularise(Net& n, const Tensor& kernel) {
  auto scope = n.b.NameScope("l2_regularizer");
  const Tensor loss = n.b.Op("L2Loss", {kernel}, {}, 2.0 * kernel.elements());
  n.l2_losses.push_back(n.b.Binary("Mul", n.b.Const("scale", {}), loss));
}

struct ConvOptions {
  int64_t stride = 1;
  bool same = true;       // SAME padding, else VALID.
  bool relu = true;       // Relu after the batch norm.
  bool bn_scale = false;  // Batch norm with a trainable scale (gamma).
};

// slim.conv2d with batch norm in scope `name`: Conv2D + BatchNorm (+ Relu).
Tensor ConvBn(Net& n, const Tensor& x, const std::string& name, int64_t filters,
              int64_t kernel_h, int64_t kernel_w, const ConvOptions& o) {
  auto scope = n.b.Scope(name);
  const Tensor w =
      n.b.Parameter("weights", {kernel_h, kernel_w, x.dim(3), filters});
  Regularise(n, w);
  Tensor y = n.b.BatchNorm(n.b.Conv2D(x, w, o.stride, o.same), o.bn_scale);
  return o.relu ? n.b.Unary("Relu", y) : y;
}

// A 1x1 conv with biases and no batch norm (the logits layers), squeezed to
// [batch, filters] (slim's SpatialSqueeze).
Tensor ConvLogits(Net& n, const Tensor& x, const std::string& name,
                  int64_t filters, int64_t kernel) {
  auto scope = n.b.Scope(name);
  const Tensor w =
      n.b.Parameter("weights", {kernel, kernel, x.dim(3), filters});
  Regularise(n, w);
  const Tensor y = n.b.BiasAdd(n.b.Conv2D(x, w, 1, /*same_padding=*/false),
                               n.b.Parameter("biases", {filters}));
  return n.b.Squeeze(y, {1, 2});
}

// tf.losses.softmax_cross_entropy(onehot_labels, logits, weights,
// label_smoothing) with SUM_BY_NONZERO_WEIGHTS reduction, as TF 1.x builds
// it: smoothing of the labels, the cross-entropy, the weighted sum and its
// safe division by the number of non-zero weights.
Tensor SoftmaxCrossEntropyLoss(Net& n, const Tensor& logits,
                               const Tensor& onehot, bool smoothing,
                               const std::string& name) {
  ModelBuilder& b = n.b;
  auto scope = b.Scope(name);
  const int64_t batch = logits.dim(0);
  Tensor labels = onehot;
  if (smoothing) {
    // onehot * (1 - s) + s / num_classes.
    const Tensor classes = b.Unary(
        "Cast",
        b.Op("StridedSlice",
             {b.Op("Shape", {onehot}, {2}, 0, "Shape", DataType::kInt32),
              b.IntConst("strided_slice/stack", 1),
              b.IntConst("strided_slice/stack_1", 1),
              b.IntConst("strided_slice/stack_2", 1)},
             {}, 0, "strided_slice", DataType::kInt32),
        0);
    const Tensor negatives =
        b.Binary("RealDiv", b.Const("truediv/x", {}), classes, "truediv");
    labels =
        b.Binary("Add", b.WithScalar("Mul", onehot, "mul/y"), negatives, "add");
  }
  const Tensor xent = b.MultiOp("SoftmaxCrossEntropyWithLogits",
                                {logits, labels}, {{batch}, logits.shape},
                                5.0 * logits.elements(), "xentropy")[0];
  const Tensor weights = b.Const("weights", {});
  const Tensor sum =
      b.Reduce("Sum", b.Binary("Mul", xent, weights), {0}, false, "Sum");
  // num_present: how many losses have a non-zero weight.
  Tensor present;
  {
    auto count = b.NameScope("num_present");
    const Tensor zero = b.Op("Equal", {weights, b.Const("Equal/y", {})}, {}, 1,
                             "Equal", DataType::kBool);
    const Tensor ones = b.Op("Select",
                             {zero, b.Unary("ZerosLike", weights, 0),
                              b.Unary("OnesLike", weights, 0)},
                             {}, 1, "Select");
    const Tensor broadcast = b.Binary("Mul", ones, b.Unary("OnesLike", xent, 0),
                                      "broadcast_weights");
    present = b.Reduce("Sum", broadcast, {0}, false, "num_present");
  }
  // _safe_div(sum, present).
  auto safe = b.NameScope("value");
  const Tensor positive = b.Op("Greater", {present, b.Const("Greater/y", {})},
                               {}, 1, "Greater", DataType::kBool);
  const Tensor nonzero =
      b.Op("Select", {positive, present, b.Unary("OnesLike", present, 0)}, {},
           1, "Select");
  const Tensor quotient = b.Binary("RealDiv", sum, nonzero, "div");
  return b.Op("Select", {positive, quotient, b.Unary("ZerosLike", sum, 0)}, {},
              1, "value");
}

// model_deploy's clone loss: the sum of the losses plus the sum of the
// regularization losses.
void TotalLoss(Net& n, const std::vector<Tensor>& losses) {
  ModelBuilder& b = n.b;
  auto scope = b.Scope("loss");
  const Tensor sum = losses.size() == 1
                         ? losses[0]
                         : b.Op("AddN", losses, {},
                                static_cast<double>(losses.size()), "sum_loss");
  const Tensor regularization =
      b.Op("AddN", n.l2_losses, {}, static_cast<double>(n.l2_losses.size()),
           "regularization_loss");
  b.Op("AddN", {sum, regularization}, {}, 1, "total_loss");
}

// ---------------------------------------------------------------------------
// Inception-V3 (TF-slim inception_v3, with its auxiliary head).

// One branch of a mixed block: a chain of convs, kernel sizes (h, w) and
// filters given per conv; scoped "branch_<i>/conv_<j>".
struct ConvSpec {
  int64_t filters, kernel_h, kernel_w;
  int64_t stride = 1;
  bool same = true;
};

Tensor Branch(Net& n, Tensor x, int index, const std::vector<ConvSpec>& convs) {
  auto scope = n.b.Scope("branch_" + std::to_string(index));
  for (size_t j = 0; j < convs.size(); ++j) {
    const ConvSpec& c = convs[j];
    ConvOptions o;
    o.stride = c.stride;
    o.same = c.same;
    x = ConvBn(n, x, "conv_" + std::to_string(j + 1), c.filters, c.kernel_h,
               c.kernel_w, o);
  }
  return x;
}

// A branch that pools first ("avgpool" or "maxpool"), then the convs.
Tensor PoolBranch(Net& n, const Tensor& x, int index, const std::string& type,
                  int64_t stride, bool same,
                  const std::vector<ConvSpec>& convs) {
  Tensor pooled;
  {
    auto scope = n.b.Scope("branch_" + std::to_string(index));
    pooled = n.b.Pool(type, x, 3, stride, same);
  }
  return convs.empty() ? pooled : Branch(n, pooled, index, convs);
}

Tensor Mixed(Net& n, const std::string& name,
             const std::vector<std::vector<ConvSpec>>& branches,
             const std::string& pool_type, int64_t pool_stride,
             const std::vector<ConvSpec>& pool_convs, const Tensor& x) {
  auto scope = n.b.Scope(name);
  std::vector<Tensor> outs;
  for (size_t i = 0; i < branches.size(); ++i) {
    outs.push_back(Branch(n, x, static_cast<int>(i), branches[i]));
  }
  outs.push_back(PoolBranch(n, x, static_cast<int>(branches.size()), pool_type,
                            pool_stride, pool_stride == 1, pool_convs));
  return n.b.Concat(outs, 3);
}

// Mixed_5b..5d (35x35): 1x1; 1x1-5x5; 1x1-3x3-3x3; avgpool-1x1.
Tensor InceptionA(Net& n, const std::string& name, const Tensor& x,
                  int64_t pool_filters) {
  return Mixed(n, name,
               {{{64, 1, 1}},
                {{48, 1, 1}, {64, 5, 5}},
                {{64, 1, 1}, {96, 3, 3}, {96, 3, 3}}},
               "AvgPool", 1, {{pool_filters, 1, 1}}, x);
}

// Mixed_6b..6e (17x17), with 7x7 convolutions factorised into 1x7 and 7x1.
Tensor InceptionB(Net& n, const std::string& name, const Tensor& x,
                  int64_t mid) {
  return Mixed(
      n, name,
      {{{192, 1, 1}},
       {{mid, 1, 1}, {mid, 1, 7}, {192, 7, 1}},
       {{mid, 1, 1}, {mid, 7, 1}, {mid, 1, 7}, {mid, 7, 1}, {192, 1, 7}}},
      "AvgPool", 1, {{192, 1, 1}}, x);
}

// A conv followed by two parallel convs (1x3 and 3x1) whose outputs are
// concatenated: the expanded filter bank of Mixed_7b / 7c.
Tensor SplitBranch(Net& n, const Tensor& x, int index,
                   const std::vector<ConvSpec>& stem) {
  const Tensor trunk = Branch(n, x, index, stem);
  auto scope = n.b.Scope("branch_" + std::to_string(index));
  const std::string next = std::to_string(stem.size() + 1);
  ConvOptions o;
  const Tensor a = ConvBn(n, trunk, "conv_" + next + "a", 384, 1, 3, o);
  const Tensor b = ConvBn(n, trunk, "conv_" + next + "b", 384, 3, 1, o);
  return n.b.Concat({a, b}, 3);
}

// Mixed_7b / 7c (8x8).
Tensor InceptionC(Net& n, const std::string& name, const Tensor& x) {
  auto scope = n.b.Scope(name);
  const std::vector<Tensor> outs = {
      Branch(n, x, 0, {{320, 1, 1}}),
      SplitBranch(n, x, 1, {{384, 1, 1}}),
      SplitBranch(n, x, 2, {{448, 1, 1}, {384, 3, 3}}),
      PoolBranch(n, x, 3, "AvgPool", 1, true, {{192, 1, 1}}),
  };
  return n.b.Concat(outs, 3);
}

StatusOr<Graph> InceptionV3(const ZooParams& p) {
  const int64_t batch = p.Int("batch"), image = p.Int("image");
  const int64_t classes = p.Int("classes");
  if (image < 75) {
    return InvalidArgumentError(
        "zoo model inception_v3: image must be at least 75, got " +
        std::to_string(image));
  }
  Net n("inception_v3");
  ModelBuilder& b = n.b;
  Tensor images, labels;
  {
    auto scope = b.Scope("input");
    images = b.Input("images", {batch, image, image, 3});
    // One-hot in the input pipeline (slim.one_hot_encoding on the CPU).
    labels = b.Input("labels", {batch, classes});
  }
  Tensor x = images;
  {
    auto scope = b.Scope("stem");
    ConvOptions valid;
    valid.same = false;
    ConvOptions valid2 = valid;
    valid2.stride = 2;
    x = ConvBn(n, x, "conv_1a_3x3", 32, 3, 3, valid2);
    x = ConvBn(n, x, "conv_2a_3x3", 32, 3, 3, valid);
    x = ConvBn(n, x, "conv_2b_3x3", 64, 3, 3, ConvOptions());
    {
      auto pool = b.Scope("maxpool_3a_3x3");
      x = b.Pool("MaxPool", x, 3, 2, false);
    }
    x = ConvBn(n, x, "conv_3b_1x1", 80, 1, 1, valid);
    x = ConvBn(n, x, "conv_4a_3x3", 192, 3, 3, valid);
    auto pool = b.Scope("maxpool_5a_3x3");
    x = b.Pool("MaxPool", x, 3, 2, false);
  }
  x = InceptionA(n, "mixed_5b", x, 32);
  x = InceptionA(n, "mixed_5c", x, 64);
  x = InceptionA(n, "mixed_5d", x, 64);
  x = Mixed(
      n, "mixed_6a",
      {{{384, 3, 3, 2, false}}, {{64, 1, 1}, {96, 3, 3}, {96, 3, 3, 2, false}}},
      "MaxPool", 2, {}, x);
  x = InceptionB(n, "mixed_6b", x, 128);
  x = InceptionB(n, "mixed_6c", x, 160);
  x = InceptionB(n, "mixed_6d", x, 160);
  x = InceptionB(n, "mixed_6e", x, 192);

  // Auxiliary classifier on Mixed_6e, its loss weighted 0.4.
  Tensor aux;
  {
    auto scope = b.Scope("aux_logits");
    Tensor a;
    {
      // TF-slim shrinks the 5x5 window when the input is smaller.
      auto pool = b.Scope("avgpool");
      a = b.Pool("AvgPool", x, std::min<int64_t>(5, x.dim(1)), 3, false);
    }
    a = ConvBn(n, a, "conv_1", 128, 1, 1, ConvOptions());
    ConvOptions valid;
    valid.same = false;
    a = ConvBn(n, a, "conv_2", 768, a.dim(1), a.dim(2), valid);
    aux = ConvLogits(n, a, "logits", classes, 1);
  }

  x = Mixed(n, "mixed_7a",
            {{{192, 1, 1}, {320, 3, 3, 2, false}},
             {{192, 1, 1}, {192, 1, 7}, {192, 7, 1}, {192, 3, 3, 2, false}}},
            "MaxPool", 2, {}, x);
  x = InceptionC(n, "mixed_7b", x);
  x = InceptionC(n, "mixed_7c", x);

  Tensor logits;
  {
    auto scope = b.Scope("logits");
    {
      auto pool = b.Scope("avgpool");
      x = b.Pool("AvgPool", x, x.dim(1), 1, false);
    }
    x = b.Dropout(x);
    logits = ConvLogits(n, x, "conv", classes, 1);
  }

  // train_image_classifier: the two losses (the auxiliary one weighted 0.4,
  // labels smoothed by 0.1), the regularization losses, and their sum.
  std::vector<Tensor> losses;
  {
    auto scope = b.Scope("loss");
    losses = {SoftmaxCrossEntropyLoss(n, logits, labels, true, "xent"),
              SoftmaxCrossEntropyLoss(n, aux, labels, true, "aux_xent")};
  }
  TotalLoss(n, losses);
  return std::move(b).Build();
}

// ---------------------------------------------------------------------------
// ResNet v1 with bottleneck units (depth 50 and up) or basic units (18,
// 34), layer by layer as TF-slim builds them (slim.conv2d with a scaled,
// non-fused batch norm; conv2d_same's explicit Pad before strided convs; a
// 1x1 logits conv), laid out as TF's official model and torchvision: the
// stride in the 3x3 conv of each block's first unit ("v1.5", 4.1 G
// multiply-adds per image at depth 50), a projection shortcut on each
// block's first unit where the shape changes.

// slim's conv2d_same: stride 1 pads SAME; strided convs Pad explicitly and
// run VALID.
Tensor ConvSame(Net& n, Tensor x, const std::string& name, int64_t filters,
                int64_t kernel, int64_t stride, bool relu) {
  ConvOptions o;
  o.stride = stride;
  o.relu = relu;
  o.bn_scale = true;
  if (stride > 1 && kernel > 1) {
    auto scope = n.b.Scope(name);
    const int64_t pad = kernel - 1;
    x = n.b.Op("Pad", {x, n.b.IntConst("Pad/paddings", 8)},
               {x.dim(0), x.dim(1) + pad, x.dim(2) + pad, x.dim(3)}, 0, "Pad");
    o.same = false;
  }
  return ConvBn(n, x, name, filters, kernel, kernel, o);
}

// A unit's shortcut where the shape changes: 1x1 conv and batch norm.
Tensor Projection(Net& n, const Tensor& x, int64_t depth, int64_t stride) {
  ConvOptions o;
  o.stride = stride;
  o.relu = false;
  o.bn_scale = true;
  return ConvBn(n, x, "shortcut", depth, 1, 1, o);
}

Tensor Bottleneck(Net& n, const Tensor& x, const std::string& name,
                  int64_t depth, int64_t stride, bool projection) {
  auto scope = n.b.Scope(name);
  const Tensor shortcut = projection ? Projection(n, x, depth, stride) : x;
  const int64_t bottleneck = depth / 4;
  Tensor y = ConvSame(n, x, "conv1", bottleneck, 1, 1, true);
  y = ConvSame(n, y, "conv2", bottleneck, 3, stride, true);
  y = ConvSame(n, y, "conv3", depth, 1, 1, false);
  return n.b.Unary("Relu", n.b.Binary("Add", shortcut, y));
}

// Two 3x3 convs, for depths 18 and 34.
Tensor BasicUnit(Net& n, const Tensor& x, const std::string& name,
                 int64_t depth, int64_t stride, bool projection) {
  auto scope = n.b.Scope(name);
  const Tensor shortcut = projection ? Projection(n, x, depth, stride) : x;
  Tensor y = ConvSame(n, x, "conv1", depth, 3, stride, true);
  y = ConvSame(n, y, "conv2", depth, 3, 1, false);
  return n.b.Unary("Relu", n.b.Binary("Add", shortcut, y));
}

// Units per block, by depth (He et al., Table 1): basic units below 50,
// bottlenecks from 50.
std::vector<int> ResNetUnits(int64_t depth) {
  switch (depth) {
    case 18:
      return {2, 2, 2, 2};
    case 34:
    case 50:
      return {3, 4, 6, 3};
    case 101:
      return {3, 4, 23, 3};
    case 152:
      return {3, 8, 36, 3};
    case 200:
      return {3, 24, 36, 3};
    default:
      return {};
  }
}

StatusOr<Graph> ResNet(const ZooParams& p) {
  const int64_t depth = p.Int("depth"), batch = p.Int("batch");
  const int64_t image = p.Int("image"), classes = p.Int("classes");
  const std::vector<int> units = ResNetUnits(depth);
  if (units.empty()) {
    return InvalidArgumentError(
        "zoo model resnet: depth must be 18, 34, 50, 101, 152 or 200, got " +
        std::to_string(depth));
  }
  if (image < 32) {
    return InvalidArgumentError(
        "zoo model resnet: image must be at least 32, got " +
        std::to_string(image));
  }
  Net n("resnet_v1_" + std::to_string(depth));
  ModelBuilder& b = n.b;
  Tensor images, labels;
  {
    auto scope = b.Scope("input");
    images = b.Input("images", {batch, image, image, 3});
    labels = b.Input("labels", {batch, classes});
  }
  Tensor x;
  {
    auto scope = b.Scope("stem");
    x = ConvSame(n, images, "conv1", 64, 7, 2, true);
    auto pool = b.Scope("pool1");
    x = b.Pool("MaxPool", x, 3, 2, true);
  }
  for (size_t block = 0; block < units.size(); ++block) {
    auto scope = b.Scope("block_" + std::to_string(block + 1));
    const bool basic = depth < 50;
    const int64_t depth_out = int64_t{basic ? 64 : 256} << block;
    for (int u = 0; u < units[block]; ++u) {
      const int64_t stride = (block > 0 && u == 0) ? 2 : 1;
      const std::string unit = "unit_" + std::to_string(u + 1);
      x = basic ? BasicUnit(n, x, unit, depth_out, stride, stride > 1)
                : Bottleneck(n, x, unit, depth_out, stride, u == 0);
    }
  }
  Tensor logits;
  {
    auto scope = b.Scope("logits");
    x = b.Reduce("Mean", x, {1, 2}, true, "pool5");
    logits = ConvLogits(n, x, "conv", classes, 1);
  }
  std::vector<Tensor> losses;
  {
    auto scope = b.Scope("loss");
    losses = {SoftmaxCrossEntropyLoss(n, logits, labels, false, "xent")};
  }
  TotalLoss(n, losses);
  return std::move(b).Build();
}

// TF-slim's train_image_classifier: optimizer.compute_gradients, which
// gates each op's gradients (GATE_OP); no clipping.
TrainingOptions SlimTraining() {
  TrainingOptions o;
  o.gate_gradients = true;
  return o;
}

}  // namespace

ZooModel InceptionV3Model() {
  ZooModel m;
  m.name = "inception_v3";
  m.description =
      "Inception-V3 (Szegedy et al.) as TF-slim builds it: stem, 3 "
      "Inception-A, reduction, 4 Inception-B with 1x7/7x1 convs, reduction, "
      "2 Inception-C, auxiliary head; each conv Conv2D + non-fused batch "
      "norm + Relu, L2-regularised; smoothed softmax losses";
  // Batch 32 as ColocRL and Post trained it; the Hierarchical Planner used
  // batch 1 (its 24,713-op graph; the op count does not depend on batch).
  m.defaults = {{"batch", "32"},
                {"image", "299"},
                {"classes", "1000"},
                {"optimizer", "rmsprop"}};
  m.paper_preset = "k40x4";  // ColocRL and the Hierarchical Planner.
  m.paper_ops = 24713;       // Hierarchical Planner, section 4.
  m.forward = InceptionV3;
  m.training = SlimTraining();
  m.expert = OneGpuPlacement;
  return m;
}

ZooModel ResNetModel() {
  ZooModel m;
  m.name = "resnet";
  m.description =
      "ResNet v1 (He et al.) with bottleneck blocks (stride in the 3x3 conv "
      "of each block's first unit, projection shortcuts), layer by layer as "
      "TF-slim builds it: non-fused batch norm, L2-regularised; depth 50, "
      "101, 152 or 200, or basic blocks of two 3x3 convs at depth 18 or 34";
  // Depth 152: the Hierarchical Planner's ResNet, on K40s, whose graph had
  // 20,586 ops. Batch 32, as Post placed ResNet-50 and ResNet-200: the
  // Hierarchical Planner states batch 128, but ResNet-152 at batch 128 needs
  // about 25 GB (simulated) and 8.9 TFLOP a step, so it could neither fit
  // one 12 GB K40 nor run in the 1.18 s the paper reports for one GPU.
  m.defaults = {{"depth", "152"},
                {"batch", "32"},
                {"image", "224"},
                {"classes", "1000"},
                {"optimizer", "momentum"}};
  m.paper_preset = "k40x4";
  m.paper_ops = 20586;
  m.paper_variants = {{"batch=128", 20586}};
  m.forward = ResNet;
  m.expert = OneGpuPlacement;
  return m;
}

}  // namespace zoo_internal
}  // namespace dplace
