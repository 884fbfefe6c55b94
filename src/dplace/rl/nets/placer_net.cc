#include "dplace/rl/nets/placer_net.h"

#include <cmath>

#include "dplace/rl/nets/policy.h"

namespace dplace {
namespace {

double Uniform(std::mt19937_64* rng) {
  return static_cast<double>((*rng)() >> 11) * 0x1.0p-53;  // [0, 1).
}

// Standard normal draws by Box-Muller, from `rng` only (std's
// distributions differ between standard libraries).
torch::Tensor StandardNormal(at::IntArrayRef sizes, std::mt19937_64* rng) {
  torch::Tensor out = torch::empty(sizes, torch::kFloat32);
  float* p = out.data_ptr<float>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - Uniform(rng);  // (0, 1].
    const double u2 = Uniform(rng);
    const double r = std::sqrt(-2.0 * std::log(u1));
    p[i] = static_cast<float>(r * std::cos(2 * M_PI * u2));
    if (i + 1 < n) p[i + 1] = static_cast<float>(r * std::sin(2 * M_PI * u2));
  }
  return out;
}

}  // namespace

torch::Tensor ShapeLogits(const torch::Tensor& logits,
                          const LogitShaping& shaping) {
  if (shaping.tanh_constant <= 0) return logits;
  return shaping.tanh_constant * torch::tanh(logits / shaping.temperature);
}

torch::Tensor SamplingProbabilities(const torch::Tensor& logits,
                                    const torch::Tensor& mask_bias,
                                    const LogitShaping& shaping,
                                    std::mt19937_64* rng) {
  torch::NoGradGuard no_grad;
  torch::Tensor l = logits;
  if (shaping.noise > 0) {
    const double rms = std::sqrt(l.square().mean().item<double>());
    l = l + shaping.noise * rms * StandardNormal(l.sizes(), rng);
  }
  return torch::softmax(ShapeLogits(l, shaping) + mask_bias, -1);
}

torch::Tensor PolicyLogProbs(const torch::Tensor& logits,
                             const torch::Tensor& mask_bias,
                             const LogitShaping& shaping) {
  return torch::log_softmax(ShapeLogits(logits, shaping) + mask_bias, -1);
}

Seq2SeqPlacerImpl::Seq2SeqPlacerImpl(const Seq2SeqPlacerConfig& config)
    : config_(config) {
  const int64_t hidden = config.hidden;
  input_projection_ = register_module(
      "input_projection", torch::nn::Linear(config.input_size, hidden));
  if (config.link_size > 0) {
    link_ = register_module("link", torch::nn::LSTM(torch::nn::LSTMOptions(
                                        hidden + config.link_size, hidden)));
  }
  encoder_ = register_module(
      "encoder",
      torch::nn::LSTM(
          torch::nn::LSTMOptions(hidden, hidden / 2).bidirectional(true)));
  device_embedding_ = register_module(
      "device_embedding",
      torch::nn::Embedding(config.num_devices + 1, config.device_embedding));
  const int64_t step_input = config.device_embedding + hidden;
  if (config.attention_before) {
    decoder_cell_ = register_module(
        "decoder", torch::nn::LSTMCell(step_input + hidden, hidden));
  } else {
    decoder_ = register_module(
        "decoder", torch::nn::LSTM(torch::nn::LSTMOptions(step_input, hidden)));
    combine_ =
        register_module("combine", torch::nn::Linear(2 * hidden, hidden));
  }
  attention_keys_ = register_module(
      "attention_keys",
      torch::nn::Linear(
          torch::nn::LinearOptions(hidden, config.attention_size).bias(false)));
  attention_query_ = register_module(
      "attention_query",
      torch::nn::Linear(
          torch::nn::LinearOptions(hidden, config.attention_size).bias(false)));
  attention_score_ = register_module(
      "attention_score",
      torch::nn::Linear(
          torch::nn::LinearOptions(config.attention_size, 1).bias(false)));
  output_ =
      register_module("output", torch::nn::Linear(hidden, config.num_devices));
}

