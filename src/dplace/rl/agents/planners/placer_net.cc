#include "dplace/rl/agents/planners/placer_net.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/record_function.h>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dplace/rl/nets/attention.h"
#include "dplace/rl/nets/lstm.h"
#include "dplace/rl/nets/policy.h"

namespace dplace {
namespace {

// Standard normal draws determined by `rng` alone: LibTorch's vectorised
// generator (its own Mersenne Twister, the same on every platform),
// seeded by one draw of `rng`.
torch::Tensor StandardNormal(at::IntArrayRef sizes, std::mt19937_64* rng) {
  return torch::randn(sizes, at::detail::createCPUGenerator((*rng)()));
}

// A decoding step's head for the rows of `logits` [n, D], in one pass of
// scalar arithmetic instead of a dozen small tensor ops: writes the
// noiseless policy's log-probabilities (PolicyLogProbs) to `log_probs`
// [n, D] and draws each row's device into `devices` [n] from
// SamplingProbabilities by the inverse CDF (as SampleRows) with the row's
// uniform, its noise the draws `normals` [n, D] (undefined: none) scaled
// by the root mean square of the row's own logits.
void DrawStep(const torch::Tensor& logits, const torch::Tensor& mask_bias,
              const LogitShaping& shaping, const torch::Tensor& normals,
              const double* uniforms, torch::Tensor log_probs,
              int64_t* devices) {
  const torch::Tensor l = logits.contiguous();
  const torch::Tensor mask = mask_bias.contiguous();
  const int64_t n = l.size(0), num_devices = l.size(1);
  const float* row = l.data_ptr<float>();
  const float* bias = mask.data_ptr<float>();
  const bool noisy = shaping.noise > 0 && normals.defined();
  torch::Tensor z = noisy ? normals.contiguous() : torch::Tensor();
  const float* normal = noisy ? z.data_ptr<float>() : nullptr;
  auto out = log_probs.accessor<float, 2>();
  const auto shape = [&shaping](float x) {
    if (shaping.tanh_constant <= 0) return x;
    return static_cast<float>(shaping.tanh_constant *
                              std::tanh(x / shaping.temperature));
  };
  // Softmax of shape(x) + mask: the shifted values, their maximum and sum.
  std::vector<float> shifted(static_cast<size_t>(num_devices));
  const auto softmax = [&](const auto& value, float* top, double* sum) {
    *top = -std::numeric_limits<float>::infinity();
    for (int64_t d = 0; d < num_devices; ++d) {
      shifted[d] = shape(value(d)) + bias[d];
      *top = std::max(*top, shifted[d]);
    }
    *sum = 0;
    for (int64_t d = 0; d < num_devices; ++d) {
      *sum += std::exp(static_cast<double>(shifted[d] - *top));
    }
  };
  for (int64_t i = 0; i < n; ++i, row += num_devices) {
    float top;
    double sum;
    softmax([row](int64_t d) { return row[d]; }, &top, &sum);
    const float log_sum = static_cast<float>(std::log(sum));
    for (int64_t d = 0; d < num_devices; ++d) {
      out[i][d] = shifted[d] - top - log_sum;
    }
    if (noisy) {
      double squares = 0;
      for (int64_t d = 0; d < num_devices; ++d) squares += row[d] * row[d];
      const float scale =
          static_cast<float>(shaping.noise * std::sqrt(squares / num_devices));
      const float* z_row = normal + i * num_devices;
      softmax(
          [row, z_row, scale](int64_t d) { return row[d] + scale * z_row[d]; },
          &top, &sum);
    }
    for (int64_t d = 0; d < num_devices; ++d) {  // The probabilities.
      shifted[d] = static_cast<float>(
          std::exp(static_cast<double>(shifted[d] - top)) / sum);
    }
    devices[i] = DrawRow(shifted.data(), num_devices, uniforms[i]);
  }
}

// Whether gradients flow into `input` (EAGLE's link from the grouper).
bool InputHasGraph(const PlacerInput& input) {
  for (const torch::Tensor* t :
       {&input.features, &input.adjacency, &input.mask_bias, &input.active,
        &input.link}) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
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
    const double rms = l.norm().item<double>() / std::sqrt(l.numel());
    l = StandardNormal(l.sizes(), rng).mul_(shaping.noise * rms).add_(l);
  }
  l = ShapeLogits(l, shaping);
  return torch::softmax(mask_bias.defined() ? l + mask_bias : l, -1);
}

torch::Tensor PolicyLogProbs(const torch::Tensor& logits,
                             const torch::Tensor& mask_bias,
                             const LogitShaping& shaping) {
  const torch::Tensor l = ShapeLogits(logits, shaping);
  return torch::log_softmax(mask_bias.defined() ? l + mask_bias : l, -1);
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
    x = RunLstm(link_, torch::cat({x, in.link}, 1).unsqueeze(1))
            .outputs.squeeze(1);
  }
  const LstmSequence forward = RunLstm(encoder_, x.unsqueeze(1));
  const LstmSequence backward =
      RunLstm(encoder_, x.unsqueeze(1), {}, {}, /*reverse=*/true);
  Encoded e;
  // [K, H]: forward and backward halves.
  e.states = torch::cat({forward.outputs, backward.outputs}, 2).squeeze(1);
  e.keys = attention_keys_(e.states);
  e.h = torch::cat({forward.h, backward.h}, 1);  // [1, H].
  e.c = torch::cat({forward.c, backward.c}, 1);
  return e;
}

