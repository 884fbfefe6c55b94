// ColocRL's attentional sequence-to-sequence policy (Mirhoseini et al.,
// ICML 2017). An LSTM encoder reads the groups in order (embedding: op
// types, output shapes and sizes, adjacency); an LSTM decoder emits one
// device per group, fed the embedding of the previous group's device,
// attending over the encoder's states. A PlacementPolicyImpl
// (rl/nets/policy.h): devices a group may not run on get probability 0,
// and sampling draws from the caller's generator only.
#ifndef DPLACE_RL_AGENTS_COLOCRL_SEQ2SEQ_POLICY_H_
#define DPLACE_RL_AGENTS_COLOCRL_SEQ2SEQ_POLICY_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "dplace/rl/nets/lstm.h"
#include "dplace/rl/nets/policy.h"

namespace dplace {

struct Seq2SeqConfig {
  // LSTM size of encoder and decoder. Default: 256.
  int hidden = 256;
  // Size of the op-type and device embeddings. Default: 32.
  int embedding = 32;
};

class Seq2SeqPolicyImpl : public PlacementPolicyImpl {
 public:
  Seq2SeqPolicyImpl(GroupFeatures features, int num_devices,
                    const std::vector<uint8_t>& allowed,
                    const Seq2SeqConfig& config);

  torch::Tensor Sample(int k, std::mt19937_64* rng) override;
  torch::Tensor LogProbs(const torch::Tensor& actions) override;
  // With workers() > 1: each block of rows runs the decoder and its
  // backward pass on its own thread, reading the encoding as a leaf; the
  // blocks' gradients with respect to the encoding are summed and pass
  // through the encoder once.
  void BackwardRows(const torch::Tensor& actions,
                    const RowsLoss& loss) override;

 private:
  struct Encoded {
    torch::Tensor states;  // [G, H], in reading order.
    torch::Tensor keys;    // [G, H]: states projected for attention.
    torch::Tensor h, c;    // [1, H]: the encoder's final state.
  };
  Encoded Encode();
  // The sample's encoding when no parameter changed since and grad mode
  // is on (used once: a graph serves one backward pass), else Encode().
  Encoded TakeEncoding();
  // LogProbs [k, G, D] of `actions` [k, G] given their encoding; with
  // `trace`, the decoder's recurrence of these placements (TraceOf).
  torch::Tensor Decode(const Encoded& encoded, const torch::Tensor& actions,
                       const LstmTrace* trace = nullptr);
  // The decoder's recurrence of `sequence` [n, G] (placements in reading
  // order) from the last Sample, when no parameter changed since and every
  // row is one it drew; else nullopt.
  std::optional<LstmTrace> TraceOf(const torch::Tensor& sequence);
  // Logits [k, n, D] of decoder outputs `decoded` [k, n, H] at reading
  // positions [first, first + n).
  torch::Tensor Logits(const Encoded& encoded, const torch::Tensor& decoded,
                       int64_t first);

  // The last Sample's encoding with its graph, and ParameterVersion(*this)
  // then.
  std::optional<Encoded> sampled_encoding_;
  int64_t sampled_encoding_version_ = 0;
  // The last Sample's decoder recurrence, of its placements `sequence`
  // [k, G] in reading order, at ParameterVersion(*this) `version`.
  struct SampledTrace {
    LstmTrace trace;
    torch::Tensor sequence;
    int64_t version = 0;
  };
  std::optional<SampledTrace> sampled_trace_;
  GroupFeatures features_;
  torch::Tensor order_;          // [G] int64: reading position -> group.
  torch::Tensor inverse_order_;  // [G] int64: group -> reading position.
  torch::Tensor seq_mask_bias_;  // mask_bias() in reading order.
  torch::nn::Linear type_embedding_{nullptr};
  torch::nn::Linear input_projection_{nullptr};
  torch::nn::LSTM encoder_{nullptr};
  torch::nn::Embedding device_embedding_{nullptr};  // D + 1: the start token.
  torch::nn::LSTM decoder_{nullptr};
  torch::nn::Linear attention_{nullptr};
  torch::nn::Linear combine_{nullptr};
  torch::nn::Linear output_{nullptr};
};
TORCH_MODULE(Seq2SeqPolicy);

}  // namespace dplace

#endif  // DPLACE_RL_AGENTS_COLOCRL_SEQ2SEQ_POLICY_H_