Seq2SeqPlacerImpl::Encoded Seq2SeqPlacerImpl::Encode(const PlacerInput& in) {
  torch::Tensor x = torch::tanh(
      input_projection_(torch::cat({in.features, in.adjacency}, 1)));
  if (link_) {
    auto [linked, unused] = link_(torch::cat({x, in.link}, 1).unsqueeze(1));
    x = linked.squeeze(1);
  }
  auto [states, final_state] = encoder_(x.unsqueeze(1));
  Encoded e;
  e.states = states.squeeze(1);  // [K, H]: forward and backward halves.
  e.keys = attention_keys_(e.states);
  const torch::Tensor& h = std::get<0>(final_state);  // [2, 1, H/2].
  const torch::Tensor& c = std::get<1>(final_state);
  e.h = torch::cat({h[0], h[1]}, 1);  // [1, H].
  e.c = torch::cat({c[0], c[1]}, 1);
  return e;
}

torch::Tensor Seq2SeqPlacerImpl::Attend(const Encoded& e,
                                        const torch::Tensor& query) {
  // Additive attention: v . tanh(W_k s_j + W_q q), softmax over groups j.
  const torch::Tensor q = attention_query_(query).unsqueeze(-2);  // [..,1,A]
  const torch::Tensor scores =
      attention_score_(torch::tanh(e.keys + q)).squeeze(-1);  // [.., K].
  return torch::matmul(torch::softmax(scores, -1), e.states);
}

torch::Tensor Seq2SeqPlacerImpl::StepBefore(const Encoded& e, int64_t t,
                                            const torch::Tensor& previous,
                                            torch::Tensor* h,
                                            torch::Tensor* c) {
  const int64_t k = previous.size(0);
  const torch::Tensor context = Attend(e, *h);  // From the previous state.
  const torch::Tensor x = torch::cat(
      {device_embedding_(previous),
       e.states[t].unsqueeze(0).expand({k, e.states.size(1)}), context},
      1);
  auto [h_next, c_next] = decoder_cell_(x, std::make_tuple(*h, *c));
  *h = h_next;
  *c = c_next;
  return output_(h_next);
}

torch::Tensor Seq2SeqPlacerImpl::Sample(const PlacerInput& input, int k,
                                        const LogitShaping& shaping,
                                        std::mt19937_64* rng) {
  torch::NoGradGuard no_grad;
  const Encoded e = Encode(input);
  const int64_t length = e.states.size(0), hidden = e.states.size(1);
  torch::Tensor previous = torch::full({k}, config_.num_devices, torch::kInt64);
  torch::Tensor out = torch::empty({k, length}, torch::kInt64);
  torch::Tensor h = e.h.expand({k, hidden}).contiguous();
  torch::Tensor c = e.c.expand({k, hidden}).contiguous();
  for (int64_t t = 0; t < length; ++t) {
    torch::Tensor logits;
    if (config_.attention_before) {
      logits = StepBefore(e, t, previous, &h, &c);
    } else {
      const torch::Tensor x =
          torch::cat({device_embedding_(previous),
                      e.states[t].unsqueeze(0).expand({k, hidden})},
                     1);
      auto [o, state] = decoder_(
          x.unsqueeze(0), std::make_tuple(h.unsqueeze(0), c.unsqueeze(0)));
      h = std::get<0>(state).squeeze(0);
      c = std::get<1>(state).squeeze(0);
      const torch::Tensor d = o.squeeze(0);
      logits = output_(torch::tanh(combine_(torch::cat({d, Attend(e, d)}, 1))));
    }
    previous = SampleRows(
        SamplingProbabilities(logits, input.mask_bias[t], shaping, rng), rng);
    out.select(1, t).copy_(previous);
  }
  return out;
}