Seq2SeqPlacerImpl::DecoderGates Seq2SeqPlacerImpl::Gates(const Encoded& e) {
  const LstmWeights w = config_.attention_before ? CellWeights(decoder_cell_)
                                                 : LayerWeights(decoder_);
  const int64_t devices = config_.device_embedding, hidden = e.states.size(1);
  DecoderGates g;
  g.device =
      torch::linear(device_embedding_->weight, w.w_ih.slice(1, 0, devices));
  g.state = torch::linear(e.states, w.w_ih.slice(1, devices, devices + hidden),
                          w.bias);
  g.recurrent = w.w_hh;
  if (config_.attention_before) {
    g.recurrent = torch::cat({w.w_ih.slice(1, devices + hidden), w.w_hh}, 1);
  }
  return g;
}

torch::Tensor Seq2SeqPlacerImpl::Attend(const Encoded& e,
                                        const torch::Tensor& query) {
  return AttendProjected(e, attention_query_(query));
}

torch::Tensor Seq2SeqPlacerImpl::AttendProjected(const Encoded& e,
                                                 const torch::Tensor& q) {
  // Additive attention: v . tanh(W_k s_j + W_q q), softmax over groups j.
  const torch::Tensor scores =
      AdditiveAttentionScores(e.keys, q, attention_score_->weight[0]);
  return torch::matmul(torch::softmax(scores, -1), e.states);
}

torch::Tensor Seq2SeqPlacerImpl::AttendStep(const Encoded& e,
                                            const torch::Tensor& query) {
  torch::NoGradGuard no_grad;
  const torch::Tensor q = RowLinear(query, attention_query_->weight);
  const torch::Tensor scores =
      AdditiveAttentionScores(e.keys, q, attention_score_->weight[0]);
  return RowMm(torch::softmax(scores, -1), e.states);
}

void Seq2SeqPlacerImpl::AttentionAfterLogits(const Encoded& e, const float* h,
                                             int64_t n, float* scratch,
                                             float* logits) {
  const int n_rows = static_cast<int>(n);
  const int hidden = static_cast<int>(e.states.size(1));
  const int groups = static_cast<int>(e.states.size(0));
  const int size = static_cast<int>(config_.attention_size);
  const int devices = config_.num_devices;
  float* q = scratch;                      // [n, A].
  float* scores = q + n * size;            // [n, K].
  float* combined = scores + n * groups;   // [n, 2H]: h, then context.
  float* pre = combined + n * 2 * hidden;  // [n, H].
  // Each product named as the recurrences' own (lstm.cc): n rows times a
  // matrix, for profilers and rl_benchmark's FLOP count.
#define DPLACE_ROW_PRODUCT(w)             \
  RECORD_FUNCTION("dplace::row_products", \
                  std::vector<c10::IValue>({torch::empty({n, 0}), w}))
  {
    DPLACE_ROW_PRODUCT(attention_query_->weight);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_rows, size, hidden,
                1.0f, h, hidden, attention_query_->weight.data_ptr<float>(),
                hidden, 0.0f, q, size);
  }
  AdditiveAttentionScoresRows(e.keys.data_ptr<float>(), q,
                              attention_score_->weight.data_ptr<float>(), n,
                              groups, size, scores);
  SoftmaxRows(scores, n, groups);
  for (int64_t r = 0; r < n; ++r) {
    std::copy(h + r * hidden, h + (r + 1) * hidden, combined + r * 2 * hidden);
  }
  {
    DPLACE_ROW_PRODUCT(e.states);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n_rows, hidden,
                groups, 1.0f, scores, groups, e.states.data_ptr<float>(),
                hidden, 0.0f, combined + hidden, 2 * hidden);
  }
  const float* combine_bias = combine_->bias.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r) {
    std::copy(combine_bias, combine_bias + hidden, pre + r * hidden);
  }
  {
    DPLACE_ROW_PRODUCT(combine_->weight);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_rows, hidden,
                2 * hidden, 1.0f, combined, 2 * hidden,
                combine_->weight.data_ptr<float>(), 2 * hidden, 1.0f, pre,
                hidden);
  }
  for (int64_t i = 0; i < n * hidden; ++i) pre[i] = std::tanh(pre[i]);
  const float* output_bias = output_->bias.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r) {
    std::copy(output_bias, output_bias + devices, logits + r * devices);
  }
  {
    DPLACE_ROW_PRODUCT(output_->weight);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_rows, devices,
                hidden, 1.0f, pre, hidden, output_->weight.data_ptr<float>(),
                hidden, 1.0f, logits, devices);
  }
