#include "dplace/rl/nets/policy.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>

#include "dplace/rl/nets/lstm.h"

namespace dplace {
namespace {

constexpr double kDisallowed = -1e9;
constexpr int kShapeDims = 4;  // Dims of the largest output kept.

double Uniform(std::mt19937_64* rng) {
  return static_cast<double>((*rng)() >> 11) * 0x1.0p-53;  // [0, 1).
}

// Scales every column of `m` [rows, cols] into [0, 1] by its largest value.
void NormalizeColumns(std::vector<std::vector<double>>* m) {
  if (m->empty()) return;
  for (size_t c = 0; c < (*m)[0].size(); ++c) {
    double top = 0;
    for (const auto& row : *m) top = std::max(top, row[c]);
    if (top <= 0) continue;
    for (auto& row : *m) row[c] /= top;
  }
}

torch::Tensor ToTensor(const std::vector<std::vector<double>>& m, int cols) {
  torch::Tensor t = torch::zeros({static_cast<int64_t>(m.size()), cols});
  auto a = t.accessor<float, 2>();
  for (size_t r = 0; r < m.size(); ++r) {
    for (int c = 0; c < cols; ++c) a[r][c] = static_cast<float>(m[r][c]);
  }
  return t;
}

}  // namespace

PlacementPolicyImpl::PlacementPolicyImpl(int num_groups, int num_devices,
                                         const std::vector<uint8_t>& allowed)
    : num_groups_(num_groups), num_devices_(num_devices) {
  torch::Tensor bias = torch::zeros({num_groups, num_devices});
  auto a = bias.accessor<float, 2>();
  for (int g = 0; g < num_groups; ++g) {
    for (int d = 0; d < num_devices; ++d) {
      if (!allowed[static_cast<size_t>(g) * num_devices + d]) {
        a[g][d] = kDisallowed;
      }
    }
  }
  mask_bias_ = register_buffer("mask_bias", bias);
}

namespace {

// Inverse-CDF draws for `n` rows of `num_devices` probabilities, summed in
// double whatever their type; next_uniform() gives each row's uniform.
template <typename T>
int64_t DrawOneRow(const T* row, int64_t num_devices, double u) {
  double cumulative = 0;
  int64_t last_positive = 0;
  for (int64_t d = 0; d < num_devices; ++d) {
    if (row[d] <= 0) continue;
    last_positive = d;
    cumulative += row[d];
    if (u < cumulative) return d;
  }
  return last_positive;  // Rounding at the top.
}

template <typename T, typename NextUniform>
void DrawRows(const T* row, int64_t n, int64_t num_devices,
              NextUniform&& next_uniform, int64_t* choices) {
  for (int64_t i = 0; i < n; ++i, row += num_devices) {
    choices[i] = DrawOneRow(row, num_devices, next_uniform());
  }
}

template <typename NextUniform>
torch::Tensor DrawTensorRows(const torch::Tensor& probs,
                             NextUniform&& next_uniform) {
  const bool wide = probs.scalar_type() == torch::kFloat64;
  const torch::Tensor p =
      probs.detach().to(wide ? torch::kFloat64 : torch::kFloat32).contiguous();
  const int64_t n = p.size(0), num_devices = p.size(1);
  torch::Tensor out = torch::empty({n}, torch::kInt64);
  if (wide) {
    DrawRows(p.data_ptr<double>(), n, num_devices, next_uniform,
             out.data_ptr<int64_t>());
  } else {
    DrawRows(p.data_ptr<float>(), n, num_devices, next_uniform,
             out.data_ptr<int64_t>());
  }
  return out;
}

}  // namespace

torch::Tensor SampleRows(const torch::Tensor& probs, std::mt19937_64* rng) {
  return DrawTensorRows(probs, [rng] { return Uniform(rng); });
}

std::vector<double> DrawUniforms(int64_t n, std::mt19937_64* rng) {
  std::vector<double> uniforms(static_cast<size_t>(n));
  for (double& u : uniforms) u = Uniform(rng);
  return uniforms;
}

int64_t DrawRow(const float* probs, int64_t num_devices, double u) {
  return DrawOneRow(probs, num_devices, u);
}

torch::Tensor SampleRows(const torch::Tensor& probs, const double* uniforms) {
  return DrawTensorRows(probs, [&uniforms] { return *uniforms++; });
}

void PlacementPolicyImpl::BackwardRows(const torch::Tensor& actions,
                                       const RowsLoss& loss) {
  loss(LogProbs(actions), torch::arange(actions.size(0))).backward();
}

int RowBlocks(int64_t k, int workers) {
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(std::max(1, workers), k)));
}

