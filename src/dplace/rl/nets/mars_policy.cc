#include "dplace/rl/nets/mars_policy.h"

#include <algorithm>

#include "dplace/rl/nets/lstm.h"

namespace dplace {

MarsPolicyImpl::MarsPolicyImpl(EncoderInput input,
                               const std::vector<int32_t>& order,
                               GraphEncoder encoder, int num_devices,
                               const std::vector<uint8_t>& allowed,
                               const SegmentPlacerConfig& config)
    : PlacementPolicyImpl(static_cast<int>(order.size()), num_devices, allowed),
      config_(config),
      input_(std::move(input)) {
  const int hidden = config.hidden;
  order_ = register_buffer(
      "order", torch::tensor(std::vector<int64_t>(order.begin(), order.end()),
                             torch::kInt64));
  inverse_order_ = register_buffer("inverse_order",
                                   torch::empty_like(order_).scatter_(
                                       0, order_, torch::arange(num_groups())));
  seq_mask_bias_ = mask_bias().index_select(0, order_);
  graph_encoder_ = register_module("graph_encoder", std::move(encoder));
  input_projection_ = register_module(
      "input_projection",
      torch::nn::Linear(graph_encoder_->config().hidden, hidden));
  segment_encoder_ =
      register_module("segment_encoder",
                      torch::nn::LSTM(torch::nn::LSTMOptions(hidden, hidden)));
  device_embedding_ = register_module(
      "device_embedding",
      torch::nn::Embedding(num_devices + 1, config.device_embedding));
  decoder_ = register_module("decoder",
                             torch::nn::LSTM(torch::nn::LSTMOptions(
                                 config.device_embedding + hidden, hidden)));
  attention_ = register_module(
      "attention",
      torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false)));
  combine_ = register_module("combine", torch::nn::Linear(2 * hidden, hidden));
  output_ = register_module("output", torch::nn::Linear(hidden, num_devices));
}

torch::Tensor MarsPolicyImpl::Embed() {
  return graph_encoder_(input_.features, input_.adjacency)
      .index_select(0, order_);
}

MarsPolicyImpl::State MarsPolicyImpl::Carry(const State& state) const {
  if (config_.carry_gradient) return state;
  return {std::get<0>(state).detach(), std::get<1>(state).detach()};
}

MarsPolicyImpl::Segment MarsPolicyImpl::EncodeSegment(
    const torch::Tensor& embedded, int64_t first, int64_t length,
    State* state) {
  const torch::Tensor projected =
      torch::tanh(input_projection_(embedded.slice(0, first, first + length)));
  const State carried = Carry(*state);
  const LstmSequence encoded =
      RunLstm(segment_encoder_, projected.unsqueeze(1), std::get<0>(carried),
              std::get<1>(carried));
  *state = {encoded.h, encoded.c};
  Segment s;
  s.first = first;
  s.states = encoded.outputs.squeeze(1);
  s.keys = attention_(s.states);
  return s;
}

torch::Tensor MarsPolicyImpl::DecoderInput(const Segment& segment,
                                           const torch::Tensor& previous,
                                           int64_t begin) {
  const int64_t k = previous.size(0), n = previous.size(1);
  const torch::Tensor devices = device_embedding_(previous);  // [k, n, Dv]
  const torch::Tensor states = segment.states.slice(0, begin, begin + n)
                                   .unsqueeze(0)
                                   .expand({k, n, segment.states.size(1)});
  return torch::cat({devices, states}, -1).transpose(0, 1);
}

torch::Tensor MarsPolicyImpl::Logits(const Segment& segment,
                                     const torch::Tensor& decoded,
                                     int64_t begin) {
  const torch::Tensor weights =
      torch::softmax(torch::matmul(decoded, segment.keys.t()), -1);
  const torch::Tensor context = torch::matmul(weights, segment.states);
  const torch::Tensor combined =
      torch::tanh(combine_(torch::cat({decoded, context}, -1)));
  const int64_t first = segment.first + begin;
  return output_(combined) +
         seq_mask_bias_.slice(0, first, first + decoded.size(1));
}

torch::Tensor MarsPolicyImpl::Sample(int k, std::mt19937_64* rng) {
  torch::NoGradGuard no_grad;
  const torch::Tensor embedded = Embed();
  const int64_t length = num_groups();
  const int64_t hidden = config_.hidden, devices = config_.device_embedding;
  // The decoder reads the previous device and the segment encoder's state
  // of the group it places: a gate row per device, one per group.
  const LstmWeights w = LayerWeights(decoder_);
  const torch::Tensor device_gates =
      torch::linear(device_embedding_->weight, w.w_ih.slice(1, 0, devices));
  const torch::Tensor w_state = w.w_ih.slice(1, devices);
  State encoder_state = {torch::zeros({1, hidden}), torch::zeros({1, hidden})};
  torch::Tensor h = torch::zeros({k, hidden}), c = torch::zeros({k, hidden});
  torch::Tensor previous = torch::full({k}, num_devices(), torch::kInt64);
  torch::Tensor sequence = torch::empty({k, length}, torch::kInt64);
  std::vector<torch::Tensor> log_probs;
  log_probs.reserve(length);
  for (int64_t first = 0; first < length; first += config_.segment) {
    const int64_t size = std::min<int64_t>(config_.segment, length - first);
    const Segment segment =
        EncodeSegment(embedded, first, size, &encoder_state);
    const torch::Tensor state_gates =
        torch::linear(segment.states, w_state, w.bias);
    for (int64_t t = 0; t < size; ++t) {
      LstmStep(device_gates.index_select(0, previous) + state_gates[t], w.w_hh,
               &h, &c);
      log_probs.push_back(torch::log_softmax(
          AttentionStepLogits(h, segment.keys, segment.states, combine_,
                              output_, seq_mask_bias_[segment.first + t]),
          -1));
      previous = SampleRows(log_probs.back().exp(), rng);
      sequence.select(1, first + t).copy_(previous);
    }
  }
  sampled_ = torch::stack(log_probs, 1).index_select(1, inverse_order_);
  return sequence.index_select(1, inverse_order_);
}

torch::Tensor MarsPolicyImpl::LogProbs(const torch::Tensor& actions) {
  const torch::Tensor embedded = Embed();
  const int64_t k = actions.size(0), length = num_groups();
  const int64_t hidden = config_.hidden;
  const torch::Tensor sequence = actions.index_select(1, order_);
  // Teacher forcing: each step reads the device of the group before it
  // (the start token first), a segment in one recurrence.
  const torch::Tensor previous =
      torch::cat({torch::full({k, 1}, num_devices(), torch::kInt64),
                  sequence.slice(1, 0, length - 1)},
                 1);
  State encoder_state = {torch::zeros({1, hidden}), torch::zeros({1, hidden})};
  State decoder_state = {torch::zeros({k, hidden}), torch::zeros({k, hidden})};
  std::vector<torch::Tensor> logits;
  for (int64_t first = 0; first < length; first += config_.segment) {
    const int64_t size = std::min<int64_t>(config_.segment, length - first);
    const Segment segment =
        EncodeSegment(embedded, first, size, &encoder_state);
    const State carried = Carry(decoder_state);
    const LstmSequence decoded = RunLstm(
        decoder_,
        DecoderInput(segment, previous.slice(1, first, first + size), 0),
        std::get<0>(carried), std::get<1>(carried));
    decoder_state = {decoded.h, decoded.c};
    logits.push_back(Logits(segment, decoded.outputs.transpose(0, 1), 0));
  }
  return torch::log_softmax(torch::cat(logits, 1), -1)
      .index_select(1, inverse_order_);
}

}  // namespace dplace
