#include "dplace/rl/agents/mars/mars_policy.h"

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

std::vector<MarsPolicyImpl::Segment> MarsPolicyImpl::EncodeSegments(
    const torch::Tensor& embedded) {
  const int64_t length = num_groups(), hidden = config_.hidden;
  State state = {torch::zeros({1, hidden}), torch::zeros({1, hidden})};
  std::vector<Segment> segments;
  for (int64_t first = 0; first < length; first += config_.segment) {
    const int64_t size = std::min<int64_t>(config_.segment, length - first);
    segments.push_back(EncodeSegment(embedded, first, size, &state));
  }
  return segments;
}

torch::Tensor MarsPolicyImpl::Sample(int k, std::mt19937_64* rng) {
  torch::NoGradGuard no_grad;
  const int64_t length = num_groups();
  const int64_t hidden = config_.hidden, devices = config_.device_embedding;
  // The segment encoder does not read the decoder: every segment first.
  const std::vector<Segment> segments = EncodeSegments(Embed());
  // The decoder reads the previous device and the segment encoder's state
  // of the group it places: a gate row per device, one per group.
  const LstmWeights w = LayerWeights(decoder_);
  const torch::Tensor device_gates =
      torch::linear(device_embedding_->weight, w.w_ih.slice(1, 0, devices));
  const torch::Tensor w_state = w.w_ih.slice(1, devices);
  std::vector<torch::Tensor> state_gates;
  for (const Segment& segment : segments) {
    state_gates.push_back(torch::linear(segment.states, w_state, w.bias));
  }
  // Every draw's uniform, in the order of one thread's loop (step by step,
  // row by row): any split of the rows draws the same placements.
  const std::vector<double> uniforms = DrawUniforms(length * k, rng);
  torch::Tensor sequence = torch::empty({k, length}, torch::kInt64);
  std::vector<torch::Tensor> block_log_probs(
      static_cast<size_t>(RowBlocks(k, workers())));
  PackedWeight packed;
  if (WorthPacking(w.w_hh, k, length)) packed = PackWeight(w.w_hh.t());
  RunRowBlocks(k, workers(), [&](int index, int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    torch::Tensor h = torch::zeros({n, hidden}), c = torch::zeros({n, hidden});
    torch::Tensor previous = torch::full({n}, num_devices(), torch::kInt64);
    torch::Tensor steps = torch::empty({length, n}, torch::kInt64);
    std::vector<torch::Tensor> log_probs;
    log_probs.reserve(length);
    for (size_t s = 0; s < segments.size(); ++s) {
      const Segment& segment = segments[s];
      for (int64_t t = 0; t < segment.states.size(0); ++t) {
        const int64_t position = segment.first + t;
        LstmStep(device_gates.index_select(0, previous) + state_gates[s][t],
                 w.w_hh, &h, &c, &packed);
        log_probs.push_back(torch::log_softmax(
            AttentionStepLogits(h, segment.keys, segment.states, combine_,
                                output_, seq_mask_bias_[position]),
            -1));
        previous = SampleRows(log_probs.back().exp(),
                              uniforms.data() + position * k + begin);
        steps[position].copy_(previous);
      }
    }
    block_log_probs[index] = torch::stack(log_probs, 1);
    sequence.slice(0, begin, end).copy_(steps.t());
  });
  sampled_ = torch::cat(block_log_probs, 0).index_select(1, inverse_order_);
  return sequence.index_select(1, inverse_order_);
}

torch::Tensor MarsPolicyImpl::LogProbs(const torch::Tensor& actions) {
  return Decode(EncodeSegments(Embed()), actions);
}

torch::Tensor MarsPolicyImpl::Decode(const std::vector<Segment>& segments,
                                     const torch::Tensor& actions) {
  const int64_t k = actions.size(0), length = num_groups();
  const int64_t hidden = config_.hidden;
  const torch::Tensor sequence = actions.index_select(1, order_);
  // Teacher forcing: each step reads the device of the group before it
  // (the start token first), a segment in one recurrence.
  const torch::Tensor previous =
      torch::cat({torch::full({k, 1}, num_devices(), torch::kInt64),
                  sequence.slice(1, 0, length - 1)},
                 1);
  State decoder_state = {torch::zeros({k, hidden}), torch::zeros({k, hidden})};
  std::vector<torch::Tensor> logits;
  for (const Segment& segment : segments) {
    const int64_t first = segment.first, size = segment.states.size(0);
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

void MarsPolicyImpl::BackwardRows(const torch::Tensor& actions,
                                  const RowsLoss& loss) {
  const int64_t k = actions.size(0);
  if (workers() <= 1 || k < 2) {
    PlacementPolicyImpl::BackwardRows(actions, loss);
    return;
  }
  const std::vector<Segment> segments = EncodeSegments(Embed());
  std::vector<torch::Tensor> encoding;
  for (const Segment& segment : segments) {
    encoding.push_back(segment.states);
    encoding.push_back(segment.keys);
  }
  BackwardInBlocks(*this, encoding, k, workers(),
                   [&](const std::vector<torch::Tensor>& leaves, int64_t begin,
                       int64_t end) {
                     std::vector<Segment> leaf = segments;
                     for (size_t i = 0; i < leaf.size(); ++i) {
                       leaf[i].states = leaves[2 * i];
                       leaf[i].keys = leaves[2 * i + 1];
                     }
                     return loss(Decode(leaf, actions.slice(0, begin, end)),
                                 torch::arange(begin, end));
                   });
}

}  // namespace dplace