torch::Tensor Seq2SeqPlacerImpl::LogProbs(const PlacerInput& input,
                                          const torch::Tensor& actions,
                                          const LogitShaping& shaping) {
  const Encoded e = Encode(input);
  const int64_t k = actions.size(0), length = e.states.size(0),
                hidden = e.states.size(1);
  torch::Tensor logits;  // [k, K, D].
  if (config_.attention_before) {
    torch::Tensor h = e.h.expand({k, hidden});
    torch::Tensor c = e.c.expand({k, hidden});
    torch::Tensor previous =
        torch::full({k}, config_.num_devices, torch::kInt64);
    std::vector<torch::Tensor> steps;
    steps.reserve(length);
    for (int64_t t = 0; t < length; ++t) {
      steps.push_back(StepBefore(e, t, previous, &h, &c));
      previous = actions.select(1, t);
    }
    logits = torch::stack(steps, 1);
  } else {
    // Teacher forcing: every step's input is known, one LSTM call.
    const torch::Tensor previous =
        torch::cat({torch::full({k, 1}, config_.num_devices, torch::kInt64),
                    actions.slice(1, 0, length - 1)},
                   1);
    const torch::Tensor x =
        torch::cat({device_embedding_(previous),
                    e.states.unsqueeze(0).expand({k, length, hidden})},
                   2);
    auto [o, unused] = decoder_(
        x.transpose(0, 1),
        std::make_tuple(e.h.expand({k, hidden}).unsqueeze(0).contiguous(),
                        e.c.expand({k, hidden}).unsqueeze(0).contiguous()));
    const torch::Tensor d = o.transpose(0, 1);  // [k, K, H].
    logits = output_(torch::tanh(combine_(torch::cat({d, Attend(e, d)}, 2))));
  }
  return PolicyLogProbs(logits, input.mask_bias.unsqueeze(0), shaping) *
         input.active.view({1, -1, 1});
}

GcnPlacerImpl::GcnPlacerImpl(const GcnPlacerConfig& config) {
  layer1_ = register_module(
      "layer1", torch::nn::Linear(config.input_size, config.hidden));
  layer2_ = register_module("layer2",
                            torch::nn::Linear(config.hidden, config.hidden));
  output_ = register_module(
      "output", torch::nn::Linear(config.hidden, config.num_devices));
}

torch::Tensor GcnPlacerImpl::Logits(const PlacerInput& in) {
  const int64_t k = in.features.size(0);
  torch::Tensor a;
  {
    torch::NoGradGuard no_grad;
    // Symmetric, self-loops, D^-1/2 (A + I) D^-1/2.
    a = ((in.adjacency.slice(1, 0, k) + in.adjacency.slice(1, k, 2 * k)) > 0)
            .to(torch::kFloat32);
    a = ((a + a.t()) > 0).to(torch::kFloat32) + torch::eye(k);
    a = a.clamp_max(1);
    const torch::Tensor scale = a.sum(1).rsqrt();
    a = scale.unsqueeze(1) * a * scale.unsqueeze(0);
  }
  torch::Tensor x = in.features;
  if (in.link.defined()) x = torch::cat({x, in.link}, 1);
  const torch::Tensor h1 = torch::relu(torch::matmul(a, layer1_(x)));
  const torch::Tensor h2 = torch::relu(torch::matmul(a, layer2_(h1)));
  return output_(h2);
}

torch::Tensor GcnPlacerImpl::Sample(const PlacerInput& input, int k,
                                    const LogitShaping& shaping,
                                    std::mt19937_64* rng) {
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = Logits(input);
  torch::Tensor out = torch::empty({k, logits.size(0)}, torch::kInt64);
  for (int i = 0; i < k; ++i) {
    out[i] = SampleRows(
        SamplingProbabilities(logits, input.mask_bias, shaping, rng), rng);
  }
  return out;
}

torch::Tensor GcnPlacerImpl::LogProbs(const PlacerInput& input,
                                      const torch::Tensor& actions,
                                      const LogitShaping& shaping) {
  const torch::Tensor log_probs =
      PolicyLogProbs(Logits(input), input.mask_bias, shaping) *
      input.active.unsqueeze(1);
  return log_probs.unsqueeze(0).expand(
      {actions.size(0), log_probs.size(0), log_probs.size(1)});
}

}  // namespace dplace