#undef DPLACE_ROW_PRODUCT
}

torch::Tensor Seq2SeqPlacerImpl::Sample(const PlacerInput& input, int k,
                                        const LogitShaping& shaping,
                                        int workers, std::mt19937_64* rng) {
  torch::NoGradGuard no_grad;
  // Inference tensors (a caller's c10::InferenceMode) cannot join a graph:
  // then nothing is kept.
  const bool keep = !c10::InferenceMode::is_enabled();
  kept_.reset();
  Encoded e;
  {
    torch::AutoGradMode with_graph(keep);
    e = Encode(input);
  }
  const DecoderGates gates = Gates(e);
  const int64_t length = e.states.size(0), hidden = e.states.size(1),
                devices = config_.num_devices;
  const torch::Tensor w_hh =
      gates.recurrent.slice(1, gates.recurrent.size(1) - hidden);
  // Every draw, in the order of one thread's loop (step by step, row by
  // row): any split of the rows draws the same placements.
  const std::vector<double> uniforms = DrawUniforms(length * k, rng);
  torch::Tensor normals;
  if (shaping.noise > 0) normals = StandardNormal({length, k, devices}, rng);
  torch::Tensor out = torch::empty({k, length}, torch::kInt64);
  torch::Tensor log_probs = torch::empty({k, length, devices});
  std::optional<LstmTrace> trace;
  if (keep && !config_.attention_before) {
    trace = LstmTrace::Empty(length, k, hidden);
    trace->cells[0].copy_(e.c.expand({k, hidden}));
  }
  // The recurrence's weights, packed once for its steps' few rows.
  const torch::Tensor w_context = gates.recurrent.slice(1, 0, hidden);
  PackedWeight packed_hh, packed_context;
  if (WorthPacking(w_hh, k, length)) packed_hh = PackWeight(w_hh.t());
  if (config_.attention_before && WorthPacking(w_context, k, length)) {
    packed_context = PackWeight(w_context.t());
  }
  RunRowBlocks(k, workers, [&](int, int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    torch::Tensor previous = torch::full({n}, devices, torch::kInt64);
    const torch::Tensor h0 = e.h.expand({n, hidden}).contiguous();
    torch::Tensor h = h0;
    torch::Tensor c = e.c.expand({n, hidden}).contiguous();
    torch::Tensor steps = torch::empty({length, n}, torch::kInt64);
    const torch::Tensor block_log_probs = log_probs.slice(0, begin, end);
    std::vector<float> scratch(static_cast<size_t>(
        n * (config_.attention_size + length + 3 * hidden)));
    torch::Tensor logits = torch::empty({n, devices});
    for (int64_t t = 0; t < length; ++t) {
      torch::Tensor x = gates.device.index_select(0, previous) + gates.state[t];
      if (config_.attention_before) {
        // The context of the previous state feeds this step.
        x.add_(RowLinear(AttendStep(e, h), w_context, {}, &packed_context));
        LstmStep(x, w_hh, &h, &c, &packed_hh);
        logits = RowLinear(h, output_->weight, output_->bias);
      } else {
        if (trace) {
          LstmTraceStep(x, w_hh, h0, t, begin, end, &*trace, &packed_hh);
          h = trace->outputs[t].narrow(0, begin, n);
        } else {
          LstmStep(x, w_hh, &h, &c, &packed_hh);
        }
        AttentionAfterLogits(e, h.data_ptr<float>(), n, scratch.data(),
                             logits.data_ptr<float>());
      }
      DrawStep(logits, input.mask_bias[t], shaping,
               normals.defined() ? normals[t].slice(0, begin, end) : normals,
               uniforms.data() + t * k + begin, block_log_probs.select(1, t),
               steps[t].data_ptr<int64_t>());
      previous = steps[t];
    }
    out.slice(0, begin, end).copy_(steps.t());
  });
  sampled_ = log_probs * input.active.view({1, -1, 1});
  if (keep) {
    kept_ =
        Kept{input.features, e, std::move(trace), out, ParameterVersion(*this)};
  }
  return out;
}

