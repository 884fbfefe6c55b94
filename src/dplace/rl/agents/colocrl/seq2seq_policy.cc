#include "dplace/rl/agents/colocrl/seq2seq_policy.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>

#include "dplace/rl/nets/lstm.h"

namespace dplace {

Seq2SeqPolicyImpl::Seq2SeqPolicyImpl(GroupFeatures features, int num_devices,
                                     const std::vector<uint8_t>& allowed,
                                     const Seq2SeqConfig& config)
    : PlacementPolicyImpl(static_cast<int>(features.order.size()), num_devices,
                          allowed),
      features_(std::move(features)) {
  const int hidden = config.hidden;
  order_ = register_buffer("order", torch::tensor(features_.order));
  inverse_order_ = register_buffer("inverse_order",
                                   torch::empty_like(order_).scatter_(
                                       0, order_, torch::arange(num_groups())));
  seq_mask_bias_ = mask_bias().index_select(0, order_);
  const int64_t num_types = features_.type_fractions.size(1);
  type_embedding_ = register_module(
      "type_embedding",
      torch::nn::Linear(
          torch::nn::LinearOptions(num_types, config.embedding).bias(false)));
  const int64_t input_size =
      config.embedding + features_.sizes.size(1) + features_.adjacency.size(1);
  input_projection_ = register_module("input_projection",
                                      torch::nn::Linear(input_size, hidden));
  encoder_ = register_module(
      "encoder", torch::nn::LSTM(torch::nn::LSTMOptions(hidden, hidden)));
  device_embedding_ =
      register_module("device_embedding",
                      torch::nn::Embedding(num_devices + 1, config.embedding));
  decoder_ = register_module("decoder", torch::nn::LSTM(torch::nn::LSTMOptions(
                                            config.embedding, hidden)));
  attention_ = register_module(
      "attention",
      torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false)));
  combine_ = register_module("combine", torch::nn::Linear(2 * hidden, hidden));
  output_ = register_module("output", torch::nn::Linear(hidden, num_devices));
}

Seq2SeqPolicyImpl::Encoded Seq2SeqPolicyImpl::Encode() {
  const torch::Tensor input =
      torch::cat({type_embedding_(features_.type_fractions), features_.sizes,
                  features_.adjacency},
                 1)
          .index_select(0, order_);
  const torch::Tensor projected = torch::tanh(input_projection_(input));
  const LstmSequence s = RunLstm(encoder_, projected.unsqueeze(1));
  Encoded e;
  e.states = s.outputs.squeeze(1);
  e.keys = attention_(e.states);
  e.h = s.h;
  e.c = s.c;
  return e;
}

torch::Tensor Seq2SeqPolicyImpl::Logits(const Encoded& encoded,
                                        const torch::Tensor& decoded,
                                        int64_t first) {
  // Content-based attention over every encoder state.
  const torch::Tensor weights =
      torch::softmax(torch::matmul(decoded, encoded.keys.t()), -1);
  const torch::Tensor context = torch::matmul(weights, encoded.states);
  const torch::Tensor combined =
      torch::tanh(combine_(torch::cat({decoded, context}, -1)));
  return output_(combined) +
         seq_mask_bias_.slice(0, first, first + decoded.size(1));
}