void RunRowBlocks(
    int64_t k, int workers,
    const std::function<void(int index, int64_t begin, int64_t end)>& block) {
  const int n = RowBlocks(k, workers);
  const auto bound = [k, n](int i) { return k * i / n; };
  if (n == 1) {
    block(0, 0, k);
    return;
  }
  const int torch_threads = torch::get_num_threads();
  const bool grad = torch::GradMode::is_enabled();
  const bool inference = c10::InferenceMode::is_enabled();
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  for (int i = 1; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        // OpenMP's thread count is per thread, and a new thread's is every
        // core.
        torch::set_num_threads(torch_threads);
        c10::InferenceMode inference_mode(inference);
        torch::AutoGradMode grad_mode(grad);
        block(i, bound(i), bound(i + 1));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  try {
    block(0, 0, bound(1));
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

SoftmaxPolicyImpl::SoftmaxPolicyImpl(int num_groups, int num_devices,
                                     const std::vector<uint8_t>& allowed)
    : PlacementPolicyImpl(num_groups, num_devices, allowed) {
  // Post, Algorithm 1: u starts at zero (uniform over allowed devices).
  logits_ =
      register_parameter("logits", torch::zeros({num_groups, num_devices}));
}

torch::Tensor SoftmaxPolicyImpl::Probabilities() {
  torch::NoGradGuard no_grad;
  return torch::softmax(logits_ + mask_bias(), 1);
}

torch::Tensor SoftmaxPolicyImpl::Sample(int k, std::mt19937_64* rng) {
  const torch::Tensor probs = Probabilities();
  torch::Tensor out = torch::empty({k, num_groups()}, torch::kInt64);
  for (int i = 0; i < k; ++i) out[i] = SampleRows(probs, rng);
  return out;
}

torch::Tensor SoftmaxPolicyImpl::LogProbs(const torch::Tensor& actions) {
  const torch::Tensor log_probs = torch::log_softmax(logits_ + mask_bias(), 1);
  return log_probs.unsqueeze(0).expand(
      {actions.size(0), num_groups(), num_devices()});
}

void SoftmaxPolicyImpl::SetProbabilities(const torch::Tensor& probs) {
  torch::NoGradGuard no_grad;
  logits_.copy_(torch::log(probs.to(torch::kFloat32).clamp_min(1e-12)));
}

GroupFeatures MakeGroupFeatures(const Graph& graph, const Grouping& grouping,
                                const GroupGraph& groups) {
  const int num_groups = groups.num_groups;
  const int num_types = static_cast<int>(graph.op_types().size());
  GroupFeatures f;
  f.type_fractions = torch::zeros({num_groups, num_types});
  auto types = f.type_fractions.accessor<float, 2>();
  std::vector<int64_t> largest(num_groups, -1);
  std::vector<std::vector<double>> sizes(
      num_groups, std::vector<double>(6 + kShapeDims, 0));
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const GroupId g = grouping.group[op];
    types[g][graph.op_type_id(op)] += 1.0f / groups.num_ops[g];
    for (int o = 0; o < graph.num_outputs(op); ++o) {
      const TensorInfo& t = graph.tensor(graph.output(op, o));
      if (t.bytes <= largest[g]) continue;
      largest[g] = t.bytes;
      for (int d = 0; d < kShapeDims; ++d) {
        sizes[g][6 + d] =
            d < static_cast<int>(t.shape.size())
                ? std::log1p(static_cast<double>(
                      std::max<int64_t>(t.shape[t.shape.size() - 1 - d], 0)))
                : 0;
      }
    }
  }
  for (GroupId g = 0; g < num_groups; ++g) {
    sizes[g][0] = std::log1p(groups.flops[g]);
    sizes[g][1] = std::log1p(static_cast<double>(groups.bytes_accessed[g]));
    sizes[g][2] = std::log1p(static_cast<double>(groups.persistent_bytes[g]));
    sizes[g][3] = std::log1p(static_cast<double>(groups.output_bytes[g]));
    sizes[g][4] = std::log1p(static_cast<double>(groups.memory_estimate[g]));
    sizes[g][5] = std::log1p(static_cast<double>(groups.num_ops[g]));
  }
  NormalizeColumns(&sizes);
  f.sizes = ToTensor(sizes, 6 + kShapeDims);
  f.adjacency = torch::zeros({num_groups, 2 * num_groups});
  auto adj = f.adjacency.accessor<float, 2>();
  for (const GroupEdge& e : groups.edges) {
    adj[e.dst][e.src] = 1;               // Inputs of dst.
    adj[e.src][num_groups + e.dst] = 1;  // Outputs of src.
  }
  f.order.assign(groups.order.begin(), groups.order.end());
  return f;
}

PlacementPolicyImpl::RowsLoss RowShare(PlacementPolicyImpl::RowsLoss mean_loss,
                                       int64_t k) {
  return [mean_loss = std::move(mean_loss), k](const torch::Tensor& log_probs,
                                               const torch::Tensor& rows) {
    const torch::Tensor loss = mean_loss(log_probs, rows);
    return rows.size(0) == k ? loss
                             : loss * (static_cast<double>(rows.size(0)) /
                                       static_cast<double>(k));
  };
}

void BackwardInBlocks(
    torch::nn::Module& module, const std::vector<torch::Tensor>& encoding,
    int64_t k, int workers,
    const std::function<torch::Tensor(const std::vector<torch::Tensor>& leaves,
                                      int64_t begin, int64_t end)>& block_loss,
    const torch::Tensor& extra, bool extra_apart) {
  std::vector<torch::Tensor> leaves;
  for (const torch::Tensor& t : encoding) {
    leaves.push_back(t.detach().requires_grad_());
  }
  std::vector<torch::Tensor> inputs = module.parameters();
  const size_t num_parameters = inputs.size();
  inputs.insert(inputs.end(), leaves.begin(), leaves.end());
  std::vector<torch::autograd::variable_list> grads(
      static_cast<size_t>(RowBlocks(k, workers)));
  RunRowBlocks(k, workers, [&](int index, int64_t begin, int64_t end) {
    grads[index] = torch::autograd::grad({block_loss(leaves, begin, end)},
                                         inputs, {}, /*retain_graph=*/false,
                                         /*create_graph=*/false,
                                         /*allow_unused=*/true);
  });
  // Summed in block order, whichever thread finished first.
  std::vector<torch::Tensor> sums(inputs.size());
  for (const torch::autograd::variable_list& block : grads) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!block[i].defined()) continue;
      sums[i] = sums[i].defined() ? sums[i] + block[i] : block[i];
    }
  }
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < num_parameters; ++i) {
      if (!sums[i].defined()) continue;
      torch::Tensor& g = inputs[i].mutable_grad();
      g = g.defined() ? g + sums[i] : sums[i];
    }
  }
  // The encoder's backward pass, once (it adds to the parameters'
  // gradients as backward() does).
  std::vector<torch::Tensor> roots, root_grads;
  for (size_t i = 0; i < encoding.size(); ++i) {
    const torch::Tensor& g = sums[num_parameters + i];
    if (g.defined() && encoding[i].requires_grad()) {
      roots.push_back(encoding[i]);
      root_grads.push_back(g);
    }
  }
  if (extra.defined() && extra_apart && workers > 1 && !roots.empty()) {
    // Two graphs that share nothing: one backward pass on each of two
    // threads.
    RunRowBlocks(2, 2, [&](int index, int64_t, int64_t) {
      if (index == 0) {
        torch::autograd::backward(roots, root_grads);
      } else {
        extra.backward();
      }
    });
    return;
  }
  if (extra.defined()) {
    roots.push_back(extra);
    root_grads.push_back(torch::ones_like(extra));
  }
  if (!roots.empty()) torch::autograd::backward(roots, root_grads);
}

torch::Tensor AttentionStepLogits(const torch::Tensor& h,
                                  const torch::Tensor& keys,
                                  const torch::Tensor& states,
                                  torch::nn::Linear& combine,
                                  torch::nn::Linear& output,
                                  const torch::Tensor& mask_bias) {
  torch::NoGradGuard no_grad;
  const torch::Tensor weights = torch::softmax(RowLinear(h, keys), -1);
  const torch::Tensor context = RowMm(weights, states);
  const torch::Tensor combined = torch::tanh(
      RowLinear(torch::cat({h, context}, 1), combine->weight, combine->bias));
  return RowLinear(combined, output->weight, output->bias) + mask_bias;
}

int64_t ParameterVersion(const torch::nn::Module& module) {
  int64_t version = 0;
  for (const torch::Tensor& p : module.parameters()) version += p._version();
  return version;
}

}  // namespace dplace