Seq2SeqPlacerImpl::Encoded Seq2SeqPlacerImpl::TakeEncoding(
    const PlacerInput& input) {
  if (kept_ && kept_->features.is_same(input.features) &&
      torch::GradMode::is_enabled() &&
      kept_->version == ParameterVersion(*this)) {
    const Encoded e = kept_->encoding;
    kept_.reset();
    return e;
  }
  return Encode(input);
}

std::optional<LstmTrace> Seq2SeqPlacerImpl::TraceOf(
    const torch::Tensor& actions) {
  if (!kept_ || !kept_->trace || kept_->version != ParameterVersion(*this)) {
    return std::nullopt;
  }
  return kept_->trace->RowsOf(kept_->drawn, actions);
}

void PlacerNetImpl::BackwardRows(const PlacerInput& input,
                                 const torch::Tensor& actions,
                                 const LogitShaping& shaping, int workers,
                                 const PlacementPolicyImpl::RowsLoss& loss,
                                 const torch::Tensor& extra) {
  torch::Tensor total =
      loss(LogProbs(input, actions, shaping), torch::arange(actions.size(0)));
  if (extra.defined()) total = total + extra;
  total.backward();
}

torch::Tensor Seq2SeqPlacerImpl::LogProbs(const PlacerInput& input,
                                          const torch::Tensor& actions,
                                          const LogitShaping& shaping) {
  const std::optional<LstmTrace> trace = TraceOf(actions);
  return Decode(TakeEncoding(input), input, actions, shaping,
                trace ? &*trace : nullptr);
}

void Seq2SeqPlacerImpl::BackwardRows(const PlacerInput& input,
                                     const torch::Tensor& actions,
                                     const LogitShaping& shaping, int workers,
                                     const PlacementPolicyImpl::RowsLoss& loss,
                                     const torch::Tensor& extra) {
  const int64_t k = actions.size(0);
  if (workers <= 1 || k < 2) {
    PlacerNetImpl::BackwardRows(input, actions, shaping, workers, loss, extra);
    return;
  }
  const std::optional<LstmTrace> trace = TraceOf(actions);
  const Encoded e = TakeEncoding(input);
  BackwardInBlocks(
      *this, {e.states, e.keys, e.h, e.c}, k, workers,
      [&](const std::vector<torch::Tensor>& leaves, int64_t begin,
          int64_t end) {
        const Encoded leaf{leaves[0], leaves[1], leaves[2], leaves[3]};
        std::optional<LstmTrace> rows;
        if (trace) rows = trace->Narrow(begin, end - begin);
        return loss(Decode(leaf, input, actions.slice(0, begin, end), shaping,
                           rows ? &*rows : nullptr),
                    torch::arange(begin, end));
      },
      extra, /*extra_apart=*/!InputHasGraph(input));
}

torch::Tensor Seq2SeqPlacerImpl::Decode(const Encoded& e,
                                        const PlacerInput& input,
                                        const torch::Tensor& actions,
                                        const LogitShaping& shaping,
                                        const LstmTrace* trace) {
  const DecoderGates gates = Gates(e);
  const int64_t k = actions.size(0), length = e.states.size(0),
                hidden = e.states.size(1);
  // Teacher forcing: every step reads the device before it (the start
  // token first), so the input part of all gates is known: [K, k, 4H].
  const torch::Tensor previous =
      torch::cat({torch::full({k, 1}, config_.num_devices, torch::kInt64),
                  actions.slice(1, 0, length - 1)},
                 1);
  const torch::Tensor x =
      (gates.device.index_select(0, previous.t().reshape({-1}))
           .view({length, k, -1}) +
       gates.state.unsqueeze(1));
  const torch::Tensor h0 = e.h.expand({k, hidden});
  const torch::Tensor c0 = e.c.expand({k, hidden});
  torch::Tensor logits;  // [k, K, D].
  if (config_.attention_before) {
    // The context of the previous state feeds each step.
    const torch::Tensor d =
        AttentionFeedingRecurrence(x, h0, c0, e.keys, e.states,
                                   attention_score_->weight[0],
                                   attention_query_->weight, gates.recurrent)
            .transpose(0, 1);
    logits = output_(d);
  } else {
    const torch::Tensor d = LstmRecurrence(x, h0, c0, gates.recurrent, trace)
                                .outputs.transpose(0, 1);
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
                                    int /*workers*/, std::mt19937_64* rng) {
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
