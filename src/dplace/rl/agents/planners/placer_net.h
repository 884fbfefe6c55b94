// The planners' placers: networks that map group embeddings to a device per
// group, for inputs that change with every grouping (the Hierarchical
// Planner's and EAGLE's learned groupers) or stay fixed (heuristic groupers).
//
//   - Seq2SeqPlacer: a bidirectional LSTM encoder over the groups in id
//     order, an LSTM decoder that emits one device per group, fed the
//     embedding of the previous group's device and the encoder state of the
//     group it places, with additive (Bahdanau) content-based attention over
//     the encoder states either after the decoder LSTM (the Hierarchical
//     Planner, EAGLE's Fig. 4b) or before it (EAGLE, Fig. 4a). Optionally an
//     extra LSTM ("link") reads the groups' embeddings together with the
//     grouper's mean hidden state per group and feeds the encoder: EAGLE's
//     RNN that turns the grouper's output into the placer's input.
//   - GcnPlacer: two graph-convolution layers (Kipf & Welling) over the
//     group graph, ReLU, a softmax per group (EAGLE's GCN placer).
//
// Logits are shaped as C tanh(l / T) when C > 0 (Bello et al.; the
// Hierarchical Planner's C = 5, T = 10). Sampling may add Gaussian noise to
// the raw logits (the Hierarchical Planner's exploration noise); the
// log-probabilities a policy update uses are those of the noiseless policy.
// Log-probabilities of groups without ops are 0 (constant): their devices
// change nothing, so they carry no gradient.
#ifndef DPLACE_RL_AGENTS_PLANNERS_PLACER_NET_H_
#define DPLACE_RL_AGENTS_PLANNERS_PLACER_NET_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "dplace/rl/nets/lstm.h"
#include "dplace/rl/nets/policy.h"

namespace dplace {

// What a placer reads for one grouping of K groups on D devices.
struct PlacerInput {
  torch::Tensor features;   // [K, F]: op-type counts and output shapes.
  torch::Tensor adjacency;  // [K, 2K]: edge counts to, then from, groups.
  torch::Tensor mask_bias;  // [K, D]: 0 where allowed, -1e9 where not.
  torch::Tensor active;     // [K] float: 1 for groups with ops, else 0.
  // [K, L]: the grouper's mean hidden state per group (EAGLE's link);
  // undefined when the placer has no link.
  torch::Tensor link;
};

struct LogitShaping {
  double tanh_constant = 0;  // C; 0: logits used as they are.
  double temperature = 1;    // T.
  // Standard deviation of the noise added when sampling, relative to the
  // root mean square of the logits (TensorFlow grappler's rule); 0: none.
  double noise = 0;
};

// C tanh(l / T), or l when C is 0.
torch::Tensor ShapeLogits(const torch::Tensor& logits,
                          const LogitShaping& shaping);

// Probabilities to sample from: `logits` plus noise drawn from `rng` (when
// shaping.noise > 0), shaped, plus `mask_bias` (undefined: none), softmax
// over the last dim.
torch::Tensor SamplingProbabilities(const torch::Tensor& logits,
                                    const torch::Tensor& mask_bias,
                                    const LogitShaping& shaping,
                                    std::mt19937_64* rng);

// Log-probabilities of the noiseless policy: log_softmax(shaped + mask),
// `mask_bias` undefined: none.
torch::Tensor PolicyLogProbs(const torch::Tensor& logits,
                             const torch::Tensor& mask_bias,
                             const LogitShaping& shaping);

class PlacerNetImpl : public torch::nn::Module {
 public:
  // k placements [k, K] int64, without gradient, drawing from `rng` only;
  // a placer may split the rows between up to `workers` threads (the same
  // placements for any number).
  virtual torch::Tensor Sample(const PlacerInput& input, int k,
                               const LogitShaping& shaping, int workers,
                               std::mt19937_64* rng) = 0;
  // Log-probabilities [k, K, D] given placements `actions` [k, K] (an
  // autoregressive placer conditions group t on the devices before it);
  // rows of groups without ops are 0. Differentiable.
  virtual torch::Tensor LogProbs(const PlacerInput& input,
                                 const torch::Tensor& actions,
                                 const LogitShaping& shaping) = 0;
  // LogProbs of the placements the last Sample drew, kept from sampling
  // (without its noise); undefined when the placer keeps none.
  virtual torch::Tensor SampledLogProbs() const { return {}; }
  // Adds to the gradients (of the placer and of whatever `input` depends
  // on) those of `extra` (a scalar, or undefined) plus the sum of `loss`
  // over blocks of the rows of `actions` [k, K], each given the LogProbs
  // of its rows. A placer may run the blocks on up to `workers` threads;
  // by default one block: (loss(LogProbs(all), all rows) + extra).backward().
  virtual void BackwardRows(const PlacerInput& input,
                            const torch::Tensor& actions,
                            const LogitShaping& shaping, int workers,
                            const PlacementPolicyImpl::RowsLoss& loss,
                            const torch::Tensor& extra);
};

struct Seq2SeqPlacerConfig {
  int64_t input_size = 0;  // F + 2K.
  int64_t link_size = 0;   // L; 0: no link RNN.
  int num_devices = 0;
  int hidden = 256;               // Encoder (both directions) and decoder.
  int device_embedding = 16;      // Default: 16.
  int attention_size = 64;        // Additive attention's inner size.
  bool attention_before = false;  // EAGLE's Fig. 4a; else Fig. 4b.
};

class Seq2SeqPlacerImpl : public PlacerNetImpl {
 public:
  explicit Seq2SeqPlacerImpl(const Seq2SeqPlacerConfig& config);

