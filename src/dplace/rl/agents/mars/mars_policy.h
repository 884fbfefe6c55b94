// Mars's policy (Lan, Chen, Li, ICPP 2021): a graph encoder (see
// graph_encoder.h) embeds every group; a segment-level sequence-to-sequence
// placer reads the embeddings in the group order (GroupGraph::order), cut
// into segments of `segment` groups, and places one segment after another.
//
// Within a segment, an LSTM encoder reads the segment's embeddings and an
// LSTM decoder emits one device per group, fed the embedding of the
// previous group's device and the encoder state of the group it places,
// with content-based attention over the segment's encoder states only (so
// attention costs O(segment) per group, not O(G)). Both LSTMs start a
// segment from the state the previous segment ended in; by default that
// carried state is detached, so gradients stay within a segment (the
// segment recurrence of Transformer-XL), which bounds the back-propagation
// depth on graphs of thousands of groups.
#ifndef DPLACE_RL_AGENTS_MARS_MARS_POLICY_H_
#define DPLACE_RL_AGENTS_MARS_MARS_POLICY_H_

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <vector>

#include "dplace/rl/agents/mars/graph_encoder.h"
#include "dplace/rl/nets/policy.h"

namespace dplace {

struct SegmentPlacerConfig {
  // LSTM size of the segment encoder and decoder. Default: 256.
  int hidden = 256;
  // Size of the device embedding fed to the decoder. Default: 32.
  int device_embedding = 32;
  // Groups per segment. Default: 128.
  int segment = 128;
  // Back-propagate through the state carried across segments. Default:
  // false (truncated at segment boundaries).
  bool carry_gradient = false;
};

class MarsPolicyImpl : public PlacementPolicyImpl {
 public:
  // `order`: the reading order of the groups (a permutation of 0..G-1).
  // The encoder is registered as a submodule "graph_encoder" and trained
  // (fine-tuned) with the placer.
  MarsPolicyImpl(EncoderInput input, const std::vector<int32_t>& order,
                 GraphEncoder encoder, int num_devices,
                 const std::vector<uint8_t>& allowed,
                 const SegmentPlacerConfig& config);

  torch::Tensor Sample(int k, std::mt19937_64* rng) override;
  torch::Tensor LogProbs(const torch::Tensor& actions) override;
  torch::Tensor SampledLogProbs() const override { return sampled_; }
  // With workers() > 1: each block of rows runs the decoder and its
  // backward pass on its own thread, reading the segments' encodings as
  // leaves; the blocks' gradients with respect to them are summed and pass
  // through the segment and graph encoders once.
  void BackwardRows(const torch::Tensor& actions,
                    const RowsLoss& loss) override;

  GraphEncoder& encoder() { return graph_encoder_; }

 private:
  using State = std::tuple<torch::Tensor, torch::Tensor>;
  struct Segment {
    int64_t first = 0;     // Reading position of its first group.
    torch::Tensor states;  // [L, H]: the segment encoder's outputs.
    torch::Tensor keys;    // [L, H]: states projected for attention.
  };
  // Embeddings of every group in reading order, [G, E].
  torch::Tensor Embed();
  // Runs the segment encoder over positions [first, first + length) of
  // `embedded`, continuing from *state.
  Segment EncodeSegment(const torch::Tensor& embedded, int64_t first,
                        int64_t length, State* state);
  // Every segment of `embedded`, in order, from the zero state.
  std::vector<Segment> EncodeSegments(const torch::Tensor& embedded);
  // LogProbs [k, G, D] of `actions` [k, G] given the segments' encodings.
  torch::Tensor Decode(const std::vector<Segment>& segments,
                       const torch::Tensor& actions);
  // Decoder inputs [n, k, Dv + H] for decoder steps at segment positions
  // [begin, begin + n) given the previous devices `previous` [k, n].
  torch::Tensor DecoderInput(const Segment& segment,
                             const torch::Tensor& previous, int64_t begin);
  // Logits [k, n, D] of decoder outputs `decoded` [k, n, H] at segment
  // positions [begin, begin + n).
  torch::Tensor Logits(const Segment& segment, const torch::Tensor& decoded,
                       int64_t begin);
  State Carry(const State& state) const;

  SegmentPlacerConfig config_;
  torch::Tensor sampled_;  // SampledLogProbs.
  EncoderInput input_;
  torch::Tensor order_;          // [G] int64: reading position -> group.
  torch::Tensor inverse_order_;  // [G] int64: group -> reading position.
  torch::Tensor seq_mask_bias_;  // mask_bias() in reading order.
  GraphEncoder graph_encoder_{nullptr};
  torch::nn::Linear input_projection_{nullptr};
  torch::nn::LSTM segment_encoder_{nullptr};
  torch::nn::Embedding device_embedding_{nullptr};  // D + 1: start token.
  torch::nn::LSTM decoder_{nullptr};
  torch::nn::Linear attention_{nullptr};
  torch::nn::Linear combine_{nullptr};
  torch::nn::Linear output_{nullptr};
};
TORCH_MODULE(MarsPolicy);

}  // namespace dplace

#endif  // DPLACE_RL_AGENTS_MARS_MARS_POLICY_H_