torch::Tensor Seq2SeqPolicyImpl::Sample(int k, std::mt19937_64* rng) {
  // The encoding is computed with its graph and kept for the LogProbs that
  // follows with the same weights (REINFORCE's update), so the encoder runs
  // once per batch, not once to sample and once to learn.
  // Inference tensors (a caller's c10::InferenceMode) cannot join a graph:
  // then nothing is kept.
  const bool keep = !c10::InferenceMode::is_enabled();
  Encoded encoded;
  {
    torch::AutoGradMode with_graph(keep);
    encoded = Encode();
  }
  sampled_encoding_.reset();
  sampled_trace_.reset();
  if (keep) {
    sampled_encoding_ = encoded;
    sampled_encoding_version_ = ParameterVersion(*this);
  }
  torch::NoGradGuard no_grad;
  const int64_t length = num_groups(), hidden = encoded.h.size(1);
  // The decoder reads only the previous device: its gates' input part is
  // one row of a table per device (and the start token).
  const LstmWeights w = LayerWeights(decoder_);
  const torch::Tensor device_gates =
      torch::linear(device_embedding_->weight, w.w_ih, w.bias);
  // Every draw's uniform, in the order of one thread's loop (step by step,
  // row by row): any split of the rows draws the same placements.
  const std::vector<double> uniforms = DrawUniforms(length * k, rng);
  torch::Tensor sequence = torch::empty({k, length}, torch::kInt64);
  // The decoder's recurrence is kept (LstmTrace): REINFORCE's update
  // decodes these placements with these weights, and takes its backward
  // pass from the trace instead of running the recurrence again.
  LstmTrace trace = LstmTrace::Empty(length, k, hidden);
  trace.cells[0].copy_(encoded.c.expand({k, hidden}));
  PackedWeight packed;
  if (WorthPacking(w.w_hh, k, length)) packed = PackWeight(w.w_hh.t());
  RunRowBlocks(k, workers(), [&](int, int64_t begin, int64_t end) {
    // The step's own tensors need no autograd bookkeeping; the trace's
    // buffers stay normal tensors (written in place), as the update needs.
    c10::InferenceMode cheap_steps;
    const int64_t n = end - begin;
    const torch::Tensor h0 = encoded.h.expand({n, hidden}).contiguous();
    torch::Tensor previous = torch::full({n}, num_devices(), torch::kInt64);
    torch::Tensor steps = torch::empty({length, n}, torch::kInt64);
    for (int64_t t = 0; t < length; ++t) {
      LstmTraceStep(device_gates.index_select(0, previous), w.w_hh, h0, t,
                    begin, end, &trace, &packed);
      const torch::Tensor h = trace.outputs[t].narrow(0, begin, n);
      const torch::Tensor logits =
          AttentionStepLogits(h, encoded.keys, encoded.states, combine_,
                              output_, seq_mask_bias_[t]);
      previous = SampleRows(torch::softmax(logits, -1),
                            uniforms.data() + t * k + begin);
      steps[t].copy_(previous);
    }
    sequence.slice(0, begin, end).copy_(steps.t());
  });
  if (keep) {
    sampled_trace_ =
        SampledTrace{std::move(trace), sequence, sampled_encoding_version_};
  }
  return sequence.index_select(1, inverse_order_);
}

std::optional<LstmTrace> Seq2SeqPolicyImpl::TraceOf(
    const torch::Tensor& sequence) {
  if (!sampled_trace_.has_value() ||
      sampled_trace_->version != ParameterVersion(*this)) {
    return std::nullopt;
  }
  return sampled_trace_->trace.RowsOf(sampled_trace_->sequence, sequence);
}

Seq2SeqPolicyImpl::Encoded Seq2SeqPolicyImpl::TakeEncoding() {
  const bool reuse = sampled_encoding_.has_value() &&
                     torch::GradMode::is_enabled() &&
                     sampled_encoding_version_ == ParameterVersion(*this);
  Encoded encoded = reuse ? *sampled_encoding_ : Encode();
  sampled_encoding_.reset();
  return encoded;
}

torch::Tensor Seq2SeqPolicyImpl::LogProbs(const torch::Tensor& actions) {
  const std::optional<LstmTrace> trace =
      TraceOf(actions.index_select(1, order_));
  return Decode(TakeEncoding(), actions, trace ? &*trace : nullptr);
}

torch::Tensor Seq2SeqPolicyImpl::Decode(const Encoded& encoded,
                                        const torch::Tensor& actions,
                                        const LstmTrace* trace) {
  const int64_t k = actions.size(0), hidden = encoded.h.size(1);
  const torch::Tensor sequence = actions.index_select(1, order_);
  // Teacher forcing: the decoder reads the start token, then the device of
  // every group but the last, all in one recurrence.
  const torch::Tensor inputs =
      torch::cat({torch::full({k, 1}, num_devices(), torch::kInt64),
                  sequence.slice(1, 0, sequence.size(1) - 1)},
                 1);
  const LstmSequence decoded =
      RunLstm(decoder_, device_embedding_(inputs).transpose(0, 1),
              encoded.h.expand({k, hidden}), encoded.c.expand({k, hidden}),
              /*reverse=*/false, trace);
  const torch::Tensor log_probs = torch::log_softmax(
      Logits(encoded, decoded.outputs.transpose(0, 1), 0), -1);
  return log_probs.index_select(1, inverse_order_);
}

void Seq2SeqPolicyImpl::BackwardRows(const torch::Tensor& actions,
                                     const RowsLoss& loss) {
  const int64_t k = actions.size(0);
  if (workers() <= 1 || k < 2) {
    PlacementPolicyImpl::BackwardRows(actions, loss);
    return;
  }
  const std::optional<LstmTrace> trace =
      TraceOf(actions.index_select(1, order_));
  const Encoded e = TakeEncoding();
  BackwardInBlocks(
      *this, {e.states, e.keys, e.h, e.c}, k, workers(),
      [&](const std::vector<torch::Tensor>& leaves, int64_t begin,
          int64_t end) {
        const Encoded leaf{leaves[0], leaves[1], leaves[2], leaves[3]};
        std::optional<LstmTrace> rows;
        if (trace) rows = trace->Narrow(begin, end - begin);
        return loss(
            Decode(leaf, actions.slice(0, begin, end), rows ? &*rows : nullptr),
            torch::arange(begin, end));
      });
}

}  // namespace dplace