  // The exploration noise of a placement's step is scaled by the root mean
  // square of that placement's logits at the step.
  torch::Tensor Sample(const PlacerInput& input, int k,
                       const LogitShaping& shaping, int workers,
                       std::mt19937_64* rng) override;
  torch::Tensor LogProbs(const PlacerInput& input, const torch::Tensor& actions,
                         const LogitShaping& shaping) override;
  torch::Tensor SampledLogProbs() const override { return sampled_; }
  // With workers > 1: each block of rows runs the decoder and its backward
  // pass on its own thread, reading the encoding as a leaf; the blocks'
  // gradients with respect to it are summed and pass through the encoder
  // (and `input`) once, with `extra`. `extra` must not read the placer's
  // parameters (the planners': the grouper's term); when no gradient flows
  // into `input`, its backward pass runs beside the encoder's, on a second
  // thread.
  void BackwardRows(const PlacerInput& input, const torch::Tensor& actions,
                    const LogitShaping& shaping, int workers,
                    const PlacementPolicyImpl::RowsLoss& loss,
                    const torch::Tensor& extra) override;

 private:
  struct Encoded {
    torch::Tensor states;  // [K, H].
    torch::Tensor keys;    // [K, A]: states projected for attention.
    torch::Tensor h, c;    // [1, H]: the decoder's initial state.
  };
  // The decoder's gates split by what they read: a row per device (and
  // the start token) for the previous device, a row per group for the
  // encoder state of the group placed (with the biases), and the weights
  // of what depends on the step before: h (attention after), or the
  // context and h (attention before), [4H, H] or [4H, 2H].
  struct DecoderGates {
    torch::Tensor device;     // [D + 1, 4H].
    torch::Tensor state;      // [K, 4H].
    torch::Tensor recurrent;  // [4H, H] or [4H, 2H].
  };
  Encoded Encode(const PlacerInput& input);
  // The encoding the last Sample kept when `input` is the input it encoded
  // (the same tensors), no parameter changed since and grad mode is on
  // (used once: its graph serves one backward pass); else Encode(input).
  Encoded TakeEncoding(const PlacerInput& input);
  // The recurrence the last Sample kept, of the placements `actions` [n, K]
  // when it drew them all and no parameter changed since; else nullopt.
  std::optional<LstmTrace> TraceOf(const torch::Tensor& actions);
  // LogProbs given the encoding of `input`; with `trace`, the attention-
  // after decoder's recurrence of these placements (TraceOf).
  torch::Tensor Decode(const Encoded& e, const PlacerInput& input,
                       const torch::Tensor& actions,
                       const LogitShaping& shaping,
                       const LstmTrace* trace = nullptr);
  DecoderGates Gates(const Encoded& e);
  // Context vectors [..., H] for decoder queries [..., H], or for queries
  // already projected by attention_query_ [..., A].
  torch::Tensor Attend(const Encoded& e, const torch::Tensor& query);
  torch::Tensor AttendProjected(const Encoded& e, const torch::Tensor& q);
  // Attend() for one decoding position's queries [k, H], without gradient,
  // its products row by row (sampling).
  torch::Tensor AttendStep(const Encoded& e, const torch::Tensor& query);
  // The attention-after decoder's logits `logits` [n, D] for its states `h`
  // [n, H] at one decoding position: the query projection, the additive
  // attention's scores, softmax and context, the combine layer's tanh and
  // the output layer, as Decode computes them (to rounding), without
  // gradient and without LibTorch calls (a sampling step's few rows are
  // too small for their overhead); `scratch` holds n (A + K + 3H) floats.
  void AttentionAfterLogits(const Encoded& e, const float* h, int64_t n,
                            float* scratch, float* logits);

  Seq2SeqPlacerConfig config_;
  torch::Tensor sampled_;  // SampledLogProbs.
  // What the last Sample computed for the update that follows it with the
  // same weights (REINFORCE's, PPO's first epoch): the encoding of its
  // input with the encoder's graph and, when the decoder is an LSTM layer
  // (attention after it), the recurrence that drew its placements, so
  // that the update neither encodes again nor runs that recurrence forward.
  struct Kept {
    torch::Tensor features;  // The input's features: which input it was.
    Encoded encoding;
    std::optional<LstmTrace> trace;
    torch::Tensor drawn;  // [k, K]: the placements the trace drew.
    int64_t version = 0;  // ParameterVersion(*this) then.
  };
  std::optional<Kept> kept_;
  torch::nn::Linear input_projection_{nullptr};
  torch::nn::LSTM link_{nullptr};
  torch::nn::LSTM encoder_{nullptr};
  torch::nn::Embedding device_embedding_{nullptr};  // D + 1: start token.
  torch::nn::LSTM decoder_{nullptr};                // Attention after.
  torch::nn::LSTMCell decoder_cell_{nullptr};       // Attention before.
  torch::nn::Linear attention_keys_{nullptr};
  torch::nn::Linear attention_query_{nullptr};
  torch::nn::Linear attention_score_{nullptr};
  torch::nn::Linear combine_{nullptr};
  torch::nn::Linear output_{nullptr};
};
TORCH_MODULE(Seq2SeqPlacer);

struct GcnPlacerConfig {
  int64_t input_size = 0;  // F (+ L with a link): no adjacency columns.
  int num_devices = 0;
  int hidden = 256;
};

class GcnPlacerImpl : public PlacerNetImpl {
 public:
  explicit GcnPlacerImpl(const GcnPlacerConfig& config);

  torch::Tensor Sample(const PlacerInput& input, int k,
                       const LogitShaping& shaping, int workers,
                       std::mt19937_64* rng) override;
  torch::Tensor LogProbs(const PlacerInput& input, const torch::Tensor& actions,
                         const LogitShaping& shaping) override;

 private:
  torch::Tensor Logits(const PlacerInput& input);  // [K, D].

  torch::nn::Linear layer1_{nullptr}, layer2_{nullptr}, output_{nullptr};
};
TORCH_MODULE(GcnPlacer);

}  // namespace dplace

#endif  // DPLACE_RL_AGENTS_PLANNERS_PLACER_NET_H_
